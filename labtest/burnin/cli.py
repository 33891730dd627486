"""``labtest burnin``: run a station, resume a run, list runs, rebuild a run's report.

    labtest burnin STATION.yaml [--emulate] [--time-scale X] [--fault KIND@TARGET[:k=v]]
    labtest burnin --resume RUN_ID [--db FILE|URL]
    labtest burnin --list [--db FILE|URL]
    labtest burnin --metrics [--db FILE|URL]     # OpenMetrics text for Prometheus
    labtest burnin --serial SERIAL [--db FILE|URL]  # a unit's verdicts in every run
    labtest burnin --report RUN_ID [--db FILE|URL]

``--db`` is a SQLite file or a ``postgresql://`` URL (one database for a floor of
stations; ``$LABTEST_DB`` sets it for every command, docs/database.md).

Exit status: 0 every unit passed (or was marginal); 1 a unit failed; 3 the run
stopped before its end (resumable) or a unit could not be judged; 2 the
station, the database, the output directory or the lab could not be used (busy
devices included), said in one line.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from labtest import exits


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "burnin",
        help="run a burn-in station: monitors, durable samples, resume, verdict per serial",
        description="Run a burn-in station file, or resume / list / report runs.",
    )
    ap.add_argument("station", nargs="?", type=Path, help="the station file (YAML)")
    ap.add_argument("--emulate", action=argparse.BooleanOptionalAction, default=None,
                    help="run against the emulated lab built from the station's testbed "
                         "(default: when that testbed has an emulation: section)")
    ap.add_argument("--time-scale", type=float, metavar="X",
                    help="emulated lab: virtual seconds per wall second (default: stepped "
                    "virtual clock, as fast as the devices answer)")
    ap.add_argument("--fault", action="append", default=[], metavar="KIND@TARGET[:k=v,...]",
                    help="emulated lab: inject a fault, e.g. failing_laser@leaf2:Ethernet8")
    ap.add_argument("--resume", metavar="RUN_ID", help="continue a crashed or stopped run")
    ap.add_argument("--list", action="store_true", help="list the runs in the database")
    ap.add_argument("--serial", metavar="SERIAL",
                    help="a unit's verdicts in every analysed run (every station's, on a "
                    "shared database)")
    ap.add_argument("--metrics", action="store_true",
                    help="print every run's figures as OpenMetrics text (Prometheus)")
    ap.add_argument("--report", metavar="RUN_ID", help="analyse a run again and rewrite its output")
    ap.add_argument("--db", type=_db_arg, metavar="FILE|URL",
                    help="the run database: a SQLite file or a postgresql:// URL (default: the "
                    "station's storage.url, a postgresql:// $LABTEST_DB, the station's "
                    "storage.path, else reports/burnin/burnin.db)")
    ap.add_argument("--output", type=Path, help="results directory (default: the station's "
                    "output, else reports/burnin)")
    ap.add_argument("--plots", choices=("all", "failed", "none"), default="all",
                    help="time-series plots for every unit (default), failed ones, or none")
    ap.add_argument("--plain", action="store_true",
                    help="log lines instead of the live panel (automatic when not a terminal)")
    ap.add_argument("--reserve", action="store_true", default=None,
                    help="hold the devices while the run lasts (default: on, off with --emulate)")
    ap.add_argument("--no-reserve", action="store_false", dest="reserve", help="do not hold them")
    ap.add_argument("--reserve-timeout", type=float, default=None, metavar="SECONDS",
                    help="wait this long for devices another run holds; 0 fails fast "
                    "(default 300)")
    ap.add_argument("--lease-store", metavar="URL",
                    help="where leases live (as pytest's --lease-store)")
    ap.set_defaults(handler=_burnin)


def _db_arg(text: str) -> str | Path:
    """A server URL stays a string (a Path would fold its ``//``); anything else is a file."""
    from labtest import db

    return text if db.is_postgres(text) else Path(text)


def _burnin(args: argparse.Namespace) -> int:
    from labtest.burnin.store import StoreError
    from labtest.errors import ConfigError, LabtestError
    from labtest.secrets import install_log_redaction

    install_log_redaction()  # whatever a driver logs to the terminal is scrubbed
    try:
        if args.list or args.metrics:
            return _list(args)
        if args.serial:
            return _serial(args)
        if args.report:
            return _finish(args, args.report, None)
        if args.resume:
            return _run(args, resume=args.resume)
        if args.station is None:
            print("labtest burnin: a station file, --resume, --list or --report is needed",
                  file=sys.stderr)
            return exits.USAGE
        return _run(args, resume=None)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{exc.path}: {len(exc.problems)} error(s)", file=sys.stderr)
        return exits.USAGE
    except (StoreError, LabtestError) as exc:
        print(f"labtest burnin: {_one_line(exc)}", file=sys.stderr)
        return exits.USAGE
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(f"labtest burnin: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return exits.USAGE
    except KeyboardInterrupt:  # a second Ctrl-C / SIGTERM: the station was made safe
        print("labtest burnin: interrupted; the run is saved as stopped "
              "(labtest burnin --list, then --resume RUN_ID)", file=sys.stderr)
        return exits.INCOMPLETE


def _one_line(exc: BaseException) -> str:
    from labtest.secrets import redact

    return " ".join(redact(str(exc)).split())


def _run(args: argparse.Namespace, resume: str | None) -> int:
    from labtest.burnin import runner
    from labtest.burnin.station import load_station
    from labtest.emulation.cli import parse_fault
    from labtest.reservation import DEFAULT_WAIT_S
    from labtest.testbed import emulates, load_testbed

    stop = threading.Event()
    station = load_station(args.station) if resume is None else None
    options = runner.Options(
        # the one rule (labtest.testbed.emulates); a resumed run keeps the mode it started in
        emulate=bool(args.emulate) if station is None else emulates(
            load_testbed(station.testbed), args.emulate),
        time_scale=args.time_scale,
        faults=[parse_fault(f) for f in args.fault],
        db=args.db,
        output=args.output,
        progress=_progress(args.plain),
        stop=stop,
        reserve=args.reserve,
        reserve_timeout_s=DEFAULT_WAIT_S if args.reserve_timeout is None else args.reserve_timeout,
        lease_store=args.lease_store,
        say=lambda line: print(f"labtest burnin: {line}", file=sys.stderr, flush=True),
    )
    previous = _on_interrupt(stop)
    try:
        if station is not None:
            outcome = runner.start(station, options)
        else:
            assert resume is not None  # no station: a resumed run
            outcome = runner.resume(resume, options)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if outcome.status != "complete":
        from labtest.db import display_url

        shown = outcome.station.storage.path or outcome.station.storage.url
        db = f" --db {display_url(str(outcome.db))}" if args.db or shown else ""
        print(f"run {outcome.run_id} stopped; continue with: "
              f"labtest burnin --resume {outcome.run_id}{db}")
        return exits.INCOMPLETE
    return _finish(args, outcome.run_id, outcome.db)


def _finish(args: argparse.Namespace, run_id: str, db: str | Path | None) -> int:
    from labtest.burnin import outputs
    from labtest.burnin.analysis import analyse
    from labtest.burnin.backends import database, open_store
    from labtest.burnin.runner import output_dir
    from labtest.burnin.station import load_station
    from labtest.burnin.store import StoreError
    from labtest.measure import load_limits
    from labtest.testbed import load_testbed

    store = open_store(db or database(args.db), create=False)
    try:
        run = store.run(run_id)
        limits = load_limits(run.info["limits"])
        report = analyse(store, run_id, limits)
        station = load_station(run.info["station_path"])
        out_dir = output_dir(station, args.output)
        written = outputs.write(report, store, limits, out_dir, plots=args.plots,
                                testbed=load_testbed(run.info["testbed"]))
        try:  # a read-only or archived database still gets its report
            store.put_verdicts(run_id, stored_verdicts(run_id, report))
        except StoreError as exc:
            print(f"labtest burnin: verdicts not stored in the database: {_one_line(exc)}",
                  file=sys.stderr)
    finally:
        store.close()
    print(written.table.read_text(), end="")
    print(f"summary:  {written.summary}")
    if written.plots:
        print(f"plots:    {written.plots[0].parent} ({len(written.plots)})")
    print(f"sign-off: labtest report {written.allure_results}")
    verdicts = {u.verdict for u in report.units}
    if "FAIL" in verdicts:
        return exits.FAIL
    return exits.INCOMPLETE if "INCOMPLETE" in verdicts else exits.PASS


def stored_verdicts(run_id: str, report: Any) -> list[Any]:
    """The report's verdict per unit, as the store keeps them."""
    from datetime import UTC, datetime

    from labtest.burnin.store import Verdict

    now = datetime.now(UTC).isoformat(timespec="seconds")
    return [Verdict(run_id, u.unit.serial, u.unit.kind,
                    f"{u.unit.device}:{u.unit.port}" if u.unit.port else u.unit.device,
                    u.verdict, float(u.coverage_pct), u.reasons[0] if u.reasons else None, now)
            for u in report.units]


def _serial(args: argparse.Namespace) -> int:
    from labtest.burnin.backends import database, open_store

    store = open_store(database(args.db), create=False)
    try:
        found = store.verdicts(args.serial)
    finally:
        store.close()
    if not found:
        print(f"labtest burnin: no analysed run has unit {args.serial}", file=sys.stderr)
        return exits.USAGE
    for v in found:
        reason = f"  {v.reason}" if v.reason else ""
        print(f"{v.run_id}  {v.station} on {v.host or '?'}  {v.location}  {v.verdict:<10} "
              f"coverage {v.coverage_pct:.0f} %{reason}")
    return exits.PASS


def _list(args: argparse.Namespace) -> int:
    from labtest.burnin.backends import database, open_store

    store = open_store(database(args.db), create=False)  # a typo creates nothing
    try:
        if args.metrics:
            from labtest.db.metrics import burnin_metrics

            print(burnin_metrics(store), end="")
            return exits.PASS
        for run in store.runs():  # every station's runs when the database is shared
            done = 100.0 * run.position_s / run.duration_s if run.duration_s else 0.0
            print(f"{run.run_id}  {run.status:<9} {run.created_utc}  "
                  f"{run.position_s / 3600:.2f}/{run.duration_s / 3600:.2f} h ({done:.0f} %)  "
                  f"{run.station} on {run.host or '?'}")
    finally:
        store.close()
    return exits.PASS


def _progress(plain: bool) -> Any:
    from labtest.burnin.progress import LivePanel, LogLines

    if plain or not sys.stdout.isatty():
        return LogLines()
    try:
        return LivePanel()
    except ImportError:  # rich is optional: log lines say the same
        return LogLines()


def _on_interrupt(stop: threading.Event) -> dict[int, Any]:
    """First Ctrl-C: finish the readings in flight, save, exit resumable. Second: now."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            signal.signal(signum, signal.SIG_DFL)
            raise KeyboardInterrupt
        print("\nstopping after the readings in flight (Ctrl-C again to quit at once)",
              file=sys.stderr, flush=True)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous
