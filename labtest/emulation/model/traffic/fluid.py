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
costs one settling run per distinct routing state (all of it in ``fluid_run``;
DCQCN's per-flow state and reactions are in ``fluid_dcqcn``).

For speed the slice loop works on compact arrays of the queues, ports and PGs
the current flows use, and accumulates per segment; ``_fold`` turns the
accumulators into the per-port and per-queue counters the emulators print.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from labtest.emulation.model.traffic import wireloss
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
from labtest.emulation.model.traffic.fluid_dcqcn import CC_EVERY, Dcqcn
from labtest.emulation.model.traffic.topology import PRIORITIES, Topology

_TINY = 1e-30
TRACE_SLICES = 1024  # queue occupancy kept per slice, for latency under load
_WD_MODES = {"drop": 0, "forward": 1, "alert": 2}


class FluidNet(Dcqcn):
    """Configuration, state, counters and the slice step of the fluid network.

    Its other parts: ``fluid_dcqcn`` (the senders' and receivers' congestion control,
    inherited) and ``fluid_run`` (runs to steady state, the closed form, extrapolation, the
    watchdog's polls).
    """

    def __init__(self, topo: Topology, dcqcn: DcqcnParams | None = None) -> None:
        self.topo = topo
        self.wire = wireloss.WireTable()  # gray failures' wire loss (the faults fill it)
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
        self.watched = np.zeros(Q, dtype=bool)  # queues the slice loop watches (``_index``)
        self.ctr = Counters(P)
        self.slice_s = self.dt = 1e-6
        self.flows: list[Flow] = []
        self.all_flows: list[Flow] = []
        self._content: dict[tuple[int, int], float] = {}
        self.dcqcn_state: dict[int, tuple[float, float, float, bool, float]] = {}
        self._built = False
        self.rate_cache: dict[str, np.ndarray] = {}
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
        self.fold()
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
        self.fold()
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
        seg_flow: list[int] = []
        seg_port: list[int] = []
        seg_q: list[int] = []
        seg_pg: list[int] = []
        seg_mtu: list[bool] = []
        content: list[float] = []
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
        self.seg_wloss, self.seg_wfcs = wireloss.segments(
            topo, self.wire, fl, self.seg_flow, self.seg_port)
        self.restore_dcqcn()
        self.fc = np.zeros((n, 6))  # tx, rx, drop bytes; CE frames; latency x frames; ooo
        self.lat_min = np.full(n, np.inf)
        self.lat_max = np.zeros(n)
        self._index(now_s)
        self.refresh()
        self._built = True

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
        self._release_unused(now_s)
        self.g_xoff = self.xoff_state[self.gs].copy()
        self.load_watch(now_s)
        # the accumulators are rows of one array per dimension (per segment, per flow), so
        # ``flush`` zeroes each block at once and a new accumulator is listed only here
        self._acc_seg = np.zeros((7, S))
        (self.acc_out, self.acc_lost, self.acc_in_drop, self.acc_wire, self.acc_lossy,
         self.acc_hr, self.acc_marked) = self._acc_seg
        self._acc_flow = np.zeros((7, n))
        (self.acc_rxdrop, self.acc_tx, self.acc_rx, self.acc_ce, self.acc_lat,
         self.acc_cnp_sent, self.acc_cnp_handled) = self._acc_flow
        self.acc_gframes = np.zeros(len(self.gs))
        self.acc_time = 0.0
        self.tick = 0
        self.q_trace = np.zeros((TRACE_SLICES, len(self.qs)))
        self.q_trace_n = self.q_trace_from = 0

    def _release_unused(self, now_s: float) -> None:
        """PGs no flow crosses hold no bytes: at XON, whatever they were when the flows that
        filled them moved away (a reroute strands their bytes, see ``build``); and a queue
        nothing watches is paused by nothing. Else a pause outlives its cause unwatched, and
        the PFC watchdog detects and restores a storm on it at every poll (issue 36)."""
        stale = self.xoff_state.copy()
        stale[self.gs] = False
        if stale.any():
            self.xoff_state &= ~stale
            self.ctr["pfc_tx"][stale] += 1.0  # the XON frame each sends
            self.ctr["pfc_rx"][self.peer_q[stale]] += 1.0
        self.watched = np.zeros(self.Q, dtype=bool)  # the watchdog acts on these only
        self.watched[self.ws] = True
        free = ~self.watched
        self.paused_since[free] = np.nan
        self.unpaused_since[free] = np.fmin(self.unpaused_since[free], now_s)

    def load_watch(self, t: float) -> None:
        self.w_paused_since = self.paused_since[self.ws].copy()
        self.w_unpaused_since = self.unpaused_since[self.ws].copy()
        self._watch_t = self._t = t

    def refresh(self) -> None:
        """Per-segment flags that change only with configuration or the watchdog."""
        storm_drop = self.wd_storm & (self.wd_mode == 0)
        has = self.seg_has_pg
        self.seg_flush = storm_drop[self.seg_q]
        self.seg_lost = self.down[self.seg_port] | self.seg_flush
        self.seg_wd_rx = np.zeros(len(self.seg_flow), dtype=bool)
        self.seg_wd_rx[has] = storm_drop[self.seg_pg[has]]
        self.seg_in_drop = self.seg_mtu_drop | self.seg_wd_rx
        self.any_in_drop = bool(self.seg_in_drop.any())
        self.any_wire = bool(self.seg_wloss.any())
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
        self.scenario_key = self._scenario_key()
        self.q_trace_n = self.q_trace_from = 0  # a new scenario: its queues start a new trace

    def _scenario_key(self) -> str:
        """Everything the steady rates depend on, hashed (``fluid_run`` remembers rates by it)."""
        fair = [float(f.meta.get("fair_bps", -1.0)) for f in self.flows]
        parts = [
            np.array([f.id for f in self.flows]), self.seg_port, self.seg_q, self.f_on,
            self.f_max, np.array(fair), self.f_dcqcn, self.f_ect, self.f_np, self.cap,
            self.down, self.mtu, self.ecn_q, self.kmin, self.kmax, self.pfc_g, self.honor_q,
            self.wd_on, self.wd_storm, self.pf_ext, self.ext_frames, self.seg_wloss,
        ]
        digest = hashlib.blake2b(digest_size=16)
        for a in parts:
            digest.update(np.ascontiguousarray(a).tobytes())
        return digest.hexdigest()

    def _watched_pause(self) -> np.ndarray:
        raw = self.w_ext.copy()
        if self.any_pfc:
            raw[self.gw[self.g_xoff]] = 1.0
        return raw

    def _save_state(self) -> None:
        self._content = {}
        self.dcqcn_state = {}
        if not self._built:
            return
        self.fold()
        self.flush()
        for s, b in enumerate(self.content + self.arriving):
            if b > 1e-9:
                self._content[(self.flows[self.seg_flow[s]].id, int(self.seg_port[s]))] = float(b)
        self.dcqcn_state = {
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

    def fold(self) -> None:
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
        wire = self.acc_wire / w
        c["wire_lost"][:] += np.bincount(sport, wire, minlength=P)
        c["wire_fcs"][:] += np.bincount(sport, wire * self.seg_wfcs, minlength=P)
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
        seg_drop = self.acc_lost + self.acc_lossy + self.acc_in_drop + self.acc_hr + self.acc_wire
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
        for block in (self._acc_seg, self._acc_flow, self.acc_gframes):
            block[:] = 0.0
        self.acc_time = 0.0

    def flush(self) -> None:
        """Copy per-flow counters into the Flow records and zero them."""
        self.fold()
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

    def queue_bytes(self) -> np.ndarray:
        """Bytes held per queue (what ``simulate`` watches settle, queue by queue)."""
        return np.bincount(self.seg_q, self.content + self.arriving, minlength=self.Q)

    def raw_pause(self) -> np.ndarray:
        """Fraction of time each queue is told to pause (before the watchdog overrides)."""
        self.fold()
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
        if self.any_wire:  # lost on the wire after the port counted it (wireloss.py)
            wl = out * self.seg_wloss
            self.acc_wire += wl
            out = out - wl

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
        self.tick += 1
        if self.tick % 4 == 0 and n:  # latency sampled every fourth slice
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
            self.react_dcqcn(t, ce, inj)

        # 9. the watchdog's view: lowest and highest pause seen since the last look
        np.minimum(self.w_lo, self.w_raw, out=self.w_lo)
        np.maximum(self.w_hi, self.w_raw, out=self.w_hi)
        self.acc_time += dt
        self.content = content
        self._t = t
        if self.tick % CC_EVERY == 0:
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

    # --- every counter as one vector (``fluid_run`` extrapolates along it) ------

    def snapshot(self) -> np.ndarray:
        self.fold()
        return np.concatenate([self.ctr.vec, self.fc.ravel()])
