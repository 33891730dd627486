"""DCQCN in the fluid engine: the receivers' CNPs and the senders' rate control.

Parts of ``FluidNet`` (``fluid.py``) kept apart because they are one algorithm:
``restore`` lays the per-flow state out after a rebuild, ``react`` runs once per slice.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from labtest.emulation.model.traffic.fluid import FluidNet

CC_EVERY = 4  # slices between DCQCN alpha / rate-increase updates
SEED_ABOVE_FAIR = 1.02  # DCQCN settles a little above the fair share, on a standing queue


def restore(net: FluidNet) -> None:
    """Per-flow DCQCN state for the flows just built: carried over, or seeded at the fair share."""
    fl, n = net.flows, len(net.flows)
    fresh = (math.inf, math.inf, net.dc.initial_alpha, False, 0.0)
    rows = [net.dcqcn_state.get(f.id, fresh) for f in fl]
    # a rate limiter that never cut follows the flow's ceiling when it moves
    uncut = np.array([r[0] >= r[4] * (1 - 1e-9) for r in rows], dtype=bool)
    rc = np.array([r[0] for r in rows], dtype=float)
    rt = np.array([r[1] for r in rows], dtype=float)
    net.rc = np.where(uncut | ~net.f_dcqcn, net.f_max, np.minimum(rc, net.f_max))
    net.rt = np.where(uncut | ~net.f_dcqcn, net.f_max, np.minimum(rt, net.f_max))
    # DCQCN flows restart from their max-min share when the model provides one: the
    # converged state, without the start-up transient (see ``DcqcnParams``)
    fair = np.array([float(f.meta.get("fair_bps", math.inf)) / 8 for f in fl], dtype=float)
    # a flow some hop can mark: one switch that does not mark (ecn_disabled) leaves the
    # others to cut it, so it converges like the rest and starts at its share
    markable = net.ecn_q[net.seg_q] & ~net.seg_first
    marks = np.bincount(net.seg_flow, markable, minlength=n) > 0
    seeded = net.f_dcqcn & net.f_ect & net.f_np & marks & np.isfinite(fair)
    start = np.clip(fair * SEED_ABOVE_FAIR, net.dc.min_rate_bps / 8, net.f_max)
    net.rc = np.where(seeded, start, net.rc)
    net.rt = np.where(seeded, start, net.rt)
    net.alpha = np.array([r[2] for r in rows], dtype=float)
    net.seen_cnp = np.array([r[3] for r in rows], dtype=bool)
    net.last_cut = np.full(n, -1.0)
    net.t_inc = np.zeros(n)
    net.b_inc = np.zeros(n)
    net.stage_t = np.zeros(n)
    net.stage_b = np.zeros(n)
    net.cnp_in_period = np.zeros(n, dtype=bool)
    net.timer_inc = np.zeros(n, dtype=bool)
    net.mark_acc = np.zeros(n)
    net.last_cnp = np.full(n, -1.0)
    net.cnp_due = np.full(n, np.inf)
    net.cnp_count_due = np.zeros(n)
    net.cnp_next = math.inf
    net.cc_dt = 0.0


def react(net: FluidNet, t: float, ce: np.ndarray | None, inj: np.ndarray) -> None:
    """One slice of DCQCN: CNPs for marked arrivals, rate cuts, alpha and rate increases."""
    dc = net.dc
    cc = net.f_dcqcn
    # notification point: at most one CNP per QP per interval, for marked arrivals
    if ce is not None:
        net.mark_acc += ce * net.f_np
        send = (net.mark_acc >= 1.0) & (t - net.last_cnp >= dc.cnp_interval_s) & cc
        if send.any():
            net.acc_cnp_sent += send
            net.last_cnp[send] = t
            net.mark_acc[send] = 0.0
            net.cnp_due = np.where(send & np.isinf(net.cnp_due), t + dc.feedback_s, net.cnp_due)
            net.cnp_count_due += send
            net.cnp_next = float(net.cnp_due.min())
    # reaction point: CNPs that made it back cut the rate (at most once per period)
    if net.cnp_next <= t:
        arrived = net.cnp_due <= t
        net.acc_cnp_handled += net.cnp_count_due * arrived
        net.cnp_count_due[arrived] = 0.0
        net.cnp_due[arrived] = np.inf
        net.cnp_next = float(net.cnp_due.min())
        net.cnp_in_period |= arrived
        net.alpha[arrived & ~net.seen_cnp] = dc.initial_alpha
        net.seen_cnp |= arrived
        cut = arrived & (t - net.last_cut >= dc.reduce_period_s)
        if cut.any():
            factor = np.maximum(1.0 - net.alpha / 2.0, 1.0 - dc.min_dec_fac)
            clamp = cut & (dc.clamp_target or net.timer_inc)
            net.rt = np.where(clamp, net.rc, net.rt)
            net.timer_inc[cut] = False
            net.rc = np.where(cut, np.maximum(net.rc * factor, dc.min_rate_bps / 8), net.rc)
            net.last_cut[cut] = t
            for a in (net.t_inc, net.b_inc, net.stage_t, net.stage_b):
                a[cut] = 0.0
    net.b_inc += inj
    net.cc_dt += net.dt
    if net.tick % CC_EVERY:
        return
    # every few slices: alpha decay/growth and the rate-increase events
    span, net.cc_dt = net.cc_dt, 0.0
    decay = (1 - dc.g) ** (span / dc.alpha_period_s)
    net.alpha = decay * net.alpha + dc.g * net.cnp_in_period
    net.cnp_in_period[:] = False
    net.t_inc += span
    ev_t = net.t_inc >= dc.time_reset_s
    ev_b = net.b_inc >= dc.byte_reset_b
    ev = (ev_t | ev_b) & cc & (net.rc < net.f_max)
    if ev.any():
        net.stage_t += ev_t
        net.stage_b += ev_b
        net.timer_inc |= ev_t & ev
        net.t_inc[ev_t] = 0.0
        net.b_inc[ev_b] = 0.0
        hi = np.maximum(net.stage_t, net.stage_b)
        lo = np.minimum(net.stage_t, net.stage_b)
        F = dc.threshold
        bump = np.where(hi < F, 0.0, np.where(lo >= F, dc.hai_bps * (lo - F + 1), dc.ai_bps)) / 8
        net.rt = np.where(ev, np.minimum(net.rt + bump, net.f_max), net.rt)
        net.rc = np.where(ev, np.minimum((net.rt + net.rc) / 2, net.f_max), net.rc)
