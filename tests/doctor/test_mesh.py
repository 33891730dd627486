"""The live mesh's reading of a trace: answered hops pin their link, silent ones stand for
every shortest-path link there."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from labtest.capabilities.probes import TraceHop, UdpTrace
from labtest.doctor.evidence import Snapshot
from labtest.doctor.judge import Plan
from labtest.doctor.mesh import LiveMesh, probe_paths
from labtest.measure.traces import TraceReader
from labtest.testbed import model as tb
from labtest.testbed.model import Device, Link


def _plan() -> Plan:
    devices = {n: Device(role=n[:-1], driver="sonic") for n in ("spine1", "spine2", "leaf1",
                                                                 "leaf2")}
    devices |= {h: Device(role="host", driver="linux") for h in ("host1", "host2")}
    links = [Link(a=f"leaf{lf}:Ethernet{s}", b=f"spine{s}:Ethernet{lf}") for lf in (1, 2)
             for s in (1, 2)]
    links += [Link(a="host1:eth0", b="leaf1:Ethernet9"), Link(a="host2:eth0", b="leaf2:Ethernet9")]
    return Plan.of(tb.Testbed(name="t", devices=devices, links=links))


def _trace(*hops: tuple[str, ...]) -> UdpTrace:
    return UdpTrace("10.0.0.2", 40000, 33434, tuple(
        TraceHop(i + 1, a, 3, 3 if a else 0) for i, a in enumerate(hops)))


def test_answered_hops_pin_their_links_and_silent_ones_stand_for_every_candidate() -> None:
    mesh = LiveMesh(_plan(), addresses={"host1": "10.0.0.1", "host2": "10.0.0.2"})
    # leaf1's BGP peer 198.18.0.1 is spine2's address on leaf1:Ethernet2's link, etc.
    snap = Snapshot(addresses={"198.18.0.1": "leaf1:Ethernet2", "198.18.0.3": "spine2:Ethernet2"})
    full = mesh.links("host1", "host2", _trace(("gw",), ("198.18.0.1",), ("198.18.0.3",),
                                               ("10.0.0.2",)), snap)
    assert full == ("host1:eth0--leaf1:Ethernet9", "leaf1:Ethernet2--spine2:Ethernet1",
                    "leaf2:Ethernet2--spine2:Ethernet2", "host2:eth0--leaf2:Ethernet9")
    dark = mesh.links("host1", "host2", _trace(("gw",), (), (), ()), snap)
    assert dark[0] == "host1:eth0--leaf1:Ethernet9" and set(dark) == {
        "host1:eth0--leaf1:Ethernet9", "leaf1:Ethernet1--spine1:Ethernet1",
        "leaf1:Ethernet2--spine2:Ethernet1", "leaf2:Ethernet1--spine1:Ethernet2",
        "leaf2:Ethernet2--spine2:Ethernet2", "host2:eth0--leaf2:Ethernet9"}


def test_a_traffic_generator_cabled_to_both_leaves_is_never_a_hop() -> None:
    """The kernel lab's tg1 has a port on each leaf: it is two hops from host2 as the spines
    are, but forwards nothing, so a silent hop past leaf1 never stands for leaf1's link to
    it (the paths suite's traces once blamed that link for an uplink's hole)."""
    plan = _plan()
    testbed = plan.testbed.model_copy(update={
        "devices": {**plan.testbed.devices, "tg1": Device(role="tg", driver="scapy")},
        "links": [*plan.testbed.links, Link(a="tg1:p1", b="leaf1:Ethernet8"),
                  Link(a="tg1:p2", b="leaf2:Ethernet8")]})
    mesh = LiveMesh(Plan.of(testbed), addresses={"host1": "10.0.0.1", "host2": "10.0.0.2"})
    dark = mesh.links("host1", "host2", _trace(("gw",), (), (), ()), Snapshot())
    assert not any("tg1" in lk for lk in dark), dark
    assert "leaf1:Ethernet1--spine1:Ethernet1" in dark


def test_a_flow_lost_whole_vanished_on_the_step_past_its_last_answer() -> None:
    """Paris-style, a hop that answered was reached by the flow: a trace answered by leaf1
    and spine2, then silent, lost its flow on spine2's way down to leaf2; one answered by
    leaf1 alone may have lost it on either of leaf1's uplinks, and nothing further on."""
    reader = TraceReader(_plan().testbed, {"host1": "10.0.0.1", "host2": "10.0.0.2"})
    peers = {"198.18.0.1": "leaf1:Ethernet2"}  # spine2's address on leaf1's uplink to it
    past_spine = _trace(("gw",), ("198.18.0.1",), (), ())
    assert reader.vanished_on("host1", "host2", past_spine, peers) == (
        "leaf2:Ethernet2--spine2:Ethernet2",)
    up = _trace(("gw",), (), (), ())
    assert set(reader.vanished_on("host1", "host2", up, peers)) == {
        "leaf1:Ethernet1--spine1:Ethernet1", "leaf1:Ethernet2--spine2:Ethernet1"}


