"""The run's verdict is made in one place and every consumer shows that one (issue 38).

``labtest.reports.results.verdict_record`` computes the verdict and the root causes once
(from ``coverage.run_verdict`` and ``rootcause.root_causes``); the CLI's table, Allure's
environment and the sign-off read the record. Change the verdict there and each shows the
change: none of them derives a verdict of its own from the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_coverage_report import document

from labtest.measure import coverage, rootcause
from labtest.measure.rootcause import RootCause
from labtest.reports import results, signoff
from labtest.reports.pytest_plugin import environment
from labtest.run import format_table, verdict_table

REASON = "a verdict decided in one place, for this test"
CAUSE = RootCause("leaf9:Ethernet9: the cause decided in one place", "fault", "leaf9:Ethernet9")


def _consumers(doc: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """What each consumer shows of the document: the CLI's table, Allure, the sign-off."""
    table = verdict_table(doc["tests"], results.verdict_of(doc))
    props = environment(doc)
    res = tmp_path / "results"
    res.mkdir()
    results.write(res, doc)
    bundle = signoff.build(res, tmp_path / "out")
    return {
        "cli": format_table(table, 1.0),
        "allure": "\n".join(f"{k}={v}" for k, v in props.items()),
        "signoff": f"{bundle.doc['verdict']} {bundle.doc['verdict_reasons']} "
                   f"{[c['cause'] for c in bundle.doc['root_causes']]}",
        "signoff_html": bundle.html.read_text(encoding="utf-8"),
    }


def test_every_consumer_shows_the_verdict_made_in_one_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = document(hole=False)  # every cell proven: PASS as computed
    assert results.verdict_record(doc)["verdict"] == "PASS"
    real = coverage.run_verdict

    def decided(d: Any, cov: Any = None) -> coverage.RunVerdict:
        found = real(d, cov)
        return coverage.RunVerdict(coverage.FAIL, (REASON,), found.coverage)

    monkeypatch.setattr(coverage, "run_verdict", decided)
    monkeypatch.setattr(rootcause, "root_causes", lambda d: [CAUSE])
    doc["verdict"] = results.verdict_record(doc)  # as the plugin does, once
    shown = _consumers(doc, tmp_path)
    assert "FAIL" in shown["cli"] and CAUSE.cause in shown["cli"], shown["cli"]
    assert "labtest.verdict=FAIL" in shown["allure"], shown["allure"]
    assert f"labtest.root_cause.1={CAUSE.cause}" in shown["allure"], shown["allure"]
    assert shown["signoff"].startswith("FAIL") and REASON in shown["signoff"]
    assert CAUSE.cause in shown["signoff"], shown["signoff"]
    assert "v-FAIL" in shown["signoff_html"] and CAUSE.cause in shown["signoff_html"]
    # and none of them recomputes it: the tests, all passed, say nothing of FAIL
    assert all(t["outcome"] == "passed" for t in doc["tests"])
