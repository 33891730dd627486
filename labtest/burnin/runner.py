"""Run a station: set up load and chamber, take every scheduled reading, store it at once.

``start(station, options)`` begins a run; ``resume(run_id, options)`` continues
one that crashed or was stopped, from the run time of its earliest missing
reading (see ``timebase``). Within a round (every reading due at one instant)
devices are read in parallel, one thread per device so no driver session is
shared; PRBS links come after, one at a time (each touches two devices).
Each reading is committed on its own as soon as it is taken.

Ctrl-C (SIGINT/SIGTERM through ``stop``) lets the round in flight finish,
stops the load, puts the chamber in standby and marks the run ``stopped``.
Whatever ends the loop (a second Ctrl-C, a full disk, a locked database, a
bug), the same happens in a ``finally``: the station is never left under load.

A real lab's devices are held through :mod:`labtest.reservation`, as a pytest
run holds them: a burn-in never reads a device another run holds (it waits up
to ``reserve_timeout_s``, then fails naming the holder), and stops when it
loses its lease.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labtest import reservation
from labtest.burnin import monitors as mon
from labtest.burnin.backends import database, open_store
from labtest.burnin.live import LiveChecks, Progress, Status
from labtest.burnin.profile import Step, active, timeline
from labtest.burnin.schedule import Series, Slot, merged, rounds, total
from labtest.burnin.station import PrbsLoad, Station, load_station
from labtest.burnin.store import Event, Reading, Run, SampleStore, StoreError, StoreFull, Unit
from labtest.burnin.timebase import FabricTimebase, Timebase, WallTimebase
from labtest.burnin.units import Plan, discover
from labtest.errors import ConfigError, LabtestError
from labtest.lab import Lab
from labtest.measure import LimitsProfile, load_limits
from labtest.secrets import redact
from labtest.testbed import load_testbed

DEFAULT_OUTPUT = Path("reports/burnin")
MAX_WORKERS = 8
#: run time a round may start late before the operator is told the station cannot keep up
BEHIND_S = 60.0
#: chamber air this close to where it is going counts as settled (stepped clock)
AIR_SETTLED_C = 0.05
#: order of a device's readings within a round
PHASE_ORDER = {"dom": 0, "fec": 1, "counters": 2, "chamber": 3}

Fault = tuple[str, str, dict[str, Any]]


class RunError(LabtestError):
    """The run cannot start or resume (it is complete, running elsewhere, or changed)."""


@dataclass
class Options:
    emulate: bool = False
    time_scale: float | None = None  # emulated lab: None = stepped virtual clock
    faults: list[Fault] = field(default_factory=list)
    db: str | Path | None = None  # a SQLite file or a postgresql:// URL
    output: Path | None = None  # checked writable before the first sample
    progress: Progress | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    reserve: bool | None = None  # hold the devices (default: yes, unless emulated)
    reserve_timeout_s: float = reservation.DEFAULT_WAIT_S
    lease_store: str | None = None
    say: Callable[[str], None] | None = None  # waiting for a busy lab, lease lost


@dataclass
class Outcome:
    run_id: str
    status: str  # "complete" or "stopped"
    db: str | Path
    station: Station


# --- the lab the run drives --------------------------------------------------------------------


@dataclass
class Session:
    lab: Lab
    timebase: Timebase
    close: Callable[[], None]
    emulated: Any = None


def open_session(station: Station, options: Options, start_s: float) -> Session:
    """The real lab, or an emulated one whose virtual clock stands at ``start_s``."""
    testbed = load_testbed(station.testbed)
    if not options.emulate:
        lab = Lab(testbed)
        return Session(lab, WallTimebase(start_s), lab.close)
    from labtest.emulation.lab import EmulatedLab

    emu = EmulatedLab(testbed, time_scale=options.time_scale, faults=list(options.faults))
    tb = emu.start()
    try:
        stepped = options.time_scale is None
        if stepped:
            emu.fabric.clock.set_realtime(False)
        if start_s > 0:
            emu.fabric.advance(start_s)  # the units aged while the station was down
        lab = Lab(tb)
    except BaseException:
        emu.stop()
        raise

    def close() -> None:
        lab.close()
        emu.stop()

    follow = (lambda: _follow_chambers(emu)) if stepped else None
    return Session(lab, FabricTimebase(emu.fabric, start_s, follow), close, emu)


def _follow_chambers(emu: Any) -> bool:
    """Stepped clock: the air around the devices follows each emulated chamber now.

    The chamber emulator's own thread does this every 0.2 s of *wall* time, which
    a stepped clock outruns by hours; the same update is made after every step.
    Returns whether a chamber's air is still on its way (to a setpoint, or back to
    ambient in standby).
    """
    moving = False
    for name, device in emu.testbed.devices.items():
        if device.driver == "chamber" and name not in emu.skipped:
            chamber = emu.server(name).served.scpi
            air_c = chamber.temperature_c()
            emu.fabric.set_ambient_c(air_c, device.vars.get("devices"))
            target_c = chamber.setpoint_c if chamber.running else chamber.ambient_c
            moving = moving or abs(air_c - target_c) > AIR_SETTLED_C
    return moving


# --- start and resume ----------------------------------------------------------------------------


def start(station: Station, options: Options, session: Session | None = None) -> Outcome:
    """Run ``station`` from the start; ``session`` replaces the lab (dry runs, benches)."""
    limits = load_limits(station.limits)
    check_output(output_dir(station, options.output))
    store = open_store(_db_path(station, options), station.storage.synchronous)
    lease = None
    try:
        store.check_writable()
        lease = _hold(station, options)
        session = session or open_session(station, options, 0.0)
    except BaseException:
        _release(lease)
        store.close()
        raise
    try:
        plan = discover(session.lab, station)
        streams = _streams(session.lab, plan, station)
        run = Run(
            run_id=_new_run_id(station.station),
            station=station.station,
            status="running",
            created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
            duration_s=station.duration_s,
            pid=os.getpid(),
            host=socket.gethostname(),
            info=_run_info(station, options, streams, plan),
        )
        store.create_run(run)
        store.put_units(run.run_id, plan.units)
        _event(store, run.run_id, 0.0, "started", f"station {station.station}: "
               f"{sum(u.under_test for u in plan.units)} units under test")
        for note in plan.notes:
            _event(store, run.run_id, 0.0, "plan", note)
        runner = Runner(station, session, plan, store, run.run_id, limits, options, lease)
        status = runner.run(streams)
    finally:
        try:
            session.close()
        finally:
            _release(lease)
            store.close()
    return Outcome(run.run_id, status, store.path, station)


def resume(run_id: str, options: Options) -> Outcome:
    store = open_store(database(options.db), create=False)
    lease = None
    try:
        run = store.run(run_id)
        _check_resumable(run)
        station = load_station(run.info["station_path"])
        if station.sha256 != run.info["station_sha256"]:
            raise RunError(f"{run.info['station_path']} changed since run {run_id} started; "
                           "the schedule would not be the same")
        limits = load_limits(station.limits)
        check_output(output_dir(station, options.output))
        store.check_writable()
        options = replace(  # the lab is rebuilt as it was: same emulation, same faults
            options,
            emulate=bool(run.info["emulate"]),
            time_scale=run.info["time_scale"],
            faults=[(str(k), str(t), dict(p)) for k, t, p in run.info["faults"]],
        )
        lease = _hold(station, options)
        streams = [Series(*s) for s in run.info["streams"]]
        done = store.done(run_id)
        first = next(merged(streams, run.duration_s, done), None)
        start_s = first.t_s if first is not None else run.duration_s
        store.update_run(run_id, status="running", pid=os.getpid(), host=socket.gethostname())
        _event(store, run_id, start_s, "resumed",
               f"resumed at run time {start_s / 3600:.3f} h; {len(done)} readings already stored")
        session = open_session(station, options, start_s)
        try:
            plan = discover(session.lab, station)
            _check_same_units(store.units(run_id), plan.units)
            runner = Runner(station, session, plan, store, run_id, limits, options, lease)
            status = runner.run(streams)
        finally:
            session.close()
    finally:
        _release(lease)
        store.close()
    return Outcome(run_id, status, store.path, station)


def _hold(station: Station, options: Options) -> reservation.Lease | None:
    """Hold the station's devices (real lab), as a pytest run on the same lab would."""
    wanted = options.reserve if options.reserve is not None else not options.emulate
    if not wanted:
        return None
    keys = reservation.testbed_keys(load_testbed(station.testbed))
    say = options.say

    def waiting(blockers: dict[str, reservation.Holder]) -> None:
        if say is not None:
            say(f"waiting up to {options.reserve_timeout_s:g} s: {reservation.describe(blockers)}")

    store = reservation.open_store(options.lease_store)
    try:
        return reservation.reserve(
            keys,
            store=store,
            ttl_s=float(os.environ.get(reservation.ENV_TTL, reservation.DEFAULT_TTL_S)),
            wait_s=options.reserve_timeout_s,
            on_wait=waiting,
        )
    except BaseException:
        close = getattr(store, "close", None)  # a server store's connection
        if close is not None:
            with contextlib.suppress(reservation.StoreUnavailable, OSError):
                close()
        raise


