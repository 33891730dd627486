"""The path-inference engine on hand-made fabrics: ECMP ambiguity, two faults at once, a
passing measurement that clears a suspect, a device common to slow reroutes, and the
issue-32 examples end to end through the results document."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from labtest.measure import inference
from labtest.measure.coverage import expand_units
from labtest.measure.inference import Observation, infer
from labtest.measure.paths import Fabric
from labtest.measure.rootcause import root_causes


def make_testbed(leaves: int = 2, spines: int = 2, hosts_per_leaf: int = 2) -> dict[str, Any]:
    """A leaf-spine testbed record (as the results document holds it)."""
    devices: dict[str, Any] = {}
    links = []
    for s in range(1, spines + 1):
        devices[f"spine{s}"] = {"role": "spine"}
    for leaf in range(1, leaves + 1):
        devices[f"leaf{leaf}"] = {"role": "leaf"}
        for s in range(1, spines + 1):
            links.append({"a": f"leaf{leaf}:up{s}", "b": f"spine{s}:down{leaf}"})
        for h in range(1, hosts_per_leaf + 1):
            name = f"h{leaf}{h}"
            devices[name] = {"role": "host"}
            links.append({"a": f"{name}:eth0", "b": f"leaf{leaf}:host{h}"})
    return {"devices": devices, "links": links}


def fabric(**kw: int) -> Fabric:
    return Fabric(expand_units(make_testbed(**kw)))


def pair_obs(fab: Fabric, a: str, b: str, failed: bool, strength: float = 1.0,
             oid: str | None = None) -> Observation:
    return Observation(oid or f"{a}--{b}", failed, (fab.routes(a, b),), strength=strength,
                       aspect="bw")


# --- the fabric's routes --------------------------------------------------------------------


def test_routes_between_leaves_are_the_ecmp_set() -> None:
    fab = fabric()
    routes = fab.routes("h11", "h21")
    assert len(routes) == 2  # one per spine
    assert all({"h11", "leaf1", "leaf2", "h21"} <= r for r in routes)
    assert {frozenset(c for c in r if c.startswith("spine")) for r in routes} == {
        frozenset({"spine1"}), frozenset({"spine2"})}
    # under one leaf: no spine at all
    (local,) = fab.routes("h11", "h12")
    assert not any(c.startswith("spine") for c in local) and "leaf1" in local


def test_hosts_do_not_forward() -> None:
    fab = fabric(leaves=1, spines=1, hosts_per_leaf=3)
    assert all("h12" not in r for r in fab.routes("h11", "h13"))


# --- the engine -----------------------------------------------------------------------------


def test_a_healthy_run_has_no_cause() -> None:
    fab = fabric()
    hosts = ["h11", "h12", "h21", "h22"]
    obs = [pair_obs(fab, a, b, False) for a, b in itertools.combinations(hosts, 2)]
    result = infer(obs)
    assert result.causes == [] and result.unexplained == []


def test_a_passing_pair_clears_its_hosts() -> None:
    """The issue's straggler: every failing pair crosses leaf1's link to spine2 (the
    member each hashed onto unknown), h11 is in most of them, but h11--h12 passed at
    line rate under one leaf and h11--h22 through spine1: h11 is cleared."""
    fab = fabric()
    up2 = "leaf1:up2--spine2:down1"
    obs = [
        Observation("h11--h21", True, (tuple(r for r in fab.routes("h11", "h21") if up2 in r),),
                    aspect="bw"),
        Observation("h11--h22", True, (fab.routes("h11", "h22"),), aspect="bw"),
        Observation("h12--h21", True, (fab.routes("h12", "h21"),), aspect="bw"),
        pair_obs(fab, "h11", "h12", False),
        Observation("h11--h22@spine1", False, (tuple(
            r for r in fab.routes("h11", "h22") if "spine1" in r),), aspect="bw"),
        Observation("h12--h22@spine1", False, (tuple(
            r for r in fab.routes("h12", "h22") if "spine1" in r),), aspect="bw"),
    ]
    result = infer(obs)
    assert result.causes[0].component in (up2, "spine2")
    assert result.scores["h11"] < result.scores[result.causes[0].component]
    assert "h11--h12" in inference._clearing(obs, "h11", frozenset({"bw"}))


def test_ecmp_ambiguity_is_a_tie_until_a_suite_locates_it() -> None:
    fab = fabric()
    obs = [pair_obs(fab, "h11", "h21", True), pair_obs(fab, "h12", "h22", True),
           pair_obs(fab, "h11", "h12", False), pair_obs(fab, "h21", "h22", False)]
    result = infer(obs)
    best = result.causes[0]
    up1, up2 = "leaf1:up1--spine1:down1", "leaf1:up2--spine2:down1"
    # both uplinks of both leaves and both spines explain it equally
    assert abs(result.scores[up1] - result.scores[up2]) < 1e-9
    assert best.gain - best.runner_up_gain < 1e-9
    # a ring that names leaf1's uplink to spine2 breaks the tie
    ring = Observation("ring", True, (fab.routes("h11", "h21"), fab.routes("h21", "h11")),
                       named=frozenset({up2}), aspect="busbw")
    located = infer([*obs, ring])
    assert located.causes[0].component == up2
    assert located.causes[0].gain - located.causes[0].runner_up_gain > 1.0


def test_two_independent_faults_are_both_named() -> None:
    fab = fabric(leaves=3)
    hosts = [f"h{leaf}{h}" for leaf in (1, 2, 3) for h in (1, 2)]
    bad = {"h11", "h32"}  # two NICs, far apart
    obs = [pair_obs(fab, a, b, bool(bad & {a, b})) for a, b in itertools.combinations(hosts, 2)]
    result = infer(obs)
    named = {c.component for c in result.causes}
    # each NIC or its own link (indistinguishable by pairs); nothing else
    assert len(named) == 2
    assert {n.split(":")[0] for n in named} == bad
    assert result.unexplained == []


def test_a_switch_common_to_every_slow_reroute() -> None:
    """Failover: the devices at the ends of the shut link must reroute; spine2 is in every
    slow one, leaf1 also reconverged fast around its other uplink."""
    reroute = {("leaf1", "spine2"): True, ("leaf2", "spine2"): True,
               ("leaf1", "spine1"): False, ("leaf2", "spine1"): False}
    obs = [Observation(f"shut {a}-{b}", slow, ((frozenset({a, b}),),), aspect="conv")
           for (a, b), slow in reroute.items()]
    result = infer(obs)
    assert [c.component for c in result.causes] == ["spine2"]
    assert result.causes[0].runner_up in ("leaf1", "leaf2")
    assert result.causes[0].cleared_by  # the runner-up's fast reroute


def test_a_local_fault_is_not_cleared_by_traffic() -> None:
    """A dirty connector fails its port's optics while pairs across it run at line rate."""
    fab = fabric()
    link = "h11:eth0--leaf1:host1"
    optics = Observation("rx", True, named=frozenset({link, "leaf1"}), traffic=False,
                         aspect="rx_power")
    pairs = [pair_obs(fab, "h11", b, False) for b in ("h12", "h21", "h22")]
    result = infer([optics, *pairs])
    assert [(c.component, c.mode) for c in result.causes] == [(link, "local")]


