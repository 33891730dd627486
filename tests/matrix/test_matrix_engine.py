"""The matrix engine on its own: culprit matching, faulted testbed copies, the judgement,
the markdown, and real ``labtest run`` children over a tiny fake suite folder (no lab:
two fake families read the testbed's fault list and fail, break or hang on purpose)."""

from __future__ import annotations

import os
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from matrix_data import CASES, CI_PLAN, DOMAINS

from labtest import matrix
from labtest.emulation.model import Fabric, load_catalogue
from labtest.matrix import Case, CaseRun, Expect, RedTest, SuiteResult, cli, judge, names
from labtest.matrix.draws import Plan, blame, draw_cases, in_domain, strata, targets
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"


# --- culprit matching ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "who", "expected"),
    [
        ("fec device=spine1 port=Ethernet0 lane=2: 3 is FAIL", "spine1:Ethernet0", True),
        ("fec device=spine1 port=Ethernet0: 3 is FAIL", "spine1:Ethernet8", False),
        ("spine1:Ethernet0 lanes 1,2", "spine1:Ethernet0", True),
        ("leaf3:Ethernet1/1", "leaf3:Ethernet1", False),  # a port is matched whole
        ("leaf10:Ethernet0", "leaf1:Ethernet0", False),
        ("link=spine1:Ethernet0--leaf1:Ethernet0 busbw", "leaf1:Ethernet0--spine1:Ethernet0", True),
        ("pair=host1--host3 bw_gbps=180", "host3", True),
        ("pair=host1--host31", "host3", False),
        ("test_x[leaf2] device=leaf2 armed=0", "leaf2", True),
    ],
)
def test_names_matches_ports_links_and_devices_whole(text: str, who: str, expected: bool) -> None:
    assert names(text, who) is expected


# --- the data: every catalogue fault, each injectable on the default lab -------------------------


def test_matrix_data_covers_the_catalogue_and_every_fault_injects() -> None:
    catalogue = load_catalogue()
    assert set(CASES) == set(catalogue)
    testbed = load_testbed(LEAFSPINE)
    for kind, case in CASES.items():
        assert case.catches == (catalogue[kind].caught_by,) and case.culprits, kind
        fabric = Fabric(testbed)  # a typo in a target or a parameter fails here, not in CI
        for fault in case.faults:
            fabric.inject(fault["kind"], fault["target"], **fault["params"])


def test_faulted_testbed_is_a_loadable_copy(tmp_path: Path) -> None:
    case = CASES["unreachable_device"]
    path = matrix.faulted_testbed(LEAFSPINE, replace(case, seed=7), tmp_path / "tb.yaml")
    doc = yaml.safe_load(path.read_text())
    assert Path(doc["limits"]).is_absolute() and Path(doc["limits"]) == LIMITS.resolve()
    testbed = load_testbed(path)
    assert testbed.emulation is not None
    assert testbed.emulation.seed == 7
    assert [(f.kind, f.target) for f in testbed.emulation.faults] == [("unreachable_device",
                                                                       "leaf3")]
    assert testbed.devices["leaf3"].ssh is not None
    assert testbed.devices["leaf3"].ssh.timeout_s == 2


# --- random draws --------------------------------------------------------------------------


def _draws(seed: int, draws: int = 1, **kw: object) -> list[Case]:
    return draw_cases(Plan(seed=seed, draws=draws, **kw), DOMAINS, load_testbed(LEAFSPINE))


def test_every_catalogue_fault_has_a_domain_caught_by_its_suite() -> None:
    catalogue = load_catalogue()
    assert set(DOMAINS) == set(catalogue)
    for kind, d in DOMAINS.items():
        assert catalogue[kind].caught_by in d.catches, kind
        for p in d.placements:
            assert p.why and all(v.why for v in p.params.values()), kind  # reasons written
            # every parameter the domain draws is one the fault accepts
            assert set(p.params) <= set(catalogue[kind].params.model_fields), kind


