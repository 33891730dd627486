"""Emulated suite runs for the suite tests (a helper module, not a conftest).

End-to-end tests run pytest on ``suites/<family>`` against an emulated lab (a
copy of the default leaf-spine testbed, with faults) in a child process and
judge its ``labtest-results.json``. Runs are shared by the tests that need
them and start together, so their waits (watch windows, DOM intervals) overlap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"
RUN_TIMEOUT_S = 420.0

#: the emulated labs the suite tests run against: faults, time scale, suites, extra args
LABS: dict[str, dict[str, Any]] = {
    "healthy": {"faults": [], "suites": ["link", "transceiver", "cabling"], "runner": True},
    # one fault per link-family kind on distinct links, and a switch whose management
    # plane is dead (short SSH timeouts keep the run quick): one run proves each culprit
    "link_faults": {
        "faults": [
            {"kind": "dirty_connector", "target": "leaf1:Ethernet0--spine1:Ethernet0"},
            {"kind": "marginal_lane", "target": "leaf2:Ethernet0"},
            {"kind": "flapping_link", "target": "leaf4:Ethernet0--spine1:Ethernet24"},
            {"kind": "unreachable_device", "target": "leaf3"},
        ],
        "address": {"leaf3": "127.0.0.1"},  # the emulator replaces port and password
        "ssh": {"leaf3": {"username": "admin", "password": "replaced-by-the-emulator",
                          "timeout_s": 2, "command_timeout_s": 2}},
        "suites": ["link", "transceiver", "cabling"],
        "args": ["--no-inventory"],
    },
    # faults placed where the matrix does not place them (issues 14 and 23): a 2.5 dB dirty
    # connector on an EOS-EOS link, a flapping host link, a downgraded switch of a
    # two-member vendor group
    "placed_faults": {
        "faults": [
            {"kind": "dirty_connector", "target": "leaf3:Ethernet2/1--spine2:Ethernet3/1",
             "params": {"loss_db": 2.5}},
            {"kind": "flapping_link", "target": "host2:eth0",
             "params": {"period_s": 15, "down_s": 2}},
            {"kind": "firmware_mismatch", "target": "leaf3", "params": {"version": "4.1.0"}},
        ],
        "suites": ["link", "transceiver"],
        "args": ["--no-inventory"],
    },
    # optics faults need virtual time to show (drift, heating): time_scale 10
    "optic_faults": {
        "time_scale": 10,
        "faults": [
            {"kind": "failing_laser", "target": "host1:eth0",
             "params": {"drift_db_per_hour": 10}},
            {"kind": "hot_module", "target": "leaf2:Ethernet8"},
            {"kind": "unapproved_optic", "target": "leaf4:Ethernet0"},
            {"kind": "firmware_mismatch", "target": "spine1:Ethernet8"},
            {"kind": "firmware_mismatch", "target": "leaf2"},
            {"kind": "miswired", "target": "host3:eth0--leaf2:Ethernet16",
             "params": {"other": "host4:eth0--leaf2:Ethernet24"}},
        ],
        "suites": ["link", "transceiver", "cabling"],
        "args": ["--no-inventory"],
    },
}


@dataclass
class RunResult:
    name: str
    returncode: int
    output: str
    tests: dict[str, dict[str, Any]]  # nodeid -> labtest-results entry
    wall_s: float

    def select(self, suite: str, name_part: str = "") -> list[dict[str, Any]]:
        return [t for t in self.tests.values()
                if t["suite"] == suite and name_part in t["name"]]

    def one(self, name: str) -> dict[str, Any]:
        hits = [t for t in self.tests.values() if t["name"] == name]
        assert len(hits) == 1, f"{self.name}: {name}: {len(hits)} results\n{self.output[-3000:]}"
        return hits[0]


class LabRuns:
    """Child pytest runs, started on demand (several at once) and awaited by name."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._procs: dict[str, tuple[subprocess.Popen[str], Path, float]] = {}
        self._done: dict[str, RunResult] = {}

    def start(self, *names: str) -> None:
        for name in names:
            if name not in self._procs:
                self._procs[name] = self._launch(name)

    def result(self, name: str) -> RunResult:
        self.start(name)
        if name not in self._done:
            proc, results_dir, t0 = self._procs[name]
            try:
                out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                pytest.fail(f"run {name!r} did not finish in {RUN_TIMEOUT_S:g} s:\n{out[-3000:]}")
            doc_path = results_dir / "labtest-results.json"
            assert doc_path.is_file(), f"run {name!r} wrote no results:\n{out[-4000:]}"
            doc = json.loads(doc_path.read_text())
            tests = {t["nodeid"]: t for t in doc["tests"]}
            self._done[name] = RunResult(name, proc.returncode, out, tests, time.monotonic() - t0)
        return self._done[name]

    def close(self) -> None:
        for proc, _, _ in self._procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def _launch(self, name: str) -> tuple[subprocess.Popen[str], Path, float]:
        spec = LABS[name]
        testbed = write_testbed(self.workdir / f"{name}.yaml", spec)
        results_dir = self.workdir / f"{name}-results"
        if spec.get("runner"):  # the healthy run goes through `labtest run` itself
            cmd = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(testbed),
                   "--alluredir", str(results_dir)]
            cmd += [a for s in spec["suites"] for a in ("--suite", s)]
            cmd += ["--", "-q", *spec.get("args", [])]
        else:
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                   *(str(REPO / "suites" / s) for s in spec["suites"]),
                   "--testbed", str(testbed), "--emulate", "--alluredir", str(results_dir),
                   *spec.get("args", [])]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        return proc, results_dir, time.monotonic()


def write_testbed(path: Path, spec: dict[str, Any]) -> Path:
    """A copy of the default leaf-spine testbed with ``spec``'s faults and settings."""
    doc = yaml.safe_load(LEAFSPINE.read_text())
    doc["limits"] = str(LIMITS)
    doc["emulation"]["faults"] = spec.get("faults", [])
    doc["emulation"]["time_scale"] = spec.get("time_scale", doc["emulation"]["time_scale"])
    if "settings" in spec:  # run parameters over the suites' own (``suite_settings:``)
        settings = path.with_suffix(".settings.yaml")
        settings.write_text(yaml.safe_dump(spec["settings"]))
        doc["suite_settings"] = str(settings)
    for device, address in spec.get("address", {}).items():
        doc["devices"][device]["address"] = address
    for device, ssh in spec.get("ssh", {}).items():
        doc["devices"][device]["ssh"] = ssh
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def outcomes(tests: list[dict[str, Any]]) -> dict[str, str]:
    return {t["name"]: t["outcome"] for t in tests}
