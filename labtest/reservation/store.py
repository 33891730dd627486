"""What every lease store shares: who holds what, the errors, the store's Protocol, member locks.

The leases themselves (holding, renewing, waiting) are :mod:`labtest.reservation.leases`;
the stores are :mod:`labtest.reservation.sqlite` (one SQLite file, the default) and
:mod:`labtest.reservation.postgres` (PostgreSQL, for many hosts). Both stores are written against
this module alone, so neither knows the other nor the holder's side.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout

from labtest import safefs
from labtest.errors import InfraError
from labtest.safefs import UnsafePath
from labtest.testbed.model import Device, Testbed

DEFAULT_TTL_S = 60.0
DEFAULT_WAIT_S = 300.0
POLL_S = 0.5  # how often a waiting run asks again
BUSY_TIMEOUT_S = 10.0  # how long one store transaction may wait for another
SAFETY = 0.25  # a holder trusts its lease for (1 - SAFETY) * ttl after a renewal
ENV_STORE = "LABTEST_LEASE_STORE"
ENV_TTL = "LABTEST_LEASE_TTL_S"


class DevicesBusy(InfraError):
    """Another run holds some of the devices (``holders``: device label -> holder)."""

    def __init__(self, holders: Mapping[str, Holder], waited_s: float) -> None:
        self.holders = dict(holders)
        self.waited_s = waited_s
        waited = f" after waiting {waited_s:.1f} s" if waited_s >= POLL_S else ""
        super().__init__(", ".join(sorted(holders)), f"devices busy{waited}: {describe(holders)}")


class LeaseLost(InfraError):
    """This run no longer holds its devices: it must stop touching them."""


class StoreUnavailable(InfraError):
    """The lease store cannot be read or written (unreachable, or locked too long)."""


class StoreUnusable(StoreUnavailable):
    """The lease store can never work as it is (corrupt, unsafe): waiting will not help."""


# --- who holds what --------------------------------------------------------------


@dataclass(frozen=True)
class Holder:
    """One process of a run: what a waiting run is told about who is in its way."""

    user: str
    host: str
    pid: int
    run_id: str
    since_s: float  # epoch seconds

    def __str__(self) -> str:
        since = datetime.fromtimestamp(self.since_s).isoformat(sep=" ", timespec="seconds")
        return f"{self.user}@{self.host} pid {self.pid} (run {self.run_id}, since {since})"

    @classmethod
    def me(cls, run_id: str, host: str | None = None) -> Holder:
        return cls(_user(), host or socket.gethostname(), os.getpid(), run_id, time.time())


@dataclass(frozen=True)
class LeaseRow:
    """One held device and the run holding it, as ``labtest lease list`` shows it."""

    device: str  # the device key (management endpoint)
    label: str  # testbed/device
    run_id: str
    user: str
    host: str
    pid: int  # of the run's earliest member
    since_s: float  # epoch seconds the hold began
    expires_s: float  # epoch seconds the run's latest member expires, unless renewed


def describe(holders: Mapping[str, Holder]) -> str:
    """``leaf1, leaf2 held by alice@lab3 pid 42 (run ..., since ...)``, one clause per holder."""
    by_holder: dict[Holder, list[str]] = {}
    for device, holder in sorted(holders.items()):
        by_holder.setdefault(holder, []).append(device)
    return "; ".join(f"{', '.join(d)} held by {h}" for h, d in by_holder.items())


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.getuid())


def device_key(testbed: Testbed, name: str) -> str | None:
    """What identifies the physical device: its management endpoint (None: nothing to hold).

    Keyed by endpoint rather than by name, so two testbed files describing one
    lab under different names still exclude each other. Replayed devices are
    recordings, not devices.
    """
    dev: Device = testbed.devices[name]
    if dev.replay is not None:
        return None
    if dev.address and dev.ssh is not None:
        return f"ssh://{dev.address}:{dev.ssh.port}"
    if dev.address and dev.snmp is not None:
        return f"snmp://{dev.address}:{dev.snmp.port}"
    if dev.visa is not None:
        return f"visa://{dev.visa.resource}"
    if dev.address:
        return f"host://{dev.address}"
    return f"testbed://{testbed.name}/{name}"


def testbed_keys(testbed: Testbed) -> dict[str, str]:
    """Device key -> ``testbed/device`` label, for every device that can be held."""
    keys: dict[str, str] = {}
    for name in testbed.devices:
        key = device_key(testbed, name)
        if key is not None:  # devices behind one endpoint share a hold
            label = f"{testbed.name}/{name}"
            keys[key] = f"{keys[key]}+{name}" if key in keys else label
    return keys


# --- the store ----------------------------------------------------------------------


class LeaseStore(Protocol):
    """Where leases live; any store several runners can reach and update atomically."""

    def try_acquire(
        self, keys: Mapping[str, str], member: Member, ttl_s: float
    ) -> dict[str, Holder]:
        """Hold every key for ``member``'s run, or none; returns the blockers (empty: held)."""
        ...

    def renew(self, member_id: str, keys: Mapping[str, str], ttl_s: float) -> str | None:
        """Push the member's expiry forward; a reason string when the lease is lost."""
        ...

    def release(self, member_id: str) -> None: ...

    def holders(self, keys: Mapping[str, str]) -> dict[str, Holder]:
        """Current holders of ``keys`` (by label), for status displays."""
        ...


