"""The sign-off bundle: verdict first, culprits visible, evidence hashed and verifiable."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import LabRun, run_lab

from labtest.cli import main
from labtest.reports import signoff


def _bundle(results_dir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()  # drop what came before (a child pytest run prints too)
    rc = main(["report", str(results_dir), "-o", str(out), "--no-allure"])
    return rc, capsys.readouterr().out


def test_faulty_run_signoff(
    faulty_run: LabRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "signoff"
    rc, text = _bundle(faulty_run.results_dir, out, capsys)
    assert rc == 1  # verdict FAIL
    assert text.splitlines()[:5] == [
        "FAIL: 1 failed, 1 broken, 2 passed",
        "  root cause 1: spine1 could not be asked: labtest.errors.TransportTimeout: [spine1] "
        "no SSH banner after 10.0 s",
        "  root cause 2: leaf2:Ethernet8: pre_fec_ber 0.00031 outside its limit",
        "  FAILED  test_acceptance.py::test_pre_fec_ber[leaf2]: "
        "pre_fec_ber device=leaf2 port=Ethernet8 = 0.00031",
        "  BROKEN  test_acceptance.py::test_spine_facts: "
        "labtest.errors.TransportTimeout: [spine1] no SSH banner after 10.0 s",
    ]

    doc = json.loads((out / "signoff.json").read_text())
    assert doc["verdict"] == "FAIL"
    assert [(a["outcome"], a["category"]) for a in doc["attention"]] == [
        ("failed", "product-failure"), ("broken", "infrastructure")]
    (culprit,) = doc["attention"][0]["culprits"]
    assert culprit["labels"] == {"device": "leaf2", "port": "Ethernet8"}
    assert [t["outcome"] for t in doc["tests"]] == ["failed", "broken", "passed", "passed"]
    assert [(c["criterion"], c["verdict"], c["count"]) for c in doc["criteria"]] == [
        ("fec.pre_fec_ber", "FAIL", 2), ("optics.rx_power_dbm", "PASS", 4)]
    assert doc["measurements"][0]["verdict"] == "FAIL"
    assert doc["suites"] == [{"suite": "test_acceptance", "verdict": "FAIL", "failed": 1,
                              "broken": 1, "skipped": 0, "passed": 2}]
    evidence = {e["path"]: e["sha256"] for e in doc["evidence"]}
    results_json = faulty_run.results_dir / "labtest-results.json"
    assert evidence["evidence/labtest-results.json"] == hashlib.sha256(
        results_json.read_bytes()).hexdigest()
    assert doc["run"]["user"] and doc["run"]["host"] and doc["run"]["started_utc"]

    html = (out / "signoff.html").read_text()
    assert "<title>FAIL: labtest sign-off lab-b12</title>" in html
    assert "class='banner v-FAIL'" in html
    culprit_at = html.index("<b>pre_fec_ber</b> device=leaf2 port=Ethernet8: <b>0.00031</b>")
    broken_at = html.index("labtest.errors.TransportTimeout: [spine1] no SSH banner", culprit_at)
    # the root causes lead; then failed, then broken, and all before any table
    causes = html.index("id='causes'")
    assert causes < html.index("<h3>1. spine1 could not be asked: labtest.errors.Transport") < (
        html.index("<h3>2. leaf2:Ethernet8: pre_fec_ber 0.00031")) < html.index("id='attention'")
    assert html.index("FAILED</span>") < culprit_at < broken_at < html.index("id='suites'")
    assert "limit x &lt;= 2.4e-05" in html and "acceptance pre-FEC BER ceiling" in html
    assert "data:image/png;base64," in html  # the plot travels inside the page
    assert "FEC_PRE_BER 3.10e-04" in html  # and the raw output behind the measurement
    assert "ssh: connect to host 127.0.0.1 port 22: timed out" in html
    for fact in ("SN-LEAF2", "QDD-400G-DR4", "leaf2:Ethernet8", "acceptance-400g-demo",
                 doc["limits"]["sha256"], doc["testbed"]["sha256"], "TransportTimeout: [spine1]"):
        assert fact in html


def test_verify_detects_changed_missing_and_added_files(
    faulty_run: LabRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "signoff"
    _bundle(faulty_run.results_dir, out, capsys)
    assert main(["report", "--verify", str(out)]) == 0
    assert capsys.readouterr().out.startswith("OK: ")

    evidence = out / "evidence" / "labtest-results.json"
    evidence.write_text(evidence.read_text().replace('"FAIL"', '"PASS"'))
    (out / "evidence" / "categories.json").unlink()
    (out / "evidence" / "extra.txt").write_text("slipped in later")
    assert main(["report", "--verify", str(out)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert Counter(line.split()[0] for line in lines) == {
        "MODIFIED": 1, "MISSING": 1, "UNLISTED": 1}
    assert "MODIFIED  evidence/labtest-results.json" in lines
    assert "MISSING   evidence/categories.json" in lines
    assert "UNLISTED  evidence/extra.txt" in lines


def test_healthy_run_passes(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, results_dir = run_lab(pytester, faulty=False)
    result.assert_outcomes(passed=4)
    rc, text = _bundle(results_dir, tmp_path / "ok", capsys)
    assert (rc, text.splitlines()[0]) == (0, "PASS: 4 passed")
    html = (tmp_path / "ok" / "signoff.html").read_text()
    assert "class='banner v-PASS'" in html and "No test failed and none was broken." in html


def test_report_errors_exit_2(
    faulty_run: LabRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nothing-here"), "--no-allure"]) == 2
    assert "no labtest-results.json" in capsys.readouterr().err
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["report", str(faulty_run.results_dir), "-o", str(foreign), "--no-allure"]) == 2
    assert "did not write (notes.txt)" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert main(["report", "--verify", str(tmp_path)]) == 2


@pytest.mark.parametrize(
    ("counts", "verdict"),
    [
        ({"passed": 3, "skipped": 2}, "PASS"),
        ({"passed": 3, "broken": 1}, "INCOMPLETE"),
        ({"failed": 1, "broken": 1}, "FAIL"),
        ({"skipped": 2}, "INCOMPLETE"),
        ({}, "INCOMPLETE"),
    ],
)
def test_overall_verdict(counts: dict[str, int], verdict: str) -> None:
    assert signoff.overall_verdict(Counter(counts))[0] == verdict
