"""pytest-xdist with two workers gives the same verdict per test as a serial run.

The suite runs against an emulated lab with faults, so its verdicts are a mix
(passed, failed, broken, skipped); device groups keep every device's tests on
one worker. Verdicts are collected per test id from the reports, on the
controller when xdist runs. The lab is started once, here, and both runs
drive it through the testbed file it writes; they reserve it, so the two xdist
workers also show that they share one reservation instead of waiting for each
other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labtest.emulation.lab import EmulatedLab
from labtest.testbed import load_testbed

TESTBED = """\
name: verdicts
devices:
  leaf1: &sw
    role: leaf
    driver: sonic
    address: 192.0.2.1
    ssh: {username: admin, password: replaced-by-the-emulator, timeout_s: 2, command_timeout_s: 1}
  leaf2: *sw
  leaf3: *sw
  spine1: {<<: *sw, role: spine}
links:
  - {a: "leaf1:Ethernet0", b: "spine1:Ethernet0", speed_gbps: 400, optic: 400G-DR4, length_m: 30}
  - {a: "leaf2:Ethernet0", b: "spine1:Ethernet8", speed_gbps: 400, optic: 400G-DR4, length_m: 30}
  - {a: "leaf3:Ethernet0", b: "spine1:Ethernet16", speed_gbps: 400, optic: 400G-DR4, length_m: 30}
emulation:
  faults:
    - {kind: dirty_connector, target: "leaf2:Ethernet0", params: {loss_db: 4}}
    - {kind: unreachable_device, target: leaf3}
"""
CONFTEST = """
import json
import os
from pathlib import Path

VERDICTS = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        verdict = dict(report.user_properties).get("labtest_verdict", "")
        test_id = report.nodeid.split("@")[0]  # xdist appends @group to grouped tests
        VERDICTS.setdefault(test_id, []).append(f"{report.when}:{report.outcome}:{verdict}")


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):  # the controller (or a serial run)
        Path(os.environ["VERDICTS_OUT"]).write_text(json.dumps(VERDICTS, sort_keys=True))
"""
SUITE = """
import pytest

SWITCHES = ["leaf1", "leaf2", "leaf3", "spine1"]


@pytest.mark.parametrize("device_name", SWITCHES)
def test_lldp_matches_the_cabling(lab, testbed, device_name):
    seen = lab.device(device_name).lldp_neighbors()
    for link in testbed.links_of(device_name):
        here, there = link.ends if link.ends[0].device == device_name else link.ends[::-1]
        assert seen[here.port].remote_system == there.device


@pytest.mark.parametrize("device_name", SWITCHES)
def test_rx_power_above_minus_3_dbm(lab, device_name):
    optics = lab.device(device_name).transceivers()
    lowest = min(lane.rx_power_dbm for t in optics.values() for lane in t.lanes)
    assert lowest > -3.0


@pytest.mark.needs("Prbs", role="host")
def test_host_prbs(lab):
    pass
"""


def run_suite(project: Path, out: Path, *args: str) -> tuple[dict[str, list[str]], str]:
    env = {**os.environ, "VERDICTS_OUT": str(out)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--testbed", "emulated.yaml", "--lease-store", str(project / "leases.db"),
               *args]  # fmt: skip
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr  # some tests fail, by design
    return json.loads(out.read_text()), done.stdout


def test_two_workers_give_the_verdicts_of_a_serial_run(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    project = tmp_path / "project"
    project.mkdir()
    (project / "tb.yaml").write_text(TESTBED)
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_fabric.py").write_text(SUITE)
    lab = EmulatedLab(load_testbed(project / "tb.yaml"), workdir=tmp_path / "lab")
    lab.start()
    try:
        lab.write_testbed(project / "emulated.yaml")
        serial, _ = run_suite(project, tmp_path / "serial.json")
        parallel, output = run_suite(
            project, tmp_path / "xdist.json", "-n", "2", "--dist", "loadgroup"
        )
    finally:
        lab.stop()
    assert "bringing up nodes" in output and "@spine1" in output  # two workers, device groups

    assert parallel == serial
    assert serial["test_fabric.py::test_lldp_matches_the_cabling[spine1]"] == ["call:passed:"]
    assert serial["test_fabric.py::test_rx_power_above_minus_3_dbm[spine1]"] == ["call:failed:"]
    assert serial["test_fabric.py::test_rx_power_above_minus_3_dbm[leaf3]"] == [
        "call:failed:broken"
    ]
    assert serial["test_fabric.py::test_host_prbs"] == ["setup:skipped:"]
    assert sorted(map(tuple, serial.values())).count(("call:passed:",)) == 5
    assert len(serial) == 9
