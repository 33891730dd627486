"""The traffic model's state: flows, routing with failover timing, the fluid engine, time.

``TrafficCore`` owns flows (RoCE queue pairs and TG streams), routing with
failover timing and the fluid congestion engine. Time only moves through
``advance``/``advance_to`` (the fabric calls them from its virtual clock).
Between events (a routing change, a flow starting or stopping, a watchdog poll)
the model either knows the answer in closed form (nothing queues), or simulates
a few milliseconds until the flows' rates settle and extrapolates the counters
from there, so a 72-hour run costs a handful of simulated milliseconds per event.

Work is bounded per virtual second (``STEP_BUDGET_PER_S``): a scenario that never
settles, or that something unsettles again and again, falls back to its last
settling run's rates instead of stepping every slice; and an advance that still
outlives its wall budget in a lab (``ADVANCE_WALL_BUDGET_S``) writes every thread's
stack and raises ``ModelStalled`` (a broken test) rather than hold the lock for good.

All public methods are serialised by one lock (``locked``): emulator threads may
read counters while the clock advances. ``TrafficModel`` (``model.py``) adds the
views (perftest, nccl-tests, counters) and the settings faults change.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar

import numpy as np

from labtest import stackdump
from labtest.emulation.model.faults import FaultError
from labtest.emulation.model.traffic import fluid_run, roce
from labtest.emulation.model.traffic.congestion import DeviceQos
from labtest.emulation.model.traffic.flows import (
    L1_OVERHEAD_B,
    ROCE_HEADERS_B,
    FiveTuple,
    Flow,
    PauseSource,
)
from labtest.emulation.model.traffic.fluid import FluidNet
from labtest.emulation.model.traffic.forwarding import Convergence, Routing
from labtest.emulation.model.traffic.tgflows import TgFlowMetrics, TgFlowSpec, metrics
from labtest.emulation.model.traffic.topology import (
    PRIORITIES,
    ROCE_DPORT,
    UDP,
    LinkView,
    Topology,
)
from labtest.errors import ModelStalled
from labtest.testbed.model import Testbed

SWITCH_MTU, HOST_MTU, TG_MTU = 9100, 9000, 16000
PROPAGATION_S_PER_M = 5e-9

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T", bound="TrafficCore")


_inside = threading.local()  # depth of locked calls on this thread


def locked(method: Callable[Concatenate[_T, _P], _R]) -> Callable[Concatenate[_T, _P], _R]:
    """Run the method under the model's lock (re-entrant: locked methods call each other).

    An outermost call first lets ``catch_up`` (the fabric's ``now_s``) bring the
    model to now, before taking this lock (the fabric's lock comes first), so a
    reader sees the model at now however long ago the fabric last stepped.
    """

    @functools.wraps(method)
    def wrapper(self: _T, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        depth = getattr(_inside, "depth", 0)
        if depth == 0 and self.catch_up is not None:
            self.catch_up()
        with self._lock:
            self.calls += 1  # see TrafficCore.calls
            _inside.depth = depth + 1
            try:
                return method(self, *args, **kwargs)
            finally:
                _inside.depth = depth

    return wrapper


class TrafficCore:
    """Flows, routing and the fluid engine over one testbed, in virtual time."""

    #: fine slices the engine may step per virtual second, on average: a settling run is
    #: 1,600 at most, so a few events a second settle in full (a lab at time_scale 10
    #: keeps pace with about a thousand a second on a busy core)
    STEP_BUDGET_PER_S = 2_000
    STEP_BURST = 32_000  # ... and this many at once: twenty settling runs back to back
    #: wall seconds one advance may take in a lab before it gives up (under the transports'
    #: 30 s command timeout, so the reader that waits gets the located error, not a timeout)
    ADVANCE_WALL_BUDGET_S = 20.0

    def __init__(self, testbed: Testbed, links: LinkView, rng: np.random.Generator) -> None:
        self.topo = topo = Topology(testbed)
        self.links = links
        self.rng = rng
        self._lock = threading.RLock()
        self.calls = 0  # locked calls made: the fabric's cache of quiet_until_s() keys on it
        self.catch_up: Callable[[], object] | None = None  # set by the fabric (see ``locked``)
        self.now_s = 0.0
        self.qos = {d: _qos(topo, d) for d in topo.roles}
        self.straggler: dict[int, float] = {}
        self.nic_speed_gbps = {
            d: s.nic_speed_gbps for d, s in topo.settings.items() if s.nic_speed_gbps
        }
        self.pcie_gbps = {d: s.pcie_gbps for d, s in topo.settings.items() if s.pcie_gbps}
        self.mtu = np.array([_default_mtu(topo, p.device) for p in topo.ports], dtype=float)
        self.flows: dict[int, Flow] = {}  # every flow ever started, for lookups by id
        #: the flows that may still send, hold queued bytes or set an event time; the rest
        #: are retired (never active again: stop times only fall, sent frames only grow),
        #: so a step's scans stay as long as what is running, not as the run's history
        self._live: dict[int, Flow] = {}
        self.pause_sources: dict[int, PauseSource] = {}
        self._ids = itertools.count(1)
        self._source_ids = itertools.count(1)
        self.convergence = Convergence(topo, self._physical())
        self.routing = Routing(topo)
        self.engine = FluidNet(topo)
        self._link_sig: tuple[Any, ...] = ()
        self._link_names = [lk.name for lk in topo.links]
        self._pause_sig: frozenset[int] = frozenset()
        self._rates: np.ndarray | None = None
        self._wd_polled_s = -math.inf
        self.steps = 0  # fine slices stepped so far (the work the step budget bounds)
        #: wall seconds an advance may take: no limit off a lab (a slow computation is not
        #: a hang); a lab's fabric, whose readers wait on it, sets ADVANCE_WALL_BUDGET_S
        self.wall_budget_s = math.inf
        self.coarse = 0  # settling runs the budget replaced by the last one's rates
        self._credit = float(self.STEP_BURST)  # slices the budget allows now
        self._settled: tuple[list[Flow], np.ndarray] | None = None  # last run's flows, rates
        self._sync_links(force=True)

    # --- time --------------------------------------------------------------

    @locked
    def advance(self, dt_s: float) -> None:
        if dt_s < 0:
            raise ValueError("time cannot run backwards")
        self.advance_to(self.now_s + dt_s)

    @locked
    def advance_to(self, t_s: float) -> None:
        """Run the model up to virtual time ``t_s`` (no-op if already there).

        Raises ``ModelStalled`` (the model at ``t_s`` all the same) when it took longer
        than ``wall_budget_s``."""
        self._sync_links()
        eng = self.engine
        began, steps = time.monotonic(), self.steps
        while self.now_s < t_s - 1e-12:
            if time.monotonic() - began > self.wall_budget_s:
                self._stalled(t_s, began, self.steps - steps)
            self._fire()
            horizon = min(t_s, self._next_event_s())
            if self._rates is None:
                rates = fluid_run.quiet_rates(eng, self.now_s)
                if rates is None:
                    rates = fluid_run.cached_rates(eng)
                if rates is None:
                    rates = self._settle(horizon)
                    if rates is None:
                        continue
                self._rates = rates
            t_next = min(
                horizon, self.now_s + fluid_run.completion_s(eng, self._rates), self._watchdog_due()
            )
            t_next = max(t_next, self.now_s)
            fluid_run.extrapolate(eng, self._rates, t_next - self.now_s, t_next)
            self._earn(t_next - self.now_s)
            self.now_s = t_next
        self._fire()
        eng.flush()

    def _settle(self, horizon_s: float) -> np.ndarray | None:
        """Step the engine towards steady rates (``fluid_run.simulate``) within the step
        budget; ``None`` when the horizon came first.

        Out of budget, the last settling run's rates stand while the flows are the same
        (only the watchdog changed something since), else a single chunk is stepped and its
        rates extrapolated: counters move along measured rates and the queues stay as they
        were (no byte made or lost). A scenario that never settles, or that a watchdog
        unsettles at every poll, then costs bounded work per virtual second, not every slice.
        """
        eng = self.engine
        chunk = max(round(fluid_run.CHUNK_S / eng.slice_s), 1)
        chunks = min(int(self._credit // chunk), fluid_run.MAX_CHUNKS)
        if chunks < 1 and self._settled is not None and self._settled[0] is eng.flows:
            self.coarse += 1
            return self._settled[1]
        chunks = max(chunks, 1)
        used, rates = fluid_run.simulate(
            eng, self.now_s, horizon_s - self.now_s, min_chunks=min(3, chunks), max_chunks=chunks
        )
        stepped = math.ceil(used / eng.slice_s - 1e-6)
        self.steps += stepped
        self._credit -= stepped
        self._earn(used)
        self.now_s += used
        if rates is not None:
            self._settled = (eng.flows, rates)
        return rates

    def _earn(self, dt_s: float) -> None:
        """Virtual time passed: the step budget grows (up to its burst)."""
        self._credit = min(self._credit + self.STEP_BUDGET_PER_S * dt_s, float(self.STEP_BURST))

    def _stalled(self, t_s: float, began: float, steps: int) -> NoReturn:
        """Out of wall time: write every thread's stack, skip to ``t_s`` with the counters
        standing still (nothing measured, nothing made up), and raise. The reader that
        waited is broken; the next one finds the model at now."""
        t0, eng = self.now_s, self.engine
        what = (
            f"traffic model: advance to {t_s:.6f} s (virtual) still at {t0:.6f} s after "
            f"{time.monotonic() - began:.1f} s wall (budget {self.wall_budget_s:g} s, "
            f"{steps} fine slices stepped)"
        )
        path = stackdump.dump(what)
        fluid_run.extrapolate(eng, np.zeros_like(eng.snapshot()), t_s - t0, t_s)
        self.now_s = t_s
        self._rates = None
        self._fire()
        eng.flush()
        raise ModelStalled(
            "emulated-lab",
            f"{what}; skipped the rest with counters frozen; every thread's stack: {path}",
        )

    def _next_event_s(self) -> float:
        now = self.now_s
        times = [self.convergence.next_event_s()]
        for f in self._live.values():
            times += [t for t in (f.start_s, f.stop_s) if t > now + 1e-12]
        for s in self.pause_sources.values():
            times += [t for t in (s.start_s, s.stop_s) if t > now + 1e-12]
        if self._rates is not None:
            times.append(self._watchdog_due())
        return min(times)

    def _watchdog_due(self) -> float:
        due = fluid_run.next_watchdog_event_s(self.engine, self.now_s)
        if due <= self._wd_polled_s + 1e-12:
            due = self._wd_polled_s + self.engine.wd_poll_s
        return due

    def _fire(self) -> None:
        """Apply everything due now: routing changes, flow and pause edges, watchdog polls."""
        now, eng = self.now_s, self.engine
        eng.flush()
        self._retire()
        for i, f in enumerate(eng.flows):  # fixed-size flows that sent their last frame
            if math.isfinite(eng.f_left[i]) and eng.f_left[i] <= 1.0:  # under a byte to go
                f.tx_frames = max(f.tx_frames, f.max_frames)
        if self.convergence.fire(now):
            self._reroute()
        sending = frozenset(f.id for f in self._live.values() if f.path and eng.sending(f, now))
        building = frozenset(f.id for f, on in zip(eng.flows, eng.f_on, strict=True) if on)
        if sending != building:
            self._reroute()
        active = frozenset(k for k, s in self.pause_sources.items() if s.active(now))
        if active != self._pause_sig:
            self._pause_sig = active
            eng.set_pause_sources(list(self.pause_sources.values()), now)
            self._rates = None
        if self._rates is not None and self._watchdog_due() <= now + 1e-12:
            self._wd_polled_s = now
            if fluid_run.watchdog_poll(eng, now):
                self._rates = None

    # --- links, configuration, routes ---------------------------------------

    def quiet_until_s(self) -> float:
        """Until when nothing a reader sees changes here without a call (``now_s``: busy).

        Busy while a flow or a pause source may still send or a route change is
        pending; the fabric answers reads that need no integration without
        running this model only before that time.
        """
        now = self.now_s
        if any(self.engine.f_on):
            return now
        until = self.convergence.next_event_s()
        for f in self._live.values():
            if not f.done and f.stop_s > now:
                if f.start_s <= now:
                    return now
                until = min(until, f.start_s)
        for s in self.pause_sources.values():
            if s.stop_s > now:
                if s.start_s <= now:
                    return now
                until = min(until, s.start_s)
        return until

    def _physical(self) -> np.ndarray:
        return np.array([self.links.link_up(lk.name) for lk in self.topo.links], dtype=bool)

    def _sync_links(self, force: bool = False) -> None:
        """Pick up link state from the core's view; reconfigure when anything changed."""
        names = self._link_names
        bulk = getattr(self.links, "link_states", None)  # one call instead of 3 per link
        if bulk is not None:
            sig = tuple(bulk(names))
        else:
            sig = tuple(
                (
                    self.links.link_up(n),
                    self.links.link_speed_gbps(n),
                    self.links.link_rate_fraction(n),
                )
                for n in names
            )
        if sig == self._link_sig and not force:
            return
        self._link_sig = sig
        self.convergence.observe(self.now_s, np.array([s[0] for s in sig], dtype=bool))
        self._apply()

    def _apply(self) -> None:
        """Push capacities, QoS and MTUs into the engine and recompute every path."""
        topo = self.topo
        P = len(topo.ports)
        speed, frac, down, cable = np.zeros(P), np.ones(P), np.zeros(P, bool), np.zeros(P)
        for lk in topo.links:
            up, gbps, fraction = self._link_sig[lk.index]
            for p in lk.ports:
                dev = topo.ports[p].device
                peer_dev = topo.peer_device(p)
                nic = min(
                    self.nic_speed_gbps.get(dev, math.inf),
                    self.nic_speed_gbps.get(peer_dev, math.inf),
                )
                speed[p] = min(gbps, nic)
                frac[p] = fraction * self.straggler.get(lk.index, 1.0)
                down[p] = not up
                cable[p] = lk.length_m
        self.engine.mtu = self.mtu.copy()
        self.engine.configure(speed, frac, down, self.qos, cable)
        self.engine.set_pause_sources(list(self.pause_sources.values()), self.now_s)
        self._reroute()

    def _reroute(self) -> None:
        self.routing.set_routed(self.convergence.routed)
        in_engine = {f.id for f in self.engine.flows}
        for f in self._live.values():
            if f.meta.get("pause") or (self._finished(f) and f.id not in in_engine):
                continue
            old = f.path
            path = self.routing.path(f.src, f.dst, f.five_tuple)
            f.meta["noroute"] = path is None
            f.path = path or [f.src]
            f.base_latency_s = self._base_latency_s(f.path, f.frame_bytes)
            if old and old != f.path:
                f.meta["reroutes"] = int(f.meta.get("reroutes", 0)) + 1
        self._host_shares()
        self.engine.build(list(self._live.values()), self.now_s)
        self._rates = None

    def _add_flow(self, f: Flow) -> None:
        self.flows[f.id] = f
        self._live[f.id] = f

    def _retire(self) -> None:
        """Drop from the live set every flow that can no longer matter to a step: started,
        past its stop (or done with no stop), and out of the engine (no queued bytes)."""
        now = self.now_s
        in_engine = {f.id for f in self.engine.flows}
        dead = [
            k
            for k, f in self._live.items()
            if k not in in_engine
            and f.start_s <= now
            and (f.stop_s <= now or (f.done and math.isinf(f.stop_s)))
        ]
        for k in dead:
            del self._live[k]

    def _finished(self, f: Flow) -> bool:
        return f.stop_s <= self.now_s or f.done

    def _base_latency_s(self, path: list[int], frame_b: int) -> float:
        topo, eng = self.topo, self.engine
        t = roce.NIC_BASE_LATENCY_S
        for h, p in enumerate(path):
            if h > 0:
                t += topo.settings[topo.ports[p].device].switch_latency_us * 1e-6
            speed_bps = max(eng.speed_gbps[p], 1.0) * 1e9
            t += (frame_b + L1_OVERHEAD_B) * 8 / speed_bps
            t += topo.links[topo.ports[p].link].length_m * PROPAGATION_S_PER_M
        return t

    def _host_shares(self) -> None:
        """RoCE QPs share their NIC's line rate and PCIe (max-min): their ceiling.

        DCQCN QPs also get their max-min share of the whole fabric, where the
        engine starts their rate (the converged state; see ``DcqcnParams``).
        """
        qps = [f for f in self._live.values() if f.kind == "roce" and f.active(self.now_s)]
        if not qps:
            return
        goodput = self._max_min(qps, fabric=False)
        for f, g in zip(qps, goodput, strict=True):
            f.rate_bps = max(g / f.efficiency, 1.0)
        fair = self._max_min_with_fixed(qps, self._tg_load_bps(), broken_zero=False)
        for f, g in zip(qps, fair, strict=True):
            f.meta["fair_bps"] = g / f.efficiency

    def _max_min(self, flows: list[Flow], fabric: bool, broken_zero: bool = True) -> np.ndarray:
        """Max-min goodput (bit/s) of ``flows``: NICs and PCIe, plus every fabric port if asked."""
        topo, eng = self.topo, self.engine
        rows: list[tuple[dict[int, float], float]] = []
        ports: dict[int, dict[int, float]] = {}
        for i, f in enumerate(flows):
            hops = (f.path or [f.src]) if fabric else [f.src]
            for p in hops:
                ports.setdefault(p, {})[i] = 1.0 / f.efficiency
        for p, use in ports.items():
            rows.append((use, float(eng.cap[p] * 8)))
        for host, gbps in self.pcie_gbps.items():
            for side in ("src", "dst"):
                use = {
                    i: 1.0
                    for i, f in enumerate(flows)
                    if topo.ports[getattr(f, side)].device == host
                }
                if use:
                    rows.append((use, gbps * 1e9))
        coeff = np.zeros((len(rows), len(flows)))
        for r, (use, _) in enumerate(rows):
            for i, a in use.items():
                coeff[r, i] = a
        capacity = np.array([c for _, c in rows])
        upper = np.array([float(f.meta.get("cap_bps", math.inf)) for f in flows])
        if fabric and broken_zero:
            pause = self.engine.effective_pause()
            upper = np.where([self._path_broken(f, pause) for f in flows], 0.0, upper)
        return roce.max_min(coeff, capacity, upper)

    def _path_broken(self, f: Flow, pause: np.ndarray | None = None) -> bool:
        """No route, a dead or stuck hop, or a frame too big for a port on the way."""
        if f.meta.get("noroute") or not f.path:
            return True
        eng = self.engine
        ip_len = f.frame_bytes - 18
        pause = eng.effective_pause() if pause is None else pause
        for h, p in enumerate(f.path):
            if eng.down[p] or pause[p * PRIORITIES + f.priority] >= 1.0:
                return True
            if h > 0 and (
                ip_len > self.mtu[p] or ip_len > self.mtu[self.topo.ports[f.path[h - 1]].peer]
            ):
                return True
        return ip_len > self.mtu[f.dst]

    def _tg_load_bps(self) -> np.ndarray:
        load = np.zeros(len(self.topo.ports))
        for f in self._live.values():
            if f.kind == "tg" and f.active(self.now_s) and not f.meta.get("pause"):
                for p in f.path or []:
                    load[p] += f.rate_bps
        return load

    def _max_min_with_fixed(
        self, flows: list[Flow], fixed_bps: np.ndarray, broken_zero: bool = True
    ) -> np.ndarray:
        """Max-min over the fabric after TG streams (not congestion controlled) took their rate."""
        saved = self.engine.cap.copy()
        self.engine.cap = np.maximum(saved - fixed_bps / 8, 0.0)
        try:
            return self._max_min(flows, fabric=True, broken_zero=broken_zero)
        finally:
            self.engine.cap = saved

    # --- flows -------------------------------------------------------------

    def _new_flow(self, **kw: Any) -> Flow:
        f = Flow(id=next(self._ids), **kw)
        f.path = self.routing.path(f.src, f.dst, f.five_tuple)
        f.meta["noroute"] = f.path is None
        f.path = f.path or [f.src]
        f.base_latency_s = self._base_latency_s(f.path, f.frame_bytes)
        return f

    def _roce_qp(
        self,
        src: int,
        dst: int,
        msg_size_b: int,
        priority: int,
        start_s: float,
        stop_s: float,
        name: str,
        qp: tuple[int, int] | None = None,
    ) -> Flow:
        """One queue pair's flow; ``qp`` (source and destination QP numbers, the RoCEv2
        source port's entropy) pins its ECMP route, else they are drawn."""
        topo = self.topo
        mtu = roce.roce_mtu(min(self.mtu[src], self.mtu[dst]))
        payload = roce.packet_payload_b(msg_size_b, mtu)
        src_qp, dst_qp = qp if qp is not None else self.draw_qp()
        sport = 0xC000 | ((src_qp ^ dst_qp) & 0x3FFF)  # RoCEv2 entropy from the QP pair
        cc = self.qos[topo.ports[src].device].ecn and topo.settings[topo.ports[src].device].dcqcn
        f = self._new_flow(
            name=name,
            kind="roce",
            src=src,
            dst=dst,
            five_tuple=FiveTuple(topo.ip(src), topo.ip(dst), UDP, sport, ROCE_DPORT, dst_qp),
            priority=priority,
            frame_bytes=round(payload) + ROCE_HEADERS_B,
            payload_bytes=round(payload),
            rate_bps=self.engine.speed_gbps[src] * 1e9,
            ect=cc,
            ecn_bits=2 if cc else 0,
            dcqcn=cc,
            start_s=start_s,
            stop_s=stop_s,
            np_enabled=self.qos[topo.ports[dst].device].ecn,
        )
        f.meta["cap_bps"] = roce.QP_MSG_RATE_PPS * msg_size_b * 8
        f.meta["msg_size_b"] = msg_size_b
        f.meta["roce_mtu_b"] = mtu
        return f

    def draw_qp(self) -> tuple[int, int]:
        """A queue pair's source and destination QP numbers (the model's random stream,
        under its lock: drivers' threads draw them too)."""
        with self._lock:
            src_qp, dst_qp = (int(x) for x in self.rng.integers(0x100, 1 << 24, 2))
        return src_qp, dst_qp

    @locked
    def start_roce(
        self,
        src: str,
        dst: str,
        qps: int = 1,
        msg_size_b: int = 65536,
        priority: int = 3,
        duration_s: float | None = None,
    ) -> list[int]:
        """Start ``qps`` RoCE queue pairs from host ``src`` to ``dst``; returns flow ids."""
        s, d = self._host_port(src), self._host_port(dst)
        stop = self.now_s + duration_s if duration_s else math.inf
        ids = []
        for q in range(qps):
            f = self._roce_qp(s, d, msg_size_b, priority, self.now_s, stop, f"{src}->{dst}#{q}")
            self._add_flow(f)
            ids.append(f.id)
        self._reroute()
        return ids

    @locked
    def start_tg_flow(self, spec: TgFlowSpec) -> int:
        """Start an OTG-shaped flow now; returns its flow id."""
        return self.start_tg_flows([spec])[0]

    @locked
    def start_tg_flows(self, specs: Sequence[TgFlowSpec]) -> list[int]:
        """Start OTG-shaped flows at this one instant, routed together: one by one, each
        start rerouted every live flow (an ``iperf3 -P 8`` beside 60 flows: 8 reroutes of
        all of them, a fifth of a matrix row's CPU); returns their flow ids."""
        names = [spec.name for spec in specs]
        if len(set(names)) < len(names):
            raise FaultError(f"TG flows named twice in one start: {sorted(names)}")
        wanted = set(names)
        for f in [f for f in self.flows.values() if f.kind == "tg" and f.name in wanted]:
            if not self._finished(f):
                raise FaultError(f"TG flow {f.name!r} is still running")
            self._forget(f.id)  # a new run of a flow replaces its last results
        ids = [self._start_tg(spec) for spec in specs]
        if any(spec.pfc_pause is None for spec in specs):  # a pause flow takes no route
            self._reroute()
        return ids

    def _start_tg(self, spec: TgFlowSpec) -> int:
        """One TG flow added (a pause flow fired); the caller reroutes."""
        topo = self.topo
        tx = topo.resolve_endpoint(spec.tx_port)
        line = float(self.engine.speed_gbps[tx])
        fps = spec.frames_per_s(line)
        stop = self.now_s + spec.duration.fixed_seconds if spec.duration.fixed_seconds else math.inf
        max_frames = float(spec.duration.fixed_packets or math.inf)
        wire_b = spec.frame_size_b + L1_OVERHEAD_B
        if spec.pfc_pause is not None:
            return self._start_pause_flow(spec, tx, fps, stop, max_frames)
        assert spec.rx_port is not None
        rx = topo.resolve_endpoint(spec.rx_port)
        dst_qp = spec.rocev2.dst_qp if spec.rocev2 else 0
        dport = ROCE_DPORT if spec.rocev2 else spec.dst_port
        f = self._new_flow(
            name=spec.name,
            kind="tg",
            src=tx,
            dst=rx,
            five_tuple=FiveTuple(topo.ip(tx), topo.ip(rx), UDP, spec.src_port, dport, dst_qp),
            priority=spec.traffic_class,
            frame_bytes=spec.frame_size_b,
            payload_bytes=max(spec.frame_size_b - 46, 1),
            rate_bps=fps * wire_b * 8,
            ect=spec.ecn in (1, 2),
            ecn_bits=spec.ecn,
            start_s=self.now_s,
            stop_s=stop,
            max_frames=max_frames,
            np_enabled=False,
        )
        self._add_flow(f)
        return f.id

    def _start_pause_flow(
        self, spec: TgFlowSpec, tx: int, fps: float, stop: float, max_frames: float
    ) -> int:
        assert spec.pfc_pause is not None
        speed = max(float(self.engine.speed_gbps[tx]), 1.0)
        if math.isfinite(max_frames):
            stop = min(stop, self.now_s + max_frames / fps)
        pause_s = spec.pfc_pause.quanta * 512 / (speed * 1e9)
        f = Flow(
            id=next(self._ids),
            name=spec.name,
            kind="tg",
            src=tx,
            dst=tx,
            five_tuple=FiveTuple(0, 0, 0, 0, 0),
            priority=0,
            frame_bytes=64,
            payload_bytes=0,
            rate_bps=fps * (64 + L1_OVERHEAD_B) * 8,
            start_s=self.now_s,
            stop_s=stop,
            max_frames=max_frames,
            np_enabled=False,
        )
        f.meta["pause"] = True
        self._add_flow(f)
        src = PauseSource(
            port=self.topo.ports[tx].peer,
            priorities=tuple(spec.pfc_pause.priorities),
            fraction=min(1.0, fps * pause_s),
            frames_per_s=fps,
            start_s=self.now_s,
            stop_s=stop,
            flow_id=f.id,
        )
        self.pause_sources[next(self._source_ids)] = src
        self._fire()
        return f.id

    @locked
    def stop_flow(self, flow_id: int) -> None:
        f = self._flow(flow_id)
        f.stop_s = min(f.stop_s, self.now_s)
        for s in self.pause_sources.values():
            if s.flow_id == flow_id:
                s.stop_s = min(s.stop_s, self.now_s)
        self._fire()

    @locked
    def remove_flow(self, flow_id: int) -> None:
        """Stop a flow and forget it (its counts stay in the port counters)."""
        self.remove_flows([flow_id])

    @locked
    def remove_flows(self, flow_ids: Sequence[int]) -> None:
        """Stop flows and forget them, rerouting the rest once."""
        if not flow_ids:
            return
        for flow_id in flow_ids:
            self._flow(flow_id)
        for flow_id in flow_ids:
            self._forget(flow_id)
        self._reroute()

    def _forget(self, flow_id: int) -> None:
        self.flows.pop(flow_id, None)
        self._live.pop(flow_id, None)
        for key in [k for k, s in self.pause_sources.items() if s.flow_id == flow_id]:
            self.pause_sources[key].stop_s = min(self.pause_sources[key].stop_s, self.now_s)
        self._fire()
        for key in [k for k, s in self.pause_sources.items() if s.flow_id == flow_id]:
            del self.pause_sources[key]
        self._pause_sig = frozenset(k for k in self._pause_sig if k in self.pause_sources)

    @locked
    def stop_all(self) -> None:
        for fid in list(self._live):  # a retired flow is stopped already
            self.stop_flow(fid)

    @locked
    def flow(self, flow_id: int) -> Flow:
        return self._flow(flow_id)

    def _flow(self, flow_id: int) -> Flow:
        try:
            return self.flows[flow_id]
        except KeyError:
            raise FaultError(f"no flow {flow_id}") from None

    @locked
    def tg_metrics(self, name: str) -> TgFlowMetrics:
        return self.tg_metrics_of([name])[0]

    @locked
    def tg_metrics_of(self, names: Sequence[str]) -> list[TgFlowMetrics]:
        """Each named TG flow's metrics, the flows looked up once for all of them."""
        tg = {f.name: f for f in self.flows.values() if f.kind == "tg"}
        missing = [n for n in names if n not in tg]
        if missing:
            raise FaultError(f"no TG flow {missing[0]!r}")
        return [self._tg_metrics(tg[n]) for n in names]

    def _tg_metrics(self, f: Flow) -> TgFlowMetrics:
        if f.meta.get("pause"):
            end = min(self.now_s, f.stop_s)
            fps = f.rate_bps / (f.wire_bytes * 8)
            return metrics(f, self.now_s, pause_frames_tx=max(end - f.start_s, 0.0) * fps)
        return metrics(f, self.now_s)

    def _host_port(self, name: str) -> int:
        p = self.topo.resolve_endpoint(name)
        if not self.topo.is_endpoint(self.topo.ports[p].device):
            raise FaultError(f"{name!r} is not a host or TG port")
        return p


def _qos(topo: Topology, device: str) -> DeviceQos:
    s = topo.settings[device]
    return DeviceQos(
        pfc=set(s.pfc_priorities) if topo.is_switch(device) else set(),
        ecn=s.ecn,
        ecn_priorities=set(s.pfc_priorities),
        pfcwd=s.pfcwd,
        wd_detect_s=s.pfcwd_detect_ms / 1000,
        wd_restore_s=s.pfcwd_restore_ms / 1000,
        wd_poll_s=s.pfcwd_poll_ms / 1000,
        wd_action=s.pfcwd_action,
        honor_pfc=s.honor_pfc,
    )


def _default_mtu(topo: Topology, device: str) -> int:
    s = topo.settings[device]
    if s.mtu is not None:
        return s.mtu
    if topo.is_switch(device):
        return SWITCH_MTU
    return HOST_MTU if topo.is_host(device) else TG_MTU
