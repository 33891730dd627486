"""The model's BGP and BFD sessions as the SONiC personality prints them: the shape of real
FRR 8.4 / iproute2 6.1 captures (tests/kernel/samples), read back by the frr parsers, and
link state showing through (a shut port, a miswired pair)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import switch_helpers as h

from labtest.drivers.frr import parsers as p
from labtest.emulation.personalities import sonic

KERNEL_SAMPLES = Path(__file__).resolve().parents[1] / "kernel" / "samples"
LEAF = "leaf1"


def _run(served, command: str) -> str:
    reply = served.cli().run(command)
    assert reply.exit_status == 0, f"{command}: {reply}"
    return reply.output


@pytest.fixture
def lab(monkeypatch):
    fab = h.quiet_fabric(monkeypatch)
    served = sonic.serve(fab, LEAF, fab.testbed.devices[LEAF])
    yield fab, served
    served.stop()


def _sessions(served) -> tuple[dict, dict]:
    addrs = _run(served, "ip -j -4 addr show")
    bgp = _run(served, "sudo vtysh -c 'show bgp summary json'")
    bfd = _run(served, "sudo vtysh -c 'show bfd peers json'")
    return (p.parse_bgp_sessions(f"{bgp}\n{p.ADDRESSES_MARK}\n{addrs}"),
            p.parse_bfd_sessions(f"{bfd}\n{p.ADDRESSES_MARK}\n{addrs}"))


@pytest.mark.parametrize(
    ("command", "sample"),
    [
        ("sudo vtysh -c 'show bgp summary json'", "bgp_summary.json"),
        ("sudo vtysh -c 'show bfd peers json'", "bfd_peers.json"),
        ("ip -j -4 addr show", "ip_addr4.json"),
    ],
)
def test_json_has_the_shape_of_the_real_capture(lab, command, sample) -> None:
    _, served = lab
    ours = json.loads(_run(served, command))
    real = json.loads((KERNEL_SAMPLES / sample).read_text())
    assert h.json_problems(ours, [real]) == []


def test_a_healthy_fabric_link_has_its_sessions_up_on_its_port(lab) -> None:
    _, served = lab
    bgp, bfd = _sessions(served)
    assert {s.local_port for s in bgp.values()} == {"Ethernet0", "Ethernet8"}
    assert all(s.established and s.prefixes_received == 1 for s in bgp.values())
    # leaf1 and spine1 run the model's default BFD (200 ms x 3: the traffic model's)
    assert {(s.local_port, s.up, s.detection_time_ms) for s in bfd.values()} == {
        ("Ethernet0", True, 600.0), ("Ethernet8", True, 600.0)}


def test_a_shut_port_and_a_miswired_pair_take_their_sessions_down(lab) -> None:
    fab, served = lab
    fab.set_admin(LEAF, "Ethernet0", False)
    bgp, bfd = _sessions(served)
    state = {s.local_port: (s.state, s.prefixes_received) for s in bgp.values()}
    assert state == {"Ethernet0": ("Active", 0), "Ethernet8": ("Established", 1)}
    assert {s.local_port: s.status for s in bfd.values()} == {"Ethernet0": "down",
                                                             "Ethernet8": "up"}
    fab.set_admin(LEAF, "Ethernet0", True)
    fab.swap_far_ends(0, 1)  # both cables come up, each on the other's subnet
    bgp, bfd = _sessions(served)
    assert not any(s.established for s in bgp.values())
    assert not any(s.up for s in bfd.values())
