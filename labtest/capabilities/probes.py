"""UDP path probes: where a probe with a chosen source port went, and whether it arrived.

A silent drop or an ECMP member that blackholes some flows leaves every counter
clean; only traffic that crosses it can tell. A probe's source port picks its
ECMP path, so probing a peer on several source ports covers its paths, and a
traceroute-style probe (the same 5-tuple at growing TTLs, Paris-traceroute
style) also says which routers the path crossed: each answers from the
interface the probe came in on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class TraceHop:
    """One TTL: who answered (in order, usually one address) and how many of the probes."""

    ttl: int
    addresses: tuple[str, ...]
    sent: int
    answered: int
    rtt_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class UdpTrace:
    """Probes of one 5-tuple (target, source port, destination port) at TTL 1, 2, ..."""

    target: str
    sport: int
    dport: int
    hops: tuple[TraceHop, ...]

    @property
    def reached(self) -> bool:
        return any(self.target in h.addresses for h in self.hops)

    @property
    def sent(self) -> int:
        """Probes that could have reached the target (those at its TTL, else at the last)."""
        return self._last().sent if self.hops else 0

    @property
    def arrived(self) -> int:
        """Probes the target answered (at its TTL)."""
        last = self._last() if self.hops else None
        return last.answered if last is not None and self.target in last.addresses else 0

    def _last(self) -> TraceHop:
        return next((h for h in self.hops if self.target in h.addresses), self.hops[-1])


def merge_traces(traces: Sequence[UdpTrace]) -> UdpTrace:
    """Traces of one 5-tuple (one path) run one after the other, as one: each TTL's probes
    and answers added up, its addresses and round trips joined (a TTL one run stopped
    before, on reaching the target, it sent nothing at)."""
    first = traces[0]
    by_ttl: dict[int, TraceHop] = {}
    for t in traces:
        for h in t.hops:
            was = by_ttl.get(h.ttl)
            by_ttl[h.ttl] = h if was is None else TraceHop(
                h.ttl, was.addresses + tuple(a for a in h.addresses if a not in was.addresses),
                was.sent + h.sent, was.answered + h.answered, was.rtt_ms + h.rtt_ms)
    return UdpTrace(first.target, first.sport, first.dport,
                    tuple(by_ttl[ttl] for ttl in sorted(by_ttl)))


@runtime_checkable
class UdpProbes(Protocol):
    def probe_address(self) -> str:
        """The data-plane address peers probe this host at."""
        ...

    def udp_traces(self, target: str, sports: Sequence[int], *, dport: int = 33434,
                   probes: int = 3, wait_s: float = 0.5, max_hops: int = 8) -> list[UdpTrace]:
        """One trace per source port to ``target`` (``probes`` per TTL, each waited for
        ``wait_s`` at most), in the order of ``sports``."""
        ...


# --- sequence-numbered UDP streams between hosts (iperf3 -u) ----------------------------------


@dataclass(frozen=True)
class UdpStreamsRun:
    """Streams a host started towards a peer (``UdpStreams.udp_streams_start``): where the
    result will be and how long the streams send."""

    client: str
    server: str
    target: str  # the server's probe address
    port: int  # the server's port: the streams' UDP destination port
    streams: int
    rate_pps: float  # per stream
    payload_bytes: int
    duration_s: float
    log_path: str  # the client's JSON report on the client host
    started_s: float  # the client host's clock when the client started (device_time_s)


@dataclass(frozen=True)
class UdpStreamResult:
    """One stream's datagrams as the receiver's sequence numbers counted them."""

    sport: int
    dport: int
    packets: int  # datagrams sent
    lost_packets: int  # missing from the receiver's sequence
    seconds: float
    out_of_order: int = 0

    @property
    def rate_pps(self) -> float:
        return self.packets / self.seconds if self.seconds > 0 else 0.0

    @property
    def loss_ms(self) -> float:
        """The stream's outage: datagrams lost over its rate (RFC 6412 eq. 6)."""
        rate = self.rate_pps
        return 1000.0 * self.lost_packets / rate if rate > 0 else float("inf")


@runtime_checkable
class UdpStreams(Protocol):
    """Sequence-numbered UDP streams from this host to a peer host (``iperf3 -u -P N``), each
    stream its own source port (ECMP spreads them); the receiver counts lost datagrams."""

    def udp_streams_start(self, server: Any, *, streams: int, rate_pps: float,
                          payload_bytes: int, duration_s: float,
                          port: int = 5201, sport: int | None = None) -> UdpStreamsRun:
        """``sport``: the one stream's source port (``streams`` must be 1), so a flow can be
        put back on the ECMP member a mapping burst found it on."""
        ...

    def udp_streams_result(self, run: UdpStreamsRun, *,
                           timeout_s: float) -> list[UdpStreamResult]: ...
