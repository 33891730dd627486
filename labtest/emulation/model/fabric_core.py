"""The fabric model's state and its integration in virtual time (``FabricCore``).

Time is lazy: nothing runs in the background. Every read first integrates the
model from the last time it was brought up to date to ``clock.now_s()``: in
steps of at most ``MAX_STEP_S``, split at scheduled events (faults starting or
ending), with counts drawn from distributions for the whole step. A 72-hour
burn-in sampled every minute is 4320 small numpy steps, not 1e13 codewords.

One step updates every module at once (``modules``), counts FEC and PRBS
(``linkcounts``), applies flaps (``flaps``), lets the modules sample their
monitors, runs the traffic model up to each flap edge, and re-evaluates which
links are up. ``Fabric`` (``fabric.py``) is the API built on this core.

Reads that need no integration do not step (``_light_now``): link and port
state, LLDP, DOM and reachability read at "now" straight from the state while
the optics are time-invariant (no laser drifting, every module at its settled
temperature), no event is due and the traffic model is idle. Between two steps
such a read sees exactly what a step to "now" would leave (flaps are closed
form); counters, FEC and PRBS still integrate. On a 64-switch fabric a step
costs milliseconds, and a live lab reads the model thousands of times a second.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from labtest.emulation.model.clock import VirtualClock
from labtest.emulation.model.fabric_records import (
    CounterSource,
    ModelError,
    PortState,
    build_ports,
)
from labtest.emulation.model.faults import (
    FaultError,
    FaultInstance,
)
from labtest.emulation.model.flaps import LinkTimeline
from labtest.emulation.model.linkcounts import LinkCounters
from labtest.emulation.model.modules import (
    ModuleArrays,
    OpticalState,
    build_inventory,
    build_modules,
    monitor_levels,
    monitor_sample,
    optical_state,
    prbs_lock,
    settled_temp_c,
)
from labtest.emulation.model.optics import (
    DARK_DBM,
    THERMAL_TAU_S,
    FlagBank,
    TransceiverInventory,
)
from labtest.emulation.model.traffic import TrafficModel
from labtest.errors import ModelStalled
from labtest.testbed.model import Emulation, Link, Testbed

#: every read steps the whole model, as before reads learnt to skip steps: the A/B
#: baseline of ``bench/acceptance_speed.py --model``; the numbers' distributions are the same
STEP_EVERY_READ = os.environ.get("LABTEST_MODEL_STEP_EVERY_READ") == "1"


class FabricCore:
    """The fabric's state and its integration in time; ``Fabric`` adds what callers ask."""

    MAX_STEP_S = 3600.0
    traffic: TrafficModel  # set by Fabric once the core exists (it reads the links through it)

    def __init__(
        self,
        testbed: Testbed,
        seed: int | None = None,
        time_scale: float | None = None,
        *,
        realtime: bool = False,
    ) -> None:
        emu = testbed.emulation or Emulation()
        self.testbed = testbed
        self.seed = emu.seed if seed is None else seed
        self.clock = VirtualClock(time_scale or emu.time_scale, realtime=realtime)
        self.rng = np.random.default_rng(self.seed)
        self.warnings: list[str] = []
        self.faults: dict[str, FaultInstance] = {}
        self._lock = threading.RLock()
        self._t_s = self.clock.now_s()  # the model is integrated up to here
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._fault_ids = itertools.count(1)
        self._busy = False  # inside an integration or an event: nested syncs are no-ops
        self._stall: ModelStalled | None = None  # the traffic model's, raised after the step
        self._view_t_s: float | None = None  # when set, link_up() answers for this instant
        self._instant: float | None = None  # held by ``instant``: every read answers for it
        self._ambient_c = {name: emu.ambient_c for name in testbed.devices}
        self._unreachable: set[str] = set()
        self._refusing: set[str] = set()  # of those, the rebooting ones (connections refused)
        self._firmware: dict[str, str | None] = {
            name: (str(d.vars["firmware_version"]) if "firmware_version" in d.vars else None)
            for name, d in testbed.devices.items()
        }
        self._rate_fraction: dict[str, float] = {}
        self._counter_sources: list[CounterSource] = []
        # configuration generation: bumped by every change made outside a step (faults,
        # admin, load, ambient); per-port arrays and "optics are quiet" are cached per value
        self._gen = 0
        self._port_cache: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._quiet_gen = -1  # the generation the last step found time-invariant optics in
        self._syncs = 0  # integrations done (the traffic model changes only in them)
        # ((_syncs, traffic calls), quiet until): the traffic model changes in a sync or a call
        self._traffic_quiet: tuple[tuple[int, int], float] = ((-1, -1), -math.inf)
        self._steady: tuple[OpticalState, dict[str, Any]] | None = None
        self._links: list[Link] = list(testbed.links)
        self._link_index = {lk.name: i for i, lk in enumerate(self._links)}
        self._timeline = LinkTimeline(len(self._links))
        self._ports: dict[tuple[str, str], PortState] = build_ports(testbed, self._links)
        mods = build_modules(self._links, self._ports, self.seed, self._ambient_c, self.warnings)
        self.modules: ModuleArrays = mods.arrays
        self._specs = mods.specs
        self._module_port: list[PortState] = mods.port
        self.inventory: list[TransceiverInventory] = build_inventory(mods)
        self._ma, self._mb = self._link_ends()
        self._link_of = np.array([p.link for p in self._module_port], dtype=np.int64)
        self.counts = LinkCounters(self.modules.n, self._t_s)
        self.flags = FlagBank(self.modules.mask)
        self._static_up = np.zeros(len(self._links), dtype=bool)
        self._state: OpticalState = self._optical_state()
        self._cache: dict[str, Any] = {}  # derived from _state; emptied whenever it changes
        self._refresh(self._t_s, first=True)

    # --- time ------------------------------------------------------------------

    def now_s(self) -> float:
        """Virtual time the model answers for (== clock.now_s()): every read after this sees now.

        Steps only when a step could change what a read shows (``_light_now``).
        """
        with self._lock:
            return self._light_now()

    @contextlib.contextmanager
    def instant(self) -> Iterator[float]:
        """Hold the model at one instant while a command composes its answer: every read
        inside answers for it, without stepping again.

        A traceroute reads each hop's link state and loss; while traffic flows each such
        read stepped the whole model (the fluid engine) to a slightly later now: 72 % of
        the doctor's CPU with a training job's load (py-spy over a ``--load`` straggler
        case: its probe mesh ran 31-37 s, the lab's device time with it), and the hops of
        one answer saw different instants. Other readers wait on the lock meanwhile, as a
        device's next command waits for its answer to the last."""
        with self._lock:
            if self._instant is not None:  # nested: the outer command's instant
                yield self._instant
                return
            self._instant = self._light_now()
            try:
                yield self._instant
            finally:
                self._instant = None

    def advance(self, dt_s: float) -> float:
        """Move the clock and bring the model up to date (pure-model runs)."""
        with self._lock:
            self.clock.advance(dt_s)
            self._sync()
            return self._t_s

    def schedule(self, at_s: float, action: Callable[[], None]) -> None:
        """Run ``action`` when the model reaches virtual time ``at_s`` (now if past)."""
        with self._lock:
            self._sync()  # "now" is the clock's: reads may have left the model behind it
            heapq.heappush(self._events, (max(at_s, self._t_s), next(self._seq), action))
            self._sync()

    def _sync(self) -> None:
        if self._busy or self._instant is not None:
            return
        now = self.clock.now_s()
        if now == self._t_s and not (self._events and self._events[0][0] <= now):
            return  # already up to date (many reads at one instant)
        self._busy = True
        self._syncs += 1
        try:
            self._advance_to(now)
        finally:
            self._busy = False
        if self._stall is not None:  # the model is at now: the reader that waited learns why
            stall, self._stall = self._stall, None
            raise stall

    def _light_now(self) -> float:
        """The time a read that needs no integration answers for: now, stepping only if it must.

        Without a step the state is the last step's; that is what a step to now
        would leave when the optics are time-invariant (``_quiet_gen``), no event
        (a fault starting or ending, a scheduled action) is due and the traffic
        model is idle until after now. Otherwise the model is brought up to now.
        """
        if self._instant is not None:
            return self._instant
        if self._busy:
            return self._t_s if self._view_t_s is None else self._view_t_s
        now = self.clock.now_s()
        if (
            not STEP_EVERY_READ
            and self._quiet_gen == self._gen
            and now >= self._t_s
            and not (self._events and self._events[0][0] <= now)
            and now < self._traffic_quiet_until()
        ):
            return now
        self._sync()
        return self._t_s

    def _traffic_quiet_until(self) -> float:
        traffic = getattr(self, "traffic", None)
        if traffic is None:
            return math.inf
        key = (self._syncs, traffic.calls)
        seen, until = self._traffic_quiet
        if seen != key:
            until = traffic.quiet_until_s()
            self._traffic_quiet = (key, until)
        return until

    def _light_count(self, module: int | None) -> float:
        """Bring one port's FEC counts and up-time to now; returns the time they are for.

        With the optics steady (``_light_now`` did not step) only this port is
        counted, from its own time to now, with the same per-port draws a step
        makes; otherwise the whole model steps. Counter sources (plug-ins that
        count on their own) always get a step.
        """
        if self._counter_sources and not self._busy:
            self._sync()
            return self._t_s
        t = self._light_now()
        if module is not None and t > self.counts.t_s[module]:
            mods = np.array([module], dtype=np.int64)
            self._count_modules(mods, t)
        return t

    def _up_s_from(self, mods: np.ndarray, t1: float) -> np.ndarray:
        """Seconds each of ``mods`` had its link up from its own count time to ``t1``."""
        t0s = self.counts.t_s[mods]
        links = self._link_of[mods]
        dts = t1 - t0s
        dark = np.zeros(len(mods))
        for i, li in enumerate(links.tolist()):
            if self._timeline.flaps[li]:
                dark[i] = self._timeline.link_down_s_in(li, float(t0s[i]), t1)
        return self._static_up[links] * (dts - np.minimum(dark, dts))

    def _count_modules(self, mods: np.ndarray, t: float) -> None:
        """Count FEC of ``mods`` alone up to ``t`` (steady optics only: see ``_light_count``)."""
        st = self._state
        keep = self._steady_numbers(st)
        if "fec" not in keep:
            keep["fec"] = LinkCounters.fec_probabilities(self.modules, st.ber)
        up_s = self._up_s_from(mods, t)
        self.counts.count_fec(self.modules, st.ber, up_s, self.rng, keep["fec"], modules=mods)
        self.counts.t_s[mods] = t

    def _pending_drops(self, module: int, t: float) -> int:
        """Drops of a module's link after the last step, up to ``t`` (the next step counts them)."""
        li = int(self._link_of[module])
        if t <= self._t_s or not self._timeline.flaps[li] or not self._static_up[li]:
            return 0
        return self._timeline.link_drops_in(li, self._t_s, t)

    def _bump(self) -> None:
        """The configuration changed outside a step: cached per-port arrays and quiet go."""
        self._gen += 1
        self._syncs += 1

    def _port_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tx_on, ambient_c, load) per module, rebuilt only when the configuration changed."""
        if self._port_cache is None or self._port_cache[0] != self._gen:
            mp = self._module_port
            tx_on = np.array([p.admin_up for p in mp], dtype=bool)
            ambient = np.array([self._ambient_c.get(p.device, 25.0) for p in mp])
            load = np.array([p.load for p in mp])
            self._port_cache = (self._gen, tx_on, ambient, load)
        return self._port_cache[1], self._port_cache[2], self._port_cache[3]

    def _temp_target(self) -> np.ndarray:
        """``modules.temp_target`` from the cached per-port arrays."""
        _, ambient, load = self._port_arrays()
        return settled_temp_c(self.modules, ambient, load)

    def _advance_to(self, t_s: float) -> None:
        while True:
            next_event = self._events[0][0] if self._events else math.inf
            self._integrate_until(min(t_s, next_event))
            if next_event > t_s:
                return
            _, _, action = heapq.heappop(self._events)
            action()
            self._refresh(self._t_s)

    def _integrate_until(self, t_s: float) -> None:
        while self._t_s < t_s:
            t1 = min(t_s, self._t_s + self.MAX_STEP_S)
            self._step(self._t_s, t1)
            self._t_s = t1

    # --- physics -----------------------------------------------------------------

    def _optical_state(self) -> OpticalState:
        return optical_state(self.modules, self._port_arrays()[0])

    def _link_ends(self) -> tuple[np.ndarray, np.ndarray]:
        ends = [[self._ports[(e.device, e.port)].module for e in lk.ends] for lk in self._links]
        arr = np.array(ends, dtype=np.int64).reshape(len(self._links), 2)
        return arr[:, 0], arr[:, 1]

    def _step(self, t0: float, t1: float) -> None:
        """Integrate every module from t0 to t1 (one vectorised step)."""
        a = self.modules
        dt = t1 - t0
        if a.n == 0:
            self._drive_traffic(t0, t1)
            return
        steady = self._quiet_gen == self._gen
        keep: dict[str, Any] | None = None
        if steady:  # time-invariant optics: temperatures and lasers stay, the state is the last
            st = self._state
            keep = self._steady_numbers(st)
            drifting = False
        else:
            target = self._temp_target()
            a.temp_c[:] = target + (a.temp_c - target) * math.exp(-dt / THERMAL_TAU_S)
            drifting = bool(a.laser_drift_db_per_s.any())
            if drifting:
                a.laser_loss_db += a.laser_drift_db_per_s * dt
            st = self._optical_state()
        link_of = self._link_of
        flap_down = self._timeline.down_s_in(t0, t1)
        drops = self._timeline.drops_in(t0, t1)
        light_frac = (1.0 - np.minimum(flap_down, dt) / dt)[link_of]
        probabilities = None
        if keep is not None:
            if "fec" not in keep:
                keep["fec"] = LinkCounters.fec_probabilities(a, st.ber)
            probabilities = keep["fec"]
        up_s = dt * self._static_up[link_of] * light_frac
        ahead = np.flatnonzero(self.counts.t_s > t0)
        if ahead.size:  # ports a read brought up to date on their own: the rest of the step
            up_s[ahead] = self._up_s_from(ahead, t1)
        self.counts.count_fec(a, st.ber, up_s, self.rng, probabilities)
        self.counts.t_s[:] = t1
        lock = prbs_lock(a, st) & self.counts.prbs_lock
        self.counts.count_prbs(a, st.ber, lock, dt * light_frac, drops[link_of], self.rng)
        # flaps: each drop is a link-down event and a latched LOS at both ends
        dark_now = self._timeline.dark_mask(t1)
        flapped = (drops > 0)[link_of] | dark_now[link_of]
        self.counts.down_count += drops[link_of] * self._static_up[link_of]
        self.flags.carry()
        levels = None
        if keep is not None:
            if "levels" not in keep:
                keep["levels"] = monitor_levels(a, st)
            levels = keep["levels"]
        self._observe_flags(t1, st, extra_los=flapped, levels=levels)
        self._drive_traffic(t0, t1)
        self._refresh(t1, st)
        # optics that will not move until something changes: reads may skip steps
        quiet = steady or (not drifting and np.array_equal(a.temp_c, target))
        self._quiet_gen = self._gen if quiet else -1

    def _refresh(self, t_s: float, st: OpticalState | None = None, *, first: bool = False) -> None:
        """Re-evaluate link state and PRBS lock after a step or a change."""
        if st is None:
            st = self._optical_state()
        self._state = st
        self._cache.clear()
        if not self._links:
            return
        a = self.modules
        ma, mb = self._ma, self._mb
        admin = self._port_arrays()[0]
        bad = st.lol.any(axis=1) | ~admin
        n = len(a.gen_pattern)
        if a.gen_pattern.count(None) < n or a.chk_pattern.count(None) < n:  # PRBS: out of service
            pairs = zip(a.gen_pattern, a.chk_pattern, strict=True)
            bad |= np.array([g is not None or c is not None for g, c in pairs], dtype=bool)
        up = ~bad[ma] & ~bad[mb]
        changed = up != self._static_up
        for li in np.nonzero(changed | first)[0]:
            self._timeline.record(int(li), t_s, bool(up[li]))
            if not up[li] and not first:
                self.counts.down_count[[ma[li], mb[li]]] += 1
        self._static_up = up
        self.counts.relock(prbs_lock(a, st), self._checker_on())

    def _checker_on(self) -> np.ndarray:
        chk = self.modules.chk_pattern
        if chk.count(None) == len(chk):
            return np.zeros(len(chk), dtype=bool)
        return np.array([c is not None for c in chk], dtype=bool)

    def _observe_flags(
        self,
        t_s: float,
        st: OpticalState,
        extra_los: np.ndarray | None = None,
        levels: np.ndarray | None = None,
    ) -> None:
        """The modules sample their monitors: threshold flags and LOS/LOL conditions."""
        tx_on = self._port_arrays()[0]
        self.flags.observe(t_s, monitor_sample(self.modules, st, tx_on, extra_los, levels))

    def _steady_numbers(self, st: OpticalState) -> dict[str, Any]:
        """Numbers that depend on the optics ``st`` alone, kept while they hold (steady steps)."""
        if self._steady is None or self._steady[0] is not st:
            self._steady = (st, {})
        return self._steady[1]

    def _changed(self) -> None:
        """Call after changing state outside a step: link state follows at once."""
        self._bump()
        self._refresh(self._t_s)
        self._observe_flags(self._t_s, self._read_state())
        if getattr(self, "traffic", None) is not None:
            self._run_traffic(self._t_s, self._t_s)  # it sees the change at this instant

    def _drive_traffic(self, t0: float, t1: float) -> None:
        """Run the traffic model over [t0, t1], stopping at every flap edge in between.

        The traffic model reads ``link_up`` when an ``advance_to`` call starts, so it
        is run up to each change with the state that held before it; the next call
        then sees the new state at the exact instant (failover timing depends on it).
        """
        if getattr(self, "traffic", None) is None:
            return
        edges = self._timeline.edges_inside(t0, t1)
        prev = t0
        for t in [*sorted(edges), t1]:
            self._run_traffic(prev, t)
            prev = t

    def _run_traffic(self, view_t_s: float, to_s: float) -> None:
        was_busy, self._busy = self._busy, True
        self._view_t_s = view_t_s
        try:
            self.traffic.advance_to(to_s)
        except ModelStalled as exc:  # the traffic is at to_s: finish the step, then raise
            self._stall = exc
        finally:
            self._view_t_s = None
            self._busy = was_busy

    # --- lookups -------------------------------------------------------------------

    def _port(self, device: str, port: str) -> PortState:
        try:
            return self._ports[(device, port)]
        except KeyError:
            raise ModelError(f"no port {device}:{port} in the model") from None

    def _module(self, device: str, port: str) -> int:
        p = self._port(device, port)
        if p.module is None:
            raise ModelError(f"{device}:{port} has no transceiver")
        return p.module

    def module_index(self, device: str, port: str) -> int:
        """Index into ``modules`` arrays of the transceiver at ``device:port``."""
        return self._module(device, port)

    def resolve_link(self, target: str) -> int:
        """A link index from a link name (``a--b``) or either of its ``device:port`` ends."""
        if target in self._link_index:
            return self._link_index[target]
        if ":" in target:
            device, _, port = target.partition(":")
            p = self._ports.get((device, port))
            if p is not None and p.link is not None:
                return p.link
        raise FaultError(f"{target!r} is not a link or a cabled port of the testbed")

    def resolve_port(self, target: str) -> tuple[str, str]:
        device, sep, port = target.partition(":")
        if not sep or (device, port) not in self._ports:
            raise FaultError(f"{target!r} is not a 'device:port' of the testbed")
        return device, port

    def link(self, index: int) -> Link:
        return self._links[index]

    def ports(self, device: str) -> list[str]:
        if device not in self.testbed.devices and not any(d == device for d, _ in self._ports):
            raise ModelError(f"no device {device!r} in the model")
        return [p for d, p in self._ports if d == device]

    def _link_id(self, link_name: str) -> int:
        try:
            return self._link_index[link_name]
        except KeyError:
            raise ModelError(f"no link {link_name!r} in the model") from None

    # --- the state as read: cached per instant, a flapping link's dark periods applied ---

    def _cached(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _read_state(self, t_s: float | None = None) -> OpticalState:
        """The optical state at ``t_s`` (default: the model's time), flaps' dark periods applied."""
        dark = self._timeline.dark_links(self._t_s if t_s is None else t_s)
        return self._cached(f"read_state{dark}", lambda: self._flapped_state(dark))

    def _link_lit(self, li: int, t_s: float | None = None) -> bool:
        if t_s is None:
            t_s = self._t_s if self._view_t_s is None else self._view_t_s
        return not self._timeline.is_dark(li, t_s)

    def _flapped_state(self, dark: list[int]) -> OpticalState:
        st = self._state
        if not dark:
            return st
        link_of = self._link_of
        hit = np.isin(link_of, dark)[:, None] & self.modules.mask
        return replace(
            st,
            rx_avg_dbm=np.where(hit, DARK_DBM, st.rx_avg_dbm),
            ber=np.where(hit, 0.5, st.ber),
            los=st.los | hit,
            lol=st.lol | hit,
        )

    def _errors_last_second(self) -> np.ndarray:
        return self.rng.poisson(self._state.ber * self.modules.lane_rate_bps[:, None])

    @property
    def model_time_s(self) -> float:
        """Current model time without syncing (for fault effects, which run mid-sync)."""
        return self._t_s
