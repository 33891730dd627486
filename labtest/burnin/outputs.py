"""What a finished run leaves: verdict table, JSON summary, plots, Allure and sign-off input.

``OUT/<run_id>/``:

- ``verdicts.txt``: one line per unit serial (verdict, location, first reason);
- ``summary.json``: run, per-unit verdicts with every reason, worst value per
  criterion with its limit and source, per-lane statistics, alarms and errors;
- ``plots/<serial>.png``: DOM over time with limits (modules), FEC / PRBS /
  error counters over time (switches);
- ``allure-results/``: one Allure result per unit plus ``labtest-results.json``,
  so ``labtest report OUT/<run_id>/allure-results`` builds the sign-off bundle.
"""

from __future__ import annotations

import io
import json
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import labtest
from labtest.burnin.analysis import Finding, Report, UnitVerdict, summary_stats
from labtest.burnin.store import SampleStore, SeriesKey
from labtest.measure import LimitsProfile, Verdict
from labtest.parsing import to_jsonable
from labtest.reports import allure_env, provenance, results
from labtest.reports.files import write_atomic
from labtest.reports.plots import DPI, FAIL_COLOUR, NEUTRAL, PASS_COLOUR, WARN_COLOUR

MAX_POINTS = 2000  # per line in a plot: longer series are thinned evenly
OUTCOME = {"PASS": "passed", "MARGINAL": "passed", "FAIL": "failed", "INCOMPLETE": "broken"}
ALLURE_STATUS = {"passed": "passed", "failed": "failed", "broken": "broken"}
SHOWN_EVENTS = 200


@dataclass(frozen=True)
class Outputs:
    directory: Path
    table: Path
    summary: Path
    plots: list[Path]
    allure_results: Path


def write(report: Report, store: SampleStore, limits: LimitsProfile, out_dir: Path,
          plots: str = "all", testbed: Any = None) -> Outputs:
    """Write everything under ``out_dir/<run_id>``; ``plots``: all, failed or none."""
    directory = out_dir / report.run.run_id
    directory.mkdir(parents=True, exist_ok=True)
    table = directory / "verdicts.txt"
    write_atomic(table, verdict_table(report))
    summary = directory / "summary.json"
    write_atomic(summary, _json(summary_doc(report, store, limits)))
    drawn = []
    for uv in report.units:
        if plots == "all" or (plots == "failed" and uv.verdict != "PASS"):
            path = directory / "plots" / f"{_safe(uv.unit.serial)}.png"
            path.parent.mkdir(exist_ok=True)
            write_atomic(path, unit_plot(report, store, uv, limits))
            drawn.append(path)
    allure_dir = write_allure(report, store, limits, directory / "allure-results",
                              {p.stem: p for p in drawn}, testbed)
    return Outputs(directory, table, summary, drawn, allure_dir)


# --- table and JSON ------------------------------------------------------------------------------


def verdict_table(report: Report) -> str:
    rows = [("SERIAL", "KIND", "LOCATION", "VERDICT", "COVER%", "REASON")]
    for uv in sorted(report.units, key=_order):
        u = uv.unit
        where = f"{u.device}:{u.port}" if u.port else u.device
        reason = uv.reasons[0] if uv.reasons else ""
        more = f" (+{len(uv.reasons) - 1} more)" if len(uv.reasons) > 1 else ""
        rows.append((u.serial, u.kind, where, uv.verdict, f"{uv.coverage_pct:.1f}", reason + more))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5]
             for r in rows]
    counts = {v: sum(1 for u in report.units if u.verdict == v)
              for v in ("FAIL", "INCOMPLETE", "MARGINAL", "PASS")}
    tally = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    lines.append(f"\n{len(report.units)} units: {tally}")
    for f in report.fixtures:
        lines.append(f"fixture (not under test) {f.serial} at {f.where}: {f.text}")
    return "\n".join(lines) + "\n"


def _order(uv: UnitVerdict) -> tuple[int, str, str]:
    rank = {"FAIL": 0, "INCOMPLETE": 1, "MARGINAL": 2, "PASS": 3}[uv.verdict]
    return rank, uv.unit.device, uv.unit.port


