"""``labtest run`` (labtest.run): the pytest command it builds, the verdict table, and a
real run of the link, transceiver and cabling suites on the healthy emulated lab."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_runs import LabRuns

from labtest import run as runner
from labtest.cli import build_parser

FAILED_TEST = {
    "nodeid": "suites/link/test_link.py::test_prbs_ber[a:p1--b:p1]",
    "name": "test_prbs_ber[a:p1--b:p1]", "suite": "link", "outcome": "failed",
    "measurements": [
        {"name": "prbs_ber_upper_bound", "verdict": "FAIL",
         "labels": {"device": "b", "port": "p1", "lane": "1", "link": "a:p1--b:p1"}},
        {"name": "prbs_ber_upper_bound", "verdict": "FAIL",
         "labels": {"device": "b", "port": "p1", "lane": "3", "link": "a:p1--b:p1"}},
        {"name": "prbs_bits", "verdict": "PASS", "labels": {"device": "a", "port": "p1"}},
    ],
}
BROKEN_TEST = {"nodeid": "x::test_cable[c]", "name": "test_cable[c]", "suite": "cabling",
               "outcome": "broken", "device": "leaf3",
               "message": "labtest.errors.TransportTimeout: [leaf3] no answer\nmore"}


def test_command_selects_suites_in_order_with_the_plugin_options(tmp_path: Path) -> None:
    opts = runner.RunOptions(suites=["cabling", "link"], limits=tmp_path / "l.yaml",
                             alluredir=tmp_path / "out", pytest_args=["-k", "leaf1"])
    cmd = runner.pytest_command(opts)
    suites = [Path(a).name for a in cmd if a.startswith(str(runner.SUITES_DIR))]
    assert suites == ["link", "cabling"]  # physical layer first, whatever the order asked
    for part in (["--testbed", str(runner.DEFAULT_TESTBED)],
                 ["--limits", str(tmp_path / "l.yaml")], ["--alluredir", str(tmp_path / "out")],
                 ["-k", "leaf1"]):
        assert any(cmd[i:i + len(part)] == part for i in range(len(cmd))), part
    # no flag: the plugin applies the one rule (the testbed's emulation: section decides)
    assert "--emulate" not in cmd and "--no-emulate" not in cmd
    assert "--no-emulate" in runner.pytest_command(runner.RunOptions(emulate=False))
    assert "--emulate" in runner.pytest_command(runner.RunOptions(emulate=True))
    assert {"link", "transceiver", "cabling"} <= set(runner.available_suites())


def test_unknown_suite_or_testbed_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(runner.RunError, match="unknown suite"):
        runner.pytest_command(runner.RunOptions(suites=["nope"]))
    with pytest.raises(runner.RunError, match="does not exist"):
        runner.pytest_command(runner.RunOptions(testbed=tmp_path / "missing.yaml"))
    argv = ["run", "--no-emulate", "--suite", "link", "--", "-x"]
    args = build_parser(argv).parse_args(argv)
    assert args.emulate is False and args.suites == ["link"] and args.pytest_args[-1] == "-x"


def test_verdict_table_counts_and_names_culprits() -> None:
    tests = [FAILED_TEST, BROKEN_TEST,
             {"name": "ok", "suite": "link", "outcome": "passed"},
             {"name": "skip", "suite": "link", "outcome": "skipped"}]
    table = runner.verdict_table(tests)
    assert list(table.suites) == ["link", "cabling"] and table.bad
    link = table.suites["link"]
    assert (link.passed, link.failed, link.broken, link.skipped) == (1, 1, 0, 1)
    text = runner.format_table(table, 12.3)
    assert "FAILED  link: test_prbs_ber[a:p1--b:p1]: b:p1 lanes 1,3" in text
    assert "BROKEN  cabling: test_cable[c]: leaf3: labtest.errors.TransportTimeout" in text
    assert text.rstrip().endswith("verdict: FAIL (12 s)")
    assert not runner.verdict_table([{"name": "ok", "suite": "link"}]).bad


def test_labtest_run_on_the_healthy_lab(lab_runs: LabRuns) -> None:
    result = lab_runs.result("healthy")  # `labtest run --suite link --suite transceiver ...`
    assert result.returncode == 0, result.output[-4000:]
    table = result.output[result.output.rindex("suite "):]
    for suite in ("link", "transceiver", "cabling"):
        assert any(line.split()[:1] == [suite] and line.split()[2:4] == ["0", "0"]
                   for line in table.splitlines()), table
    assert "verdict: PASS" in table