def test_a_storm_source_explains_traffic_anywhere() -> None:
    fab = fabric()
    link = "h22:eth0--leaf2:host2"
    storm = Observation("storm", True, named=frozenset({link, "leaf2"}), aspect="pfc")
    stalled = [pair_obs(fab, "h11", "h12", True, oid="incast-h12"),
               pair_obs(fab, "h11", "h21", True, oid="victim")]
    result = infer([storm, *stalled], spreading={link: inference.ANY_SCOPE})
    assert [c.component for c in result.causes] == [link]
    assert set(result.causes[0].explains) == {"storm", "incast-h12", "victim"}


def test_a_failure_nothing_explains_stays_unexplained() -> None:
    fab = fabric()
    hosts = ["h11", "h12", "h21", "h22"]
    obs = [pair_obs(fab, a, b, (a, b) == ("h11", "h12"))
           for a, b in itertools.combinations(hosts, 2)]
    obs += [pair_obs(fab, a, b, False, oid=f"again {a}--{b}")
            for a, b in itertools.combinations(hosts, 2) if (a, b) != ("h11", "h12")]
    result = infer(obs)
    assert result.causes == [] and result.unexplained == ["h11--h12"]


def test_one_hashed_failure_of_a_kind_that_passed_elsewhere_is_the_causes() -> None:
    """An ECMP member holing some flows: pairs of many streams fail across it, and so does
    one single-QP sender's CNP count, while the other senders' CNPs across it pass. The
    member does not spoil CNPs as a kind, yet that one failure crossed it: its doing more
    likely than noise, not unexplained."""
    fab = fabric(leaves=3)
    member = "leaf1:up2--spine2:down1"
    bw = [Observation(f"bw {a}--{b}", True, (fab.routes(a, b),), aspect="bw", streams=8)
          for a, b in (("h11", "h21"), ("h12", "h31"), ("h11", "h31"))]
    cnp = [Observation(f"cnp {a}>{b}", (a, b) == ("h12", "h21"), (fab.routes(a, b),),
                       aspect="cnp") for a in ("h11", "h12") for b in ("h21", "h22", "h31")]
    cnp += [Observation(f"cnp {a}>{b}", False, (fab.routes(a, b),), aspect="cnp")
            for a in ("h21", "h22", "h31") for b in ("h11", "h12")]
    bw.append(Observation("bw h11--h12", False, (fab.routes("h11", "h12"),), aspect="bw",
                          streams=8))  # leaf1 itself forwards
    located = Observation("member loss", True, named=frozenset({member}), traffic=False,
                          aspect="member_loss")
    result = infer([*bw, *cnp, located])
    (cause,) = result.causes
    assert cause.component == member and "cnp" not in {o.aspect for o in cnp if o.id in
                                                       cause.explains}
    assert cause.likely == ("cnp h12>h21",) and result.unexplained == []
    # a failure the cause's routes never reach stays unexplained
    lone = Observation("cnp h21>h22", True, (fab.routes("h21", "h22"),), aspect="cnp")
    again = infer([*bw, *cnp, located, lone])
    assert again.unexplained == ["cnp h21>h22"]


