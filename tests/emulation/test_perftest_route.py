"""One perftest run, one route: the rate ``ib_write_bw`` prints and the bytes the switches
count come from the same ECMP member.

The emulated ``ib_write_bw`` measured its rate on queue pairs with drawn QP numbers, then
started new queue pairs (new numbers, so another RoCEv2 source port and, half the time,
another ECMP member) to move the counters. With a half-rate member, a burst printed 196
Gb/s while the counters showed its bytes on the healthy sibling, and the doctor's bursts,
which read the member from those counters, paged the destination's host link (issue 34's
straggler example, interval 10 of ten).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labtest.capabilities.host import PerftestSpec
from labtest.emulation.lab import EmulatedLab
from labtest.lab import Lab
from labtest.run import default_testbed
from labtest.testbed import load_testbed

SLOW_PORT = "leaf2:Ethernet0"  # leaf2's uplink to spine1, at half its rate


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[EmulatedLab, Lab]]:
    em = EmulatedLab(load_testbed(default_testbed()))
    drivers = Lab(em.start())
    em.fabric.inject("straggler_link", SLOW_PORT, rate_fraction=0.5)
    try:
        yield em, drivers
    finally:
        drivers.close()
        em.stop()


def _route(em: EmulatedLab, client: str) -> set[str]:
    """The ports the client's last started perftest queue pair leaves through."""
    traffic: Any = em.fabric.traffic
    qp = [f for f in traffic.flows.values() if f.name.startswith(f"perftest:{client}:")][-1]
    return {f"{traffic.topo.ports[p].device}:{traffic.topo.ports[p].name}" for p in qp.path}


def test_the_printed_rate_is_the_counted_routes(lab: tuple[EmulatedLab, Lab]) -> None:
    em, drivers = lab
    spec = PerftestSpec(qps=1, size_bytes=65536, iterations=1000)
    seen = set()
    for client, server in [("host1", "host3"), ("host2", "host3"), ("host5", "host3"),
                           ("host6", "host3"), ("host7", "host3"), ("host8", "host3"),
                           ("host3", "host5"), ("host3", "host6"), ("host3", "host7"),
                           ("host3", "host8"), ("host4", "host1"), ("host4", "host7")]:
        gbps = drivers.device(client).perftest_bandwidth(
            drivers.device(server), None, spec, timeout_s=30.0).client.best_average_gbps
        route = _route(em, client)
        slow = bool(route & {SLOW_PORT, "spine1:Ethernet8"})  # either way over the member
        seen.add(slow)
        assert (gbps < 300) == slow, (client, server, gbps, sorted(route))
    assert seen == {True, False}  # both members taken: the check could fail either way
