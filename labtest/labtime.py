"""Lab time: the clock suites and fixtures wait and measure on.

On a real lab it is the wall clock (``time.monotonic``, ``time.sleep``). An
emulated lab in this process installs its virtual clock here, read in *lab
seconds*: virtual seconds divided by the lab's ``time_scale``, so a suite's
"watch for 12 s" means the same stretch of device time as it did when the
emulated lab followed the wall clock, while the lab's elastic clock skips the
time in which everybody only waits (see ``labtest.emulation.model.clock``).

Use it for waits that set a test's timeline (hold a storm for 2 s, sample
every 1 s for 12 s, wait 30 s for DOM to settle). Transport timeouts stay on
the wall clock: they are about a device answering at all.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol


class Clock(Protocol):
    time_scale: float

    @property
    def realtime(self) -> bool: ...

    def now_s(self) -> float: ...

    def sleep(self, virtual_dt_s: float) -> bool: ...


_LOCK = threading.Lock()
_STACK: list[Clock] = []


def use(clock: Clock) -> None:
    """Read lab time from ``clock`` (an emulated lab starting in this process)."""
    with _LOCK:
        _STACK.append(clock)


def release(clock: Clock) -> None:
    """Stop reading lab time from ``clock`` (its lab stopped); the one before it is back."""
    with _LOCK:
        for i in range(len(_STACK) - 1, -1, -1):
            if _STACK[i] is clock:
                del _STACK[i]
                return


def _current() -> Clock | None:
    """The installed clock, if it passes by itself (a stepped one, e.g. a burn-in's, only
    moves when its owner advances it: waits on it would never end, so the wall clock rules)."""
    with _LOCK:
        clock = _STACK[-1] if _STACK else None
    return clock if clock is not None and clock.realtime else None


def monotonic() -> float:
    """Lab seconds from an arbitrary start (differences only, like ``time.monotonic``)."""
    clock = _current()
    if clock is None:
        return time.monotonic()
    return clock.now_s() / clock.time_scale


def sleep(seconds: float) -> None:
    """Let ``seconds`` of lab time pass."""
    if seconds <= 0:
        return
    clock = _current()
    if clock is None:
        time.sleep(seconds)
    else:
        clock.sleep(seconds * clock.time_scale)


def device_s() -> float:
    """Device seconds from an arbitrary start: what a device's own timers count (a perftest
    ``-D``). The same clock as ``monotonic`` on a real lab; on an emulated one, its virtual
    seconds (``time_scale`` of them a lab second)."""
    clock = _current()
    return time.monotonic() if clock is None else clock.now_s()


def longer_s(last_s: float, needed_s: float, margin: float, max_stretch: float) -> int:
    """The next length of a load that a slower-than-planned lab outlived (device seconds):
    what the last attempt needed times ``margin``, at least twice the last length, at most
    ``max_stretch`` times it. How long the work beside a load takes is the lab's pace (a
    busy runner), not a setting."""
    return math.ceil(min(max(needed_s * margin, 2.0 * last_s), last_s * max_stretch))
