"""The virtual clock every part of the emulated lab reads time from.

Two modes, one interface. A *stepped* clock only moves when told to
(``advance``), so a pure-model run (a 72-hour burn-in, a unit test) goes as
fast as the CPU allows. A *real-time* clock follows the wall clock multiplied
by ``time_scale`` (1.0 = real time, 1000 = a 72-hour burn-in in about 4.3
minutes), which is what live emulators need while a suite talks to them.
Either mode may jump ahead with ``advance``; time never runs backwards.

An *elastic* real-time clock (the live emulated lab's) also skips the time
nobody spends: while every party only waits on virtual time (an emulated
``ib_write_bw -D 30`` sleeping in ``sleep``, a suite polling through
``labtest.labtime``), no request is being served (``busy``), no thread is in
``time.sleep``, nobody holds it (``set_hold``) and no other thread of the
process runs or waits for a core, it runs at ``idle_scale`` (300 virtual
seconds per wall second) towards the earliest wake-up, never past it. Every
sleeper wakes at its own virtual time, so the order of events is kept; what a
party sees is what the plain clock shows a party that was briefly stalled, and
an idle spell misread costs a few virtual seconds at most.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: how often an elastic clock looks for idleness (wall seconds)
IDLE_PROBE_S = 0.002
#: CPU seconds per wall second below which the process counts as waiting
IDLE_CPU_FRACTION = 0.25
#: consecutive idle probes before the clock speeds up (one can straddle the end of some work)
IDLE_PROBES = 2
#: virtual seconds per wall second while everybody only waits (an emulated 30 s perftest
#: then takes 0.1 s); bounded, so a spell of idleness the probe mistook skips little
IDLE_SCALE = 300.0


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
        self._cond = threading.Condition(self._lock)
        self._sleepers: dict[int, float] = {}  # token -> virtual wake-up time
        self._tokens = 0
        self._busy = 0  # requests being served (emulators say so through busy())
        self._elastic = False
        self._hold = False  # some party waits on the wall clock: no jumps
        self._wall_sleepers = 0  # threads inside time.sleep (see guard_wall_sleeps)
        self._pacer: threading.Thread | None = None
        self.jumped_s = 0.0  # virtual seconds skipped by elastic jumps (benchmarks print it)
        self.idle_scale = IDLE_SCALE

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
        """Wall seconds that ``virtual_dt_s`` takes in real-time mode (at most: see elastic)."""
        return virtual_dt_s / self.time_scale

    # --- elastic: skip the time everyone only waits ---------------------------------

    @property
    def elastic(self) -> bool:
        return self._elastic

    def set_elastic(self, on: bool) -> None:
        """Skip idle time (real-time mode only; see the module docstring).

        While on, every ``time.sleep`` in this process holds the jumps: a thread
        sleeping on the wall clock (a driver polling, a settle time) expects wall
        time, scaled, to pass under it, not a jump to some other party's wake-up.
        """
        _guard_wall_sleeps(self, on)
        with self._cond:
            self._elastic = bool(on)
            pacer = self._pacer
            if self._elastic and pacer is None:
                self._pacer = threading.Thread(target=self._pace, name="clock-pacer", daemon=True)
                self._pacer.start()
            self._cond.notify_all()
        if not on and pacer is not None and pacer is not threading.current_thread():
            pacer.join(1.0)  # a stopped lab leaves no thread behind

    @property
    def held(self) -> bool:
        """Whether jumps are held (some party waits on wall-clock timeouts)."""
        return self._hold

    def set_hold(self, on: bool) -> None:
        """While on, the elastic clock follows the wall only (some party waits out a
        wall-clock timeout; the emulators mark a waiting client with ``busy`` instead)."""
        with self._cond:
            self._hold = bool(on)

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Work in progress (a request being served): no skipping while any is open."""
        with self._cond:
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def sleep(self, virtual_dt_s: float, interrupt: threading.Event | None = None) -> bool:
        """Wait until ``virtual_dt_s`` virtual seconds have passed (False: interrupted).

        Real-time mode waits (scaled; an elastic clock may get there sooner); a
        stepped clock has nobody to move it, so the caller advances it instead.
        A thread sleeping here inside ``serving()`` lends its busy mark back meanwhile.
        """
        if not self.realtime:
            raise RuntimeError("a stepped clock does not pass by itself: advance() it")
        with self._cond:
            target = self._now_locked() + max(virtual_dt_s, 0.0)
            self._tokens += 1
            token = self._tokens
            self._sleepers[token] = target
            held = _held_busy(self)
            self._busy -= held
            self._cond.notify_all()
            try:
                while True:
                    if interrupt is not None and interrupt.is_set():
                        return False
                    left = target - self._now_locked()
                    if left <= 0:
                        return True
                    wait_s = left / self.time_scale
                    if interrupt is not None:
                        wait_s = min(wait_s, 0.05)
                    self._cond.wait(wait_s)
            finally:
                del self._sleepers[token]
                self._busy += held

    def call_later(self, virtual_dt_s: float, action: Callable[[], None]) -> VirtualTimer:
        """Run ``action`` on its own thread after ``virtual_dt_s`` (a Timer in virtual time)."""
        timer = VirtualTimer(self, virtual_dt_s, action)
        timer.start()
        return timer

    def _pace(self) -> None:
        """The elastic clock's watcher: run at ``idle_scale`` towards the earliest wake-up
        while all is idle."""
        idle = 0
        while True:
            with self._cond:
                while self._elastic and not (self._sleepers and self._wall0 is not None):
                    idle = 0
                    self._cond.wait()
                if not self._elastic:
                    self._pacer = None
                    return
            cpu0, wall0 = _others_cpu_s(), time.perf_counter()
            _REAL_SLEEP(IDLE_PROBE_S)
            cpu, span = _others_cpu_s() - cpu0, time.perf_counter() - wall0
            with self._cond:
                quiet = (not self._hold and self._busy <= 0 and self._wall_sleepers <= 0
                         and cpu < IDLE_CPU_FRACTION * span)
                idle = idle + 1 if quiet else 0
                if idle < IDLE_PROBES or not self._sleepers or self._wall0 is None:
                    continue
            # no CPU used can also mean no CPU given (a loaded machine): only when no
            # other thread of this process is runnable is everybody really waiting
            if _runnable_threads():
                idle = 0
                continue
            with self._cond:
                # the lock was let go for the /proc probe: the last sleeper may have woken
                if (self._hold or self._busy > 0 or self._wall_sleepers > 0
                        or not self._sleepers or self._wall0 is None):
                    idle = 0
                    continue
                # run at idle_scale, not straight to the wake-up: an idle spell this
                # probe mistook (a client between two requests) costs little virtual time
                gap = min(self._sleepers.values()) - self._now_locked()
                step = min(gap, span * max(self.idle_scale - self.time_scale, 0.0))
                if step > 0:
                    self._base_s += step
                    self.jumped_s += step
                    self._cond.notify_all()


