"""The plugin reserves the testbed: two runs never drive one device at once, a lost lease stops."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from labtest import reservation as r
from labtest.emulation.lab import EmulatedLab, Served, register_personality
from labtest.emulation.sshserver import FunctionHandler
from labtest.testbed import load_testbed, model

BAIT_S = 3.0  # how long a run's first command waits for the other run to show up
HOLD_S = 0.1

# --- emulated devices that record who drove them when ------------------------------------


@dataclass(frozen=True)
class Drive:
    device: str
    who: str
    start_s: float
    end_s: float


class Recorder:
    """Every ``hold WHO`` command: which device, which run, from when to when.

    The very first command waits (up to BAIT_S) for a command from another run:
    without reservation the other run gets in and the two overlap for certain;
    with it, the other run is kept waiting for the whole bait.
    """

    def __init__(self) -> None:
        self.drives: list[Drive] = []
        self.cond = threading.Condition()
        self.first: str | None = None
        self.started_by: set[str] = set()

    def handler(self, device: str):
        def run(command: str) -> str:
            verb, who = command.split()
            assert verb == "hold"
            start = time.monotonic()
            with self.cond:
                bait = self.first is None
                if bait:
                    self.first = who
                self.started_by.add(who)
                self.cond.notify_all()
                if bait:
                    self.cond.wait_for(lambda: self.started_by != {who}, timeout=BAIT_S)
            time.sleep(HOLD_S)
            with self.cond:
                self.drives.append(Drive(device, who, start, time.monotonic()))
            return "held\n"

        return run

    def overlaps(self) -> list[tuple[Drive, Drive]]:
        out = []
        for a in self.drives:
            for b in self.drives:
                same_device = a.who < b.who and a.device == b.device
                if same_device and a.start_s < b.end_s and b.start_s < a.end_s:
                    out.append((a, b))
        return out


RECORDER = Recorder()


def recording_switch(fabric, name, device) -> Served:
    return Served(cli=lambda: FunctionHandler(RECORDER.handler(name), prompt=f"{name}# "))


register_personality("rec-switch", recording_switch)

CONFTEST = """
from labtest import connect
from labtest.registry import register_driver


class RecSwitch:
    def __init__(self, name, device, testbed):
        self.name = name
        self.cli = connect.cli(name, device)

    def hold(self, who):
        assert self.cli.exec(f"hold {who}", timeout_s=20).stdout.strip() == "held"

    def close(self):
        self.cli.close()


register_driver("rec-switch", RecSwitch)
"""
SUITE = """
import os
import pytest

WHO = os.environ["RUN_TAG"]


@pytest.mark.parametrize("turn", range(2))
@pytest.mark.parametrize("device_name", ["sw1", "sw2"])
def test_hold(lab, device_name, turn):
    lab.device(device_name).hold(WHO)
"""


@pytest.fixture
def shared_lab(tmp_path: Path):
    """Two recording switches in an emulated lab, and a project that drives them."""
    global RECORDER
    RECORDER = Recorder()
    tb = model.Testbed.model_validate(
        {
            "name": "shared",
            "devices": {n: {"role": "leaf", "driver": "rec-switch"} for n in ("sw1", "sw2")},
        }
    )
    lab = EmulatedLab(tb, workdir=tmp_path / "lab")
    lab.start()
    lab.write_testbed(tmp_path / "lab" / "shared.yaml")
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_shared.py").write_text(SUITE)
    yield project, tmp_path / "lab" / "shared.yaml", tmp_path / "leases.db"
    lab.stop()


def start_run(project: Path, testbed: Path, who: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "RUN_TAG": who}
    # each run its own results folder: two runs emptying one folder collide on the files,
    # which is not what these tests are about (the devices they drive are)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "--testbed", str(testbed), "--alluredir", str(project / f"results-{who}"),
               *args]  # fmt: skip
    return subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(run: subprocess.Popen) -> str:
    try:
        out, _ = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        out, _ = run.communicate(timeout=10)
        pytest.fail(f"inner run did not finish:\n{out}")
    assert run.returncode == 0, out
    return out


def test_two_reserving_runs_never_drive_one_device_at_once(shared_lab) -> None:
    project, testbed, store = shared_lab
    a = start_run(project, testbed, "A", "--lease-store", str(store))
    b = start_run(project, testbed, "B", "--lease-store", str(store))
    outputs = {"A": finish(a), "B": finish(b)}
    pids = {"A": a.pid, "B": b.pid}
    assert RECORDER.overlaps() == []
    assert sorted(d.who for d in RECORDER.drives) == ["A"] * 4 + ["B"] * 4
    first = RECORDER.first
    second = "B" if first == "A" else "A"
    # the second run was kept out for the whole bait, and was told by whom
    waiting = [ln for ln in outputs[second].splitlines() if ln.startswith("labtest: waiting")]
    assert waiting, outputs[second]
    assert f"pid {pids[first]}" in waiting[0] and "shared/sw1" in waiting[0]
    first_end = max(d.end_s for d in RECORDER.drives if d.who == first)
    assert min(d.start_s for d in RECORDER.drives if d.who == second) >= first_end


def test_without_reservation_the_same_two_runs_collide(shared_lab) -> None:
    """The control: the recorder does see overlaps when nothing keeps the runs apart."""
    project, testbed, _ = shared_lab
    a = start_run(project, testbed, "A", "--no-reserve")
    b = start_run(project, testbed, "B", "--no-reserve")
    finish(a), finish(b)
    assert RECORDER.overlaps(), RECORDER.drives


# --- in-process runs: a lost lease, a busy lab -------------------------------------------

TESTBED = """\
name: tb
devices:
  sw1: {role: leaf, driver: touch-switch, address: 127.0.0.1}
  sw2: {role: leaf, driver: touch-switch, address: 127.0.0.2}
