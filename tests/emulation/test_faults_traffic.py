"""Every traffic fault, injected through the catalogue, shows its effect on the model."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from labtest.emulation.model.faults import FaultError, load_catalogue, parse_params
from labtest.emulation.model.traffic import TgFlowSpec, TrafficModel
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed

CATALOGUE = load_catalogue()  # the families, whatever ran before this module
KINDS = {
    "pfc_disabled",
    "ecn_disabled",
    "pfc_storm",
    "pfcwd_disabled",
    "ecmp_polarisation",
    "slow_convergence",
    "degraded_nic",
    "mtu_mismatch",
    "straggler_link",
}
SUITES = {"link", "transceiver", "cabling", "roce", "congestion", "failover", "collective"}


def lab(**kw: Any) -> tuple[TrafficModel, DictLinkView]:
    tb = clos_testbed(**{"spines": 2, "leaves": 4, "hosts_per_leaf": 2, **kw})
    links = DictLinkView.of(tb)
    return TrafficModel(tb, links, np.random.default_rng(4)), links


def inject(m: TrafficModel, kind: str, target: str = "", **params: Any) -> Any:
    """What the testbed file, the CLI and the API all do: look up, validate, apply."""
    fabric = SimpleNamespace(traffic=m)  # the effect only touches ``fabric.traffic``
    return CATALOGUE[kind].effect(fabric, target, parse_params(kind, params))  # type: ignore[arg-type]


def incast(m: TrafficModel, seconds: float = 0.002) -> dict[str, int]:
    for h in range(2, 9):
        m.start_roce(f"host{h}", "host1", duration_s=seconds)
    m.advance(seconds + 0.001)
    ports = [m.port_counters(p.endpoint) for p in m.topo.ports]
    return {
        "drops": sum(p.tx_drops + p.rx_discards for p in ports),
        "pauses": sum(sum(p.pfc_tx_frames) for p in ports),
        "cnps": m.roce_counters("host1").np_cnp_sent,
    }


def test_the_catalogue_documents_every_traffic_fault() -> None:
    assert set(CATALOGUE) >= KINDS
    for kind in KINDS:
        ft = CATALOGUE[kind]
        assert ft.summary and ft.caught_by in SUITES
    with pytest.raises(FaultError, match=r"params\.bogus"):
        parse_params("pfc_disabled", {"bogus": 1})
    with pytest.raises(FaultError):
        parse_params("degraded_nic", {})  # nothing to degrade


def test_pfc_disabled_turns_incast_lossy() -> None:
    healthy, _ = lab()
    faulty, _ = lab()
    for m in (healthy, faulty):
        for sw in m.topo.switches():
            m.set_ecn(sw, False)
    undo = inject(faulty, "pfc_disabled", "leaf1", priority=3)
    assert incast(healthy)["drops"] == 0
    assert incast(faulty)["drops"] > 0
    undo()
    before = incast(faulty)["drops"]
    assert incast(faulty)["drops"] == before  # lossless again


def test_ecn_disabled_leaves_the_work_to_pfc() -> None:
    healthy, _ = lab()
    at_leaf, _ = lab()
    everywhere, _ = lab()
    inject(at_leaf, "ecn_disabled", "leaf1")
    for sw in everywhere.topo.switches():
        inject(everywhere, "ecn_disabled", sw)
    good, leaf, bad = incast(healthy), incast(at_leaf), incast(everywhere)
    assert good["cnps"] > 0 and good["pauses"] == 0
    # the bottleneck no longer marks: PFC backs the queue up into the spines
    assert at_leaf.port_counters("leaf1:Ethernet16").queues[3].ecn_marked_packets == 0
    assert leaf["pauses"] > 0
    assert bad["cnps"] == 0 and bad["pauses"] > 0 and bad["drops"] == 0
    receiver_off, _ = lab()
    inject(receiver_off, "ecn_disabled", "host1")  # the NIC no longer answers CE with CNPs
    assert incast(receiver_off)["cnps"] == 0


def victim_through_same_spine(m: TrafficModel) -> tuple[int, int]:
    """host3 -> host1 (into the storm) and host4 -> host2 sharing its spine."""
    hit = m.start_roce("host3", "host1")[0]
    spine = m.flow_path(hit)[2].split(":")[0]
    for _ in range(32):
        victim = m.start_roce("host4", "host2")[0]
        if m.flow_path(victim)[2].startswith(spine):
            return hit, victim
        m.stop_flow(victim)
    raise AssertionError("no victim path through the same spine")


def delivered_gbps(m: TrafficModel, fid: int, seconds: float) -> float:
    f = m.flow(fid)
    before = f.rx_frames
    m.advance(seconds)
    return (f.rx_frames - before) * f.wire_bytes * 8 / seconds / 1e9


def test_pfc_storm_is_caught_by_the_watchdog_and_victims_recover() -> None:
    m, _ = lab()
    _, victim = victim_through_same_spine(m)
    m.advance(0.01)
    undo = inject(m, "pfc_storm", "host1", priority=3)
    assert delivered_gbps(m, victim, 0.2) < 10  # head-of-line blocked behind the storm
    m.advance(0.3)
    assert watchdog(m, "leaf1:Ethernet16").storm_detected == 1
    assert delivered_gbps(m, victim, 0.2) > 150  # flows again once the queue drops
    undo()
    m.advance(0.5)
    assert watchdog(m, "leaf1:Ethernet16").storm_restored == 1


def watchdog(m: TrafficModel, endpoint: str, priority: int = 3) -> Any:
    device = endpoint.split(":")[0]
    return next(
        s for s in m.pfcwd_stats(device) if (s.endpoint, s.priority) == (endpoint, priority)
    )


def test_pfcwd_disabled_lets_a_storm_spread_upstream() -> None:
    m, _ = lab()
    hit, victim = victim_through_same_spine(m)
    spine = m.flow_path(hit)[2].split(":")[0]
    spine_port = m.flow_path(hit)[2]
    inject(m, "pfcwd_disabled", "leaf1")
    inject(m, "pfcwd_disabled", spine)
    m.advance(0.01)
    inject(m, "pfc_storm", "host1", priority=3)
    assert delivered_gbps(m, victim, 1.0) < 1.0  # never recovers
    assert all(s.storm_detected == 0 for s in m.pfcwd_stats("leaf1"))
    assert m.port_counters(spine_port).pfc_rx_frames[3] > 0  # leaf1 pauses the spine


def test_ecmp_polarisation_concentrates_a_host_pairs_qps() -> None:
    m, _ = lab(spines=4, leaves=2, hosts_per_leaf=4)
    inject(m, "ecmp_polarisation")
    m.start_roce("host1", "host5", qps=64)
    loads = m.port_loads_gbps()
    uplinks = [loads[f"leaf1:Ethernet{8 * i}"] for i in range(4)]
    assert sorted(uplinks)[:3] == [0.0, 0.0, 0.0] and max(uplinks) > 0


def test_slow_convergence_stretches_the_loss_window() -> None:
    m, links = lab(spines=2, leaves=2, hosts_per_leaf=1, tg_ports=2)
    inject(m, "slow_convergence", "leaf1", extra_ms=1000)
    fid = m.start_tg_flow(
        TgFlowSpec(
            name="f", tx_port="tg1:p1", rx_port="tg1:p2", frame_size_b=256, rate={"pps": 5e5}
        )
    )
    uplink = m.flow_path(fid)[1]
    link = m.topo.links[m.topo.ports[m.topo.port(uplink)].link].name
    m.advance(0.5)
    links.state[link].up = False
    m.advance(3.0)
    # BFD 3 x 200 ms + 50 ms FIB + the fault's 1000 ms
    assert m.tg_metrics("f").loss_duration_ms == pytest.approx(1650, rel=0.05)


def test_degraded_nic_speed_or_pcie_lowers_roce_bandwidth() -> None:
    m, _ = lab()
    undo = inject(m, "degraded_nic", "host1", speed_gbps=200)
    (slow,) = m.run_bandwidth([("host1", "host3")], qps=2, start=False)
    assert slow.bw_avg_gbps == pytest.approx(200 * 0.980, rel=0.002)
    undo()
    inject(m, "degraded_nic", "host1", pcie_gbps=100)
    (narrow,) = m.run_bandwidth([("host1", "host3")], qps=2, start=False)
    assert narrow.bw_avg_gbps == pytest.approx(100, rel=0.002)


def test_mtu_mismatch_on_a_host_shrinks_roce_mtu_and_on_a_switch_drops() -> None:
    m, _ = lab()
    undo = inject(m, "mtu_mismatch", "host1:eth0", mtu=1500)
    (r,) = m.run_bandwidth([("host1", "host3")], qps=2, start=False)
    # reference section 3: 92.6 % wire efficiency at MTU 1024
    assert r.mtu_b == 1024 and r.bw_avg_gbps == pytest.approx(400 * 0.926, rel=0.002)
    undo()
    inject(m, "mtu_mismatch", "leaf1:Ethernet16", mtu=1500)  # host1's switch port
    (dead,) = m.run_bandwidth([("host1", "host3")], qps=2, duration_s=0.01)
    assert dead.bw_avg_gbps == 0 and dead.error is not None
    m.advance(0.02)
    assert m.port_counters("leaf1:Ethernet16").rx_discards > 0


def test_straggler_link_halves_the_ring() -> None:
    m, _ = lab()
    hosts = [f"host{i}" for i in range(1, 9)]
    healthy = m.run_allreduce(hosts, [1 << 30])[0].busbw_gbytes_s
    inject(m, "straggler_link", "host5:eth0", rate_fraction=0.5)
    assert m.run_allreduce(hosts, [1 << 30])[0].busbw_gbytes_s == pytest.approx(
        healthy / 2, rel=0.02
    )


def _job(m: TrafficModel, hosts: list[str]) -> None:
    """A training job's all-to-all (the doctor's ``--load``): host i to i+2, i+4, i+6."""
    for i, h in enumerate(hosts):
        for step in (2, 4, 6):
            m.start_roce(h, hosts[(i + step) % len(hosts)], qps=2)


def _placements() -> list[tuple[int, int, float]]:
    """(model seed, fabric link index, rate fraction), drawn the same every run."""
    rng = np.random.default_rng(20261207)
    return [(int(rng.integers(1 << 16)), int(rng.integers(16)), float(rng.uniform(0.4, 0.7)))
            for _ in range(8)]


@pytest.mark.parametrize(("seed", "index", "fraction"), _placements())
def test_a_straggler_link_under_a_job_marks_ecn_where_it_is_saturated(
        seed: int, index: int, fraction: float) -> None:
    """A link held at its lowered rate by traffic that wants more has a standing queue, and
    DCQCN's queue marks a steady share of what it sends. The engine settled on the sum of
    every queue, so one bottleneck still filling towards Kmin hid among the others and its
    interval was carried forward unmarked: in half the placements such a link drained
    exactly its rate and marked nothing, and the doctor saw no bottleneck there."""
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2)
    m = TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(seed))
    fabric_links = [lk for lk in tb.links if all(e.device.startswith(("leaf", "spine"))
                                                  for e in lk.ends)]
    link = fabric_links[index % len(fabric_links)]
    inject(m, "straggler_link", link.name, rate_fraction=fraction)
    _job(m, [n for n, d in tb.devices.items() if d.role == "host"])
    m.advance(1.0)
    before = {str(e): m.port_counters(str(e)) for e in link.ends}
    m.advance(5.0)
    saturated = 0
    for end in map(str, link.ends):
        now, then = m.port_counters(end), before[end]
        gbps = (now.tx_bytes - then.tx_bytes) * 8 / 5.0 / 1e9
        if gbps < 0.95 * fraction * now.speed_gbps:
            continue  # this way carries less than the lowered rate: no queue to mark
        saturated += 1
        sent = now.tx_packets - then.tx_packets
        marked = sum(q.ecn_marked_packets for q in now.queues) - sum(
            q.ecn_marked_packets for q in then.queues)
        assert marked >= 1e-3 * sent, f"{end} at {gbps:.0f} Gb/s marked {marked} of {sent}"
    assert saturated, f"{link.name} at {fraction:.2f}: neither way saturated"
