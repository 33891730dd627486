"""Who ran it, where, when, and from which commit: facts a sign-off must carry."""

from __future__ import annotations

import getpass
import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path

GIT_TIMEOUT_S = 5.0


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers) and no LOGNAME
        return os.environ.get("USER", "unknown")


def host() -> str:
    return socket.gethostname()


def git_commit(path: Path) -> str | None:
    """``HEAD`` of the repository holding ``path`` (``+dirty`` if tracked files changed).

    Read-only git calls; ``None`` outside a repository or without git.
    """
    head = _git(path, "rev-parse", "HEAD")
    if head is None:
        return None
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    return f"{head}+dirty" if status else head


def _git(path: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(path), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def python_version() -> str:
    return platform.python_version()