def _answers(*hops: tuple[tuple[str, ...], int]) -> UdpTrace:
    return UdpTrace("10.0.0.2", 40000, 33434, tuple(
        TraceHop(i + 1, a, 10, n) for i, (a, n) in enumerate(hops)))


def test_switches_whose_answer_can_only_come_back_the_way_the_probe_went_are_paths() -> None:
    """The source's leaf and the spine answer over the links the probe crossed (one way
    back each); the far leaf's answer may come back over either spine and is left out. A
    spine that answered nothing is not pinned: each candidate spine stands for it with all
    its probes lost (a hole must not make the link that swallowed it look clean)."""
    reader = TraceReader(_plan().testbed, {"host1": "10.0.0.1", "host2": "10.0.0.2"})
    peers = {"198.18.0.1": "leaf1:Ethernet2", "198.18.0.3": "spine2:Ethernet2"}
    access, up2 = "host1:eth0--leaf1:Ethernet9", "leaf1:Ethernet2--spine2:Ethernet1"
    trace = _answers((("gw",), 10), (("198.18.0.1",), 7), (("198.18.0.3",), 10),
                     (("10.0.0.2",), 10))
    assert reader.switch_answers("host1", "host2", trace, peers) == [
        ("leaf1", (access,), 10, 0), ("spine2", (access, up2), 10, 3)]
    dark = _answers((("gw",), 10), ((), 0), ((), 0), ((), 0))
    assert reader.switch_answers("host1", "host2", dark, peers) == [
        ("leaf1", (access,), 10, 0), ("spine1", (access, "leaf1:Ethernet1--spine1:Ethernet1"),
                                      10, 10), ("spine2", (access, up2), 10, 10)]


def test_parallel_links_leave_the_spine_answer_out() -> None:
    """Two links between leaf1 and spine2: the answer may come back over the other one."""
    plan = _plan()
    testbed = plan.testbed.model_copy(update={
        "links": [*plan.testbed.links, Link(a="leaf1:Ethernet3", b="spine2:Ethernet3")]})
    reader = TraceReader(testbed, {"host1": "10.0.0.1", "host2": "10.0.0.2"})
    trace = _answers((("gw",), 10), (("198.18.0.1",), 10), (("198.18.0.3",), 10),
                     (("10.0.0.2",), 10))
    assert reader.switch_answers("host1", "host2", trace, {"198.18.0.1": "leaf1:Ethernet2"}) == [
        ("leaf1", ("host1:eth0--leaf1:Ethernet9",), 10, 0)]


def test_merged_traces_add_up_each_hop_and_keep_where_a_run_stopped() -> None:
    """A run that reached the target stops there; one that lost it goes on to max_hops:
    merged, the target's TTL carries both runs' probes, the later TTLs the second's only."""
    from labtest.capabilities.probes import TraceHop, UdpTrace, merge_traces

    reached = UdpTrace("10.0.0.7", 40000, 33434, (
        TraceHop(1, ("10.1.0.1",), 10, 10), TraceHop(2, ("10.0.0.7",), 10, 9)))
    lost = UdpTrace("10.0.0.7", 40000, 33434, (
        TraceHop(1, ("10.1.0.1",), 10, 10), TraceHop(2, (), 10, 0), TraceHop(3, (), 10, 0)))
    merged = merge_traces([reached, lost])
    assert [(h.ttl, h.sent, h.answered) for h in merged.hops] == [
        (1, 20, 20), (2, 20, 9), (3, 10, 0)]
    assert merged.reached and (merged.sent, merged.arrived) == (20, 9)


