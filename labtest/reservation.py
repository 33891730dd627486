"""Reserving a testbed's devices for one run, so two runs never drive one device.

A run *holds* its devices through a lease in a shared store (``docs/reservation.md``
explains the choice). The lease has two ways to die, so a crashed run never holds
a lab for long:

- across hosts, by **expiry**: every process of the run (the pytest process, or
  each xdist worker) is a *member* with an expiry time that a heartbeat thread
  pushes forward every ``ttl_s / 3``; a member that stops renewing (SIGKILL,
  power cut, network gone) expires and its run's devices become free;
- on one host, at once, by a **file lock**: each member holds a ``filelock``
  lock file for its whole life, which the kernel drops when the process dies;
  another run on the same host that finds the lock free knows the member is
  dead without waiting for the expiry.

A second run on the same devices waits (up to a timeout, saying who holds them:
user, host, pid, run id, since when) or fails fast. A member that cannot renew
in time, or finds its devices taken, has *lost* its lease: ``Lease.valid()`` turns
False and the pytest plugin stops the run before the next test touches a device.

The store is pluggable (:class:`LeaseStore`); the default is SQLite
(:class:`SqliteLeaseStore`), a file on a local or shared filesystem, serialised
with ``BEGIN IMMEDIATE`` transactions. Times in the SQLite store are wall-clock
epoch seconds of whichever runner wrote them, so runners sharing it need clocks
within a small fraction of the lease time of each other (NTP). Several hosts
share a PostgreSQL store instead (``postgresql://...`` or ``$LABTEST_DB``,
:class:`labtest.db.leases.PgLeaseStore`), whose times are the server's.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from importlib.metadata import entry_points
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


_MEMBER_ID = re.compile(r"^[0-9a-f]{32}$")


def member_lock_path(member_id: str) -> Path:
    """``<shared dir>/member-<id>.lock``; refuses an id that is not one of ours (hex)."""
    if not _MEMBER_ID.match(member_id):
        raise ValueError(f"not a member id: {member_id!r}")
    return _shared_dir() / f"member-{member_id}.lock"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS members (
    member_id TEXT PRIMARY KEY,
    run_id    TEXT NOT NULL,
    user      TEXT NOT NULL,
    host      TEXT NOT NULL,
    pid       INTEGER NOT NULL,
    since_s   REAL NOT NULL,
    expires_s REAL NOT NULL,
    lock_path TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS holds (
    device  TEXT PRIMARY KEY,
    label   TEXT NOT NULL,
    run_id  TEXT NOT NULL,
    since_s REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS holds_run ON holds (run_id);
"""


