"""The virtual clock every part of the emulated lab reads time from.

Two modes, one interface. A *stepped* clock only moves when told to
(``advance``), so a pure-model run (a 72-hour burn-in, a unit test) goes as
fast as the CPU allows. A *real-time* clock follows the wall clock multiplied
by ``time_scale`` (1.0 = real time, 1000 = a 72-hour burn-in in about 4.3
minutes), which is what live emulators need while a suite talks to them.
Either mode may jump ahead with ``advance``; time never runs backwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class VirtualClock:
    """Virtual seconds since the lab was built."""

    def __init__(
        self,
        time_scale: float = 1.0,
        *,
        realtime: bool = False,
        start_s: float = 0.0,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be > 0")
        self.time_scale = float(time_scale)
        self._wall = wall
        self._lock = threading.Lock()
        self._base_s = float(start_s)  # virtual time at _wall0 (or now, when stepped)
        self._wall0: float | None = self._wall() if realtime else None

    @property
    def realtime(self) -> bool:
        return self._wall0 is not None

    def now_s(self) -> float:
        with self._lock:
            return self._now_locked()

    def _now_locked(self) -> float:
        if self._wall0 is None:
            return self._base_s
        return self._base_s + (self._wall() - self._wall0) * self.time_scale

    def advance(self, dt_s: float) -> float:
        """Jump ``dt_s`` virtual seconds ahead; returns the new time."""
        if dt_s < 0:
            raise ValueError("the virtual clock cannot run backwards")
        with self._lock:
            self._base_s += dt_s
            return self._now_locked()

    def set_realtime(self, on: bool) -> None:
        """Start following the wall clock (scaled), or freeze at the current time."""
        with self._lock:
            now = self._now_locked()
            self._base_s = now
            self._wall0 = self._wall() if on else None

    def wall_s(self, virtual_dt_s: float) -> float:
        """Wall seconds that ``virtual_dt_s`` takes in real-time mode."""
        return virtual_dt_s / self.time_scale

    def __repr__(self) -> str:
        mode = "realtime" if self.realtime else "stepped"
        return f"VirtualClock({mode}, x{self.time_scale:g}, t={self.now_s():.3f}s)"
