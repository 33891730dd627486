"""Running the fluid engine over long spans without stepping every slice.

``simulate`` steps chunks until the rates settle, ``quiet_rates`` answers in closed
form when nothing can queue, ``extrapolate`` carries every counter forward along
settled rates, the PFC watchdog is evaluated at its poll instants, and latency
under load is drawn from the queues' trace of the settled chunks. Functions
over a ``FluidNet`` (``fluid.py``); the traffic model calls them between events.
"""

from __future__ import annotations

import math

import numpy as np

from labtest.emulation.model.traffic.congestion import Counters
from labtest.emulation.model.traffic.fluid import TRACE_SLICES, FluidNet
from labtest.emulation.model.traffic.topology import PRIORITIES

RATE_CACHE_SIZE = 64  # scenarios whose steady rates are kept (a flapping link cycles a few)
TRACE_CHUNKS = 2  # the settled trace: the last chunks ``simulate`` stepped
CHUNK_S = 1e-4  # a settling run's chunk: rates are compared chunk to chunk
MAX_CHUNKS = 16  # chunks before a run gives up settling and answers the last one's rates


def simulate(
    net: FluidNet,
    t0: float,
    span_s: float,
    chunk_s: float = CHUNK_S,
    min_chunks: int = 3,
    max_chunks: int = MAX_CHUNKS,
    tol: float = 0.03,
) -> tuple[float, np.ndarray | None]:
    """Step slices from ``t0`` for at most ``span_s``, chunk by chunk, until steady.

    Returns the time used and, when the flows' rates stopped changing (or
    ``max_chunks`` ran out), the per-second rate of every counter over the
    last chunk for the caller to extrapolate; ``None`` when the span ran out.
    """
    t, end = t0, t0 + span_s
    poll = net.wd_poll_s
    prev: np.ndarray | None = None
    rates: np.ndarray | None = None
    queued = net.queue_bytes()
    chunk_starts: list[int] = []
    for k in range(max_chunks):
        start = t
        chunk_starts.append(net.q_trace_n)
        # latency reads the last chunks (the settled ones); a watchdog change restarts it
        first = chunk_starts[max(0, len(chunk_starts) - TRACE_CHUNKS)]
        net.q_trace_from = min(first, net.q_trace_n)
        s0 = net.snapshot()
        stop = min(end, t + chunk_s)
        changed = False
        while t < stop - 1e-12:
            net.dt = min(net.slice_s, stop - t)
            net.step(t)
            t_new = t + net.dt
            if math.floor(t_new / poll + 1e-9) != math.floor(t / poll + 1e-9):
                changed |= watchdog_poll(net, t_new)
            t = t_new
        net.dt = net.slice_s
        delta = net.snapshot() - s0
        if stop >= end - 1e-12:
            return t - t0, None
        if net.queued_bytes() < 1.0 and not net.xoff_state.any():
            quiet = quiet_rates(net, t)  # drained: the rest is closed form
            if quiet is not None:
                net.q_trace_from = net.q_trace_n  # a packet now finds them empty
                return t - t0, quiet
        flows = delta[len(net.ctr.vec) :].reshape(-1, 6)[:, :3].ravel()
        rates = delta / (t - start)
        per_flow = rates[len(net.ctr.vec) :].reshape(-1, 6)
        per_flow[:, 0] = per_flow[:, 1] + per_flow[:, 2]  # steady: what goes in comes out
        _mark_steady(net, start)
        if changed:
            prev = None
            continue
        was, queued = queued, net.queue_bytes()
        settled = prev is not None and k + 1 >= min_chunks
        # every queue stopped moving, each on its own: on their sum one bottleneck still
        # filling towards Kmin hid among the others and was extrapolated unmarked (a
        # straggler link at 204 Gb/s fed 221 held 670 of Kmin's 800 KB and marked nothing
        # in half the placements; the doctor saw no congestion there)
        settled = settled and bool((np.abs(queued - was) <= tol * queued + 16e3).all())
        if settled and np.abs(flows - prev).sum() <= tol * np.abs(flows).sum() + 1.0:
            remember(net, rates)
            return t - t0, rates
        prev = flows
    return t - t0, rates


def _mark_steady(net: FluidNet, chunk_start: float) -> None:
    """Which pause states held through the whole last chunk (so they persist)."""
    net.steady_paused = ~np.isnan(net.paused_since) & (net.paused_since <= chunk_start)
    net.steady_unpaused = ~np.isnan(net.unpaused_since) & (net.unpaused_since <= chunk_start)


