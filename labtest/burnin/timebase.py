"""The run's clock: seconds of burn-in since the run started.

Downtime does not count: after a crash or a stop, a resumed run picks up at
the run time of its earliest missing reading, so a 72-hour burn-in is 72
hours of load and monitoring however often it was interrupted.

- ``WallTimebase``: a real lab; waits in wall time.
- ``FabricTimebase``: the emulated lab's virtual clock. In *stepped* mode
  the runner moves the clock to each reading's instant (the model integrates
  the interval in one step) and the drivers then read the devices over their
  real protocols at that frozen instant: the fastest honest path, limited only
  by the protocol round trips. In *real-time* mode (``--time-scale X``) the
  virtual clock runs X times faster than the wall clock and the runner waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

#: longest single wait, so a stop request is noticed promptly
MAX_WAIT_S = 0.5
#: longest single jump of a stepped clock while something that follows the model in wall
#: time (chamber air on its way to a setpoint) is moving: it is brought along after each
#: jump, so it lags by at most this much; when nothing moves, the clock jumps at once
MAX_STEP_S = 60.0


class Timebase(Protocol):
    def now_s(self) -> float: ...

    def anchor(self, start_s: float) -> None:
        """Make the run time read ``start_s`` now (when monitoring begins)."""
        ...

    def wait_until(self, t_s: float, stop: threading.Event) -> bool:
        """Return once the run time reaches ``t_s`` (True) or ``stop`` is set (False)."""
        ...


class WallTimebase:
    def __init__(self, start_s: float = 0.0) -> None:
        self._anchor = time.monotonic() - start_s

    def now_s(self) -> float:
        return time.monotonic() - self._anchor

    def anchor(self, start_s: float) -> None:
        self._anchor = time.monotonic() - start_s

    def wait_until(self, t_s: float, stop: threading.Event) -> bool:
        while not stop.is_set():
            left = t_s - self.now_s()
            if left <= 0:
                return True
            stop.wait(min(left, MAX_WAIT_S))
        return False


class FabricTimebase:
    """Run time on an emulated fabric's clock (``fabric.clock``, ``fabric.advance``).

    ``after_step`` runs after every jump of a stepped clock and says whether anything is
    still moving (then the next jump is at most ``MAX_STEP_S``).
    """

    def __init__(
        self, fabric: Any, start_s: float = 0.0, after_step: Callable[[], bool] | None = None
    ) -> None:
        self.fabric = fabric
        self.after_step = after_step
        self._anchor = fabric.now_s() - start_s

    @property
    def stepped(self) -> bool:
        return not self.fabric.clock.realtime

    def now_s(self) -> float:
        return self.fabric.clock.now_s() - self._anchor

    def anchor(self, start_s: float) -> None:
        self._anchor = self.fabric.clock.now_s() - start_s

    def wait_until(self, t_s: float, stop: threading.Event) -> bool:
        if self.stepped:
            moving = self.after_step() if self.after_step is not None else False
            while not stop.is_set() and (left := t_s - self.now_s()) > 0:
                self.fabric.advance(min(left, MAX_STEP_S) if moving else left)
                moving = self.after_step() if self.after_step is not None else False
            return not stop.is_set()
        scale = self.fabric.clock.time_scale
        while not stop.is_set():
            left = t_s - self.now_s()
            if left <= 0:
                return True
            stop.wait(min(left / scale, MAX_WAIT_S))
        return False


class SteppedTimebase:
    """A bare clock that jumps straight to each reading's instant (dry runs, benches)."""

    def __init__(self, start_s: float = 0.0) -> None:
        self._now_s = start_s

    def now_s(self) -> float:
        return self._now_s

    def anchor(self, start_s: float) -> None:
        self._now_s = start_s

    def wait_until(self, t_s: float, stop: threading.Event) -> bool:
        if not stop.is_set():
            self._now_s = max(self._now_s, t_s)
        return not stop.is_set()