def test_a_queue_its_load_shifted_onto_is_a_consequence_not_a_second_fault() -> None:
    """A latency pair beside an incast: the incast's senders behind a holing member lose
    their flows, the others' share lands on the pair's spine queue. The queue named is a
    consequence of the member on the load's routes; with no fault on the load, the queue's
    own link is named."""
    fab = fabric(leaves=3)
    member = "leaf1:up2--spine2:down1"
    queue = "leaf3:up1--spine1:down3"
    bw = [Observation(f"bw {a}--{b}", True, (fab.routes(a, b),), aspect="bw", streams=8)
          for a, b in (("h11", "h21"), ("h12", "h31"), ("h11", "h22"))]
    bw.append(Observation("bw h11--h12", False, (fab.routes("h11", "h12"),), aspect="bw",
                          streams=8))
    located = Observation("member loss", True, named=frozenset({member}), traffic=False,
                          aspect="member_loss")
    load = tuple(tuple(fab.routes(s, "h32")) for s in ("h11", "h12", "h21"))
    hol = Observation("hol h21>h31", True, (fab.routes("h21", "h31"),), aspect="hol",
                      named=frozenset({"spine1", queue}), load=load,
                      load_aspects=frozenset({"bw"}))
    result = infer([*bw, located, hol])
    assert [c.component for c in result.causes] == [member]
    assert "hol h21>h31" in (*result.causes[0].explains, *result.causes[0].likely)
    alone = infer([hol])
    assert alone.causes and alone.causes[0].component in {"spine1", queue}
    # a switch slow to reconverge spoils no bandwidth: the load crossed it (leaf1, the
    # senders' leaf) unchanged, so the queue the probe met is its own place's, a second fault
    slow = [Observation(f"conv leaf1-spine{k}", True, ((frozenset({"leaf1", f"spine{k}"}),),),
                        aspect="conv") for k in (1, 2)]
    fast = [Observation(f"conv leaf{k}-spine{j}", False,
                        ((frozenset({f"leaf{k}", f"spine{j}"}),),), aspect="conv")
            for k in (2, 3) for j in (1, 2)]
    both = infer([*slow, *fast, hol])
    assert both.causes[0].component == "leaf1"
    assert {c.component for c in both.causes} & {"spine1", queue}
    assert "hol h21>h31" not in both.causes[0].likely


# --- count observations: probes sent and lost along known routes (the doctor's mesh) ----------


