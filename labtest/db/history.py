"""Run history: every ``labtest run``'s tests and measurements, asked by serial or port.

After a run, :func:`record_results` reads the run's ``labtest-results.json``
(the document the sign-off is built from) and stores the run, each test's
outcome and each measurement with where it was taken (device, port, lane) and
*which unit* that was at the time: the module's serial from the run's inventory
(``optics``) and the switch's serial (``facts``). So "how has the pre-FEC BER of
module X evolved across acceptance runs" is one query, even after the module
moved to another port: ``labtest history SERIAL --key fec.pre_fec_ber``.

The store is a SQLite file (default ``reports/history.db`` where the command
runs) or PostgreSQL (``$LABTEST_DB``, schema ``labtest_history``); the SQL is the
same for both. A run's id is the hash of its results document, so storing the
same results twice stores them once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labtest import db as dbm
from labtest import safefs

SCHEMA = "labtest_history"
DEFAULT_PATH = Path("reports") / "history.db"
RESULTS_FILE = "labtest-results.json"  # what labtest.reports writes into a results directory
#: set to 0 to keep a ``labtest run`` out of the history
ENV_RECORD = "LABTEST_HISTORY"

DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    started_utc TEXT NOT NULL,
    finished_utc TEXT,
    user_name TEXT,
    host TEXT,
    testbed TEXT,
    testbed_sha256 TEXT,
    limits_profile TEXT,
    verdict TEXT,
    emulated INTEGER,
    git_commit TEXT,
    results_dir TEXT,
    recorded_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tests (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    nodeid TEXT NOT NULL,
    suite TEXT,
    outcome TEXT NOT NULL,
    category TEXT,
    duration_s DOUBLE PRECISION,
    device TEXT,
    PRIMARY KEY (run_id, nodeid)
);
CREATE TABLE IF NOT EXISTS measurements (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    nodeid TEXT NOT NULL,
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    limit_key TEXT,
    value DOUBLE PRECISION,
    unit TEXT,
    verdict TEXT,
    device TEXT,
    port TEXT,
    lane TEXT,
    serial TEXT,
    device_serial TEXT,
    link TEXT,
    timestamp_s DOUBLE PRECISION,
    PRIMARY KEY (run_id, nodeid, idx)
);
CREATE INDEX IF NOT EXISTS measurements_serial ON measurements (serial);
CREATE INDEX IF NOT EXISTS measurements_device_serial ON measurements (device_serial);
CREATE INDEX IF NOT EXISTS measurements_port ON measurements (device, port);
CREATE INDEX IF NOT EXISTS measurements_key ON measurements (limit_key, name)
"""


class HistoryError(Exception):
    """The history store cannot be used, or a results directory cannot be read."""


@dataclass(frozen=True)
class Point:
    """One stored measurement with its run: a row of ``labtest history``."""

    started_utc: str
    run_id: str
    run_verdict: str | None
    test: str  # nodeid
    name: str
    limit_key: str | None
    value: float | None
    unit: str | None
    verdict: str | None
    device: str | None
    port: str | None
    lane: str | None
    serial: str | None  # the module's (or the unit's own) serial
    device_serial: str | None


def default_location() -> str | Path:
    """A PostgreSQL ``$LABTEST_DB``, else ``reports/history.db`` where the command runs."""
    env = dbm.env_url()
    return env if env is not None and dbm.is_postgres(env) else DEFAULT_PATH