def summary_doc(report: Report, store: SampleStore, limits: LimitsProfile) -> dict[str, Any]:
    run = report.run
    events = store.events(run.run_id, ["alarm", "error", "resumed", "stopped", "complete",
                                       "module-changed", "module-missing"])
    return {
        "schema": "labtest-burnin/1",
        "run": {"run_id": run.run_id, "station": run.station, "status": run.status,
                "created_utc": run.created_utc, "duration_h": run.duration_s / 3600.0,
                "samples": store.sample_count(run.run_id), **run.info},
        "limits": {"profile": limits.profile, "file": str(limits.path), "sha256": limits.sha256},
        "verdicts": {v: sum(1 for u in report.units if u.verdict == v)
                     for v in ("PASS", "MARGINAL", "FAIL", "INCOMPLETE")},
        "units": [_unit_doc(report, uv) for uv in sorted(report.units, key=_order)],
        "fixtures": [_finding_doc(f) for f in report.fixtures],
        "events": [{"t_h": e.t_s / 3600.0, "kind": e.kind, "unit": e.unit, "text": e.text}
                   for e in events[:SHOWN_EVENTS]],
        "events_total": len(events),
    }


def _unit_doc(report: Report, uv: UnitVerdict) -> dict[str, Any]:
    u = uv.unit
    return {
        "serial": u.serial, "kind": u.kind, "device": u.device, "port": u.port or None,
        "verdict": uv.verdict, "reasons": uv.reasons, "coverage_pct": uv.coverage_pct,
        "info": {k: v for k, v in u.info.items() if k != "thresholds"},
        "criteria": [_finding_doc(f) for f in worst_per_criterion(uv.findings)],
        "stats": summary_stats(report, u.serial),
    }


def _finding_doc(f: Finding) -> dict[str, Any]:
    return {"criterion": f.criterion, "verdict": f.verdict.value, "value": f.value,
            "where": f.where, "caused_by": f.caused_by, "text": f.text, "reason": f.reason(),
            "limit": f.limit.describe(), "source": f.limit.source}