def count_mesh(loss: dict[str, float], rng: np.random.Generator, leaves: int = 4,
               spines: int = 4, sent: int = 50, background: float = 0.0,
               hosts: bool = True) -> list[Observation]:
    """One probe path per (ordered leaf pair, spine): the host's link (with ``hosts``), its
    leaf's uplink to the spine, the spine's downlink to the far leaf, the far host's link;
    each link losing its ``loss`` share and every probe ``background``."""
    obs = []
    for a, b in itertools.permutations(range(leaves), 2):
        for s in range(spines):
            links = [f"l{a}--s{s}", f"s{s}--l{b}"]
            links = [f"h{a}--l{a}", *links, f"l{b}--h{b}"] if hosts else links
            keep = 1.0 - background
            for lk in links:
                keep *= 1.0 - loss.get(lk, 0.0)
            lost = int(rng.binomial(sent, 1.0 - keep))
            obs.append(Observation(f"h{a}>h{b}@s{s}", lost > 0, ((frozenset(links),),),
                                   aspect="loss", sent=sent, lost=lost))
    return obs


def test_counts_find_a_gray_link_a_pass_fail_limit_does_not_see() -> None:
    # 8 leaves x 4 spines: 64 links (up and down), 224 paths of 1,000 probes, one loss in
    # 10^4 anywhere; the gray link loses 1 % of the 7,000 probes crossing it
    gray = "l3--s1"
    obs = count_mesh({gray: 0.01}, np.random.default_rng(11), leaves=8, sent=1000,
                     background=1e-4, hosts=False)
    links = {c for o in obs for c in o.components}
    assert len(links) == 64
    result = infer(obs)
    assert [c.component for c in result.causes] == [gray]
    assert result.causes[0].posterior > 0.99
    # the same paths judged against a 2 % loss limit: every one passes, nothing to explain
    limited = [Observation(o.id, o.lost > 0.02 * o.sent, o.segments, aspect="loss")
               for o in obs]
    assert not any(o.failed for o in limited) and infer(limited).causes == []


def test_counts_name_a_blackholed_ecmp_member() -> None:
    obs = count_mesh({"l1--s2": 1.0}, np.random.default_rng(1))
    result = infer(obs)
    assert [c.component for c in result.causes] == ["l1--s2"]
    cause = result.causes[0]
    assert cause.posterior > 0.99 and result.unexplained == []
    assert set(cause.explains) == {f"h1>h{b}@s2" for b in (0, 2, 3)}
    # the host's link lost a quarter of its probes: its clean paths (via s0, s1, s3) clear it
    assert cause.runner_up == "h1--l1"
    assert "h1>h0@s0" in cause.cleared_by


def test_counts_name_two_lossy_links_at_once() -> None:
    obs = count_mesh({"l0--s1": 0.05, "s3--l2": 0.05}, np.random.default_rng(2))
    result = infer(obs)
    assert {c.component for c in result.causes} == {"l0--s1", "s3--l2"}
    assert all(c.posterior > 0.9 for c in result.causes)


def test_counts_of_a_healthy_mesh_name_nothing() -> None:
    result = infer(count_mesh({}, np.random.default_rng(3)))
    assert result.causes == [] and result.unexplained == []


def test_one_lost_probe_is_left_unexplained() -> None:
    # four links share it equally, and none is worth a fitted rate and the prior's price
    obs = count_mesh({}, np.random.default_rng(3))
    o = obs[5]
    obs[5] = Observation(o.id, True, o.segments, aspect="loss", sent=o.sent, lost=1)
    result = infer(obs)
    assert result.causes == [] and result.unexplained == [o.id]


def test_a_hole_drops_whole_flows_and_names_no_second_link() -> None:
    # leaf 0's uplink to spine 1 holes half the flows (every probe of a holed flow lost):
    # read probe by probe, a downlink whose few flows from leaf 0 hashed mostly into the
    # hole looks lossier than the hole itself (4 probes a flow counted as 4 losses)
    rng = np.random.default_rng(5)
    obs = []
    for b in range(1, 8):
        for s in range(4):
            for f in range(6):  # six flows (source ports) per (leaf pair, spine)
                links = frozenset({f"l0--s{s}", f"s{s}--l{b}"})
                lost = 4 if s == 1 and rng.random() < 0.5 else 0
                obs.append(Observation(f"l{b}@s{s}#{f}", lost > 0, ((links,),), aspect="loss",
                                       sent=4, lost=lost))
    result = infer(obs)
    assert [(c.component, c.mode) for c in result.causes] == [("l0--s1", "flows")]
    assert result.unexplained == []


