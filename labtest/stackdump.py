"""Every thread's stack, written to the run's folder, so a run that hangs says where.

A hang inside the emulated lab shows in a test only as a transport timeout, and a
matrix row killed at its time limit left nothing at all. So: the processes of a
matrix row (``labtest run`` and its pytest child, which holds the emulated lab) arm
``faulthandler`` on SIGUSR1 (``arm``), each writing ``stacks-<pid>.txt`` in
``$LABTEST_STACKS_DIR``; the matrix runner signals them (``request``) before it
kills the row. The emulation model writes one itself (``dump``) when an advance
outlives its wall budget. Loaded with ``-p labtest.stackdump``, the module arms
the pytest process it is loaded in.
"""

from __future__ import annotations

import faulthandler
import itertools
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

ENV = "LABTEST_STACKS_DIR"
SIGNAL = signal.SIGUSR1
PREFIX = "stacks-"

_armed: list[IO[str]] = []  # faulthandler writes to these on SIGNAL: kept open
_seq = itertools.count(1)


def folder() -> Path:
    """Where dumps go: ``$LABTEST_STACKS_DIR`` (a matrix row's folder), else the platform's
    temporary folder (the message that cites a dump names its path)."""
    return Path(os.environ.get(ENV) or tempfile.gettempdir())


def arm(where: Path | None = None) -> Path | None:
    """On SIGUSR1, write every thread's stack to ``<where>/stacks-<pid>.txt`` (default
    ``$LABTEST_STACKS_DIR``; without it nothing is armed). Returns that file."""
    if where is None:
        if not os.environ.get(ENV):
            return None
        where = Path(os.environ[ENV])
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{PREFIX}{os.getpid()}.txt"
    out = path.open("a", encoding="utf-8")
    faulthandler.register(SIGNAL, file=out, all_threads=True, chain=False)
    _armed.append(out)
    return path


def request(where: Path, pgid: int | None = None, wait_s: float = 2.0) -> list[Path]:
    """Ask every process armed in ``where`` (of process group ``pgid``, if given: a PID
    from an older run is never signalled) for its stacks; the files they wrote to."""
    asked: dict[Path, int] = {}
    for path in sorted(where.glob(f"{PREFIX}*.txt")):
        pid = path.stem.removeprefix(PREFIX)
        if not pid.isdigit():
            continue  # a dump the model wrote itself (``dump``)
        try:
            if pgid is not None and os.getpgid(int(pid)) != pgid:
                continue
            size = path.stat().st_size
            os.kill(int(pid), SIGNAL)
        except (ProcessLookupError, PermissionError, FileNotFoundError):
            continue
        asked[path] = size
    deadline = time.monotonic() + wait_s
    while asked and time.monotonic() < deadline:  # faulthandler writes from the handler
        if all(p.stat().st_size > size for p, size in asked.items()):
            break
        time.sleep(0.05)
    return list(asked)


def dump(reason: str, where: Path | None = None) -> Path:
    """Write ``reason`` and every thread's stack (with its name) to a new file in ``where``
    (default ``folder()``); returns its path."""
    where = where or folder()
    where.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    path = where / f"{PREFIX}{os.getpid()}-{stamp}-{next(_seq)}.txt"
    names = {t.ident: t.name for t in threading.enumerate()}
    lines = [reason, ""]
    for ident, frame in sys._current_frames().items():
        lines.append(f"Thread {names.get(ident, '?')} ({ident}), most recent call last:")
        lines.extend(s.rstrip("\n") for s in traceback.format_stack(frame))
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def pytest_configure(config: Any) -> None:
    """As a pytest plugin (``-p labtest.stackdump``): arm this process."""
    arm()