"""
TOUCH_CONFTEST = """
from pathlib import Path
from labtest.registry import register_driver


class TouchSwitch:
    def __init__(self, name, device, testbed):
        self.name = name

    def touch(self):
        with open(Path(__file__).parent / "touched.txt", "a") as out:
            out.write(self.name + "\\n")


register_driver("touch-switch", TouchSwitch)
"""


@pytest.fixture
def touch_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", tb=TESTBED)
    pytester.makeconftest(TOUCH_CONFTEST)
    return pytester


def touched(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "touched.txt"
    return path.read_text().split() if path.exists() else []


def test_a_run_that_loses_its_lease_stops_before_the_next_test(touch_project, tmp_path) -> None:
    store = tmp_path / "leases.db"
    touch_project.makepyfile(
        test_lost=f"""
        import sqlite3

        def test_1_lease_taken_away(lab):
            lab.device("sw1").touch()
            with sqlite3.connect({str(store)!r}) as db:  # as an expiry + takeover would
                db.execute("DELETE FROM members")

        def test_2_would_touch(lab):
            lab.device("sw2").touch()

        def test_3_would_touch(lab):
            lab.device("sw1").touch()
        """
    )
    result = touch_project.runpytest_inprocess("--testbed", "tb.yaml", "--lease-store", str(store))
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*LeaseLost*lease lost, stopping before touching the devices again*",
         "*Interrupted: labtest:*lease lost*"]
    )  # fmt: skip
    assert touched(touch_project) == ["sw1"]


def test_a_busy_lab_fails_fast_naming_the_holder(touch_project, tmp_path, monkeypatch) -> None:
    from labtest import installed

    monkeypatch.setitem(installed._local, "touch-switch", object)  # as the project's conftest
    store = r.SqliteLeaseStore(tmp_path / "leases.db")
    touch_project.makepyfile(test_busy="def test_touch(lab):\n    lab.device('sw1').touch()\n")
    keys = r.testbed_keys(load_testbed(touch_project.path / "tb.yaml"))
    with r.reserve(keys, store=store, run_id="the-other-run"):
        start = time.monotonic()
        result = touch_project.runpytest_inprocess(
            "--testbed", "tb.yaml", "--lease-store", str(store.path), "--reserve-timeout", "0"
        )
        assert time.monotonic() - start < 10
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*DevicesBusy*tb/sw1*held by *pid {os.getpid()}*the-other-run*"])
    section = str(result.stdout).split("ERROR at setup of test_touch")[1].split("=====")[0]
    section = section.split("\nlabtest: results in")[0]  # the error, not the run's summary
    assert "reservation.py" not in section, section  # the holder, not the reservation's frames
    assert len([line for line in section.splitlines() if line.strip()]) <= 8, section
    assert touched(touch_project) == []
    # with the lab free again, the same run goes ahead
    again = touch_project.runpytest_inprocess(
        "--testbed", "tb.yaml", "--lease-store", str(store.path)
    )
    again.assert_outcomes(passed=1)
    assert touched(touch_project) == ["sw1"]


def test_a_corrupt_lease_store_stops_the_session_once(touch_project, tmp_path) -> None:
    store = tmp_path / "leases.db"
    store.write_bytes(b"this is not a database at all" * 100)
    store.chmod(0o600)
    touch_project.makepyfile(
        test_corrupt="def test_1(lab):\n    lab.device('sw1').touch()\n"
        "def test_2(lab):\n    lab.device('sw2').touch()\n"
    )
    result = touch_project.runpytest_inprocess("--testbed", "tb.yaml", "--lease-store", str(store))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = str(result.stdout)
    assert out.count("lease store is corrupt") == 1, out
    assert "sqlite3.DatabaseError" not in out and "Traceback" not in out
    assert touched(touch_project) == []
