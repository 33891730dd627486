"""SQLite storage: WAL, atomic readings, no duplicates on a re-take, series read back in order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from labtest.burnin.schedule import Series, merged, rounds, total
from labtest.burnin.store import (
    Event,
    Reading,
    Run,
    Sample,
    StoreError,
    Unit,
    open_store,
)


def _run(store, run_id: str = "r1") -> str:
    store.create_run(Run(run_id, "st", "running", "2025-01-01T00:00:00+00:00", 3600.0,
                         info={"streams": []}))
    return run_id


def _reading(index: int, value: float, monitor: str = "dom") -> Reading:
    samples = [Sample("SN1", "sw1:Ethernet0", lane, "tx_power_dbm", value + lane, "dBm")
               for lane in (1, 2)]
    return Reading(monitor, "sw1", index, index * 60.0, 1.7e9 + index, samples)


def test_a_reading_is_stored_once_and_read_back_in_schedule_order(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.db")
    run_id = _run(store)
    assert store.write(run_id, _reading(1, 1.0)) == 2
    assert store.write(run_id, _reading(0, 0.5)) == 2
    assert store.write(run_id, _reading(1, 9.9)) == 0  # a re-take after a resume: ignored
    assert store.sample_count(run_id) == 4
    assert store.duplicate_count(run_id) == 0
    assert store.done(run_id) == {("dom", "sw1", 0), ("dom", "sw1", 1)}
    lane1 = next(k for k in store.series(run_id) if k.lane == 1)
    idx, t, v = store.points(lane1.series_id)
    assert idx.tolist() == [0, 1] and t.tolist() == [0.0, 60.0] and v.tolist() == [1.5, 2.0]
    assert (lane1.unit, lane1.port, lane1.metric, lane1.uom) == (
        "SN1", "sw1:Ethernet0", "tx_power_dbm", "dBm")
    store.close()
    db = sqlite3.connect(tmp_path / "b.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(sqlite3.IntegrityError):  # the constraint itself, not just the code
        db.execute("INSERT INTO samples VALUES (?, 0, 0, 0, 1.0)", (lane1.series_id,))


def test_errors_units_events_and_runs(tmp_path: Path) -> None:
    store = open_store(tmp_path / "b.db", synchronous="normal")
    run_id = _run(store)
    store.write(run_id, Reading("fec", "sw1", 0, 0.0, 0.0, (), "TransportTimeout: no answer"))
    store.write(run_id, Reading("fec", "sw1", 1, 60.0, 0.0, ()))
    assert store.reading_counts(run_id) == {("fec", "sw1"): (2, 1)}
    store.put_units(run_id, [Unit("SN1", "module", "sw1", "Ethernet0", True, {"lanes": 4})])
    assert store.units(run_id)[0].info == {"lanes": 4}
    store.event(run_id, Event(1.0, 2.0, "alarm", "hot", "SN1", "sw1:Ethernet0|temperature_c"))
    store.event(run_id, Event(2.0, 3.0, "phase", "soak"))
    assert [e.kind for e in store.events(run_id)] == ["alarm", "phase"]
    assert store.events(run_id, ["alarm"])[0].key == "sw1:Ethernet0|temperature_c"
    store.update_run(run_id, status="stopped", position_s=60.0)
    assert store.run(run_id).status == "stopped" and store.run(run_id).position_s == 60.0
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.run("nope")
    with pytest.raises(ValueError):
        store.update_run(run_id, duration_s=1.0)


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
