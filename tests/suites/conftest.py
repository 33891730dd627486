"""The suite tests: the suites' own helper modules on sys.path, and the shared lab runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for family in ("link", "transceiver", "cabling", "latency"):
    path = str(REPO / "suites" / family)
    if path not in sys.path:
        sys.path.insert(0, path)

from suite_runs import LabRuns  # noqa: E402  (after the path set-up above)


@pytest.fixture(scope="session")
def lab_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabRuns]:
    runs = LabRuns(tmp_path_factory.mktemp("suite-runs"))
    yield runs
    runs.close()


#: suite runs on the emulated lab (about 3 min in all on a 2-core machine); they run by
#: default and in CI; LABTEST_SUITE_E2E=0 skips them for a quick inner loop
E2E_FILES = {
    "test_link_suite.py",
    "test_transceiver_suite.py",
    "test_cabling_suite.py",
    "test_roce_congestion_failover_collective.py",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import os

    if os.environ.get("LABTEST_SUITE_E2E", "1") != "0":
        return
    skip = pytest.mark.skip(reason="suite runs on the emulated lab skipped: LABTEST_SUITE_E2E=0")
    for item in items:
        if item.path.name in E2E_FILES or "lab_runs" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)
