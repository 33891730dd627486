"""Burn-in analysis: statistics per unit and lane, criteria, attribution, verdict per serial.

Series are read back one at a time (memory stays flat however long the run).

**Statistics.** For every DOM series: min, max, mean, the start and end
levels (means of the first and last hour, at most a tenth of the run, at least
three samples each), drift = end - start, and the slope per hour. Bias and
optical power are fitted as ``v = a + b*t + c*T_module`` (plain least squares)
when the module temperature moved by more than ``TEMP_SPREAD_C``; module
temperature likewise against the chamber air. The drift and slope are then
those of the temperature-corrected values, so a chamber cycle is not taken for
ageing and rising bias at constant temperature and Tx power is.

Counters (FEC codewords, error counters, FEC histogram bins) are stored
cumulative; increments sum the positive steps and take a drop as a reset.

**Attribution.** A module's own criteria (temperature, supply, Tx power,
bias) are its own. What a port *receives* (Rx power, FEC, PRBS, link flaps,
error counters, Rx alarms) is blamed on the far end's transmitter when that
transmitter failed a Tx criterion and this port's Rx power dropped with it;
otherwise on the receiving module when it is under test, else on the switch.
A failure landing on a fixture (a module not under test) is reported as such
and fails no unit.

**Verdict** per unit serial: FAIL if any criterion failed, else INCOMPLETE when
its readings cover less than ``burnin.sample_coverage_pct`` of the schedule
(or the run did not finish), else MARGINAL if a criterion was marginal, else
PASS.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from labtest.burnin.schedule import Series
from labtest.burnin.store import Run, SampleStore, SeriesKey, Unit
from labtest.measure import Limit, LimitsProfile, Verdict

WINDOW_S = 3600.0
WINDOW_FRACTION = 0.1
MIN_WINDOW = 3
TEMP_SPREAD_C = 0.5
DOM_METRICS = ("temperature_c", "voltage_v", "tx_bias_ma", "tx_power_dbm", "rx_power_dbm")
COMPENSATED = ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm")
ERROR_COUNTERS = ("rx_errors", "tx_errors", "rx_fcs_errors", "rx_symbol_errors")
RANGE = {"temperature_c": "burnin.temperature_c", "voltage_v": "burnin.voltage_v",
         "tx_power_dbm": "burnin.tx_power_dbm", "rx_power_dbm": "burnin.rx_power_dbm"}
DRIFT = {"temperature_c": "burnin.temperature_drift_c", "tx_power_dbm": "burnin.tx_power_drift_db",
         "rx_power_dbm": "burnin.rx_power_drift_db", "tx_bias_ma": "burnin.tx_bias_drift_pct"}
#: the module's own criteria that show its transmitter failing
TX_CRITERIA = frozenset({"burnin.tx_power_dbm", "burnin.tx_power_drift_db",
                         "burnin.tx_bias_drift_pct"})
RX_WORDS = ("rx", "los", "lol")


# --- statistics ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trend:
    n: int
    min: float
    max: float
    mean: float
    start: float
    end: float
    drift: float  # end - start (temperature-corrected where the fit applies)
    slope_per_h: float
    compensated: bool = False


def trend(t_s: np.ndarray, v: np.ndarray, x: np.ndarray | None = None) -> Trend:
    """Levels, drift and slope of one series; ``x`` is the covariate to correct for."""
    ok = np.isfinite(v)
    t_s, v = t_s[ok], v[ok]
    x = x[ok] if x is not None else None
    n = int(v.size)
    if n == 0:
        nan = math.nan
        return Trend(0, nan, nan, nan, nan, nan, nan, nan)
    corrected, slope, used = v, 0.0, False
    if n >= 3 and float(np.ptp(t_s)) > 0:
        hours = (t_s - t_s[0]) / 3600.0
        cols = [np.ones(n), hours]
        if x is not None and np.all(np.isfinite(x)) and float(np.ptp(x)) > TEMP_SPREAD_C:
            cols.append(x - float(np.mean(x)))
            used = True
        coef = np.linalg.lstsq(np.column_stack(cols), v, rcond=None)[0]
        slope = float(coef[1])
        if used:
            corrected = v - coef[2] * cols[2]
    start, end = _windows(t_s, corrected)
    return Trend(n, float(v.min()), float(v.max()), float(v.mean()), start, end, end - start,
                 slope, used)


def _windows(t_s: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    n = v.size
    if n < 2 * MIN_WINDOW:
        return float(v[0]), float(v[-1])
    span = float(t_s[-1] - t_s[0])
    width = min(WINDOW_S, WINDOW_FRACTION * span)
    first = max(MIN_WINDOW, int(np.searchsorted(t_s, t_s[0] + width, side="right")))
    last = max(MIN_WINDOW, n - int(np.searchsorted(t_s, t_s[-1] - width, side="left")))
    return float(v[:first].mean()), float(v[-last:].mean())


def increments(v: np.ndarray) -> np.ndarray:
    """Per-reading increments of a cumulative counter; a drop is a reset (count from 0)."""
    if v.size == 0:
        return v
    steps = np.diff(v, prepend=v[0])
    return np.where(steps < 0, v, steps)


def flaps(v: np.ndarray) -> int:
    """Up-to-down transitions of an ``oper_up`` series."""
    return int(np.sum((v[:-1] >= 0.5) & (v[1:] < 0.5))) if v.size > 1 else 0


# --- per port ------------------------------------------------------------------------------------


@dataclass
class PortStats:
    name: str  # "device:port"
    peer: str | None
    mode: str
    module: str | None = None  # serial of the module in it
    switch: str | None = None  # serial of the device measuring it
    dom: dict[tuple[str, int], Trend] = field(default_factory=dict)
    alarms: dict[str, int] = field(default_factory=dict)  # quantity -> alarm-level samples
    warnings: dict[str, int] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)  # metric -> increments
    pre_fec_ber_max: float | None = None
    fec_tail_bin: int | None = None
    prbs_ber_max: dict[int, float] = field(default_factory=dict)
    prbs_lock_losses: int = 0
    flaps: int = 0
    flags: dict[str, int] = field(default_factory=dict)


def port_stats(store: SampleStore, run: Run, units: list[Unit]) -> dict[str, PortStats]:
    by_serial = {u.serial: u for u in units}
    ports: dict[str, PortStats] = {}
    for device, port, peer, mode in run.info.get("ports", []):
        ports[f"{device}:{port}"] = PortStats(f"{device}:{port}", peer, mode)
    grouped: dict[str, list[SeriesKey]] = defaultdict(list)
    for key in store.series(run.run_id):
        grouped[key.port].append(key)
    air = _chamber_air(store, grouped.get("", []))
    for name, keys in grouped.items():
        if name not in ports:
            continue
        _fill(ports[name], keys, store, by_serial, air)
    return ports


def _chamber_air(store: SampleStore, keys: list[SeriesKey]) -> tuple[np.ndarray, np.ndarray]:
    for key in keys:
        if key.metric == "chamber_temperature_c":
            _, t, v = store.points(key.series_id)
            return t, v
    return np.zeros(0), np.zeros(0)


def _fill(ps: PortStats, keys: list[SeriesKey], store: SampleStore, units: dict[str, Unit],
          air: tuple[np.ndarray, np.ndarray]) -> None:
    temp = next((k for k in keys if k.metric == "temperature_c"), None)
    module_temp: dict[int, float] = {}
    if temp is not None:
        idx, t, v = store.points(temp.series_id)
        module_temp = dict(zip(idx.tolist(), v.tolist(), strict=True))
    bins: dict[int, float] = {}
    for key in keys:
        unit = units.get(key.unit)
        if unit is not None and unit.kind == "module":
            ps.module = key.unit
        elif unit is not None:
            ps.switch = key.unit
        idx, t, v = store.points(key.series_id)
        m = key.metric
        if m in DOM_METRICS:
            ps.dom[(m, key.lane)] = trend(t, v, _covariate(m, idx, t, module_temp, air))
            _threshold_counts(ps, m, v, units.get(key.unit))
        elif m.startswith("fec_bin_"):
            bins[int(m[8:])] = float(increments(v)[1:].sum())
        elif m in ("fec_uncorrectable_cw", "fec_corrected_cw", "fec_symbol_errors",
                   *ERROR_COUNTERS, "rx_discards", "tx_discards", "prbs_errors", "prbs_bits"):
            inc = v if m.startswith("prbs_") else increments(v)[1:]
            ps.counters[m] = ps.counters.get(m, 0.0) + float(inc.sum())
        elif m == "pre_fec_ber" and v.size:
            ps.pre_fec_ber_max = max(ps.pre_fec_ber_max or 0.0, float(np.nanmax(v)))
        elif m == "prbs_ber" and v.size:
            ps.prbs_ber_max[key.lane] = float(np.nanmax(v))
        elif m == "prbs_locked":
            ps.prbs_lock_losses += int(np.sum(v < 0.5))
        elif m == "oper_up" and ps.mode == "mission":
            ps.flaps += flaps(v)
        elif m.startswith("flag:"):
            ps.flags[m[5:]] = ps.flags.get(m[5:], 0) + int(v.size)
    hits = [b for b, n in bins.items() if n > 0]
    ps.fec_tail_bin = max(hits) if hits else (0 if bins else None)


def _covariate(metric: str, idx: np.ndarray, t: np.ndarray, module_temp: dict[int, float],
               air: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
    if metric in COMPENSATED and module_temp:
        return np.array([module_temp.get(int(i), math.nan) for i in idx])
    if metric == "temperature_c" and air[0].size >= 2:
        return np.interp(t, air[0], air[1])
    return None


def _threshold_counts(ps: PortStats, metric: str, v: np.ndarray, unit: Unit | None) -> None:
    th = (unit.info.get("thresholds", {}) if unit is not None else {}).get(metric) or {}
    lo_a, hi_a = th.get("low_alarm"), th.get("high_alarm")
    lo_w, hi_w = th.get("low_warn"), th.get("high_warn")
    alarm = np.zeros(v.size, dtype=bool)
    warn = np.zeros(v.size, dtype=bool)
    if lo_a is not None:
        alarm |= v < lo_a
    if hi_a is not None:
        alarm |= v > hi_a
    if lo_w is not None:
        warn |= v < lo_w
    if hi_w is not None:
        warn |= v > hi_w
    if alarm.any():
        ps.alarms[metric] = ps.alarms.get(metric, 0) + int(alarm.sum())
    if (warn & ~alarm).any():
        ps.warnings[metric] = ps.warnings.get(metric, 0) + int((warn & ~alarm).sum())


# --- criteria ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One criterion judged at one place; ``serial`` is the unit it is attributed to."""

    serial: str
    criterion: str
    value: float
    verdict: Verdict
    where: str
    text: str
    limit: Limit
    receive: bool = False  # about what the port received (may be the far end's doing)

    caused_by: str | None = None  # the far-end transmitter this was blamed on

    def to(self, serial: str, caused_by: str | None = None) -> Finding:
        return replace(self, serial=serial, caused_by=caused_by or self.caused_by)

    def reason(self) -> str:
        if self.caused_by is None:
            return f"{self.where}: {self.text}"
        return (f"{self.where} (far end of {self.caused_by}): {self.text}; caused by this "
                f"unit's transmitter")