def test_draws_are_deterministic_per_seed() -> None:
    a, b, c = _draws(7, 2, combined=2, healthy=2), _draws(7, 2, combined=2, healthy=2), _draws(8, 2)
    assert [(x.name, x.faults, x.seed) for x in a] == [(x.name, x.faults, x.seed) for x in b]
    assert [x.faults for x in a[:36]] != [x.faults for x in c[:36]]
    # a kind's draws do not depend on which other kinds are drawn
    only = draw_cases(Plan(seed=7, draws=2, kinds=("straggler_link",)), DOMAINS,
                      load_testbed(LEAFSPINE))
    assert [x.faults for x in only] == [x.faults for x in a if x.name.startswith("straggler")]


@pytest.mark.parametrize("seed", [0, 1423, 99])
def test_a_vendor_plan_draws_every_kind_it_can_at_that_vendors_ends(seed: int) -> None:
    """Issue 35: the NX-OS leaf of the variant lab gets each kind's draw, every fault touches
    it, and kinds it cannot show (no PRBS/FEC: marginal_lane) are left out, not missed."""
    nxos = load_testbed(REPO / "testbeds" / "emulated" / "leafspine-nxos.yaml")
    cases = draw_cases(Plan(seed=seed, draws=2, healthy=1, vendor="nxos"), DOMAINS, nxos)
    kinds = {f["kind"] for c in cases for f in c.faults}
    assert "marginal_lane" not in kinds and "pfcwd_disabled" not in kinds
    assert {"lossy_link", "silent_drop", "ecmp_blackhole", "slow_convergence",
            "unreachable_device", "mtu_mismatch", "straggler_link"} <= kinds
    for case in cases:
        for fault in case.faults:
            assert "leaf2" in fault["target"], (case.name, fault)
            assert in_domain(DOMAINS[fault["kind"]], nxos, fault) == [], (case.name, fault)
    # the default lab has no NX-OS device: only its healthy row is left
    assert [c.healthy for c in _draws(seed, vendor="nxos", healthy=1)] == [True]


@pytest.mark.parametrize("seed", [0, 1423, 99])
def test_drawn_faults_are_valid_on_the_testbed_and_inside_their_domains(seed: int) -> None:
    testbed = load_testbed(LEAFSPINE)
    for case in _draws(seed, 3, combined=3, extra=CI_PLAN.extra):
        for fault in case.faults:
            assert in_domain(DOMAINS[fault["kind"]], testbed, fault) == [], (case.name, fault)
            Fabric(testbed).inject(fault["kind"], fault["target"], **fault["params"])
        assert case.culprits and case.catches, case.name


def test_in_domain_rejects_what_the_domain_does_not_allow() -> None:
    testbed = load_testbed(LEAFSPINE)
    straggler, fw = DOMAINS["straggler_link"], DOMAINS["firmware_mismatch"]
    link = "leaf1:Ethernet0--spine1:Ethernet0"
    assert in_domain(straggler, testbed, {"target": link, "params": {"rate_fraction": 0.6}}) == []
    assert in_domain(straggler, testbed, {"target": link, "params": {"rate_fraction": 0.9}})
    assert in_domain(straggler, testbed, {"target": "tg1:p1--leaf1:Ethernet32",
                                          "params": {"rate_fraction": 0.6}})
    assert in_domain(fw, testbed, {"target": "spine2", "params": {"version": "4.1.0"}}) == []
    assert in_domain(fw, testbed, {"target": "spine2", "params": {"version": "0.9.7"}})


def test_enough_draws_place_faults_on_every_vendor_and_on_host_links() -> None:
    testbed = load_testbed(LEAFSPINE)
    cases = _draws(5, 6)
    stratum = " ".join(c.note for c in cases)
    for want in ("/sonic", "/eos", "/eos+sonic", "host_link/", "fabric_link/", "host_port/",
                 "host_facing_port/eos", "fabric_port/eos", "pair_group_switch/eos", "leaf/eos"):
        assert want in stratum, want
    # per kind: as many draws as strata cover every stratum once
    for kind, d in DOMAINS.items():
        n = len(strata(d, testbed))
        got = {c.note.rsplit(" from ", 1)[1] for c in _draws(11, n, kinds=(kind,))}
        assert got == {s for _, s, _ in strata(d, testbed)}, kind
    # issue 23: device-target firmware in a vendor group of two, host-link flaps, MTU on a
    # switch port are all in the domains
    assert targets(testbed, "pair_group_switch") == {"pair_group_switch/eos": ["spine2", "leaf3"]}