def test_a_hop_past_a_late_switch_is_pinned_by_the_hop_after_it() -> None:
    """Issue 34 (noise evaluation, load at time scale 1): with leaf3 late, no BGP session
    read named the spines' addresses toward leaf3, so every hop past leaf3 stood for both
    uplinks and they were paged as twins. The next hop (leaf1, named by spine1's session)
    says the unnamed one was spine1: its address is learned for the interval's traces."""
    from labtest.run import default_testbed
    from labtest.testbed import load_testbed

    reader = TraceReader(load_testbed(default_testbed()), {"host1": "10.0.0.1"})
    peers = {"10.9.0.1": "spine1:Ethernet0"}  # spine1's session: leaf1's address on their link
    via_spine1 = _trace(("10.3.0.1",), ("10.8.8.8",), ("10.9.0.1",), ("10.0.0.1",))
    unpinned = reader.links("host5", "host1", via_spine1, peers)
    assert {"leaf3:Ethernet1/1--spine1:Ethernet16",
            "leaf3:Ethernet2/1--spine2:Ethernet3/1"} <= set(unpinned)  # both uplinks: twins
    learned = reader.learned([("host5", "host1", via_spine1)], peers)
    assert learned["10.8.8.8"] in ("leaf3:Ethernet1/1", "spine1:Ethernet16"), learned
    lost = _trace(("10.3.0.1",), ("10.8.8.8",), (), ())  # died past spine1: pinned now
    assert reader.links("host5", "host1", lost, learned)[:2] == (
        "host5:eth0--leaf3:Ethernet3/1", "leaf3:Ethernet1/1--spine1:Ethernet16")
    # one address answering over two links (a loopback) is pinned to neither
    via_spine2 = _trace(("10.3.0.1",), ("10.8.8.8",), ("10.9.1.1",), ("10.0.0.1",))
    both = reader.learned([("host5", "host1", via_spine1), ("host5", "host1", via_spine2)],
                          {**peers, "10.9.1.1": "spine2:Ethernet1/1"})
    assert "10.8.8.8" not in both


def test_a_flow_lost_whole_is_suspected_past_its_last_answer_only_where_switches_answer(
        ) -> None:
    """The step past a lost flow's last answering hop is where it vanished, if the switches
    there answer anyone: a spine that answers nobody (its time-exceeded answers off) would
    leave a hole past it looking like one in the leaf's uplinks, so the whole path stays
    suspect then."""
    plan = _plan()
    reader = TraceReader(plan.testbed, {"host1": "10.0.0.1", "host2": "10.0.0.2"})
    peers = {"198.18.0.1": "leaf1:Ethernet2", "198.18.0.5": "leaf1:Ethernet1",
             "198.18.0.3": "spine2:Ethernet2"}
    lost = _trace(("gw",), (), (), ())
    one = _trace(("gw",), ("198.18.0.5",), ("x",), ("10.0.0.2",))  # over spine1
    two = _trace(("gw",), ("198.18.0.1",), ("198.18.0.3",), ("10.0.0.2",))  # over spine2
    traces = [("host1", "host2", t) for t in (lost, one, two)]
    flows = [p for p in probe_paths(reader, traces, peers) if not p.via_switch]
    assert flows[0].lost == flows[0].sent and flows[0].suspects == (
        "leaf1:Ethernet1--spine1:Ethernet1", "leaf1:Ethernet2--spine2:Ethernet1")
    assert flows[1].suspects == flows[2].suspects == ()  # they came back: no hole to place
    # spine2 answered nobody this interval: the flow may have died past it
    traces = [("host1", "host2", t) for t in (lost, one)]
    assert probe_paths(reader, traces, peers)[0].suspects == ()
    # the spines answer nobody: where the flow died past leaf1 is not known
    mute = _trace(("gw",), (), ("198.18.0.3",), ("10.0.0.2",))
    paths = probe_paths(reader, [("host1", "host2", lost), ("host1", "host2", mute)], peers)
    assert [p.suspects for p in paths if not p.via_switch] == [(), ()]