def _others_cpu_s() -> float:
    """CPU seconds of this process minus the calling thread (the pacer's own probes)."""
    return time.process_time() - time.thread_time()


def _runnable_threads() -> bool:
    """Whether a thread of this process other than the caller is running or runnable
    (state R in /proc: it has work, maybe waiting for a core). False where /proc is absent
    (the CPU probe alone decides then)."""
    me = str(threading.get_native_id())
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for tid in tasks:
        if tid == me:
            continue
        try:  # raw reads: a buffered open() per thread cost a third more (150 threads: 2.3 ms)
            fd = os.open(f"/proc/self/task/{tid}/stat", os.O_RDONLY)
        except OSError:
            continue  # the thread ended meanwhile
        try:
            stat = os.read(fd, 512)
        except OSError:
            continue
        finally:
            os.close(fd)
        if stat[stat.rfind(b")") + 2:][:1] == b"R":
            return True
    return False


_REAL_SLEEP = time.sleep
_GUARDED: list[VirtualClock] = []
_GUARD_LOCK = threading.Lock()


def _counted_sleep(seconds: float) -> None:
    """``time.sleep`` while an elastic clock runs: the sleeper holds its jumps."""
    clocks = list(_GUARDED)
    for clock in clocks:
        with clock._cond:
            clock._wall_sleepers += 1
    try:
        _REAL_SLEEP(seconds)
    finally:
        for clock in clocks:
            with clock._cond:
                clock._wall_sleepers -= 1


def _guard_wall_sleeps(clock: VirtualClock, on: bool) -> None:
    with _GUARD_LOCK:
        if on and clock not in _GUARDED:
            _GUARDED.append(clock)
        elif not on and clock in _GUARDED:
            _GUARDED.remove(clock)
        time.sleep = _counted_sleep if _GUARDED else _REAL_SLEEP  # type: ignore[assignment]


class VirtualTimer(threading.Thread):
    """``threading.Timer`` on a real-time ``VirtualClock``: ``cancel()`` before it fires."""

    def __init__(self, clock: VirtualClock, virtual_dt_s: float, action: Callable[[], None]):
        super().__init__(name="clock-timer", daemon=True)
        self._clock, self._dt_s, self._action = clock, virtual_dt_s, action
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    def run(self) -> None:
        if self._clock.sleep(self._dt_s, self._cancelled):
            self._action()


_local = threading.local()


@contextmanager
def serving(clock: VirtualClock | None) -> Iterator[None]:
    """``clock.busy()`` for this thread's request; a ``sleep`` inside lends it back."""
    if clock is None:
        yield
        return
    held: dict[int, int] = _local.__dict__.setdefault("held", {})
    held[id(clock)] = held.get(id(clock), 0) + 1
    try:
        with clock.busy():
            yield
    finally:
        held[id(clock)] -= 1


def _held_busy(clock: VirtualClock) -> int:
    return int(_local.__dict__.get("held", {}).get(id(clock), 0))