def test_ci_plan_draws_the_issues_placements() -> None:
    cases = draw_cases(CI_PLAN, DOMAINS, load_testbed(LEAFSPINE))
    faults = [(f["kind"], f["target"]) for c in cases for f in c.faults]
    assert {k for k, _ in faults} == set(DOMAINS)  # every kind at least once
    assert any(k == "flapping_link" and "host" in t for k, t in faults)
    assert any(k == "firmware_mismatch" and t in ("spine2", "leaf3") for k, t in faults)
    assert any(k == "mtu_mismatch" and t.startswith(("leaf", "spine")) for k, t in faults)
    assert any(k == "straggler_link" and "host" in t for k, t in faults)
    combined = [c for c in cases if len(c.faults) == 2]
    assert len(combined) == CI_PLAN.combined and all(len(c.expects) == 2 for c in combined)
    healthy = [c for c in cases if c.healthy]
    assert len(healthy) == CI_PLAN.healthy and len({c.seed for c in healthy}) == len(healthy)
    # the CI budget: ~32 min of rows at 2 at a time (issue 33: +3 gray kinds)
    assert len(cases) <= 34


def test_combined_rows_are_two_kinds_in_different_places_seen_by_different_suites() -> None:
    for case in (c for c in _draws(3, 1, combined=6) if len(c.faults) > 1):
        a, b = case.expects
        assert a.kind != b.kind
        devices = [{n.split("--")[0].partition(":")[0] for n in e.culprits}
                   | {n.split("--")[-1].partition(":")[0] for n in e.culprits} for e in (a, b)]
        assert not devices[0] & devices[1], case.describe()
        assert not {*a.catches, *a.also} & {*b.catches, *b.also}, case.describe()
        assert DOMAINS[a.kind].combinable and DOMAINS[b.kind].combinable


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("leaf3:Ethernet3/1", ("leaf3:Ethernet3/1", "host5:eth0", "host5:eth0--leaf3:Ethernet3/1")),
        ("host2:eth0", ("host2:eth0", "leaf1:Ethernet24", "host2:eth0--leaf1:Ethernet24",
                        "host2")),
        ("leaf1:Ethernet0--spine1:Ethernet0", ("leaf1:Ethernet0", "spine1:Ethernet0",
                                               "leaf1:Ethernet0--spine1:Ethernet0")),
        ("spine2:Ethernet3/1", ("spine2:Ethernet3/1", "leaf3:Ethernet2/1",
                                "leaf3:Ethernet2/1--spine2:Ethernet3/1")),
        ("host7", ("host7", "host7:eth0", "leaf4:Ethernet16", "host7:eth0--leaf4:Ethernet16")),
        ("leaf2", ("leaf2",)),
        ("", ("spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4")),
    ],
)
def test_blame_is_derived_from_the_target(target: str, expected: tuple[str, ...]) -> None:
    assert blame(load_testbed(LEAFSPINE), target) == expected


# --- the judgement, on made-up results ------------------------------------------------------


def _run(case: Case, **suites: list[tuple[str, str, str | None]]) -> CaseRun:
    """suites: family -> [(outcome, text, device)] (passes padded in)."""
    found = {}
    for suite, tests in suites.items():
        s = SuiteResult(passed=3)
        for i, (outcome, text, device) in enumerate(tests):
            setattr(s, outcome, getattr(s, outcome) + 1)
            s.red.append(RedTest(f"test_{i}", outcome, text, device=device))
        found[suite] = s
    return CaseRun(case, list(suites), found, wall_s=1.0, returncode=1)


DIRTY = Case("dirty", ({"kind": "dirty_connector", "target": "leaf1:Ethernet0"},),
             catches=("link",), culprits=("spine1:Ethernet0", "leaf1:Ethernet0"))


