"""Per-device circuit breakers: a dead device costs one timeout per run, not one per test.

Why: a device whose management plane is dead made every test that touches it wait out
its own transport timeouts (issue 36: 642 s against about 50 s healthy). Here, once a
transport call fails and a probe confirms the device does not answer, the device is
*down*: every later call through its transports raises :class:`DeviceDown` at once,
citing the first failure (its text, the test it broke and when), so the device's other
tests are broken in milliseconds and the root-cause analysis still reads them as
"unreachable" (DeviceDown is a TransportError).

- **Confirmed, not assumed.** A command can time out on a live device (a hung tool),
  so a failure opens the breaker only if a *probe* fails too: a fresh connection and one
  trivial request, each waited for ``PROBE_TIMEOUT_S`` (an SSH login gets the device's
  own ``timeout_s``: AAA can be slow). Any answer, even a refusal, means the device is
  up.
- **One reprobe per suite.** The first use of a down device in a later suite (test
  module) probes it once; an answer closes the breaker and the call goes ahead.
- **Only while a board is installed**: the pytest plugin, for a session with a testbed
  (a suite is a test module), and ``labtest doctor`` (a "suite" is an interval, so a dead
  device is reprobed once an interval and comes back when it answers). Burn-in and tests
  that drive transports directly keep the plain behaviour: a breaker "for the run" would
  be wrong for a 72-hour campaign.
- **Expected outages do not count.** A driver rebooting a device (or reloading its
  config) wraps its own polls in :func:`expected_outage`: meanwhile the device's
  failures mark nothing and it is asked even if down; the driver's polls judge it.
- **Thread-safe.** Each device has its own lock, held while it probes: threads calling a
  device being probed wait for the verdict (at most a probe's time), others never.

Guarded are the transports :mod:`labtest.connect` hands out (SSH, SNMP, VISA): their
public calls (an interactive shell is guarded when it opens, not per line); the TG's
HTTP client (snappi) is not one of them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from labtest.errors import DeviceDown, TransportError

log = logging.getLogger("labtest.transport.breaker")

T = TypeVar("T")

#: a probe's bound on reaching the device and on its one request (capped by the device's
#: own timeout): a live device answers a trivial request in milliseconds, a loaded switch
#: CPU within a second
PROBE_TIMEOUT_S = 2.0

#: raises a TransportError when the device does not answer; returns when it does
Probe = Callable[[], None]


@dataclass(frozen=True)
class Trip:
    """The failure that opened a breaker, and where in the run it happened."""

    error: TransportError
    test: str
    at: float  # time.time()

    def describe(self) -> str:
        """``TransportTimeout: exec 'x': no answer within 30 s (in <test> (call), at 10:02:03)``:
        the cause first, so a one-line summary cut at 160 characters still shows it."""
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        lines = str(self.error).splitlines() or [""]
        text = lines[0].removeprefix(f"[{self.error.device}] ")
        return f"{type(self.error).__name__}: {text} (in {self.test}, at {when})"


class Breaker:
    """One device's breaker: closed (calls go through) or open (``trip`` is set)."""

    def __init__(self, device: str, board: Board) -> None:
        self.device = device
        self._board = board
        self._lock = threading.Lock()
        self.trip: Trip | None = None
        self._probed_in: str | None = None  # the suite of the trip or of the last reprobe
        self._outages = 0  # expected outages in progress (a reboot's polls)

    def before(self, probe: Probe) -> None:
        """Return if the device may be asked; raise DeviceDown if it is down (the first
        call of a new suite reprobes once, and goes ahead if the device answers)."""
        if self.trip is None or self._outages:
            return
        with self._lock:
            trip = self.trip
            if trip is None:
                return
            suite = self._board.suite
            if suite != self._probed_in:
                self._probed_in = suite
                if answers(self.device, probe):
                    log.warning("%s: answers again (probe in %s): breaker closed",
                                self.device, suite or "this run")
                    self.trip = None
                    return
            raise DeviceDown(
                self.device, f"down since {trip.describe()}; not asked again", first=trip.error
            )

    def failed(self, error: TransportError, probe: Probe) -> None:
        """A call failed: open the breaker if a probe confirms the device does not answer."""
        if isinstance(error, DeviceDown) or self._outages:
            return
        with self._lock:
            if self.trip is not None or self._outages or answers(self.device, probe):
                return
            self._open(error)

    def mark_down(self, error: TransportError) -> None:
        """A caller's own probe got no answer (the doctor's probe of a late device, given
        the device's command timeout): open the breaker without probing again. That probe
        runs outside the lock, so a call failing meanwhile is decided by its own short
        probe, not held for the long one (an unreachable device's page waited 12 s)."""
        with self._lock:
            if self.trip is None and not self._outages:
                self._open(error)

    def _open(self, error: TransportError) -> None:
        self.trip = Trip(error, self._board.test or "outside a test", time.time())
        self._probed_in = self._board.suite
        log.warning("%s: marked down for the run: %s", self.device, self.trip.describe())

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        with self._lock:
            self._outages += 1
        try:
            yield
        finally:
            with self._lock:
                self._outages -= 1