RECEIVED_METRICS = frozenset({"rx_power_dbm"})


def module_findings(ps: PortStats, limits: LimitsProfile) -> list[Finding]:
    """Every DOM criterion at one port, attributed to its module for now."""
    out: list[Finding] = []
    serial = ps.module or ps.name
    for (metric, lane), tr in sorted(ps.dom.items()):
        where = f"{ps.name}" + (f" lane {lane}" if lane else "")
        if tr.n == 0:
            continue
        rx = metric in RECEIVED_METRICS
        if metric in RANGE:
            out.extend(_range(serial, metric, tr, where, limits.get(RANGE[metric]), rx))
        if metric in DRIFT:
            found = _drift(serial, metric, tr, where, limits.get(DRIFT[metric]), ps, lane)
            out.append(replace(found, receive=rx))
    tx_alarms = sum(n for q, n in ps.alarms.items() if not q.startswith("rx"))
    tx_alarms += sum(n for f, n in ps.flags.items() if not _rx_flag(f))
    rx_alarms = sum(n for q, n in ps.alarms.items() if q.startswith("rx"))
    rx_alarms += sum(n for f, n in ps.flags.items() if _rx_flag(f))
    limit = limits.get("burnin.dom_alarms")
    if ps.dom:
        out.append(_count(serial, "burnin.dom_alarms", tx_alarms, ps.name, limit,
                          _alarm_text(ps, rx=False), receive=False))
        out.append(_count(serial, "burnin.dom_alarms", rx_alarms, ps.name, limit,
                          _alarm_text(ps, rx=True), receive=True))
    return out


