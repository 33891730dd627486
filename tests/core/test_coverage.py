"""Coverage: requirement x unit cells and the PASS / INCOMPLETE / FAIL verdict.

The documents are shaped like ``labtest-results.json`` (see labtest/reports/results.py).
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import pytest

from labtest.errors import ConfigError
from labtest.measure import Recorder, coverage, load_limits
from labtest.measure.coverage import (
    BROKEN,
    FAILED,
    NOT_PROVEN,
    PROVEN,
    WAIVED,
    compute,
    expand_units,
    run_verdict,
    suite_requirements,
)

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "suites"
FAMILIES = ("link", "transceiver", "cabling", "roce", "congestion", "failover", "collective")

LINKS = [
    ("leaf1:Ethernet0", "spine1:Ethernet0"),
    ("leaf3:Ethernet1/1", "spine1:Ethernet16"),
    ("host1:eth0", "leaf1:Ethernet16"),
    ("host5:eth0", "leaf3:Ethernet3/1"),
    ("tg1:p1", "leaf1:Ethernet32"),
]
FAB1, FAB3 = "leaf1:Ethernet0--spine1:Ethernet0", "leaf3:Ethernet1/1--spine1:Ethernet16"
SWITCH_CAPS = ["Fec", "Interfaces", "Lldp", "Prbs", "SwitchFacts"]


def _device(role: str, driver: str, caps: list[str] | None) -> dict[str, Any]:
    return {"role": role, "driver": driver, "address": None, "transports": [],
            "capabilities": caps}


def make_testbed() -> dict[str, Any]:
    return {
        "name": "tiny",
        "devices": {
            "spine1": _device("spine", "sonic", SWITCH_CAPS),
            "leaf1": _device("leaf", "sonic", SWITCH_CAPS),
            "leaf3": _device("leaf", "eos", ["Interfaces", "Lldp", "SwitchFacts"]),
            "host1": _device("host", "linux", ["Perftest", "RdmaDevices"]),
            "host5": _device("host", "linux", ["Perftest", "RdmaDevices"]),
            "tg1": _device("tg", "snappi-tg", ["TrafficGenerator"]),
            "opm1": _device("power-meter", "opm", ["PowerMeter"]),
        },
        "links": [{"a": a, "b": b, "speed_gbps": 400} for a, b in LINKS],
    }


def measurement(key: str, verdict: str = "PASS", value: float = 0.0, **labels: str
                ) -> dict[str, Any]:
    return {"name": key.split(".")[-1], "value": value, "unit": "", "verdict": verdict,
            "limit": None, "limit_key": key, "labels": labels}


def test_doc(name: str, outcome: str = "passed", suite: str = "link", **extra: Any
             ) -> dict[str, Any]:
    return {"nodeid": f"suites/{suite}/test_{suite}.py::{name}", "name": name, "suite": suite,
            "outcome": outcome, "message": None, "device": None, "skip_reason": None,
            "measurements": [], "not_proven": [], **extra}


test_doc.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def prbs_requirement(unit: str = "fabric_link") -> dict[str, str]:
    return {"id": "link.prbs_target_ber", "unit": unit, "test": "test_prbs_ber", "suite": "link"}


def healthy_doc() -> dict[str, Any]:
    """PRBS proven on both fabric links."""
    tests = [
        test_doc(f"test_prbs_ber[{link}]", measurements=[
            measurement("link.prbs_target_ber", device=end.split(":")[0],
                        port=end.split(":")[1], lane="0", link=link)
            for end in link.split("--")])
        for link in (FAB1, FAB3)
    ]
    return {"testbed": make_testbed(), "tests": tests, "requirements": [prbs_requirement()],
            "limits": {"waivers": []}}


def cell(doc: dict[str, Any], unit: str) -> coverage.Cell:
    return next(c for c in compute(doc).cells if c.unit == unit)


# --- units ------------------------------------------------------------------------------------


def test_units_come_from_the_testbed_not_from_what_ran() -> None:
    units = expand_units(make_testbed())
    assert units.of("fabric_link") == (FAB1, FAB3)
    assert units.of("host_link") == ("host1:eth0--leaf1:Ethernet16",
                                     "host5:eth0--leaf3:Ethernet3/1")
    assert len(units.of("link")) == 5  # the TG link too
    assert units.of("switch") == ("spine1", "leaf1", "leaf3")
    assert units.of("host") == ("host1", "host5")
    assert units.of("host_pair") == ("host1--host5",)
    assert units.of("switch_group") == ("sonic", "eos")
    assert units.device_kind["opm1"] == "instrument"


def test_a_cabled_device_whose_driver_is_missing_still_owns_its_links() -> None:
    tb = make_testbed()
    tb["devices"]["leaf3"] = _device("leaf", "sonci", None)
    units = expand_units(tb)
    assert FAB3 in units.of("fabric_link")
    assert "leaf3" in units.of("switch")


# --- cells ------------------------------------------------------------------------------------


def test_every_cell_proven_is_pass() -> None:
    doc = healthy_doc()
    assert {c.status for c in compute(doc).cells} == {PROVEN}
    verdict = run_verdict(doc)
    assert verdict.verdict == "PASS" and verdict.reasons == ()


def test_a_skipped_unit_is_a_hole_with_the_skip_reason_and_makes_incomplete() -> None:
    doc = healthy_doc()
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "skipped",
                               skip_reason=f"{FAB3}: leaf3 offers no Prbs capability")
    c = cell(doc, FAB3)
    assert c.status == NOT_PROVEN and "no Prbs" in c.reason
    verdict = run_verdict(doc)
    assert verdict.verdict == "INCOMPLETE"
    assert verdict.reasons[0].startswith("link.prbs_target_ber: proven on 1/2 fabric_links; "
                                         f"not proven on {FAB3} (")


def test_a_unit_no_test_ran_for_is_a_hole_not_a_silent_drop() -> None:
    doc = healthy_doc()
    del doc["tests"][1]
    c = cell(doc, FAB3)
    assert c.status == NOT_PROVEN and "did not run" in c.reason
    assert run_verdict(doc).verdict == "INCOMPLETE"


def test_a_unit_whose_runs_all_failed_before_measuring_says_so() -> None:
    """Failover events are parametrised by event, not switch: every event failing on loss
    before it was made left each switch 'not run for it', though its tests ran and failed."""
    req = {"id": "failover.convergence_ms", "unit": "switch", "test": "test_failover",
           "suite": "failover"}
    before = measurement("failover.unaffected_flow_loss_frames", "FAIL", 7.5e4,
                         flow="f1", phase="before the event")
    tests = [test_doc("test_failover[shut:leaf1:Ethernet0]", "failed", "failover",
                      message="LimitFailure: 1 measurement(s) outside limits",
                      measurements=[before]),
             test_doc("test_failover[shut:spine1:Ethernet0]", "passed", "failover",
                      measurements=[measurement("failover.convergence_ms", device="spine1")])]
    doc = {"testbed": make_testbed(), "tests": tests, "requirements": [req],
           "limits": {"waivers": []}}
    leaf1 = cell(doc, "leaf1")
    assert leaf1.status == NOT_PROVEN and leaf1.reason == (
        "no measurement of failover.convergence_ms: 1 run(s) of test_failover failed before "
        "measuring it (first: shut:leaf1:Ethernet0: LimitFailure: 1 measurement(s) outside "
        "limits)"), leaf1
    assert cell(doc, "spine1").status == PROVEN


def test_an_explicit_not_proven_beats_a_pass_on_the_same_cell() -> None:
    doc = healthy_doc()
    doc["tests"][1]["not_proven"] = [
        {"requirement": "link.prbs_target_ber", "reason": "EOS: no PRBS", "labels": {"link": FAB3}}
    ]
    c = cell(doc, FAB3)
    assert (c.status, c.reason) == (NOT_PROVEN, "EOS: no PRBS")


def test_not_proven_from_the_recorder_reaches_the_cell() -> None:
    rec = Recorder()
    rec.not_proven("link.prbs_target_ber", "no BERT cabled", device="leaf3", port="Ethernet1/1")
    doc = healthy_doc()
    doc["tests"][1]["measurements"] = []
    doc["tests"][1]["not_proven"] = [n.as_dict() for n in rec.not_proven_notes]
    assert cell(doc, FAB3).reason == "no BERT cabled"
    with pytest.raises(ValueError, match="needs a reason"):
        rec.not_proven("link.prbs_target_ber", " ", link=FAB3)


def test_a_waiver_turns_a_hole_into_pass_and_is_listed() -> None:
    doc = healthy_doc()
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "skipped", skip_reason="no Prbs")
    doc["limits"]["waivers"] = [{"requirement": "link.prbs_target_ber", "units": [FAB3],
                                 "reason": "leaf3 cannot run PRBS", "source": "lab lead, ticket 7"}]
    c = cell(doc, FAB3)
    assert c.status == WAIVED and "ticket 7" in c.waiver
    verdict = run_verdict(doc)
    assert verdict.verdict == "PASS"
    assert verdict.coverage.waivers[0]["source"] == "lab lead, ticket 7"
    assert verdict.coverage.by_suite() == {"link": (2, 2)}


def test_a_waiver_for_other_units_does_not_cover_the_hole() -> None:
    doc = healthy_doc()
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "skipped", skip_reason="no Prbs")
    doc["limits"]["waivers"] = [{"requirement": "link.prbs_target_ber", "units": [FAB1],
                                 "reason": "x", "source": "y"}]
    assert run_verdict(doc).verdict == "INCOMPLETE"


def test_a_failure_beats_a_hole_and_a_waiver_never_hides_it() -> None:
    doc = healthy_doc()
    doc["tests"][0]["outcome"] = "failed"
    doc["tests"][0]["measurements"][0]["verdict"] = "FAIL"
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "skipped", skip_reason="no Prbs")
    doc["limits"]["waivers"] = [{"requirement": "link.prbs_target_ber", "units": "*",
                                 "reason": "x", "source": "y"}]
    assert cell(doc, FAB1).status == FAILED
    verdict = run_verdict(doc)
    assert verdict.verdict == "FAIL"
    assert any(FAB1 in r for r in verdict.reasons)


def test_a_broken_test_makes_its_cell_broken_and_the_run_incomplete() -> None:
    doc = healthy_doc()
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "broken", message="SshTimeout: leaf3")
    c = cell(doc, FAB3)
    assert (c.status, c.reason) == (BROKEN, "SshTimeout: leaf3")
    assert run_verdict(doc).verdict == "INCOMPLETE"


def test_a_device_port_label_proves_the_link_cabled_there() -> None:
    doc = healthy_doc()
    for m in doc["tests"][1]["measurements"]:
        del m["labels"]["link"]
    assert cell(doc, FAB3).status == PROVEN


def test_media_variants_of_a_key_prove_it() -> None:
    doc = healthy_doc()
    for m in doc["tests"][1]["measurements"]:
        m["limit_key"] = "link.prbs_target_ber@400G-DR4"
    assert cell(doc, FAB3).status == PROVEN


def test_a_measurement_of_another_key_proves_nothing() -> None:
    doc = healthy_doc()
    for m in doc["tests"][1]["measurements"]:
        m["limit_key"] = "link.prbs_confidence"
    assert cell(doc, FAB3).status == NOT_PROVEN


def test_host_pairs_match_in_either_order() -> None:
    doc = {"testbed": make_testbed(), "limits": {}, "requirements": [
        {"id": "roce.bw_fraction_of_line", "unit": "host_pair", "test": "test_pair_bandwidth",
         "suite": "roce"}],
        "tests": [test_doc("test_pair_bandwidth[host5--host1]", suite="roce", measurements=[
            measurement("roce.bw_fraction_of_line", pair="host5--host1")])]}
    assert cell(doc, "host1--host5").status == PROVEN


def test_fabric_requirements_count_only_their_own_test() -> None:
    req = {"id": "roce.bw_fraction_of_line", "unit": "fabric", "test": "test_bisection_bandwidth",
           "suite": "roce"}
    doc = {"testbed": make_testbed(), "limits": {}, "requirements": [req], "tests": [
        test_doc("test_pair_bandwidth[host1--host5]", suite="roce",
                 measurements=[measurement("roce.bw_fraction_of_line", pair="host1--host5")])]}
    assert cell(doc, "fabric").status == NOT_PROVEN
    doc["tests"].append(test_doc("test_bisection_bandwidth", suite="roce", measurements=[
        measurement("roce.bw_fraction_of_line", pair="host1--host5")]))
    assert cell(doc, "fabric").status == PROVEN


def test_a_switch_no_suite_could_judge_is_an_incomplete_line() -> None:
    doc = healthy_doc()
    doc["testbed"]["devices"]["leaf3"] = _device("leaf", "dumb-switch", ["PowerMeter"])
    doc["tests"][1] = test_doc(f"test_prbs_ber[{FAB3}]", "skipped", skip_reason="no Prbs")
    verdict = run_verdict(doc)
    assert verdict.verdict == "INCOMPLETE"
    assert verdict.reasons[-1] == ("leaf3: no suite could judge it (driver 'dumb-switch' offers "
                                   "PowerMeter; no check of this run could use it)")
    assert compute(doc).unjudged == [verdict.reasons[-1]]  # spine1 was judged at FAB1


def test_instruments_and_unneeded_kinds_are_not_unjudged() -> None:
    doc = healthy_doc()  # only fabric links required: hosts, the TG and the OPM are not at stake
    assert compute(doc).unjudged == []


def test_nothing_ran_is_not_pass() -> None:
    doc = {"testbed": make_testbed(), "tests": [], "requirements": [], "limits": None}
    assert run_verdict(doc).verdict == "INCOMPLETE"


# --- requirements files -----------------------------------------------------------------------


def test_requirement_files_are_located_when_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "requirements.yaml"
    bad.write_text("requirements:\n  - id: x.y\n    unit: rack\n    test: test_a\n")
    with pytest.raises(ConfigError, match=r"requirements.yaml:3:\d+"):
        suite_requirements(tmp_path)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_suite_states_its_requirements(family: str) -> None:
    """Each requirement names a limit of the shipped profile (or a key its suite records
    against a computed limit) and a test of its suite."""
    folder = SUITES / family
    reqs = suite_requirements(folder)
    assert reqs, f"{family} has no requirements.yaml"
    profile = load_limits(SUITES / "limits" / "acceptance-400g.yaml")
    tests = {
        node.name
        for path in folder.glob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }
    source = "".join(p.read_text() for p in folder.glob("*.py"))
    for r in reqs:
        recorded = f'"{r.id}"' in source  # measured (or said not proven) under that key
        assert r.id in profile.limits or recorded, f"{family}: {r.id} is neither a limit nor a key"
        assert r.test in tests, f"{family}: {r.test} is no test of the suite"


def test_waivers_in_a_profile_are_validated(tmp_path: Path) -> None:
    # the profile's own waivers cut off: the test appends its own list
    src = (SUITES / "limits" / "acceptance-400g.yaml").read_text().split("\nwaivers:")[0]
    good = tmp_path / "good.yaml"
    good.write_text(src + "\nwaivers:\n  - requirement: link.prbs_target_ber\n"
                    "    units: [a--b]\n    reason: no BERT yet\n    source: lab lead\n")
    profile = load_limits(good)
    assert profile.waivers[0].covers("link.prbs_target_ber", "a--b")
    assert not profile.waivers[0].covers("link.prbs_target_ber", "c--d")
    bad = tmp_path / "bad.yaml"
    bad.write_text(src + "\nwaivers:\n  - requirement: link.prbs_target_ber\n    reason: x\n")
    with pytest.raises(ConfigError, match="source"):
        load_limits(bad)


def test_the_document_is_not_modified() -> None:
    doc = healthy_doc()
    before = copy.deepcopy(doc)
    run_verdict(doc)
    assert doc == before


def test_skips_of_a_suite_without_requirements_are_holes() -> None:
    doc = healthy_doc()
    doc["tests"].append(test_doc("test_site_optic[x]", "skipped", suite="site",
                                 skip_reason="no OPM cabled"))
    verdict = run_verdict(doc)
    assert verdict.verdict == "INCOMPLETE"
    assert verdict.reasons == ("site: test_site_optic[x] skipped (no OPM cabled); the suite "
                               "states no requirements.yaml, so its skips are holes",)
    doc["tests"][-1]["suite"] = "link"  # a stated suite: its requirements decide
    assert run_verdict(doc).verdict == "PASS"


def test_switch_groups_and_receivers_are_matched() -> None:
    units = expand_units(make_testbed())
    assert coverage.unit_of("switch_group", {"device": "leaf3"}, units) == "eos"
    assert coverage.unit_of("switch_group", {"group": "sonic"}, units) == "sonic"
    # a drop at a switch port inside host5's incast test judges host5 (its parametrize id)
    assert coverage.unit_of("host", {"device": "leaf3", "port": "Ethernet3/1"}, units,
                            "host5") == "host5"
    assert coverage.unit_of("host", {"device": "leaf3"}, units) is None
    assert coverage.unit_of("fabric_link", {"link": "host1:eth0--leaf1:Ethernet16"}, units) is None


def test_a_run_wide_test_failing_elsewhere_leaves_an_unmeasured_switch_not_proven() -> None:
    req = {"id": "congestion.stormed_queues", "unit": "switch", "test": "test_no_pause_storm",
           "suite": "congestion"}
    storm = test_doc("test_no_pause_storm", "failed", suite="congestion", measurements=[
        measurement("congestion.stormed_queues", "FAIL", 1, device="leaf1", port="Ethernet16"),
        measurement("congestion.stormed_queues", "PASS", 0, device="spine1", port="")])
    doc = {"testbed": make_testbed(), "limits": {}, "requirements": [req], "tests": [storm]}
    assert cell(doc, "leaf1").status == FAILED
    assert cell(doc, "spine1").status == PROVEN
    leaf3 = cell(doc, "leaf3")  # no PfcQueues: the storm elsewhere does not fail it
    assert (leaf3.status, leaf3.reason) == (NOT_PROVEN, "test_no_pause_storm recorded no "
                                                        "measurement of congestion.stormed_queues")


def test_a_host_is_judged_through_its_link() -> None:
    req = {"id": "link.flaps", "unit": "link", "test": "test_link_stability", "suite": "link"}
    host_link = "host1:eth0--leaf1:Ethernet16"
    tests = [test_doc(f"test_link_stability[{lk}]", measurements=[
        measurement("link.flaps", device=lk.split("--")[1].split(":")[0],
                    port=lk.split("--")[1].split(":")[1], link=lk)])
        for lk in expand_units(make_testbed()).of("link") if not lk.startswith("host5")]
    doc = {"testbed": make_testbed(), "limits": {}, "requirements": [req], "tests": tests}
    assert any(t["name"] == f"test_link_stability[{host_link}]" for t in tests)
    assert compute(doc).unjudged == [  # host1 was judged at its link, host5 nowhere
        "host5: no suite could judge it (driver 'linux' offers Perftest, RdmaDevices; no check "
        "of this run could use it)"]
