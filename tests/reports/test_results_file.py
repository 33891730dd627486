"""A results directory that is not a labtest run is refused with why, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.reports import RESULTS_FILE
from labtest.reports.results import SCHEMA, ResultsError, load


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


def test_a_run_of_this_schema_is_read(tmp_path: Path) -> None:
    (tmp_path / RESULTS_FILE).write_text(f'{{"schema": "{SCHEMA}", "tests": []}}')
    assert load(tmp_path) == {"schema": SCHEMA, "tests": []}