def test_apart_observations_clear_a_steady_rate_not_a_dark_moment() -> None:
    # one host's trace: four paths through its link h and link x, four through h and w;
    # forty paths of other hosts through x, sent at other moments, lost nothing
    def case(lost: list[int]) -> list[Observation]:
        beside = [Observation(f"b{i}", n > 0, ((frozenset({"h", "x", f"y{i}"}),),),
                              aspect="loss", sent=4, lost=n) for i, n in enumerate(lost)]
        beside += [Observation(f"w{i}", False, ((frozenset({"h", "w", f"v{i}"}),),),
                               aspect="loss", sent=4) for i in range(4)]
        apart = [Observation(f"a{i}", False, ((frozenset({f"g{i}", "x", f"z{i}"}),),),
                             aspect="loss", sent=4, apart=True) for i in range(40)]
        return [*beside, *apart, Observation("elsewhere", False, aspect="loss", sent=20_000,
                                             apart=True)]

    # 4 of 16 lost through x: a steady 25 % would have lost ~40 of the other 160 probes
    steady = infer(case([1, 1, 2, 0])).causes
    assert "x" not in {c.component for c in steady}
    # all 16 lost: x was dark while that trace ran, and the other moments say nothing of
    # it; h, dark on half its paths in the same trace, is not the cause
    dark = infer(case([4, 4, 4, 4])).causes
    assert [(c.component, c.mode) for c in dark] == [("x", "flows")]


def test_a_dark_moment_pays_for_falling_on_the_flows_beside_the_losses() -> None:
    # one trace of eight flows lost everything through both u and v; u carried 24 more
    # flows at other moments, all clean, v none: a moment dark on any of u's flows fell
    # on these with odds 1 in 4, v's explains them as well at no such price
    trace = [Observation(f"t{i}", True, ((frozenset({"u", "v"}),),), aspect="loss", sent=4,
                         lost=4) for i in range(8)]
    other = [Observation(f"o{i}", False, ((frozenset({"u", f"w{i}"}),),), aspect="loss",
                         sent=4, apart=True) for i in range(24)]
    result = infer([*trace, *other, Observation("elsewhere", False, aspect="loss",
                                                sent=20_000, apart=True)])
    assert [c.component for c in result.causes] == ["v"]
    assert result.causes[0].runner_up == "u" and result.causes[0].posterior > 0.7


def test_the_background_is_what_no_cause_reaches() -> None:
    # 8 of 2,000 probes lost on one link: telling where the rest of the fabric loses
    # nothing (a route-less observation: evidence of the background only), not where it
    # loses as much
    link = Observation("p", True, ((frozenset({"x"}),),), aspect="loss", sent=2000, lost=8)
    quiet = Observation("elsewhere", False, aspect="loss", sent=200_000)
    noisy = Observation("elsewhere", True, aspect="loss", sent=200_000, lost=800)
    assert [c.component for c in infer([link, quiet]).causes] == ["x"]
    assert infer([link, noisy]).causes == []


# --- issue 32's examples, through the results document ----------------------------------------


LINE = {"low": 0.9, "unit": "ratio", "source": "acceptance"}


def meas(key: str, value: float, verdict: str, limit: dict[str, Any] | None = None,
         **labels: str) -> dict[str, Any]:
    return {"name": key, "value": value, "unit": "", "verdict": verdict, "limit": limit,
            "limit_key": key, "labels": labels}


def record(name: str, ms: list[dict[str, Any]], suite: str = "roce") -> dict[str, Any]:
    failed = any(x["verdict"] == "FAIL" for x in ms)
    return {"nodeid": f"suites/{suite}/test_{suite}.py::{name}", "name": name, "suite": suite,
            "outcome": "failed" if failed else "passed", "message": None, "device": None,
            "measurements": ms}


@pytest.fixture(scope="module")
def lab_record() -> dict[str, Any]:
    from labtest.reports import results
    from labtest.run import DEFAULT_TESTBED
    from labtest.testbed import load_testbed

    return results.testbed_record(load_testbed(DEFAULT_TESTBED))


