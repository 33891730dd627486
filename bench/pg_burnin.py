"""A floor of burn-in stations writing into one PostgreSQL: throughput, 0 lost, 0 duplicated.

Each of ``--writers`` processes plays a station: one run of ``--hours`` of virtual
time, 8 optics x 4 lanes x 3 DOM metrics (96 samples) every ``--period`` seconds,
written through the real store (``labtest.burnin.postgres.PgSampleStore``: one
transaction per reading, one multi-row insert). Halfway (at 60 %) every station
"dies"; then every station resumes its *neighbour's* run from 40 % -- another
process, another connection -- so a fifth of each run is written twice. Checks
afterwards: every run holds exactly readings x 96 samples, no duplicate key, and
the samples each write reported as new add up to the same total.

    python bench/pg_burnin.py [--writers 20] [--hours 1] [--period 10] [--url postgresql://...]

Without ``--url`` a private server is started from the Debian ``postgresql`` package
(``labtest.db.pgserver``, fsync on) and removed afterwards. Prints samples/s.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time

from labtest.burnin.postgres import PgSampleStore
from labtest.burnin.store import Reading, Run, Sample
from labtest.db.pgserver import database

PORTS, LANES, METRICS = 8, 4, ("tx_power_dbm", "rx_power_dbm", "tx_bias_ma")
PER_READING = PORTS * LANES * len(METRICS)


def _reading(station: int, index: int, period_s: float) -> Reading:
    samples = [
        Sample(f"SN{station:02d}P{p:02d}", f"sw{station}:Ethernet{p}", lane, metric,
               -2.0 + 0.01 * lane + 1e-4 * index, "dBm")
        for p in range(PORTS) for lane in range(1, LANES + 1) for metric in METRICS
    ]
    return Reading("dom", f"sw{station}", index, index * period_s, 1.7e9 + index, samples)


def run_id(station: int) -> str:
    return f"floor-st{station:02d}"


def _write(url: str, station: int, target: int, first: int, last: int, period_s: float,
           create: bool) -> int:
    """Station ``station`` writes readings ``first..last-1`` of run ``target``; samples added."""
    store = PgSampleStore(url)
    try:
        if create:
            store.create_run(Run(run_id(target), f"station-{target:02d}", "running",
                                 "2026-12-01T00:00:00+00:00", 3600.0, host=f"st{station:02d}"))
        added = 0
        for k in range(first, last):
            added += store.write(run_id(target), _reading(target, k, period_s))
        return added
    finally:
        store.close()


def floor(url: str, writers: int, hours: float, period_s: float) -> dict[str, float]:
    """Run both waves; return the counts and the figures."""
    readings = int(hours * 3600 / period_s) + 1
    crash, resume_at = int(readings * 0.6), int(readings * 0.4)
    ctx = multiprocessing.get_context("fork")
    start = time.monotonic()
    with ctx.Pool(writers) as pool:
        first = pool.starmap(_write, [(url, i, i, 0, crash, period_s, True)
                                      for i in range(writers)])
        second = pool.starmap(_write, [(url, i, (i + 1) % writers, resume_at, readings,
                                        period_s, False) for i in range(writers)])
    elapsed_s = time.monotonic() - start
    written = writers * (crash + readings - resume_at) * PER_READING
    expected = writers * readings * PER_READING
    store = PgSampleStore(url)
    try:
        stored = sum(store.sample_count(run_id(i)) for i in range(writers))
        duplicates = sum(store.duplicate_count(run_id(i)) for i in range(writers))
    finally:
        store.close()
    return {"writers": writers, "readings_per_run": readings, "expected": expected,
            "stored": stored, "reported_new": sum(first) + sum(second),
            "duplicates": duplicates, "written": written, "elapsed_s": elapsed_s,
            "samples_per_s": written / elapsed_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writers", type=int, default=20)
    ap.add_argument("--hours", type=float, default=1.0, help="virtual hours per station")
    ap.add_argument("--period", type=float, default=10.0, help="seconds between readings")
    ap.add_argument("--url", help="an existing, empty database (default: a private server)")
    args = ap.parse_args(argv)
    with database(args.url) as url:
        r = floor(url, args.writers, args.hours, args.period)
    lost = r["expected"] - r["stored"]
    print(f"{r['writers']} stations x {args.hours:g} h of virtual samples "
          f"({r['readings_per_run']} readings x {PER_READING} samples each, a fifth re-written "
          f"by the neighbour's resume)")
    print(f"written {r['written']:.0f} samples in {r['elapsed_s']:.1f} s: "
          f"{r['samples_per_s']:.0f} samples/s")
    print(f"stored {r['stored']:.0f} of {r['expected']:.0f}: lost {lost:.0f}, "
          f"duplicated {r['duplicates']:.0f}, reported new {r['reported_new']:.0f}")
    return 0 if lost == 0 and r["duplicates"] == 0 and r["reported_new"] == r["expected"] else 1


if __name__ == "__main__":
    sys.exit(main())
