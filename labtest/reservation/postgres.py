"""Device leases in PostgreSQL: the same ``LeaseStore`` as the SQLite file, for many hosts.

Same two tables as the SQLite store (``members``: one row per process of a run
with its expiry; ``holds``: which run holds which device), in schema
``labtest_leases``, with the server's clock for every time: runners need not
agree on the time, only the database does.

- **Acquire** (and every purge of the dead) is one transaction under one
  transaction-scoped advisory lock: look for live holds on the wanted devices
  by other runs, insert every hold or none. All-or-nothing, no deadlock.
- **Renew** locks its own member row (``SELECT ... FOR UPDATE``), checks it has
  not expired and that its run still holds every device, and pushes the expiry
  forward. A purge that wants to delete the same row waits for that row lock and
  then sees the new expiry, so a renewal and a purge never both win.
- **Expiry** is what frees the devices of a holder that died on another machine
  (``kill -9``, power, network): at most one lease time after its last renewal.
  On the holder's own host its member lock file frees them at once, as with SQLite.
- A process frozen inside a transaction holds the advisory lock only until the
  server's ``idle_in_transaction_session_timeout`` ends its session.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from labtest import db as dbm
from labtest.reservation.store import (
    MEMBER_ID,
    Holder,
    LeaseRow,
    Member,
    StoreUnavailable,
    describe,
    lock_abandoned,
    member_lock_path,
)

SCHEMA = "labtest_leases"
#: pg_advisory_xact_lock key serialising acquires and purges ("leases" in ASCII)
LEASE_LOCK = 0x6C6561736573

DDL = """
CREATE TABLE IF NOT EXISTS members (
    member_id text PRIMARY KEY,
    run_id    text NOT NULL,
    username  text NOT NULL,
    host      text NOT NULL,
    pid       integer NOT NULL,
    since     timestamptz NOT NULL,
    expires   timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS members_run ON members (run_id);
CREATE TABLE IF NOT EXISTS holds (
    device  text PRIMARY KEY,
    label   text NOT NULL,
    run_id  text NOT NULL,
    since   timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS holds_run ON holds (run_id)
"""

_EPOCH = "extract(epoch from {})::float8"


class PgLeaseStore:
    """``reservation.LeaseStore`` on PostgreSQL; one connection, shared by a lease's threads."""

    def __init__(self, url: str) -> None:
        if not dbm.is_postgres(url):
            url = "postgresql://" + url  # reached through reservation.STORES (scheme stripped)
        self.url = url
        self.host = socket.gethostname()
        self._mutex = threading.Lock()
        self._conn: Any = None
        with self._session():
            pass  # connect now: a wrong URL is one clear error before anything is held

    def __repr__(self) -> str:
        return f"PgLeaseStore({dbm.display_url(self.url)!r})"

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        """The connection (reconnecting after a failure); errors become ``StoreUnavailable``."""
        import psycopg

        with self._mutex:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = dbm.connect(self.url, SCHEMA, DDL)
                yield self._conn
            except dbm.DatabaseUnavailable as exc:
                raise StoreUnavailable(dbm.display_url(self.url), str(exc)) from None
            except psycopg.Error as exc:
                with contextlib.suppress(psycopg.Error):
                    self._conn.close()
                self._conn = None
                raise StoreUnavailable(
                    dbm.display_url(self.url), f"lease store unavailable: {dbm.one_line(exc)}"
                ) from None

    # --- the LeaseStore protocol --------------------------------------------------------

    def try_acquire(
        self, keys: Mapping[str, str], member: Member, ttl_s: float
    ) -> dict[str, Holder]:
        h = member.holder
        with self._session() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASE_LOCK,))
            self._purge(conn)
            blockers = self._blockers(conn, keys, h.run_id)
            if blockers:
                return blockers
            conn.execute(
                "INSERT INTO members VALUES (%s, %s, %s, %s, %s, clock_timestamp(), "
                "clock_timestamp() + make_interval(secs => %s)) "
                "ON CONFLICT (member_id) DO UPDATE SET expires = EXCLUDED.expires",
                (member.member_id, h.run_id, h.user, h.host, h.pid, ttl_s),
            )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO holds VALUES (%s, %s, %s, now()) "
                    "ON CONFLICT (device) DO NOTHING",
                    [(key, label, h.run_id) for key, label in keys.items()],
                )
        return {}

    def renew(self, member_id: str, keys: Mapping[str, str], ttl_s: float) -> str | None:
        with self._session() as conn, conn.transaction():
            row = conn.execute(
                "SELECT run_id, " + _EPOCH.format("clock_timestamp() - expires")
                + " FROM members WHERE member_id = %s FOR UPDATE",
                (member_id,),
            ).fetchone()
            if row is None:
                return "its lease was removed from the store"
            run_id, late_s = row
            if late_s > 0:
                return f"its lease expired {late_s:.1f} s ago (heartbeat too late)"
            taken = self._blockers(conn, keys, run_id)
            if taken:
                return f"devices were taken over: {describe(taken)}"
            held = {
                r[0]
                for r in conn.execute(
                    "SELECT device FROM holds WHERE device = ANY(%s) AND run_id = %s",
                    (list(keys), run_id),
                )
            }
            missing = [label for key, label in keys.items() if key not in held]
            if missing:
                return f"the store no longer records its hold on {', '.join(missing)}"
            conn.execute(
                "UPDATE members SET expires = clock_timestamp() + make_interval(secs => %s) "
                "WHERE member_id = %s",
                (ttl_s, member_id),
            )
        return None

    def release(self, member_id: str) -> None:
        with self._session() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASE_LOCK,))
            conn.execute("DELETE FROM members WHERE member_id = %s", (member_id,))
            conn.execute("DELETE FROM holds WHERE run_id NOT IN (SELECT run_id FROM members)")

    def holders(self, keys: Mapping[str, str]) -> dict[str, Holder]:
        with self._session() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASE_LOCK,))
            self._purge(conn)
            return self._blockers(conn, keys, run_id=None)

    # --- for `labtest lease` --------------------------------------------------------------

    def leases(self) -> list[LeaseRow]:
        """Every live hold of every runner, oldest first (the dead are purged first)."""
        with self._session() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASE_LOCK,))
            self._purge(conn)
            rows = conn.execute(
                "SELECT DISTINCT ON (h.device) h.device, h.label, h.run_id, m.username, m.host, "
                "m.pid, " + _EPOCH.format("h.since") + ", "
                + _EPOCH.format("(SELECT max(expires) FROM members x WHERE x.run_id = h.run_id)")
                + " FROM holds h JOIN members m ON m.run_id = h.run_id "
                "ORDER BY h.device, m.since"
            ).fetchall()
        return sorted((LeaseRow(*r) for r in rows), key=lambda r: (r.since_s, r.label))

    def release_run(self, run_id: str) -> int:
        """Take a run's devices away (its holder learns it at its next renewal); devices freed."""
        with self._session() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LEASE_LOCK,))
            conn.execute("DELETE FROM members WHERE run_id = %s", (run_id,))
            cur = conn.execute("DELETE FROM holds WHERE run_id = %s", (run_id,))
            return int(cur.rowcount)

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # --- inside a transaction holding LEASE_LOCK -------------------------------------------

    def _purge(self, conn: Any) -> None:
        """Forget expired members, dead members of this host, and holds nobody keeps."""
        conn.execute("DELETE FROM members WHERE expires < clock_timestamp()")
        local = conn.execute("SELECT member_id FROM members WHERE host = %s", (self.host,))
        for (member_id,) in local.fetchall():
            if MEMBER_ID.match(str(member_id)) and lock_abandoned(member_lock_path(member_id)):
                conn.execute("DELETE FROM members WHERE member_id = %s", (member_id,))
        conn.execute("DELETE FROM holds WHERE run_id NOT IN (SELECT run_id FROM members)")

    @staticmethod
    def _blockers(conn: Any, keys: Mapping[str, str], run_id: str | None) -> dict[str, Holder]:
        """Holds on ``keys`` by runs other than ``run_id``, with their earliest member."""
        rows = conn.execute(
            "SELECT DISTINCT ON (h.device) h.device, m.username, m.host, m.pid, m.run_id, "
            + _EPOCH.format("m.since")
            + " FROM holds h JOIN members m ON m.run_id = h.run_id "
            "WHERE h.device = ANY(%s) ORDER BY h.device, m.since",
            (list(keys),),
        ).fetchall()
        return {
            keys[r[0]]: Holder(r[1], r[2], int(r[3]), r[4], float(r[5]))
            for r in rows
            if r[4] != run_id
        }
