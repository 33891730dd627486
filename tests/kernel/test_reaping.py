"""Leftovers of dead runs (issue 36): a SIGKILLed run's namespaces, the processes in them
and its folders are removed by the next start, reported in one line; a live run's
resources and anything without the run's id are left alone."""

from __future__ import annotations

import argparse
import os
import selectors
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB, ROOT, poll

from labtest import netns as ns
from labtest import runs
from labtest.emulation.cli import register
from labtest.emulation.kernel import KernelLab
from labtest.emulation.lab import EmulatedLab
from labtest.testbed import load_testbed

NEEDS_ROOT = pytest.mark.skipif(not ns.is_root(), reason="network namespaces need root")
UP_S = 120.0  # bound on a kernel lab coming up in the child (about 10 s on 2 cores)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private state folder: no other test's (or engineer's) run is reaped here."""
    folder = tmp_path / "state"
    monkeypatch.setenv(runs.STATE_ENV, str(folder))
    return folder


class _Fake:
    """Namespaces with a sleeping process in each, and folders; all removed at the end."""

    def __init__(self) -> None:
        self.sleepers: list[subprocess.Popen[bytes]] = []
        self.namespaces: list[str] = []

    def namespace(self, name: str) -> str:
        self.namespaces.append(ns.create_netns(name))
        self.sleepers.append(
            subprocess.Popen(["ip", "netns", "exec", name, "sleep", "300"], start_new_session=True)
        )

        def inside() -> bool:
            """the sleeper has joined its namespace"""
            return self.running(name) == 1

        poll(inside, 10)
        return name

    def running(self, name: str) -> int:
        return len(ns.pids_in_netns({ns.netns_id(name)})) if name in ns.list_netns() else 0

    def close(self) -> None:
        for p in self.sleepers:
            p.kill()
            p.wait(5)
        for name in self.namespaces:
            ns.delete_netns(name)


@pytest.fixture
def fake() -> Iterator[_Fake]:
    made = _Fake()
    try:
        yield made
    finally:
        made.close()


def _folder(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "id_ed25519").write_text("key\n")
    return folder


def _dead_pid() -> tuple[int, int]:
    """A PID and start time whose process has exited."""
    p = subprocess.Popen(["sleep", "60"])
    start = runs.start_ticks(p.pid)
    p.kill()
    p.wait(5)
    assert start is not None
    return p.pid, start