def test_judge_caught_with_culprit_and_quiet_bystanders() -> None:
    v = judge(_run(DIRTY, link=[("failed", "ber device=spine1 port=Ethernet0: FAIL", None)],
                   roce=[]))
    assert v.ok, v.problems
    assert v.cells["link"].text == matrix.CAUGHT and v.cells["roce"].text == "pass"


@pytest.mark.parametrize(
    ("suites", "cell", "problem"),
    [
        ({"link": [], "roce": []}, "link", "missed"),
        ({"link": [("failed", "ber device=leaf4 port=Ethernet8: FAIL", None)], "roce": []},
         "link", "without naming"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None),
                   ("failed", "device=leaf4 port=Ethernet8", None)], "roce": []},
         "link", "without naming"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None)],
          "roce": [("failed", "bw pair=host1--host2: FAIL", None)]}, "roce", "false failed"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None)],
          "roce": [("broken", "host2: ssh timed out", "host2")]}, "roce", "false broken"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None),
                   ("broken", "spine1: timeout", "spine1")], "roce": []}, "link", "broken"),
    ],
    ids=["missed", "wrong-culprit", "one-blind-failure", "false-failure", "false-broken",
         "catcher-broken"],
)
def test_judge_flags_what_is_wrong(
    suites: dict[str, list[tuple[str, str, str | None]]], cell: str, problem: str
) -> None:
    v = judge(_run(DIRTY, **suites))
    assert not v.ok
    assert not v.cells[cell].ok and any(problem in p for p in v.cells[cell].problems), v.problems


def test_a_bystander_that_skipped_every_test_proves_nothing() -> None:
    run = _run(DIRTY, link=[("failed", "ber device=spine1 port=Ethernet0: FAIL", None)],
               roce=[])
    run.suites["roce"] = SuiteResult(skipped=4)
    v = judge(run)
    assert not v.ok and v.cells["roce"].text == "all skipped"
    assert "could not show" in v.cells["roce"].problems[0]


def test_a_bystander_failing_where_the_fault_is_shows_a_consequence_not_a_false_failure() -> None:
    link = [("failed", "ber device=spine1 port=Ethernet0: FAIL", None)]
    own = judge(_run(DIRTY, link=link, roce=[
        ("failed", "roce.lossless_drops device=leaf1 port=Ethernet0: 9 is FAIL", None)]))
    assert own.ok and own.cells["roce"].text == matrix.CONSEQUENCE, own.problems
    # named only through the run's root-cause analysis
    via_root = _run(DIRTY, link=link, roce=[("failed", "bw pair=host1--host2: FAIL", None)])
    via_root.suites["roce"].red[0].root = "consequence of leaf1:Ethernet0: link flapped"
    assert judge(via_root).cells["roce"].text == matrix.CONSEQUENCE
    # one failure elsewhere makes the cell false, and a broken bystander is never a consequence
    mixed = judge(_run(DIRTY, link=link, roce=[
        ("failed", "drops device=leaf1 port=Ethernet0", None),
        ("failed", "drops device=leaf2 port=Ethernet8", None)]))
    broken = judge(_run(DIRTY, link=link, roce=[("broken", "leaf1:Ethernet0 timed out", "leaf1")]))
    assert not mixed.ok and mixed.cells["roce"].problems == [
        "test_1 failed (false failed): drops device=leaf2 port=Ethernet8"]
    assert not broken.ok and "false broken" in broken.cells["roce"].problems[0]


def test_a_suite_the_fault_may_also_fail_passes_or_fails_naming_the_culprit() -> None:
    flap = replace(DIRTY, also=("roce",))
    quiet = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)], roce=[]))
    named = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)],
                       roce=[("failed", "bw pair=host1--host2 via spine1:Ethernet0", None)]))
    blind = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)],
                       roce=[("failed", "bw pair=host1--host2: FAIL", None)]))
    assert quiet.ok and named.ok, (quiet.problems, named.problems)
    assert not blind.ok and "without naming" in blind.cells["roce"].problems[0]


