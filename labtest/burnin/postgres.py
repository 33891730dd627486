"""Burn-in samples in PostgreSQL: one database for a whole floor of stations.

The same ``SampleStore`` as the SQLite file (:mod:`labtest.burnin.store`), the
same tables in schema ``labtest_burnin``. What changes:

- **Many writers.** Every station (and every monitor thread of one) writes its
  own readings concurrently; PostgreSQL's row locks replace SQLite's one writer.
- **Exactly once.** ``series`` is unique on (run, unit, port, lane, metric) and
  ``samples`` on (series, sched_index): the existing logical key. A reading is
  one transaction: one multi-row ``INSERT ... SELECT unnest(...) ON CONFLICT DO
  NOTHING`` for its samples and its ``readings`` row, so a reading taken again
  after a resume -- on this station or any other -- is never stored twice.
- **Durability** is the server's (``synchronous_commit``, replication, backups:
  the DBA's). A commit that returned is on the server; a station that dies
  loses at most its readings in flight, as with SQLite.
- ``runs()`` lists every station's runs (``labtest burnin --list``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from labtest import db as dbm
from labtest.burnin.schema import POSTGRES_DDL, SCHEMA_VERSION
from labtest.burnin.store import (
    Event,
    Reading,
    Run,
    SqlStoreBase,
    StoreError,
    Unit,
    Verdict,
)

SCHEMA = "labtest_burnin"


def _format_style(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """Server and driver errors of a store method become one-line :class:`StoreError`s."""

    @functools.wraps(method)
    def guarded(self: PgSampleStore, *args: Any, **kwargs: Any) -> Any:
        import psycopg

        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            self._broken()
            raise StoreError(f"{self.display}: {dbm.one_line(exc)}") from None

    return guarded


class PgSampleStore(SqlStoreBase):
    """``SampleStore`` on a PostgreSQL server; one connection, shared by the runner's threads.

    What it reads back, and the rows it writes, are :class:`SqlStoreBase`'s, as SQLite's."""

    def __init__(self, url: str, create: bool = True) -> None:
        self.path = url  # what --resume/--report reopen (printed only via display_url)
        self.display = dbm.display_url(url)
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str, str, int, str], int] = {}
        try:
            self._conn: Any = dbm.connect(url, SCHEMA, POSTGRES_DDL)
        except dbm.DatabaseUnavailable as exc:
            raise StoreError(" ".join(str(exc).split())) from None
        try:
            self._check_version()
            if not create and not self.runs():
                raise StoreError(f"{self.display}: no burn-in runs in this database")
        except BaseException:
            self._conn.close()
            raise

    def _broken(self) -> None:
        """After a server error the session may be unusable: reconnect on the next call."""
        if self._conn.broken:
            with contextlib.suppress(dbm.DatabaseUnavailable):
                self._conn = dbm.connect(self.path, SCHEMA, POSTGRES_DDL)

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock, self._conn.transaction():
            yield self._conn

    @_guarded
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run :class:`SqlStoreBase`' ``?``-placeholder SQL (psycopg takes ``%s``)."""
        with self._lock:
            return list(self._conn.execute(_format_style(sql), args).fetchall())

    def _json(self, value: Any) -> Any:
        return value  # jsonb: psycopg has decoded it

    @_guarded
    def _check_version(self) -> None:
        with self._tx() as conn:
            conn.execute("INSERT INTO meta VALUES ('schema', %s) ON CONFLICT DO NOTHING",
                         (str(SCHEMA_VERSION),))
            found = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0]
        if int(found) != SCHEMA_VERSION:
            raise StoreError(f"{self.display}: schema {found}, this labtest reads {SCHEMA_VERSION}")

    @_guarded
    def check_writable(self) -> None:
        """Prove a write can be made now (server up, role may write)."""
        with self._tx() as conn:
            conn.execute("INSERT INTO meta VALUES ('write-check', 'ok') "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value")

    def release_reserve(self) -> bool:
        return False  # the server's disk is the DBA's

    # --- runs and units -------------------------------------------------------------

    @_guarded
    def create_run(self, run: Run) -> None:
        with self._tx() as conn:
            conn.execute("INSERT INTO runs VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s::jsonb)",
                         self._run_row(run))

    @_guarded
    def update_run(self, run_id: str, **fields: Any) -> None:
        fields = self._run_updates(fields)
        sets = ", ".join(f"{k}=%s::jsonb" if k == "info" else f"{k}=%s" for k in fields)
        with self._tx() as conn:
            conn.execute(f"UPDATE runs SET {sets} WHERE run_id=%s", (*fields.values(), run_id))

    @_guarded
    def put_units(self, run_id: str, units: Sequence[Unit]) -> None:
        rows = self._unit_rows(run_id, units)
        with self._tx() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO units VALUES (%s,%s,%s,%s,%s,%s,%s::jsonb) "
                "ON CONFLICT (run_id, serial) DO UPDATE SET kind=EXCLUDED.kind, "
                "device=EXCLUDED.device, port=EXCLUDED.port, under_test=EXCLUDED.under_test, "
                "info=EXCLUDED.info", rows)

    # --- readings --------------------------------------------------------------------

    @_guarded
    def write(self, run_id: str, reading: Reading) -> int:
        """Commit the reading and its samples atomically; returns samples newly stored."""
        with self._tx() as conn:
            ids = self._series_ids(conn, run_id, reading)
            added = 0
            if reading.samples:
                cur = conn.execute(
                    "INSERT INTO samples SELECT s, %s, %s, %s, v "
                    "FROM unnest(%s::bigint[], %s::float8[]) AS x(s, v) ON CONFLICT DO NOTHING",
                    (reading.sched_index, reading.t_s, reading.wall_s, ids,
                     [s.value for s in reading.samples]))
                added = int(cur.rowcount)
            conn.execute(
                "INSERT INTO readings VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING",
                self._reading_row(run_id, reading))
        return added

    def _series_ids(self, conn: Any, run_id: str, reading: Reading) -> list[int]:
        keys = [(run_id, s.unit, s.port, s.lane, s.metric) for s in reading.samples]
        missing = {k: s.uom for k, s in zip(keys, reading.samples, strict=True)
                   if k not in self._series}
        if missing:
            cols = list(zip(*[(*k[1:], uom) for k, uom in missing.items()], strict=True))
            conn.execute(
                "INSERT INTO series (run_id, unit, port, lane, metric, uom) "
                "SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], "
                "%s::text[]) ON CONFLICT DO NOTHING", (run_id, *map(list, cols)))
            for sid, rid, unit, port, lane, metric in conn.execute(
                "SELECT series_id, run_id, unit, port, lane, metric FROM series WHERE run_id=%s",
                (run_id,)):
                self._series[(rid, unit, port, int(lane), metric)] = int(sid)
        return [self._series[k] for k in keys]

    # --- events ----------------------------------------------------------------------

    @_guarded
    def event(self, run_id: str, event: Event) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO events (run_id, t_s, wall_s, kind, unit, key, text) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s)", self._event_row(run_id, event))

    # --- verdicts ----------------------------------------------------------------------

    @_guarded
    def put_verdicts(self, run_id: str, verdicts: Sequence[Verdict]) -> None:
        """Replace the run's stored verdicts (a re-analysis supersedes the last one)."""
        rows = self._verdict_rows(run_id, verdicts)
        with self._tx() as conn:
            conn.execute("DELETE FROM verdicts WHERE run_id=%s", (run_id,))
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO verdicts VALUES (%s,%s,%s,%s,%s,%s,%s,%s)", rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
