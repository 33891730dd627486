"""``labtest history SERIAL|DEVICE:PORT [--key K]``: a unit's measurements across stored runs.

    labtest history MT2145X01234 --key fec.pre_fec_ber          # one module, every run
    labtest history leaf1:Ethernet0 --plot ber.png              # one port, and a trend plot
    labtest history leaf1 --db postgresql://labdb/labtest       # a device, from the lab's server

Runs are stored by ``labtest run`` (``labtest.db.history``); the store is
``--db``, else a PostgreSQL ``$LABTEST_DB``, else ``reports/history.db``. A serial
matches a module's serial (from the run's inventory) or a device's. Exit status:
0 rows shown, 1 nothing stored for that target, 2 the store cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "history", help="a serial's or a port's measurements across stored runs (and a plot)",
        description="Measurements of one unit across the runs stored by labtest run.")
    ap.add_argument("target", metavar="SERIAL|DEVICE:PORT", nargs="?",
                    help="a module or device serial, DEVICE:PORT, or a device name")
    ap.add_argument("--key", metavar="K", help="only this limit key or measurement name, "
                    "e.g. fec.pre_fec_ber")
    ap.add_argument("--db", metavar="FILE|URL", help="the history store (default: a "
                    "postgresql:// $LABTEST_DB, else reports/history.db)")
    ap.add_argument("--plot", type=Path, metavar="FILE.png",
                    help="also draw the values over the runs' start times")
    ap.add_argument("--metrics", action="store_true",
                    help="print each testbed's latest run as OpenMetrics text (Prometheus)")
    ap.set_defaults(handler=_history)


def _history(args: argparse.Namespace) -> int:
    from labtest.db import DatabaseUnavailable
    from labtest.db.history import DEFAULT_PATH, HistoryError, HistoryStore

    where = args.db
    if where is None:
        from labtest.db.history import default_location

        where = default_location()
        if where == DEFAULT_PATH and not DEFAULT_PATH.exists():
            print(f"labtest history: no history here ({DEFAULT_PATH}); runs are stored by "
                  "labtest run, or give --db", file=sys.stderr)
            return 2
    elif not str(where).startswith(("postgresql://", "postgres://")) and not Path(where).exists():
        from labtest.db import display_url

        print(f"labtest history: {display_url(str(where))}: no history store there",
              file=sys.stderr)
        return 2
    if args.target is None and not args.metrics:
        print("labtest history: a SERIAL, DEVICE:PORT or device (or --metrics) is needed",
              file=sys.stderr)
        return 2
    try:
        store = HistoryStore(where)
        try:
            if args.metrics:
                from labtest.db.metrics import history_metrics

                print(history_metrics(store), end="")
                return 0
            points = store.points(args.target, args.key)
        finally:
            store.close()
    except (HistoryError, DatabaseUnavailable) as exc:
        print(f"labtest history: {exc}", file=sys.stderr)
        return 2
    if not points:
        key = f" with key {args.key}" if args.key else ""
        print(f"labtest history: no stored measurement of {args.target}{key}", file=sys.stderr)
        return 1
    print(format_table(points))
    runs = len({p.run_id for p in points})
    print(f"{len(points)} measurement(s) in {runs} run(s)")
    if args.plot is not None:
        plot(points, args.plot, f"{args.target}" + (f" {args.key}" if args.key else ""))
        print(f"plot: {args.plot}")
    return 0


def _where(p: Any) -> str:
    place = f"{p.device}:{p.port}" if p.device and p.port else p.device or ""
    return place + (f" lane {p.lane}" if p.lane else "")


def format_table(points: list[Any]) -> str:
    rows = [("STARTED", "RUN", "RUN VERDICT", "MEASUREMENT", "VALUE", "VERDICT", "WHERE",
             "SERIAL")]
    for p in points:
        value = "-" if p.value is None else f"{p.value:.6g}" + (f" {p.unit}" if p.unit else "")
        rows.append((p.started_utc, p.run_id, p.run_verdict or "-", p.limit_key or p.name,
                     value, p.verdict or "-", _where(p), p.serial or p.device_serial or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def plot(points: list[Any], path: Path, title: str) -> None:
    """One line per measurement and place (lane), over the runs' start times."""
    from datetime import datetime

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    lines: dict[str, tuple[list[datetime], list[float]]] = {}
    for p in points:
        if p.value is None or not p.started_utc:
            continue
        label = f"{p.limit_key or p.name} {_where(p)}".strip()
        xs, ys = lines.setdefault(label, ([], []))
        xs.append(datetime.fromisoformat(p.started_utc))
        ys.append(p.value)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for label, (xs, ys) in sorted(lines.items())[:20]:
        ax.plot(mdates.date2num(xs), ys, marker="o", label=label)
    units = {p.unit for p in points if p.unit}
    ax.set_ylabel(", ".join(sorted(units)) or "value")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(lines) <= 10:
        ax.legend(fontsize=7)
    ax.xaxis_date()
    fig.autofmt_xdate()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