def _rx_flag(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in RX_WORDS) and "tx" not in low


def _alarm_text(ps: PortStats, rx: bool) -> str:
    parts = [f"{q} {n}x" for q, n in ps.alarms.items() if q.startswith("rx") == rx]
    parts += [f"flag {f} {n}x" for f, n in ps.flags.items() if _rx_flag(f) == rx]
    return "DOM alarms: " + (", ".join(parts) if parts else "none")


def _range(serial: str, metric: str, tr: Trend, where: str, limit: Limit,
           receive: bool) -> list[Finding]:
    out = []
    for label, value in (("min", tr.min), ("max", tr.max)):
        verdict = limit.judge(value)
        text = f"{metric} {label} {value:.2f} {limit.unit} (limit {limit.describe()})"
        out.append(Finding(serial, RANGE[metric], value, verdict, where, text, limit, receive))
    return out


def _drift(serial: str, metric: str, tr: Trend, where: str, limit: Limit, ps: PortStats,
           lane: int) -> Finding:
    key = DRIFT[metric]
    corrected = " temperature-corrected" if tr.compensated else ""
    if metric == "tx_bias_ma":
        pct = 100.0 * tr.drift / tr.start if tr.start else math.nan
        tx = ps.dom.get(("tx_power_dbm", lane))
        at_tx = f" while Tx power moved {tx.drift:+.2f} dB" if tx is not None and tx.n else ""
        ageing = " (rising bias at constant Tx power: laser ageing)" if (
            pct > 0 and tx is not None and abs(tx.drift) < 0.5) else ""
        text = (f"Tx bias drift {pct:+.1f} % ({tr.start:.1f} -> {tr.end:.1f} mA, "
                f"{tr.slope_per_h:+.3f} mA/h{corrected}){at_tx}{ageing}; "
                f"limit {limit.describe()}")
        return Finding(serial, key, pct, limit.judge(pct), where, text, limit)
    unit = "C" if metric == "temperature_c" else "dB"
    text = (f"{metric.replace('_dbm', '').replace('_', ' ')} drift {tr.drift:+.2f} {unit} "
            f"({tr.start:.2f} -> {tr.end:.2f}, {tr.slope_per_h:+.4f}/h{corrected}); "
            f"limit {limit.describe()}")
    return Finding(serial, key, tr.drift, limit.judge(tr.drift), where, text, limit)


