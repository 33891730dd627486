"""Collectives: ring AllReduce paced by its slowest link, nccl-tests table shape."""

from __future__ import annotations

import numpy as np
import pytest

from labtest.emulation.model.traffic import TrafficModel
from labtest.emulation.model.traffic.collectives import allreduce_rows, bus_factor, size_sweep
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed

HOSTS = [f"host{i}" for i in range(1, 9)]
CEILING_GBYTES_S = 400 * 0.980 / 8  # 98.0 % of 400G (reference section 3), in GB/s


def fabric() -> TrafficModel:
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2)
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(11))


def test_busbw_is_algbw_times_2_n_minus_1_over_n() -> None:
    # nccl-tests doc/PERFORMANCE.md (reference section 6)
    rows = allreduce_rows([1 << 20, 1 << 30], n=8, slowest_bytes_s=40e9, step_latency_s=5e-6)
    for r in rows:
        assert r.busbw_gbytes_s == pytest.approx(r.algbw_gbytes_s * 2 * 7 / 8)
        assert r.algbw_gbytes_s == pytest.approx(r.size_b / (r.time_us * 1e-6) / 1e9)
        assert r.count == r.size_b // 4 and r.wrong == 0
    assert bus_factor(2) == 1.0


def test_size_sweep_matches_b8_e8g_f2() -> None:
    sizes = size_sweep()
    assert sizes[0] == 8 and sizes[-1] == 8 << 30 and len(sizes) == 31


def test_healthy_8_host_ring_reaches_the_wire_ceiling() -> None:
    rows = fabric().run_allreduce(HOSTS)
    big = rows[-1]  # 8 GiB
    assert big.busbw_gbytes_s == pytest.approx(CEILING_GBYTES_S, rel=0.01)
    small = rows[0]  # 8 B: latency bound, 2(n-1) steps of a few microseconds
    assert 14 * 2.0 < small.time_us < 14 * 10.0
    busbw = [r.busbw_gbytes_s for r in rows]
    assert busbw == sorted(busbw)  # bus bandwidth only grows with size


def test_a_straggler_link_at_half_rate_halves_ring_busbw() -> None:
    # reference section 6, tail rule: the slowest link sets busbw for all ranks
    m = fabric()
    healthy = m.run_allreduce(HOSTS, [1 << 30])[0]
    m.set_straggler("leaf2:Ethernet16", 0.5)  # host3's link
    slow = m.run_allreduce(HOSTS, [1 << 30])[0]
    assert slow.busbw_gbytes_s / healthy.busbw_gbytes_s == pytest.approx(0.5, rel=0.02)


def test_a_straggler_off_the_ring_changes_nothing() -> None:
    m = fabric()
    ring = HOSTS[:4]  # host1..host4 on leaf1 and leaf2
    healthy = m.run_allreduce(ring, [1 << 30])[0]
    m.set_straggler("leaf4:Ethernet16", 0.5)  # host7's link
    assert m.run_allreduce(ring, [1 << 30])[0].busbw_gbytes_s == pytest.approx(
        healthy.busbw_gbytes_s
    )
