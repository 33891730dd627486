"""Each device's read in a thread of its own: an interval takes what has arrived.

A switch whose control plane answers every command seconds late held every round of
the doctor to its serial reads (issue 34's noise evaluation: a healthy ``--once`` round
took 98 s of device time instead of 25 s, and ended undecided at its bound). Here a round
waits for its devices until half of each kind (switches, hosts: their reads differ) has
answered, then grants the rest ``LATE_FACTOR`` times their kind's median read; a read
still running then goes on in the background and is judged in the interval it arrives
in (its own clock stamps its counters, so rates over the longer gap stay right). The
round names the device late, with how long its read has run. Late is not dead: a late
device is probed as its circuit breaker probes (a fresh connection, one trivial command),
given the device's own command timeout to answer (it is known to be slow); one that does
not answer is failed (its driver closed to free the hung read) and the doctor pages it
unreachable, as when the read itself timed out.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from labtest.connect import probe_of
from labtest.errors import TransportError, TransportTimeout
from labtest.lab import Lab
from labtest.sweep import SweepResult, sweep
from labtest.transports import breaker

#: a read slower than this many times its kind's median in the round is left running
LATE_FACTOR = 3.0


@dataclass
class _Read:
    began: float
    result: SweepResult[Any] | None = None
    took_s: float = 0.0


@dataclass
class Arrived:
    """A round's answers (``ok``/``failed`` as a sweep's), and the devices still answering
    (device -> wall seconds their read has run)."""

    ok: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, Exception] = field(default_factory=dict)
    late: dict[str, float] = field(default_factory=dict)


@dataclass
class Reads:
    timeout_s: float = 120.0  # a device that answers nothing fails then (the sweep's deadline)
    pending: dict[str, _Read] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def round(self, lab: Lab, kinds: Sequence[Sequence[str]], fn: Callable[[Any], Any], *,
              floor_s: float) -> Arrived:
        """Ask every device of ``kinds`` (not still answering an earlier round) with
        ``fn(driver)``; wait as above, never less than ``floor_s`` wall seconds for a kind."""
        began = time.monotonic()
        for name in (n for kind in kinds for n in kind):
            if name not in self.pending:
                self.pending[name] = read = _Read(time.monotonic())
                threading.Thread(target=self._run, args=(lab, name, fn, read), daemon=True,
                                 name=f"labtest-doctor-read-{name}").start()
        with self._cond:
            while True:
                waits = [self._wait_s(kind, began, floor_s) for kind in kinds]
                if all(w is not None and w <= 0 for w in waits):
                    break
                self._cond.wait(timeout=min((w for w in waits if w is not None and w > 0),
                                            default=None))
            out = Arrived()
            now = time.monotonic()
            for name in (n for kind in kinds for n in kind):
                read = self.pending[name]
                if read.result is None:
                    out.late[name] = now - read.began
                    continue
                del self.pending[name]
                out.ok.update(read.result.ok)
                out.failed.update(read.result.failed)
        for name, error in _dead(lab, out.late).items():
            del out.late[name], self.pending[name]  # the hung read's answer is not waited for
            out.failed[name] = error
        return out

    def _wait_s(self, kind: Sequence[str], began: float, floor_s: float) -> float | None:
        """Seconds this kind may still be waited for (<= 0: done waiting; None: until half
        of it has answered)."""
        reads = [self.pending[n] for n in kind]
        done = [r.took_s for r in reads if r.result is not None]
        if len(done) == len(reads):
            return 0.0
        if 2 * len(done) < len(reads):
            return None
        grant = max(floor_s, LATE_FACTOR * statistics.median(done))
        return began + grant - time.monotonic()

    def _run(self, lab: Lab, name: str, fn: Callable[[Any], Any], read: _Read) -> None:
        result = sweep(lab, [name], fn, max_workers=1, timeout_s=self.timeout_s)
        with self._cond:
            read.result, read.took_s = result, time.monotonic() - read.began
            self._cond.notify_all()


def _dead(lab: Lab, late: dict[str, float]) -> dict[str, TransportError]:
    """The late devices a probe gets no answer from (all probed at once), each with why;
    their drivers are closed so their hung reads return."""
    found: dict[str, TransportError] = {}

    def check(name: str) -> None:
        device = lab.testbed.devices[name]
        probe = probe_of(name, device, answer_s=_command_timeout_s(device))
        if probe is None:
            return
        board = breaker.current()
        if board is not None:  # the breaker probes, and trips: later reads fail at once
            board.breaker(name).failed(TransportTimeout(name, "doctor read hung"), probe)
            dead = board.breaker(name).trip is not None
        else:
            dead = not breaker.answers(name, probe)
        if dead:
            found[name] = TransportTimeout(
                name, f"its read hung {late[name]:.0f} s and a probe got no answer")
            with contextlib.suppress(Exception):
                lab.device(name).close()

    threads = [threading.Thread(target=check, args=(n,), daemon=True) for n in late]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return found


def _command_timeout_s(device: Any) -> float | None:
    for settings in (device.ssh, device.snmp, device.visa):
        timeout = getattr(settings, "command_timeout_s", None) or getattr(
            settings, "timeout_s", None)
        if timeout:
            return float(timeout)
    return None