@dataclass(frozen=True)
class Member:
    """One process of a run in the store, and the lock file that says it is alive.

    The lock file's path is derived from ``member_id`` (:func:`member_lock_path`),
    never read back from the store: a row anybody could write must not name a
    file that the purge then locks and deletes.
    """

    member_id: str
    holder: Holder

    @property
    def lock_path(self) -> Path:
        return member_lock_path(self.member_id)


MEMBER_ID = re.compile(r"^[0-9a-f]{32}$")


def member_lock_path(member_id: str) -> Path:
    """``<shared dir>/member-<id>.lock``; refuses an id that is not one of ours (hex)."""
    if not MEMBER_ID.match(member_id):
        raise ValueError(f"not a member id: {member_id!r}")
    return shared_dir() / f"member-{member_id}.lock"



def lock_abandoned(path: Path) -> bool:
    """True when ``path`` is a member lock file whose owner is gone (the lock is free).

    A missing file proves nothing (the member may live in another mount
    namespace), so only an existing, unlocked file counts. Only a regular file
    (not a symlink) in our own directory is ever locked or removed.
    """
    try:
        safefs.check_existing(path)
    except (UnsafePath, OSError):
        return False
    if not path.exists():
        return False
    probe = FileLock(path, timeout=0, mode=safefs.file_mode())
    try:
        probe.acquire()
    except Timeout:
        return False  # held: the owner is alive
    except OSError:
        return False
    probe.release()
    with contextlib.suppress(OSError):
        path.unlink()
    return True


def permission_hint(exc: BaseException) -> str:
    """What to do when another user's private store is in the way."""
    if isinstance(exc, PermissionError):
        return (f" (another user's private store? share it through a lab group, "
                f"${safefs.ENV_GROUP}, or use your own with --lease-store)")
    return ""


def default_store_path() -> Path:
    """One store per host, shared by its users: ``<tmp>/labtest-leases/leases.db``."""
    return shared_dir() / "leases.db"


def shared_dir() -> Path:
    """This host's lease directory, 0700 (2770 with a lab group); never a planted one.

    A symlink, a directory of another user (outside the lab group) or one
    writable by everybody is refused (:class:`StoreUnusable`), not chmod-ed.
    """
    path = Path(tempfile.gettempdir()) / "labtest-leases"
    try:
        return safefs.private_dir(path)
    except UnsafePath as exc:
        raise StoreUnusable(str(path), f"unsafe lease directory: {exc}") from None

