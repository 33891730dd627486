"""Fabric-wide queries: ask every device the same thing at once, keep what answered.

Checking every optic of a thousand switches one switch at a time takes hours;
asked concurrently it takes as long as the slowest switch. :func:`sweep` runs
one function per device on a bounded pool of threads and returns a
:class:`SweepResult` with the answers (``ok``) and, per device that could not
answer, the error (``failed``): one dead switch is reported, the others still
answer.

Rules that keep it safe on a real lab:

- one connection per device: the function gets the device's driver from the
  :class:`~labtest.lab.Lab`, which opens one per device and keeps it;
- commands to one device are serialised: a per-device lock (shared by every
  sweep on the same lab) is held while the function runs, so two sweeps never
  interleave on one switch;
- every device has a deadline (``timeout_s``, counted from when it is free to
  be asked): a device that has not answered by then is recorded as
  ``TransportTimeout``, its driver is closed to free the stuck thread, and a
  fresh worker takes the stuck one's place, so a hung switch costs one
  deadline, never the whole sweep.

Threads, not processes or asyncio: the drivers are synchronous and spend
their time waiting on sockets, which releases the GIL.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from labtest.capabilities.switch import InterfaceCounters, LldpNeighbor
from labtest.capabilities.transceiver import Transceiver
from labtest.errors import InfraError, TransportTimeout
from labtest.lab import Lab
from labtest.registry import DriverNotFound, driver_class, provides, resolve_capability

T = TypeVar("T")

DEFAULT_WORKERS = 32
DEFAULT_TIMEOUT_S = 120.0


@dataclass
class SweepResult(Generic[T]):
    """What a sweep got: answers by device, errors by device, and how long each took."""

    ok: dict[str, T] = field(default_factory=dict)
    failed: dict[str, Exception] = field(default_factory=dict)
    elapsed_s: dict[str, float] = field(default_factory=dict)  # per device, answered or not
    duration_s: float = 0.0  # the whole sweep, wall clock

    @property
    def unexpected(self) -> dict[str, Exception]:
        """Failures that are not infrastructure errors: bugs in the swept function."""
        return {n: e for n, e in self.failed.items() if not isinstance(e, InfraError)}

    def summary(self) -> str:
        lines = [f"{len(self.ok)} answered, {len(self.failed)} failed in {self.duration_s:.2f} s"]
        lines += [f"  {name}: {type(err).__name__}: {err}" for name, err in self.failed.items()]
        return "\n".join(lines)


# --- one lock per device, shared by every sweep on the same lab -----------------

_device_locks: weakref.WeakKeyDictionary[Lab, dict[str, threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_registry_lock = threading.Lock()


def device_lock(lab: Lab, name: str) -> threading.Lock:
    """The lock that serialises commands to ``name`` across sweeps of ``lab``."""
    with _registry_lock:
        return _device_locks.setdefault(lab, {}).setdefault(name, threading.Lock())


# --- the sweep --------------------------------------------------------------------


def sweep(
    lab: Lab,
    devices: Iterable[str],
    fn: Callable[[Any], T],
    *,
    max_workers: int = DEFAULT_WORKERS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> SweepResult[T]:
    """Call ``fn(driver)`` for every device, ``max_workers`` at a time.

    ``max_workers=1`` is the one-device-at-a-time baseline. Never raises for a
    device's failure: see ``SweepResult.failed`` (and ``.unexpected`` for bugs).
    """
    if max_workers < 1:
        raise ValueError("max_workers must be at least 1")
    if timeout_s <= 0:
        raise ValueError("timeout_s must be > 0")
    run = _Run(lab, list(dict.fromkeys(devices)), lambda name: fn(lab.device(name)), timeout_s)
    return run.execute(max_workers)


def each_device(
    lab: Lab,
    devices: Iterable[str],
    read: Callable[[str], T],
    errors: dict[str, InfraError],
) -> dict[str, T]:
    """``read(name)`` on every device not already in ``errors``, all at once, without a
    deadline (a suite's watch takes as long as it watches): a device's InfraError is kept
    in ``errors`` (it is not asked again), any other exception is raised, since a bug in
    the suite must stop it. The answers, in the order the devices were given."""
    todo = [d for d in dict.fromkeys(devices) if d not in errors]
    if not todo:
        return {}
    result = _Run(lab, todo, read, None).execute(len(todo))
    for name, exc in result.failed.items():
        if not isinstance(exc, InfraError):
            raise exc
        errors[name] = exc
    return result.ok


class _Run(Generic[T]):
    """The state of one sweep: a queue of devices, workers, and the watchdog loop."""

    def __init__(
        self, lab: Lab, names: list[str], fn: Callable[[str], T], timeout_s: float | None
    ):
        self.lab = lab
        self.fn = fn  # called with the device's name
        self.timeout_s = timeout_s
        self.names = names
        self.pending = list(reversed(names))  # popped from the end: testbed order
        self.total = len(names)
        self.result: SweepResult[T] = SweepResult()
        self.started: dict[str, float] = {}  # device -> monotonic start of its turn
        self.abandoned: set[str] = set()  # timed out: their workers exit when they return
        self.cond = threading.Condition()

    def execute(self, max_workers: int) -> SweepResult[T]:
        start = time.monotonic()
        for _ in range(min(max_workers, self.total)):
            self._spawn()
        with self.cond:
            while True:
                self._expire_overdue()
                if self._done() >= self.total:
                    break
                self.cond.wait(timeout=self._next_deadline_s())
        self.result.duration_s = time.monotonic() - start
        return self._in_order(self.result)

    def _in_order(self, r: SweepResult[T]) -> SweepResult[T]:
        """The same result with every dict in the order the devices were given."""

        def ordered(d: dict[str, Any]) -> dict[str, Any]:
            return {n: d[n] for n in self.names if n in d}

        return SweepResult(ordered(r.ok), ordered(r.failed), ordered(r.elapsed_s), r.duration_s)

    def _done(self) -> int:
        return len(self.result.ok) + len(self.result.failed)

    def _spawn(self) -> None:
        threading.Thread(target=self._worker, name="labtest-sweep", daemon=True).start()

    def _worker(self) -> None:
        while True:
            with self.cond:
                if not self.pending:
                    return
                name = self.pending.pop()
            value, error, began = self._ask(name)
            with self.cond:
                self.started.pop(name, None)
                elapsed = time.monotonic() - began
                if name in self.abandoned:
                    return  # a replacement worker has taken this one's place
                self.result.elapsed_s[name] = elapsed
                if error is None:
                    self.result.ok[name] = value  # type: ignore[assignment]
                else:
                    self.result.failed[name] = error
                self.cond.notify_all()

    def _ask(self, name: str) -> tuple[T | None, Exception | None, float]:
        """``fn`` on the device once it is free; the deadline starts when it is. Whatever
        fails here is the device's result: a worker that died before handing one over left
        its sweep waiting out its deadline (900 s in the doctor's reads), or for ever
        without one (``each_device``)."""
        began = time.monotonic()
        try:
            lock = device_lock(self.lab, name)
        except Exception as exc:  # a lab that cannot hold locks: every device says so
            return None, exc, began
        if not lock.acquire(timeout=-1 if self.timeout_s is None else self.timeout_s):
            busy = f"busy: another operation on it did not finish within {self.timeout_s:g} s"
            return None, TransportTimeout(name, busy), began
        try:
            with self.cond:
                began = self.started[name] = time.monotonic()
            return self.fn(name), None, began
        except Exception as exc:  # a sweep reports per device; it never stops for one
            return None, exc, began
        finally:
            lock.release()

    def _expire_overdue(self) -> None:
        """Called with ``cond`` held: give up on devices past their deadline."""
        if self.timeout_s is None:
            return
        now = time.monotonic()
        for name, began in list(self.started.items()):
            if name in self.abandoned or now - began < self.timeout_s:
                continue
            self.abandoned.add(name)
            self.result.elapsed_s[name] = now - began
            self.result.failed[name] = TransportTimeout(
                name, f"no answer within {self.timeout_s:g} s (sweep deadline)"
            )
            threading.Thread(target=self._unstick, args=(name,), daemon=True).start()
            if self.pending:
                self._spawn()

    def _unstick(self, name: str) -> None:
        """Close the device's driver so the thread blocked on it returns soon."""
        with contextlib.suppress(Exception):
            self.lab.device(name).close()

    def _next_deadline_s(self) -> float | None:
        if self.timeout_s is None:
            return None  # no deadline: a worker's notify wakes the loop
        live = [b for n, b in self.started.items() if n not in self.abandoned]
        if not live:
            return 1.0
        return max(min(live) + self.timeout_s - time.monotonic(), 0.01)


# --- ready-made health sweeps --------------------------------------------------------


@dataclass(frozen=True)
class SwitchHealth:
    """One switch's optics, port counters and LLDP neighbours (None: not offered)."""

    transceivers: dict[str, Transceiver] | None
    counters: dict[str, InterfaceCounters] | None
    lldp: dict[str, LldpNeighbor] | None


def devices_with(lab: Lab, *capabilities: str) -> list[str]:
    """Devices whose driver offers at least one of ``capabilities``, in testbed order."""
    protocols = [resolve_capability(c) for c in capabilities]
    out = []
    for name, dev in lab.testbed.devices.items():
        try:
            cls = driver_class(dev.driver)
        except DriverNotFound:
            continue
        if any(provides(cls, p) for p in protocols):
            out.append(name)
    return out


def _offering(lab: Lab, devices: Iterable[str] | None, *capabilities: str) -> Iterable[str]:
    """The ready-made sweeps' one rule: the devices named, else every device offering one
    of ``capabilities`` (so a sweep never asks a driver what it cannot answer)."""
    return devices_with(lab, *capabilities) if devices is None else devices


def dom_sweep(
    lab: Lab, devices: Iterable[str] | None = None, **options: Any
) -> SweepResult[dict[str, Transceiver]]:
    """Inventory and DOM of every optic (``transceivers()``) of every device."""
    return sweep(lab, _offering(lab, devices, "Transceivers"), lambda drv: drv.transceivers(),
                 **options)


def counters_sweep(
    lab: Lab, devices: Iterable[str] | None = None, **options: Any
) -> SweepResult[dict[str, InterfaceCounters]]:
    """Counters of every port (``counters()``) of every device."""
    return sweep(lab, _offering(lab, devices, "Interfaces"), lambda drv: drv.counters(),
                 **options)


def lldp_sweep(
    lab: Lab, devices: Iterable[str] | None = None, **options: Any
) -> SweepResult[dict[str, LldpNeighbor]]:
    """LLDP neighbours (``lldp_neighbors()``) of every device."""
    return sweep(lab, _offering(lab, devices, "Lldp"), lambda drv: drv.lldp_neighbors(),
                 **options)


def health_sweep(
    lab: Lab, devices: Iterable[str] | None = None, **options: Any
) -> SweepResult[SwitchHealth]:
    """DOM + counters + LLDP of every switch, the three asked in one turn per switch."""
    return sweep(lab, _offering(lab, devices, "Transceivers", "Interfaces", "Lldp"),
                 switch_health, **options)


def switch_health(driver: Any) -> SwitchHealth:
    """What :func:`health_sweep` asks one switch (whatever its driver offers)."""

    def ask(capability: str, method: str) -> Any:
        offered = provides(type(driver), resolve_capability(capability))
        return getattr(driver, method)() if offered else None

    return SwitchHealth(
        transceivers=ask("Transceivers", "transceivers"),
        counters=ask("Interfaces", "counters"),
        lldp=ask("Lldp", "lldp_neighbors"),
    )