def worst_per_criterion(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per criterion: the worst verdict, then the largest excursion."""
    rank = {Verdict.FAIL: 0, Verdict.MARGINAL: 1, Verdict.PASS: 2}
    best: dict[str, Finding] = {}
    for f in findings:
        cur = best.get(f.criterion)
        if cur is None or (rank[f.verdict], -_excess(f)) < (rank[cur.verdict], -_excess(cur)):
            best[f.criterion] = f
    return sorted(best.values(), key=lambda f: (rank[f.verdict], _priority(f.criterion)))


#: the order criteria are shown in: what tells a unit's story first
PRIORITY = ("burnin.tx_bias_drift_pct", "burnin.tx_power_drift_db", "burnin.rx_power_drift_db",
            "burnin.temperature_drift_c", "burnin.tx_power_dbm", "burnin.rx_power_dbm",
            "burnin.temperature_c", "burnin.voltage_v", "burnin.fec_uncorrectable_cw",
            "burnin.pre_fec_ber", "burnin.fec_tail_bin", "burnin.prbs_ber",
            "burnin.prbs_lock_losses", "burnin.link_flaps", "burnin.error_counter_increments",
            "burnin.dom_alarms")


def _priority(criterion: str) -> int:
    return PRIORITY.index(criterion) if criterion in PRIORITY else len(PRIORITY)


def _excess(f: Finding) -> float:
    lim, v = f.limit, f.value
    if not math.isfinite(v):
        return math.inf
    gaps = [lim.low - v if lim.low is not None else -math.inf,
            v - lim.high if lim.high is not None else -math.inf]
    return max(gaps)


def _json(doc: Any) -> str:
    """JSON without NaN/Infinity literals (not JSON): they become null / "inf" / "-inf"."""
    return json.dumps(to_jsonable(doc), indent=2) + "\n"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


# --- plots ---------------------------------------------------------------------------------------


def unit_plot(report: Report, store: SampleStore, uv: UnitVerdict,
              limits: LimitsProfile) -> bytes:
    keys = [k for k in store.series(report.run.run_id) if k.unit == uv.unit.serial]
    chamber = [k for k in store.series(report.run.run_id)
               if k.metric == "chamber_temperature_c"]
    u = uv.unit
    where = f"{u.device}:{u.port}" if u.port else u.device
    title = f"{u.kind} {u.serial} at {where}: {uv.verdict}"
    if u.kind == "module":
        panels = [
            ("temperature_c", "module temperature (C)", "burnin.temperature_c", False),
            ("tx_power_dbm", "Tx power (dBm)", "burnin.tx_power_dbm", False),
            ("tx_bias_ma", "Tx bias (mA)", None, False),
            ("rx_power_dbm", "Rx power (dBm)", "burnin.rx_power_dbm", False),
        ]
    else:
        panels = [
            ("pre_fec_ber", "pre-FEC BER", "burnin.pre_fec_ber", True),
            ("fec_uncorrectable_cw", "uncorrectable CW (cumulative)", None, False),
            ("prbs_ber", "PRBS BER per interval", "burnin.prbs_ber", True),
            ("rx_errors", "rx errors (cumulative)", None, False),
        ]
    panels = [p for p in panels if any(k.metric == p[0] for k in keys)]
    height_in = 2.0 * max(len(panels), 1) + 0.7
    fig = Figure(figsize=(9.0, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.45 / height_in,
                        bottom=0.5 / height_in, hspace=0.12)  # fixed layout: cheap to draw
    axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle(title, fontsize=10, color=_colour(uv.verdict))
    for ax, (metric, label, limit_key, log) in zip(axes, panels, strict=False):
        for key in (k for k in keys if k.metric == metric):
            _line(ax, store, key, metric, log)
        if metric == "temperature_c":
            for key in chamber:
                _line(ax, store, key, "chamber air", False, colour="#888888")
        if limit_key is not None:
            _limit_lines(ax, limits, limit_key)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(True, alpha=0.3)
        if log:
            ax.set_yscale("log")
            ax.minorticks_off()
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize=6, ncols=4)
    axes[-1].set_xlabel("run time (h)")
    return _png(fig)


def _line(ax: Axes, store: SampleStore, key: SeriesKey, label: str, log: bool,
          colour: str | None = None) -> None:
    _, t, v = store.points(key.series_id)
    if key.metric in ("fec_uncorrectable_cw", "rx_errors") and v.size:
        v = v - v[0]
    if log:
        v = np.where(v > 0, v, np.nan)
    step = max(1, t.size // MAX_POINTS)
    name = label if label == "chamber air" else _lane_label(key)
    ax.plot(t[::step] / 3600.0, v[::step], linewidth=0.9, label=name, color=colour)


def _lane_label(key: SeriesKey) -> str:
    port = key.port.split(":", 1)[-1]
    if key.metric in ("temperature_c", "voltage_v"):
        return "module"
    return f"lane {key.lane}" if key.lane and key.metric not in ("prbs_ber",) else (
        f"{port} L{key.lane}" if key.lane else port)


def _limit_lines(ax: Axes, limits: LimitsProfile, key: str) -> None:
    lim = limits.get(key)
    for value in (lim.low, lim.high):
        if value is not None and not (value <= 0 and ax.get_yscale() == "log"):
            ax.axhline(value, color=FAIL_COLOUR, linestyle="--", linewidth=0.8)
    for value in (lim.marginal_low, lim.marginal_high):
        if value is not None:
            ax.axhline(value, color=WARN_COLOUR, linestyle=":", linewidth=0.8)


def _colour(verdict: str) -> str:
    return {"PASS": PASS_COLOUR, "MARGINAL": WARN_COLOUR, "FAIL": FAIL_COLOUR}.get(
        verdict, NEUTRAL)


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 1})
    return buf.getvalue()


# --- Allure and sign-off hand-off ---------------------------------------------------------------


def write_allure(report: Report, store: SampleStore, limits: LimitsProfile, results_dir: Path,
                 plots: dict[str, Path], testbed: Any = None) -> Path:
    """One Allure result per unit and ``labtest-results.json`` for ``labtest report``."""
    results_dir.mkdir(parents=True, exist_ok=True)
    run = report.run
    start_ms = int(_epoch(run.created_utc) * 1000)
    stop_ms = int(time.time() * 1000)
    tests = []
    for uv in report.units:
        nodeid = f"burnin::{uv.unit.serial}"
        attachments = []
        plot = plots.get(_safe(uv.unit.serial))
        if plot is not None:
            source = f"{uuid.uuid4()}-attachment.png"
            write_atomic(results_dir / source, plot.read_bytes())
            attachments.append({"name": f"{uv.unit.serial} over time", "source": source,
                                "type": "image/png"})
        test = _test_record(uv, nodeid, limits, attachments)
        tests.append(test)
        _allure_result(results_dir, test, uv, start_ms, stop_ms, attachments)
    doc = {
        "schema": results.SCHEMA,
        "run": _run_record(report),
        "testbed": results.testbed_record(testbed) if testbed is not None else None,
        "limits": results.limits_record(limits.path) if limits.path else None,
        "inventory": _inventory(report),
        "inventory_error": None,
        "tests": tests,
    }
    results.write(results_dir, doc)
    allure_env.write_environment(results_dir, {
        "burnin.run_id": run.run_id, "burnin.station": run.station, "emulated":
        run.info.get("emulate"), "limits.profile": limits.profile, "limits.sha256": limits.sha256,
        "labtest.version": labtest.__version__})
    return results_dir


def _test_record(uv: UnitVerdict, nodeid: str, limits: LimitsProfile,
                 attachments: list[dict[str, str]]) -> dict[str, Any]:
    test = results.new_test(nodeid)
    outcome = OUTCOME[uv.verdict]
    u = uv.unit
    test.update({
        "name": f"burn-in {u.kind} {u.serial}",
        "suite": "burnin",
        "outcome": outcome,
        "category": {"failed": "product-failure", "broken": "infrastructure"}.get(outcome),
        "message": "; ".join(uv.reasons) or None,
        "device": u.device,
        "labels": {"dut_serial": [u.serial], "device": [u.device],
                   **({"port": [u.port]} if u.port else {})},
        "attachments": attachments,
        "measurements": [_measurement(f, u.serial) for f in worst_per_criterion(uv.findings)],
    })
    return test


def _measurement(f: Finding, serial: str) -> dict[str, Any]:
    return {
        "name": f.criterion.removeprefix("burnin."),
        "value": f.value if math.isfinite(f.value) else None,
        "unit": f.limit.unit,
        "verdict": f.verdict.value,
        "limit": f.limit.model_dump(),
        "limit_key": f.criterion,
        "labels": {"serial": serial, "where": f.where},
        "timestamp_s": 0.0,
    }


def _allure_result(results_dir: Path, test: dict[str, Any], uv: UnitVerdict, start_ms: int,
                   stop_ms: int, attachments: list[dict[str, str]]) -> None:
    status = ALLURE_STATUS[test["outcome"]]
    steps = [{"name": f"{f.verdict.value}: {f.reason()}", "status":
              "failed" if f.verdict is Verdict.FAIL else "passed", "stage": "finished",
              "start": stop_ms, "stop": stop_ms}
             for f in worst_per_criterion(uv.findings)]
    result = {
        "uuid": str(uuid.uuid4()),
        "historyId": test["nodeid"],
        "name": test["name"],
        "fullName": test["nodeid"],
        "status": status,
        "statusDetails": {"message": test["message"] or ""},
        "stage": "finished",
        "start": start_ms,
        "stop": stop_ms,
        "labels": [{"name": "suite", "value": "burnin"}, {"name": "epic", "value": "burn-in"},
                   {"name": "feature", "value": uv.unit.kind},
                   {"name": results.NODEID_LABEL, "value": test["nodeid"]},
                   {"name": "dut_serial", "value": uv.unit.serial},
                   {"name": "device", "value": uv.unit.device}],
        "steps": steps,
        "attachments": attachments,
    }
    write_atomic(results_dir / f"{result['uuid']}-result.json", _json(result))


def _run_record(report: Report) -> dict[str, Any]:
    run = report.run
    return {
        "started_utc": run.created_utc,
        "finished_utc": provenance.utc_now(),
        "user": provenance.user(),
        "host": provenance.host(),
        "labtest_version": labtest.__version__,
        "git_commit": None,
        "labtest_commit": provenance.git_commit(Path(labtest.__file__).parent),
        "python": provenance.python_version(),
        "pytest": "-",
        "args": [f"(labtest burnin {run.info.get('station_path', '')}, run {run.run_id})"],
        "rootdir": None,
        "emulated": bool(run.info.get("emulate")),
        "pytest_exit_status": None,
    }


def _inventory(report: Report) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for uv in report.units:
        u = uv.unit
        entry = out.setdefault(u.device, {"role": "unit under test", "driver": None})
        if u.kind == "switch":
            entry["facts"] = {**{k: v for k, v in u.info.items() if v is not None},
                              "serial": u.serial}
        elif u.kind == "module":
            entry.setdefault("optics", {})[u.port] = {
                "vendor": u.info.get("vendor"), "part_number": u.info.get("part_number"),
                "serial": u.serial, "firmware": u.info.get("firmware"),
                "media_type": u.info.get("media_type")}
    return out


def _epoch(utc: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(utc).timestamp()