@NEEDS_ROOT
@pytest.mark.netns
@pytest.mark.parametrize("owner", ["exited", "pid-reused"])
def test_dead_runs_leftovers_are_removed_and_reported(
    state: Path, tmp_path: Path, fake: _Fake, owner: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs.Run.begin()
    if owner == "exited":
        run.pid, run.start = _dead_pid()
    else:  # our own PID, but the record's start time is another process's: PID reuse
        run.start -= 1
    netns = fake.namespace(f"lt-k{run.id}-leaf1")
    folder = _folder(tmp_path, f"lt-k{run.id}-lab")
    run.namespaces, run.folders = [netns], [str(folder)]
    run.save()
    assert fake.running(netns) == 1

    reaped = runs.reap()

    line = (
        f"labtest: removed leftovers of 1 dead run (pid {run.pid}): "
        "1 namespace, 1 process, 1 folder"
    )
    assert reaped.line() == line
    assert capsys.readouterr().err == line + "\n"
    assert netns not in ns.list_netns() and not folder.exists() and not run.path.exists()
    assert fake.sleepers[0].wait(5) == -9
    assert runs.reap().line() is None  # nothing twice


@NEEDS_ROOT
@pytest.mark.netns
def test_a_live_runs_resources_are_untouched(state: Path, tmp_path: Path, fake: _Fake) -> None:
    run = runs.Run.begin()  # owned by this (live) process
    netns = fake.namespace(f"lt-k{run.id}-leaf1")
    folder = _folder(tmp_path, f"lt-k{run.id}-lab")
    run.namespaces, run.folders = [netns], [str(folder)]
    run.save()

    assert runs.reap().line() is None
    assert netns in ns.list_netns() and fake.running(netns) == 1 and folder.is_dir()
    assert run.path.exists()
    run.end()


@NEEDS_ROOT
@pytest.mark.netns
def test_what_lacks_the_run_id_is_untouched(state: Path, tmp_path: Path, fake: _Fake) -> None:
    """A dead run's record that also lists a foreign namespace and folder (names without
    its run id), beside a lab-like namespace that no record lists."""
    run = runs.Run.begin()
    run.pid, run.start = _dead_pid()
    mine = fake.namespace(f"lt-k{run.id}-leaf1")
    foreign = fake.namespace(ns.unique_name())
    unrecorded = fake.namespace(f"lt-k{runs.new_id()}-leaf1")
    their_folder = _folder(tmp_path, "someone-elses")
    run.namespaces = [mine, foreign, unrecorded]
    run.folders = [str(their_folder), str(tmp_path)]
    run.save()

    reaped = runs.reap(report=False)

    assert (reaped.namespaces, reaped.processes, reaped.folders) == (1, 1, 0)
    assert mine not in ns.list_netns()
    assert fake.running(foreign) == 1 and fake.running(unrecorded) == 1
    assert their_folder.is_dir() and tmp_path.is_dir()


def test_emulated_labs_folder_is_recorded_until_stop(state: Path) -> None:
    lab = EmulatedLab(load_testbed(ROOT / "testbeds" / "emulated" / "leafspine.yaml"))
    folder = lab._workdir()
    assert lab._run is not None
    record = lab._run.path
    assert lab._run.id in folder.name and str(folder) in record.read_text()
    lab.stop()
    assert not folder.exists() and not record.exists()


def test_emulate_clean_reaps_on_demand(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGKILLed emulator leaves its private folder; ``labtest emulate --clean`` removes it."""
    run = runs.Run.begin()
    run.pid, run.start = _dead_pid()
    folder = _folder(tmp_path, f"labtest-emulate-{run.id}")
    run.folders = [str(folder)]
    run.save()
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["emulate", "--clean"])
    assert args.handler(args) == 0
    assert capsys.readouterr().out == (
        f"labtest: removed leftovers of 1 dead run (pid {run.pid}): "
        "0 namespaces, 0 processes, 1 folder\n"
    )
    assert not folder.exists()
    assert args.handler(args) == 0
    assert capsys.readouterr().out.startswith("labtest: no leftovers of dead runs")


_CHILD = textwrap.dedent(
    """
    import sys, time
    from labtest.emulation.kernel import KernelLab
    from labtest.testbed import load_testbed
    lab = KernelLab(load_testbed(sys.argv[1]))
    lab.start()
    print(lab.run_id, flush=True)
    time.sleep(600)
    """
)


@NEEDS_KERNEL_LAB
@pytest.mark.netns
def test_a_sigkilled_kernel_lab_is_reaped_by_the_next_start(state: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(KERNEL_TESTBED)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, runs.STATE_ENV: str(state)},
    )
    try:
        run_id = _first_line(child, UP_S)
    finally:
        child.kill()  # SIGKILL: the child cleans up nothing
        child.wait(10)
    prefix = f"lt-k{run_id}-"
    left = [n for n in ns.list_netns() if n.startswith(prefix)]
    pids = ns.pids_in_netns({ns.netns_id(n) for n in left})
    assert len(left) == 7 and len(pids) >= 7 * 2  # every node runs lldpd and more
    lab = KernelLab(load_testbed(KERNEL_TESTBED))
    try:
        lab.start()
    finally:
        lab.stop()
    assert lab.reaped.pids == [child.pid]
    assert (lab.reaped.namespaces, lab.reaped.folders) == (7, 5)  # lab folder + 4 FRR run dirs
    assert lab.reaped.processes == len(pids)
    assert not [n for n in ns.list_netns() if n.startswith(prefix)]
    assert not [p for p in pids if runs.start_ticks(p) is not None]
    assert not list(Path("/var/run/frr").glob(f"{prefix}*"))
    assert lab.leftovers() == [] and not list(state.glob("*.json"))


def _first_line(child: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's first stdout line (its run id, printed once the lab is up), bounded."""
    assert child.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(child.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            pytest.fail(f"kernel lab in the child not up within {timeout_s} s")
    line = child.stdout.readline().strip()
    assert line, f"the child exited {child.poll()} before its lab was up"
    return line
