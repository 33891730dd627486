"""Congestion: PFC headroom and quanta, ECN marking, incast 7:1 with PFC/ECN/DCQCN, watchdog."""

from __future__ import annotations

import numpy as np
import pytest

from labtest.emulation.model.traffic import TrafficModel
from labtest.emulation.model.traffic.congestion import (
    ecn_mark_probability,
    headroom_bytes,
    pause_time_s,
)
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed

LINE_GBPS = 400.0
SENDERS = 7


def fabric(seed: int = 1) -> TrafficModel:
    """The reference burn-in shape: 4 leaves, 2 spines, 8 hosts at 400G."""
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2, speed_gbps=LINE_GBPS)
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(seed))


def incast(m: TrafficModel, settle_s: float = 0.002, measure_s: float = 0.004) -> dict:
    """host2..host8 -> host1 on priority 3; per-flow wire Gb/s over the measuring window."""
    ids = [i for h in range(2, 2 + SENDERS) for i in m.start_roce(f"host{h}", "host1")]
    m.advance(settle_s)
    before = {i: m.flow(i).rx_frames for i in ids}
    m.advance(measure_s)
    gbps = [
        (m.flow(i).rx_frames - before[i]) * m.flow(i).wire_bytes * 8 / measure_s / 1e9 for i in ids
    ]
    ports = [m.port_counters(p.endpoint) for p in m.topo.ports]
    return {
        "gbps": gbps,
        "drops": sum(p.tx_drops + p.rx_discards for p in ports),
        "flow_drops": sum(m.flow(i).drop_frames for i in ids),
        "pauses": sum(sum(p.pfc_tx_frames) for p in ports),
        "host_pauses_rx": sum(sum(m.roce_counters(f"host{h}").rx_prio_pause) for h in range(2, 9)),
        "ce": m.roce_counters("host1").np_ecn_marked_roce_packets,
        "cnp_sent": m.roce_counters("host1").np_cnp_sent,
        "cnp_handled": sum(m.roce_counters(f"host{h}").rp_cnp_handled for h in range(2, 9)),
        "marked_at_leaf": m.port_counters("leaf1:Ethernet16").queues[3].ecn_marked_packets,
    }


def ecn_off(m: TrafficModel) -> None:
    for sw in m.topo.switches():
        m.set_ecn(sw, False)


def test_headroom_matches_the_reference_derivation() -> None:
    # reference section 4: 2 MaxFrame + Pause + 2 Intf + 2 Cable + Resp = 73 KiB at 3 m,
    # 85 KiB at 100 m, at 100G
    assert headroom_bytes(100, 3) / 1024 == pytest.approx(73, abs=0.5)
    assert headroom_bytes(100, 100) / 1024 == pytest.approx(85, abs=0.5)


def test_pause_quanta_are_512_bit_times() -> None:
    # reference section 4: 65535 quanta last 335.5 / 83.9 / 41.9 us at 100G / 400G / 800G
    assert pause_time_s(100) * 1e6 == pytest.approx(335.5, abs=0.1)
    assert pause_time_s(400) * 1e6 == pytest.approx(83.9, abs=0.1)
    assert pause_time_s(800) * 1e6 == pytest.approx(41.9, abs=0.1)


def test_ecn_marking_is_linear_from_kmin_to_pmax_at_kmax() -> None:
    # DCQCN CP (NVIDIA DOCA "DCQCN CC algorithm"): 0 below Kmin, linear to Pmax, all above Kmax
    q = np.array([0.0, 800e3, 2000e3, 3199e3, 3200e3, 5000e3])
    p = ecn_mark_probability(q, np.full(6, 800e3), np.full(6, 3200e3), np.full(6, 0.2))
    assert p[:2].tolist() == [0.0, 0.0]
    assert p[2] == pytest.approx(0.2 * 1200 / 2400)
    assert p[3] == pytest.approx(0.2, rel=1e-3)
    assert p[4:].tolist() == [1.0, 1.0]


def test_incast_with_pfc_is_lossless_and_pauses() -> None:
    m = fabric()
    ecn_off(m)
    r = incast(m)
    assert r["drops"] == 0 and r["flow_drops"] == 0
    assert r["pauses"] > 0 and r["host_pauses_rx"] > 0
    assert sum(r["gbps"]) == pytest.approx(LINE_GBPS, rel=0.01)  # the receiver's link is full


def test_incast_without_pfc_drops() -> None:
    m = fabric()
    ecn_off(m)
    for sw in m.topo.switches():
        m.set_pfc(sw, 3, False)
    r = incast(m)
    assert r["drops"] > 0 and r["flow_drops"] > 0
    assert r["pauses"] == 0


def test_incast_with_ecn_and_dcqcn_marks_notifies_and_shares_fairly() -> None:
    pfc_only = fabric()
    ecn_off(pfc_only)
    baseline = incast(pfc_only)
    r = incast(fabric())
    assert r["ce"] > 0 and r["marked_at_leaf"] > 0
    assert r["cnp_sent"] > 0 and r["cnp_handled"] > 0
    assert r["pauses"] < baseline["pauses"]
    assert r["drops"] == 0
    # reference section 4 (incast N:1, expected): with DCQCN each flow gets about line/N
    fair = LINE_GBPS / SENDERS
    assert all(abs(g - fair) <= 0.10 * fair for g in r["gbps"]), r["gbps"]
    # without ECN, PFC shares by ingress port, not by flow: the local sender gets more
    assert max(baseline["gbps"]) > 1.5 * fair


def test_pfc_storm_is_detected_by_the_watchdog_and_dropped() -> None:
    m = fabric(seed=3)
    m.start_roce("host3", "host1")
    m.advance(0.1)
    stop_storm = m.start_pfc_storm("host1", priority=3)
    m.advance(0.15)  # 150 ms into the storm: not yet
    queue = next(s for s in m.pfcwd_stats("leaf1") if s.endpoint == "leaf1:Ethernet16")
    assert queue.status == "operational" and queue.storm_detected == 0
    m.advance(0.25)  # SONiC start_default: detect 200 ms, polled every 200 ms
    queue = next(s for s in m.pfcwd_stats("leaf1") if s.endpoint == "leaf1:Ethernet16")
    assert queue.status == "stormed" and queue.storm_detected == 1 and queue.tx_drop > 0
    # a storming NIC refreshes XOFF every half pause time: 2 / 83.9 us at 400G
    rx = m.port_counters("leaf1:Ethernet16").pfc_rx_frames[3]
    assert rx == pytest.approx(0.4 * 2 / pause_time_s(400), rel=0.01)
    stop_storm()
    m.advance(0.5)  # restoration 200 ms after the last pause frame, on the poll grid
    queue = next(s for s in m.pfcwd_stats("leaf1") if s.endpoint == "leaf1:Ethernet16")
    assert queue.status == "operational" and queue.storm_restored == 1