@pytest.mark.parametrize(("link", "direction", "loss"), [
    ("leaf3:Ethernet2/1--spine2:Ethernet3/1", "ba", 0.833),  # the evaluation's case
    ("leaf2:Ethernet0--spine1:Ethernet8", "ba", 0.98),  # a spine's way down, EOS-SONiC
    ("leaf1:Ethernet0--spine1:Ethernet0", "ab", 0.95),  # a leaf's way up
    ("leaf2:Ethernet0--spine1:Ethernet8", "ab", 0.9351),  # seed 20261218 case 5
    ("host2:eth0--leaf1:Ethernet24", "ab", 0.9),  # a host's access link
])
def test_a_heavy_one_way_drop_pages_its_link_alone_not_the_links_whose_answers_it_ate(
        link: str, direction: str, loss: float) -> None:
    """Issue 34's evaluation, seed 20261213 case 3: 83 % dropped on spine2's way down to
    leaf3 paged five host links before the spine link. A probe counts as lost when its
    answer is, charged to the probe's path: the probes that crossed the link the other
    way lost their answers on it, and their own links were paged. Every lossy trace
    through those crossed the faulty link too: ``_within_another`` takes them off."""
    from labtest.doctor.evidence import collect
    from labtest.doctor.pager import PAGE_POSTERIOR
    from labtest.doctor.service import _within_another
    from labtest.emulation.lab import EmulatedLab
    from labtest.lab import Lab
    from labtest.measure.probes import blame
    from labtest.run import default_testbed
    from labtest.testbed import load_testbed

    lab_tb = load_testbed(default_testbed())
    assert lab_tb.emulation is not None
    drop = tb.FaultSpec(kind="silent_drop", target=link,
                        params={"direction": direction, "loss": loss})
    em = EmulatedLab(lab_tb.model_copy(update={"emulation": lab_tb.emulation.model_copy(
        update={"faults": [drop]})}))
    lab = Lab(em.start())
    try:
        snap = collect(lab, watch_s=0.2, poll_s=0.05)
        paths = [p for p in LiveMesh(Plan.of(lab.testbed)).run(lab, snap) if not p.via_switch]
    finally:
        lab.close()
        em.stop()
    found = blame(paths)
    paged = [b.link for b in _within_another(found, paths) if b.confidence >= PAGE_POSTERIOR]
    assert paged == [link], (paged, [(b.link, b.confidence) for b in found])
    # a real fabric's background: one probe of 30 lost on a trace through each link the
    # drop ate answers over, avoiding the faulty link (seed 20261218 case 5: such single
    # losses kept three innocent links paged, one of them first)
    innocent = {b.link for b in found if b.link != link and b.confidence >= PAGE_POSTERIOR}
    assert innocent, "the drop must page links whose answers it ate, else nothing is shown"
    noisy = {next(i for i, p in enumerate(paths) if b in p.links and not p.lost
                  and link not in p.links) for b in innocent}
    paths = [replace(p, lost=1) if i in noisy else p for i, p in enumerate(paths)]
    paged = [b.link for b in _within_another(blame(paths), paths)
             if b.confidence >= PAGE_POSTERIOR]
    assert paged == [link], paged


@pytest.mark.parametrize("second", ["host8", "host2"])  # another leaf; the same leaf
def test_two_faulty_links_each_stand_on_their_own_traces(second: str) -> None:
    """Explaining away must not take off a second fault: 30 % lost on host1's link and on
    another host's, their traces crossing each other's between the two. Each stays paged
    beside the other (the engine still pages it on the traces that avoid the other)."""
    from labtest.doctor.pager import PAGE_POSTERIOR
    from labtest.doctor.service import _within_another
    from labtest.measure.probes import ProbePath, blame

    hosts = [f"host{i}" for i in range(1, 9)]
    leaf_of = {h: 1 + i // 2 for i, h in enumerate(hosts)}
    access = {h: f"{h}:eth0--leaf{leaf_of[h]}:Ethernet{16 + i % 2}" for i, h in enumerate(hosts)}
    loss = {"host1": 0.3, second: 0.3}
    paths = []
    for src, dst in itertools.permutations(hosts, 2):
        for flow in range(6):
            spine = 1 + flow % 2
            up = [] if leaf_of[src] == leaf_of[dst] else [
                f"leaf{leaf_of[h]}:Ethernet{spine}--spine{spine}:Ethernet{leaf_of[h]}"
                for h in (src, dst)]
            kept = (1 - loss.get(src, 0.0)) * (1 - loss.get(dst, 0.0))
            paths.append(ProbePath(src, dst, (access[src], *up, access[dst]), 30,
                                   round(30 * (1 - kept))))
    found = blame(paths)
    assert len(found) == 2, [(b.link, b.confidence) for b in found]
    paged = sorted(b.link for b in _within_another(found, paths)
                   if b.confidence >= PAGE_POSTERIOR)
    assert paged == sorted({access["host1"], access[second]})
