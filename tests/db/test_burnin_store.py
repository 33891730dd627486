"""Burn-in storage on both backends, and a floor of stations writing into one PostgreSQL."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from labtest.burnin.__main__ import main
from labtest.burnin.backends import open_store
from labtest.burnin.store import Event, Reading, Run, Sample, StoreError, Unit, Verdict

ROOT = Path(__file__).resolve().parents[2]


def _run(store, run_id: str = "r1", station: str = "st", host: str = "h1") -> str:
    store.create_run(Run(run_id, station, "running", f"2025-01-01T00:00:0{len(run_id)}+00:00",
                         3600.0, host=host, info={"streams": []}))
    return run_id


def _reading(index: int, value: float, monitor: str = "dom") -> Reading:
    samples = [Sample("SN1", "sw1:Ethernet0", lane, "tx_power_dbm", value + lane, "dBm")
               for lane in (1, 2)]
    return Reading(monitor, "sw1", index, index * 60.0, 1.7e9 + index, samples)


def test_a_reading_is_stored_once_even_when_another_station_takes_it_again(backend: str) -> None:
    store = open_store(backend)
    run_id = _run(store)
    assert store.write(run_id, _reading(1, 1.0)) == 2
    assert store.write(run_id, _reading(0, 0.5)) == 2
    other = open_store(backend)  # the station that resumes the run: its own connection
    assert other.write(run_id, _reading(1, 9.9)) == 0
    assert other.write(run_id, _reading(2, 2.0)) == 2
    other.close()
    assert store.sample_count(run_id) == 6
    assert store.duplicate_count(run_id) == 0
    assert store.done(run_id) == {("dom", "sw1", 0), ("dom", "sw1", 1), ("dom", "sw1", 2)}
    lane1 = next(k for k in store.series(run_id) if k.lane == 1)
    idx, t, v = store.points(lane1.series_id)
    assert idx.tolist() == [0, 1, 2] and t.tolist() == [0.0, 60.0, 120.0]
    assert v.tolist() == [1.5, 2.0, 3.0]
    assert (lane1.unit, lane1.port, lane1.metric, lane1.uom) == (
        "SN1", "sw1:Ethernet0", "tx_power_dbm", "dBm")
    store.close()


def test_errors_units_events_and_runs(backend: str) -> None:
    store = open_store(backend)
    store.check_writable()
    run_id = _run(store)
    store.write(run_id, Reading("fec", "sw1", 0, 0.0, 0.0, (), "TransportTimeout: no answer"))
    store.write(run_id, Reading("fec", "sw1", 1, 60.0, 0.0, ()))
    assert store.reading_counts(run_id) == {("fec", "sw1"): (2, 1)}
    store.put_units(run_id, [Unit("SN1", "module", "sw1", "Ethernet0", True, {"lanes": 4})])
    store.put_units(run_id, [Unit("SN1", "module", "sw1", "Ethernet0", True, {"lanes": 8})])
    assert [(u.serial, u.under_test, u.info) for u in store.units(run_id)] == [
        ("SN1", True, {"lanes": 8})]
    store.event(run_id, Event(1.0, 2.0, "alarm", "hot", "SN1", "sw1:Ethernet0|temperature_c"))
    store.event(run_id, Event(2.0, 3.0, "phase", "soak"))
    assert [e.kind for e in store.events(run_id)] == ["alarm", "phase"]
    assert store.events(run_id, ["alarm"])[0].key == "sw1:Ethernet0|temperature_c"
    store.update_run(run_id, status="stopped", position_s=60.0, info={"streams": [1]})
    got = store.run(run_id)
    assert (got.status, got.position_s, got.info) == ("stopped", 60.0, {"streams": [1]})
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.run("nope")
    with pytest.raises(ValueError):
        store.update_run(run_id, duration_s=1.0)
    store.close()


def test_list_shows_every_stations_runs(backend: str, capsys) -> None:
    store = open_store(backend)
    _run(store, "run-a", "rack-b12", "station-07")
    _run(store, "run-bb", "rack-c03", "station-11")
    store.close()
    assert main(["--list", "--db", backend]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["run-a", "run-bb"]
    assert lines[0].endswith("rack-b12 on station-07")
    assert lines[1].endswith("rack-c03 on station-11")


def test_an_empty_server_has_no_runs_to_list(pg_url: str, capsys) -> None:
    assert main(["--list", "--db", pg_url]) == 2
    assert "no burn-in runs in this database" in capsys.readouterr().err


def test_labtest_db_points_burnin_at_the_server(pg_url: str, monkeypatch, capsys) -> None:
    store = open_store(pg_url)
    _run(store, "run-env", "rack-b12", "station-07")
    store.close()
    monkeypatch.setenv("LABTEST_DB", pg_url)
    assert main(["--list"]) == 0
    assert capsys.readouterr().out.startswith("run-env ")


def test_twenty_stations_write_an_hour_each_none_lost_none_duplicated(
    pg_url: str, monkeypatch
) -> None:
    spec = importlib.util.spec_from_file_location("pg_burnin", ROOT / "bench" / "pg_burnin.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pg_burnin", bench)  # the writer processes find it
    spec.loader.exec_module(bench)
    r = bench.floor(pg_url, writers=20, hours=1.0, period_s=60.0)
    print(f"20 writers: {r['written']:.0f} samples in {r['elapsed_s']:.1f} s "
          f"({r['samples_per_s']:.0f} samples/s)")
    assert r["readings_per_run"] == 61
    assert r["written"] > r["expected"] == 20 * 61 * 96  # a fifth of each run written twice
    assert r["stored"] == r["expected"]
    assert r["duplicates"] == 0
    assert r["reported_new"] == r["expected"]


def test_where_samples_go_option_station_url_floor_setting_station_path(monkeypatch) -> None:
    from labtest.burnin.backends import DEFAULT_DB, database

    floor, station_url = "postgresql://floordb/labtest", "postgresql://rackdb/labtest"
    monkeypatch.delenv("LABTEST_DB", raising=False)
    assert database(None) == DEFAULT_DB
    assert database(None, None, Path("st.db")) == Path("st.db")
    monkeypatch.setenv("LABTEST_DB", "/some/file.db")  # only a server URL counts
    assert database(None, None, Path("st.db")) == Path("st.db")
    monkeypatch.setenv("LABTEST_DB", floor)
    assert database(None, None, Path("st.db")) == floor
    assert database(None, station_url, Path("st.db")) == station_url
    assert database(Path("mine.db"), station_url, Path("st.db")) == Path("mine.db")


def test_a_station_file_may_name_the_floors_server(tmp_path: Path) -> None:
    from labtest.errors import ConfigError

    helpers = importlib.util.spec_from_file_location(
        "burnin_helpers", ROOT / "tests" / "burnin" / "burnin_helpers.py")
    assert helpers is not None and helpers.loader is not None
    module = importlib.util.module_from_spec(helpers)
    helpers.loader.exec_module(module)
    from labtest.burnin.station import load_station

    url = "postgresql://labtest@floordb/labtest"
    station = load_station(module.station_variant(tmp_path, storage={"url": url}))
    assert station.storage.url == url
    with pytest.raises(ConfigError, match="storage"):
        load_station(module.station_variant(tmp_path, storage={"url": "mysql://x/y"}))


def test_verdicts_are_kept_per_run_and_found_by_serial_across_stations(backend: str,
                                                                        capsys) -> None:
    store = open_store(backend)
    _run(store, "run-a", "rack-b12", "station-07")
    _run(store, "run-bb", "rack-c03", "station-11")
    first = Verdict("run-a", "SN1", "module", "leaf1:Ethernet8", "FAIL", 100.0,
                    "rising bias at constant Tx power: laser ageing", "2026-12-01T00:00:00+00:00")
    store.put_verdicts("run-a", [first, Verdict("run-a", "SN2", "module", "leaf1:Ethernet0",
                                                "PASS", 100.0, None, first.judged_utc)])
    store.put_verdicts("run-a", [first])  # analysed again: replaces, never adds
    store.put_verdicts("run-bb", [Verdict("run-bb", "SN1", "module", "leaf2:Ethernet8",
                                          "PASS", 98.5, None, first.judged_utc)])
    found = store.verdicts("SN1")
    assert [(v.run_id, v.station, v.host, v.verdict) for v in found] == [
        ("run-a", "rack-b12", "station-07", "FAIL"), ("run-bb", "rack-c03", "station-11", "PASS")]
    assert store.verdicts("SN2") == []
    store.close()
    assert main(["--serial", "SN1", "--db", backend]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["run-a", "rack-b12", "on", "station-07", "leaf1:Ethernet8",
                                   "FAIL"]
    assert lines[0].endswith("laser ageing") and "coverage 98 %" in lines[1]
    assert main(["--serial", "SN9", "--db", backend]) == 2
