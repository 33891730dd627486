"""Durable burn-in storage: every reading committed the moment it is taken.

The interface (``SampleStore``) is deliberately narrow — runs, units, readings,
events, and series read back one at a time — so a server database stands in
for SQLite without touching the runner or the analysis: a ``postgresql://``
URL (``--db``, ``storage.url`` or ``$LABTEST_DB``) opens
:class:`labtest.burnin.postgres.PgSampleStore`, one database for a floor of stations.

SQLite layout (WAL journal, one writer; the tables are PostgreSQL's too, written once in
:mod:`labtest.burnin.schema`):

- ``series``: one row per (run, unit serial, port, lane, metric) with its unit
  of measure; ``UNIQUE(run_id, unit, port, lane, metric)``.
- ``samples``: (series, sched_index) -> run time, wall time, value;
  ``PRIMARY KEY(series_id, sched_index)``. Together the two constraints are
  the logical ``UNIQUE(run, unit, port, lane, metric, sched_index)``: a sample
  re-taken after a resume is ignored (``INSERT OR IGNORE``), never duplicated.
- ``readings``: which (monitor, target, sched_index) are done, committed in the
  same transaction as their samples; resume takes everything not in it.
- ``runs``, ``units``, ``events``: the run record, the units found in
  inventory, and what happened (phases, alarms, resumes, errors).
- ``verdicts``: each unit's verdict, written when a run is analysed (at its
  end, or ``--report``), so ``labtest burnin --serial SN`` answers across runs
  (and, on a shared server, across the floor) without analysing again.

A reading (one monitor call on one device or link) is one transaction, so
``kill -9`` loses at most the readings in flight. With ``synchronous=FULL``
every commit is fsynced: a power cut loses nothing committed either.

Every SQLite failure becomes a one-line :class:`StoreError` naming the file and
what is wrong with it (corrupt, locked, read-only, disk full). The file is
created 0600 (0660 with a lab group, :mod:`labtest.safefs`) without following a
symlink, and a small *reserve* file next to it is given back when the disk
fills, so the runner can still close the run record. Text written (events,
errors, run and unit info) is scrubbed of known secrets.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from labtest import safefs, secrets
from labtest.burnin.schema import SCHEMA_VERSION, SQLITE_DDL


class StoreError(Exception):
    """The database cannot be used (wrong schema, unknown run, corrupt, locked, full)."""


class StoreFull(StoreError):
    """The disk holding the database is full."""


#: how long a write waits for another writer before the database counts as locked
BUSY_TIMEOUT_S = 30.0
#: space kept next to the database and given back when the disk fills (to close the run)
RESERVE_BYTES = 256 * 1024


def storage_error(path: Path, exc: BaseException) -> StoreError:
    """One line saying what is wrong with the database file, from SQLite's or the OS's error."""
    text = str(exc)
    low = text.lower()
    if "full" in low or getattr(exc, "errno", None) == 28:
        return StoreFull(f"{path}: the disk is full ({text}); free space, then resume the run")
    if "locked" in low or "busy" in low:
        return StoreError(f"{path}: the database is locked by another process ({text}); "
                          "is another burn-in using it?")
    if "readonly" in low or "read-only" in low or "permission" in low:
        return StoreError(f"{path}: the database cannot be written ({text})")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return StoreError(f"{path}: the database is corrupt ({text}); "
                          "move it away or give another --db")
    if "unable to open" in low:
        return StoreError(f"{path}: the database cannot be opened or created ({text})")
    return StoreError(f"{path}: {text}")


def _allocate(fd: int, size: int) -> None:
    """Really take ``size`` bytes of disk (zeros where the file system cannot fallocate)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise
        os.write(fd, bytes(size))
        os.fsync(fd)


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn SQLite and OS errors of a store method into one-line :class:`StoreError`s."""

    @functools.wraps(method)
    def guarded(self: SqliteStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            raise storage_error(self.path, exc) from None

    return guarded


# --- records -------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    unit: str  # serial of the unit the value belongs to
    port: str  # "device:port", or "" for a device-level value
    lane: int  # 1-based lane; 0 = the whole module or port
    metric: str  # "tx_power_dbm", "fec_uncorrectable_cw", ...
    value: float
    uom: str  # unit of measure: "dBm", "mA", "codewords", ...


@dataclass(frozen=True)
class Reading:
    """One monitor call on one target (device or link) at one scheduled instant."""

    monitor: str
    target: str
    sched_index: int
    t_s: float  # run time when taken (virtual on the emulated lab)
    wall_s: float  # epoch seconds when taken
    samples: Sequence[Sample] = ()
    error: str | None = None


@dataclass(frozen=True)
class Unit:
    serial: str
    kind: str  # "switch", "module", "instrument"
    device: str
    port: str  # "" for a device
    under_test: bool
    info: dict[str, Any] = field(default_factory=dict)  # vendor, part number, thresholds...


@dataclass(frozen=True)
class Run:
    run_id: str
    station: str
    status: str  # "running", "stopped", "complete"
    created_utc: str
    duration_s: float
    position_s: float = 0.0
    pid: int | None = None
    host: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    t_s: float
    wall_s: float
    kind: str
    text: str
    unit: str | None = None
    key: str | None = None  # what an alarm is about ("port|metric"), so a resume won't repeat it


@dataclass(frozen=True)
class Verdict:
    """A unit's verdict in one run, as stored after the analysis."""

    run_id: str
    serial: str
    kind: str
    location: str  # "leaf1:Ethernet8", or the device
    verdict: str  # PASS, MARGINAL, FAIL, INCOMPLETE
    coverage_pct: float
    reason: str | None  # the first reason, if any
    judged_utc: str
    station: str = ""  # of the run (filled when read back)
    host: str = ""


@dataclass(frozen=True)
class SeriesKey:
    series_id: int
    unit: str
    port: str
    lane: int
    metric: str
    uom: str


class SampleStore(Protocol):
    """What the runner, the analysis and the CLI need from a database."""

    path: Any  # the file, or the server URL: what --resume / --report reopen

    def check_writable(self) -> None: ...

    def create_run(self, run: Run) -> None: ...

    def run(self, run_id: str) -> Run: ...

    def runs(self) -> list[Run]: ...

    def update_run(self, run_id: str, **fields: Any) -> None: ...

    def put_units(self, run_id: str, units: Sequence[Unit]) -> None: ...

    def units(self, run_id: str) -> list[Unit]: ...

    def write(self, run_id: str, reading: Reading) -> int: ...

    def done(self, run_id: str) -> set[tuple[str, str, int]]: ...

    def event(self, run_id: str, event: Event) -> None: ...

    def events(self, run_id: str, kinds: Sequence[str] | None = None) -> list[Event]: ...

    def series(self, run_id: str) -> list[SeriesKey]: ...

    def points(self, series_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def reading_counts(self, run_id: str) -> dict[tuple[str, str], tuple[int, int]]: ...

    def sample_count(self, run_id: str) -> int: ...

    def put_verdicts(self, run_id: str, verdicts: Sequence[Verdict]) -> None: ...

    def verdicts(self, serial: str) -> list[Verdict]: ...

    def close(self) -> None: ...


# --- what both SQL backends share ------------------------------------------------------


class SqlStoreBase:
    """What both SQL backends share: the queries that read back, and the rows written.

    The read SQL is accepted by SQLite and PostgreSQL alike and uses ``?``
    placeholders; each backend's ``_query`` runs it under the backend's lock and
    turns its driver's errors into :class:`StoreError` (PostgreSQL's turns ``?``
    into ``%s``). The rows written (what is stored, scrubbed of secrets) are built
    here; the write SQL, transactions and locking stay with each backend: they are
    where the two really differ.
    """

    display: str  # the file, or the server URL without its password: what messages name

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _json(self, value: Any) -> Any:
        """A JSON column as read: text in SQLite (PostgreSQL's jsonb arrives decoded)."""
        return json.loads(value)

    # --- rows written ----------------------------------------------------------------

    @staticmethod
    def _run_row(run: Run) -> tuple[Any, ...]:
        return (run.run_id, run.station, run.status, run.created_utc, run.duration_s,
                run.position_s, run.pid, run.host, json.dumps(secrets.redact_data(run.info)))

    @staticmethod
    def _run_updates(fields: dict[str, Any]) -> dict[str, Any]:
        """The fields ``update_run`` may change, ``info`` as scrubbed JSON; ValueError else."""
        bad = set(fields) - {"status", "position_s", "pid", "host", "info"}
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        if "info" in fields:
            fields = {**fields, "info": json.dumps(secrets.redact_data(fields["info"]))}
        return fields

    @staticmethod
    def _unit_rows(run_id: str, units: Sequence[Unit]) -> list[tuple[Any, ...]]:
        return [(run_id, u.serial, u.kind, u.device, u.port, u.under_test,
                 json.dumps(secrets.redact_data(u.info), default=str)) for u in units]

    @staticmethod
    def _reading_row(run_id: str, reading: Reading) -> tuple[Any, ...]:
        return (run_id, reading.monitor, reading.target, reading.sched_index, reading.t_s,
                reading.wall_s, secrets.redact(reading.error) if reading.error else None)

    @staticmethod
    def _event_row(run_id: str, event: Event) -> tuple[Any, ...]:
        return (run_id, event.t_s, event.wall_s, event.kind, event.unit, event.key,
                secrets.redact(event.text))

    @staticmethod
    def _verdict_rows(run_id: str, verdicts: Sequence[Verdict]) -> list[tuple[Any, ...]]:
        return [(run_id, v.serial, v.kind, v.location, v.verdict, v.coverage_pct,
                 secrets.redact(v.reason) if v.reason else None, v.judged_utc)
                for v in verdicts]

    # --- reading back ------------------------------------------------------------------

    def run(self, run_id: str) -> Run:
        rows = self._query(_RUNS + " WHERE run_id=?", (run_id,))
        if not rows:
            known = ", ".join(r.run_id for r in self.runs()[-5:]) or "none"
            raise StoreError(f"{self.display}: no run {run_id!r} (latest: {known})")
        return self._run(rows[0])

    def runs(self) -> list[Run]:
        return [self._run(r) for r in self._query(_RUNS + " ORDER BY created_utc, run_id")]

    def _run(self, row: tuple[Any, ...]) -> Run:
        run_id, station, status, created_utc, duration_s, position_s, pid, host, info = row
        return Run(run_id, station, status, created_utc, duration_s, position_s, pid, host,
                   self._json(info))

    def units(self, run_id: str) -> list[Unit]:
        rows = self._query(
            "SELECT serial, kind, device, port, under_test, info FROM units WHERE run_id=? "
            "ORDER BY device, port", (run_id,))
        return [Unit(r[0], r[1], r[2], r[3], bool(r[4]), self._json(r[5])) for r in rows]

    def done(self, run_id: str) -> set[tuple[str, str, int]]:
        rows = self._query(
            "SELECT monitor, target, sched_index FROM readings WHERE run_id=?", (run_id,))
        return {(r[0], r[1], int(r[2])) for r in rows}

    def reading_counts(self, run_id: str) -> dict[tuple[str, str], tuple[int, int]]:
        """``{(monitor, target): (readings, readings with an error)}``."""
        rows = self._query(
            "SELECT monitor, target, COUNT(*), COUNT(error) FROM readings WHERE run_id=? "
            "GROUP BY monitor, target", (run_id,))
        return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in rows}

    def events(self, run_id: str, kinds: Sequence[str] | None = None) -> list[Event]:
        sql = "SELECT t_s, wall_s, kind, text, unit, key FROM events WHERE run_id=?"
        args: tuple[Any, ...] = (run_id,)
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += tuple(kinds)
        return [Event(*r) for r in self._query(sql + " ORDER BY event_id", args)]

    def series(self, run_id: str) -> list[SeriesKey]:
        rows = self._query(
            "SELECT series_id, unit, port, lane, metric, uom FROM series WHERE run_id=? "
            "ORDER BY unit, port, metric, lane", (run_id,))
        return [SeriesKey(*r) for r in rows]

    def points(self, series_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sched_index, t_s, value) of one series, in schedule order."""
        rows = self._query(
            "SELECT sched_index, t_s, value FROM samples WHERE series_id=? ORDER BY sched_index",
            (series_id,))
        if not rows:
            empty = np.zeros(0)
            return empty.astype(np.int64), empty, empty
        arr = np.array(rows, dtype=float)
        return arr[:, 0].astype(np.int64), arr[:, 1], arr[:, 2]

    def sample_count(self, run_id: str) -> int:
        rows = self._query(
            "SELECT COUNT(*) FROM samples JOIN series USING (series_id) WHERE run_id=?",
            (run_id,))
        return int(rows[0][0])

    def verdicts(self, serial: str) -> list[Verdict]:
        """Every stored verdict of ``serial``, oldest run first, with its station and host."""
        rows = self._query(
            "SELECT v.run_id, v.serial, v.kind, v.location, v.verdict, v.coverage_pct, v.reason, "
            "v.judged_utc, r.station, COALESCE(r.host, '') FROM verdicts v JOIN runs r "
            "USING (run_id) WHERE v.serial=? ORDER BY r.created_utc, v.run_id", (serial,))
        return [Verdict(*r) for r in rows]

    def duplicate_count(self, run_id: str) -> int:
        """Samples sharing (run, unit, port, lane, metric, sched_index): 0 by construction."""
        rows = self._query(
            "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) AS n FROM samples "
            "JOIN series USING (series_id) WHERE run_id=? "
            "GROUP BY unit, port, lane, metric, sched_index) AS g", (run_id,))
        return int(rows[0][0])


_RUNS = ("SELECT run_id, station, status, created_utc, duration_s, position_s, pid, host, info "
         "FROM runs")


# --- SQLite ----------------------------------------------------------------------------


class SqliteStore(SqlStoreBase):
    """``SampleStore`` on one SQLite file in WAL mode; safe to share between threads."""

    def __init__(self, path: str | Path, synchronous: str = "full", create: bool = True) -> None:
        self.path = Path(path)
        self.display = str(self.path)
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str, str, int, str], int] = {}
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no burn-in database here")
        try:
            if not self.path.parent.exists():
                safefs.private_dir(self.path.parent)
            safefs.shared_dir_guard(self.path.parent)  # anyone could swap the file there
            os.close(safefs.open_private(self.path))
            for suffix in ("-wal", "-shm"):
                safefs.check_existing(f"{self.path}{suffix}")
        except safefs.UnsafePath as exc:
            raise StoreError(str(exc)) from None
        except OSError as exc:
            raise storage_error(self.path, exc) from None
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
        except sqlite3.Error as exc:
            raise storage_error(self.path, exc) from None
        try:
            self._open(synchronous)
        except BaseException:
            self._db.close()
            raise

    @_guarded
    def _open(self, synchronous: str) -> None:
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode})")
        level = {"full": "FULL", "normal": "NORMAL"}[synchronous]
        self._db.execute(f"PRAGMA synchronous={level}")
        self._db.executescript(SQLITE_DDL)
        self._check_version()

    @_guarded
    def check_writable(self) -> None:
        """Prove a write can be made now (not locked, not read-only); then keep a reserve."""
        with self._lock, _transaction(self._db):
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('write-check', 'ok')")
        reserve = self._reserve_path()
        with contextlib.suppress(FileExistsError):
            fd = safefs.open_private(reserve, os.O_WRONLY | os.O_EXCL)
            try:
                _allocate(fd, RESERVE_BYTES)
            except OSError:  # the disk is already (nearly) full: say so before the first sample
                reserve.unlink(missing_ok=True)
                raise
            finally:
                os.close(fd)

    def release_reserve(self) -> bool:
        """Give back the reserve's space (disk full); whether there was one."""
        try:
            self._reserve_path().unlink()
        except OSError:
            return False
        return True

    def _reserve_path(self) -> Path:
        return self.path.with_name(self.path.name + "-reserve")

    def _check_version(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema {row[0]}, this labtest reads {SCHEMA_VERSION}")

    # --- runs and units -------------------------------------------------------------

    @_guarded
    def create_run(self, run: Run) -> None:
        with self._lock:
            self._db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)", self._run_row(run))

    @_guarded
    def update_run(self, run_id: str, **fields: Any) -> None:
        fields = self._run_updates(fields)
        sets = ", ".join(f"{k}=?" for k in fields)
        with self._lock:
            self._db.execute(f"UPDATE runs SET {sets} WHERE run_id=?", (*fields.values(), run_id))

    @_guarded
    def put_units(self, run_id: str, units: Sequence[Unit]) -> None:
        rows = self._unit_rows(run_id, units)
        with self._lock, _transaction(self._db):
            self._db.executemany("INSERT OR REPLACE INTO units VALUES (?,?,?,?,?,?,?)", rows)

    # --- readings --------------------------------------------------------------------

    @_guarded
    def write(self, run_id: str, reading: Reading) -> int:
        """Commit the reading and its samples atomically; returns samples newly stored."""
        with self._lock, _transaction(self._db):
            rows = []
            for s in reading.samples:
                sid = self._series_id(run_id, s)
                rows.append((sid, reading.sched_index, reading.t_s, reading.wall_s, s.value))
            before = self._db.total_changes
            self._db.executemany("INSERT OR IGNORE INTO samples VALUES (?,?,?,?,?)", rows)
            added = self._db.total_changes - before
            self._db.execute("INSERT OR IGNORE INTO readings VALUES (?,?,?,?,?,?,?)",
                             self._reading_row(run_id, reading))
        return added

    def _series_id(self, run_id: str, s: Sample) -> int:
        key = (run_id, s.unit, s.port, s.lane, s.metric)
        sid = self._series.get(key)
        if sid is None:
            self._db.execute(
                "INSERT OR IGNORE INTO series (run_id, unit, port, lane, metric, uom) "
                "VALUES (?,?,?,?,?,?)", (*key, s.uom))
            sid = self._db.execute(
                "SELECT series_id FROM series WHERE run_id=? AND unit=? AND port=? AND lane=? "
                "AND metric=?", key).fetchone()[0]
            self._series[key] = sid
        return sid

    # --- events ----------------------------------------------------------------------

    @_guarded
    def event(self, run_id: str, event: Event) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO events (run_id, t_s, wall_s, kind, unit, key, text) "
                "VALUES (?,?,?,?,?,?,?)", self._event_row(run_id, event))

    # --- verdicts ----------------------------------------------------------------------

    @_guarded
    def put_verdicts(self, run_id: str, verdicts: Sequence[Verdict]) -> None:
        """Replace the run's stored verdicts (a re-analysis supersedes the last one)."""
        rows = self._verdict_rows(run_id, verdicts)
        with self._lock, _transaction(self._db):
            self._db.execute("DELETE FROM verdicts WHERE run_id=?", (run_id,))
            self._db.executemany("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?)", rows)

    @_guarded
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    @_guarded
    def close(self) -> None:
        with self._lock:
            self._db.close()
        self.release_reserve()


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
