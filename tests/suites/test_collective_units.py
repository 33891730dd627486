"""Pure parts behind the collective suite: the saturating probe's pairs and the ranking of
straggler suspects from per-port evidence."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from labtest.capabilities.host import RdmaHwCounters
from labtest.fixtures.cabling_plan import attachments, uplinks
from labtest.fixtures.run_counters import HostSample, PortDelta
from labtest.fixtures.stragglers import (
    HostLinkProbe,
    held_back,
    host_link_culprits,
    host_link_rounds,
    leaf_shift_pairs,
    link_evidence,
    network_suspects,
    straggler_labels,
    straggler_suspects,
)
from labtest.fixtures.traffic import FabricView
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]
HOSTS = [f"host{i}" for i in range(1, 9)]
SWITCHES = ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"]
SECONDS = 10.0
LINE_BYTES = 400e9 / 8 * SECONDS  # one 400G direction, full, over the probe


@pytest.fixture(scope="module")
def view() -> FabricView:
    tb = load_testbed(REPO / "testbeds" / "emulated" / "leafspine.yaml")
    lab = SimpleNamespace(testbed=tb)
    att = attachments(tb, HOSTS, SWITCHES)
    return FabricView(lab, HOSTS, SWITCHES, att, uplinks(tb, SWITCHES))  # type: ignore[arg-type]


def test_leaf_shift_pairs_send_every_host_across_the_spines(view):
    pairs = leaf_shift_pairs(view.attachment)
    assert len(pairs) == 8 and sorted(a for a, _ in pairs) == HOSTS
    assert sorted(b for _, b in pairs) == HOSTS  # a permutation: every host receives once
    assert all(view.attachment[a].switch != view.attachment[b].switch for a, b in pairs)


def _deltas(view, shares: dict[str, tuple[float, float]], **extra) -> dict[str, PortDelta]:
    """Every uplink and host-facing port full both ways unless ``shares`` says otherwise
    (tx share of line, rx share of line)."""
    ports = [u.endpoint for ups in view.uplinks.values() for u in ups]
    ports += [f"{a.switch}:{a.switch_port}" for a in view.attachment.values()]
    out = {}
    for endpoint in ports:
        tx, rx = shares.get(endpoint, (0.98, 0.98))
        device, _, port = endpoint.partition(":")
        out[endpoint] = PortDelta(
            device, port, 1.0, tx_packets=int(tx * 1e6), rx_packets=int(rx * 1e6),
            tx_octets=int(tx * LINE_BYTES), **extra.get(endpoint, {}),
        )  # fmt: skip
    return out


def _speeds(deltas):
    return dict.fromkeys(deltas, 400.0)


def test_a_congested_port_below_line_rate_is_the_straggler(view):
    deltas = _deltas(
        view,
        {"spine1:Ethernet0": (0.5, 0.5), "leaf1:Ethernet0": (0.5, 0.5)},
        **{"spine1:Ethernet0": {"queue_ecn_marked": {3: 12345}}},
    )
    evidence = link_evidence(view, deltas, _speeds(deltas), SECONDS)
    top = straggler_suspects(evidence, view, util_below=0.9)[0]
    assert (top.endpoint, top.score, top.link) == (
        "spine1:Ethernet0", 2, "leaf1:Ethernet0--spine1:Ethernet0",
    )  # fmt: skip
    assert top.util == pytest.approx(0.5)


def test_without_ecn_counters_the_link_short_both_ways_wins_over_the_one_downstream(view):
    # host6's link runs at half rate both ways; host8's downlink is short only because
    # host6 (sending to host8) is held back by it
    deltas = _deltas(view, {"leaf3:Ethernet4/1": (0.5, 0.5), "leaf4:Ethernet24": (0.5, 0.98)})
    evidence = link_evidence(view, deltas, _speeds(deltas), SECONDS)
    suspects = straggler_suspects(evidence, view, util_below=0.9)
    assert [e.endpoint for e in suspects] == ["leaf3:Ethernet4/1"]
    assert suspects[0].link == "host6:eth0--leaf3:Ethernet4/1" and suspects[0].score == 1


def test_errors_outrank_congestion_and_a_healthy_bottleneck_is_no_suspect(view):
    deltas = _deltas(
        view,
        {},
        **{
            "leaf2:Ethernet8": {"fec_uncorrectable": 3},
            "leaf4:Ethernet8": {"queue_ecn_marked": {3: 99}},  # marked, but at line rate
        },
    )
    evidence = link_evidence(view, deltas, _speeds(deltas), SECONDS)
    suspects = straggler_suspects(evidence, view, util_below=0.9)
    assert [(e.endpoint, e.score) for e in suspects] == [("leaf2:Ethernet8", 3)]


def test_a_healthy_saturated_fabric_has_no_suspects(view):
    deltas = _deltas(view, {})
    evidence = link_evidence(view, deltas, _speeds(deltas), SECONDS)
    assert straggler_suspects(evidence, view, util_below=0.9) == []


def test_host_link_rounds_pair_each_leafs_hosts_and_the_odd_one_elsewhere(view):
    rounds = host_link_rounds(view.attachment)
    assert rounds == [[("host1", "host2"), ("host3", "host4"), ("host5", "host6"),
                       ("host7", "host8")]]  # fmt: skip
    odd = {h: a for h, a in view.attachment.items() if h != "host2"}
    first, second = host_link_rounds(odd)
    assert ("host1", "host2") not in first and second == [("host1", "host3")]


def _probe(a, b, share, pa, pb):
    return HostLinkProbe(a, b, share * 800.0, 800.0, {a: pa, b: pb})


def test_the_host_not_held_back_in_a_slow_pair_is_named():
    found = host_link_culprits(
        [_probe("host1", "host2", 0.98, 0, 0), _probe("host5", "host6", 0.7, 12, 950_000)],
        util_below=0.9,
    )
    assert [(f.host, f.certain) for f in found] == [("host5", True)]
    assert found[0].share == pytest.approx(0.7) and "host6 was held back" in found[0].why


def test_without_counters_both_hosts_of_a_slow_pair_are_uncertain(view):
    found = host_link_culprits([_probe("host5", "host6", 0.6, None, None)], util_below=0.9)
    assert {(f.host, f.certain) for f in found} == {("host5", False), ("host6", False)}
    labels = straggler_labels(view, found, [])
    assert labels["candidates"] == ("host5:eth0--leaf3:Ethernet3/1,host6:eth0--leaf3:Ethernet4/1")


def test_a_certain_host_link_outranks_the_fabric_suspects(view):
    deltas = _deltas(
        view, {"leaf1:Ethernet0": (0.5, 0.5)}, **{"leaf1:Ethernet0": {"fec_uncorrectable": 1}}
    )
    suspects = straggler_suspects(
        link_evidence(view, deltas, _speeds(deltas), SECONDS), view, util_below=0.9
    )
    found = host_link_culprits([_probe("host7", "host8", 0.6, 0, 5000)], util_below=0.9)
    labels = straggler_labels(view, found, suspects)
    assert (labels["link"], labels["device"], labels["port"]) == (
        "host7:eth0--leaf4:Ethernet16", "leaf4", "Ethernet16",
    )  # fmt: skip
    assert straggler_labels(view, [], suspects)["link"] == "leaf1:Ethernet0--spine1:Ethernet0"


def test_cleared_host_ports_are_no_suspects(view):
    deltas = _deltas(view, {"leaf4:Ethernet24": (0.6, 0.6)})
    evidence = link_evidence(view, deltas, _speeds(deltas), SECONDS)
    assert straggler_suspects(evidence, view, util_below=0.9)[0].endpoint == "leaf4:Ethernet24"
    assert straggler_suspects(evidence, view, util_below=0.9, cleared=["leaf4:Ethernet24"]) == []


def test_held_back_sums_cnps_and_pauses_and_is_none_without_counters():
    def sample(cnp, pause):
        rdma = RdmaHwCounters.from_counters("mlx5_0", 1, {"rp_cnp_handled": cnp})
        return HostSample(0.0, {"rx_prio3_pause": pause, "rx_prio0_pause": 0}, rdma)

    assert held_back(sample(10, 4), sample(110, 9)) == 105
    assert held_back(HostSample(0.0), HostSample(1.0)) is None


RING = ["host1", "host2", "host3", "host4", "host5", "host6", "host7", "host8"]
HOPS = list(zip(RING, [*RING[1:], RING[0]], strict=True))


def _suspects(view, **kw):
    args = {"oper_up": {}, "down_events": {}, "mtu_bytes": {}, "need_mtu_bytes": 4140,
            "hops": HOPS, "failed_hops": []}  # fmt: skip
    return network_suspects(view, **{**args, **kw})


def test_a_switch_port_mtu_below_roce_need_is_the_culprit(view):
    top = _suspects(view, mtu_bytes={"leaf3:Ethernet3/1": 1500, "host5:eth0": 9000})[0]
    assert (top.link, top.endpoint, top.kind, top.value) == (
        "host5:eth0--leaf3:Ethernet3/1", "leaf3:Ethernet3/1", "mtu", 1500,
    )  # fmt: skip


def test_without_mtu_the_host_common_to_the_failing_hops_names_its_link(view):
    failed = [("host4", "host5"), ("host5", "host6")]  # EOS: leaf3 reports no MTU
    (top,) = _suspects(view, failed_hops=failed)
    assert (top.link, top.endpoint, top.kind) == (
        "host5:eth0--leaf3:Ethernet3/1", "leaf3:Ethernet3/1", "common_host",
    )  # fmt: skip
    assert _suspects(view, failed_hops=failed[:1]) == []  # one hop: two ends, no common member


def test_a_port_down_outranks_a_flap_and_a_flap_outranks_a_common_host(view):
    suspects = _suspects(
        view,
        oper_up={"leaf1:Ethernet8": False},
        down_events={"leaf4:Ethernet0": 2, "spine1:Ethernet24": 2},
        failed_hops=[("host4", "host5"), ("host5", "host6")],
    )
    assert [(x.endpoint, x.kind) for x in suspects][:2] == [
        ("leaf1:Ethernet8", "down"), ("leaf4:Ethernet0", "flaps"),
    ]  # fmt: skip
    flapping = _suspects(view, down_events={"leaf4:Ethernet0": 1})[0]
    assert flapping.link == "leaf4:Ethernet0--spine1:Ethernet24" and flapping.value == 1


def test_a_healthy_fabric_gives_no_network_suspect(view):
    ok = {f"{a.switch}:{a.switch_port}": 9100 for a in view.attachment.values()}
    assert _suspects(view, mtu_bytes=ok, oper_up=dict.fromkeys(ok, True)) == []


def test_the_fabric_suspect_names_its_direction(view):
    one_way = _deltas(view, {"spine1:Ethernet0": (0.5, 0.5)},
                      **{"spine1:Ethernet0": {"queue_ecn_marked": {3: 10}}})  # fmt: skip
    suspects = straggler_suspects(
        link_evidence(view, one_way, _speeds(one_way), SECONDS), view, util_below=0.9
    )
    labels = straggler_labels(view, [], suspects)
    assert labels["direction"] == "spine1:Ethernet0->leaf1:Ethernet0"
    both = _deltas(view, {"spine1:Ethernet0": (0.5, 0.5), "leaf1:Ethernet0": (0.5, 0.5)})
    suspects = straggler_suspects(
        link_evidence(view, both, _speeds(both), SECONDS), view, util_below=0.9
    )
    assert straggler_labels(view, [], suspects)["direction"] == "both"