def test_reduced_runs_add_every_cheap_suite_in_run_order() -> None:
    assert matrix.reduced_suites(CASES["pfc_disabled"]) == [
        "link", "transceiver", "cabling", "congestion", "collective", "paths", "routing"]
    assert matrix.reduced_suites(CASES["miswired"]) == [
        "link", "transceiver", "cabling", "collective", "paths", "routing"]
    assert matrix.reduced_suites(matrix.healthy_case(1)) == []  # every suite
    assert "collective" not in matrix.reduced_suites(CASES["flapping_link"])  # its note says why
    routed = replace(CASES["miswired"], not_run=("routing",))  # a suite can be left out
    assert matrix.reduced_suites(routed)[-1] == "paths"
    assert all(matrix.reduced_suites(c) is not None for c in CASES.values())  # no typo
    with pytest.raises(ValueError, match="no such suite"):  # a typo never drops a catcher
        matrix.reduced_suites(replace(CASES["miswired"], catches=("cabeling",)))



def test_a_reduced_row_keeps_the_traffic_suites_its_fault_spoils() -> None:
    """The consequences seen on full rows stay judged on reduced ones (each must name the
    culprit); the NX-OS rows, which prove the catchers only, may leave them out."""
    cases = {c.name: c for c in draw_cases(CI_PLAN, DOMAINS, load_testbed(LEAFSPINE))}
    flapping = next(c for n, c in cases.items() if n.startswith("flapping_link"))
    assert {"roce", "congestion", "latency", "failover"} <= set(matrix.reduced_suites(flapping))
    assert "latency" not in matrix.reduced_suites(flapping, consequences=False)
    hot = next(c for n, c in cases.items() if n.startswith("hot_module"))
    assert not {"roce", "congestion", "latency", "failover"} & set(matrix.reduced_suites(hot))
    for case in cases.values():  # a combined row spoils what either fault does
        for part in case.faults:
            assert set(DOMAINS[part["kind"]].spoils) <= set(case.spoils), case.name
    with pytest.raises(ValueError, match="no such suite"):  # a typo never drops a suite
        matrix.reduced_suites(replace(hot, spoils=("latancy",)))


UNREACHABLE = Case("unreachable", ({"kind": "unreachable_device", "target": "leaf3"},),
                   catches=("link",), culprits=("leaf3",), unreachable="leaf3")


def test_judge_unreachable_device_must_be_broken_naming_it() -> None:
    good = judge(_run(UNREACHABLE, link=[("broken", "leaf3: SSH timed out", "leaf3")],
                      roce=[("broken", "pfc read failed", "leaf3")], cabling=[]))
    assert good.ok, good.problems
    assert good.cells["link"].text == "BROKEN (leaf3 named)"
    failed = judge(_run(UNREACHABLE, link=[("failed", "ber device=leaf3 port=Ethernet1/1", None)]))
    assert not failed.ok and "must be broken" in failed.problems[-1]
    elsewhere = judge(_run(UNREACHABLE, link=[("broken", "leaf2: SSH refused", "leaf2")]))
    assert not elsewhere.ok and "does not name leaf3" in elsewhere.problems[-1]
    silent = judge(_run(UNREACHABLE, link=[]))
    assert not silent.ok and "no test was broken" in silent.problems[0]


def test_render_has_a_row_per_case_and_a_column_per_suite() -> None:
    verdicts = [
        judge(_run(DIRTY, link=[("failed", "device=spine1 port=Ethernet0", None)], roce=[])),
        judge(_run(Case("healthy-seed3", seed=3), link=[], roce=[])),
        judge(_run(DIRTY, link=[], roce=[])),
    ]
    text = matrix.render(verdicts, title_note="note")
    rows = _rows(text)
    assert rows[0].startswith("| row | injected | meant to catch | link | roce | verdict")
    assert "| **FAIL (culprit named)** | pass | ok |" in rows[1]
    assert rows[2].startswith("| healthy lab (seed 3) | no fault, seed 3 |")
    assert "| pass (missed) | pass | **WRONG** |" in rows[3]
    assert "did not fail" in text.split("## What went wrong")[1]


LASER = Expect("failing_laser", "host5:eth0", ("transceiver",),
               ("host5:eth0", "leaf3:Ethernet3/1", "host5:eth0--leaf3:Ethernet3/1", "host5"))
