"""``labtest run`` and its pytest child under kill -9, kill -INT and Ctrl-C (bench/chaos.py).

Defects these pin: a SIGKILLed ``labtest run`` left its pytest child running the whole
suite set as an orphan (into the same results folder as the next run); ``kill -INT`` of
``labtest run`` alone was swallowed (it waited for the whole run); an interrupted run
printed the verdict table of the *previous* run still in the results folder.

The child here is a stand-in for pytest: it installs what the labtest plugin installs
(``interrupt.take_interrupts_once``), then "runs" until interrupted and writes a line per
phase, so the test sees whether its teardown ran, and ran once.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from labtest import interrupt, runs
from labtest import run as runner

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from labtest import interrupt
    log = Path(sys.argv[1])
    def note(s):
        with log.open("a") as f:
            f.write(s + "\\n")
    note("installed" if interrupt.take_interrupts_once() else "not installed")
    try:
        note("running")
        time.sleep(60)
        note("finished")
    except KeyboardInterrupt:
        note("interrupted")
        time.sleep(0.5)  # a teardown that a second interrupt would break
        note("torn down")
    """
)

PARENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from labtest import run
    status, interrupted = run._run_child([sys.executable, sys.argv[1], sys.argv[2]], Path.cwd())
    print(status, interrupted, flush=True)
    """
)


def _wait_for(path: Path, text: str, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if text in lines:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never written; log: {lines}")


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "parent.py").write_text(PARENT)
    log = tmp_path / "child.log"
    parent = subprocess.Popen(
        [sys.executable, str(tmp_path / "parent.py"), str(tmp_path / "child.py"), str(log)],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    _wait_for(log, "running")
    return parent, log


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def _child_of(pid: int) -> int:
    kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(kids) == 1, kids
    return int(kids[0])


def test_a_sigkilled_labtest_run_takes_its_child_down_through_its_teardown(
    tmp_path: Path,
) -> None:
    parent, log = _start(tmp_path)
    child = _child_of(parent.pid)
    parent.kill()
    parent.wait()
    lines = _wait_for(log, "torn down")
    assert lines == ["installed", "running", "interrupted", "torn down"]
    assert _gone(child), "the pytest child outlived its SIGKILLed parent"


def test_kill_int_of_labtest_run_alone_interrupts_the_child(tmp_path: Path) -> None:
    parent, log = _start(tmp_path)
    parent.send_signal(signal.SIGINT)
    out, _ = parent.communicate(timeout=20)
    assert out.split() == ["0", "True"]
    assert log.read_text().splitlines() == ["installed", "running", "interrupted", "torn down"]


def test_ctrl_c_to_the_process_group_is_one_interrupt(tmp_path: Path) -> None:
    """The child gets the terminal's SIGINT and its parent's: one unwind, teardown whole."""
    parent, log = _start(tmp_path)
    os.killpg(parent.pid, signal.SIGINT)
    out, _ = parent.communicate(timeout=20)
    assert out.split() == ["0", "True"]
    assert log.read_text().splitlines() == ["installed", "running", "interrupted", "torn down"]


def test_a_child_not_of_labtest_run_keeps_plain_interrupts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(interrupt.PARENT_ENV, "1" if os.getppid() != 1 else "2")
    assert interrupt.take_interrupts_once() is False
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _previous_run(results: Path) -> None:
    results.mkdir(parents=True, exist_ok=True)
    doc = {"tests": [], "verdict": {"verdict": "PASS"}}
    (results / "labtest-results.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("child", "status", "said"),
    [
        ((2, True), runner.EXIT_INTERRUPTED, "interrupted after"),
        ((-2, True), runner.EXIT_INTERRUPTED, "before any result"),
        ((0, False), runner.EXIT_NO_RESULTS, "this run wrote no labtest-results.json"),
    ],
)
def test_a_run_that_wrote_no_results_never_shows_the_previous_runs_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child: tuple[int, bool], status: int,
    said: str,
) -> None:
    results = tmp_path / "allure-results"
    _previous_run(results)
    monkeypatch.setattr(runner, "_run_child", lambda cmd, cwd: child)
    monkeypatch.setattr(runner, "testbed_problems", lambda path: [])
    opts = runner.RunOptions(alluredir=results, suites=["cabling"], suites_dir=runner.SUITES_DIR)
    buf = io.StringIO()
    assert runner.run(opts, out=buf) == status
    out = buf.getvalue()
    assert said in out
    assert "verdict:" not in out


def test_the_reaped_line_reaches_the_terminal_past_pytests_capture(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lab starts inside a fixture, under pytest's capture: its one line about the
    leftovers it removed was swallowed (the chaos bench's next runs said nothing)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv(runs.STATE_ENV, str(state))
    rid = runs.new_id()
    folder = tmp_path / f"labtest-emulate-{rid}"
    folder.mkdir()
    dead = runs.Run(rid, 999_999_999, 1, runs.boot_id(), [], [str(folder)])  # no such PID
    dead.save()
    pytester.makepyfile("def test_lab(testbed):\n    assert testbed.devices\n")
    res = pytester.runpytest_subprocess(
        "--testbed", str(runner.DEFAULT_TESTBED), "--emulate", "-p", "no:cacheprovider"
    )
    assert res.ret == 0
    res.stderr.fnmatch_lines(
        ["labtest: removed leftovers of 1 dead run (pid 999999999): 0 namespaces, "
         "0 processes, 1 folder"]
    )
    assert not folder.exists()


def test_an_interrupt_after_pytest_ended_leaves_the_verdict_alone(tmp_path: Path) -> None:
    """Ctrl-C in the moment between pytest's end and the table: the run ran whole."""
    results = tmp_path / "allure-results"

    def child(cmd: list[str], cwd: Path) -> tuple[int, bool]:
        _previous_run(results)  # written by this run
        return 0, True

    opts = runner.RunOptions(alluredir=results, suites=["cabling"], suites_dir=runner.SUITES_DIR)
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "_run_child", child)
        mp.setattr(runner, "testbed_problems", lambda path: [])
        status = runner.run(opts, out=buf)
    assert "interrupted" not in buf.getvalue()
    assert status == runner.EXIT_NO_RESULTS  # judged as any run: this one held no test


def test_an_interrupt_while_the_lab_stops_waits_for_the_stop() -> None:
    # a second Ctrl-C during the kernel lab's shutdown aborted it and left namespaces and
    # daemons behind (bench/chaos.py): the stop now runs to its end, then the handler is back
    before = signal.getsignal(signal.SIGINT)
    done = []
    with interrupt.held("stopping the lab") as came:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handlers run between bytecodes of this thread
        done.append("stopped")
    assert done == ["stopped"] and came == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is before