def test_issue_example_1_the_straggler_link_not_host4(lab_record: dict[str, Any]) -> None:
    """straggler_link at 0.6 on leaf2:Ethernet8--spine2:Ethernet2/1: three failing pairs
    have host4 in common, host3--host4 passed at full rate under leaf2, a collective
    located leaf2:Ethernet8. The answer is the link, and host4 is cleared by name."""
    pairs = {("host1", "host4"): 0.78, ("host4", "host6"): 0.59, ("host4", "host8"): 0.59,
             ("host3", "host4"): 0.99, ("host1", "host3"): 0.98, ("host2", "host5"): 0.98,
             ("host4", "host7"): 0.98, ("host3", "host6"): 0.97}
    tests = [record(f"test_pair_bandwidth[{a}--{b}]", [meas(
        "roce.bw_fraction_of_line", v, "FAIL" if v < 0.9 else "PASS", LINE, pair=f"{a}--{b}",
        client=a, server=b, bw_gbps=f"{v * 800:.1f}", line_gbps="800")])
        for (a, b), v in pairs.items()]
    tests.append(record("test_allreduce[by-leaf-reversed]", [meas(
        "collective.busbw_fraction_of_ceiling", 0.6, "FAIL", {"low": 0.85, "source": "x"},
        ring="host8 -> host7 -> host6 -> host5 -> host4 -> host3 -> host2 -> host1",
        busbw_gbytes_s="29.4", ceiling_gbytes_s="49.0", link="leaf2:Ethernet8--spine2:Ethernet2/1",
        device="leaf2", port="Ethernet8")], suite="collective"))
    doc = {"testbed": lab_record, "tests": tests}
    first = root_causes(doc)[0]
    assert first.culprit == "leaf2:Ethernet8"
    assert len(first.consequences) == 3  # the three pairs
    assert any("all-reduce bus bandwidth 29.4 of 49.0 GB/s" in line for line in first.impact)
    # without the collective, pairs alone still clear host4 (host3--host4 passed)
    alone = root_causes({"testbed": lab_record, "tests": tests[:-1]})[0]
    assert alone.culprit not in ("host4", "host4:eth0--leaf2:Ethernet24")
    assert "leaf2" in alone.culprit or "spine2" in alone.culprit


def test_issue_example_2_slow_convergence_names_the_spine(lab_record: dict[str, Any]) -> None:
    shuts = {"leaf1:Ethernet8--spine2:Ethernet1/1": 2150.0,
             "leaf4:Ethernet8--spine2:Ethernet4/1": 2150.0,
             "leaf1:Ethernet0--spine1:Ethernet0": 650.0,
             "leaf4:Ethernet0--spine1:Ethernet24": 650.0}
    tests = []
    for link, ms in shuts.items():
        device, _, port = link.split("--")[0].partition(":")
        tests.append(record(f"test_failover[shut:{device}:{port}]", [meas(
            "failover.convergence_ms", ms, "FAIL" if ms > 1000 else "PASS",
            {"high": 1000, "unit": "ms", "source": "x"}, link=link, device=device, port=port)],
            suite="failover"))
    causes = root_causes({"testbed": lab_record, "tests": tests})
    assert [c.culprit for c in causes] == ["spine2"]
    assert causes[0].not_runner_up.startswith("not leaf")
    assert "passed (failover.convergence_ms 650" in causes[0].not_runner_up


def test_no_culprit_is_an_exception_text(lab_record: dict[str, Any]) -> None:
    broken = {"nodeid": "suites/link/test_link.py::test_fec_live[x]", "name": "x",
              "suite": "link", "outcome": "broken", "device": "leaf1", "measurements": [],
              "message": "labtest.errors.ParseError: line 3: no FEC table"}
    failed = record("test_pair_bandwidth[host1--host2]", [meas(
        "roce.bw_fraction_of_line", 0.5, "FAIL", LINE)])
    failed["message"] = "labtest.errors.LimitFailure: 1 measurement(s) outside limits:"
    causes = root_causes({"testbed": lab_record, "tests": [broken, failed]})
    assert causes and all("Error" not in c.culprit and "Failure" not in c.culprit
                          for c in causes)
    assert {c.kind for c in causes} == {"unexplained"}


def test_a_measurement_of_many_streams_reaches_each_ecmp_member_almost_surely() -> None:
    # a perftest pair of 2 QPs both ways is 4 streams, each hashed on its own
    two_ways = ((frozenset({"up1"}), frozenset({"up2"})),)
    assert Observation("one", True, two_ways).reach("up1") == 0.5
    assert Observation("four", True, two_ways, streams=4).reach("up1") == 1 - 0.5 ** 4
    assert Observation("named", True, two_ways, named=frozenset({"leaf"}),
                       streams=4).reach("leaf") == 1.0
