"""Flapping links and the oper-state history of every link.

A flap is periodic and closed-form, so a step of any length asks it how long the
link was dark and how often it dropped, instead of stepping through the flaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Flap:
    """A flapping link: down for ``down_s`` at the start of every ``period_s``."""

    start_s: float
    period_s: float
    down_s: float
    end_s: float = math.inf

    def _cum_down(self, t: float) -> float:
        t = min(max(t, self.start_s), self.end_s) - self.start_s
        k = math.floor(t / self.period_s)
        return k * self.down_s + min(self.down_s, t - k * self.period_s)

    def down_s_in(self, t0: float, t1: float) -> float:
        return self._cum_down(t1) - self._cum_down(t0)

    def _starts_before(self, t: float) -> int:
        if t <= self.start_s:
            return 0
        n = math.ceil((t - self.start_s) / self.period_s)
        if math.isfinite(self.end_s):
            n = min(n, math.ceil((self.end_s - self.start_s) / self.period_s))
        return n

    def drops_in(self, t0: float, t1: float) -> int:
        """Link-down events in [t0, t1): consecutive steps count each drop once."""
        return self._starts_before(t1) - self._starts_before(t0)

    def is_down(self, t: float) -> bool:
        if not self.start_s <= t < self.end_s:
            return False
        return (t - self.start_s) % self.period_s < self.down_s

    def edges(self, t0: float, t1: float, limit: int = 10000) -> list[float]:
        if t1 < self.start_s:
            return []
        k0 = max(0, math.floor((t0 - self.start_s) / self.period_s))
        out: list[float] = []
        k = k0
        while len(out) < limit:
            down = self.start_s + k * self.period_s
            if down > t1 or down >= self.end_s:
                break
            for edge in (down, min(down + self.down_s, self.end_s)):
                if t0 <= edge <= t1:
                    out.append(edge)
            k += 1
        return out


class LinkTimeline:
    """Per link: the flaps on it and its oper-state changes without them.

    Only links that ever had a flap are visited (``add``): a step or a read of a
    2,048-link fabric with one flapping link costs one link's arithmetic, not 2,048.
    """

    def __init__(self, n_links: int) -> None:
        self.flaps: list[list[Flap]] = [[] for _ in range(n_links)]
        self.history: list[list[tuple[float, bool]]] = [[] for _ in range(n_links)]
        self._flapping: list[int] = []  # sorted links with a flap, ended ones included

    def add(self, li: int, flap: Flap) -> Flap:
        self.flaps[li].append(flap)
        if li not in self._flapping:
            self._flapping = sorted([*self._flapping, li])
        return flap

    def record(self, li: int, t: float, up: bool) -> None:
        self.history[li].append((t, up))

    def is_dark(self, li: int, t: float) -> bool:
        """A flap holds the link dark at ``t``."""
        return any(f.is_down(t) for f in self.flaps[li])

    def dark_links(self, t: float) -> list[int]:
        return [li for li in self._flapping if self.is_dark(li, t)]

    def dark_mask(self, t: float) -> np.ndarray:
        out = np.zeros(len(self.flaps), dtype=bool)
        out[self.dark_links(t)] = True
        return out

    def down_s_in(self, t0: float, t1: float) -> np.ndarray:
        """Seconds each link was dark in [t0, t1]."""
        out = np.zeros(len(self.flaps))
        for li in self._flapping:
            out[li] = sum(f.down_s_in(t0, t1) for f in self.flaps[li])
        return out

    def drops_in(self, t0: float, t1: float) -> np.ndarray:
        """Link-down events of each link in [t0, t1)."""
        out = np.zeros(len(self.flaps), dtype=np.int64)
        for li in self._flapping:
            out[li] = sum(f.drops_in(t0, t1) for f in self.flaps[li])
        return out

    def link_down_s_in(self, li: int, t0: float, t1: float) -> float:
        """Seconds link ``li`` was dark in [t0, t1]."""
        return sum((f.down_s_in(t0, t1) for f in self.flaps[li]), 0.0)

    def link_drops_in(self, li: int, t0: float, t1: float) -> int:
        """Link-down events of link ``li`` in [t0, t1)."""
        return sum(f.drops_in(t0, t1) for f in self.flaps[li])

    def edges_inside(self, t0: float, t1: float) -> set[float]:
        """Every flap edge strictly between t0 and t1, on any link."""
        return {
            e
            for li in self._flapping
            for f in self.flaps[li]
            for e in f.edges(t0, t1)
            if t0 < e < t1
        }

    def flapping(self) -> list[int]:
        return list(self._flapping)

    def up_at(self, li: int, t: float) -> bool:
        static = False
        for ts, up in self.history[li]:
            if ts > t:
                break
            static = up
        return static and not self.is_dark(li, t)

    def transitions(self, li: int, t0_s: float, t1_s: float) -> list[tuple[float, bool]]:
        """Oper-state changes ``(time_s, up)`` of a link in [t0, t1], flaps included."""
        candidates = {t for t, _ in self.history[li] if t0_s <= t <= t1_s}
        for f in self.flaps[li]:
            candidates.update(f.edges(t0_s, t1_s))
        out: list[tuple[float, bool]] = []
        before = self.up_at(li, t0_s - 1e-9) if t0_s > 0 else None
        for t in sorted(candidates):
            up = self.up_at(li, t)
            if up != before:
                out.append((t, up))
            before = up
        return out
