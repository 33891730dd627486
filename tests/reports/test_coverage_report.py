"""Coverage and root causes in the sign-off, the Allure results and the run table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import LIMITS, run_inprocess, run_lab, write_lab

from labtest.reports import allure_env, results, signoff
from labtest.run import EXIT_BY_VERDICT, EXIT_INCOMPLETE, format_table, verdict_table

FAB1, FAB3 = "leaf1:Ethernet0--spine1:Ethernet0", "leaf3:Ethernet1/1--spine1:Ethernet16"
CAPS = ["Interfaces", "Lldp", "SwitchFacts"]


def _device(role: str, driver: str) -> dict[str, Any]:
    return {"role": role, "driver": driver, "address": None, "transports": [],
            "capabilities": CAPS}


def _m(link: str, end: str, verdict: str = "PASS") -> dict[str, Any]:
    device, port = end.split(":", 1)
    return {"name": "prbs_ber_upper_bound", "value": 1e-13, "unit": "", "verdict": verdict,
            "limit": {"high": 1e-12, "unit": "", "source": "IEEE 802.3 cl. 120"},
            "limit_key": "link.prbs_target_ber",
            "labels": {"device": device, "port": port, "lane": "0", "link": link}}


def _test(name: str, outcome: str, ms: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    test = results.new_test(f"suites/link/test_link.py::{name}")
    test.update(suite="link", outcome=outcome, measurements=ms, plan_ids=["LINK-1.1"], **extra)
    return test


def document(*, hole: bool = True, waive: bool = False, fail: bool = False) -> dict[str, Any]:
    first = [_m(FAB1, e, "FAIL" if fail else "PASS") for e in FAB1.split("--")]
    tests = [_test(f"test_prbs_ber[{FAB1}]", "failed" if fail else "passed", first)]
    if hole:
        tests.append(_test(f"test_prbs_ber[{FAB3}]", "skipped", [],
                           skip_reason=f"{FAB3}: leaf3 (EOS) offers no Prbs capability"))
    else:
        tests.append(_test(f"test_prbs_ber[{FAB3}]", "passed",
                           [_m(FAB3, e) for e in FAB3.split("--")]))
    waivers = [{"requirement": "link.prbs_target_ber", "units": [FAB3],
                "reason": "leaf3 has no PRBS generator; no BERT on this link",
                "source": "lab lead J. Doe, 2026-11-30"}] if waive else []
    doc: dict[str, Any] = {
        "schema": results.SCHEMA,
        "run": {"started_utc": "2026-12-01T00:00:00+00:00", "finished_utc": "x", "user": "u",
                "host": "h", "labtest_version": "0.1.0", "git_commit": None, "args": [],
                "python": "3.11", "pytest": "9",
                "emulated": True, "pytest_exit_status": 0},
        "testbed": {"name": "tiny", "description": "", "file": None, "sha256": None,
                    "emulation": None, "devices": {"spine1": _device("spine", "sonic"),
                                                "leaf1": _device("leaf", "sonic"),
                                                "leaf3": _device("leaf", "eos")},
                    "links": [{"a": a, "b": b, "speed_gbps": 400, "optic": None, "length_m": None}
                              for a, b in (x.split("--") for x in (FAB1, FAB3))]},
        "limits": {"profile": "p", "description": "", "file": None, "sha256": "0" * 64,
                   "limits": {}, "waivers": waivers},
        "inventory": {},
        "inventory_error": None,
        "tests": tests,
        "requirements": [{"id": "link.prbs_target_ber", "unit": "fabric_link",
                          "test": "test_prbs_ber", "suite": "link", "description": ""}],
    }
    doc["verdict"] = results.verdict_record(doc)
    return doc


def _bundle(tmp_path: Path, doc: dict[str, Any]) -> tuple[dict[str, Any], str]:
    res = tmp_path / "results"
    res.mkdir()
    results.write(res, doc)
    bundle = signoff.build(res, tmp_path / "out")
    return bundle.doc, bundle.html.read_text()


def test_a_hole_is_an_amber_incomplete_sign_off_listing_it(tmp_path: Path) -> None:
    doc, html = _bundle(tmp_path, document())
    assert doc["verdict"] == "INCOMPLETE"
    assert "class='banner v-INCOMPLETE'" in html
    line = (f"link.prbs_target_ber: proven on 1/2 fabric_links; not proven on {FAB3} "
            "(leaf3 (EOS) offers no Prbs capability)")
    assert doc["verdict_reasons"] == [line, (
        "leaf3: no suite could judge it (driver 'eos' offers Interfaces, Lldp, SwitchFacts; no "
        "check of this run could use it)")]
    # first screen: the hole, before the tables; then the matrix with one row per link
    holes = html.index("id='holes'")
    assert holes < html.index(line, holes) < html.index("id='suites'") < html.index(
        "id='coverage'")
    assert "<td class='c-not-proven'>" in html and "<td class='c-proven'>" in html
    assert "1/2</td>" in html  # the suite's coverage column
    assert "waive nothing" in html


def test_a_waiver_makes_it_pass_and_is_listed_with_its_source(tmp_path: Path) -> None:
    doc, html = _bundle(tmp_path, document(waive=True))
    assert doc["verdict"] == "PASS"
    assert "class='banner v-PASS'" in html
    assert "lab lead J. Doe, 2026-11-30" in html and "<td class='c-waived'>" in html


def test_a_failure_leads_with_its_root_cause(tmp_path: Path) -> None:
    doc, html = _bundle(tmp_path, document(fail=True))
    assert doc["verdict"] == "FAIL"
    (cause,) = doc["root_causes"]
    assert cause["culprit"] == "leaf1:Ethernet0--spine1:Ethernet0"  # both ends fail: the link
    assert html.index("id='causes'") < html.index("id='holes'") < html.index("id='attention'")
    assert any(r.startswith("also link.prbs_target_ber") for r in doc["verdict_reasons"])


def test_allure_gets_a_broken_coverage_result_in_its_own_category(tmp_path: Path) -> None:
    doc = document()
    paths = results.write_coverage_results(tmp_path, doc)
    (body,) = [json.loads(p.read_text()) for p in paths]
    assert body["status"] == "broken"
    rules = [*results.coverage_categories(), *allure_env.categories(RuntimeError)]
    message = body["statusDetails"]["message"]
    assert allure_env.match_category(rules, "broken", message) == results.COVERAGE_CATEGORY
    assert FAB3 in body["statusDetails"]["trace"]
    proven = json.loads(results.write_coverage_results(tmp_path, document(hole=False))[0]
                        .read_text())
    assert proven["status"] == "passed"


def test_the_run_table_has_a_coverage_column_and_exit_code(tmp_path: Path) -> None:
    doc = document()
    table = verdict_table(doc["tests"], doc["verdict"])
    text = format_table(table, 2.0, color=True)
    assert text.splitlines()[1].endswith("coverage")
    assert text.splitlines()[2].split()[-1] == "1/2"
    assert "not proven:" in text
    assert "  link.prbs_target_ber: proven on 1/2 fabric_link(s); not proven on:" in text
    assert f"    {FAB3}: leaf3 (EOS) offers no Prbs capability" in text
    assert text.splitlines()[-1] == (  # amber
        "\033[1;33mverdict: INCOMPLETE (2 s): 1/2 required cells proven; not proven: "
        "link.prbs_target_ber on 1 fabric_link(s); leaf3: no suite could judge it (driver 'eos' "
        "offers Interfaces, Lldp, SwitchFacts; no check of this run could use it)\033[0m")
    assert EXIT_BY_VERDICT[table.verdict] == EXIT_INCOMPLETE == 6
    assert EXIT_BY_VERDICT[verdict_table(document(hole=False)["tests"],
                                         document(hole=False)["verdict"]).verdict] == 0


def test_labtest_report_exits_6_for_incomplete_and_leads_with_root_causes(
    tmp_path: Path, capsys: Any
) -> None:
    from labtest.cli import main

    for name, doc, status in (("hole", document(), 6), ("fail", document(fail=True), 1),
                              ("ok", document(hole=False), 0)):
        res = tmp_path / name / "results"
        res.mkdir(parents=True)
        results.write(res, doc)
        assert main(["report", str(res), "-o", str(tmp_path / name / "out"),
                     "--no-allure"]) == status
        lines = capsys.readouterr().out.splitlines()
        if name == "fail":
            assert lines[1] == ("  root cause 1: leaf1:Ethernet0--spine1:Ethernet0: "
                                "prbs_ber_upper_bound 1e-13 outside its limit")


def test_a_suite_with_holes_is_incomplete_in_its_row(tmp_path: Path) -> None:
    doc, _ = _bundle(tmp_path, document())
    assert [(s["suite"], s["verdict"]) for s in doc["suites"]] == [("link", "INCOMPLETE")]


# --- through the plugins: a fake lab run ------------------------------------------------------

NOT_PROVEN_TESTS = '''
import pytest


@pytest.mark.parametrize("leaf", ["leaf1", "leaf2"])
@pytest.mark.judges("fec.pre_fec_ber")
def test_pre_fec_ber(device, measure, leaf):
    if leaf == "leaf2":
        measure.not_proven("fec.pre_fec_ber", "leaf2 offers no FEC counters", device=leaf)
        pytest.skip("no FEC counters")
    ber, bins, raw = device(leaf).fec_counters("Ethernet8")
    measure("pre_fec_ber", ber, key="fec.pre_fec_ber", device=leaf, port="Ethernet8")
'''
REQUIREMENTS = """\
requirements:
  - {id: fec.pre_fec_ber, unit: switch, test: test_pre_fec_ber}
