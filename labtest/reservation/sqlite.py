"""Leases in one SQLite file: the default :class:`~labtest.reservation.store.LeaseStore`.

A file on a local or shared filesystem, serialised with ``BEGIN IMMEDIATE`` transactions.
Times in it are wall-clock epoch seconds of whichever runner wrote them, so runners sharing
it need clocks within a small fraction of the lease time of each other (NTP).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from labtest import safefs
from labtest.reservation.store import (
    BUSY_TIMEOUT_S,
    MEMBER_ID,
    Holder,
    LeaseRow,
    Member,
    StoreUnavailable,
    StoreUnusable,
    describe,
    lock_abandoned,
    member_lock_path,
    permission_hint,
)
from labtest.safefs import UnsafePath

SCHEMA = """
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
            why = f"cannot open the lease store: {exc.strerror or exc}{permission_hint(exc)}"
            raise StoreUnusable(str(self.path), why) from None
        with self._transaction() as db:
            for statement in SCHEMA.split(";"):
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
            if not MEMBER_ID.match(str(member_id)):
                continue  # not written by labtest: leave it to expiry
            if lock_abandoned(member_lock_path(member_id)):
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


