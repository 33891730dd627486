"""Ending a bench's child process: ask it first, kill it if it does not go."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import AnyStr


def stop(child: subprocess.Popen[AnyStr], ask: Callable[[], None], grace_s: float,
         kill_wait_s: float) -> None:
    """``ask`` the child to end (a signal, its stdin closed) so it can clean up; SIGKILL
    it if it is still there after ``grace_s``, so a hung child cannot hang the bench."""
    ask()
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=kill_wait_s)
