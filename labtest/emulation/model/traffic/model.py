"""The traffic half of the fabric model: what the core's ``Fabric`` holds as ``fabric.traffic``.

``TrafficModel`` owns flows (RoCE queue pairs and TG streams), routing with
failover timing, the fluid congestion engine, and the perftest / nccl-tests /
OTG-shaped views of them. Time only moves through ``advance``/``advance_to``
(the core calls them from its virtual clock). Between events (a routing
change, a flow starting or stopping, a watchdog poll) the model either knows
the answer in closed form (nothing queues), or simulates a few milliseconds
until the flows' rates settle and extrapolates the counters from there, so a
72-hour run costs a handful of simulated milliseconds per event.

All public methods are serialised by one lock: emulator threads may read
counters while the clock advances.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from labtest.emulation.model.faults import FaultError
from labtest.emulation.model.traffic import collectives, roce
from labtest.emulation.model.traffic.congestion import DeviceQos
from labtest.emulation.model.traffic.flows import (
    L1_OVERHEAD_B,
    ROCE_HEADERS_B,
    FiveTuple,
    Flow,
    PauseSource,
)
from labtest.emulation.model.traffic.fluid import FluidNet
from labtest.emulation.model.traffic.forwarding import HASH_FIELDS, Convergence, HashConfig, Routing
from labtest.emulation.model.traffic.records import (
    EndpointTraffic,
    PfcwdQueueStats,
    QueueTraffic,
    RoceCounters,
)
from labtest.emulation.model.traffic.tgflows import TgFlowMetrics, TgFlowSpec, metrics
from labtest.emulation.model.traffic.topology import (
    PRIORITIES,
    ROCE_DPORT,
    UDP,
    LinkView,
    Topology,
)
from labtest.testbed.model import Testbed

Undo = Callable[[], None]
SWITCH_MTU, HOST_MTU, TG_MTU = 9100, 9000, 16000
PROPAGATION_S_PER_M = 5e-9


class BrokenRing(FaultError):
    """A collective's ring has a hop with no usable path (a fault in the fabric): what the
    hosts see as NCCL's completion error, not an emulator bug."""


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: TrafficModel, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


