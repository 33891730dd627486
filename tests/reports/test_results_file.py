"""A results directory that is not a labtest run is refused with why, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtest.reports import RESULTS_FILE
from labtest.reports.results import SCHEMA, ResultsError, load, load_typed, write


@pytest.mark.parametrize(("text", "why"), [
    ("[]", "a JSON list, not a labtest results object"),
    ('"run"', "a JSON str, not a labtest results object"),
    ('{"schema": "labtest-results/0"}', "schema 'labtest-results/0', expected"),
    ("{", "unreadable"),
])
def test_a_file_that_is_no_run_is_refused_with_why(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / RESULTS_FILE).write_text(text)
    with pytest.raises(ResultsError, match=why):
        load(tmp_path)


RUN = {"started_utc": "2026-12-05T10:00:00Z", "finished_utc": "2026-12-05T10:01:00Z",
       "user": "lab", "host": "bench1", "labtest_version": "0.1", "emulated": True}


def test_a_run_of_this_schema_is_read(tmp_path: Path) -> None:
    doc = {"schema": SCHEMA, "run": RUN, "tests": []}
    (tmp_path / RESULTS_FILE).write_text(json.dumps(doc))
    assert load(tmp_path) == doc
    assert load_typed(tmp_path).run.host == "bench1"


@pytest.mark.parametrize(("change", "where"), [
    ({"run": None}, "run: Input should be a valid dictionary"),
    ({"tests": [{"nodeid": "a::b", "name": "b", "outcome": "green"}]},
     "tests[0].outcome: Input should be 'passed', 'failed', 'broken' or 'skipped'"),
    ({"tests": [{"nodeid": "a::b", "name": "b", "outcome": "failed", "measurements": [
        {"name": "ber", "value": 1e-9, "verdict": "FAIL", "labels": {"port": 1}}]}]},
     "tests[0].measurements[0].labels.port: Input should be a valid string"),
    ({"verdict": {"verdict": "GREEN", "coverage": {}}},
     "verdict.verdict: Input should be 'PASS', 'INCOMPLETE' or 'FAIL'"),
    ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
])
def test_a_document_of_this_schema_that_breaks_its_model_is_refused_where_it_does(
        tmp_path: Path, change: dict[str, object], where: str) -> None:
    (tmp_path / RESULTS_FILE).write_text(json.dumps({"schema": SCHEMA, "run": RUN, **change}))
    with pytest.raises(ResultsError) as info:
        load(tmp_path)
    assert where in str(info.value), str(info.value)


def test_a_writers_slip_is_written_and_raised(tmp_path: Path) -> None:
    """The run is not lost (the file is there) and the slip is loud, where it is."""
    doc = {"schema": SCHEMA, "run": {**RUN, "emulated": "maybe"}, "tests": []}
    with pytest.raises(ResultsError, match=r"written, but .* run\.emulated"):
        write(tmp_path, doc)
    assert json.loads((tmp_path / RESULTS_FILE).read_text())["run"]["emulated"] == "maybe"


def test_the_json_schema_in_docs_is_the_models() -> None:
    """docs/results-schema.json is what ``python -m labtest.reports.model`` writes now."""
    from labtest.reports.model import json_schema

    docs = Path(__file__).resolve().parents[2] / "docs" / "results-schema.json"
    assert json.loads(docs.read_text(encoding="utf-8")) == json_schema(), (
        "regenerate: python -m labtest.reports.model docs/results-schema.json")