def _release(lease: reservation.Lease | None) -> None:
    if lease is not None:
        lease.release()
        close = getattr(lease.store, "close", None)  # a server store's connection
        if close is not None:
            with contextlib.suppress(reservation.StoreUnavailable, OSError):
                close()


def output_dir(station: Station, output: Path | None) -> Path:
    return output or station.output or DEFAULT_OUTPUT


def check_output(directory: Path) -> None:
    """Create ``directory`` and prove a file can be written there, before the first sample."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".labtest-write-probe", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise RunError(f"cannot write the results to {directory}: {exc.strerror or exc}") from None


def _check_resumable(run: Run) -> None:
    if run.status == "complete":
        raise RunError(f"run {run.run_id} is complete; nothing to resume")
    if run.status == "running" and run.host == socket.gethostname() and _alive(run.pid):
        raise RunError(f"run {run.run_id} is still running (pid {run.pid})")


def _alive(pid: int | None) -> bool:
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _check_same_units(before: list[Unit], now: list[Unit]) -> None:
    was = {(u.device, u.port): u.serial for u in before}
    found = {(u.device, u.port): u.serial for u in now}
    changed = [f"{d}:{p}".rstrip(":") + f" was {s}, now {found.get((d, p))}"
               for (d, p), s in was.items() if found.get((d, p)) != s]
    if changed:
        raise ConfigError("units", ["a unit changed since the run started: " + c for c in changed])


def _db_path(station: Station, options: Options) -> str | Path:
    return database(options.db, station.storage.url, station.storage.path)


def _new_run_id(station: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{station}-{stamp}-{os.urandom(2).hex()}"


def _streams(lab: Lab, plan: Plan, station: Station) -> list[Series]:
    out = []
    for name, monitor in station.monitors.enabled().items():
        spec = mon.MONITORS[name]
        for target in mon.targets(name, lab, plan, station):
            out.append(Series(name, target, monitor.period_s, spec.first_at_period))
    return out


def _run_info(
    station: Station, options: Options, streams: list[Series], plan: Plan
) -> dict[str, Any]:
    assert station.source is not None
    return {
        "station_path": str(station.source.resolve()),
        "station_sha256": station.sha256,
        "testbed": str(Path(station.testbed).resolve()),
        "limits": str(Path(station.limits).resolve()),
        "emulate": options.emulate,
        "time_scale": options.time_scale,
        "faults": [list(f) for f in options.faults],
        "streams": [[s.monitor, s.target, s.period_s, s.first_at_period] for s in streams],
        "prbs_links": [[f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}"] for a, b in plan.prbs_links],
        "ports": [[p.device, p.port, f"{p.peer[0]}:{p.peer[1]}" if p.peer else None, p.mode]
                  for p in plan.ports.values()],
        "notes": plan.notes,
    }


def _event(store: SampleStore, run_id: str, t_s: float, kind: str, text: str,
           unit: str | None = None, key: str | None = None) -> Event:
    event = Event(t_s, time.time(), kind, redact(text), unit, key)
    store.event(run_id, event)
    return event


# --- the loop ------------------------------------------------------------------------------------


class Runner:
    def __init__(
        self,
        station: Station,
        session: Session,
        plan: Plan,
        store: SampleStore,
        run_id: str,
        limits: LimitsProfile,
        options: Options,
        lease: reservation.Lease | None = None,
    ) -> None:
        self.station = station
        self.lease = lease
        self.lab = session.lab
        self.timebase = session.timebase
        self.plan = plan
        self.store = store
        self.run_id = run_id
        self.stop = options.stop
        self.say = options.say
        self.progress = options.progress
        self.live = LiveChecks(limits, plan.units)
        self.steps: list[Step] = timeline(station.chamber) if station.chamber else []
        self.status = Status(run_id, station.station, 0.0, station.duration_s,
                             units=sum(u.under_test for u in plan.units))
        self._errors_seen: set[tuple[str, str]] = set()
        self._said_behind = False

    def run(self, streams: list[Series]) -> str:
        """Take every reading; whatever happens, end with the station safe and the run closed."""
        try:
            complete = self._loop(streams)
        except BaseException as exc:
            self._finish(False, failure=exc)
            raise
        return self._finish(complete)

    def _loop(self, streams: list[Series]) -> bool:
        done = self.store.done(self.run_id)
        self._restore_status(streams, done)
        slots = merged(streams, self.station.duration_s, done)
        first = next(slots, None)
        start_s = first.t_s if first is not None else self.station.duration_s
        self.status.t_s = start_s
        self._start_load(start_s)
        self.timebase.anchor(start_s)  # set-up took wall (or scaled virtual) time: not run time
        pending = [s for s in self.steps if s.t_s > start_s]
        finished = True
        with ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="burnin") as pool:
            for batch in rounds(_chain(first, slots)):
                t_s = batch[0].t_s
                if not self._advance_to(t_s, pending) or self._lease_lost(t_s):
                    finished = False
                    break
                self._behind(t_s)
                self._take(pool, batch)
                self.store.update_run(self.run_id, position_s=t_s)
                self._show()
            else:
                finished = not self.stop.is_set()
        return finished

    def _lease_lost(self, t_s: float) -> bool:
        """Ask the store before each round (as pytest does before each test)."""
        if self.lease is None:
            return False
        self.lease.renew()
        if self.lease.valid():
            return False
        text = f"lease lost, stopping before touching the devices again: {self.lease.lost_reason}"
        self._note(t_s, "error", text)
        if self.say is not None:
            self.say(text)
        return True

    # --- set-up and tear-down -------------------------------------------------------------

    def _start_load(self, t_s: float) -> None:
        if isinstance(self.station.load, PrbsLoad) and self.plan.prbs_links:
            mon.start_prbs(self.lab, self.plan, self.station)
            self._note(t_s, "load", f"PRBS {self.station.load.pattern} on "
                       f"{len(self.plan.prbs_links)} link(s)")
        step = active(self.steps, t_s)
        if step is not None:
            self._apply(step, t_s)

    def _finish(self, complete: bool, failure: BaseException | None = None) -> str:
        """Stop the load, put the chamber in standby, close the run record; each step alone.

        With ``failure`` (the loop raised) nothing here may hide it: a step that
        fails too is noted if it can be, and the failure is what the caller sees.
        """
        t_s = self._now_s()
        if self.plan.prbs_links:
            self._safely("load", lambda: mon.stop_prbs(self.lab, self.plan))
        chamber = self.station.chamber
        if chamber is not None and (not complete or chamber.at_end == "standby"):
            self._safely("chamber", lambda: self.lab.device(chamber.device).stop())
        status = "complete" if complete else "stopped"
        try:
            self._close_record(status, t_s, failure)
        except StoreError:
            if failure is None:
                raise
        finally:
            if self.progress is not None:
                with contextlib.suppress(Exception):
                    self.progress.close(self.status)
        return status

    def _close_record(self, status: str, t_s: float, failure: BaseException | None) -> None:
        """Mark the run ``status``; on a full disk, give back the store's reserve and retry."""
        why = "" if failure is None else f" ({_one_line(failure)})"
        try:
            self.store.update_run(self.run_id, status=status, pid=None)
        except StoreFull:
            release = getattr(self.store, "release_reserve", None)
            if release is None or not release():
                raise
            self.store.update_run(self.run_id, status=status, pid=None)
        with contextlib.suppress(StoreError):
            self._note(t_s, status, f"run {status} at run time {t_s / 3600:.3f} h{why}")

    def _now_s(self) -> float:
        try:
            return self.timebase.now_s()
        except Exception:
            return self.status.t_s

    def _safely(self, what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # the next step (chamber, record) must still happen
            with contextlib.suppress(Exception):
                self._note(self._now_s(), "error", f"stopping the {what}: {_one_line(exc)}")

    # --- time and chamber ----------------------------------------------------------------------

    def _advance_to(self, t_s: float, pending: list[Step]) -> bool:
        while pending and pending[0].t_s <= t_s:
            step = pending.pop(0)
            if not self.timebase.wait_until(step.t_s, self.stop):
                return False
            self._apply(step, step.t_s)
        return self.timebase.wait_until(t_s, self.stop)

    def _apply(self, step: Step, t_s: float) -> None:
        assert self.station.chamber is not None
        chamber = self.lab.device(self.station.chamber.device)
        chamber.set_ramp_rate_c_per_min(step.rate_c_per_min)
        chamber.set_setpoint_c(step.setpoint_c)
        chamber.run()
        self.status.phase = step.phase
        self._note(t_s, "phase", f"chamber: {step.phase} at {step.rate_c_per_min:g} C/min")

    def _behind(self, t_s: float) -> None:
        """Readings are never taken early; when the station cannot keep up, say so."""
        late_s = self.timebase.now_s() - t_s
        self.status.behind_s = max(late_s, 0.0)
        if late_s > BEHIND_S and not self._said_behind:
            self._said_behind = True
            self._note(t_s, "behind", f"readings are {late_s:.0f} s behind the schedule: the "
                       "devices answer slower than the sample periods ask (or the time scale)")

    # --- readings ------------------------------------------------------------------------------

    def _take(self, pool: ThreadPoolExecutor, batch: list[Slot]) -> None:
        by_device: dict[str, list[Slot]] = {}
        links = []
        for slot in batch:
            if slot.monitor == "prbs":
                links.append(slot)
            else:
                by_device.setdefault(slot.target, []).append(slot)
        jobs = [pool.submit(self._read_all, sorted(slots, key=lambda s: PHASE_ORDER[s.monitor]))
                for slots in by_device.values()]
        for job in jobs:
            job.result()
        self._read_all(links)  # each touches two devices: one after the other

    def _read_all(self, slots: list[Slot]) -> None:
        for slot in slots:
            self._read(slot)

    def _read(self, slot: Slot) -> None:
        spec = mon.MONITORS[slot.monitor]
        t_s, wall_s = self.timebase.now_s(), time.time()
        try:
            result = spec.read(self.lab, self.plan, self.station, slot.target)
        except Exception as exc:  # stored as a missed reading; the run goes on
            error = redact(f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, LabtestError):
                error += "\n" + redact(traceback.format_exc(limit=5))
            self.store.write(self.run_id, Reading(slot.monitor, slot.target, slot.index,
                                                  t_s, wall_s, (), error))
            self._reading_error(slot, t_s, error)
            return
        added = self.store.write(self.run_id, Reading(
            slot.monitor, slot.target, slot.index, t_s, wall_s, result.samples))
        self._account(slot, t_s, added, result)

    def _account(self, slot: Slot, t_s: float, added: int, result: mon.Result) -> None:
        st = self.status
        st.readings_done += 1
        st.samples += added
        st.t_s = max(st.t_s, t_s)
        for kind, text, unit in result.notes:
            self._note(t_s, kind, text, unit)
        for alarm in self.live.check(result.samples):
            st.alarmed.setdefault(alarm.unit, alarm.text)
            self._note(t_s, "alarm", f"{alarm.unit}: {alarm.text}", alarm.unit, alarm.key)
        if slot.monitor == "chamber":
            for s in result.samples:
                if s.metric == "chamber_temperature_c":
                    st.chamber_c = s.value

    def _reading_error(self, slot: Slot, t_s: float, error: str) -> None:
        self.status.readings_done += 1
        self.status.errors += 1
        key = (slot.monitor, slot.target)
        if key not in self._errors_seen:  # one event per stream, not one per reading
            self._errors_seen.add(key)
            self._note(t_s, "error", f"{slot.monitor} {slot.target}: {error.splitlines()[0]}")

    # --- status ----------------------------------------------------------------------------------

    def _restore_status(self, streams: list[Series], done: set[tuple[str, str, int]]) -> None:
        st = self.status
        st.readings_total = total(streams, self.station.duration_s)
        st.readings_done = len(done)
        st.samples = self.store.sample_count(self.run_id)
        for event in self.store.events(self.run_id, ["alarm"]):
            if event.unit and event.key:
                st.alarmed.setdefault(event.unit, event.text)
                st.latest.append(f"{event.t_s / 3600:7.2f} h  {event.text}")
                self.live.seen(event.unit, event.key)

    def _note(self, t_s: float, kind: str, text: str, unit: str | None = None,
              key: str | None = None) -> None:
        event = _event(self.store, self.run_id, t_s, kind, text, unit, key)
        if kind in ("alarm", "error", "module-changed", "module-missing"):
            self.status.latest.append(f"{t_s / 3600:7.2f} h  {text}")
        if self.progress is not None:
            self.progress.event(self.status, event)

    def _show(self) -> None:
        if self.progress is not None:
            self.progress.update(self.status)


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _chain(first: Slot | None, rest: Iterator[Slot]) -> Iterator[Slot]:
    if first is not None:
        yield first
    yield from rest
