"""An emulated-lab burn-in writing into PostgreSQL: stopped, resumed, judged from the server."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from labtest.burnin import Options, analyse, load_station, open_store, resume, start
from labtest.burnin.__main__ import main as burnin_main
from labtest.burnin.live import Status
from labtest.burnin.store import Event
from labtest.measure import load_limits

_spec = importlib.util.spec_from_file_location(
    "burnin_helpers", Path(__file__).resolve().parents[1] / "burnin" / "burnin_helpers.py")
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
station_variant = _helpers.station_variant  # the burn-in tests' mini lab station


class StopAfter:
    """Presses Ctrl-C (sets the stop event) after some readings."""

    def __init__(self, stop: threading.Event, readings: int) -> None:
        self.stop, self.readings = stop, readings

    def update(self, status: Status) -> None:
        if status.readings_done >= self.readings:
            self.stop.set()

    def event(self, status: Status, event: Event) -> None:
        pass

    def close(self, status: Status) -> None:
        pass


def test_a_burnin_on_the_server_stops_resumes_and_is_judged(
    tmp_path: Path, pg_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("LABTEST_DB", pg_url)  # the floor's setting; no --db anywhere
    station = load_station(station_variant(tmp_path, duration_h=1, chamber=None,
                                           monitors={"dom": {"period_s": 300}}))
    stop = threading.Event()
    first = start(station, Options(emulate=True, output=tmp_path / "out",
                                   progress=StopAfter(stop, readings=10), stop=stop))
    assert first.status == "stopped" and first.db == pg_url
    second = resume(first.run_id, Options(output=tmp_path / "out"))
    assert second.status == "complete"
    store = open_store(pg_url, create=False)
    try:
        assert store.duplicate_count(first.run_id) == 0
        assert [e.kind for e in store.events(first.run_id, ["stopped", "resumed", "complete"])] \
            == ["stopped", "resumed", "complete"]
        report = analyse(store, first.run_id, load_limits(station.limits))
        assert {u.verdict for u in report.units} == {"PASS"}
    finally:
        store.close()
    assert burnin_main(["--report", first.run_id, "--plots", "none",
                        "--output", str(tmp_path / "out")]) == 0
    serial = report.units[0].unit.serial
    store = open_store(pg_url, create=False)
    try:
        assert [(v.run_id, v.verdict) for v in store.verdicts(serial)] == [
            (first.run_id, "PASS")]  # stored by the analysis, for the whole floor to ask
    finally:
        store.close()
    assert not (tmp_path / "out" / "burnin.db").exists()


def test_a_burnin_waits_for_devices_a_pytest_run_holds_on_the_server(
    tmp_path: Path, pg_url: str, monkeypatch
) -> None:
    from labtest import reservation
    from labtest.testbed import load_testbed

    monkeypatch.setenv("LABTEST_DB", pg_url)
    station = load_station(station_variant(tmp_path, duration_h=1, chamber=None,
                                           monitors={"dom": {"period_s": 300}}))
    keys = reservation.testbed_keys(load_testbed(station.testbed))
    store = reservation.open_store()  # the server, through LABTEST_DB
    try:
        with reservation.reserve(keys, store=store, run_id="pytest-run-a", host="ci-07"), \
                pytest.raises(reservation.DevicesBusy) as busy:
            start(station, Options(emulate=True, reserve=True, reserve_timeout_s=0,
                                   output=tmp_path / "out"))
    finally:
        store.close()
    assert {h.run_id for h in busy.value.holders.values()} == {"pytest-run-a"}
    assert set(busy.value.holders) == set(keys.values())
    burnin = open_store(pg_url)
    assert burnin.runs() == []  # nothing was started: no run record either
    burnin.close()