class TrafficModel:
    """Forwarding, congestion, RoCE, collectives and TG flows over one testbed."""

    def __init__(self, testbed: Testbed, links: LinkView, rng: np.random.Generator) -> None:
        self.topo = topo = Topology(testbed)
        self.links = links
        self.rng = rng
        self._lock = threading.RLock()
        self.now_s = 0.0
        self.qos = {d: _qos(topo, d) for d in topo.roles}
        self.straggler: dict[int, float] = {}
        self.nic_speed_gbps = {
            d: s.nic_speed_gbps for d, s in topo.settings.items() if s.nic_speed_gbps
        }
        self.pcie_gbps = {d: s.pcie_gbps for d, s in topo.settings.items() if s.pcie_gbps}
        self.mtu = np.array([_default_mtu(topo, p.device) for p in topo.ports], dtype=float)
        self.flows: dict[int, Flow] = {}
        self.pause_sources: dict[int, PauseSource] = {}
        self._ids = itertools.count(1)
        self._source_ids = itertools.count(1)
        self.convergence = Convergence(topo, self._physical())
        self.routing = Routing(topo)
        self.engine = FluidNet(topo)
        self._link_sig: tuple[Any, ...] = ()
        self._pause_sig: frozenset[int] = frozenset()
        self._rates: np.ndarray | None = None
        self._wd_polled_s = -math.inf
        self._sync_links(force=True)

    # --- time --------------------------------------------------------------

    @_locked
    def advance(self, dt_s: float) -> None:
        if dt_s < 0:
            raise ValueError("time cannot run backwards")
        self.advance_to(self.now_s + dt_s)

    @_locked
    def advance_to(self, t_s: float) -> None:
        """Run the model up to virtual time ``t_s`` (no-op if already there)."""
        self._sync_links()
        eng = self.engine
        while self.now_s < t_s - 1e-12:
            self._fire()
            horizon = min(t_s, self._next_event_s())
            if self._rates is None:
                rates = eng.quiet_rates(self.now_s)
                if rates is None:
                    rates = eng.cached_rates()
                if rates is None:
                    used, rates = eng.simulate(self.now_s, horizon - self.now_s)
                    self.now_s += used
                    if rates is None:
                        continue
                self._rates = rates
            t_next = min(horizon, self.now_s + eng.completion_s(self._rates), self._watchdog_due())
            t_next = max(t_next, self.now_s)
            eng.extrapolate(self._rates, t_next - self.now_s, t_next)
            self.now_s = t_next
        self._fire()
        eng.flush()

    def _next_event_s(self) -> float:
        now = self.now_s
        times = [self.convergence.next_event_s()]
        for f in self.flows.values():
            times += [t for t in (f.start_s, f.stop_s) if t > now + 1e-12]
        for s in self.pause_sources.values():
            times += [t for t in (s.start_s, s.stop_s) if t > now + 1e-12]
        if self._rates is not None:
            times.append(self._watchdog_due())
        return min(times)

    def _watchdog_due(self) -> float:
        due = self.engine.next_watchdog_event_s(self.now_s)
        if due <= self._wd_polled_s + 1e-12:
            due = self._wd_polled_s + self.engine.wd_poll_s
        return due

    def _fire(self) -> None:
        """Apply everything due now: routing changes, flow and pause edges, watchdog polls."""
        now, eng = self.now_s, self.engine
        eng.flush()
        for i, f in enumerate(eng.flows):  # fixed-size flows that sent their last frame
            if math.isfinite(eng.f_left[i]) and eng.f_left[i] <= 1.0:  # under a byte to go
                f.tx_frames = max(f.tx_frames, f.max_frames)
        if self.convergence.fire(now):
            self._reroute()
        sending = frozenset(f.id for f in self.flows.values() if f.path and eng.sending(f, now))
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
            if eng.watchdog_poll(now):
                self._rates = None

    # --- links, configuration, routes ---------------------------------------

    def _physical(self) -> np.ndarray:
        return np.array([self.links.link_up(lk.name) for lk in self.topo.links], dtype=bool)

    def _sync_links(self, force: bool = False) -> None:
        """Pick up link state from the core's view; reconfigure when anything changed."""
        names = [lk.name for lk in self.topo.links]
        sig = tuple(
            (self.links.link_up(n), self.links.link_speed_gbps(n), self.links.link_rate_fraction(n))
            for n in names
        )
        if sig == self._link_sig and not force:
            return
        self._link_sig = sig
        self.convergence.observe(self.now_s, self._physical())
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
        for f in self.flows.values():
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
        self.engine.build(list(self.flows.values()), self.now_s)
        self._rates = None

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
        qps = [f for f in self.flows.values() if f.kind == "roce" and f.active(self.now_s)]
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
    ) -> Flow:
        topo = self.topo
        mtu = roce.roce_mtu(min(self.mtu[src], self.mtu[dst]))
        payload = roce.packet_payload_b(msg_size_b, mtu)
        src_qp, dst_qp = (int(x) for x in self.rng.integers(0x100, 1 << 24, 2))
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

    @_locked
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
            self.flows[f.id] = f
            ids.append(f.id)
        self._reroute()
        return ids

    @_locked
    def start_tg_flow(self, spec: TgFlowSpec) -> int:
        """Start an OTG-shaped flow now; returns its flow id."""
        topo = self.topo
        tx = topo.resolve_endpoint(spec.tx_port)
        for f in [f for f in self.flows.values() if f.name == spec.name and f.kind == "tg"]:
            if not self._finished(f):
                raise FaultError(f"TG flow {spec.name!r} is still running")
            self._forget(f.id)  # a new run of a flow replaces its last results
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
        self.flows[f.id] = f
        self._reroute()
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
        self.flows[f.id] = f
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

    @_locked
    def stop_flow(self, flow_id: int) -> None:
        f = self._flow(flow_id)
        f.stop_s = min(f.stop_s, self.now_s)
        for s in self.pause_sources.values():
            if s.flow_id == flow_id:
                s.stop_s = min(s.stop_s, self.now_s)
        self._fire()

    @_locked
    def remove_flow(self, flow_id: int) -> None:
        """Stop a flow and forget it (its counts stay in the port counters)."""
        self._flow(flow_id)
        self._forget(flow_id)
        self._reroute()

    def _forget(self, flow_id: int) -> None:
        self.flows.pop(flow_id, None)
        for key in [k for k, s in self.pause_sources.items() if s.flow_id == flow_id]:
            self.pause_sources[key].stop_s = min(self.pause_sources[key].stop_s, self.now_s)
        self._fire()
        for key in [k for k, s in self.pause_sources.items() if s.flow_id == flow_id]:
            del self.pause_sources[key]
        self._pause_sig = frozenset(k for k in self._pause_sig if k in self.pause_sources)

    @_locked
    def stop_all(self) -> None:
        for fid in list(self.flows):
            self.stop_flow(fid)

    @_locked
    def flow(self, flow_id: int) -> Flow:
        return self._flow(flow_id)

    def _flow(self, flow_id: int) -> Flow:
        try:
            return self.flows[flow_id]
        except KeyError:
            raise FaultError(f"no flow {flow_id}") from None

    @_locked
    def tg_metrics(self, name: str) -> TgFlowMetrics:
        for f in self.flows.values():
            if f.name == name and f.kind == "tg":
                if f.meta.get("pause"):
                    end = min(self.now_s, f.stop_s)
                    fps = f.rate_bps / (f.wire_bytes * 8)
                    return metrics(f, self.now_s, pause_frames_tx=max(end - f.start_s, 0.0) * fps)
                return metrics(f, self.now_s)
        raise FaultError(f"no TG flow {name!r}")

    def _host_port(self, name: str) -> int:
        p = self.topo.resolve_endpoint(name)
        if not self.topo.is_endpoint(self.topo.ports[p].device):
            raise FaultError(f"{name!r} is not a host or TG port")
        return p

    # --- forwarding views ----------------------------------------------------

    @_locked
    def path(
        self,
        src: str,
        dst: str,
        sport: int = 49152,
        dst_qp: int = 0,
        returning: Iterable[str] = (),
    ) -> list[str]:
        """Egress ports (``dev:port``) a RoCE packet with this entropy takes, NIC first;
        with ``returning`` links, the path once those are routed again."""
        s, d = self._host_port(src), self._host_port(dst)
        t = FiveTuple(self.topo.ip(s), self.topo.ip(d), UDP, sport, ROCE_DPORT, dst_qp)
        back = np.zeros(len(self.topo.links), dtype=bool)
        for link in returning:
            back[self.topo.resolve_link(link)] = True
        hops = self.routing.path_when_routed(s, d, t, back)
        return [self.topo.ports[p].endpoint for p in hops or []]

    @_locked
    def flow_path(self, flow_id: int) -> list[str]:
        f = self._flow(flow_id)
        if f.meta.get("noroute") or not f.path:
            return []
        return [self.topo.ports[p].endpoint for p in f.path]

    @_locked
    def port_loads_gbps(self) -> dict[str, float]:
        """Offered wire load per egress port from the flows sending now."""
        eng = self.engine
        load = np.zeros(len(self.topo.ports))
        rate = eng.rc * eng.f_on * 8 / 1e9
        for i, f in enumerate(eng.flows):
            if f.meta.get("noroute"):
                continue
            for p in f.path or []:
                load[p] += rate[i]
                if eng.down[p]:
                    break
        return {p.endpoint: float(load[p.index]) for p in self.topo.ports}

    @_locked
    def link_routed(self, link: str) -> bool:
        return bool(self.convergence.routed[self.topo.resolve_link(link)])

    # --- perftest and nccl-tests ---------------------------------------------

    @_locked
    def run_bandwidth(
        self,
        pairs: Iterable[tuple[str, str]],
        msg_size_b: int = 65536,
        qps: int = 1,
        duration_s: float = 5.0,
        bidirectional: bool = False,
        start: bool = True,
    ) -> list[roce.BandwidthResult]:
        """ib_write_bw between each (client, server): max-min shares of the fabric as it is now.

        With ``start`` the queue pairs are also started for ``duration_s`` so the
        switch and NIC counters move as the clock advances.
        """
        pairs = list(pairs)
        qp_flows: list[tuple[int, Flow]] = []
        for k, (client, server) in enumerate(pairs):
            c, s = self._host_port(client), self._host_port(server)
            dirs = [(c, s), (s, c)] if bidirectional else [(c, s)]
            for a, b in dirs:
                for q in range(qps):
                    name = f"perftest:{client}->{server}#{q}"
                    stop = self.now_s + duration_s
                    qp_flows.append((k, self._roce_qp(a, b, msg_size_b, 3, self.now_s, stop, name)))
        others = [f for f in self.flows.values() if f.kind == "roce" and f.active(self.now_s)]
        flows = [f for _, f in qp_flows] + others
        goodput = self._max_min_with_fixed(flows, self._tg_load_bps())[: len(qp_flows)]
        results = []
        for k, (client, server) in enumerate(pairs):
            mine = [(f, g) for (kk, f), g in zip(qp_flows, goodput, strict=True) if kk == k]
            bw = float(sum(g for _, g in mine)) / 1e9
            broken = [f for f, _ in mine if self._path_broken(f)]
            mtu = int(mine[0][0].meta["roce_mtu_b"])
            rate = bw * 1e9 / (msg_size_b * 8)
            results.append(
                roce.BandwidthResult(
                    client=client,
                    server=server,
                    msg_size_b=msg_size_b,
                    qps=qps,
                    duration_s=duration_s,
                    bidirectional=bidirectional,
                    bw_avg_gbps=bw,
                    bw_peak_gbps=bw,
                    msg_rate_mpps=rate / 1e6,
                    iterations=int(rate * duration_s),
                    mtu_b=mtu,
                    error="transport retry counter exceeded" if broken else None,
                )
            )
        if start:
            for _, f in qp_flows:
                self.flows[f.id] = f
            self._reroute()
        return results

    def _tg_load_bps(self) -> np.ndarray:
        load = np.zeros(len(self.topo.ports))
        for f in self.flows.values():
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

    @_locked
    def run_latency(
        self, client: str, server: str, size_b: int = 2, iterations: int = 1000
    ) -> roce.LatencyResult:
        """ib_write_lat: one-way latency samples over the current path: the fixed part (NIC,
        switches, serialisation, propagation) with its jitter, plus the queueing delay each
        sample meets in the egress queues on the way, drawn from the queues' settled trace
        (``FluidNet.queueing_delay_samples``): idle, nothing; under load, what the queues
        hold and how they move."""
        c, s = self._host_port(client), self._host_port(server)
        f = self._roce_qp(c, s, size_b, 3, self.now_s, self.now_s, "perftest-lat")
        if self._path_broken(f, self.engine.sustained_pause()):
            nan = float("nan")
            return roce.LatencyResult(
                client,
                server,
                size_b,
                0,
                nan,
                nan,
                nan,
                nan,
                nan,
                nan,
                nan,
                error="transport retry counter exceeded",
            )
        assert f.path is not None
        samples = roce.latency_samples(f.base_latency_s, iterations, self.rng)
        samples += self.engine.queueing_delay_samples(f.path, iterations, self.rng)
        return roce.latency_result(client, server, size_b, samples)

    @_locked
    def run_allreduce(
        self, hosts: list[str], sizes_b: list[int] | None = None
    ) -> list[collectives.NcclRow]:
        """all_reduce_perf over a ring of ``hosts`` (one rank per host, in the given order)."""
        if len(hosts) < 2:
            raise FaultError("a ring needs at least two hosts")
        ring = []
        for a, b in itertools.pairwise([*hosts, hosts[0]]):
            pa, pb = self._host_port(a), self._host_port(b)
            ring.append(self._roce_qp(pa, pb, 1 << 22, 3, self.now_s, self.now_s, f"nccl:{a}->{b}"))
        others = [f for f in self.flows.values() if f.kind == "roce" and f.active(self.now_s)]
        goodput = self._max_min(ring + others, fabric=True)[: len(ring)]
        slowest = float(goodput.min()) / 8
        if slowest <= 0:
            raise BrokenRing("the ring is broken: a hop has no usable path")
        alpha = max(f.base_latency_s for f in ring) + collectives.STEP_OVERHEAD_S
        sizes = sizes_b or collectives.size_sweep()
        return collectives.allreduce_rows(sizes, len(hosts), slowest, alpha)

    # --- counters ----------------------------------------------------------

    @_locked
    def port_counters(self, endpoint: str) -> EndpointTraffic:
        p = self.topo.port(endpoint)
        c = self.engine.ctr
        peer = self.topo.ports[p].peer
        q = slice(p * PRIORITIES, (p + 1) * PRIORITIES)
        queues = tuple(
            QueueTraffic(
                priority=k,
                tx_packets=round(c["q_tx_pkts"][q][k]),
                tx_bytes=round(c["q_tx_octets"][q][k]),
                drop_packets=round(c["q_drops"][q][k]),
                ecn_marked_packets=round(c["q_ecn_marked"][q][k]),
            )
            for k in range(PRIORITIES)
        )
        up, _, _ = self._link_sig[self.topo.ports[p].link]
        return EndpointTraffic(
            endpoint=endpoint,
            oper_up=bool(up),
            speed_gbps=float(self.engine.speed_gbps[p]),
            mtu=int(self.mtu[p]),
            tx_packets=round(c["tx_pkts"][p]),
            tx_bytes=round(c["tx_octets"][p]),
            rx_packets=round(c["tx_pkts"][peer]),
            rx_bytes=round(c["tx_octets"][peer]),
            tx_drops=round(c["tx_drops"][p]),
            rx_discards=round(c["rx_discards"][p]),
            pfc_tx_frames=tuple(round(x) for x in c["pfc_tx"][q]),
            pfc_rx_frames=tuple(round(x) for x in c["pfc_rx"][q]),
            queues=queues,
        )

    @_locked
    def roce_counters(self, host: str) -> RoceCounters:
        p = self._host_port(host)
        c = self.engine.ctr
        q = slice(p * PRIORITIES, (p + 1) * PRIORITIES)
        peer = self.topo.ports[p].peer
        return RoceCounters(
            endpoint=self.topo.ports[p].endpoint,
            np_ecn_marked_roce_packets=round(c["np_ecn_marked"][p]),
            np_cnp_sent=round(c["np_cnp_sent"][p]),
            rp_cnp_handled=round(c["rp_cnp_handled"][p]),
            rx_prio_pause=tuple(round(x) for x in c["pfc_rx"][q]),
            tx_prio_pause=tuple(round(x) for x in c["pfc_tx"][q]),
            rx_discards_phy=round(c["rx_discards"][p]),
            tx_packets=round(c["tx_pkts"][p]),
            rx_packets=round(c["tx_pkts"][peer]),
        )

    @_locked
    def pfcwd_stats(self, device: str) -> list[PfcwdQueueStats]:
        """The watchdog's view of every monitored lossless queue of ``device``."""
        self.topo.require_device(device)
        eng, c = self.engine, self.engine.ctr
        out = []
        for p in self.topo.device_ports.get(device, []):
            for prio in sorted(self.qos[device].pfc):
                q = p * PRIORITIES + prio
                out.append(
                    PfcwdQueueStats(
                        endpoint=self.topo.ports[p].endpoint,
                        priority=prio,
                        status="stormed" if eng.wd_storm[q] else "operational",
                        storm_detected=int(eng.wd_detected[q]),
                        storm_restored=int(eng.wd_restored[q]),
                        tx_ok=round(c["wd_tx_ok"][q]),
                        tx_drop=round(c["wd_tx_drop"][q]),
                        rx_ok=round(c["wd_rx_ok"][q]),
                        rx_drop=round(c["wd_rx_drop"][q]),
                    )
                )
        return out

    # --- configuration the faults change (each returns its undo) ---------------

    def _changed(self) -> None:
        self.engine.flush()
        self._apply()

    @_locked
    def set_pfc(self, device: str, priority: int, enabled: bool) -> Undo:
        self.topo.require_device(device)
        q = self.qos[device]
        was = priority in q.pfc
        (q.pfc.add if enabled else q.pfc.discard)(priority)
        self._changed()

        def undo() -> None:
            self.set_pfc(device, priority, was)

        return undo

    @_locked
    def set_ecn(self, device: str, enabled: bool) -> Undo:
        """Switch: ECN marking on its lossless queues. Host: RoCE congestion control (NP+RP)."""
        self.topo.require_device(device)
        was = self.qos[device].ecn
        self.qos[device].ecn = enabled
        self._refresh_cc()
        self._changed()

        def undo() -> None:
            self.set_ecn(device, was)

        return undo

    @_locked
    def set_ecn_thresholds(self, device: str, kmin_b: float | None, kmax_b: float | None) -> Undo:
        """Switch: the ECN marking thresholds of its lossless queues (None, None: the
        defaults by port speed). The PFC XOFF thresholds stay where the buffer profile
        put them, so thresholds above XOFF leave the work to PFC."""
        self.topo.require_device(device)
        if not self.topo.is_switch(device):
            raise FaultError(f"{device!r} is not a switch")
        if (kmin_b is None) != (kmax_b is None) or (
            kmin_b is not None and kmax_b is not None and not 0 <= kmin_b <= kmax_b
        ):
            raise FaultError(f"ECN thresholds need 0 <= Kmin <= Kmax, got {kmin_b}, {kmax_b}")
        q = self.qos[device]
        was = (q.ecn_kmin_b, q.ecn_kmax_b)
        q.ecn_kmin_b, q.ecn_kmax_b = kmin_b, kmax_b
        self._changed()

        def undo() -> None:
            self.set_ecn_thresholds(device, *was)

        return undo

    @_locked
    def set_pg_xoff(self, device: str, xoff_b: float | None) -> Undo:
        """Switch: where its lossless ingress PGs send XOFF (None: the default, at ECN Kmax).
        A shallow buffer profile pauses below Kmin: PFC acts before ECN marks."""
        self.topo.require_device(device)
        if not self.topo.is_switch(device):
            raise FaultError(f"{device!r} is not a switch")
        if xoff_b is not None and xoff_b <= 0:
            raise FaultError(f"PG XOFF must be > 0 bytes, got {xoff_b}")
        q = self.qos[device]
        was = q.pg_xoff_b
        q.pg_xoff_b = xoff_b
        self._changed()

        def undo() -> None:
            self.set_pg_xoff(device, was)

        return undo

    def _refresh_cc(self) -> None:
        topo = self.topo
        for f in self.flows.values():
            if f.kind != "roce":
                continue
            src, dst = topo.ports[f.src].device, topo.ports[f.dst].device
            f.dcqcn = f.ect = self.qos[src].ecn and topo.settings[src].dcqcn
            f.ecn_bits = 2 if f.ect else 0
            f.np_enabled = self.qos[dst].ecn

    @_locked
    def set_pfcwd(self, device: str, enabled: bool) -> Undo:
        self.topo.require_device(device)
        was = self.qos[device].pfcwd
        self.qos[device].pfcwd = enabled
        self._changed()

        def undo() -> None:
            self.set_pfcwd(device, was)

        return undo

    @_locked
    def start_pfc_storm(self, endpoint: str, priority: int = 3) -> Undo:
        """A NIC sends pause frames on ``priority`` without end (a stuck receive pipeline)."""
        p = self._host_port(endpoint)
        speed = max(float(self.engine.speed_gbps[p]), 1.0)
        key = next(self._source_ids)
        refresh = 65535 * 512 / (speed * 1e9) / 2
        self.pause_sources[key] = PauseSource(
            port=self.topo.ports[p].peer,
            priorities=(priority,),
            fraction=1.0,
            frames_per_s=1.0 / refresh,
            start_s=self.now_s,
        )
        self._fire()

        def undo() -> None:
            with self._lock:
                self.pause_sources[key].stop_s = self.now_s
                self._fire()

        return undo

    @_locked
    def set_ecmp_hash(self, devices: list[str] | None, seed: int, fields: tuple[str, ...]) -> Undo:
        """Hash seed and fields of ``devices`` (all switches when None)."""
        bad = set(fields) - HASH_FIELDS
        if bad:
            raise FaultError(f"unknown hash fields {sorted(bad)}; known: {sorted(HASH_FIELDS)}")
        targets = devices or self.topo.switches()
        for d in targets:
            if d not in self.routing.hash:
                raise FaultError(f"{d!r} is not a switch")
        old = {d: self.routing.hash[d] for d in targets}
        for d in targets:
            self.routing.hash[d] = HashConfig(seed, tuple(fields))
        self._changed()

        def undo() -> None:
            with self._lock:
                self.routing.hash.update(old)
                self._changed()

        return undo

    @_locked
    def add_convergence_delay(self, device: str, extra_ms: float) -> Undo:
        self.topo.require_device(device)
        ext = self.convergence.extra_ms
        ext[device] = ext.get(device, 0.0) + extra_ms

        def undo() -> None:
            with self._lock:
                ext[device] = ext.get(device, 0.0) - extra_ms

        return undo

    @_locked
    def set_nic(
        self, host: str, speed_gbps: float | None = None, pcie_gbps: float | None = None
    ) -> Undo:
        """Cap a host NIC's negotiated speed and/or its PCIe bandwidth."""
        self.topo.require_device(host)
        if not self.topo.is_host(host):
            raise FaultError(f"{host!r} is not a host")
        old = (self.nic_speed_gbps.get(host), self.pcie_gbps.get(host))
        for table, value in ((self.nic_speed_gbps, speed_gbps), (self.pcie_gbps, pcie_gbps)):
            if value is not None:
                table[host] = value
        self._changed()

        def undo() -> None:
            with self._lock:
                for table, value in zip((self.nic_speed_gbps, self.pcie_gbps), old, strict=True):
                    if value is None:
                        table.pop(host, None)
                    else:
                        table[host] = value
                self._changed()

        return undo

    @_locked
    def set_mtu(self, endpoint: str, mtu: int) -> Undo:
        p = self.topo.port(endpoint)
        was = int(self.mtu[p])
        self.mtu[p] = mtu
        self._changed()

        def undo() -> None:
            self.set_mtu(endpoint, was)

        return undo

    @_locked
    def set_straggler(self, link: str, rate_fraction: float) -> Undo:
        li = self.topo.resolve_link(link)
        was = self.straggler.get(li)
        self.straggler[li] = rate_fraction
        self._changed()

        def undo() -> None:
            with self._lock:
                if was is None:
                    self.straggler.pop(li, None)
                else:
                    self.straggler[li] = was
                self._changed()

        return undo


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
