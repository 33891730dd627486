"""Pinning a host stream to an ECMP member: the port pair a burst found on an uplink takes
that uplink again (a leaf hashing the 5-tuple, destination port included), a burst that two
uplinks carried is no answer, and a member never found is said."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from labtest.capabilities.probes import UdpStreamResult, UdpStreamsRun
from labtest.fixtures.pinned_streams import Burst, _member, pin

UPLINKS = ["Ethernet0", "Ethernet8"]


@dataclass
class Row:
    tx_packets: int = 0


@dataclass
class Leaf:
    rows: dict[str, Row] = field(default_factory=lambda: {p: Row() for p in UPLINKS})
    stuck: str | None = None  # every flow takes this uplink (a polarised hash)

    def counters(self) -> dict[str, Row]:
        return {p: Row(r.tx_packets) for p, r in self.rows.items()}

    def member(self, sport: int, dport: int) -> str:
        if self.stuck:
            return self.stuck
        return UPLINKS[zlib.crc32(f"h1>h2:{sport}:{dport}".encode()) % len(UPLINKS)]


@dataclass
class Host:
    name: str
    leaf: Leaf
    runs: list[tuple[int, int]] = field(default_factory=list)

    def udp_streams_start(self, server: Any, *, streams: int, rate_pps: float,
                          payload_bytes: int, duration_s: float, port: int = 5201,
                          sport: int | None = None) -> UdpStreamsRun:
        assert streams == 1 and sport is not None
        frames = int(rate_pps * duration_s)
        self.leaf.rows[self.leaf.member(sport, port)].tx_packets += frames + 3  # + BGP
        self.runs.append((sport, port))
        return UdpStreamsRun(self.name, server.name, "10.0.0.2", port, 1, rate_pps,
                             payload_bytes, duration_s, "log", 0.0)

    def udp_streams_result(self, run: UdpStreamsRun, *,
                           timeout_s: float) -> list[UdpStreamResult]:
        sport, port = self.runs[-1]
        return [UdpStreamResult(sport, port, int(run.rate_pps * run.duration_s), 0,
                                run.duration_s)]


@dataclass
class Lab:
    devices: dict[str, Any]

    def device(self, name: str) -> Any:
        return self.devices[name]


BURST = Burst(frames=2000, rate_pps=20000, payload_bytes=1472, timeout_s=5)


def _lab(leaf: Leaf) -> Lab:
    return Lab({"h1": Host("h1", leaf), "h2": Host("h2", leaf), "leaf1": leaf})


def test_each_uplink_gets_a_port_pair_that_takes_it_again() -> None:
    leaf = Leaf()
    found = pin(_lab(leaf), "h1", "h2", "leaf1", UPLINKS, UPLINKS, BURST, attempts=12,  # type: ignore[arg-type]
                server_port=5601)
    assert set(found.ports_of) == set(UPLINKS) and not found.why_not
    for uplink, (sport, dport) in found.ports_of.items():
        assert leaf.member(sport, dport) == uplink
        assert 5601 <= dport < 5601 + found.tries


def test_a_member_never_found_is_said() -> None:
    found = pin(_lab(Leaf(stuck="Ethernet0")), "h1", "h2", "leaf1", UPLINKS, UPLINKS,  # type: ignore[arg-type]
                BURST, attempts=5, server_port=5601)
    assert set(found.ports_of) == {"Ethernet0"} and found.tries == 5
    assert "by Ethernet8" in found.why_not and "5 tried" in found.why_not


def test_a_burst_is_placed_only_when_one_uplink_carried_it() -> None:
    before = {"Ethernet0": 100, "Ethernet8": 100}
    assert _member(before, {"Ethernet0": 2103, "Ethernet8": 104}, 2000) == "Ethernet0"
    assert _member(before, {"Ethernet0": 1700, "Ethernet8": 1100}, 2000) is None  # split
    assert _member(before, {"Ethernet0": 900, "Ethernet8": 100}, 2000) is None  # too few
    assert _member(before, {"Ethernet0": 2100, "Ethernet8": 100}, 0) is None  # nothing sent
