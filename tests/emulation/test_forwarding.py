"""Forwarding: shortest paths, ECMP spread and polarisation, failover timing."""

from __future__ import annotations

import numpy as np
import pytest

from labtest.emulation.model.traffic import TgFlowSpec, TrafficModel
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed
from labtest.testbed import model as tbm
from labtest.testbed.model import Device, Link

DETECT_PLUS_CONVERGE_S = 3 * 0.200 + 0.050  # BFD 200 ms x 3 (Dell OS10 default) + our 50 ms FIB


def model(tb: tbm.Testbed, seed: int = 7) -> tuple[TrafficModel, DictLinkView]:
    links = DictLinkView.of(tb)
    return TrafficModel(tb, links, np.random.default_rng(seed)), links


def uplink_loads(m: TrafficModel, device: str, towards: str) -> list[float]:
    loads = m.port_loads_gbps()
    return [
        loads[m.topo.ports[p].endpoint]
        for p in m.topo.device_ports[device]
        if m.topo.peer_device(p).startswith(towards)
    ]


def test_paths_are_shortest_over_the_cabling_plan() -> None:
    m, _ = model(clos_testbed(spines=2, leaves=2, hosts_per_leaf=2))
    same_leaf = m.path("host1", "host2")
    cross = m.path("host1", "host3")
    assert same_leaf == ["host1:eth0", "leaf1:Ethernet24"]
    assert len(cross) == 4  # NIC, leaf uplink, spine downlink, leaf downlink
    assert cross[0] == "host1:eth0" and cross[1].startswith("leaf1:")
    assert cross[2].startswith("spine") and cross[3] == "leaf2:Ethernet16"


def test_good_hash_spreads_many_qps_within_20_percent() -> None:
    # featureprofiles BGP multipath: each member within +-20 % of tx/N
    # (reference/featureprofiles-otg.md, section 2)
    m, _ = model(clos_testbed(spines=4, leaves=2, hosts_per_leaf=4))
    for src in ("host1", "host2", "host3", "host4"):
        m.start_roce(src, "host5", qps=256)
    loads = uplink_loads(m, "leaf1", "spine")
    mean = float(np.mean(loads))
    assert len(loads) == 4 and mean > 0
    assert all(abs(x - mean) <= 0.20 * mean for x in loads), loads


def test_polarised_hash_puts_a_host_pairs_qps_on_one_uplink() -> None:
    m, _ = model(clos_testbed(spines=4, leaves=2, hosts_per_leaf=4))
    m.set_ecmp_hash(None, seed=0, fields=("src_ip", "dst_ip"))
    m.start_roce("host1", "host5", qps=256)
    loads = uplink_loads(m, "leaf1", "spine")
    mean = float(np.mean(loads))
    assert max(loads) == pytest.approx(4 * mean)  # all on one of four uplinks
    assert sum(x == 0 for x in loads) == 3


def test_hashing_the_roce_destination_qp_spreads_one_five_tuple() -> None:
    # Meta E-ECMP (reference section 6): adding the RoCE destination QP to the hash
    five_tuple = {"spines": 4, "leaves": 2, "hosts_per_leaf": 1}
    plain, _ = model(clos_testbed(**five_tuple))
    eecmp, _ = model(
        clos_testbed(
            **five_tuple,
            switch_vars={"hash_fields": ["src_ip", "dst_ip", "proto", "sport", "dport", "dst_qp"]},
        )
    )
    for m, spread in ((plain, False), (eecmp, True)):
        uplinks = [m.path("host1", "host2", sport=50000, dst_qp=qp)[1] for qp in range(4096)]
        counts = [uplinks.count(u) for u in sorted(set(uplinks))]
        if spread:
            assert len(counts) == 4 and all(abs(c - 1024) <= 0.2 * 1024 for c in counts)
        else:
            assert counts == [4096]  # one 5-tuple, one member


