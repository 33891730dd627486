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

The store is pluggable (:class:`~labtest.reservation.store.LeaseStore`, with what every
store shares); the default is SQLite (:class:`~labtest.reservation.sqlite.SqliteLeaseStore`).
Several hosts share a PostgreSQL store instead (``postgresql://...`` or ``$LABTEST_DB``,
:class:`~labtest.reservation.postgres.PgLeaseStore`), whose times are the server's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from importlib.metadata import entry_points

from filelock import FileLock

from labtest import safefs
from labtest.reservation.postgres import PgLeaseStore
from labtest.reservation.sqlite import SqliteLeaseStore
from labtest.reservation.store import (
    DEFAULT_TTL_S,
    DEFAULT_WAIT_S,
    ENV_STORE,
    POLL_S,
    SAFETY,
    DevicesBusy,
    Holder,
    LeaseLost,
    LeaseStore,
    Member,
    StoreUnavailable,
    StoreUnusable,
    default_store_path,
    member_lock_path,
    permission_hint,
)
from labtest.safefs import UnsafePath


def _postgres_store(rest: str) -> LeaseStore:
    return PgLeaseStore(f"postgresql://{rest}")


#: ``--lease-store`` URL scheme -> store factory (plus the ``labtest.lease_stores`` entry points)
STORES: dict[str, Callable[[str], LeaseStore]] = {
    "sqlite": SqliteLeaseStore,
    "postgresql": _postgres_store,
    "postgres": _postgres_store,
}



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
                            f"{permission_hint(exc)}") from None
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
