"""The fluid engine: per-egress-queue queues, PFC, ECN, DCQCN and the PFC watchdog.

Traffic is a fluid of *wire bytes* (frame + preamble + IFG) stepped in slices
of a microsecond (half that above 400G), short enough for PFC reaction and the
DCQCN timers. Each flow crossing an egress port is a *segment* holding the
flow's bytes queued there; a port serves its unpaused segments in proportion
to their backlog.

Per slice: senders inject (DCQCN-limited for RoCE, NIC room permitting); what
left a port last slice arrives at the next hop; ingress drops (MTU, watchdog);
lossy tail drop, or lossless headroom overflow; service; ECN marking from the
queue depth; then PFC: an ingress priority group (PG) at XOFF pauses the
peer's queue of that priority until it falls to XON. Pause frames are counted
per priority at both ends: one at XOFF, one refresh per half pause time, one
XON. Receivers turn CE marks into CNPs; senders cut and recover their rates.

Long runs never step slice by slice for long: ``simulate`` runs chunks of
0.1 ms until the flows' rates and the queues stop moving, and the caller
extrapolates every counter from the last chunk (``extrapolate``); with nothing
able to queue, ``quiet_rates`` gives the answer in closed form; and steady
rates of pause-free scenarios are remembered, so a link that flaps for days
costs one settling run per distinct routing state.

For speed the slice loop works on compact arrays of the queues, ports and PGs
the current flows use, and accumulates per segment; ``_fold`` turns the
accumulators into the per-port and per-queue counters the emulators print.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from labtest.emulation.model.traffic.congestion import (
    LOSSY_LIMIT_BYTES,
    XON_OFFSET_BYTES,
    Counters,
    DcqcnParams,
    DeviceQos,
    ecn_mark_probability,
    ecn_thresholds,
    headroom_bytes,
    pause_time_s,
    xoff_bytes,
)
from labtest.emulation.model.traffic.flows import Flow, PauseSource
from labtest.emulation.model.traffic.topology import PRIORITIES, Topology

_TINY = 1e-30
CC_EVERY = 4  # slices between DCQCN alpha / rate-increase updates
RATE_CACHE_SIZE = 64  # scenarios whose steady rates are kept (a flapping link cycles a few)
SEED_ABOVE_FAIR = 1.02  # DCQCN settles a little above the fair share, on a standing queue
_WD_MODES = {"drop": 0, "forward": 1, "alert": 2}
TRACE_SLICES = 1024  # queue occupancy kept per slice, for latency under load
TRACE_CHUNKS = 2  # the settled trace: the last chunks ``simulate`` stepped


class FluidNet:
    """Configuration, state, counters and the slice step of the fluid network."""

    def __init__(self, topo: Topology, dcqcn: DcqcnParams | None = None) -> None:
        self.topo = topo
        self.dc = dcqcn or DcqcnParams()
        P = len(topo.ports)
        Q = P * PRIORITIES
        self.P, self.Q = P, Q
        self.peer = np.array([p.peer for p in topo.ports], dtype=np.int64)
        self.peer_q = (self.peer[:, None] * PRIORITIES + np.arange(PRIORITIES)).ravel()
        self.switch_port = np.array([topo.is_switch(p.device) for p in topo.ports], dtype=bool)
        # configuration, per port / per queue (``configure``)
        self.speed_gbps = np.zeros(P)
        self.cap = np.zeros(P)  # wire bytes per second
        self.down = np.zeros(P, dtype=bool)
        self.mtu = np.full(P, 9100.0)  # IP MTU; the model keeps it current
        self.kmin, self.kmax, self.pmax = np.zeros(Q), np.ones(Q), np.zeros(Q)
        self.ecn_q = np.zeros(Q, dtype=bool)
        self.pfc_g = np.zeros(Q, dtype=bool)  # this port's PG of this priority sends PFC
        self.xoff = np.zeros(Q)
        self.xon = np.zeros(Q)
        self.headroom = np.zeros(Q)
        self.lossy_limit = np.full(Q, float(LOSSY_LIMIT_BYTES))
        self.honor_q = np.ones(Q, dtype=bool)
        self.refresh_s = np.ones(Q)
        self.wd_on = np.zeros(Q, dtype=bool)
        self.wd_detect = np.full(Q, 0.2)
        self.wd_restore = np.full(Q, 0.2)
        self.wd_mode = np.zeros(Q, dtype=np.int8)
        self.wd_poll_s = 0.2
        # state
        self.xoff_state = np.zeros(Q, dtype=bool)
        self.pf_ext = np.zeros(Q)  # pause fraction from outside sources (storms, TG)
        self.ext_frames = np.zeros(Q)  # their pause frames per second
        self.wd_storm = np.zeros(Q, dtype=bool)
        self.paused_since = np.full(Q, np.nan)
        self.unpaused_since = np.zeros(Q)
        self.wd_detected = np.zeros(Q)
        self.wd_restored = np.zeros(Q)
        self.steady_paused = np.zeros(Q, dtype=bool)
        self.steady_unpaused = np.zeros(Q, dtype=bool)
        self.ctr = Counters(P)
        self.slice_s = self.dt = 1e-6
        self.flows: list[Flow] = []
        self.all_flows: list[Flow] = []
        self._content: dict[tuple[int, int], float] = {}
        self._dcqcn_state: dict[int, tuple[float, float, float, bool, float]] = {}
        self._built = False
        self._rate_cache: dict[str, np.ndarray] = {}
        self.scenario_key = ""
        self._t = self._watch_t = 0.0
        self.build([])

    # --- configuration -----------------------------------------------------

    def configure(
        self,
        speed_gbps: np.ndarray,
        rate_fraction: np.ndarray,
        down: np.ndarray,
        qos: dict[str, DeviceQos],
        cable_m: np.ndarray,
    ) -> None:
        """Per-port capacities and per-queue QoS from the devices' settings."""
        self._fold()
        self.speed_gbps = speed_gbps.astype(float)
        self.cap = self.speed_gbps * 1e9 / 8 * rate_fraction
        self.down = down.astype(bool)
        top = float(np.max(self.speed_gbps, initial=100.0))
        self.slice_s = self.dt = min(1e-6, 400.0 / top * 1e-6)
        for p in self.topo.ports:
            q0 = p.index * PRIORITIES
            sl = slice(q0, q0 + PRIORITIES)
            speed = max(float(self.speed_gbps[p.index]), 1.0)
            self.kmin[sl], self.kmax[sl], self.pmax[sl] = ecn_thresholds(speed)
            self.headroom[sl] = headroom_bytes(speed, float(cable_m[p.index]))
            dq = qos[p.device]
            sw = bool(self.switch_port[p.index])
            xoff = dq.pg_xoff_b if sw and dq.pg_xoff_b is not None else xoff_bytes(speed)
            self.xoff[sl] = xoff
            self.xon[sl] = max(xoff - XON_OFFSET_BYTES, xoff / 2)  # a shallow XOFF keeps an XON
            self.refresh_s[sl] = pause_time_s(speed) / 2
            for prio in range(PRIORITIES):
                q = q0 + prio
                lossless = prio in dq.pfc
                self.pfc_g[q] = lossless and sw
                self.lossy_limit[q] = LOSSY_LIMIT_BYTES if sw and not lossless else math.inf
                self.ecn_q[q] = sw and dq.ecn and prio in dq.ecn_priorities
                if sw and dq.ecn_kmin_b is not None and dq.ecn_kmax_b is not None:
                    self.kmin[q], self.kmax[q] = dq.ecn_kmin_b, dq.ecn_kmax_b  # PFC XOFF stays
                self.honor_q[q] = dq.honor_pfc
                self.wd_on[q] = sw and dq.pfcwd and lossless
                self.wd_detect[q], self.wd_restore[q] = dq.wd_detect_s, dq.wd_restore_s
                self.wd_mode[q] = _WD_MODES[dq.wd_action]
        self.wd_poll_s = min((d.wd_poll_s for d in qos.values()), default=0.2)
        self.xoff_state &= self.pfc_g  # a PG that stops generating PFC releases its peer
        ended = self.wd_storm & ~self.wd_on  # a watchdog switched off ends its storms
        self.wd_storm &= self.wd_on
        self.wd_restored += ended

    def set_pause_sources(self, sources: list[PauseSource], now_s: float) -> None:
        self._fold()
        self.pf_ext[:] = 0.0
        self.ext_frames[:] = 0.0
        for s in sources:
            if not s.active(now_s):
                continue
            for prio in s.priorities:
                q = s.port * PRIORITIES + prio
                self.pf_ext[q] = min(1.0, self.pf_ext[q] + s.fraction)
                self.ext_frames[q] += s.frames_per_s
        self.build(self.all_flows, now_s)

    # --- scenario ----------------------------------------------------------

    def sending(self, f: Flow, now_s: float) -> bool:
        return f.active(now_s) and not self.down[f.src]

    def build(self, flows: list[Flow], now_s: float = 0.0) -> None:
        """Lay routed flows out as segments (sending, or still draining); keep queued bytes."""
        self._save_state()
        topo = self.topo
        saved = self._content
        self.all_flows = list(flows)
        queued = {fid for fid, _ in saved}
        self.flows = fl = [
            f for f in flows if f.path and (self.sending(f, now_s) or f.id in queued)
        ]
        seg_flow, seg_port, seg_q, seg_pg, seg_mtu, content = [], [], [], [], [], []
        n = len(fl)
        self.f_first = np.zeros(n, dtype=np.int64)
        self.f_last = np.zeros(n, dtype=np.int64)
        self.f_rx_drop = np.zeros(n, dtype=bool)
        self.f_sink = np.zeros(n, dtype=np.int64)  # where a drop at delivery is counted
        for i, f in enumerate(fl):
            assert f.path is not None
            ip_len = f.frame_bytes - 18
            self.f_first[i] = len(seg_flow)
            for h, port in enumerate(f.path):
                seg_flow.append(i)
                seg_port.append(port)
                seg_q.append(port * PRIORITIES + f.priority)
                if h == 0:
                    seg_pg.append(-1)
                    seg_mtu.append(False)
                else:
                    ingress = topo.ports[f.path[h - 1]].peer
                    seg_pg.append(ingress * PRIORITIES + f.priority)
                    seg_mtu.append(ip_len > self.mtu[ingress] or ip_len > self.mtu[port])
                content.append(saved.pop((f.id, port), 0.0))
            self.f_last[i] = len(seg_flow) - 1
            noroute = bool(f.meta.get("noroute"))  # the first switch has no route: it drops
            self.f_rx_drop[i] = noroute or ip_len > self.mtu[f.dst]
            self.f_sink[i] = topo.ports[f.src].peer if noroute else f.dst
        by_id = {f.id: f for f in flows}
        for (fid, _port), b in saved.items():  # bytes stranded on a path the flow left
            if fid in by_id:
                f = by_id[fid]
                f.rx_frames += b / f.wire_bytes
                f.ooo_frames += b / f.wire_bytes
        self._content = {}
        self.seg_flow = np.array(seg_flow, dtype=np.int64)
        self.seg_port = np.array(seg_port, dtype=np.int64)
        self.seg_q = np.array(seg_q, dtype=np.int64)
        self.seg_pg = np.array(seg_pg, dtype=np.int64)
        self.seg_mtu_drop = np.array(seg_mtu, dtype=bool)
        self.content = np.array(content, dtype=float)
        self.arriving = np.zeros(len(seg_flow))
        self.seg_first = np.zeros(len(seg_flow), dtype=bool)
        self.seg_first[self.f_first] = True
        self.f_on = np.array([self.sending(f, now_s) for f in fl], dtype=bool)
        self.f_wire = np.array([f.wire_bytes for f in fl], dtype=float)
        self.f_frame = np.array([f.frame_bytes for f in fl], dtype=float)
        self.f_max = np.array([f.rate_bps / 8 for f in fl], dtype=float)
        self.f_dcqcn = np.array([f.dcqcn for f in fl], dtype=bool)
        self.f_ect = np.array([f.ect for f in fl], dtype=bool)
        self.f_np = np.array([f.np_enabled for f in fl], dtype=bool)
        self.f_base_lat = np.array([f.base_latency_s for f in fl], dtype=float)
        self.f_src = np.array([f.src for f in fl], dtype=np.int64)
        self.f_dst = np.array([f.dst for f in fl], dtype=np.int64)
        self.f_left = np.array([(f.max_frames - f.tx_frames) * f.wire_bytes for f in fl])
        self.any_left = bool(np.isfinite(self.f_left).any())
        self.seg_wire = self.f_wire[self.seg_flow]
        self.seg_frame = self.f_frame[self.seg_flow]
        self._restore_dcqcn()
        self.fc = np.zeros((n, 6))  # tx, rx, drop bytes; CE frames; latency x frames; ooo
        self.lat_min = np.full(n, np.inf)
        self.lat_max = np.zeros(n)
        self._index(now_s)
        self._refresh()
        self._built = True

    def _restore_dcqcn(self) -> None:
        fl, n = self.flows, len(self.flows)
        fresh = (math.inf, math.inf, self.dc.initial_alpha, False, 0.0)
        rows = [self._dcqcn_state.get(f.id, fresh) for f in fl]
        # a rate limiter that never cut follows the flow's ceiling when it moves
        uncut = np.array([r[0] >= r[4] * (1 - 1e-9) for r in rows], dtype=bool)
        rc = np.array([r[0] for r in rows], dtype=float)
        rt = np.array([r[1] for r in rows], dtype=float)
        self.rc = np.where(uncut | ~self.f_dcqcn, self.f_max, np.minimum(rc, self.f_max))
        self.rt = np.where(uncut | ~self.f_dcqcn, self.f_max, np.minimum(rt, self.f_max))
        # DCQCN flows restart from their max-min share when the model provides one: the
        # converged state, without the start-up transient (see ``DcqcnParams``)
        fair = np.array([float(f.meta.get("fair_bps", math.inf)) / 8 for f in fl], dtype=float)
        # a flow some hop can mark: one switch that does not mark (ecn_disabled) leaves the
        # others to cut it, so it converges like the rest and starts at its share
        markable = self.ecn_q[self.seg_q] & ~self.seg_first
        marks = np.bincount(self.seg_flow, markable, minlength=n) > 0
        seeded = self.f_dcqcn & self.f_ect & self.f_np & marks & np.isfinite(fair)
        start = np.clip(fair * SEED_ABOVE_FAIR, self.dc.min_rate_bps / 8, self.f_max)
        self.rc = np.where(seeded, start, self.rc)
        self.rt = np.where(seeded, start, self.rt)
        self.alpha = np.array([r[2] for r in rows], dtype=float)
        self.seen_cnp = np.array([r[3] for r in rows], dtype=bool)
        self.last_cut = np.full(n, -1.0)
        self.t_inc = np.zeros(n)
        self.b_inc = np.zeros(n)
        self.stage_t = np.zeros(n)
        self.stage_b = np.zeros(n)
        self.cnp_in_period = np.zeros(n, dtype=bool)
        self.timer_inc = np.zeros(n, dtype=bool)
        self.mark_acc = np.zeros(n)
        self.last_cnp = np.full(n, -1.0)
        self.cnp_due = np.full(n, np.inf)
        self.cnp_count_due = np.zeros(n)
        self._cnp_next = math.inf
        self._cc_dt = 0.0

    def _index(self, now_s: float) -> None:
        """Compact indices of the queues, ports and PGs the flows use, and the watched queues."""
        S, n = len(self.seg_flow), len(self.flows)
        self.qs, self.sq = np.unique(self.seg_q, return_inverse=True)
        self.ps, self.sp = np.unique(self.seg_port, return_inverse=True)
        has = self.seg_pg >= 0
        self.gs, inv = np.unique(self.seg_pg[has], return_inverse=True)
        self.sg = np.full(S, len(self.gs), dtype=np.int64)  # first segments -> a dummy PG
        self.sg[has] = inv
        self.seg_has_pg = has
        self.seg_ingress = np.where(has, self.seg_pg // PRIORITIES, 0)
        extra = np.flatnonzero((self.pf_ext > 0) | (self.ext_frames > 0) | self.wd_storm)
        self.ws = np.unique(np.concatenate([self.qs, self.peer_q[self.gs], extra]))
        self.sw = np.searchsorted(self.ws, self.seg_q)
        self.gw = np.searchsorted(self.ws, self.peer_q[self.gs])
        self.f_nic = self.sp[self.f_first]
        self.g_xoff = self.xoff_state[self.gs].copy()
        self._load_watch(now_s)
        self.acc_out = np.zeros(S)
        self.acc_lost = np.zeros(S)
        self.acc_in_drop = np.zeros(S)
        self.acc_lossy = np.zeros(S)
        self.acc_hr = np.zeros(S)
        self.acc_marked = np.zeros(S)
        self.acc_gframes = np.zeros(len(self.gs))
        self.acc_time = 0.0
        self.acc_rxdrop = np.zeros(n)
        self.acc_tx = np.zeros(n)
        self.acc_rx = np.zeros(n)
        self.acc_ce = np.zeros(n)
        self.acc_lat = np.zeros(n)
        self.acc_cnp_sent = np.zeros(n)
        self.acc_cnp_handled = np.zeros(n)
        self._tick = 0
        self.q_trace = np.zeros((TRACE_SLICES, len(self.qs)))
        self.q_trace_n = self.q_trace_from = 0

    def _load_watch(self, t: float) -> None:
        self.w_paused_since = self.paused_since[self.ws].copy()
        self.w_unpaused_since = self.unpaused_since[self.ws].copy()
        self._watch_t = self._t = t

    def _refresh(self) -> None:
        """Per-segment flags that change only with configuration or the watchdog."""
        storm_drop = self.wd_storm & (self.wd_mode == 0)
        has = self.seg_has_pg
        self.seg_flush = storm_drop[self.seg_q]
        self.seg_lost = self.down[self.seg_port] | self.seg_flush
        self.seg_wd_rx = np.zeros(len(self.seg_flow), dtype=bool)
        self.seg_wd_rx[has] = storm_drop[self.seg_pg[has]]
        self.seg_in_drop = self.seg_mtu_drop | self.seg_wd_rx
        self.any_in_drop = bool(self.seg_in_drop.any())
        self.any_lost = bool(self.seg_lost.any())
        self.any_flush = bool(self.seg_flush.any())
        self.any_rx_drop = bool(self.f_rx_drop.any())
        self.cap_c = self.cap[self.ps]
        qs = self.qs
        self.q_limit = self.lossy_limit[qs]
        self.any_lossy = bool(np.isfinite(self.q_limit).any())
        self.q_kmin, self.q_kmax = self.kmin[qs], self.kmax[qs]
        self.q_pmax = self.pmax[qs] * self.ecn_q[qs]
        self.seg_mark = self.ecn_q[self.seg_q] & self.f_ect[self.seg_flow]
        self.any_mark = bool(self.seg_mark.any())
        gs = self.gs
        self.g_pfc = self.pfc_g[gs] & ~storm_drop[gs]
        self.g_xoff &= self.g_pfc
        self.g_xoff_b, self.g_xon_b = self.xoff[gs], self.xon[gs]
        self.g_limit = self.xoff[gs] + self.headroom[gs]
        self.g_rate = 1.0 / self.refresh_s[gs]
        self.any_pfc = bool(self.g_pfc.any())
        ws = self.ws
        self.w_ext = self.pf_ext[ws]
        self.w_ext_frames = self.ext_frames[ws]
        self.w_obey = (self.honor_q[ws] & ~(self.wd_storm[ws] & (self.wd_mode[ws] != 2))).astype(
            float
        )
        self.w_raw = self._watched_pause()
        self.w_lo = self.w_raw.copy()
        self.w_hi = self.w_raw.copy()
        self.qw = np.searchsorted(ws, self.qs)
        self.q_cap = self.cap[self.qs // PRIORITIES]
        self.any_partial = bool(((self.w_ext > 0) & (self.w_ext < 1)).any())
        self.scenario_key = self._key()
        self.q_trace_n = self.q_trace_from = 0  # a new scenario: its queues start a new trace

    def _key(self) -> str:
        """Everything the steady rates depend on, hashed."""
        fair = [float(f.meta.get("fair_bps", -1.0)) for f in self.flows]
        parts = [
            np.array([f.id for f in self.flows]),
            self.seg_port,
            self.seg_q,
            self.f_on,
            self.f_max,
            np.array(fair),
            self.f_dcqcn,
            self.f_ect,
            self.f_np,
            self.cap,
            self.down,
            self.mtu,
            self.ecn_q,
            self.kmin,
            self.kmax,
            self.pfc_g,
            self.honor_q,
            self.wd_on,
            self.wd_storm,
            self.pf_ext,
            self.ext_frames,
        ]
        digest = hashlib.blake2b(digest_size=16)
        for a in parts:
            digest.update(np.ascontiguousarray(a).tobytes())
        return digest.hexdigest()

    def cached_rates(self) -> np.ndarray | None:
        """Steady rates seen before in this very scenario (flows, paths, configuration)."""
        rates = self._rate_cache.get(self.scenario_key)
        if rates is not None:
            self.steady_paused[:] = False
            self.steady_unpaused[:] = True
        return rates

    def _remember(self, rates: np.ndarray) -> None:
        """Keep steady rates of scenarios without pauses (their state needs no history)."""
        if self.xoff_state.any() or self.wd_storm.any() or (self.pf_ext > 0).any():
            return
        if len(self._rate_cache) >= RATE_CACHE_SIZE:
            self._rate_cache.pop(next(iter(self._rate_cache)))
        self._rate_cache[self.scenario_key] = rates.copy()

    def _watched_pause(self) -> np.ndarray:
        raw = self.w_ext.copy()
        if self.any_pfc:
            raw[self.gw[self.g_xoff]] = 1.0
        return raw

    def _save_state(self) -> None:
        self._content = {}
        self._dcqcn_state = {}
        if not self._built:
            return
        self._fold()
        self.flush()
        for s, b in enumerate(self.content + self.arriving):
            if b > 1e-9:
                self._content[(self.flows[self.seg_flow[s]].id, int(self.seg_port[s]))] = float(b)
        self._dcqcn_state = {
            f.id: (
                float(self.rc[i]),
                float(self.rt[i]),
                float(self.alpha[i]),
                bool(self.seen_cnp[i]),
                float(self.f_max[i]),
            )
            for i, f in enumerate(self.flows)
        }

    # --- folding accumulators into counters ------------------------------------

    def _fold(self) -> None:
        """Turn the per-segment accumulators into port/queue/flow counters."""
        if not self._built or self.acc_time <= 0:
            return
        c, P, Q = self.ctr, self.P, self.Q
        sport, sq, w = self.seg_port, self.seg_q, self.seg_wire
        out = self.acc_out / w
        c["tx_pkts"][:] += np.bincount(sport, out, minlength=P)
        c["tx_octets"][:] += np.bincount(sport, out * self.seg_frame, minlength=P)
        c["q_tx_pkts"][:] += np.bincount(sq, out, minlength=Q)
        c["q_tx_octets"][:] += np.bincount(sq, out * self.seg_frame, minlength=Q)
        lost = (self.acc_lost + self.acc_lossy) / w
        c["tx_drops"][:] += np.bincount(sport, lost, minlength=P)
        c["q_drops"][:] += np.bincount(sq, lost, minlength=Q)
        c["wd_tx_drop"][:] += np.bincount(sq, self.acc_lost / w * self.seg_flush, minlength=Q)
        fwd = self.wd_storm & (self.wd_mode == 1)
        c["wd_tx_ok"][:] += np.bincount(sq, out * fwd[sq], minlength=Q)
        ind = self.acc_in_drop / w
        ingress, pg = self.seg_ingress, np.where(self.seg_has_pg, self.seg_pg, 0)
        c["rx_discards"][:] += np.bincount(
            ingress, ind * ~self.seg_wd_rx + self.acc_hr / w, minlength=P
        )
        c["wd_rx_drop"][:] += np.bincount(pg, ind * self.seg_wd_rx, minlength=Q)
        c["q_ecn_marked"][:] += np.bincount(sq, self.acc_marked, minlength=Q)
        c["rx_discards"][:] += np.bincount(self.f_sink, self.acc_rxdrop / self.f_wire, minlength=P)
        c["np_ecn_marked"][:] += np.bincount(self.f_dst, self.acc_ce, minlength=P)
        c["np_cnp_sent"][:] += np.bincount(self.f_dst, self.acc_cnp_sent, minlength=P)
        c["rp_cnp_handled"][:] += np.bincount(self.f_src, self.acc_cnp_handled, minlength=P)
        np.add.at(c["pfc_tx"], self.gs, self.acc_gframes)
        np.add.at(c["pfc_rx"], self.peer_q[self.gs], self.acc_gframes)
        ext = self.w_ext_frames * self.acc_time
        np.add.at(c["pfc_rx"], self.ws, ext)
        np.add.at(c["pfc_tx"], self.peer_q[self.ws], ext)
        n = len(self.flows)
        seg_drop = self.acc_lost + self.acc_lossy + self.acc_in_drop + self.acc_hr
        self.fc[:, 0] += self.acc_tx
        self.fc[:, 1] += self.acc_rx
        self.fc[:, 2] += np.bincount(self.seg_flow, seg_drop, minlength=n) + self.acc_rxdrop
        self.fc[:, 3] += self.acc_ce
        self.fc[:, 4] += self.acc_lat
        if self._t > self._watch_t:
            self._watch(self._t)
        self.xoff_state[self.gs] = self.g_xoff
        self.paused_since[self.ws] = self.w_paused_since
        self.unpaused_since[self.ws] = self.w_unpaused_since
        for a in (
            self.acc_out,
            self.acc_lost,
            self.acc_in_drop,
            self.acc_lossy,
            self.acc_hr,
            self.acc_marked,
            self.acc_gframes,
            self.acc_rxdrop,
            self.acc_tx,
            self.acc_rx,
            self.acc_ce,
            self.acc_lat,
            self.acc_cnp_sent,
            self.acc_cnp_handled,
        ):
            a[:] = 0.0
        self.acc_time = 0.0

    def flush(self) -> None:
        """Copy per-flow counters into the Flow records and zero them."""
        self._fold()
        for i, f in enumerate(self.flows):
            tx, rx, drop, ce, lat, ooo = self.fc[i]
            w = f.wire_bytes
            f.tx_frames += tx / w
            f.rx_frames += rx / w
            f.drop_frames += drop / w
            f.ce_frames += ce
            f.lat_sum_s += lat
            f.ooo_frames += ooo
            f.lat_min_s = min(f.lat_min_s, float(self.lat_min[i]))
            f.lat_max_s = max(f.lat_max_s, float(self.lat_max[i]))
        self.fc[:] = 0.0
        self.lat_min[:] = np.inf
        self.lat_max[:] = 0.0

    # --- state queries -----------------------------------------------------

    def queued_bytes(self) -> float:
        return float(self.content.sum() + self.arriving.sum())

    def raw_pause(self) -> np.ndarray:
        """Fraction of time each queue is told to pause (before the watchdog overrides)."""
        self._fold()
        pf = self.pf_ext.copy()
        pf[self.peer_q[self.xoff_state]] = 1.0
        return pf

    def effective_pause(self) -> np.ndarray:
        pf = self.raw_pause()
        pf[~self.honor_q] = 0.0
        pf[self.wd_storm & (self.wd_mode != 2)] = 0.0
        return pf

    def sustained_pause(self) -> np.ndarray:
        """``effective_pause`` without PFC's XOFF/XON cycling: only pauses that held through
        the last simulated chunk (a storm, a stuck peer) or come from a full-time source.
        A queue that a congested PG pauses now and then delays packets; it does not stop them."""
        pf = self.effective_pause()
        pf[~(self.steady_paused | (self.pf_ext >= 1.0))] = 0.0
        return pf

    def port_bytes(self) -> np.ndarray:
        return np.bincount(self.seg_port, self.content, minlength=self.P)

    def queue_trace(self) -> np.ndarray:
        """Bytes queued per used queue (``self.qs``), one row per slice, oldest first: the
        chunks ``simulate`` stepped last in this scenario (where the queues had settled);
        the queues as they are now when nothing was stepped since (closed form, cache)."""
        n = self.q_trace_n
        first = max(self.q_trace_from, n - TRACE_SLICES)
        if n - first < 2:
            return np.bincount(self.sq, self.content, minlength=len(self.qs))[None, :]
        rows = np.arange(first, n) % TRACE_SLICES
        return self.q_trace[rows]

    def queueing_delay_samples(
        self, path: list[int], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Seconds a packet waits in the egress queues of ``path`` at ``n`` random instants.

        Per hop, the bytes queued at the port when the packet arrives over the port's drain
        rate (its line rate: the port shares it among its queues by backlog, so every byte
        queued there is ahead of the packet); summed over hops at the same instant (a queue
        moves slowly against a packet's microseconds in flight). The instants are uniform
        over the settled trace, interpolated between slices, so the distribution follows
        the queues' own fluctuation: the tail is where the queues peak.
        """
        weight = np.zeros(len(self.qs))
        q_port = self.qs // PRIORITIES
        for p in path:
            if self.cap[p] > 0:
                weight[q_port == p] += 1.0 / self.cap[p]
        delay = self.queue_trace() @ weight
        if len(delay) == 1:
            return np.full(n, float(delay[0]))
        at = rng.uniform(0.0, len(delay) - 1.0, n)
        i = np.minimum(at.astype(np.int64), len(delay) - 2)
        frac = at - i
        return delay[i] * (1.0 - frac) + delay[i + 1] * frac

    # --- one slice -----------------------------------------------------------

    def step(self, now_s: float) -> None:
        dt, content = self.dt, self.content
        pause = self.w_raw * self.w_obey  # decided at the end of the previous slice

        # 1. senders inject, limited by room in the NIC (a paused NIC just sends less)
        nP = len(self.ps)
        want = self.rc * self.f_on * dt
        if self.any_left:
            want = np.minimum(want, np.maximum(self.f_left, 0.0))
        held = np.bincount(self.f_nic, content[self.f_first], minlength=nP)
        asked = np.bincount(self.f_nic, want, minlength=nP)
        room = np.maximum(2.0 * self.cap_c * dt - held, 0.0)
        inj = want * np.minimum(room / np.maximum(asked, _TINY), 1.0)[self.f_nic]
        content[self.f_first] += inj
        self.acc_tx += inj
        self.f_left -= inj

        # 2. arrivals from the previous hop; ingress drops (MTU, watchdog)
        arr = self.arriving
        if self.any_in_drop:
            dropped = arr * self.seg_in_drop
            self.acc_in_drop += dropped
            arr = arr - dropped
        content += arr

        # 3. buffers: lossy tail drop; lossless headroom overflow
        qb = np.bincount(self.sq, content, minlength=len(self.qs))
        if self.any_lossy:
            over = qb - self.q_limit
            if (over > 0).any():
                frac = np.maximum(over, 0.0) / np.maximum(qb, _TINY)
                drop = content * frac[self.sq]
                content -= drop
                self.acc_lossy += drop
                qb = np.minimum(qb, self.q_limit)
        self.q_trace[self.q_trace_n % TRACE_SLICES] = qb  # what a packet arriving now finds
        self.q_trace_n += 1
        nG = len(self.gs)
        if self.any_pfc and self.g_xoff.any():  # only a paused PG can outrun its headroom
            gb = np.bincount(self.sg, content, minlength=nG + 1)[:nG]
            over = (gb - self.g_limit) * self.g_pfc
            if (over > 0).any():
                frac = np.append(np.maximum(over, 0.0) / np.maximum(gb, _TINY), 0.0)
                drop = content * frac[self.sg]
                content -= drop
                self.acc_hr += drop

        # 4. service: each port shares its capacity among unpaused queues by backlog
        weight = content * (1.0 - pause[self.sw])
        port_w = np.bincount(self.sp, weight, minlength=nP)
        share = np.minimum(self.cap_c * dt, port_w) / np.maximum(port_w, _TINY)
        out = weight * share[self.sp]
        if self.any_partial:  # a queue paused part of the time sends at most that share
            qout = np.bincount(self.sq, out, minlength=len(self.qs))
            limit = (1.0 - pause[self.qw]) * self.q_cap * dt
            out = out * np.minimum(1.0, limit / np.maximum(qout, _TINY))[self.sq]
        content -= out
        if self.any_lost:
            lost = out * self.seg_lost
            self.acc_lost += lost
            out = out - lost
        if self.any_flush:  # the watchdog empties a storming queue
            flushed = content * self.seg_flush
            content -= flushed
            self.acc_lost += flushed
        self.acc_out += out

        # 5. ECN marking, linear from Kmin to Pmax at Kmax, all above Kmax
        n = len(self.flows)
        p_seg = None
        if self.any_mark:
            p_seg = ecn_mark_probability(qb, self.q_kmin, self.q_kmax, self.q_pmax)[self.sq]
            p_seg = p_seg * self.seg_mark
            self.acc_marked += out / self.seg_wire * p_seg

        # 6. forward to the next hop (segments of a flow are contiguous), or deliver
        nxt = np.empty_like(out)
        nxt[1:] = out[:-1]
        if len(nxt):
            nxt[self.seg_first] = 0.0
        self.arriving = nxt
        got = out[self.f_last]
        if self.any_rx_drop:
            rd = got * self.f_rx_drop
            self.acc_rxdrop += rd
            got = got - rd
        self.acc_rx += got
        ce = None
        if p_seg is not None:  # CE if any hop marked it: min(1, sum p), exact for one hop
            marked = np.minimum(np.bincount(self.seg_flow, p_seg, minlength=n), 1.0)
            ce = got / self.f_wire * marked
            self.acc_ce += ce
        self._tick += 1
        if self._tick % 4 == 0 and n:  # latency sampled every fourth slice
            pb = np.bincount(self.sp, content, minlength=nP)
            delay = pb / np.maximum(self.cap_c, _TINY)
            lat = self.f_base_lat + np.bincount(self.seg_flow, delay[self.sp], minlength=n)
            frames = got / self.f_wire
            self.acc_lat += lat * frames * 4
            moving = frames > 0
            self.lat_min = np.where(moving, np.minimum(self.lat_min, lat), self.lat_min)
            self.lat_max = np.where(moving, np.maximum(self.lat_max, lat), self.lat_max)

        # 7. PFC: a PG at XOFF pauses its peer's queue; at XON it resumes it
        if self.any_pfc:
            gb = np.bincount(self.sg, content, minlength=nG + 1)[:nG]
            was = self.g_xoff
            off = np.where(was, gb > self.g_xon_b, gb >= self.g_xoff_b) & self.g_pfc
            edges = off != was
            self.acc_gframes += edges + off * (dt * self.g_rate)
            self.g_xoff = off
            if edges.any():
                self.w_raw = self._watched_pause()

        # 8. DCQCN at the receivers (CNPs) and the senders (rate)
        t = now_s + dt
        if self.f_dcqcn.any():
            self._dcqcn(t, ce, inj)

        # 9. the watchdog's view: lowest and highest pause seen since the last look
        np.minimum(self.w_lo, self.w_raw, out=self.w_lo)
        np.maximum(self.w_hi, self.w_raw, out=self.w_hi)
        self.acc_time += dt
        self.content = content
        self._t = t
        if self._tick % CC_EVERY == 0:
            self._watch(t)

    def _watch(self, t: float) -> None:
        """Since when each watched queue has been paused (or free) without a break."""
        start = self._watch_t
        always = self.w_lo >= 1.0 - 1e-9
        never = self.w_hi < 1.0 - 1e-9
        now = self.w_raw >= 1.0 - 1e-9
        self.w_paused_since = np.where(
            always, np.fmin(self.w_paused_since, start), np.where(now, t, np.nan)
        )
        self.w_unpaused_since = np.where(
            never, np.fmin(self.w_unpaused_since, start), np.where(now, np.nan, t)
        )
        self.w_lo = self.w_raw.copy()
        self.w_hi = self.w_raw.copy()
        self._watch_t = t

    def _dcqcn(self, t: float, ce: np.ndarray | None, inj: np.ndarray) -> None:
        dc = self.dc
        cc = self.f_dcqcn
        # notification point: at most one CNP per QP per interval, for marked arrivals
        if ce is not None:
            self.mark_acc += ce * self.f_np
            send = (self.mark_acc >= 1.0) & (t - self.last_cnp >= dc.cnp_interval_s) & cc
            if send.any():
                self.acc_cnp_sent += send
                self.last_cnp[send] = t
                self.mark_acc[send] = 0.0
                self.cnp_due = np.where(
                    send & np.isinf(self.cnp_due), t + dc.feedback_s, self.cnp_due
                )
                self.cnp_count_due += send
                self._cnp_next = float(self.cnp_due.min())
        # reaction point: CNPs that made it back cut the rate (at most once per period)
        if self._cnp_next <= t:
            arrived = self.cnp_due <= t
            self.acc_cnp_handled += self.cnp_count_due * arrived
            self.cnp_count_due[arrived] = 0.0
            self.cnp_due[arrived] = np.inf
            self._cnp_next = float(self.cnp_due.min())
            self.cnp_in_period |= arrived
            self.alpha[arrived & ~self.seen_cnp] = dc.initial_alpha
            self.seen_cnp |= arrived
            cut = arrived & (t - self.last_cut >= dc.reduce_period_s)
            if cut.any():
                factor = np.maximum(1.0 - self.alpha / 2.0, 1.0 - dc.min_dec_fac)
                clamp = cut & (dc.clamp_target or self.timer_inc)
                self.rt = np.where(clamp, self.rc, self.rt)
                self.timer_inc[cut] = False
                self.rc = np.where(cut, np.maximum(self.rc * factor, dc.min_rate_bps / 8), self.rc)
                self.last_cut[cut] = t
                for a in (self.t_inc, self.b_inc, self.stage_t, self.stage_b):
                    a[cut] = 0.0
        self.b_inc += inj
        self._cc_dt += self.dt
        if self._tick % CC_EVERY:
            return
        # every few slices: alpha decay/growth and the rate-increase events
        span, self._cc_dt = self._cc_dt, 0.0
        decay = (1 - dc.g) ** (span / dc.alpha_period_s)
        self.alpha = decay * self.alpha + dc.g * self.cnp_in_period
        self.cnp_in_period[:] = False
        self.t_inc += span
        ev_t = self.t_inc >= dc.time_reset_s
        ev_b = self.b_inc >= dc.byte_reset_b
        ev = (ev_t | ev_b) & cc & (self.rc < self.f_max)
        if ev.any():
            self.stage_t += ev_t
            self.stage_b += ev_b
            self.timer_inc |= ev_t & ev
            self.t_inc[ev_t] = 0.0
            self.b_inc[ev_b] = 0.0
            hi = np.maximum(self.stage_t, self.stage_b)
            lo = np.minimum(self.stage_t, self.stage_b)
            F = dc.threshold
            bump = (
                np.where(hi < F, 0.0, np.where(lo >= F, dc.hai_bps * (lo - F + 1), dc.ai_bps)) / 8
            )
            self.rt = np.where(ev, np.minimum(self.rt + bump, self.f_max), self.rt)
            self.rc = np.where(ev, np.minimum((self.rt + self.rc) / 2, self.f_max), self.rc)

    # --- running: slices, steady-state extrapolation, the quiet shortcut -------

    def snapshot(self) -> np.ndarray:
        self._fold()
        return np.concatenate([self.ctr.vec, self.fc.ravel()])

    def simulate(
        self,
        t0: float,
        span_s: float,
        chunk_s: float = 1e-4,
        min_chunks: int = 3,
        max_chunks: int = 16,
        tol: float = 0.03,
    ) -> tuple[float, np.ndarray | None]:
        """Step slices from ``t0`` for at most ``span_s``, chunk by chunk, until steady.

        Returns the time used and, when the flows' rates stopped changing (or
        ``max_chunks`` ran out), the per-second rate of every counter over the
        last chunk for the caller to extrapolate; ``None`` when the span ran out.
        """
        t, end = t0, t0 + span_s
        poll = self.wd_poll_s
        prev: np.ndarray | None = None
        rates: np.ndarray | None = None
        queued = self.queued_bytes()
        chunk_starts: list[int] = []
        for k in range(max_chunks):
            start = t
            chunk_starts.append(self.q_trace_n)
            # latency reads the last chunks (the settled ones); a watchdog change restarts it
            first = chunk_starts[max(0, len(chunk_starts) - TRACE_CHUNKS)]
            self.q_trace_from = min(first, self.q_trace_n)
            s0 = self.snapshot()
            stop = min(end, t + chunk_s)
            changed = False
            while t < stop - 1e-12:
                self.dt = min(self.slice_s, stop - t)
                self.step(t)
                t_new = t + self.dt
                if math.floor(t_new / poll + 1e-9) != math.floor(t / poll + 1e-9):
                    changed |= self.watchdog_poll(t_new)
                t = t_new
            self.dt = self.slice_s
            delta = self.snapshot() - s0
            if stop >= end - 1e-12:
                return t - t0, None
            if self.queued_bytes() < 1.0 and not self.xoff_state.any():
                quiet = self.quiet_rates(t)  # drained: the rest is closed form
                if quiet is not None:
                    self.q_trace_from = self.q_trace_n  # a packet now finds them empty
                    return t - t0, quiet
            flows = delta[len(self.ctr.vec) :].reshape(-1, 6)[:, :3].ravel()
            rates = delta / (t - start)
            per_flow = rates[len(self.ctr.vec) :].reshape(-1, 6)
            per_flow[:, 0] = per_flow[:, 1] + per_flow[:, 2]  # steady: what goes in comes out
            self._mark_steady(start)
            if changed:
                prev = None
                continue
            was, queued = queued, self.queued_bytes()
            settled = prev is not None and k + 1 >= min_chunks
            settled = settled and abs(queued - was) <= tol * queued + 16e3  # queues stopped moving
            if settled and np.abs(flows - prev).sum() <= tol * np.abs(flows).sum() + 1.0:
                self._remember(rates)
                return t - t0, rates
            prev = flows
        return t - t0, rates

    def _mark_steady(self, chunk_start: float) -> None:
        """Which pause states held through the whole last chunk (so they persist)."""
        self.steady_paused = ~np.isnan(self.paused_since) & (self.paused_since <= chunk_start)
        self.steady_unpaused = ~np.isnan(self.unpaused_since) & (self.unpaused_since <= chunk_start)

    def quiet_rates(self, now_s: float) -> np.ndarray | None:
        """Counter rates in closed form, when nothing can queue or pause."""
        self._fold()
        if self.queued_bytes() > 1.0 or self.xoff_state.any():
            return None
        if (self.pf_ext > 0).any() or (self.ext_frames > 0).any():
            return None
        rates = np.zeros_like(self.snapshot())
        nv = len(self.ctr.vec)
        c = Counters(self.P, rates[:nv])
        fc = rates[nv:].reshape(-1, 6)
        load = np.zeros(self.P)
        storm_drop = self.wd_storm & (self.wd_mode == 0)
        for i in range(len(self.flows)):
            if not self.f_on[i] or self.f_left[i] <= 0:
                continue
            r, w, fr = self.f_max[i], self.f_wire[i], self.f_frame[i]
            fc[i, 0] = r
            delivered = True
            for s in range(self.f_first[i], self.f_last[i] + 1):
                port, q, pg = self.seg_port[s], self.seg_q[s], self.seg_pg[s]
                if pg >= 0 and (self.seg_mtu_drop[s] or storm_drop[pg]):
                    if storm_drop[pg]:
                        c["wd_rx_drop"][pg] += r / w
                    else:
                        c["rx_discards"][pg // PRIORITIES] += r / w
                    delivered = False
                    break
                load[port] += r
                if self.down[port] or storm_drop[q]:
                    c["tx_drops"][port] += r / w
                    c["q_drops"][q] += r / w
                    if storm_drop[q]:
                        c["wd_tx_drop"][q] += r / w
                    delivered = False
                    break
                c["tx_pkts"][port] += r / w
                c["tx_octets"][port] += r / w * fr
                c["q_tx_pkts"][q] += r / w
                c["q_tx_octets"][q] += r / w * fr
            if delivered and self.f_rx_drop[i]:
                c["rx_discards"][self.f_sink[i]] += r / w
                delivered = False
            if delivered:
                fc[i, 1] = r
                fc[i, 4] = self.f_base_lat[i] * r / w
            else:
                fc[i, 2] = r
        if (load > self.cap * (1 + 1e-9) + 1.0)[~self.down].any():
            return None
        self.content[:] = 0.0
        self.arriving[:] = 0.0
        self.rc = self.f_max.copy()
        self.rt = self.f_max.copy()
        self.paused_since[:] = np.nan
        self.unpaused_since = np.fmin(self.unpaused_since, now_s)
        self._load_watch(now_s)
        self.steady_paused[:] = False
        self.steady_unpaused[:] = True
        return rates

    def extrapolate(self, rates: np.ndarray, span_s: float, t_end: float) -> None:
        """Advance every counter along ``rates`` for ``span_s``; the state stays as it is."""
        if span_s <= 0:
            return
        self._fold()
        nv = len(self.ctr.vec)
        self.ctr.vec += rates[:nv] * span_s
        fr = rates[nv:].reshape(-1, 6)
        self.fc += fr * span_s
        self.f_left -= fr[:, 0] * span_s
        moving = fr[:, 1] > 0
        if moving.any():
            lat = np.divide(fr[:, 4] * self.f_wire, fr[:, 1], out=np.zeros(len(fr)), where=moving)
            self.lat_min = np.where(moving, np.minimum(self.lat_min, lat), self.lat_min)
            self.lat_max = np.where(moving, np.maximum(self.lat_max, lat), self.lat_max)
        paused_now = self.raw_pause() >= 1.0 - 1e-9
        self.paused_since = np.where(
            self.steady_paused, self.paused_since, np.where(paused_now, t_end, np.nan)
        )
        self.unpaused_since = np.where(
            self.steady_unpaused, self.unpaused_since, np.where(paused_now, np.nan, t_end)
        )
        self._load_watch(t_end)

    def completion_s(self, rates: np.ndarray) -> float:
        """Seconds until the first fixed-size flow has sent its last frame."""
        fr = rates[len(self.ctr.vec) :].reshape(-1, 6)
        going = (fr[:, 0] > 0) & np.isfinite(self.f_left) & (self.f_left > 1.0)
        if not going.any():
            return math.inf
        return float(np.min(self.f_left[going] / fr[going, 0]))

    # --- the PFC watchdog, evaluated at its poll instants --------------------

    def watchdog_poll(self, t: float) -> bool:
        """Detect and restore storms; True when something changed."""
        self._fold()
        since = np.nan_to_num(self.paused_since, nan=np.inf)
        cand = self.wd_on & ~self.wd_storm & (t - since >= self.wd_detect - 1e-9)
        changed = False
        if cand.any():
            # the origin of a storm is paused first; queues upstream of it recover with it
            cand &= since <= float(np.min(since[cand])) + 50e-6
            self.wd_storm |= cand
            self.wd_detected += cand
            changed = True
        calm_since = np.nan_to_num(self.unpaused_since, nan=np.inf)
        calm = self.wd_storm & (t - calm_since >= self.wd_restore - 1e-9)
        if calm.any():
            self.wd_storm &= ~calm
            self.wd_restored += calm
            changed = True
        if changed:
            self._refresh()
        return changed

    def next_watchdog_event_s(self, now_s: float) -> float:
        """When the next detection or restoration fires if the steady state holds."""
        due = []
        idle = self.wd_on & ~self.wd_storm & self.steady_paused
        if idle.any():
            due.append(float(np.min(self.paused_since[idle] + self.wd_detect[idle])))
        calm = self.wd_storm & self.steady_unpaused
        if calm.any():
            due.append(float(np.min(self.unpaused_since[calm] + self.wd_restore[calm])))
        if not due:
            return math.inf
        poll = self.wd_poll_s
        return max(math.ceil(min(due) / poll - 1e-9) * poll, now_s)
