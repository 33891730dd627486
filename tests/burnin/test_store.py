"""SQLite storage: WAL, the unique key in the schema, schema refusal, schedule, secrets scrubbed.

What both backends share (a re-take stored once, runs, units, events, verdicts read back) runs
on SQLite and PostgreSQL alike in tests/db/test_burnin_store.py (its ``backend`` fixture).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from labtest.burnin.backends import open_store
from labtest.burnin.schedule import Series, merged, rounds, total
from labtest.burnin.store import Event, Reading, Run, Sample, StoreError, Unit


def test_sqlite_keeps_a_wal_journal_and_the_unique_key_in_its_schema(tmp_path: Path) -> None:
    """SQLite's own promises; what both backends share (a re-take stored once, units, events,
    runs, verdicts read back) runs on both in tests/db/test_burnin_store.py."""
    store = open_store(tmp_path / "b.db", synchronous="normal")
    store.create_run(Run("r1", "st", "running", "2025-01-01T00:00:00+00:00", 3600.0))
    sample = Sample("SN1", "sw1:Ethernet0", 1, "tx_power_dbm", 1.5, "dBm")
    assert store.write("r1", Reading("dom", "sw1", 0, 0.0, 1.7e9, [sample])) == 1
    (key,) = store.series("r1")
    store.close()
    db = sqlite3.connect(tmp_path / "b.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.IntegrityError):  # the constraint itself, not just the code
        db.execute("INSERT INTO samples VALUES (?, 0, 0, 0, 1.0)", (key.series_id,))
    db.close()


def test_a_database_of_another_schema_is_refused(tmp_path: Path) -> None:
    open_store(tmp_path / "b.db").close()
    db = sqlite3.connect(tmp_path / "b.db")
    db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema 99"):
        open_store(tmp_path / "b.db")


def test_schedule_counts_times_and_resume() -> None:
    dom = Series("dom", "sw1", 300.0)
    prbs = Series("prbs", "sw1:E0--sw2:E0", 1800.0, first_at_period=True)
    assert dom.count(3600.0) == 13  # t = 0, 300, ..., 3600
    assert prbs.count(3600.0) == 2 and prbs.time_of(0) == 1800.0
    assert total([dom, prbs], 3600.0) == 15
    done = {("dom", "sw1", k) for k in range(7)}  # the run died after t = 1800
    due = list(merged([dom, prbs], 3600.0, done))
    assert due[0].t_s == 1800.0 and {s.monitor for s in due[:2]} == {"prbs", "dom"}
    assert [s.index for s in due if s.monitor == "dom"] == list(range(7, 13))
    batches = list(rounds(iter(due)))
    assert [b[0].t_s for b in batches] == [1800.0, 2100.0, 2400.0, 2700.0, 3000.0, 3300.0, 3600.0]
    assert [s.monitor for s in batches[0]] == ["prbs"]  # dom k=6 (t=1800) was done
    assert sorted(s.monitor for s in batches[-1]) == ["dom", "prbs"]
    assert sum(len(b) for b in batches) == len(due) == 8


def test_text_written_to_the_database_is_scrubbed_of_secrets(tmp_path: Path) -> None:
    from labtest import secrets

    pw = "Burnin-Db-Secret-6609"
    secrets.register(pw)
    db = tmp_path / "b.db"
    store = open_store(db)
    store.create_run(Run("r1", "st", "running", "2025-01-01T00:00:00+00:00", 3600.0,
                         info={"notes": [f"login {pw}"]}))
    store.put_units("r1", [Unit("SN1", "module", "sw1", "Ethernet0", True, {"x": pw})])
    store.write("r1", Reading("dom", "sw1", 0, 0.0, 1.7e9, (), f"AuthFailed: {pw}"))
    store.event("r1", Event(0.0, 1.7e9, "error", f"device said {pw}"))
    store.update_run("r1", info={"again": pw})
    store.close()
    assert (db.stat().st_mode & 0o777) == 0o600
    for path in tmp_path.iterdir():
        assert pw.encode() not in path.read_bytes(), path
    store = open_store(db)
    assert store.events("r1")[0].text == "device said ********"
    store.close()
