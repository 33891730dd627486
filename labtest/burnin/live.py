"""What the operator sees while a run goes: progress, units with alarms, latest alarms.

Live checks are cheap, per-sample and provisional: a value outside its range
limit or its module's alarm thresholds, a new uncorrectable codeword, a lost
PRBS lock, a port that went down. The verdict (drift, attribution to the far
end's transmitter) comes from the analysis at the end. Memory is bounded: one
baseline per counter series and one alarm per (unit, port, metric).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from labtest.burnin.store import Event, Sample, Unit
from labtest.measure import LimitsProfile, Verdict

#: metric -> range limit key
RANGE_KEYS = {
    "temperature_c": "burnin.temperature_c",
    "voltage_v": "burnin.voltage_v",
    "tx_power_dbm": "burnin.tx_power_dbm",
    "rx_power_dbm": "burnin.rx_power_dbm",
}
#: DOM metric -> key of the module's own thresholds
THRESHOLD_KEYS = {
    "temperature_c": "temperature_c",
    "voltage_v": "voltage_v",
    "tx_bias_ma": "tx_bias_ma",
    "tx_power_dbm": "tx_power_dbm",
    "rx_power_dbm": "rx_power_dbm",
}
LATEST_ALARMS = 8


@dataclass
class Status:
    run_id: str
    station: str
    t_s: float
    duration_s: float
    phase: str = "monitoring"
    readings_done: int = 0
    readings_total: int = 0
    samples: int = 0
    errors: int = 0
    units: int = 0
    alarmed: dict[str, str] = field(default_factory=dict)  # serial -> first alarm
    latest: deque[str] = field(default_factory=lambda: deque(maxlen=LATEST_ALARMS))
    chamber_c: float | None = None
    behind_s: float = 0.0  # how late the last round started (run time)
    wall_start_s: float = field(default_factory=time.monotonic)

    @property
    def wall_elapsed_s(self) -> float:
        return time.monotonic() - self.wall_start_s


@dataclass(frozen=True)
class Alarm:
    unit: str
    key: str  # "port|metric"
    text: str


class Progress(Protocol):
    def update(self, status: Status) -> None: ...

    def event(self, status: Status, event: Event) -> None: ...

    def close(self, status: Status) -> None: ...


class LiveChecks:
    def __init__(self, limits: LimitsProfile, units: list[Unit]) -> None:
        self.limits = limits
        self.thresholds = {u.serial: u.info.get("thresholds", {}) for u in units}
        self._baseline: dict[tuple[str, str, int, str], float] = {}
        self._last_up: dict[tuple[str, str], float] = {}
        self._raised: set[tuple[str, str, str]] = set()

    def seen(self, unit: str, key: str) -> None:
        """An alarm already reported before a resume (not reported again)."""
        port, _, metric = key.partition("|")
        self._raised.add((unit, port, metric))

    def check(self, samples: list[Sample]) -> list[Alarm]:
        """Each new alarm in these samples (one per unit, port and metric per run)."""
        out = []
        for s in samples:
            text = self._alarm(s)
            metric = s.metric.split(":")[0]
            if text and (s.unit, s.port, metric) not in self._raised:
                self._raised.add((s.unit, s.port, metric))
                lane = f" lane {s.lane}" if s.lane else ""
                out.append(Alarm(s.unit, f"{s.port}|{metric}", f"{s.port}{lane}: {text}"))
        return out

    def _alarm(self, s: Sample) -> str | None:
        if s.metric in RANGE_KEYS:
            limit = self.limits.get(RANGE_KEYS[s.metric])
            if limit.judge(s.value) is Verdict.FAIL:
                return f"{s.metric} {s.value:.2f} {s.uom} outside {limit.describe()}"
        if s.metric in THRESHOLD_KEYS:
            th = self.thresholds.get(s.unit, {}).get(THRESHOLD_KEYS[s.metric]) or {}
            lo, hi = th.get("low_alarm"), th.get("high_alarm")
            if (lo is not None and s.value < lo) or (hi is not None and s.value > hi):
                return f"{s.metric} {s.value:.2f} {s.uom} beyond the module's alarm threshold"
        if s.metric.startswith("flag:"):
            return f"latched flag {s.metric[5:]}"
        if s.metric == "fec_uncorrectable_cw":
            base = self._baseline.setdefault((s.unit, s.port, s.lane, s.metric), s.value)
            if s.value > base:
                return f"{s.value - base:g} uncorrectable codewords"
        if s.metric == "prbs_locked" and s.value < 1:
            return "PRBS lock lost"
        if s.metric == "oper_up":
            before = self._last_up.get((s.unit, s.port))
            self._last_up[(s.unit, s.port)] = s.value
            if before == 1.0 and s.value == 0.0:
                return "link went down"
        return None
