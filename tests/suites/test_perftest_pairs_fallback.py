"""A batch of perftest pairs that the data plane fails (one sender's link drops RoCE
frames over its MTU) is run again: each pair alone names the failing one, and the
healthy pairs then run together, so they report what they reach side by side. Before,
each healthy sender ran alone at line rate, and the congestion suite's incast called
that "the senders did not run together": BROKEN over a fabric fault."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from labtest.capabilities.host import PerftestSpec
from labtest.emulation.lab import EmulatedLab
from labtest.fixtures.perftest_pairs import run_bandwidth_pairs
from labtest.lab import Lab
from labtest.run import default_testbed
from labtest.testbed import load_testbed


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    tb = load_testbed(default_testbed())
    em = EmulatedLab(tb)
    running = em.start()
    drivers = Lab(running)
    em.fabric.inject("mtu_mismatch", "leaf3:Ethernet4/1")  # host6's link
    try:
        yield drivers
    finally:
        drivers.close()
        em.stop()


def test_the_healthy_senders_of_a_failed_batch_run_together_again(lab: Lab) -> None:
    senders = ["host2", "host3", "host4", "host5", "host6", "host7", "host8"]
    spec = PerftestSpec(test="ib_write_bw", size_bytes=65536, qps=2, duration_s=5)
    ran = run_bandwidth_pairs(lab, [(s, "host1") for s in senders], spec)
    outcomes = {o.client: o for o in ran}
    assert outcomes["host6"].error and "host6" in outcomes["host6"].error
    healthy = [outcomes[s] for s in senders if s != "host6"]
    assert all(o.error is None for o in healthy)
    share = 400.0 / len(healthy)  # host1's 400G link, shared by the six that ran
    assert all(o.bw_gbps < 2 * share for o in healthy), {o.client: o.bw_gbps for o in healthy}
    assert sum(o.bw_gbps for o in healthy) > 0.8 * 400.0  # and together they filled it
