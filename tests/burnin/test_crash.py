"""kill -9 at random points, resume each time: the final run holds exactly the schedule.

The burn-in runs as a child process (``python -m labtest.burnin``, i.e. ``labtest
burnin``) on the mini lab; the test waits until it has stored some readings, kills it
with SIGKILL at a random moment, resumes it, and so on. At the end every scheduled
reading is stored once, every series has every sched_index of its stream and nothing
else, and the units pass.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from burnin_helpers import station_variant

from labtest.burnin import analyse, open_store
from labtest.burnin.schedule import Series
from labtest.measure import load_limits

KILLS = 4
START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120.0


def _burnin(*args: str, out: Path) -> subprocess.Popen[bytes]:
    log = (out / f"log-{time.monotonic_ns()}.txt").open("wb")
    tmp = out / "tmp"  # a SIGKILLed lab cannot remove its folder: keep it out of /tmp
    tmp.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "labtest.burnin", *args, "--plain", "--plots", "none",
         "--output", str(out)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(tmp)},
    )


def _readings(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    try:
        return con.execute("SELECT COUNT(*) FROM readings").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0
    finally:
        con.close()


def _kill_midway(proc: subprocess.Popen[bytes], db: Path, rng: random.Random) -> bool:
    """SIGKILL once new readings are flowing; False if the run ended first."""
    before = _readings(db)
    deadline = time.monotonic() + START_TIMEOUT_S
    while _readings(db) < before + 5:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the burn-in stored nothing new"
        time.sleep(0.05)
    time.sleep(rng.uniform(0.0, 1.0))
    if proc.poll() is not None:
        return False
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return True


def _run_id(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT run_id FROM runs").fetchone()[0]
    finally:
        con.close()


def test_sigkill_and_resume_keep_the_schedule(tmp_path: Path) -> None:
    rng = random.Random(20250101)
    station = station_variant(tmp_path, duration_h=3,
                              monitors={"dom": {"period_s": 60}, "fec": {"period_s": 300},
                                        "counters": {"period_s": 300},
                                        "prbs": {"period_s": 900},
                                        "chamber": {"period_s": 300}},
                              chamber={"device": "chamber1", "profile": [
                                  {"kind": "ramp", "to_c": 35, "rate_c_per_min": 1},
                                  {"kind": "soak", "temperature_c": 35, "duration_h": 2}]})
    db = tmp_path / "b.db"
    proc = _burnin(str(station), "--emulate", "--db", str(db), out=tmp_path)
    kills = 0
    try:
        run_id = ""
        while kills < KILLS and _kill_midway(proc, db, rng):
            kills += 1
            run_id = run_id or _run_id(db)
            proc = _burnin("--resume", run_id, "--db", str(db), out=tmp_path)
        assert proc.wait(timeout=RUN_TIMEOUT_S) == 0, _logs(tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert kills >= 3, f"only {kills} kills landed mid-run; the run is too short"
    run_id = run_id or _run_id(db)

    store = open_store(db)
    run = store.run(run_id)
    assert run.status == "complete"
    streams = [Series(*s) for s in run.info["streams"]]
    expected = {(s.monitor, s.target, k) for s in streams for k in range(s.count(run.duration_s))}
    assert store.done(run_id) == expected  # no reading lost, none extra
    assert store.reading_counts(run_id) == {
        (s.monitor, s.target): (s.count(run.duration_s), 0) for s in streams}
    per_stream = _series_streams(store, run_id, streams)
    total = 0
    for key, stream in per_stream.items():
        idx, _, _ = store.points(key.series_id)
        n = stream.count(run.duration_s)
        assert idx.tolist() == list(range(n)), f"{key}: gaps or extra samples"
        total += n
    assert store.sample_count(run_id) == total
    assert store.duplicate_count(run_id) == 0
    assert len([e for e in store.events(run_id) if e.kind == "resumed"]) == kills
    report = analyse(store, run_id, load_limits(run.info["limits"]))
    assert {u.verdict for u in report.units} == {"PASS"}
    store.close()


def _series_streams(store, run_id: str, streams: list[Series]) -> dict:
    """Each stored series with the stream (monitor, target) that produces it."""
    by_key = {}
    for key in store.series(run_id):
        device = key.port.split(":", 1)[0]
        monitor = _monitor_of(key.metric)
        stream = next(s for s in streams if s.monitor == monitor and (
            s.target == device or (monitor == "prbs" and key.port in s.target.split("--"))
            or (monitor == "chamber" and key.port == "")))
        by_key[key] = stream
    return by_key


def _monitor_of(metric: str) -> str:
    if metric.startswith(("fec_", "pre_fec")):
        return "fec"
    if metric.startswith("prbs_"):
        return "prbs"
    if metric.startswith("chamber_"):
        return "chamber"
    if metric in ("oper_up", "rx_errors", "tx_errors", "rx_discards", "tx_discards",
                  "rx_fcs_errors", "rx_symbol_errors"):
        return "counters"
    return "dom"


def _logs(path: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(path.glob("log-*")))