def answers(device: str, probe: Probe) -> bool:
    """Whether the probe got an answer. A probe that crashes says nothing: answers."""
    try:
        probe()
    except TransportError as exc:
        log.info("%s: probe got no answer: %s", device, exc)
        return False
    except Exception:
        log.exception("%s: probe failed unexpectedly (counted as an answer)", device)
    return True


class Board:
    """The breakers of one run, and where the run is (test, suite) for their messages."""

    def __init__(self) -> None:
        self._breakers: dict[str, Breaker] = {}
        self._lock = threading.Lock()
        self.test: str | None = None  # the running test's node id and phase
        self.suite: str | None = None  # its suite (test module): reprobes go once per suite

    def at(self, test: str, suite: str | None = None) -> None:
        """The run is at ``test`` (``suite``: unchanged when None)."""
        self.test = test
        if suite is not None:
            self.suite = suite

    def breaker(self, device: str) -> Breaker:
        with self._lock:
            if device not in self._breakers:
                self._breakers[device] = Breaker(device, self)
            return self._breakers[device]

    def down(self) -> dict[str, Trip]:
        """Devices down now, with the failure that marked each."""
        with self._lock:
            breakers = list(self._breakers.values())
        return {b.device: trip for b in breakers if (trip := b.trip) is not None}


_board: Board | None = None


def install(board: Board | None) -> None:
    """Guard the transports opened from now on with ``board`` (None: stop guarding)."""
    global _board
    _board = board


def current() -> Board | None:
    return _board


@contextlib.contextmanager
def expected_outage(device: str) -> Iterator[None]:
    """The device is dark on purpose meanwhile (a reboot, a config reload): its failures
    mark nothing and it is asked even if down, so the caller's own polls judge it."""
    board = _board
    if board is None:
        yield
        return
    with board.breaker(device).outage():
        yield


class Guarded:
    """A transport whose public calls go through its device's breaker."""

    def __init__(self, inner: Any, breaker: Breaker, probe: Probe) -> None:
        self._inner = inner
        self._breaker = breaker
        self._probe = probe

    def __repr__(self) -> str:
        return f"Guarded({self._inner!r})"

    def close(self) -> None:
        self._inner.close()  # closing never needs the device

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr
        breaker, probe = self._breaker, self._probe

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            breaker.before(probe)
            try:
                return attr(*args, **kwargs)
            except TransportError as exc:
                breaker.failed(exc, probe)
                raise

        return call


def guard(device: str, transport: T, probe: Probe) -> T:
    """``transport`` behind the device's breaker while a board is installed, else itself."""
    board = _board
    if board is None:
        return transport
    return Guarded(transport, board.breaker(device), probe)  # type: ignore[return-value]
