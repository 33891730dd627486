"""Files and directories in places other users can reach, created so nobody can plant them.

labtest runs as root on shared lab hosts. Anything it creates where another
user could have been first (``/tmp``, a shared lease directory, an output path
someone else chose) is created here: with an explicit mode that does not depend
on the umask, without following a symlink, and after checking that what is
already there is ours (or root's, or the lab group's) and not writable by
everybody. What fails a check is refused with :class:`UnsafePath`, never
"repaired" unless we own it.

Several users of one host share files only through a *lab group*
(``$LABTEST_LAB_GROUP``, a group name or number): then directories are 2770
and files 0660 with that group; without it they are 0700 and 0600.
"""

from __future__ import annotations

import contextlib
import grp
import os
import stat
from pathlib import Path

from labtest.errors import LabtestError

ENV_GROUP = "LABTEST_LAB_GROUP"


class UnsafePath(LabtestError):
    """A path another user could control: a symlink, foreign-owned, or world-writable."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        super().__init__(f"refusing {path}: {problem}")


def lab_group() -> int | None:
    """The lab group's gid from ``$LABTEST_LAB_GROUP`` (None: files are private)."""
    name = os.environ.get(ENV_GROUP, "").strip()
    if not name:
        return None
    if name.isdigit():
        return int(name)
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise UnsafePath(name, f"${ENV_GROUP} names no group on this host") from None


def dir_mode() -> int:
    return 0o2770 if lab_group() is not None else 0o700


def file_mode() -> int:
    return 0o660 if lab_group() is not None else 0o600


def _trusted_owner(st: os.stat_result) -> bool:
    group = lab_group()
    return st.st_uid in (os.geteuid(), 0) or (group is not None and st.st_gid == group)


def _check(path: Path, st: os.stat_result, kind: str) -> None:
    """Refuse what another user could have planted or can still change."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(path, "it is a symbolic link (planted by someone?); remove it")
    want = stat.S_ISDIR if kind == "directory" else stat.S_ISREG
    if not want(st.st_mode):
        raise UnsafePath(path, f"it is not a {kind}")
    if not _trusted_owner(st):
        raise UnsafePath(
            path, f"it belongs to uid {st.st_uid}, not to this user, root or the lab group "
            f"(set ${ENV_GROUP} to share it)",
        )
    if st.st_mode & stat.S_IWOTH:
        raise UnsafePath(path, f"it is writable by every user (mode {stat.S_IMODE(st.st_mode):o})")
    group = lab_group()
    if st.st_mode & stat.S_IWGRP and (group is None or st.st_gid != group):
        raise UnsafePath(
            path, f"it is writable by group {st.st_gid}, which is not the lab group "
            f"(mode {stat.S_IMODE(st.st_mode):o})",
        )


def _repair(path: Path | int, st: os.stat_result, mode: int) -> os.stat_result:
    """Put our own file or directory to ``mode`` (and the lab group); leave others' alone."""
    if st.st_uid != os.geteuid():
        return st
    group = lab_group()
    if isinstance(path, int):
        if group is not None and st.st_gid != group:
            os.fchown(path, -1, group)
        if stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(path, mode)
        return os.fstat(path)
    if group is not None and st.st_gid != group:
        os.chown(path, -1, group, follow_symlinks=False)
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode, follow_symlinks=False)
    return os.lstat(path)


def private_dir(path: str | Path, mode: int | None = None) -> Path:
    """Create ``path`` (and missing parents, private) or check the one that is there.

    Never follows a symlink at ``path``; an existing directory must be ours,
    root's or the lab group's and not writable by others; ours is set to ``mode``.
    """
    path = Path(path)
    mode = dir_mode() if mode is None else mode
    if not path.parent.exists():
        private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)  # then chmod: mkdir's mode is cut by the umask
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        st = _repair(path, st, mode)
    _check(path, st, "directory")
    return path


def open_private(path: str | Path, flags: int = os.O_RDWR, mode: int | None = None) -> int:
    """Open (creating if missing) a regular file without following a symlink; a descriptor.

    A new file gets ``mode`` whatever the umask; an existing one must pass the
    same checks as a directory (and is set to ``mode`` if it is ours).
    """
    path = Path(path)
    mode = file_mode() if mode is None else mode
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        st = _repair(fd, os.fstat(fd), mode)
        _check(path, st, "file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Write a new file (or replace our own) that nobody else can read or have planted."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def check_existing(path: str | Path, kind: str = "file") -> None:
    """Refuse an existing ``path`` another user controls (missing is fine)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    _check(path, st, kind)


def shared_dir_guard(path: str | Path) -> None:
    """Refuse a directory others can write to (they could plant files we then open)."""
    path = Path(path)
    st = os.stat(path)
    if st.st_mode & stat.S_IWOTH and not (st.st_mode & stat.S_ISVTX):
        raise UnsafePath(path, "the directory is writable by every user and not sticky")