def _count(serial: str, key: str, value: float, where: str, limit: Limit, text: str,
           receive: bool = True) -> Finding:
    return Finding(serial, key, value, limit.judge(value), where, f"{text}; limit "
                   f"{limit.describe()}", limit, receive)


def port_findings(ps: PortStats, limits: LimitsProfile) -> list[Finding]:
    """What the port received: FEC, PRBS, flaps, error counters (attributed later)."""
    out: list[Finding] = []
    serial = ps.switch or ps.name
    get = limits.get
    if "fec_uncorrectable_cw" in ps.counters:
        n = ps.counters["fec_uncorrectable_cw"]
        out.append(_count(serial, "burnin.fec_uncorrectable_cw", n, ps.name,
                          get("burnin.fec_uncorrectable_cw"), f"{n:g} uncorrectable codewords"))
    if ps.pre_fec_ber_max is not None:
        b = ps.pre_fec_ber_max
        out.append(_count(serial, "burnin.pre_fec_ber", b, ps.name, get("burnin.pre_fec_ber"),
                          f"pre-FEC BER max {b:.2e}"))
    if ps.fec_tail_bin is not None:
        out.append(_count(serial, "burnin.fec_tail_bin", ps.fec_tail_bin, ps.name,
                          get("burnin.fec_tail_bin"), f"FEC tail bin {ps.fec_tail_bin}"))
    for lane, ber in sorted(ps.prbs_ber_max.items()):
        out.append(_count(serial, "burnin.prbs_ber", ber, f"{ps.name} lane {lane}",
                          get("burnin.prbs_ber"), f"PRBS BER max {ber:.2e}"))
    if ps.prbs_ber_max:
        out.append(_count(serial, "burnin.prbs_lock_losses", ps.prbs_lock_losses, ps.name,
                          get("burnin.prbs_lock_losses"),
                          f"{ps.prbs_lock_losses} PRBS reading(s) without lock"))
    if ps.mode == "mission" and any(k in ps.counters for k in ERROR_COUNTERS):
        errors = sum(ps.counters.get(k, 0.0) for k in ERROR_COUNTERS)
        out.append(_count(serial, "burnin.error_counter_increments", errors, ps.name,
                          get("burnin.error_counter_increments"), f"{errors:g} error counts"))
        out.append(_count(serial, "burnin.link_flaps", ps.flaps, ps.name,
                          get("burnin.link_flaps"), f"link went down {ps.flaps} time(s)"))
    return out


