"""Two pytest sessions (two runners) sharing one PostgreSQL lease store never hold one device."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTBED = """\
name: floor
devices:
  sw1: {role: leaf, driver: quiet-switch, address: 127.0.0.1}
  sw2: {role: leaf, driver: quiet-switch, address: 127.0.0.2}
"""
CONFTEST = """
from labtest.registry import register_driver


class QuietSwitch:
    def __init__(self, name, device, testbed):
        self.name = name


register_driver("quiet-switch", QuietSwitch)
"""
SUITE = """
import os
import time
from pathlib import Path

import pytest

WHO = os.environ["RUN_TAG"]


@pytest.mark.parametrize("turn", range(3))
@pytest.mark.parametrize("device_name", ["sw1", "sw2"])
def test_drive(lab, device_name, turn):
    assert lab.device(device_name).name == device_name
    start = time.time()
    with open(Path(__file__).parent / "drives.log", "a") as log:
        log.write(f"start {WHO} {device_name} {start}\\n")
    time.sleep(0.4)
    # A holds the lab until B is seen waiting for it (bounded): however slowly B starts on
    # a loaded machine, it must find the lab held
    release = Path(__file__).parent / "release"
    deadline = time.monotonic() + 60
    while WHO == "A" and not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(Path(__file__).parent / "drives.log", "a") as log:
        log.write(f"drive {WHO} {device_name} {start} {time.time()}\\n")
"""


def _start(project: Path, who: str, store: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--testbed",
               "tb.yaml", "--lease-store", store, "--alluredir", str(project / f"results-{who}")]
    with open(project / f"out-{who}.txt", "w") as out:  # the child keeps its own handle
        return subprocess.Popen(command, cwd=project, env={**os.environ, "RUN_TAG": who},
                                stdout=out, stderr=subprocess.STDOUT, text=True)


def _finish(run: subprocess.Popen, project: Path, who: str) -> str:
    try:
        run.wait(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait(timeout=10)
        pytest.fail(f"inner run did not finish:\n{(project / f'out-{who}.txt').read_text()}")
    out = (project / f"out-{who}.txt").read_text()
    assert run.returncode == 0, out
    return out


def test_two_sessions_on_one_server_never_overlap_and_the_second_is_told_who(
    tmp_path: Path, pg_url: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "tb.yaml").write_text(TESTBED)
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_drive.py").write_text(SUITE)
    log = project / "drives.log"
    a = _start(project, "A", pg_url)
    deadline = time.monotonic() + 90
    while not (log.exists() and "start A" in log.read_text()):  # A holds the lab now
        assert a.poll() is None and time.monotonic() < deadline, "run A never started"
        time.sleep(0.05)
    b = _start(project, "B", pg_url)
    said = project / "out-B.txt"
    while "labtest: waiting" not in said.read_text():  # B asked for the lab A holds
        assert b.poll() is None and time.monotonic() < deadline, said.read_text()
        time.sleep(0.05)
    (project / "release").touch()
    out_a, out_b = _finish(a, project, "A"), _finish(b, project, "B")
    drives = [line.split() for line in log.read_text().splitlines() if line.startswith("drive")]
    assert sorted(d[1] for d in drives) == ["A"] * 6 + ["B"] * 6
    end_a = max(float(d[4]) for d in drives if d[1] == "A")
    start_b = min(float(d[3]) for d in drives if d[1] == "B")
    assert start_b >= end_a  # B drove nothing until A's session was over
    waiting = [ln for ln in out_b.splitlines() if ln.startswith("labtest: waiting")]
    assert waiting, out_b
    assert f"pid {a.pid}" in waiting[0] and "floor/sw1" in waiting[0]
    assert "6 passed" in out_a and "6 passed" in out_b
