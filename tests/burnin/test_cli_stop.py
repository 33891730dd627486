"""The command line's errors, and a clean stop (Ctrl-C) that resumes to a complete run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from burnin_helpers import station_variant

from labtest.burnin import Options, analyse, load_station, open_store, resume, start
from labtest.burnin.__main__ import main
from labtest.burnin.live import Status
from labtest.burnin.store import Event
from labtest.measure import load_limits


def test_a_bad_station_exits_2_with_located_errors(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    station = station_variant(tmp_path, duration_h=-1, units={"devices": ["nope"]})
    assert main([str(station), "--emulate"]) == 2
    err = capsys.readouterr().err
    assert f"{station}:" in err and "duration_h: Input should be greater than 0" in err
    assert "units.devices[0]: no device 'nope' in the testbed" in err


def test_unknown_run_and_empty_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "missing" / "b.db"
    assert main(["--list", "--db", str(db)]) == 2  # a typo says so and creates nothing
    assert capsys.readouterr().err == f"labtest burnin: {db}: no burn-in database here\n"
    assert not db.parent.exists()
    open_store(db).close()
    assert main(["--list", "--db", str(db)]) == 0
    assert main(["--resume", "nope", "--db", str(db)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert main([]) == 2


class StopAfter:
    """A progress sink that presses Ctrl-C (sets the stop event) after some readings."""

    def __init__(self, stop: threading.Event, readings: int) -> None:
        self.stop, self.readings = stop, readings
        self.closed: Status | None = None

    def update(self, status: Status) -> None:
        if status.readings_done >= self.readings:
            self.stop.set()

    def event(self, status: Status, event: Event) -> None:
        pass

    def close(self, status: Status) -> None:
        self.closed = status


def test_a_stopped_run_is_saved_and_resumes_to_the_end(tmp_path: Path) -> None:
    station = load_station(station_variant(tmp_path, duration_h=1, chamber=None,
                                           monitors={"dom": {"period_s": 120}}))
    db = tmp_path / "b.db"
    stop = threading.Event()
    sink = StopAfter(stop, readings=20)
    first = start(station, Options(emulate=True, db=db, progress=sink, stop=stop))
    assert first.status == "stopped" and sink.closed is not None
    store = open_store(db)
    run = store.run(first.run_id)
    assert run.status == "stopped" and 0 < run.position_s < run.duration_s
    taken = len(store.done(first.run_id))
    assert 20 <= taken < 31 + 3 * 7  # the round in flight finished, nothing after it
    store.close()

    second = resume(first.run_id, Options(db=db))
    assert second.status == "complete"
    store = open_store(db)
    report = analyse(store, first.run_id, load_limits(station.limits))
    assert {u.verdict for u in report.units} == {"PASS"}
    assert [e.kind for e in store.events(first.run_id, ["stopped", "resumed", "complete"])] == [
        "stopped", "resumed", "complete"]
    store.close()


def test_scaled_real_time_clock_keeps_the_schedule(tmp_path: Path) -> None:
    """``--time-scale``: the virtual clock runs on its own; the runner waits for each slot."""
    station = load_station(station_variant(
        tmp_path, duration_h=0.1, chamber=None, load={"kind": "none"},
        monitors={"dom": {"period_s": 60}, "fec": None, "counters": None}))
    outcome = start(station, Options(emulate=True, time_scale=300.0, db=tmp_path / "b.db"))
    assert outcome.status == "complete"
    store = open_store(outcome.db)
    key = next(k for k in store.series(outcome.run_id) if k.metric == "temperature_c")
    idx, t_s, _ = store.points(key.series_id)
    assert idx.tolist() == list(range(7))
    lateness = t_s - idx * 60.0
    assert lateness.min() >= 0.0  # never early
    assert lateness[0] < 60.0  # the run time starts when monitoring does, not at lab start
    store.close()