PFCWD = Expect("pfcwd_disabled", "leaf1", ("congestion",), ("leaf1",))
COMBINED = Case("combined.1", ({"kind": "failing_laser", "target": "host5:eth0"},
                               {"kind": "pfcwd_disabled", "target": "leaf1"}),
                catches=("transceiver", "congestion"), culprits=LASER.culprits + PFCWD.culprits,
                parts=(LASER, PFCWD))
LASER_FAIL = ("failed", "tx_bias_change device=host5 port=eth0: 15 % is FAIL", None)
PFCWD_FAIL = ("failed", "pfcwd_unarmed_queues device=leaf1 port=Ethernet0: 4 is FAIL", None)


def test_judge_combined_row_both_caught_and_named() -> None:
    v = judge(_run(COMBINED, transceiver=[LASER_FAIL], congestion=[PFCWD_FAIL], link=[]))
    assert v.ok, v.problems
    assert [(f.kind, f.detected, f.named) for f in v.faults] == [
        ("failing_laser", True, True), ("pfcwd_disabled", True, True)]
    rates = matrix.rates([v])
    assert rates["failing_laser"].named == rates["pfcwd_disabled"].named == 1


def test_judge_combined_row_one_missed_or_blamed_elsewhere() -> None:
    missed = judge(_run(COMBINED, transceiver=[LASER_FAIL], congestion=[], link=[]))
    assert not missed.ok
    assert [(f.kind, f.detected) for f in missed.faults] == [
        ("failing_laser", True), ("pfcwd_disabled", False)]
    # the congestion suite fails, but names the laser's port: the pfcwd fault is not named
    wrong = judge(_run(COMBINED, transceiver=[LASER_FAIL], link=[], congestion=[
        ("failed", "lossless_drops device=leaf3 port=Ethernet3/1: 9 is FAIL", None)]))
    assert not wrong.ok and not wrong.cells["congestion"].ok
    assert [(f.kind, f.named) for f in wrong.faults] == [
        ("failing_laser", True), ("pfcwd_disabled", False)]
    # a bystander suite failing elsewhere is a false failure even when both faults are caught
    false = judge(_run(COMBINED, transceiver=[LASER_FAIL], congestion=[PFCWD_FAIL],
                       link=[("failed", "link_flaps device=leaf2 port=Ethernet0", None)]))
    assert not false.ok and "false failed" in " ".join(false.cells["link"].problems)
    rates = matrix.rates([missed, wrong])
    assert (rates["pfcwd_disabled"].draws, rates["pfcwd_disabled"].detected,
            rates["pfcwd_disabled"].named) == (2, 1, 0)
    assert "| `pfcwd_disabled` | 2 | 1 | 0 | 50% | 0% |" in "\n".join(
        matrix.render_rates([missed, wrong]))


def test_judge_alternative_catchers_one_failing_is_a_catch() -> None:
    dirty = Case("dirty_connector.1", ({"kind": "dirty_connector",
                                        "target": "host1:eth0--leaf1:Ethernet16"},),
                 catches=("link", "transceiver"), catch_any=True,
                 culprits=("host1:eth0", "leaf1:Ethernet16", "host1:eth0--leaf1:Ethernet16"))
    budget = ("failed", "optical_budget device=leaf1 port=Ethernet16: 2.6 dB is FAIL", None)
    caught = judge(_run(dirty, link=[], transceiver=[budget], cabling=[]))
    assert caught.ok, caught.problems
    assert caught.cells["link"].text == "pass"
    nobody = judge(_run(dirty, link=[], transceiver=[], cabling=[]))
    assert not nobody.ok and nobody.faults[0].detected is False
    assert "none of link / transceiver failed" in " ".join(nobody.problems)


def test_a_failure_explained_by_a_root_cause_at_the_culprit_counts_as_naming_it() -> None:
    mtu = Case("mtu_mismatch.1", ({"kind": "mtu_mismatch", "target": "leaf3:Ethernet3/1"},),
               catches=("roce",), culprits=("leaf3:Ethernet3/1", "host5:eth0",
                                            "host5:eth0--leaf3:Ethernet3/1"))
    pair = "roce.bw_fraction_of_line pair=host1--host5: 0.3 ratio is FAIL"
    blind = judge(_run(mtu, roce=[("failed", pair, None)]))
    assert not blind.ok and not blind.faults[0].named
    run = _run(mtu, roce=[("failed", pair, None)])
    run.suites["roce"].red[0].root = "consequence of leaf3:Ethernet3/1: port MTU 1500"
    explained = judge(run)
    assert explained.ok and explained.faults[0].named, explained.problems