class SqliteLeaseStore:
    """Leases in one SQLite file; every change is one ``BEGIN IMMEDIATE`` transaction.

    The default rollback journal is kept (not WAL): WAL needs shared memory and
    does not work on a network filesystem.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().absolute()
        self.host = socket.gethostname()
        try:  # own, private (or lab-group) directory and file: nobody else may write them
            if not self.path.parent.exists():
                safefs.private_dir(self.path.parent)
            safefs.check_existing(self.path.parent, "directory")
            os.close(safefs.open_private(self.path))
            for suffix in ("-journal", "-wal", "-shm"):  # SQLite's side files, if any
                safefs.check_existing(f"{self.path}{suffix}")
        except UnsafePath as exc:
            raise StoreUnusable(str(self.path), f"unsafe lease store: {exc}") from None
        except OSError as exc:
            raise StoreUnusable(
                str(self.path), f"cannot open the lease store: {exc.strerror or exc}{_hint(exc)}"
            ) from None
        with self._transaction() as db:
            for statement in _SCHEMA.split(";"):
                db.execute(statement)

    def __repr__(self) -> str:
        return f"SqliteLeaseStore({str(self.path)!r})"

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; waits up to BUSY_TIMEOUT_S for another one to finish."""
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreUnavailable(str(self.path), f"cannot open the lease store: {exc}") from exc
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:  # "database is locked", I/O errors
            raise StoreUnavailable(str(self.path), f"lease store unavailable: {exc}") from None
        except sqlite3.DatabaseError as exc:  # not a database, malformed
            raise StoreUnusable(
                str(self.path),
                f"the lease store is corrupt ({exc}); move it away (no run holds anything "
                "once it is gone, so stop the lab's runs first)",
            ) from None
        finally:
            db.close()

    def try_acquire(
        self, keys: Mapping[str, str], member: Member, ttl_s: float
    ) -> dict[str, Holder]:
        h = member.holder
        with self._transaction() as db:
            now = time.time()
            self._purge(db, now)
            blockers = self._blockers(db, keys, h.run_id)
            if blockers:
                return blockers
            db.execute(
                "INSERT OR REPLACE INTO members VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    member.member_id,
                    h.run_id,
                    h.user,
                    h.host,
                    h.pid,
                    h.since_s,
                    now + ttl_s,
                    "",  # legacy column: lock paths are derived, never read back
                ),
            )
            db.executemany(
                "INSERT OR IGNORE INTO holds VALUES (?, ?, ?, ?)",
                [(key, label, h.run_id, now) for key, label in keys.items()],
            )
        return {}

    def renew(self, member_id: str, keys: Mapping[str, str], ttl_s: float) -> str | None:
        with self._transaction() as db:
            now = time.time()
            row = db.execute(
                "SELECT run_id, expires_s FROM members WHERE member_id = ?", (member_id,)
            ).fetchone()
            if row is None:
                return "its lease was removed from the store"
            run_id, expires_s = row
            if expires_s < now:
                return f"its lease expired {now - expires_s:.1f} s ago (heartbeat too late)"
            taken = self._blockers(db, keys, run_id)
            if taken:
                return f"devices were taken over: {describe(taken)}"
            missing = [
                label
                for key, label in keys.items()
                if db.execute("SELECT 1 FROM holds WHERE device = ?", (key,)).fetchone() is None
            ]
            if missing:
                return f"the store no longer records its hold on {', '.join(missing)}"
            db.execute(
                "UPDATE members SET expires_s = ? WHERE member_id = ?", (now + ttl_s, member_id)
            )
        return None

    def release(self, member_id: str) -> None:
        with self._transaction() as db:
            row = db.execute(
                "SELECT run_id FROM members WHERE member_id = ?", (member_id,)
            ).fetchone()
            db.execute("DELETE FROM members WHERE member_id = ?", (member_id,))
            if row is not None:
                self._drop_orphans(db)

    def holders(self, keys: Mapping[str, str]) -> dict[str, Holder]:
        with self._transaction() as db:
            self._purge(db, time.time())
            return self._blockers(db, keys, run_id=None)

    def leases(self) -> list[LeaseRow]:
        """Every live hold in the store, oldest first (the dead are purged first)."""
        with self._transaction() as db:
            self._purge(db, time.time())
            rows = db.execute(
                "SELECT h.device, h.label, h.run_id, m.user, m.host, m.pid, h.since_s, "
                "(SELECT max(expires_s) FROM members x WHERE x.run_id = h.run_id) "
                "FROM holds h JOIN members m ON m.run_id = h.run_id "
                "WHERE m.since_s = (SELECT min(since_s) FROM members y WHERE y.run_id = h.run_id) "
                "GROUP BY h.device ORDER BY h.since_s, h.label"
            ).fetchall()
        return [LeaseRow(r[0], r[1], r[2], r[3], r[4], int(r[5]), float(r[6]), float(r[7]))
                for r in rows]

    def release_run(self, run_id: str) -> int:
        """Take a run's devices away (its holder learns it at its next renewal); devices freed."""
        with self._transaction() as db:
            db.execute("DELETE FROM members WHERE run_id = ?", (run_id,))
            return db.execute("DELETE FROM holds WHERE run_id = ?", (run_id,)).rowcount

    # --- inside a transaction -------------------------------------------------

    def _purge(self, db: sqlite3.Connection, now: float) -> None:
        """Forget expired members, dead members of this host, and holds nobody keeps."""
        db.execute("DELETE FROM members WHERE expires_s < ?", (now,))
        local = db.execute("SELECT member_id FROM members WHERE host = ?", (self.host,))
        for (member_id,) in local.fetchall():
            if not _MEMBER_ID.match(str(member_id)):
                continue  # not written by labtest: leave it to expiry
            if _lock_abandoned(member_lock_path(member_id)):
                db.execute("DELETE FROM members WHERE member_id = ?", (member_id,))
        self._drop_orphans(db)

    @staticmethod
    def _drop_orphans(db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM holds WHERE run_id NOT IN (SELECT run_id FROM members)")

    @staticmethod
    def _blockers(
        db: sqlite3.Connection, keys: Mapping[str, str], run_id: str | None
    ) -> dict[str, Holder]:
        """Holds on ``keys`` by runs other than ``run_id``, with their earliest member."""
        out: dict[str, Holder] = {}
        for key, label in keys.items():
            row = db.execute(
                "SELECT m.user, m.host, m.pid, m.run_id, m.since_s FROM holds h "
                "JOIN members m ON m.run_id = h.run_id WHERE h.device = ? "
                "ORDER BY m.since_s LIMIT 1",
                (key,),
            ).fetchone()
            if row is not None and row[3] != run_id:
                out[label] = Holder(row[0], row[1], int(row[2]), row[3], float(row[4]))
        return out


def _lock_abandoned(path: Path) -> bool:
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


def _hint(exc: BaseException) -> str:
    """What to do when another user's private store is in the way."""
    if isinstance(exc, PermissionError):
        return (f" (another user's private store? share it through a lab group, "
                f"${safefs.ENV_GROUP}, or use your own with --lease-store)")
    return ""


def _postgres_store(rest: str) -> LeaseStore:
    from labtest.db.leases import PgLeaseStore  # psycopg only when PostgreSQL is asked for

    return PgLeaseStore(f"postgresql://{rest}")


#: ``--lease-store`` URL scheme -> store factory (plus the ``labtest.lease_stores`` entry points)
STORES: dict[str, Callable[[str], LeaseStore]] = {
    "sqlite": SqliteLeaseStore,
    "postgresql": _postgres_store,
    "postgres": _postgres_store,
}


def default_store_path() -> Path:
    """One store per host, shared by its users: ``<tmp>/labtest-leases/leases.db``."""
    return _shared_dir() / "leases.db"


def _shared_dir() -> Path:
    """This host's lease directory, 0700 (2770 with a lab group); never a planted one.

    A symlink, a directory of another user (outside the lab group) or one
    writable by everybody is refused (:class:`StoreUnusable`), not chmod-ed.
    """
    path = Path(tempfile.gettempdir()) / "labtest-leases"
    try:
        return safefs.private_dir(path)
    except UnsafePath as exc:
        raise StoreUnusable(str(path), f"unsafe lease directory: {exc}") from None


def open_store(url: str | None = None) -> LeaseStore:
    """``None`` (``$LABTEST_LEASE_STORE``, a PostgreSQL ``$LABTEST_DB``, or the host default),
    a path, or ``scheme://...`` (``postgresql://...`` for a store shared by many hosts)."""
    from labtest import db

    shared = db.env_url() if db.is_postgres(db.env_url()) else None
    url = url or os.environ.get(ENV_STORE) or shared or str(default_store_path())
    scheme, sep, rest = url.partition("://")
    if not sep:
        return SqliteLeaseStore(url)
    factory = STORES.get(scheme)
    if factory is None:
        for ep in entry_points(group="labtest.lease_stores"):
            if ep.name == scheme:
                factory = ep.load()
    if factory is None:
        known = ", ".join(sorted(STORES))
        raise ValueError(
            f"unknown lease store scheme {scheme!r} in {db.display_url(url)!r}; known: {known}"
        )
    return factory(rest)


# --- the holder's side --------------------------------------------------------------


class Lease:
    """A member's hold on its run's devices, renewed by a heartbeat thread until released."""

    def __init__(
        self,
        store: LeaseStore,
        keys: Mapping[str, str],
        member: Member,
        lock: FileLock,
        ttl_s: float,
    ) -> None:
        self.store = store
        self.keys = dict(keys)
        self.member = member
        self.ttl_s = ttl_s
        self.lost_reason: str | None = None
        self._lock_file = lock
        self._mutex = threading.Lock()
        self._trusted_until = time.monotonic() + ttl_s * (1 - SAFETY)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="labtest-lease", daemon=True)
        self._beat.start()

    @property
    def holder(self) -> Holder:
        return self.member.holder

    def __repr__(self) -> str:
        return f"Lease({len(self.keys)} devices, {self.holder}, valid={self.valid()})"

    def valid(self) -> bool:
        """Still held, as far as this process can tell without asking the store."""
        if self.lost_reason is None and time.monotonic() > self._trusted_until:
            self.lost_reason = f"no successful renewal for {self.ttl_s * (1 - SAFETY):.1f} s"
        return self.lost_reason is None

    def confirm(self) -> None:
        """Renew now; raise :class:`LeaseLost` (naming why) when the lease is gone."""
        self.renew()
        if not self.valid():
            raise LeaseLost(
                ", ".join(sorted(self.keys.values())),
                f"lease lost, stopping before touching the devices again: {self.lost_reason}",
            )

    def renew(self) -> None:
        with self._mutex:
            if self.lost_reason is not None:
                return
            started = time.monotonic()
            try:
                reason = self.store.renew(self.member.member_id, self.keys, self.ttl_s)
            except (StoreUnavailable, OSError):
                return  # unreachable for now; valid() runs out if it stays so
            if reason is None:
                self._trusted_until = started + self.ttl_s * (1 - SAFETY)
            else:
                self.lost_reason = reason

    def release(self) -> None:
        self._stop.set()
        if self._beat is not threading.current_thread():
            self._beat.join(timeout=5.0)
        with contextlib.suppress(StoreUnavailable, OSError):
            self.store.release(self.member.member_id)  # else it expires
        self._lock_file.release()
        with contextlib.suppress(OSError):
            self.member.lock_path.unlink()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self.renew()


