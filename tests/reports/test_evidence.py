"""The reporting plugin: Allure results, environment, categories, labtest-results.json."""

from __future__ import annotations

import json
import re

import pytest
from conftest import (
    LabRun,
    allure_results,
    fixture_attachments,
    labels,
    run_inprocess,
    run_lab,
    write_lab,
)

from labtest.reports import allure_env


def _steps(result: dict) -> list[str]:
    return [s["name"] for s in result.get("steps", [])]


def _attachments(result: dict) -> dict[str, str]:
    return {a["name"]: a["type"] for a in result.get("attachments", [])}


def test_allure_results_separate_failed_from_broken(faulty_run: LabRun) -> None:
    assert faulty_run.returncode == 1, faulty_run.output
    res = allure_results(faulty_run.results_dir)
    assert {n: r["status"] for n, r in res.items()} == {
        "test_rx_power": "passed",
        "test_pre_fec_ber[leaf1]": "passed",
        "test_pre_fec_ber[leaf2]": "failed",
        "test_spine_facts": "broken",
    }
    failed = res["test_pre_fec_ber[leaf2]"]
    # the measurement that failed, with its limit and source, is a step ...
    assert _steps(failed) == [
        "FAIL: pre_fec_ber device=leaf2 port=Ethernet8: 0.00031 is FAIL; limit x <= 2.4e-05 "
        "(source: acceptance pre-FEC BER ceiling (domain-methodology.md sec. 6))"
    ]
    # ... the raw output and the plot are attached to the test, and the core plugin
    # attaches the measurements table when the measure fixture tears down
    assert _attachments(failed) == {
        "raw: leaf2: show interfaces counters fec-stats": "text/plain",
        "FEC histogram leaf2:Ethernet8": "image/png",
    }
    assert fixture_attachments(faulty_run.results_dir).count("measurements") == 3
    png = next(a["source"] for a in failed["attachments"] if a["type"] == "image/png")
    assert (faulty_run.results_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert labels(failed, "epic") == ["test_acceptance"]
    assert labels(failed, "feature") == ["FEC-2"]
    assert labels(failed, "story") == ["FEC-2.1"]
    assert labels(failed, "testbed") == ["lab-b12"]
    assert labels(failed, "device") == ["leaf2"]
    assert labels(failed, "port") == ["leaf2:Ethernet8"]
    assert labels(failed, "dut_serial") == ["SN-LEAF2"]
    assert labels(failed, "optic_pn") == ["QDD-400G-DR4"]
    assert {p["name"]: p["value"] for p in failed["parameters"]} == {"leaf": "'leaf2'"}

    (plan_step,) = res["test_rx_power"]["steps"]  # measurements nest in their plan step
    assert plan_step["name"] == "OPT-1.1.1 read the DOM of every leaf1 optic"
    assert [s["name"][:40] for s in plan_step["steps"]] == [
        "PASS: rx_power_dbm device=leaf1 port=Eth"] * 4

    broken = res["test_spine_facts"]
    assert broken["statusDetails"]["message"].startswith(
        "labtest.errors.TransportTimeout: [spine1] no SSH banner"
    )
    assert labels(broken, "device") == ["spine1"]
    raw = next(a for a in broken["attachments"] if a["name"] == "raw output (spine1)")
    assert "timed out" in (faulty_run.results_dir / raw["source"]).read_text()


def test_categories_and_environment(faulty_run: LabRun) -> None:
    rules = json.loads((faulty_run.results_dir / "categories.json").read_text())
    assert [r["name"] for r in rules] == [
        "Not proven (coverage holes)", "Emulation deviations", "Broken infrastructure",
        "Product failures", "Test defects",
    ]
    infra = rules[2]["messageRegex"]
    for name in ("TransportTimeout", "ConnectionRefused", "AuthFailed", "ProtocolError",
                 "ParseError", "InstrumentError"):
        assert f"labtest\\.errors\\.{name}" in infra
    # the results land where Allure (first match wins) will put them
    res = allure_results(faulty_run.results_dir)
    picked = {
        name: allure_env.match_category(rules, r["status"], r["statusDetails"]["message"])
        for name, r in res.items() if r["status"] != "passed"
    }
    assert picked == {
        "test_pre_fec_ber[leaf2]": "Product failures",
        "test_spine_facts": "Broken infrastructure",
    }
    assert allure_env.match_category(rules, "broken", "KeyError: 'x'") == "Test defects"
    assert re.fullmatch(infra, "labtest.errors.ParseError: [leaf1] bad\nline two")  # Allure 2

    props = dict(
        line.split("=", 1)
        for line in (faulty_run.results_dir / "environment.properties").read_text().splitlines()
    )
    assert props["testbed"] == "lab-b12"
    assert props["labtest.verdict"] == "FAIL"
    assert props["labtest.root_cause.1"].startswith("spine1 could not be asked")
    assert props["labtest.root_cause.2"].startswith("leaf2:Ethernet8: pre_fec_ber")
    assert props["limits.profile"] == "acceptance-400g-demo"
    assert re.fullmatch(r"[0-9a-f]{64}", props["limits.sha256"])
    assert props["labtest.version"] == "0.1.0"
    assert props["device.leaf1.os"] == "SONiC.202311.1"
    assert props["device.leaf2.serial"] == "SN-LEAF2"
    assert "device.spine1.os" not in props  # unreachable: no facts
    assert {"git.commit", "run.user", "run.host", "run.started_utc", "emulated"} <= set(props)


def test_labtest_results_json(faulty_run: LabRun) -> None:
    doc = json.loads((faulty_run.results_dir / "labtest-results.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in doc["tests"]}
    assert {n: (t["outcome"], t["category"]) for n, t in tests.items()} == {
        "test_rx_power": ("passed", None),
        "test_pre_fec_ber[leaf1]": ("passed", None),
        "test_pre_fec_ber[leaf2]": ("failed", "product-failure"),
        "test_spine_facts": ("broken", "infrastructure"),
    }
    failed = tests["test_pre_fec_ber[leaf2]"]
    assert failed["plan_ids"] == ["FEC-2.1"]
    (m,) = failed["measurements"]
    assert (m["name"], m["value"], m["verdict"], m["limit"]["high"]) == (
        "pre_fec_ber", 3.1e-4, "FAIL", 2.4e-5)
    assert {a["type"] for a in failed["attachments"]} == {"text/plain", "image/png"}
    assert len(tests["test_rx_power"]["measurements"]) == 4
    assert tests["test_spine_facts"]["device"] == "spine1"
    assert doc["inventory"]["leaf1"]["facts"]["serial"] == "SN-LEAF1"
    assert doc["inventory"]["leaf1"]["optics"]["Ethernet8"]["part_number"] == "QDD-400G-DR4"
    assert doc["inventory"]["spine1"]["error"].startswith("TransportTimeout: [spine1]")
    assert [lk["a"] for lk in doc["testbed"]["links"]][:2] == ["leaf1:Ethernet0", "leaf2:Ethernet8"]
    assert doc["limits"]["limits"]["fec.pre_fec_ber"]["source"].startswith("acceptance pre-FEC")
    assert doc["run"]["pytest_exit_status"] == 1


DEVIATION_TESTS = """
import pytest

@pytest.mark.emulation_deviation("emulator has no PFC watchdog")
@pytest.mark.judges()  # records without a limit
def test_watchdog(measure):
    measure("pfc_watchdog_storms", 1, limit=None)
    assert False, "watchdog never fired"

def test_plain():
    assert False, "a real failure"
"""


def test_emulation_deviation_only_with_emulate(pytester: pytest.Pytester) -> None:
    write_lab(pytester.path, faulty=False, tests=DEVIATION_TESTS)
    out = pytester.path / "res"
    emulated = run_inprocess(pytester, "--alluredir", str(out), "--emulate")
    emulated.stdout.fnmatch_lines(["*1 failed, 1 deviation*"])
    doc = json.loads((out / "labtest-results.json").read_text())
    outcomes = {t["name"]: (t["outcome"], t["category"]) for t in doc["tests"]}
    assert outcomes == {
        "test_watchdog": ("broken", "emulation-deviation"),
        "test_plain": ("failed", "product-failure"),
    }
    rules = json.loads((out / "categories.json").read_text())
    watchdog = allure_results(out)["test_watchdog"]
    message = watchdog["statusDetails"]["message"]
    assert "emulator has no PFC watchdog: AssertionError: watchdog never fired" in message
    assert allure_env.match_category(rules, watchdog["status"], message) == "Emulation deviations"
    assert labels(watchdog, "emulation_deviation") == ["emulator has no PFC watchdog"]

    real = run_inprocess(pytester, "--alluredir", str(out), "--clean-alluredir")
    real.assert_outcomes(failed=2)
    assert allure_results(out)["test_watchdog"]["status"] == "failed"


def test_unwritable_results_dir_is_a_clear_error(pytester: pytest.Pytester) -> None:
    blocker = pytester.path / "not-a-dir"
    blocker.write_text("a file where the results directory should go")
    write_lab(pytester.path, faulty=False)
    result = run_inprocess(pytester, "--alluredir", str(blocker / "results"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*labtest: cannot write results to */not-a-dir/results: *"])


def test_results_that_cannot_be_written_fail_the_run(pytester: pytest.Pytester) -> None:
    out = pytester.path / "res"
    (out / "labtest-results.json").mkdir(parents=True)  # the file cannot replace a directory
    result = run_inprocess(pytester, "--alluredir", str(out), "-k", "nothing")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([
        "*labtest: results NOT written*",
        "cannot write results to */res: *labtest-results.json*",
    ])


def test_lab_run_defaults_to_reports_dir(pytester: pytest.Pytester) -> None:
    stale = pytester.path / "reports" / "allure-results" / "old-result.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    write_lab(pytester.path, faulty=False, tests="def test_ok():\n    pass\n")
    run_inprocess(pytester, "--testbed", "tb.yaml").assert_outcomes(passed=1)
    out = pytester.path / "reports" / "allure-results"
    assert (out / "labtest-results.json").is_file()
    assert not stale.exists()  # the default directory only ever holds one run
    assert len(allure_results(out)) == 1


def test_collection_error_is_recorded_as_broken(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="import no_such_module_xyz\n", test_ok="def test_ok():\n    pass\n"
    )
    out = pytester.path / "res"
    result = run_inprocess(pytester, "--alluredir", str(out), "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    doc = json.loads((out / "labtest-results.json").read_text())
    bad = next(t for t in doc["tests"] if t["nodeid"] == "test_bad.py")
    assert (bad["outcome"], bad["category"]) == ("broken", "test-defect")
    assert "No module named 'no_such_module_xyz'" in bad["message"]


def test_plain_pytest_run_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    run_inprocess(pytester).assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


XDIST_TESTS = """
import pytest

@pytest.mark.parametrize("leaf", ["leaf1", "leaf2"])
@pytest.mark.judges("fec.pre_fec_ber")
def test_pre_fec_ber(device, measure, leaf):
    ber, _, _ = device(leaf).fec_counters("Ethernet8")
    measure("pre_fec_ber", ber, key="fec.pre_fec_ber", device=leaf, port="Ethernet8")

@pytest.mark.judges("optics.rx_power_dbm")
def test_rx_power(device, measure):
    for port, xcvr in device("leaf1").transceivers().items():
        for lane in xcvr.lanes:
            measure("rx_power_dbm", lane.rx_power_dbm, key="optics.rx_power_dbm",
                    device="leaf1", port=port, lane=lane.lane)

def test_spine_facts(device):
    device("spine1").facts()
"""


def test_xdist_workers_report_to_the_controller(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result, out = run_lab(pytester, "-n", "2", tests=XDIST_TESTS)
    result.assert_outcomes(passed=2, failed=1)  # plus 1 broken
    doc = json.loads((out / "labtest-results.json").read_text())
    outcomes = sorted((t["name"], t["outcome"], len(t["measurements"])) for t in doc["tests"])
    assert outcomes == [
        ("test_pre_fec_ber[leaf1]", "passed", 1),
        ("test_pre_fec_ber[leaf2]", "failed", 1),
        ("test_rx_power", "passed", 4),
        ("test_spine_facts", "broken", 0),
    ]
    assert doc["inventory"]["leaf2"]["facts"]["serial"] == "SN-LEAF2"  # read once, on gw0
