"""A per-egress-queue fluid model of the fabric: PFC, ECN, DCQCN and the PFC watchdog.

Traffic is a fluid of *wire bytes* (frame + preamble + IFG) stepped in slices of
about half a microsecond, short enough for PFC and DCQCN timers at 400G. Each
flow crossing an egress port is a *segment* holding the flow's bytes queued
there; a port serves its unpaused segments in proportion to their backlog.

Per slice: senders inject (DCQCN-limited for RoCE), bytes that left a port
last slice arrive at the next hop (one slice of propagation), ingress drops
(MTU, watchdog), lossy tail drop or lossless headroom overflow, service, ECN
marking, then PFC: an ingress priority group (PG) above XOFF pauses the peer's
queue of that priority, below XON resumes it. Pause frames are counted per
priority in both directions (one at XOFF, one refresh per half pause time,
one XON). Receivers turn CE marks into CNPs; senders cut and recover rates.

Defaults (reference/domain-methodology.md section 4 unless marked):
- pause quanta of 512 bit times, refresh at half of 65535 quanta;
- headroom = 2 max frames + pause frame + 2 interface delays + response
  (bit times from Cisco Press ch. 7) + 2 cable delays at 5 ns/m;
- PG XOFF 512 KiB, XON 18 KiB lower (two jumbo frames): our assumption;
- ECN Kmin/Kmax: 25G 100/400 KB, 100G 400/1600 KB, 400G+ 800/3200 KB,
  Pmax 0.2 (HPCC-derived ns-3 configs);
- lossy queue tail-drop limit 1 MiB: our assumption;
- DCQCN: see ``DcqcnParams``; PFC watchdog: see ``TrafficSettings``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labtest.emulation.model.traffic.flows import Flow, PauseSource
from labtest.emulation.model.traffic.topology import PRIORITIES, Topology

PAUSE_QUANTUM_BITS = 512
MAX_QUANTA = 65535
# headroom components in bit times at 100G (Cisco Press ch. 7 via the reference)
_MAX_FRAME_BT, _PAUSE_BT, _INTF_BT = 73_888, 672, 122_880
_RESPONSE_BT = {100: 201_728, 400: 463_360}
CABLE_S_PER_M = 5e-9

XOFF_BYTES = 512 * 1024
XON_OFFSET_BYTES = 2 * 9216
LOSSY_LIMIT_BYTES = 1024 * 1024


def ecn_thresholds(speed_gbps: float) -> tuple[float, float, float]:
    """(Kmin bytes, Kmax bytes, Pmax) by port speed: HPCC-derived ns-3 configs."""
    if speed_gbps <= 25:
        return 100e3, 400e3, 0.2
    if speed_gbps <= 100:
        return 400e3, 1600e3, 0.2
    return 800e3, 3200e3, 0.2


def headroom_bytes(speed_gbps: float, cable_m: float) -> float:
    """PFC headroom: what still arrives after XOFF is sent (reference section 4)."""
    response = _RESPONSE_BT[400] if speed_gbps > 100 else _RESPONSE_BT[100]
    bits = 2 * _MAX_FRAME_BT + _PAUSE_BT + 2 * _INTF_BT + response
    bits += 2 * cable_m * CABLE_S_PER_M * speed_gbps * 1e9
    return bits / 8


def pause_time_s(speed_gbps: float, quanta: int = MAX_QUANTA) -> float:
    return quanta * PAUSE_QUANTUM_BITS / (speed_gbps * 1e9)


@dataclass(frozen=True)
class DcqcnParams:
    """NVIDIA ConnectX DCQCN defaults (DOCA "DCQCN CC parameters", via the reference).

    The rate-increase knobs are not in the reference: ``time_reset_s`` and
    ``byte_reset_b`` are NVIDIA's documented defaults as we know them, AI/HAI are
    Spirent's defaults from the reference, and the NP's CNP spacing is assumed
    equal to the RP's rate-reduce period.
    """

    g: float = 5 / 1024  # dce_tcp_g = 1019/1024 -> weight of a new sample
    alpha_period_s: float = 1e-6  # dce_tcp_rtt
    initial_alpha: float = 1023 / 1024
    min_dec_fac: float = 0.5  # rpg_min_dec_fac 50 %: largest single cut
    min_rate_bps: float = 1e6  # rpg_min_rate 1 Mb/s
    reduce_period_s: float = 4e-6  # rate_reduce_monitor_period
    time_reset_s: float = 300e-6  # rpg_time_reset
    byte_reset_b: float = 32767  # rpg_byte_reset
    threshold: int = 1  # rpg_threshold: fast-recovery stages
    ai_bps: float = 5e6
    hai_bps: float = 40e6
    cnp_interval_s: float = 4e-6
    feedback_s: float = 2e-6  # CNP travel time back to the sender


class Counters:
    """Every rate-like counter in one vector, so a steady state can be extrapolated."""

    PORT = ("tx_pkts", "tx_octets", "tx_drops", "rx_discards", "np_cnp_sent",
            "rp_cnp_handled", "np_ecn_marked")
    QUEUE = ("q_tx_pkts", "q_tx_octets", "q_drops", "q_ecn_marked", "pfc_tx", "pfc_rx",
             "wd_tx_ok", "wd_tx_drop", "wd_rx_ok", "wd_rx_drop")

    def __init__(self, n_ports: int, vec: np.ndarray | None = None) -> None:
        n_queues = n_ports * PRIORITIES
        sizes = [n_ports] * len(self.PORT) + [n_queues] * len(self.QUEUE)
        self.vec = np.zeros(sum(sizes)) if vec is None else vec
        self.views: dict[str, np.ndarray] = {}
        at = 0
        for name, n in zip(self.PORT + self.QUEUE, sizes, strict=True):
            self.views[name] = self.vec[at : at + n]
            at += n

    def __getitem__(self, name: str) -> np.ndarray:
        return self.views[name]


class FluidNet:
    """The fluid network: configuration arrays, state, counters and the slice step."""

    def __init__(self, topo: Topology, dcqcn: DcqcnParams | None = None) -> None:
        self.topo = topo
        self.dc = dcqcn or DcqcnParams()
        P = len(topo.ports)
        Q = P * PRIORITIES
        self.P, self.Q = P, Q
        self.peer = np.array([p.peer for p in topo.ports], dtype=np.int64)
        prio = np.arange(PRIORITIES)
        self.peer_q = (self.peer[:, None] * PRIORITIES + prio).ravel()
        self.switch_port = np.array([topo.is_switch(p.device) for p in topo.ports], dtype=bool)
        # configuration (``configure`` fills these)
        self.speed_gbps = np.zeros(P)
        self.cap = np.zeros(P)  # wire bytes per second
        self.down = np.zeros(P, dtype=bool)
        self.kmin = np.zeros(Q)
        self.kmax = np.ones(Q)
        self.pmax = np.zeros(Q)
        self.ecn_q = np.zeros(Q, dtype=bool)
        self.pfc_g = np.zeros(Q, dtype=bool)
        self.xoff = np.full(Q, float(XOFF_BYTES))
        self.xon = np.full(Q, float(XOFF_BYTES - XON_OFFSET_BYTES))
        self.headroom = np.zeros(Q)
        self.lossy_limit = np.full(Q, float(LOSSY_LIMIT_BYTES))
        self.honor_q = np.ones(Q, dtype=bool)
        self.refresh_s = np.ones(Q)
        self.wd_on = np.zeros(Q, dtype=bool)
        self.wd_detect = np.full(Q, 0.2)
        self.wd_restore = np.full(Q, 0.2)
        self.wd_mode = np.zeros(Q, dtype=np.int8)  # 0 drop, 1 forward, 2 alert
        self.wd_poll_s = 0.2
        # state
        self.xoff_state = np.zeros(Q, dtype=bool)
        self.pf_ext = np.zeros(Q)  # pause fraction from outside sources
        self.ext_frames = np.zeros(Q)  # their pause frames per second
        self.wd_storm = np.zeros(Q, dtype=bool)
        self.paused_since = np.full(Q, np.nan)
        self.unpaused_since = np.full(Q, np.nan)
        self.wd_detected = np.zeros(Q)
        self.wd_restored = np.zeros(Q)
        self.ctr = Counters(P)
        self.mtu = np.full(P, 9100.0)  # IP MTU per port; the model keeps it current
        self.flows: list[Flow] = []
        self._content: dict[tuple[int, int], float] = {}  # (flow id, port) -> bytes queued
        self.slice_s = self.dt = 0.5e-6
        self.steady_paused = np.zeros(Q, dtype=bool)
        self.steady_unpaused = np.zeros(Q, dtype=bool)
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
        """Per-port capacities and per-queue QoS from the device settings."""
        topo = self.topo
        self.speed_gbps = speed_gbps.astype(float)
        self.cap = self.speed_gbps * 1e9 / 8 * rate_fraction
        self.down = down.astype(bool)
        top = float(np.max(self.speed_gbps, initial=100.0))
        self.slice_s = self.dt = min(1e-6, 0.5e-6 * 400.0 / top)
        for p in topo.ports:
            q0 = p.index * PRIORITIES
            sl = slice(q0, q0 + PRIORITIES)
            speed = max(float(self.speed_gbps[p.index]), 1.0)
            kmin, kmax, pmax = ecn_thresholds(speed)
            self.kmin[sl], self.kmax[sl], self.pmax[sl] = kmin, kmax, pmax
            self.headroom[sl] = headroom_bytes(speed, float(cable_m[p.index]))
            self.refresh_s[sl] = pause_time_s(speed) / 2
            dq = qos[p.device]
            for prio in range(PRIORITIES):
                q = q0 + prio
                lossless = prio in dq.pfc
                self.pfc_g[q] = lossless and self.switch_port[p.index]
                self.lossy_limit[q] = math.inf if lossless or not self.switch_port[p.index] else (
                    LOSSY_LIMIT_BYTES
                )
                self.ecn_q[q] = dq.ecn and prio in dq.ecn_priorities and self.switch_port[p.index]
                self.honor_q[q] = dq.honor_pfc
                self.wd_on[q] = dq.pfcwd and prio in dq.pfc and self.switch_port[p.index]
                self.wd_detect[q], self.wd_restore[q] = dq.wd_detect_s, dq.wd_restore_s
                self.wd_mode[q] = {"drop": 0, "forward": 1, "alert": 2}[dq.wd_action]
        self.wd_poll_s = min((q.wd_poll_s for q in qos.values()), default=0.2)
        # a PG that no longer generates PFC stops pausing its peer
        self.xoff_state &= self.pfc_g
        # watchdog switched off: storms end at once
        ended = self.wd_storm & ~self.wd_on
        self.wd_storm &= self.wd_on

        self.wd_restored += ended

    def set_pause_sources(self, sources: list[PauseSource], now_s: float) -> None:
        self.pf_ext[:] = 0.0
        self.ext_frames[:] = 0.0
        for s in sources:
            if not s.active(now_s):
                continue
            for prio in s.priorities:
                q = s.port * PRIORITIES + prio
                self.pf_ext[q] = min(1.0, self.pf_ext[q] + s.fraction)
                self.ext_frames[q] += s.frames_per_s

    # --- scenario ----------------------------------------------------------

    def build(self, flows: list[Flow], now_s: float = 0.0) -> None:
        """Lay routed flows out as segments (sending, or still draining); carry bytes over."""
        self._save_state()
        topo = self.topo
        saved = self._content
        self.flows = [
            f for f in flows
            if f.path and (self._sending(f, now_s) or any(k[0] == f.id for k in saved))
        ]
        seg_flow, seg_port, seg_q, seg_pg, seg_next, seg_mtu = [], [], [], [], [], []
        n = len(self.flows)
        self.f_first = np.zeros(n, dtype=np.int64)
        self.f_last = np.zeros(n, dtype=np.int64)
        self.f_rx_mtu_drop = np.zeros(n, dtype=bool)
        content = []
        for i, f in enumerate(self.flows):
            assert f.path is not None
            ip_len = f.frame_bytes - 18
            self.f_first[i] = len(seg_flow)
            for h, port in enumerate(f.path):
                s = len(seg_flow)
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
                seg_next.append(s + 1 if h + 1 < len(f.path) else -1)
                content.append(saved.pop((f.id, port), 0.0))
            self.f_last[i] = len(seg_flow) - 1
            self.f_rx_mtu_drop[i] = ip_len > self.mtu[f.dst]
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
        self.seg_next = np.array(seg_next, dtype=np.int64)
        self.seg_mtu_drop = np.array(seg_mtu, dtype=bool)
        self.content = np.array(content, dtype=float)
        self.arriving = np.zeros(len(seg_flow))
        fl = self.flows
        self.f_on = np.array([self._sending(f, now_s) for f in fl], dtype=bool)
        self.f_wire = np.array([f.wire_bytes for f in fl], dtype=float)
        self.f_frame = np.array([f.frame_bytes for f in fl], dtype=float)
        self.f_max = np.array([f.rate_bps / 8 for f in fl], dtype=float)
        self.f_dcqcn = np.array([f.dcqcn for f in fl], dtype=bool)
        self.f_ecn_np = np.array([f.np_enabled for f in fl], dtype=bool)
        self.f_base_lat = np.array([f.base_latency_s for f in fl], dtype=float)
        self.f_src = np.array([f.src for f in fl], dtype=np.int64)
        self.f_dst = np.array([f.dst for f in fl], dtype=np.int64)
        self.f_left = np.array([(f.max_frames - f.tx_frames) * f.wire_bytes for f in fl])
        # DCQCN state, kept per flow id across rebuilds
        st = self._dcqcn_state
        fresh = (0.0, 0.0, self.dc.initial_alpha, False)
        rows = [st.get(f.id, (f.rate_bps / 8, f.rate_bps / 8, *fresh[2:])) for f in fl]
        self.rc = np.minimum(np.array([r[0] for r in rows], dtype=float), self.f_max)
        self.rt = np.minimum(np.array([r[1] for r in rows], dtype=float), self.f_max)
        self.alpha = np.array([r[2] for r in rows], dtype=float)
        self.seen_cnp = np.array([r[3] for r in rows], dtype=bool)
        self.last_cut = np.full(n, -1.0)
        self.t_inc = np.zeros(n)
        self.b_inc = np.zeros(n)
        self.stage_t = np.zeros(n)
        self.stage_b = np.zeros(n)
        self.cnp_in_period = np.zeros(n, dtype=bool)
        self.mark_acc = np.zeros(n)
        self.last_cnp = np.full(n, -1.0)
        self.cnp_due = np.full(n, np.inf)
        self.cnp_count_due = np.zeros(n)
        # per-flow counters since the last flush: tx, rx, drop bytes, CE frames,
        # latency x frames, out-of-order frames
        self.fc = np.zeros((n, 6))
        self.lat_min = np.full(n, np.inf)
        self.lat_max = np.zeros(n)

    def _sending(self, f: Flow, now_s: float) -> bool:
        return f.active(now_s) and not self.down[f.src]

    def _save_state(self) -> None:
        self._content = {}
        self._dcqcn_state: dict[int, tuple[float, float, float, bool]] = {}
        if not hasattr(self, "content"):
            return
        self.flush()
        for s, b in enumerate(self.content + self.arriving):
            if b > 1e-9:
                f = self.flows[self.seg_flow[s]]
                self._content[(f.id, int(self.seg_port[s]))] = float(b)
        self._dcqcn_state = {
            f.id: (float(self.rc[i]), float(self.rt[i]), float(self.alpha[i]), bool(self.seen_cnp[i]))
            for i, f in enumerate(self.flows)
        }

    def flush(self) -> None:
        """Copy per-flow counters into the Flow records and zero them."""
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
        pf = self.pf_ext.copy()
        pf[self.peer_q[self.xoff_state]] = 1.0
        return pf

    def effective_pause(self) -> np.ndarray:
        pf = self.raw_pause()
        pf[~self.honor_q] = 0.0
        pf[self.wd_storm & (self.wd_mode != 2)] = 0.0
        return pf

    # --- one slice -----------------------------------------------------------

    def step(self, now_s: float) -> None:
        dt = self.dt
        c = self.ctr
        content, arriving = self.content, self.arriving
        seg_port, seg_q, seg_flow, seg_pg = self.seg_port, self.seg_q, self.seg_flow, self.seg_pg
        P, Q, n = self.P, self.Q, len(self.flows)
        wire = self.f_wire[seg_flow]
        frame = self.f_frame[seg_flow]
        fc = self.fc
        storm_drop = self.wd_storm & (self.wd_mode == 0)

        # 1. senders inject, limited by NIC room (a paused NIC just sends less)
        rate = np.where(self.f_dcqcn, self.rc, self.f_max) * self.f_on
        want = np.minimum(rate * dt, np.maximum(self.f_left, 0.0))
        first = self.f_first
        nic_port = seg_port[first]
        held = np.bincount(nic_port, content[first], minlength=P)
        room = np.maximum(2 * self.cap * dt - held, 0.0)
        asked = np.bincount(nic_port, want, minlength=P)
        scale = np.divide(room, asked, out=np.zeros(P), where=asked > 0)
        inj = want * np.minimum(scale, 1.0)[nic_port]
        content[first] += inj
        fc[:, 0] += inj
        self.f_left -= inj

        # 2. arrivals; ingress drops (MTU, watchdog rx drop)
        arr = arriving
        in_drop_seg = self.seg_mtu_drop.copy()
        has_pg = seg_pg >= 0
        wd_rx = np.zeros(len(arr), dtype=bool)
        wd_rx[has_pg] = storm_drop[seg_pg[has_pg]]
        in_drop_seg |= wd_rx
        dropped_in = arr * in_drop_seg
        if dropped_in.any():
            pkts = dropped_in / wire
            ingress = np.where(has_pg, seg_pg // PRIORITIES, 0)
            c["rx_discards"][:] += np.bincount(ingress, pkts * ~wd_rx, minlength=P)
            c["wd_rx_drop"][:] += np.bincount(np.where(has_pg, seg_pg, 0), pkts * wd_rx, minlength=Q)
            fc[:, 2] += np.bincount(seg_flow, dropped_in, minlength=n)
        content += arr - dropped_in
        arriving = self.arriving = np.zeros_like(arr)

        # 3. buffer limits: lossy tail drop, lossless headroom overflow
        qbytes = np.bincount(seg_q, content, minlength=Q)
        over = np.maximum(qbytes - self.lossy_limit, 0.0)
        if over.any():
            frac = np.divide(over, qbytes, out=np.zeros(Q), where=qbytes > 0)[seg_q]
            drop = content * frac
            content -= drop
            c["q_drops"][:] += np.bincount(seg_q, drop / wire, minlength=Q)
            c["tx_drops"][:] += np.bincount(seg_port, drop / wire, minlength=P)
            fc[:, 2] += np.bincount(seg_flow, drop, minlength=n)
            qbytes -= over
        pg_idx = np.where(has_pg, seg_pg, 0)
        pg_bytes = np.bincount(pg_idx, content * has_pg, minlength=Q)
        over = np.maximum(pg_bytes - self.xoff - self.headroom, 0.0) * self.pfc_g
        if over.any():
            frac = np.divide(over, pg_bytes, out=np.zeros(Q), where=pg_bytes > 0)[pg_idx] * has_pg
            drop = content * frac
            content -= drop
            c["rx_discards"][:] += np.bincount(pg_idx // PRIORITIES, drop / wire, minlength=P)
            fc[:, 2] += np.bincount(seg_flow, drop, minlength=n)
            qbytes = np.bincount(seg_q, content, minlength=Q)

        # 4. service: ports share capacity among unpaused queues by backlog
        pause = self.effective_pause()
        weight = content * (1.0 - pause[seg_q])
        port_w = np.bincount(seg_port, weight, minlength=P)
        out_total = np.minimum(self.cap * dt, port_w)
        share = np.divide(out_total, port_w, out=np.zeros(P), where=port_w > 0)
        out = weight * share[seg_port]
        content -= out
        lost = out * (self.down[seg_port] | storm_drop[seg_q])
        if lost.any():
            pk = lost / wire
            c["tx_drops"][:] += np.bincount(seg_port, pk, minlength=P)
            c["q_drops"][:] += np.bincount(seg_q, pk, minlength=Q)
            c["wd_tx_drop"][:] += np.bincount(seg_q, pk * storm_drop[seg_q], minlength=Q)
            fc[:, 2] += np.bincount(seg_flow, lost, minlength=n)
            out = out - lost
        if storm_drop.any():  # the watchdog empties a storming queue
            flush = content * storm_drop[seg_q]
            content -= flush
            pk = flush / wire
            c["q_drops"][:] += np.bincount(seg_q, pk, minlength=Q)
            c["wd_tx_drop"][:] += np.bincount(seg_q, pk, minlength=Q)
            fc[:, 2] += np.bincount(seg_flow, flush, minlength=n)
        pkts = out / wire
        c["tx_pkts"][:] += np.bincount(seg_port, pkts, minlength=P)
        c["tx_octets"][:] += np.bincount(seg_port, pkts * frame, minlength=P)
        c["q_tx_pkts"][:] += np.bincount(seg_q, pkts, minlength=Q)
        c["q_tx_octets"][:] += np.bincount(seg_q, pkts * frame, minlength=Q)
        fwd = self.wd_storm & (self.wd_mode == 1)
        if fwd.any():
            c["wd_tx_ok"][:] += np.bincount(seg_q, pkts * fwd[seg_q], minlength=Q)

        # 5. ECN marking at switch egress, linear from Kmin to Pmax at Kmax
        span = np.maximum(self.kmax - self.kmin, 1.0)
        p_mark = np.clip((qbytes - self.kmin) / span, 0.0, 1.0) * self.pmax
        p_mark = np.where(qbytes >= self.kmax, 1.0, p_mark) * self.ecn_q
        marked = pkts * p_mark[seg_q]
        if marked.any():
            c["q_ecn_marked"][:] += np.bincount(seg_q, marked, minlength=Q)
        ce_now = np.bincount(seg_flow, marked, minlength=n)

        # 6. forward to the next hop, or deliver
        nxt = self.seg_next
        mid = nxt >= 0
        arriving[nxt[mid]] = out[mid]
        last = self.f_last
        got = out[last]
        rx_drop = got * self.f_rx_mtu_drop
        if rx_drop.any():
            c["rx_discards"][:] += np.bincount(self.f_dst, rx_drop / self.f_wire, minlength=P)
            fc[:, 2] += rx_drop
            got = got - rx_drop
        fc[:, 1] += got
        fc[:, 3] += ce_now
        c["np_ecn_marked"][:] += np.bincount(self.f_dst, ce_now, minlength=P)
        if got.any():
            port_b = np.bincount(seg_port, content, minlength=P)
            delay = np.divide(port_b, self.cap, out=np.zeros(P), where=self.cap > 0)
            lat = self.f_base_lat + np.bincount(seg_flow, delay[seg_port], minlength=n)
            moving = got > 0
            fc[:, 4] += lat * got / self.f_wire
            self.lat_min = np.where(moving, np.minimum(self.lat_min, lat), self.lat_min)
            self.lat_max = np.where(moving, np.maximum(self.lat_max, lat), self.lat_max)

        # 7. PFC: ingress PGs above XOFF pause the peer; below XON resume it
        pg_bytes = np.bincount(pg_idx, content * has_pg, minlength=Q)
        was = self.xoff_state
        now_off = np.where(was, pg_bytes > self.xon, pg_bytes >= self.xoff) & self.pfc_g
        now_off &= ~storm_drop  # a watchdog-dropping queue stops generating pause
        edges = (now_off != was).astype(float)
        frames = edges + now_off * (dt / self.refresh_s)
        ext = self.ext_frames * dt
        c["pfc_tx"][:] += frames
        c["pfc_rx"][self.peer_q] += frames
        c["pfc_rx"][:] += ext
        c["pfc_tx"][self.peer_q] += ext
        self.xoff_state = now_off

        # 8. DCQCN: notification point (receiver) and reaction point (sender)
        if self.f_dcqcn.any():
            self._dcqcn(now_s + dt, ce_now, inj)

        # 9. watchdog bookkeeping: how long each queue has been (un)paused
        raw = self.raw_pause() >= 1.0 - 1e-9
        t = now_s + dt
        self.paused_since = np.where(raw, np.where(np.isnan(self.paused_since), t, self.paused_since), np.nan)
        self.unpaused_since = np.where(
            raw, np.nan, np.where(np.isnan(self.unpaused_since), t, self.unpaused_since)
        )
        self.content = content

    def _dcqcn(self, t: float, ce_now: np.ndarray, inj: np.ndarray) -> None:
        dc, c = self.dc, self.ctr
        on = self.f_dcqcn & self.f_ecn_np
        # NP: at most one CNP per QP per interval, when marked packets arrived
        self.mark_acc += ce_now * on
        send = (self.mark_acc >= 1.0) & (t - self.last_cnp >= dc.cnp_interval_s) & on
        if send.any():
            c["np_cnp_sent"][:] += np.bincount(self.f_dst, send, minlength=self.P)
            self.last_cnp[send] = t
            self.mark_acc[send] = 0.0
            self.cnp_due = np.where(send & np.isinf(self.cnp_due), t + dc.feedback_s, self.cnp_due)
            self.cnp_count_due += send
        # RP: CNPs that have travelled back
        arrived = self.cnp_due <= t
        if arrived.any():
            c["rp_cnp_handled"][:] += np.bincount(self.f_src, self.cnp_count_due * arrived,
                                                  minlength=self.P)
            self.cnp_count_due[arrived] = 0.0
            self.cnp_due[arrived] = np.inf
            self.cnp_in_period |= arrived
            first = arrived & ~self.seen_cnp
            self.alpha[first] = dc.initial_alpha
            self.seen_cnp |= arrived
            cut = arrived & (t - self.last_cut >= dc.reduce_period_s)
            if cut.any():
                factor = np.maximum(1.0 - self.alpha / 2.0, 1.0 - dc.min_dec_fac)
                self.rt = np.where(cut, self.rc, self.rt)
                self.rc = np.where(cut, np.maximum(self.rc * factor, dc.min_rate_bps / 8), self.rc)
                self.last_cut[cut] = t
                for arr in (self.t_inc, self.b_inc, self.stage_t, self.stage_b):
                    arr[cut] = 0.0
        # alpha update once per period
        if math.floor(t / dc.alpha_period_s) != math.floor((t - self.dt) / dc.alpha_period_s):
            g = dc.g
            self.alpha = np.where(self.cnp_in_period, (1 - g) * self.alpha + g, (1 - g) * self.alpha)
            self.cnp_in_period[:] = False
        # rate increase: timer and byte counter events
        self.t_inc += self.dt
        self.b_inc += inj
        ev_t = self.t_inc >= dc.time_reset_s
        ev_b = self.b_inc >= dc.byte_reset_b
        self.stage_t += ev_t
        self.stage_b += ev_b
        self.t_inc[ev_t] = 0.0
        self.b_inc[ev_b] = 0.0
        ev = (ev_t | ev_b) & self.f_dcqcn
        if ev.any():
            hi = np.maximum(self.stage_t, self.stage_b)
            lo = np.minimum(self.stage_t, self.stage_b)
            F = dc.threshold
            bump = np.where(hi < F, 0.0, np.where(lo >= F, dc.hai_bps * (lo - F + 1), dc.ai_bps)) / 8
            self.rt = np.where(ev, np.minimum(self.rt + bump, self.f_max), self.rt)
            self.rc = np.where(ev, np.minimum((self.rt + self.rc) / 2, self.f_max), self.rc)

    # --- running: slices, steady-state extrapolation, the quiet shortcut -------

    def snapshot(self) -> np.ndarray:
        return np.concatenate([self.ctr.vec, self.fc.ravel()])

    def simulate(
        self,
        t0: float,
        span_s: float,
        chunk_s: float = 5e-4,
        min_chunks: int = 3,
        max_chunks: int = 16,
        tol: float = 0.03,
    ) -> tuple[float, np.ndarray | None]:
        """Step slices from ``t0`` for at most ``span_s``, in chunks, until steady.

        Returns the time used and, when the flows' rates stopped changing (or
        ``max_chunks`` ran out), the per-second rate of every counter over the
        last chunk, which the caller extrapolates. ``None``: the span is used up.
        """
        t, end = t0, t0 + span_s
        poll = self.wd_poll_s
        prev: np.ndarray | None = None
        rates: np.ndarray | None = None
        for k in range(max_chunks):
            if t >= end - 1e-12:
                return t - t0, None
            start = t
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
            n = len(self.ctr.vec)
            flows = delta[n:].reshape(-1, 6)[:, :3].ravel()
            rates = delta / (t - start)
            self._mark_steady(start)
            if changed:
                prev = None
                continue
            if prev is not None and k + 1 >= min_chunks:
                if np.abs(flows - prev).sum() <= tol * np.abs(flows).sum() + 1.0:
                    return t - t0, rates
            prev = flows
        return t - t0, rates

    def _mark_steady(self, chunk_start: float) -> None:
        """Which pause states held through the whole last chunk (so they persist)."""
        self.steady_paused = ~np.isnan(self.paused_since) & (self.paused_since <= chunk_start)
        self.steady_unpaused = ~np.isnan(self.unpaused_since) & (self.unpaused_since <= chunk_start)

    def quiet_rates(self, now_s: float) -> np.ndarray | None:
        """Counter rates computed without slices, when nothing can queue or pause."""
        if self.queued_bytes() > 1.0 or self.xoff_state.any():
            return None
        if (self.pf_ext > 0).any() or (self.ext_frames > 0).any():
            return None
        rates = np.zeros_like(self.snapshot())
        n = len(self.ctr.vec)
        c = Counters(self.P, rates[:n])
        fc = rates[n:].reshape(-1, 6)
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
            if delivered and self.f_rx_mtu_drop[i]:
                c["rx_discards"][self.f_dst[i]] += r / w
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
        self.unpaused_since = np.where(np.isnan(self.unpaused_since), now_s, self.unpaused_since)
        self.steady_paused[:] = False
        self.steady_unpaused[:] = True
        return rates

    def extrapolate(self, rates: np.ndarray, span_s: float, t_end: float) -> None:
        """Advance every counter along ``rates`` for ``span_s``; the state stays as it is."""
        if span_s <= 0:
            return
        n = len(self.ctr.vec)
        self.ctr.vec += rates[:n] * span_s
        fr = rates[n:].reshape(-1, 6)
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

    def completion_s(self, rates: np.ndarray) -> float:
        """Seconds until the first fixed-size flow has sent its last frame."""
        fr = rates[len(self.ctr.vec):].reshape(-1, 6)
        going = (fr[:, 0] > 0) & np.isfinite(self.f_left)
        if not going.any():
            return math.inf
        return float(np.min(np.maximum(self.f_left[going], 0.0) / fr[going, 0]))

    # --- the PFC watchdog (evaluated at its poll instants) -------------------

    def watchdog_poll(self, t: float) -> bool:
        """Detect and restore storms; True when something changed."""
        changed = False
        cand = self.wd_on & ~self.wd_storm & ~np.isnan(self.paused_since)
        cand &= (t - np.nan_to_num(self.paused_since, nan=np.inf)) >= self.wd_detect - 1e-9
        if cand.any():
            # the origin of a storm is paused first; queues upstream of it usually recover
            earliest = float(np.min(self.paused_since[cand]))
            cand &= self.paused_since <= earliest + 50e-6
            self.wd_storm |= cand
            self.wd_detected += cand
            changed = True
        quiet = self.wd_storm & ~np.isnan(self.unpaused_since)
        quiet &= (t - np.nan_to_num(self.unpaused_since, nan=np.inf)) >= self.wd_restore - 1e-9
        if quiet.any():
            self.wd_storm &= ~quiet
            self.wd_restored += quiet
            changed = True
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
        return max(math.ceil((min(due) - 1e-9) / poll) * poll, now_s)


@dataclass
class DeviceQos:
    """Mutable QoS state of one device (faults change it; ``configure`` applies it)."""

    pfc: set[int]
    ecn: bool
    ecn_priorities: set[int]
    pfcwd: bool
    wd_detect_s: float
    wd_restore_s: float
    wd_poll_s: float
    wd_action: str
    honor_pfc: bool