class HistoryStore:
    """Runs, tests and measurements in SQLite or PostgreSQL, with one set of statements."""

    def __init__(self, where: str | Path | None = None) -> None:
        where = where if where is not None else default_location()
        self.where = where
        self.display = dbm.display_url(str(where))
        self._lock = threading.Lock()
        self._pg = dbm.is_postgres(str(where))
        if self._pg:
            try:
                self._conn: Any = dbm.connect(str(where), SCHEMA, DDL)
            except dbm.DatabaseUnavailable as exc:
                raise HistoryError(" ".join(str(exc).split())) from None
            return
        path = Path(where)
        try:
            if not path.parent.exists():
                safefs.private_dir(path.parent)
            os.close(safefs.open_private(path))
            self._conn = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                         check_same_thread=False)
            with self._tx():
                for statement in DDL.split(";"):
                    self._execute(statement)
        except (OSError, safefs.UnsafePath, sqlite3.Error) as exc:
            raise HistoryError(f"{path}: cannot use the history store: {exc}") from None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        if self._pg:
            with self._conn.transaction():
                yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        if self._pg:
            sql = sql.replace("?", "%s")
        return self._conn.execute(sql, args)

    def _guard(self) -> Any:
        errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
        if self._pg:
            import psycopg

            errors = (psycopg.Error,)
        return errors

    # --- writing ---------------------------------------------------------------------

    def record(self, doc: dict[str, Any], results_dir: str = "", run_id: str | None = None
               ) -> tuple[str, bool]:
        """Store one results document; (run id, whether it was new)."""
        run_id = run_id or hashlib.sha256(
            json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]
        run = doc.get("run") or {}
        testbed = doc.get("testbed") or {}
        verdict = (doc.get("verdict") or {}).get("verdict")
        inventory = doc.get("inventory") or {}
        tests = [t for t in doc.get("tests") or [] if isinstance(t, dict)]
        test_rows = [(run_id, str(t.get("nodeid")), t.get("suite"), str(t.get("outcome")),
                      t.get("category"), _float(t.get("duration_s")), _text(t.get("device")))
                     for t in tests]
        meas_rows = []
        for t in tests:
            for i, m in enumerate(t.get("measurements") or []):
                meas_rows.append(_measurement_row(run_id, str(t.get("nodeid")), i, m, inventory))
        try:
            with self._lock, self._tx():
                cur = self._execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                    (run_id, str(run.get("started_utc") or ""), run.get("finished_utc"),
                     run.get("user"), run.get("host"), testbed.get("name"),
                     testbed.get("sha256"), (doc.get("limits") or {}).get("profile"), verdict,
                     int(bool(run.get("emulated"))), run.get("git_commit"), results_dir,
                     datetime.now(UTC).isoformat(timespec="seconds")))
                if cur.rowcount == 0:
                    return run_id, False
                self._many("INSERT INTO tests VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                           test_rows)
                self._many("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                           "ON CONFLICT DO NOTHING", meas_rows)
        except self._guard() as exc:
            raise HistoryError(f"{self.display}: {dbm.one_line(exc)}") from None
        return run_id, True

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if self._pg:
            with self._conn.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)
        else:
            self._conn.executemany(sql, rows)

    # --- reading ---------------------------------------------------------------------

    def points(self, target: str, key: str | None = None) -> list[Point]:
        """Measurements of ``target`` (a serial, ``DEVICE:PORT`` or a device), oldest run first;
        ``key`` keeps one limit key or measurement name."""
        device, _, port = target.partition(":")
        where = "(m.serial = ? OR m.device_serial = ? OR (m.device = ? AND m.port = ?)"
        args: list[Any] = [target, target, device, port]
        if port:  # a link's measurement, named by its ends ("a:p1--b:p2")
            end = len(target) + 2  # "a:p1--" or "--a:p1" (no LIKE: its case rules differ)
            where += (" OR m.link = ? OR substr(m.link, 1, ?) = ? OR "
                      "substr(m.link, length(m.link) - ? + 1) = ?")
            args += [target, end, target + "--", end, "--" + target]
        if not port:
            where += " OR m.device = ?"
            args.append(target)
        where += ")"
        if key:
            where += " AND (m.limit_key = ? OR m.name = ?)"
            args += [key, key]
        sql = ("SELECT r.started_utc, r.run_id, r.verdict, m.nodeid, m.name, m.limit_key, "
               "m.value, m.unit, m.verdict, m.device, m.port, m.lane, m.serial, m.device_serial "
               f"FROM measurements m JOIN runs r ON r.run_id = m.run_id WHERE {where} "
               "ORDER BY r.started_utc, r.run_id, m.nodeid, m.idx")
        try:
            with self._lock:
                rows = self._execute(sql, tuple(args)).fetchall()
        except self._guard() as exc:
            raise HistoryError(f"{self.display}: {dbm.one_line(exc)}") from None
        return [Point(*r) for r in rows]

    def latest_runs(self) -> list[dict[str, Any]]:
        """Per testbed: its latest run (id, start, verdict, tests by outcome) and run count."""
        with self._lock:
            runs = self._execute("SELECT run_id, testbed, started_utc, verdict FROM runs "
                                 "ORDER BY started_utc, run_id").fetchall()
            latest: dict[str, dict[str, Any]] = {}
            for run_id, testbed, started_utc, verdict in runs:
                seen = latest.get(testbed, {}).get("runs", 0)
                latest[testbed] = {"testbed": testbed, "run_id": run_id, "verdict": verdict,
                                   "started_utc": started_utc, "runs": seen + 1, "outcomes": {}}
            for row in latest.values():
                row["outcomes"] = dict(self._execute(
                    "SELECT outcome, COUNT(*) FROM tests WHERE run_id = ? GROUP BY outcome",
                    (row["run_id"],)).fetchall())
        return [latest[k] for k in sorted(latest, key=str)]

    def run_count(self) -> int:
        with self._lock:
            return int(self._execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _measurement_row(run_id: str, nodeid: str, idx: int, m: dict[str, Any],
                     inventory: dict[str, Any]) -> tuple[Any, ...]:
    labels = m.get("labels") or {}
    device = _text(labels.get("device"))
    port = _text(labels.get("port"))
    if device and port and port.startswith(device + ":"):
        port = port[len(device) + 1:]
    entry = inventory.get(device or "", {}) if isinstance(inventory, dict) else {}
    optic = ((entry.get("optics") or {}).get(port or "") or {}) if isinstance(entry, dict) else {}
    facts = (entry.get("facts") or {}) if isinstance(entry, dict) else {}
    serial = _text(labels.get("serial")) or _text(optic.get("serial"))
    return (run_id, nodeid, idx, str(m.get("name") or ""), m.get("limit_key"),
            _float(m.get("value")), m.get("unit"), m.get("verdict"), device, port,
            _text(labels.get("lane")), serial, _text(facts.get("serial")),
            _text(labels.get("link")), _float(m.get("timestamp_s")))


def record_results(results_dir: Path, where: str | Path | None = None) -> tuple[str, bool, int]:
    """Store the run in ``results_dir`` (its ``labtest-results.json``); (run id, new, tests)."""
    path = Path(results_dir) / RESULTS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HistoryError(f"{path}: cannot read the run's results: {exc}") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("labtest-results/"):
        raise HistoryError(f"{path}: not a labtest results document")
    store = HistoryStore(where)
    try:
        run_id, new = store.record(doc, str(Path(results_dir).resolve()))
    finally:
        store.close()
    return run_id, new, len(doc.get("tests") or [])


def after_run(results_dir: Path, say: Any) -> None:
    """The hook at the end of ``labtest run``: store the run, never change its outcome."""
    if os.environ.get(ENV_RECORD, "1") in ("0", "off", "no", "false"):
        return
    if not (Path(results_dir) / RESULTS_FILE).is_file():
        return  # no results: the run's own message says why
    try:
        run_id, new, tests = record_results(results_dir)
    except (HistoryError, dbm.DatabaseUnavailable) as exc:
        say(f"labtest run: not stored in the run history: {exc}")
        return
    except Exception as exc:  # a history problem never changes the run's verdict or exit
        say(f"labtest run: not stored in the run history: {type(exc).__name__}: {exc}")
        return
    where = dbm.display_url(str(default_location()))
    if new:
        say(f"labtest run: stored as run {run_id} ({tests} tests) in {where}")