def three_tier() -> tbm.Testbed:
    """leaf1 - agg1/agg2 - spine1/spine2 - agg3/agg4 - leaf2, four hosts per leaf."""
    dev = {
        n: Device(role="spine" if n.startswith("spine") else "leaf", driver="sonic")
        for n in ("leaf1", "leaf2", "agg1", "agg2", "agg3", "agg4", "spine1", "spine2")
    }
    links = []
    for leaf, aggs in (("leaf1", ("agg1", "agg2")), ("leaf2", ("agg3", "agg4"))):
        for i, agg in enumerate(aggs):
            links.append(Link(a=f"{leaf}:Ethernet{i}", b=f"{agg}:Ethernet0", speed_gbps=400))
            for s in (1, 2):
                links.append(Link(a=f"{agg}:Ethernet{s}", b=f"spine{s}:{agg}", speed_gbps=400))
    for h in range(1, 9):
        leaf = "leaf1" if h <= 4 else "leaf2"
        dev[f"host{h}"] = Device(role="host", driver="linux")
        links.append(Link(a=f"host{h}:eth0", b=f"{leaf}:Ethernet{10 + h}", speed_gbps=400))
    return tbm.Testbed(name="three-tier", devices=dev, links=links)


def test_same_seed_at_every_tier_leaves_half_the_agg_uplinks_idle() -> None:
    tb = three_tier()
    healthy, _ = model(tb)
    polar, _ = model(tb)
    polar.set_ecmp_hash(None, seed=1, fields=("src_ip", "dst_ip", "proto", "sport", "dport"))
    for m in (healthy, polar):
        for src in ("host1", "host2", "host3", "host4"):
            m.start_roce(src, "host5", qps=128)
    good = uplink_loads(healthy, "agg1", "spine") + uplink_loads(healthy, "agg2", "spine")
    bad = uplink_loads(polar, "agg1", "spine") + uplink_loads(polar, "agg2", "spine")
    mean = float(np.mean(good))
    assert all(abs(x - mean) <= 0.20 * mean for x in good), good
    # leaf and agg pick member (hash mod 2) with the same hash: agg1 only ever uses one spine
    assert sorted(bad)[:2] == [0.0, 0.0], bad


def tg_pair(m: TrafficModel, name: str, sport: int, fps: float = 1e6) -> int:
    spec = TgFlowSpec(
        name=name,
        tx_port="tg1:p1",
        rx_port="tg1:p2",
        frame_size_b=512,
        rate={"pps": fps},
        src_port=sport,
    )
    return m.start_tg_flow(spec)


def flows_on_both_spines(m: TrafficModel) -> tuple[int, int, str]:
    """Two TG flows leaf1 -> leaf2, one through each spine; returns them and the first's uplink."""
    by_spine: dict[str, int] = {}
    for sport in range(49152, 49200):
        fid = tg_pair(m, f"f{sport}", sport)
        spine = m.flow_path(fid)[2].split(":")[0]
        if spine in by_spine:
            m.stop_flow(fid)
            continue
        by_spine[spine] = fid
        if len(by_spine) == 2:
            break
    via1, via2 = by_spine["spine1"], by_spine["spine2"]
    return via1, via2, m.flow_path(via1)[1]


def test_failover_loss_window_is_detection_plus_convergence() -> None:
    tb = clos_testbed(spines=2, leaves=2, hosts_per_leaf=1, tg_ports=2)
    m, links = model(tb)
    via1, via2, uplink = flows_on_both_spines(m)
    m.advance(1.0)
    link = m.topo.links[m.topo.ports[m.topo.port(uplink)].link].name
    links.state[link].up = False
    m.advance(2.0)
    links.state[link].up = True
    m.advance(2.0)
    hit = m.tg_metrics(m.flow(via1).name)
    spared = m.tg_metrics(m.flow(via2).name)
    # RFC 6412 eq. 6: loss-derived convergence time = lost packets / offered rate
    assert hit.loss_duration_ms == pytest.approx(DETECT_PLUS_CONVERGE_S * 1000, rel=0.05)
    assert spared.frames_tx > 0 and spared.frames_rx == spared.frames_tx
    assert spared.loss_pct == 0.0
    # rehashed onto the surviving spine while the link was down, back after it returned
    assert m.flow_path(via1)[2].startswith("spine1")
    assert m.link_routed(link)


def test_a_flap_shorter_than_detection_costs_only_the_flap() -> None:
    tb = clos_testbed(spines=2, leaves=2, hosts_per_leaf=1, tg_ports=2)
    m, links = model(tb)
    via1, _, uplink = flows_on_both_spines(m)
    link = m.topo.links[m.topo.ports[m.topo.port(uplink)].link].name
    m.advance(0.5)
    links.state[link].up = False
    m.advance(0.1)  # back before BFD could declare it down
    links.state[link].up = True
    m.advance(1.0)
    assert m.tg_metrics(m.flow(via1).name).loss_duration_ms == pytest.approx(100.0, rel=0.01)
    assert m.link_routed(link)
