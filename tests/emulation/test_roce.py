"""RoCE: wire efficiency, max-min shares, perftest-shaped bandwidth and latency."""

from __future__ import annotations

import numpy as np
import pytest

from labtest.emulation.model.traffic import TrafficModel, roce
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed

LINE = 400.0


def fabric(**kw: object) -> TrafficModel:
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2, **kw)  # type: ignore[arg-type]
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(5))


def test_wire_efficiency_from_82_bytes_of_overhead() -> None:
    # reference section 3: 98.0 % at MTU 4096, 92.6 % at MTU 1024 [derived]
    assert roce.wire_efficiency(4096) == pytest.approx(0.980, abs=0.0005)
    assert roce.wire_efficiency(1024) == pytest.approx(0.926, abs=0.0005)
    assert roce.roce_mtu(9000) == 4096 and roce.roce_mtu(1500) == 1024


def test_max_min_gives_the_unconstrained_flow_the_leftover() -> None:
    # two flows share link A (cap 10); flow 2 also crosses link B (cap 2): 2 gets 2, 1 gets 8
    coeff = np.array([[1.0, 1.0], [0.0, 1.0]])
    rates = roce.max_min(coeff, np.array([10.0, 2.0]), np.array([np.inf, np.inf]))
    assert rates.tolist() == pytest.approx([8.0, 2.0])


def test_single_pair_reaches_the_wire_ceiling() -> None:
    # reference section 3: ceiling 98.0 % of 400G = 392 Gb/s; certification pass = 90 %
    (r,) = fabric().run_bandwidth([("host1", "host3")], msg_size_b=65536, qps=2, start=False)
    assert r.bw_avg_gbps == pytest.approx(0.980 * LINE, rel=0.002)
    assert r.mtu_b == 4096 and r.error is None
    assert r.msg_rate_mpps == pytest.approx(r.bw_avg_gbps * 1e3 / (65536 * 8))


def test_bidirectional_doubles_and_two_clients_split_the_server_link() -> None:
    m = fabric()
    (bi,) = m.run_bandwidth([("host1", "host3")], qps=2, bidirectional=True, start=False)
    assert bi.bw_avg_gbps == pytest.approx(2 * 0.980 * LINE, rel=0.002)
    a, b = m.run_bandwidth([("host1", "host3"), ("host2", "host3")], qps=2, start=False)
    assert a.bw_avg_gbps == pytest.approx(0.980 * LINE / 2, rel=0.002)
    assert b.bw_avg_gbps == pytest.approx(a.bw_avg_gbps)


def test_small_messages_are_message_rate_bound() -> None:
    # reference section 3: 2 B writes ran at 2.64 Mpps = 0.04 Gb/s (perftest#132)
    (r,) = fabric().run_bandwidth([("host1", "host3")], msg_size_b=2, qps=1, start=False)
    assert r.msg_rate_mpps == pytest.approx(2.64)
    assert r.bw_avg_gbps == pytest.approx(0.04, abs=0.005)


def test_pcie_caps_a_host_below_its_nic() -> None:
    m = fabric(host_vars={"pcie_gbps": 252.0})  # a Gen5 x8 slot's worth
    (r,) = m.run_bandwidth([("host1", "host3")], qps=4, start=False)
    assert r.bw_avg_gbps == pytest.approx(252.0, rel=0.001)


def test_started_perftest_moves_the_counters_at_its_rate() -> None:
    m = fabric()
    (r,) = m.run_bandwidth([("host1", "host3")], qps=2, duration_s=1.0)
    m.advance(2.0)
    sent = m.roce_counters("host1").tx_packets
    got = m.roce_counters("host3").rx_packets
    frames = r.bw_avg_gbps * 1e9 / 8 / 4096 * 1.0  # one second of 4096 B payloads
    assert sent == pytest.approx(frames, rel=0.002) and got == sent
    assert all(not f.active(m.now_s) for f in m.flows.values())


def test_latency_is_base_plus_hops_with_perftest_percentiles() -> None:
    m = fabric()
    near = m.run_latency("host1", "host2", size_b=2, iterations=20000)
    far = m.run_latency("host1", "host3", size_b=2, iterations=20000)
    # 0.85 us NIC-to-NIC (raw Ethernet 64 B sample, reference section 3) + 0.6 us per switch
    # + 5 ns/m of fibre; the reference expects 1-3 us on tuned bare metal
    assert near.t_typical_us == pytest.approx(0.85 + 0.6 + 6 * 0.005, abs=0.05)
    assert far.t_typical_us == pytest.approx(0.85 + 3 * 0.6 + 66 * 0.005, abs=0.06)
    assert 1.0 <= near.t_typical_us < far.t_typical_us <= 3.5
    for r in (near, far):
        assert r.t_min_us <= r.t_typical_us <= r.p99_us <= r.p99_9_us <= r.t_max_us
        assert r.t_avg_us > r.t_typical_us  # a right-skewed tail


def test_latency_grows_with_a_standing_queue() -> None:
    m = fabric()
    idle = m.run_latency("host2", "host1", iterations=2000)
    for h in range(3, 9):  # 6:1 incast with DCQCN keeps a queue between Kmin and Kmax
        m.start_roce(f"host{h}", "host1")
    m.advance(0.003)
    busy = m.run_latency("host2", "host1", iterations=2000)
    queue_us = busy.t_typical_us - idle.t_typical_us
    # at least Kmin (800 KB, HPCC-derived 400G config) drained at 400G: 16 us
    assert queue_us >= 800e3 * 8 / 400e9 * 1e6
