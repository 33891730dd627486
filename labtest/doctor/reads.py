"""Each device's read in a thread of its own: an interval takes what has arrived.

A switch whose control plane answers every command seconds late held every round of
the doctor to its serial reads (issue 34's noise evaluation: a healthy ``--once`` round
took 98 s of device time instead of 25 s, and ended undecided at its bound). Here a round
waits for its devices until half of each kind (switches, hosts: their reads differ) has
answered, then grants the rest ``LATE_FACTOR`` times their kind's median read; a read
still running then goes on in the background and is judged in the interval it arrives
in (its own clock stamps its counters, so rates over the longer gap stay right). The
round names the device late, with how long its read has run, and judges what the read
handed over on its way (a switch's FEC and DOM levels, read first: ``Arrived.early``).
Its waits and grants are in lab time (``labtest.labtime``: the wall on a real lab): an
emulated lab's elastic clock skips the time everybody only waits, a late device's answer
wait too, so a grant on the wall clock let a busy control plane catch up in no time on one
machine and not on another. Late is not dead: a late device is probed as its circuit
breaker probes (a fresh connection, one trivial command), given the device's own command
timeout to answer (it is known to be slow); one that does not answer is failed (its driver
closed to free the hung read) and the doctor pages it unreachable, as when the read itself
timed out. The probes run while the interval's probe mesh does (:meth:`Reads.probe`): they
wait on different devices.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from labtest import labtime
from labtest.connect import probe_of
from labtest.errors import TransportError, TransportTimeout
from labtest.lab import Lab
from labtest.sweep import SweepResult, sweep
from labtest.transports import breaker

#: a read slower than this many times its kind's median in the round is left running
LATE_FACTOR = 3.0
#: wall seconds a read may run before the sweep fails it: a backstop for a driver with no
#: timeout of its own, above a slow read's whole length (a hung command fails on its own
#: command timeout, a late device is probed every round). At 120 s a switch answering each
#: of its dozen commands up to 10 s late was paged unreachable while its probe answered
#: (issue 34's onset evaluation, seed 20261221 case 19)
READ_DEADLINE_S = 900.0
#: lab seconds between looks at the reads while a grant runs (a lab-time sleep: the elastic
#: clock never skips past it, so a grant is never overrun by a jump)
POLL_S = 0.02


class Hold(Protocol):
    """Work every switch's watch waits for (the interval's bursts, ``watch_oper``)."""

    ended_s: float | None  # lab time it ended (None: still running)

    def is_alive(self) -> bool: ...


@dataclass
class _Read:
    round_s: float  # lab time the round that asked it began
    began: float  # lab time the device was asked (after the round's ``first`` wait)
    result: SweepResult[Any] | None = None
    took_s: float = 0.0
    early: object = None  # what the read published on its way (its first parts), once


@dataclass
class Arrived:
    """A round's answers (``ok``/``failed`` as a sweep's), and the devices still answering
    (device -> lab seconds their read has run)."""

    ok: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, Exception] = field(default_factory=dict)
    late: dict[str, float] = field(default_factory=dict)
    #: what a late device's read published on its way, each once (device -> its parts)
    early: dict[str, object] = field(default_factory=dict)


@dataclass
class Reads:
    timeout_s: float = READ_DEADLINE_S  # the sweep's deadline for one read
    pending: dict[str, _Read] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def round(self, lab: Lab, kinds: Sequence[Sequence[str]],
              fn: Callable[[Any, Callable[[object], None]], Any], *, floor_s: float,
              hold: Hold | None = None, first: Callable[[], None] | None = None,
              deferred: Collection[str] = ()) -> Arrived:
        """Ask every device of ``kinds`` (not still answering an earlier round) with
        ``fn(driver, publish)``; wait as above, never less than ``floor_s`` lab seconds for
        a kind. What a read hands ``publish`` on its way is the round's ``early`` if the
        read is late then (or a later round's, once, if it is still running). ``hold``:
        what the reads waited for together, no slowness of theirs (``_wait_s``). The
        ``deferred`` devices are asked once ``first()`` returned (in their read's thread,
        holding no device lock), their grant counted from then."""
        began = labtime.monotonic()
        for name in (n for kind in kinds for n in kind):
            if name not in self.pending:
                self.pending[name] = read = _Read(began, began)
                wait = first if name in deferred else None
                threading.Thread(target=self._run, args=(lab, name, fn, read, wait),
                                 daemon=True, name=f"labtest-doctor-read-{name}").start()
        while True:
            with self._cond:
                waits = [self._wait_s(kind, began, floor_s, hold) for kind in kinds]
                if all(w is not None and w <= 0 for w in waits):
                    break
                if all(w is None or w <= 0 for w in waits):  # no grant runs: wait for answers
                    self._cond.wait()
                    continue
            labtime.sleep(min(POLL_S, *(w for w in waits if w is not None and w > 0)))
        with self._cond:
            out = Arrived()
            now = labtime.monotonic()
            for name in (n for kind in kinds for n in kind):
                read = self.pending[name]
                if read.result is None:
                    out.late[name] = now - read.began
                    if read.early is not None:
                        out.early[name], read.early = read.early, None
                    continue
                del self.pending[name]
                out.ok.update(read.result.ok)
                out.failed.update(read.result.failed)
        return out

    def probe(self, lab: Lab, late: dict[str, float]) -> Probing:
        """Probe the ``late`` devices (name -> seconds their read has run, for the message)
        in the background; :meth:`Probing.join` gives the dead ones."""
        probing = Probing(self)
        for name in late:
            t = threading.Thread(target=_check, args=(lab, name, late[name], probing.dead),
                                 daemon=True, name=f"labtest-doctor-probe-{name}")
            t.start()
            probing.threads[name] = t
        return probing

    def _wait_s(self, kind: Sequence[str], began: float, floor_s: float,
                hold: Hold | None = None) -> float | None:
        """Seconds this kind may still be waited for (<= 0: done waiting; None: until half
        of it has answered). A read still running from an earlier round had its grant
        there: it is taken if it lands meanwhile, never waited for again (issue 34's
        evaluation: a switch 10 s late per command, carried over from the baseline, held
        the next round for a fresh grant of 3x the median, 44 s instead of 13, and the
        bound came after one round). A ``hold`` every read that ended after it waited for
        is granted once, not three times (the bursts' 20 s in each switch's read made a
        late switch's grant 66 s: onset evaluation, seed 20261221)."""
        reads = [r for r in (self.pending[n] for n in kind) if r.round_s >= began]
        done = [r.took_s for r in reads if r.result is not None]
        if len(done) == len(reads):
            return 0.0
        if 2 * len(done) < len(reads):
            return None
        asked = min(r.began for r in reads if r.result is not None) - began  # 0: not deferred
        shared = 0.0
        if hold is not None and hold.ended_s is not None and asked <= 0:  # else in ``asked``
            shared = max(0.0, hold.ended_s - began)
        own = [t - shared if t >= shared else t for t in done]
        waited = shared if any(t >= shared for t in done) else 0.0  # 0 without a hold
        grant = max(floor_s, asked + waited + LATE_FACTOR * statistics.median(own))
        return began + grant - labtime.monotonic()

    def _run(self, lab: Lab, name: str, fn: Callable[[Any, Callable[[object], None]], Any],
             read: _Read, first: Callable[[], None] | None = None) -> None:
        def publish(parts: object) -> None:
            with self._cond:
                read.early = parts

        if first is not None:
            first()
            with self._cond:
                read.began = labtime.monotonic()
        result = sweep(lab, [name], lambda drv: fn(drv, publish), max_workers=1,
                       timeout_s=self.timeout_s)
        with self._cond:
            read.result, read.took_s = result, labtime.monotonic() - read.began
            self._cond.notify_all()


@dataclass
class Probing:
    """Late devices being probed; ``join`` waits for the probes and gives the dead ones,
    whose hung reads are no longer waited for."""

    reads: Reads
    threads: dict[str, threading.Thread] = field(default_factory=dict)  # device -> its probe
    dead: dict[str, TransportError] = field(default_factory=dict)

    def join(self) -> dict[str, TransportError]:
        """Wait until each late device is settled: its probe ended, or its own read did
        first. A read that timed out is proof enough: waiting on for the probe's full
        command timeout as well held an unreachable device's page ~10 s past its read's
        own failure (issue 34's evaluation: paged at 42 s, the read failed at ~31 s)."""
        while True:
            with self.reads._cond:
                open_ = []
                for name, probe in self.threads.items():
                    read = self.reads.pending.get(name)
                    if name in self.dead or read is None:
                        continue
                    if read.result is None:  # still reading: its probe decides
                        if probe.is_alive():
                            open_.append(name)
                    elif isinstance(err := read.result.failed.get(name), TransportError):
                        self.dead[name] = err  # its own read timed out: proof enough
            if not open_:
                break
            labtime.sleep(POLL_S)
        dead = dict(self.dead)  # a probe still running may add to it later: not this round's
        for name in dead:
            self.reads.pending.pop(name, None)
        return dead


def _check(lab: Lab, name: str, ran_s: float, dead: dict[str, TransportError]) -> None:
    """Probe one late device; no answer puts it in ``dead`` with why and closes its driver
    so its hung read returns."""
    device = lab.testbed.devices[name]
    probe = probe_of(name, device, answer_s=_command_timeout_s(device))
    if probe is None:
        return
    board = breaker.current()
    down = board.breaker(name) if board is not None else None
    # its own probe, outside the breaker's lock: the device's read failing meanwhile must
    # not wait the command timeout of this probe (breaker.Breaker.mark_down)
    hung = (down is not None and down.trip is not None) or not breaker.answers(name, probe)
    if hung and down is not None:  # later reads fail at once
        down.mark_down(TransportTimeout(name, "doctor read hung"))
    if hung:
        dead[name] = TransportTimeout(
            name, f"its read hung {ran_s:.0f} s and a probe got no answer")
        with contextlib.suppress(Exception):
            lab.device(name).close()


def _command_timeout_s(device: Any) -> float | None:
    for settings in (device.ssh, device.snmp, device.visa):
        timeout = getattr(settings, "command_timeout_s", None) or getattr(
            settings, "timeout_s", None)
        if timeout:
            return float(timeout)
    return None
