"""The suite tests: the suites' own helper modules on sys.path, and the shared lab runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for family in ("link", "transceiver", "cabling"):
    path = str(REPO / "suites" / family)
    if path not in sys.path:
        sys.path.insert(0, path)

from suite_runs import LabRuns  # noqa: E402  (after the path set-up above)


@pytest.fixture(scope="session")
def lab_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabRuns]:
    runs = LabRuns(tmp_path_factory.mktemp("suite-runs"))
    yield runs
    runs.close()