def _rows(text: str) -> list[str]:
    """The lines of the markdown's row table (header first)."""
    part = text.split("## Rows", 1)[1].split("## ", 1)[0]
    return [ln for ln in part.splitlines() if ln.startswith("| ")]


# --- real labtest run children over fake suites ----------------------------------------------
# The fake suites act on catalogue fault kinds (the loader refuses unknown ones) without an
# emulated lab: dirty_connector fails the port, hot_module fails a pair, unreachable_device
# breaks, slow_convergence hangs.

ALPHA = '''
import time

import pytest

from labtest.errors import InfraError

def _faults(testbed):
    return {f.kind: f.target for f in testbed.emulation.faults}

@pytest.mark.judges("fec.uncorrectable_codewords")
def test_port(testbed, measure):
    faults = _faults(testbed)
    if "slow_convergence" in faults:
        time.sleep(120)
    if "unreachable_device" in faults:
        raise InfraError(faults["unreachable_device"], "management plane does not answer")
    port = faults.get("dirty_connector", "leaf1:Ethernet8")
    device, _, name = port.partition(":")
    bad = 3 if "dirty_connector" in faults else 0
    measure("fec.uncorrectable_codewords", bad, key="fec.uncorrectable_codewords",
            device=device, port=name)
'''

BETA = '''
import pytest


@pytest.mark.judges("fec.uncorrectable_codewords")
def test_pair(testbed, measure):
    faults = {f.kind: f.target for f in testbed.emulation.faults}
    if "unreachable_device" in faults:
        from labtest.errors import InfraError
        raise InfraError("leaf9", "not the unreachable device")
    errors = 5 if "hot_module" in faults else 0
    measure("fec.uncorrectable_codewords", errors, key="fec.uncorrectable_codewords",
            pair="host1--host2")
'''


@pytest.fixture
def fake_lab(tmp_path: Path) -> tuple[Path, Path]:
    suites = tmp_path / "suites"
    for family, source in (("alpha", ALPHA), ("beta", BETA)):
        (suites / family).mkdir(parents=True)
        (suites / family / f"test_{family}.py").write_text(textwrap.dedent(source))
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({
        "name": "fake",
        "limits": str(LIMITS),
        "devices": {"leaf1": {"role": "leaf", "driver": "sonic"},
                    "host1": {"role": "host", "driver": "linux"},
                    "host2": {"role": "host", "driver": "linux"}},
        # the fault targets are checked on load: the ports they name are cabled
        "links": [{"a": "leaf1:Ethernet0", "b": "host1:eth0"},
                  {"a": "leaf1:Ethernet16", "b": "host2:eth0"}],
        "emulation": {"seed": 1, "faults": []},
    }))
    return suites, base


def _fault(kind: str, target: str = "") -> tuple[dict[str, str], ...]:
    return ({"kind": kind, "target": target},)


