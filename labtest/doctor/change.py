"""Change detection per link metric: a two-sided CUSUM, and when to expect a limit crossed.

A failing laser or a slowly dirtier connector moves a DOM reading a few tenths
of a dB per hour: no single reading is out of limits until the link fails.
Page's CUSUM accumulates deviations from a learnt baseline and alarms when the
sum exceeds ``h`` standard deviations (slack ``k`` = 0.5 sigma: tuned to a
one-sigma shift, Montgomery, *Introduction to Statistical Quality Control*, ch. 9).

``h`` is sized for a fleet, not one chart: Siegmund's approximation of the
in-control run length, ARL0 ~ (exp(2k(h+1.166)) - 2k(h+1.166) - 1) / (2k^2),
gives ~470 readings at the textbook h = 5 (a 1,500-metric fabric read every
10 s would raise ~28,000 false drifts a day) and ~7.7 million at h = 14
(~2 a day for the same fabric). A slow drift still shows within minutes: the
sum grows with the square of the time since the drift began.

Sigma is the moving-range estimate (mean |x[i] - x[i-1]| / 1.128, the
Shewhart individuals chart): a module still warming up trends during the
baseline, and the spread of successive differences ignores a trend where the
plain standard deviation would swallow it. After an alarm the chart restarts
from a new baseline, so a lasting drift is reported again with a fresh forecast.
Once a drift is confirmed, a least-squares line through the readings since the
baseline says when the metric will cross its limit.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

K_SIGMA = 0.5  # CUSUM slack, in baseline standard deviations
H_SIGMA = 14.0  # CUSUM decision interval, in baseline standard deviations (fleet ARL0)
WARMUP = 30  # readings that make the baseline (5 min at a 10 s interval)
BASE = 10  # the last readings of the warm-up that set the baseline level
WINDOW = 90  # readings the forecast line is fitted through
D2 = 1.128  # E|x1 - x2| / sigma for two normal readings (moving range of 2)


@dataclass
class Drift:
    metric: str
    direction: str  # "up" | "down"
    baseline: float
    value: float
    slope_per_h: float | None
    hours_to_limit: float | None  # None: not heading to a limit (or no limit that side)
    limit: float | None

    def text(self, where: str) -> str:
        s = (f"{self.metric} at {where} drifts {self.direction} from {self.baseline:.4g} to "
             f"{self.value:.4g}")
        if self.slope_per_h is not None:
            s += f" ({self.slope_per_h:+.3g}/h)"
        if self.hours_to_limit is not None and self.limit is not None:
            s += f"; predicted to cross limit {self.limit:.4g} in {self.hours_to_limit:.1f} h"
        return s


@dataclass
class Cusum:
    """One metric of one port. ``resolution`` floors the baseline sigma: a DOM value
    printed to 0.01 dB cannot show a smaller spread, and a zero sigma would alarm on noise."""

    resolution: float
    low: float | None = None  # the limit the metric must stay above
    high: float | None = None  # ... and below
    samples: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    warm: list[float] = field(default_factory=list)
    mean: float | None = None
    sigma: float = 0.0
    s_hi: float = 0.0
    s_lo: float = 0.0

    def update(self, t_s: float, x: float, metric: str) -> Drift | None:
        if not math.isfinite(x):
            return None
        self.samples.append((t_s, x))
        if self.mean is None:
            self.warm.append(x)
            if len(self.warm) >= WARMUP:
                ranges = [abs(b - a) for a, b in zip(self.warm, self.warm[1:], strict=False)]
                self.sigma = max(sum(ranges) / len(ranges) / D2, self.resolution)
                self.mean = sum(self.warm[-BASE:]) / BASE
            return None
        z = (x - self.mean) / self.sigma
        self.s_hi = max(0.0, self.s_hi + z - K_SIGMA)
        self.s_lo = max(0.0, self.s_lo - z - K_SIGMA)
        if self.s_hi <= H_SIGMA and self.s_lo <= H_SIGMA:
            return None
        up = self.s_hi > H_SIGMA
        slope = self._slope_per_s()
        limit = self.high if up else self.low
        hours = None
        if slope is not None and limit is not None and (slope > 0) == up and slope != 0:
            left = (limit - x) / slope
            hours = left / 3600.0 if left > 0 else 0.0
        drift = Drift(metric, "up" if up else "down", self.mean, x,
                      None if slope is None else slope * 3600.0, hours, limit)
        self._restart(t_s, x)
        return drift

    def _restart(self, t_s: float, x: float) -> None:
        """A new baseline from the readings that follow the alarm."""
        self.mean, self.warm, self.s_hi, self.s_lo = None, [], 0.0, 0.0
        self.samples.clear()

    def _slope_per_s(self) -> float | None:
        pts = list(self.samples)
        if len(pts) < 3:
            return None
        n = len(pts)
        mt = sum(t for t, _ in pts) / n
        mx = sum(x for _, x in pts) / n
        var = sum((t - mt) ** 2 for t, _ in pts)
        if var == 0:
            return None
        return sum((t - mt) * (x - mx) for t, x in pts) / var