"""
WAIVERS = """\
waivers:
  - requirement: fec.pre_fec_ber
    units: [leaf2, spine1]
    reason: no FEC counters on these (fake) switches
    source: test plan rev A
"""


def test_a_lab_run_records_holes_and_the_verdict(pytester: Any) -> None:

    (pytester.path / "requirements.yaml").write_text(REQUIREMENTS)
    result, results_dir = run_lab(pytester, faulty=False, tests=NOT_PROVEN_TESTS)
    result.assert_outcomes(passed=1, skipped=1)
    assert any(line.startswith("labtest verdict: INCOMPLETE: 1/3 required cells proven")
               for line in result.outlines), result.outlines[-5:]
    doc = json.loads((results_dir / "labtest-results.json").read_text())
    assert doc["requirements"][0]["suite"] == "test_acceptance"
    skipped = next(t for t in doc["tests"] if t["name"] == "test_pre_fec_ber[leaf2]")
    assert skipped["not_proven"] == [{"requirement": "fec.pre_fec_ber",
                                      "reason": "leaf2 offers no FEC counters",
                                      "labels": {"device": "leaf2"}}]
    assert skipped["skip_reason"] == "no FEC counters"
    assert doc["testbed"]["devices"]["leaf1"]["capabilities"] == ["SwitchFacts", "Transceivers"]
    cells = {c["unit"]: (c["status"], c["reason"])
             for c in doc["verdict"]["coverage"]["requirements"][0]["cells"]}
    assert cells == {
        "leaf1": ("proven", ""),
        "leaf2": ("not proven", "leaf2 offers no FEC counters"),
        "spine1": ("not proven", "no measurement of fec.pre_fec_ber (test_pre_fec_ber did not "
                                 "run for it)"),
    }
    assert doc["verdict"]["verdict"] == "INCOMPLETE"
    coverage = [r for r in allure_results_of(results_dir) if r["name"].startswith("coverage:")]
    assert [r["status"] for r in coverage] == ["broken"]
    props = (results_dir / "environment.properties").read_text()
    assert "labtest.verdict=INCOMPLETE" in props


def test_a_lab_run_with_waivers_passes(pytester: Any) -> None:

    write_lab(pytester.path, faulty=False, tests=NOT_PROVEN_TESTS)
    (pytester.path / "requirements.yaml").write_text(REQUIREMENTS)
    (pytester.path / "limits.yaml").write_text(LIMITS + WAIVERS)
    results_dir = pytester.path / "results"
    result = run_inprocess(pytester, "--testbed", "tb.yaml", "--alluredir", str(results_dir))
    result.assert_outcomes(passed=1, skipped=1)
    doc = json.loads((results_dir / "labtest-results.json").read_text())
    assert doc["verdict"]["verdict"] == "PASS", doc["verdict"]["reasons"]
    assert doc["limits"]["waivers"][0]["source"] == "test plan rev A"
    assert [r["status"] for r in allure_results_of(results_dir)
            if r["name"].startswith("coverage:")] == ["passed"]


def allure_results_of(results_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(results_dir.glob("*-result.json"))]


def test_allure_marks_the_consequences_of_a_root_cause(tmp_path: Path) -> None:
    nodeid = "suites/congestion/test_congestion.py::test_incast[host1]"
    own = tmp_path / "abc-result.json"
    own.write_text(json.dumps({"name": "test_incast[host1]", "status": "failed", "labels": [
        {"name": results.NODEID_LABEL, "value": nodeid}]}))
    other = tmp_path / "def-result.json"
    other.write_text(json.dumps({"name": "test_no_pause_storm", "status": "failed", "labels": [
        {"name": results.NODEID_LABEL, "value": "x::test_no_pause_storm"}]}))
    cause = {"cause": "PFC storm at leaf4:Ethernet16 (from host7:eth0)", "kind": "storm",
             "culprit": "leaf4:Ethernet16", "evidence": ["idle_pfc_rx_frames ... is FAIL"],
             "tests": ["x::test_no_pause_storm"], "consequences": [nodeid]}
    assert results.label_consequences(tmp_path, {"verdict": {"root_causes": [cause]}}) == 1
    labels = {lb["name"]: lb["value"] for lb in json.loads(own.read_text())["labels"]}
    assert labels["root_cause"] == cause["cause"] and labels["tag"] == "consequence"
    assert len(json.loads(other.read_text())["labels"]) == 1


def test_a_consequence_of_a_downstream_cause_names_the_upstream_one_too() -> None:
    """A second cause the analysis suspects to be the first's doing (an ECMP share starved
    by RoCE collapsing over a lossy link beyond it): its consequences name both."""
    first = {"cause": "leaf2:Ethernet0--spine1:Ethernet8: member loss", "consequences": ["a"],
             "downstream_of": ""}
    second = {"cause": "leaf1: roce.ecmp_share_deviation", "consequences": ["b"],
              "downstream_of": "leaf2:Ethernet0--spine1:Ethernet8"}
    second["tests"] = ["c"]  # its own evidence (a victim flow's port on leaf1)
    texts = results.consequence_texts([first, second])
    assert texts["a"] == first["cause"]
    assert texts["b"] == (f"{second['cause']}; perhaps itself a consequence of "
                          "leaf2:Ethernet0--spine1:Ethernet8")
    assert results.upstream_of_evidence([first, second]) == {
        "c": "leaf2:Ethernet0--spine1:Ethernet8"}