def quiet_rates(net: FluidNet, now_s: float) -> np.ndarray | None:
    """Counter rates in closed form, when nothing can queue or pause."""
    net.fold()
    if net.queued_bytes() > 1.0 or net.xoff_state.any():
        return None
    if (net.pf_ext > 0).any() or (net.ext_frames > 0).any():
        return None
    rates = np.zeros_like(net.snapshot())
    nv = len(net.ctr.vec)
    c = Counters(net.P, rates[:nv])
    fc = rates[nv:].reshape(-1, 6)
    load = np.zeros(net.P)
    storm_drop = net.wd_storm & (net.wd_mode == 0)
    for i in range(len(net.flows)):
        if not net.f_on[i] or net.f_left[i] <= 0:
            continue
        r, w, fr = net.f_max[i], net.f_wire[i], net.f_frame[i]
        fc[i, 0] = r
        delivered = True
        for s in range(net.f_first[i], net.f_last[i] + 1):
            port, q, pg = net.seg_port[s], net.seg_q[s], net.seg_pg[s]
            if pg >= 0 and (net.seg_mtu_drop[s] or storm_drop[pg]):
                if storm_drop[pg]:
                    c["wd_rx_drop"][pg] += r / w
                else:
                    c["rx_discards"][pg // PRIORITIES] += r / w
                delivered = False
                break
            load[port] += r
            if net.down[port] or storm_drop[q]:
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
            if net.seg_wloss[s] > 0:  # lost on the wire after the port (wireloss.py)
                gone = r * net.seg_wloss[s]
                c["wire_lost"][port] += gone / w
                c["wire_fcs"][port] += gone / w * net.seg_wfcs[s]
                fc[i, 2] += gone
                r -= gone
        if delivered and net.f_rx_drop[i]:
            c["rx_discards"][net.f_sink[i]] += r / w
            delivered = False
        if delivered:
            fc[i, 1] = r
            fc[i, 4] = net.f_base_lat[i] * r / w
        else:
            fc[i, 2] += r
    if (load > net.cap * (1 + 1e-9) + 1.0)[~net.down].any():
        return None
    net.content[:] = 0.0
    net.arriving[:] = 0.0
    net.rc = net.f_max.copy()
    net.rt = net.f_max.copy()
    net.paused_since[:] = np.nan
    net.unpaused_since = np.fmin(net.unpaused_since, now_s)
    net.load_watch(now_s)
    net.steady_paused[:] = False
    net.steady_unpaused[:] = True
    return rates


def extrapolate(net: FluidNet, rates: np.ndarray, span_s: float, t_end: float) -> None:
    """Advance every counter along ``rates`` for ``span_s``; the state stays as it is."""
    if span_s <= 0:
        return
    net.fold()
    nv = len(net.ctr.vec)
    net.ctr.vec += rates[:nv] * span_s
    fr = rates[nv:].reshape(-1, 6)
    net.fc += fr * span_s
    net.f_left -= fr[:, 0] * span_s
    moving = fr[:, 1] > 0
    if moving.any():
        lat = np.divide(fr[:, 4] * net.f_wire, fr[:, 1], out=np.zeros(len(fr)), where=moving)
        net.lat_min = np.where(moving, np.minimum(net.lat_min, lat), net.lat_min)
        net.lat_max = np.where(moving, np.maximum(net.lat_max, lat), net.lat_max)
    paused_now = net.raw_pause() >= 1.0 - 1e-9
    net.paused_since = np.where(
        net.steady_paused, net.paused_since, np.where(paused_now, t_end, np.nan)
    )
    net.unpaused_since = np.where(
        net.steady_unpaused, net.unpaused_since, np.where(paused_now, np.nan, t_end)
    )
    net.load_watch(t_end)


def completion_s(net: FluidNet, rates: np.ndarray) -> float:
    """Seconds until the first fixed-size flow has sent its last frame."""
    fr = rates[len(net.ctr.vec) :].reshape(-1, 6)
    going = (fr[:, 0] > 0) & np.isfinite(net.f_left) & (net.f_left > 1.0)
    if not going.any():
        return math.inf
    return float(np.min(net.f_left[going] / fr[going, 0]))


def watchdog_poll(net: FluidNet, t: float) -> bool:
    """Detect and restore storms; True when something changed."""
    net.fold()
    since = np.nan_to_num(net.paused_since, nan=np.inf)
    cand = net.wd_on & ~net.wd_storm & net.watched & (t - since >= net.wd_detect - 1e-9)
    changed = False
    if cand.any():
        # the origin of a storm is paused first; queues upstream of it recover with it
        cand &= since <= float(np.min(since[cand])) + 50e-6
        net.wd_storm |= cand
        net.wd_detected += cand
        changed = True
    calm_since = np.nan_to_num(net.unpaused_since, nan=np.inf)
    calm = net.wd_storm & (t - calm_since >= net.wd_restore - 1e-9)
    if calm.any():
        net.wd_storm &= ~calm
        net.wd_restored += calm
        changed = True
    if changed:
        net.refresh()
    return changed


def next_watchdog_event_s(net: FluidNet, now_s: float) -> float:
    """When the next detection or restoration fires if the steady state holds: the first
    poll instant (a multiple of the poll period, as a switch polls) at or after it and now.
    An overdue one waits for that poll too: polled at every "now" instead, a settling run
    between polls (a few hundred slices) would be followed by another poll at once."""
    due = []
    idle = net.wd_on & ~net.wd_storm & net.watched & net.steady_paused
    if idle.any():
        due.append(float(np.min(net.paused_since[idle] + net.wd_detect[idle])))
    calm = net.wd_storm & net.steady_unpaused
    if calm.any():
        due.append(float(np.min(net.unpaused_since[calm] + net.wd_restore[calm])))
    if not due:
        return math.inf
    poll = net.wd_poll_s
    return math.ceil(max(min(due), now_s) / poll - 1e-9) * poll


# --- steady rates remembered per scenario -------------------------------------


def cached_rates(net: FluidNet) -> np.ndarray | None:
    """Steady rates seen before in this very scenario (flows, paths, configuration).

    Only pause-free steady states are kept (``remember``): none while a PG is at XOFF,
    whose pause the rates would carry on unstepped (it clears only in a step)."""
    if net.xoff_state.any():
        return None
    rates = net.rate_cache.get(net.scenario_key)
    if rates is not None:
        net.steady_paused[:] = False
        net.steady_unpaused[:] = True
    return rates


def remember(net: FluidNet, rates: np.ndarray) -> None:
    """Keep steady rates of scenarios without pauses (their state needs no history)."""
    if net.xoff_state.any() or net.wd_storm.any() or (net.pf_ext > 0).any():
        return
    if len(net.rate_cache) >= RATE_CACHE_SIZE:
        net.rate_cache.pop(next(iter(net.rate_cache)))
    net.rate_cache[net.scenario_key] = rates.copy()


# --- latency under load, from the queues' settled trace ---------------------------


def queue_trace(net: FluidNet) -> np.ndarray:
    """Bytes queued per used queue (``net.qs``), one row per slice, oldest first: the
    chunks ``simulate`` stepped last in this scenario (where the queues had settled);
    the queues as they are now when nothing was stepped since (closed form, cache)."""
    n = net.q_trace_n
    first = max(net.q_trace_from, n - TRACE_SLICES)
    if n - first < 2:
        return np.bincount(net.sq, net.content, minlength=len(net.qs))[None, :]
    rows = np.arange(first, n) % TRACE_SLICES
    return net.q_trace[rows]


def queueing_delay_samples(
    net: FluidNet, path: list[int], n: int, rng: np.random.Generator
) -> np.ndarray:
    """Seconds a packet waits in the egress queues of ``path`` at ``n`` random instants.

    Per hop, the bytes queued at the port when the packet arrives over the port's drain
    rate (its line rate: the port shares it among its queues by backlog, so every byte
    queued there is ahead of the packet); summed over hops at the same instant (a queue
    moves slowly against a packet's microseconds in flight). The instants are uniform
    over the settled trace, interpolated between slices, so the distribution follows
    the queues' own fluctuation: the tail is where the queues peak.
    """
    weight = np.zeros(len(net.qs))
    q_port = net.qs // PRIORITIES
    for p in path:
        if net.cap[p] > 0:
            weight[q_port == p] += 1.0 / net.cap[p]
    delay = queue_trace(net) @ weight
    if len(delay) == 1:
        return np.full(n, float(delay[0]))
    at = rng.uniform(0.0, len(delay) - 1.0, n)
    i = np.minimum(at.astype(np.int64), len(delay) - 2)
    frac = at - i
    return delay[i] * (1.0 - frac) + delay[i + 1] * frac