# --- attribution and verdicts -------------------------------------------------------------------


@dataclass
class UnitVerdict:
    unit: Unit
    verdict: str  # PASS, MARGINAL, FAIL, INCOMPLETE
    reasons: list[str]
    findings: list[Finding]
    coverage_pct: float


@dataclass
class Report:
    run: Run
    units: list[UnitVerdict]
    fixtures: list[Finding]  # failures attributed to equipment not under test
    ports: dict[str, PortStats]

    def by_serial(self, serial: str) -> UnitVerdict:
        for u in self.units:
            if u.unit.serial == serial:
                return u
        raise KeyError(serial)

    @property
    def failed(self) -> list[UnitVerdict]:
        return [u for u in self.units if u.verdict == "FAIL"]


def analyse(store: SampleStore, run_id: str, limits: LimitsProfile) -> Report:
    run = store.run(run_id)
    units = store.units(run_id)
    by_serial = {u.serial: u for u in units}
    ports = port_stats(store, run, units)
    own = {name: module_findings(ps, limits) for name, ps in ports.items()}
    received = {name: port_findings(ps, limits) for name, ps in ports.items()}
    attributed: list[Finding] = []
    for name, ps in ports.items():
        attributed += [f for f in own[name] if not f.receive]
        culprit = _upstream(ps, ports, own, limits)
        rx = [f for f in own[name] if f.receive] + received[name]
        attributed += [_blame(f, ps, culprit, by_serial) for f in rx]
    coverage = _coverage(store, run, units)
    verdicts = [_verdict(u, attributed, coverage.get(u.serial, 0.0), run, limits)
                for u in units if u.under_test]
    fixtures = [f for f in attributed if f.verdict is Verdict.FAIL and f.serial in by_serial
                and not by_serial[f.serial].under_test]
    return Report(run, verdicts, fixtures, ports)


def _upstream(ps: PortStats, ports: dict[str, PortStats], own: dict[str, list[Finding]],
              limits: LimitsProfile) -> PortStats | None:
    """The far end, when its transmitter failed and this port's Rx power fell with it."""
    peer = ports.get(ps.peer or "")
    if peer is None:
        return None
    tx_failed = any(f.verdict is Verdict.FAIL and f.criterion in TX_CRITERIA
                    for f in own.get(peer.name, []))
    if not tx_failed:
        return None
    rx = [tr for (m, _), tr in ps.dom.items() if m == "rx_power_dbm" and tr.n]
    if not rx:
        return peer  # nothing to compare with: the failed transmitter is the best explanation
    drift = limits.get("burnin.rx_power_drift_db")
    level = limits.get("burnin.rx_power_dbm")
    dropped = any(
        drift.judge(tr.drift) is not Verdict.PASS or level.judge(tr.min) is Verdict.FAIL
        for tr in rx
    )
    return peer if dropped else None


