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
from collections.abc import Callable
from pathlib import Path

from labtest.errors import LabtestError

ENV_GROUP = "LABTEST_LAB_GROUP"


class UnsafePath(LabtestError):
    """A path another user could control: a symlink, foreign-owned, or world-writable."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
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


# --- reading input that names files: results, attachments ---------------------------------
#
# A results directory is input: another user, a tool or a test wrote it, and the paths
# inside it (an attachment's ``source``) are input too. What labtest copies or inlines
# from it must be a regular file *inside* the directory, reached without following a
# symbolic link anywhere below the root: otherwise a link or a ``../`` path would put
# any file the runner can read (``/etc/shadow``, a private key) into a report.


def inside(rel: str) -> tuple[str, ...]:
    """The parts of ``rel``, a path that stays inside its root; :class:`UnsafePath` if not.

    Refused: an empty path, an absolute one, any ``..`` part, a NUL or a backslash
    (a Windows separator would be one file name here and a path on another machine).
    """
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel:
        raise UnsafePath(repr(rel), "not a relative path inside its folder")
    if rel.startswith("/"):
        raise UnsafePath(rel, "an absolute path; only files inside the folder are read")
    parts = tuple(p for p in rel.split("/") if p not in ("", "."))
    if not parts or ".." in parts:
        raise UnsafePath(rel, "the path leaves its folder ('..')")
    return parts


def _open_root(root: str | Path) -> int:
    """The root folder itself is the caller's choice (it may be reached through a link)."""
    try:
        return os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafePath(root, exc.strerror or str(exc)) from None


def _open_dir_at(dir_fd: int, name: str, shown: str) -> int:
    try:
        return os.open(
            name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError as exc:
        if _is_link_at(dir_fd, name):
            raise UnsafePath(shown, "a symbolic link on the way (not followed)") from None
        raise UnsafePath(shown, exc.strerror or str(exc)) from None


def _is_link_at(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _open_file_at(dir_fd: int, name: str, shown: str) -> int:
    """A regular file's descriptor; never a link (O_NOFOLLOW), never a FIFO that blocks."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError as exc:
        if _is_link_at(dir_fd, name):
            raise UnsafePath(shown, "a symbolic link (not followed)") from None
        raise UnsafePath(shown, exc.strerror or str(exc)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(shown, "not a regular file")
    return fd


def open_inside(root: str | Path, rel: str) -> int:
    """A read-only descriptor of the regular file ``root/rel``, which must stay inside
    ``root`` and is reached without following a symbolic link below ``root``."""
    parts = inside(rel)
    fd = _open_root(root)
    try:
        for i, part in enumerate(parts[:-1]):
            sub = _open_dir_at(fd, part, "/".join(parts[: i + 1]))
            os.close(fd)
            fd = sub
        return _open_file_at(fd, parts[-1], rel)
    finally:
        os.close(fd)


def read_inside(root: str | Path, rel: str) -> bytes:
    """The bytes of ``root/rel`` (see :func:`open_inside`); :class:`UnsafePath` if refused."""
    with os.fdopen(open_inside(root, rel), "rb") as fh:
        return fh.read()


def copy_tree_inside(
    src: str | Path,
    write: Callable[[str, bytes], None],
    skip: Callable[[str], bool] = lambda _name: False,
) -> list[UnsafePath]:
    """Hand every regular file below ``src`` to ``write(relative path, bytes)``.

    Symbolic links (to files or folders) and special files are not followed or
    read: each is returned as a refusal naming it. ``skip(name)`` leaves a file
    out silently (temporary files). Folders come before the files in them, so
    ``write`` may create parents as it goes.
    """
    refused: list[UnsafePath] = []
    root = _open_root(src)
    try:
        _copy_dir(root, "", write, skip, refused)
    finally:
        os.close(root)
    return refused


def _copy_dir(
    fd: int,
    prefix: str,
    write: Callable[[str, bytes], None],
    skip: Callable[[str], bool],
    refused: list[UnsafePath],
) -> None:
    for name in sorted(os.listdir(fd)):
        rel = f"{prefix}{name}"
        try:
            st = os.lstat(name, dir_fd=fd)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePath(rel, "a symbolic link (not followed, not copied)")
            if stat.S_ISDIR(st.st_mode):
                sub = _open_dir_at(fd, name, rel)
                try:
                    _copy_dir(sub, f"{rel}/", write, skip, refused)
                finally:
                    os.close(sub)
                continue
            if skip(name):
                continue
            with os.fdopen(_open_file_at(fd, name, rel), "rb") as fh:
                data = fh.read()
        except UnsafePath as exc:
            refused.append(exc)
            continue
        write(rel, data)
