"""Run records: what a lab run creates, so a later run can remove it when the run died.

A SIGKILLed run cleans up nothing: its namespaces, the daemons in them and its
folders stay. So every kernel lab and emulated lab first writes a record
``<state folder>/<run id>.json``: the owning PID, that process's start time (clock
ticks after boot) and the boot id (a PID alone is reused), and the namespaces and
folders it is about to create. Every one of those names contains the run id.
The record goes when the lab has stopped and nothing of it is left.

``reap()`` (at every lab start, and ``labtest emulate --clean``) removes what the
records of dead owners list: it kills the processes inside their namespaces, deletes
the namespaces (with their veths and nft tables) and the folders. It touches only a
name that carries the record's run id, and never a run whose owner is alive.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from labtest import netns as ns
from labtest.safefs import private_dir

STATE_ENV = "LABTEST_STATE_DIR"
KILL_WAIT_S = 5.0


def state_dir() -> Path:
    """``$LABTEST_STATE_DIR``, else ``/run/labtest`` for root (gone at reboot, as the
    namespaces are), else a per-user folder in the temporary folder."""
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    if os.geteuid() == 0:
        return Path("/run/labtest")
    return Path(tempfile.gettempdir()) / f"labtest-runs-{os.geteuid()}"


def new_id() -> str:
    """8 hex digits: short enough to go into interface and namespace names."""
    return secrets.token_hex(4)


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (ticks after boot); None if it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


@dataclass
class Run:
    """One run's record; ``begin()`` writes it, ``end()`` removes it."""

    id: str
    pid: int
    start: int
    boot: str
    namespaces: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)

    @classmethod
    def begin(
        cls,
        run_id: str | None = None,
        namespaces: list[str] | None = None,
        folders: list[Path] | None = None,
    ) -> Run:
        pid = os.getpid()
        run = cls(
            run_id or new_id(),
            pid,
            start_ticks(pid) or 0,
            boot_id(),
            list(namespaces or []),
            [str(f) for f in folders or []],
        )
        run.save()
        return run

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.id}.json"

    def save(self) -> None:
        """Written whole (temporary file, then rename): a reaper never reads half of it."""
        folder = private_dir(state_dir(), 0o700)
        tmp = folder / f".{self.id}.json.tmp"
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(self.path)

    def end(self) -> None:
        self.path.unlink(missing_ok=True)

    def alive(self) -> bool:
        return self.boot == boot_id() and start_ticks(self.pid) == self.start


@dataclass
class Reaped:
    """What ``reap()`` removed, and the one line that reports it."""

    pids: list[int] = field(default_factory=list)
    namespaces: int = 0
    processes: int = 0
    folders: int = 0

    def line(self) -> str | None:
        if not self.pids:
            return None
        n = len(self.pids)
        owners = ", ".join(map(str, self.pids))
        return (
            f"labtest: removed leftovers of {n} dead run{'s' * (n > 1)} "
            f"(pid{'s' * (n > 1)} {owners}): {_count(self.namespaces, 'namespace')}, "
            f"{_count(self.processes, 'process')}, {_count(self.folders, 'folder')}"
        )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{('es' if what.endswith('s') else 's') if n != 1 else ''}"


def reap(report: bool = True) -> Reaped:
    """Remove the leftovers of every recorded run whose owner is gone; print one line
    (stderr) when there were any. A record another reaper holds is skipped."""
    done = Reaped()
    folder = state_dir()
    if not folder.is_dir():
        return done
    private_dir(folder, 0o700)  # a folder another user planted or can write: UnsafePath
    for path in sorted(folder.glob("*.json")):
        try:
            run = Run(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if run.alive():
            continue
        with contextlib.suppress(OSError), open(path) as fd:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another process is reaping it
            if not path.exists():
                continue  # reaped and removed while we waited for the lock
            _remove(run, done)
            path.unlink(missing_ok=True)
            done.pids.append(run.pid)
    if report and (line := done.line()):
        print(line, file=sys.stderr, flush=True)
    return done


def _remove(run: Run, done: Reaped) -> None:
    """Processes first (a namespace outlives its name while anything runs in it)."""
    mine = [n for n in run.namespaces if run.id in n and n in ns.list_netns()]
    if mine:
        ids = {ns.netns_id(n) for n in mine}
        pids = ns.pids_in_netns(ids)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_S
        while ns.pids_in_netns(ids) and time.monotonic() < deadline:
            time.sleep(0.05)
        done.processes += len(pids)
    for name in mine:
        with contextlib.suppress(ns.NetnsError):
            ns.delete_netns(name)
            done.namespaces += 1
    for f in map(Path, run.folders):
        if run.id in f.name and f.is_dir() and not f.is_symlink():
            shutil.rmtree(f, ignore_errors=True)
            done.folders += 1