def _blame(f: Finding, ps: PortStats, culprit: PortStats | None,
           units: dict[str, Unit]) -> Finding:
    if f.verdict is not Verdict.PASS and culprit is not None:
        serial = _transmitter(culprit, units)
        if serial is not None:
            return f.to(serial, caused_by=culprit.name)
    return f.to(_receiver(ps, units) or f.serial)


def _receiver(ps: PortStats, units: dict[str, Unit]) -> str | None:
    """Who answers for what a port receives: its module if under test, else the switch."""
    module = units.get(ps.module or "")
    if module is not None and module.under_test:
        return module.serial
    if ps.switch is not None and ps.switch in units:
        return ps.switch
    return ps.module


def _transmitter(ps: PortStats, units: dict[str, Unit]) -> str | None:
    return ps.module if ps.module in units else ps.switch


def _coverage(store: SampleStore, run: Run, units: list[Unit]) -> dict[str, float]:
    """Share (%) of each unit's scheduled readings that were taken without error."""
    counts = store.reading_counts(run.run_id)
    streams = [Series(*s) for s in run.info.get("streams", [])]
    shares: dict[tuple[str, str], list[float]] = defaultdict(list)  # (device, monitor)
    for s in streams:
        expected = s.count(run.duration_s)
        got, errors = counts.get((s.monitor, s.target), (0, 0))
        share = 100.0 * (got - errors) / expected if expected else 100.0
        for device in _devices_of(s):
            shares[(device, s.monitor)].append(share)
    out = {}
    for u in units:
        monitors = ("dom",) if u.kind == "module" else ("dom", "fec", "counters", "prbs")
        mine = [v for m in monitors for v in shares.get((u.device, m), [])]
        out[u.serial] = min(mine) if mine else 0.0
    return out


def _devices_of(s: Series) -> list[str]:
    if s.monitor == "prbs":
        return [end.split(":", 1)[0] for end in s.target.split("--")]
    return [s.target]


def _verdict(unit: Unit, findings: list[Finding], coverage: float, run: Run,
             limits: LimitsProfile) -> UnitVerdict:
    mine = [f for f in findings if f.serial == unit.serial]
    failed = [f for f in mine if f.verdict is Verdict.FAIL]
    marginal = [f for f in mine if f.verdict is Verdict.MARGINAL]
    cover_limit = limits.get("burnin.sample_coverage_pct")
    reasons = [f.reason() for f in failed]
    if failed:
        verdict = "FAIL"
    elif run.status != "complete":
        verdict, reasons = "INCOMPLETE", [f"the run is {run.status}, not complete"]
    elif cover_limit.judge(coverage) is Verdict.FAIL:
        verdict = "INCOMPLETE"
        reasons = [f"readings cover {coverage:.1f} % of the schedule "
                   f"(limit {cover_limit.describe()})"]
    elif marginal:
        verdict = "MARGINAL"
        reasons = [f.reason() for f in marginal]
    else:
        verdict = "PASS"
    return UnitVerdict(unit, verdict, _dedupe(reasons), mine, coverage)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def summary_stats(report: Report, serial: str) -> dict[str, Any]:
    """Per-lane statistics of a unit's DOM series, for the JSON summary."""
    out: dict[str, Any] = {}
    for ps in report.ports.values():
        if ps.module == serial:
            for (metric, lane), tr in sorted(ps.dom.items()):
                out.setdefault(ps.name, {}).setdefault(metric, {})[str(lane)] = {
                    "n": tr.n, "min": tr.min, "max": tr.max, "mean": tr.mean,
                    "start": tr.start, "end": tr.end, "drift": tr.drift,
                    "slope_per_h": tr.slope_per_h, "temperature_corrected": tr.compensated,
                }
        if ps.switch == serial:
            out.setdefault(ps.name, {}).update({
                "counters": ps.counters, "pre_fec_ber_max": ps.pre_fec_ber_max,
                "fec_tail_bin": ps.fec_tail_bin, "prbs_ber_max": ps.prbs_ber_max,
                "prbs_lock_losses": ps.prbs_lock_losses, "link_flaps": ps.flaps,
            })
    return out
