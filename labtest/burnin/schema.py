"""The burn-in tables, written once for both backends (SQLite file, PostgreSQL server).

The two stores hold the same tables, keys and unique constraints — the logical
key of a sample is what makes a resumed reading land once on either — so the
tables are one text here, and each dialect fills in only what really differs:
its column types, how an id is generated, whether foreign keys are declared
(PostgreSQL enforces them; SQLite's store never declared the ones to ``runs``),
SQLite's ``WITHOUT ROWID``, and the indexes by serial that only the shared
server (one database for a floor of stations) is asked by.

Every statement is ``CREATE ... IF NOT EXISTS``: opening an existing database
changes nothing, so a read-only SQLite file still opens.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key {text} PRIMARY KEY, value {text} NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id {text} PRIMARY KEY,
    station {text} NOT NULL,
    status {text} NOT NULL,
    created_utc {text} NOT NULL,
    duration_s {real} NOT NULL,
    position_s {real} NOT NULL DEFAULT 0,
    pid {int},
    host {text},
    info {json} NOT NULL
);
CREATE TABLE IF NOT EXISTS units (
    run_id {text} NOT NULL{of_run},
    serial {text} NOT NULL,
    kind {text} NOT NULL,
    device {text} NOT NULL,
    port {text} NOT NULL,
    under_test {bool} NOT NULL,
    info {json} NOT NULL,
    PRIMARY KEY (run_id, serial)
);
CREATE TABLE IF NOT EXISTS series (
    series_id {id},
    run_id {text} NOT NULL{of_run},
    unit {text} NOT NULL,
    port {text} NOT NULL,
    lane {int} NOT NULL,
    metric {text} NOT NULL,
    uom {text} NOT NULL,
    UNIQUE (run_id, unit, port, lane, metric)
);
CREATE TABLE IF NOT EXISTS samples (
    series_id {id_ref} NOT NULL REFERENCES series (series_id),
    sched_index {int} NOT NULL,
    t_s {real} NOT NULL,
    wall_s {real} NOT NULL,
    value {real},
    PRIMARY KEY (series_id, sched_index)
){without_rowid};
CREATE TABLE IF NOT EXISTS readings (
    run_id {text} NOT NULL{of_run},
    monitor {text} NOT NULL,
    target {text} NOT NULL,
    sched_index {int} NOT NULL,
    t_s {real} NOT NULL,
    wall_s {real} NOT NULL,
    error {text},
    PRIMARY KEY (run_id, monitor, target, sched_index)
){without_rowid};
CREATE TABLE IF NOT EXISTS events (
    event_id {id},
    run_id {text} NOT NULL{of_run},
    t_s {real} NOT NULL,
    wall_s {real} NOT NULL,
    kind {text} NOT NULL,
    unit {text},
    key {text},
    text {text} NOT NULL
);
CREATE INDEX IF NOT EXISTS events_run ON events (run_id, event_id);
CREATE TABLE IF NOT EXISTS verdicts (
    run_id {text} NOT NULL{of_run},
    serial {text} NOT NULL,
    kind {text} NOT NULL,
    location {text} NOT NULL,
    verdict {text} NOT NULL,
    coverage_pct {real} NOT NULL,
    reason {text},
    judged_utc {text} NOT NULL,
    PRIMARY KEY (run_id, serial)
){without_rowid};
CREATE INDEX IF NOT EXISTS verdicts_serial ON verdicts (serial);
"""

#: SQLite: JSON kept as text, ids are the rowid, the logical-key tables without one
SQLITE_DDL = _TABLES.format(
    text="TEXT", real="REAL", int="INTEGER", bool="INTEGER", json="TEXT",
    id="INTEGER PRIMARY KEY", id_ref="INTEGER", of_run="", without_rowid=" WITHOUT ROWID",
)

#: PostgreSQL: jsonb, identity ids, foreign keys to the run, and the floor-wide indexes
POSTGRES_DDL = _TABLES.format(
    text="text", real="float8", int="integer", bool="boolean", json="jsonb",
    id="bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", id_ref="bigint",
    of_run=" REFERENCES runs (run_id)", without_rowid="",
) + """
CREATE INDEX IF NOT EXISTS units_serial ON units (serial);
CREATE INDEX IF NOT EXISTS series_unit ON series (unit, metric);
"""
