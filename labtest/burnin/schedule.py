"""The schedule: every reading at a fixed run time, so a resumed run keeps it.

Monitor ``m`` with period ``P`` reads target ``x`` at ``t_k = k * P`` (PRBS at
``(k + 1) * P``: its first reading needs an interval behind it) for every
``t_k <= duration``. ``k`` is the reading's ``sched_index``: the store's
unique key, and what a resume compares against to find what is still due.
The schedule is generated lazily, so a long run costs no memory.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: float slack when comparing a reading's time with the run's end
EPS_S = 1e-6


@dataclass(frozen=True, order=True)
class Slot:
    t_s: float
    monitor: str
    target: str
    index: int


@dataclass(frozen=True)
class Series:
    """One (monitor, target) stream of readings."""

    monitor: str
    target: str
    period_s: float
    first_at_period: bool = False

    def time_of(self, index: int) -> float:
        return (index + (1 if self.first_at_period else 0)) * self.period_s

    def count(self, duration_s: float) -> int:
        """How many readings fit in the run."""
        n = math.floor((duration_s + EPS_S) / self.period_s) + 1
        return n - 1 if self.first_at_period else n

    def slots(self, duration_s: float, done: set[tuple[str, str, int]]) -> Iterator[Slot]:
        for k in range(self.count(duration_s)):
            if (self.monitor, self.target, k) not in done:
                yield Slot(self.time_of(k), self.monitor, self.target, k)


def merged(
    streams: Iterable[Series], duration_s: float, done: set[tuple[str, str, int]]
) -> Iterator[Slot]:
    """Every slot still due, in time order."""
    return heapq.merge(*(s.slots(duration_s, done) for s in streams))


def rounds(slots: Iterator[Slot]) -> Iterator[list[Slot]]:
    """Slots grouped by instant: everything due at the same run time is one round."""
    batch: list[Slot] = []
    for slot in slots:
        if batch and slot.t_s > batch[0].t_s + EPS_S:
            yield batch
            batch = []
        batch.append(slot)
    if batch:
        yield batch


def total(streams: Iterable[Series], duration_s: float) -> int:
    return sum(s.count(duration_s) for s in streams)
