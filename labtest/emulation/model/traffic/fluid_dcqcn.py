"""DCQCN in the fluid engine: the receivers' CNPs and the senders' rate control.

A part of ``FluidNet`` (``fluid.py``, which inherits it) kept apart because it is one
algorithm: ``restore_dcqcn`` lays the per-flow state out after a rebuild, ``react_dcqcn``
runs once per slice. It declares the per-flow state it owns and the engine's arrays it
reads, so it needs nothing of the engine's module (the engine needs it).
"""

from __future__ import annotations

import math

import numpy as np

from labtest.emulation.model.traffic.congestion import DcqcnParams
from labtest.emulation.model.traffic.flows import Flow

CC_EVERY = 4  # slices between DCQCN alpha / rate-increase updates
SEED_ABOVE_FAIR = 1.02  # DCQCN settles a little above the fair share, on a standing queue


class Dcqcn:
    """The engine's DCQCN: its per-flow state and the two steps that move it."""

    # per-flow state, laid out by ``restore_dcqcn`` on every ``build``
    rc: np.ndarray  # current rate, bytes/s
    rt: np.ndarray  # target rate, bytes/s
    alpha: np.ndarray
    seen_cnp: np.ndarray
    last_cut: np.ndarray  # s
    t_inc: np.ndarray  # s since the last rate increase
    b_inc: np.ndarray  # bytes since the last rate increase
    stage_t: np.ndarray
    stage_b: np.ndarray
    cnp_in_period: np.ndarray
    timer_inc: np.ndarray
    mark_acc: np.ndarray
    last_cnp: np.ndarray  # s
    cnp_due: np.ndarray  # s
    cnp_count_due: np.ndarray
    cnp_next: float  # s
    cc_dt: float  # s
    # what it reads of the engine (``FluidNet`` sets them: configuration and ``build``)
    dc: DcqcnParams
    flows: list[Flow]
    dcqcn_state: dict[int, tuple[float, float, float, bool, float]]
    ecn_q: np.ndarray
    seg_q: np.ndarray
    seg_first: np.ndarray
    seg_flow: np.ndarray
    f_max: np.ndarray
    f_dcqcn: np.ndarray
    f_ect: np.ndarray
    f_np: np.ndarray
    acc_cnp_sent: np.ndarray
    acc_cnp_handled: np.ndarray
    dt: float
    tick: int

    def restore_dcqcn(self) -> None:
        """Per-flow DCQCN state for the flows just built: carried over, or seeded at the
        fair share."""
        fl, n = self.flows, len(self.flows)
        fresh = (math.inf, math.inf, self.dc.initial_alpha, False, 0.0)
        rows = [self.dcqcn_state.get(f.id, fresh) for f in fl]
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
        self.cnp_next = math.inf
        self.cc_dt = 0.0


    def react_dcqcn(self, t: float, ce: np.ndarray | None, inj: np.ndarray) -> None:
        """One slice of DCQCN: CNPs for marked arrivals, rate cuts, alpha and rate increases."""
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
                due = np.isinf(self.cnp_due)
                self.cnp_due = np.where(send & due, t + dc.feedback_s, self.cnp_due)
                self.cnp_count_due += send
                self.cnp_next = float(self.cnp_due.min())
        # reaction point: CNPs that made it back cut the rate (at most once per period)
        if self.cnp_next <= t:
            arrived = self.cnp_due <= t
            self.acc_cnp_handled += self.cnp_count_due * arrived
            self.cnp_count_due[arrived] = 0.0
            self.cnp_due[arrived] = np.inf
            self.cnp_next = float(self.cnp_due.min())
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
        self.cc_dt += self.dt
        if self.tick % CC_EVERY:
            return
        # every few slices: alpha decay/growth and the rate-increase events
        span, self.cc_dt = self.cc_dt, 0.0
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
            step = np.where(lo >= F, dc.hai_bps * (lo - F + 1), dc.ai_bps)
            bump = np.where(hi < F, 0.0, step) / 8
            self.rt = np.where(ev, np.minimum(self.rt + bump, self.f_max), self.rt)
            self.rc = np.where(ev, np.minimum((self.rt + self.rc) / 2, self.f_max), self.rc)