def test_engine_runs_labtest_run_children_and_judges_them(
    tmp_path: Path, fake_lab: tuple[Path, Path]
) -> None:
    suites, base = fake_lab
    cases = [
        Case("caught", _fault("dirty_connector", "leaf1:Ethernet0"), ("alpha",),
             ("leaf1:Ethernet0",)),
        Case("blamed-wrong", _fault("dirty_connector", "leaf1:Ethernet16"), ("alpha",),
             ("leaf1:Ethernet0",)),
        Case("false-failure",
             _fault("dirty_connector", "leaf1:Ethernet0") + _fault("hot_module", "leaf1"),
             ("alpha",), ("leaf1:Ethernet0",)),
        Case("unreachable", _fault("unreachable_device", "leaf1"), ("alpha",), ("leaf1",),
             unreachable="leaf1"),
        matrix.healthy_case(2),
    ]
    verdicts = {v.run.case.name: v for v in cli.run_matrix(
        cases, tmp_path / "runs", jobs=3, timeout_s=120, base=base, suites_dir=suites,
        emulate=False, pytest_args=("-q", "-p", "no:randomly", "--no-inventory"))}
    caught = verdicts["caught"]
    assert caught.ok, caught.problems
    assert caught.run.cpu_s is not None and caught.run.cpu_s > 0.2  # pytest's CPU counted
    assert {s: c.text for s, c in caught.cells.items()} == {"alpha": matrix.CAUGHT, "beta": "pass"}
    assert "without naming leaf1:Ethernet0" in " ".join(verdicts["blamed-wrong"].problems)
    assert verdicts["false-failure"].cells["beta"].text == "1 FAILED"
    assert verdicts["false-failure"].cells["alpha"].ok
    unreachable = verdicts["unreachable"]
    assert unreachable.cells["alpha"].text == "BROKEN (leaf1 named)"
    assert not unreachable.cells["beta"].ok  # broken, but it blames leaf9
    healthy = verdicts["healthy-seed2"]
    assert healthy.ok and healthy.run.returncode == 0, healthy.problems
    seed = yaml.safe_load((tmp_path / "runs" / "healthy-seed2" / "testbed.yaml").read_text())
    assert seed["emulation"]["seed"] == 2
    # the command line judges the finished runs again and writes the markdown
    module = tmp_path / "cases.py"
    module.write_text("from labtest.matrix import Case\n"
                      f"CASES = {{'caught': Case(**{_fields(cases[0])!r})}}\n")
    out = tmp_path / "matrix.md"
    status = cli.main(["--rejudge", "--fixed", "--workdir", str(tmp_path / "runs"),
                          "--cases", str(module), "--seeds", "2", "--out", str(out)])
    assert status == 0
    rows = _rows(out.read_text())
    assert len(rows) == 3 and "| **FAIL (culprit named)** | pass | ok |" in rows[1]
    assert "fec.uncorrectable_codewords device=leaf1 port=Ethernet0: 3 codewords is FAIL" in (
        out.read_text())


def _fields(case: Case) -> dict[str, object]:
    return {k: v for k, v in case.__dict__.items() if k in ("name", "faults", "catches",
                                                            "culprits")}


def test_engine_kills_a_hung_run_at_its_timeout(
    tmp_path: Path, fake_lab: tuple[Path, Path]
) -> None:
    suites, base = fake_lab
    runner = matrix.Runner(tmp_path / "runs", base=base, suites_dir=suites, timeout_s=6,
                           emulate=False, pytest_args=("-q", "--no-inventory"))
    hang = Case("hang", _fault("slow_convergence", "leaf1"), ("alpha",), ("leaf1",))
    began = time.monotonic()
    try:
        runner.start(hang, ["alpha"])
        run = runner.result("hang")
    finally:
        runner.close()
    assert time.monotonic() - began < 6 + 2 * matrix.STOP_GRACE_S
    assert run.error is not None and "timed out after 6 s" in run.error and run.cpu_s is None
    # before the kill, the row's processes wrote every thread's stack to its folder
    stacks = sorted((tmp_path / "runs" / "hang").glob("stacks-*.txt"))
    assert stacks and "thread stacks in" in run.error, run.error
    assert any("most recent call first" in p.read_text() for p in stacks), stacks
    verdict = judge(run)
    assert not verdict.ok and verdict.cells == {"alpha": matrix.Cell("ERROR", False)}
    assert run.pid is not None
    assert _group_gone(run.pid), "the hung run's process group survived its kill"


def _group_gone(pgid: int, bound_s: float = 10.0) -> bool:
    """True once no process of the group is left; killed members become zombies until
    init reaps them, so wait for that (bounded) instead of checking once."""
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("argv", [["--vendor", "nxos", "--list"],  # CI's fixed rows
                                  ["--random", "--vendor", "nxos", "--list"]])  # no NX-OS
def test_a_vendor_the_draws_cannot_honour_is_refused_not_ignored(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--testbed", str(LEAFSPINE), *argv])
    assert exc.value.code == 2