def reserve(
    keys: Mapping[str, str],
    *,
    store: LeaseStore | None = None,
    run_id: str | None = None,
    ttl_s: float = DEFAULT_TTL_S,
    wait_s: float = DEFAULT_WAIT_S,
    on_wait: Callable[[dict[str, Holder]], None] | None = None,
    host: str | None = None,
) -> Lease:
    """Hold ``keys`` (device key -> label) for this process, waiting up to ``wait_s``.

    ``wait_s=0`` fails fast. Processes passing the same ``run_id`` (xdist workers
    of one session) share the hold. ``on_wait`` hears about the blockers whenever
    they change. ``host`` overrides the host name recorded (tests use it to play a
    runner on another host, whose crash only expiry can detect).
    """
    __tracebackhide__ = True  # a busy lab is one line, not a traceback
    if ttl_s <= 0:
        raise ValueError("ttl_s must be > 0")
    store = store or open_store()
    holder = Holder.me(run_id or uuid.uuid4().hex[:12], host)
    member_id = uuid.uuid4().hex
    lock_path = member_lock_path(member_id)
    try:
        os.close(safefs.open_private(lock_path))  # ours, mode set, no symlink followed
    except (OSError, UnsafePath) as exc:
        text = getattr(exc, "strerror", None) or str(exc)
        raise StoreUnusable(str(lock_path), f"cannot create the member lock: {text}"
                            f"{_hint(exc)}") from None
    lock = FileLock(lock_path, timeout=0, mode=safefs.file_mode())
    lock.acquire()
    start = time.monotonic()
    seen: dict[str, Holder] = {}
    try:
        while True:
            member = Member(member_id, replace(holder, since_s=time.time()))
            blockers = store.try_acquire(keys, member, ttl_s)
            if not blockers:
                return Lease(store, keys, member, lock, ttl_s)
            waited = time.monotonic() - start
            if waited >= wait_s:
                raise DevicesBusy(blockers, waited)
            if blockers != seen and on_wait is not None:
                on_wait(blockers)
            seen = blockers
            time.sleep(min(POLL_S, max(wait_s - waited, 0.01)))
    except BaseException:
        lock.release()
        with contextlib.suppress(OSError):
            lock_path.unlink()
        raise
