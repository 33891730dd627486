"""Latency under load follows the queue model: per-packet delay = base path + the bytes
queued at each egress on the way / the port's drain rate, distributed as the queues move."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from labtest.emulation.model.faults import CATALOGUE, FaultError, parse_params
from labtest.emulation.model.traffic import TrafficModel, fluid_run
from labtest.emulation.model.traffic.congestion import ecn_thresholds
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed
from labtest.measure.limits import load_limits

ROOT = Path(__file__).resolve().parents[2]

LINE_GBPS = 400.0
KMIN_B, KMAX_B, _ = ecn_thresholds(LINE_GBPS)
KMAX_US = KMAX_B * 8 / (LINE_GBPS * 1e9) * 1e6  # 64 us: Kmax drained at line rate
KMIN_US = KMIN_B * 8 / (LINE_GBPS * 1e9) * 1e6  # 16 us


def fabric(seed: int = 1) -> TrafficModel:
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2, speed_gbps=LINE_GBPS)
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(seed))


def loaded(m: TrafficModel, client: str = "host3", iterations: int = 5000) -> tuple:
    """(idle, loaded) ib_write_lat of client -> host1 beside a 5:1 incast into host1."""
    idle = m.run_latency(client, "host1", iterations=iterations)
    for h in range(4, 9):
        m.start_roce(f"host{h}", "host1", qps=2)
    m.advance(0.01)
    return idle, m.run_latency(client, "host1", iterations=iterations)


def test_idle_latency_has_no_queueing_part() -> None:
    m = fabric()
    r = m.run_latency("host3", "host1", iterations=5000)
    assert r.t_typical_us < 3.5  # base path only: NIC, three switches, fibre
    assert r.p99_us < r.t_typical_us * 1.1


def test_a_dcqcn_queue_stands_between_kmin_and_kmax_and_fluctuates() -> None:
    idle, busy = loaded(fabric())
    queue_p50 = busy.t_typical_us - idle.t_typical_us
    assert KMIN_US <= queue_p50 <= KMAX_US
    assert busy.p99_us <= idle.p99_us + KMAX_US  # ECN holds the queue below Kmax
    assert busy.t_stdev_us > 5 * idle.t_stdev_us  # a distribution, not a constant shift
    assert busy.t_min_us < busy.t_typical_us < busy.p99_us <= busy.p99_9_us <= busy.t_max_us


def test_p99_is_kmax_over_line_rate_when_the_queue_oscillates_near_kmax() -> None:
    m = fabric()
    m.set_ecn_thresholds("leaf1", 0.9 * KMAX_B, KMAX_B)  # marks start just below Kmax
    idle, busy = loaded(m)
    queue_p99 = busy.p99_us - idle.t_typical_us
    assert queue_p99 == pytest.approx(KMAX_US, rel=0.08)


def test_pfc_doing_the_work_holds_the_queue_at_xoff_of_every_ingress() -> None:
    m = fabric()
    m.set_ecn("leaf1", False)
    idle, busy = loaded(m)
    # leaf1's port to host1 fills to XOFF (= Kmax) from each spine-facing ingress PG
    assert busy.t_typical_us - idle.t_typical_us > 1.5 * KMAX_US


def test_samples_follow_the_recorded_queue_trace() -> None:
    m = fabric()
    loaded(m)
    eng = m.engine
    path = [m.topo.port(e) for e in m.path("host3", "host1")]
    trace = fluid_run.queue_trace(eng)
    assert len(trace) > 100  # the settled chunks, slice by slice
    hop = np.zeros(len(eng.qs))
    for p in path:
        hop[eng.qs // 8 == p] += 1.0 / eng.cap[p]
    delay = trace @ hop
    samples = fluid_run.queueing_delay_samples(eng, path, 20000, np.random.default_rng(0))
    assert delay.min() - 1e-12 <= samples.min() and samples.max() <= delay.max() + 1e-12
    assert samples.mean() == pytest.approx(delay.mean(), rel=0.02)


def test_ecn_thresholds_fault_raises_the_queue_and_undoes() -> None:
    m = fabric()
    fabric_ns = SimpleNamespace(traffic=m)
    params = parse_params("ecn_thresholds", {})
    undo = CATALOGUE["ecn_thresholds"].effect(fabric_ns, "leaf1", params)  # type: ignore[arg-type]
    assert CATALOGUE["ecn_thresholds"].caught_by == "latency"
    q = m.topo.port("leaf1:Ethernet16") * 8 + 3
    assert m.engine.kmin[q] == 8e6 and m.engine.xoff[q] == KMAX_B  # PFC XOFF unchanged
    idle, busy = loaded(m)
    assert busy.p99_us - idle.p99_us > 1.5 * KMAX_US
    undo()
    assert m.engine.kmin[q] == KMIN_B and m.engine.kmax[q] == KMAX_B
    with pytest.raises(FaultError):
        parse_params("ecn_thresholds", {"kmin_kb": 5, "kmax_kb": 1})
    with pytest.raises(FaultError):
        m.set_ecn_thresholds("host1", 1e6, 2e6)


def test_a_drained_queue_delays_nothing_once_the_load_ended() -> None:
    # the trace of the last stepped chunks must not outlive the queues it recorded
    m = fabric()
    for h in range(4, 9):
        m.start_roce(f"host{h}", "host1", qps=2, duration_s=0.02)
    m.advance(0.01)
    busy = m.run_latency("host3", "host1", iterations=2000)
    m.advance(0.05)  # the incast stopped at 0.02 s and its queue drained
    after = m.run_latency("host3", "host1", iterations=2000)
    assert busy.p99_us > 5 * after.p99_us
    assert after.p99_us < 3.5


def test_a_shallow_buffer_pauses_the_spines_and_blocks_a_flow_to_an_idle_port() -> None:
    # head-of-line blocking: the incast goes to host2; the latency flow to host1 (same leaf)
    # shares no congested egress, only the spine hop leaf1's early XOFF pauses
    def hol(m: TrafficModel) -> float:
        for h in range(4, 9):
            m.start_roce(f"host{h}", "host2", qps=2)
        m.advance(0.01)
        return max(m.run_latency("host3", "host1", iterations=2000).p99_us for _ in range(8))

    assert hol(fabric()) < 10.0  # healthy: ECN keeps the leaf's PGs below XOFF
    m = fabric()
    fabric_ns = SimpleNamespace(traffic=m)
    params = parse_params("shallow_buffer", {})
    undo = CATALOGUE["shallow_buffer"].effect(fabric_ns, "leaf1", params)  # type: ignore[arg-type]
    assert CATALOGUE["shallow_buffer"].caught_by == "latency"
    q = m.topo.port("leaf1:Ethernet0") * 8 + 3
    assert m.engine.xoff[q] == 200e3 < KMIN_B
    assert hol(m) > KMIN_US + 10.0  # a paused spine queue ahead of it
    spines = ("spine1:Ethernet0", "spine2:Ethernet0")
    paused = sum(m.port_counters(e).pfc_rx_frames[3] for e in spines)
    assert paused > 0
    undo()
    assert m.engine.xoff[q] == KMAX_B
    with pytest.raises(FaultError):
        m.set_pg_xoff("host1", 1e5)


def test_a_paused_spine_hop_costs_the_worst_qp_more_than_the_hol_excess_limit() -> None:
    """LAT-1.3's margin at placements nobody chose: whichever spines the incast's QPs hash
    onto (the senders start one by one), the worst of eight latency QPs meets a paused spine
    queue its own ECN holds above Kmin, so its p99 exceeds idle by more than the suite's
    ``latency.hol_p99_excess_us``; healthy, the same worst QP stays near idle. (CI once saw
    a shallow buffer pass LAT-1.3: with every QP on one spine the absolute p99 was 24.8 us,
    under 26 us, while 21 us above its idle p99.)"""
    limit = load_limits(ROOT / "suites/limits/acceptance-400g.yaml").get(
        "latency.hol_p99_excess_us").high
    assert limit is not None

    def excess(seed: int, xoff_kb: float | None) -> float:
        m = fabric(seed)
        if xoff_kb is not None:
            m.set_pg_xoff("leaf1", xoff_kb * 1e3)
        idle = m.run_latency("host3", "host1", iterations=2000).p99_us
        order = np.random.default_rng(seed).permutation([4, 5, 6, 7, 8])
        for h in order:  # staggered like senders started over SSH: each hashes anew
            m.start_roce(f"host{h}", "host2", qps=2)
            m.advance(0.002)
        m.advance(0.01)
        worst = max(m.run_latency("host3", "host1", iterations=2000).p99_us for _ in range(8))
        return worst - idle

    faulty = [excess(seed, kb) for seed, kb in ((0, 100), (4, 185), (5, 200), (8, 400))]
    healthy = [excess(seed, None) for seed in (0, 4)]
    assert min(faulty) > limit * 1.2, faulty
    assert max(healthy) < limit / 4, healthy
