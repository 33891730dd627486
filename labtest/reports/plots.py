"""Evidence plots as PNG bytes: pure functions of plain data, for Allure attachments.

Each function takes numbers (sequences, mappings) and returns a PNG, so a
suite can do ``attach_png("FEC bins Ethernet0", plots.fec_histogram(bins))``
without touching matplotlib. Figures are built on the Agg canvas directly (no
pyplot global state), so plotting is safe from any thread and never needs a
display.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

SIZE_IN = (7.0, 3.6)
DPI = 100
PASS_COLOUR, WARN_COLOUR, FAIL_COLOUR, NEUTRAL = "#2e7d32", "#f9a825", "#c62828", "#1565c0"
#: above this many errors the Wilson-Hilferty approximation replaces the exact sum
EXACT_ERRORS_MAX = 1000


def ber_upper_bound(bits: float, errors: int, confidence: float = 0.95) -> float:
    """One-sided upper confidence bound on BER after ``errors`` in ``bits`` (Poisson).

    ``chi2_CL(2(E+1)) / (2N)`` (domain-methodology.md §1); for E = 0 it is
    ``-ln(1-CL)/N``, the familiar "3/BER bits for 95 %".
    """
    if bits <= 0:
        return math.inf
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} must be in (0, 1)")
    return _poisson_upper_mean(int(errors), confidence) / bits


def _poisson_upper_mean(errors: int, confidence: float) -> float:
    """λ with P(X <= errors; λ) = 1 - confidence, i.e. chi2_CL(2(E+1)) / 2."""
    if errors == 0:
        return -math.log(1.0 - confidence)
    if errors > EXACT_ERRORS_MAX:  # Wilson-Hilferty for chi2 with k = 2(E+1) dof
        k = 2.0 * (errors + 1)
        z = NormalDist().inv_cdf(confidence)
        return k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3 / 2
    target = 1.0 - confidence
    lo, hi = float(errors), errors + 10.0 * math.sqrt(errors + 1) + 10.0
    for _ in range(200):  # bisection: the CDF falls monotonically in λ
        mid = (lo + hi) / 2
        if _poisson_cdf(errors, mid) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9 * hi:
            break
    return (lo + hi) / 2


def _poisson_cdf(k: int, lam: float) -> float:
    logs = [-lam + i * math.log(lam) - math.lgamma(i + 1) for i in range(k + 1)]
    top = max(logs)
    return math.exp(top) * sum(math.exp(v - top) for v in logs)


def ber_accumulation(
    bits: Sequence[float],
    errors: Sequence[int],
    *,
    target_ber: float,
    confidence: float = 0.95,
    title: str = "BER accumulation",
) -> bytes:
    """Observed BER and its upper confidence bound as bits accumulate, against the target."""
    fig, ax = _figure(title)
    pts = [(b, e) for b, e in zip(bits, errors, strict=True) if b > 0]
    xs = [b for b, _ in pts]
    upper = [ber_upper_bound(b, e, confidence) for b, e in pts]
    observed = [e / b if e else math.nan for b, e in pts]
    ax.loglog(xs, upper, color=NEUTRAL, label=f"upper bound ({confidence:.0%} CL)")
    ax.loglog(xs, observed, "o", color=FAIL_COLOUR, markersize=3, label="observed errors/bits")
    ax.axhline(target_ber, color=PASS_COLOUR, linestyle="--", label=f"target {target_ber:.1e}")
    ax.minorticks_off()  # log-axis minor ticks cost most of the drawing time
    ax.set_xlabel("bits compared")
    ax.set_ylabel("BER")
    ax.legend(loc="upper right", fontsize=8)
    return _png(fig)


def fec_histogram(
    bins: Sequence[int] | Mapping[int, int],
    *,
    correctable_max: int = 15,
    title: str = "FEC symbol errors per codeword",
) -> bytes:
    """Codewords per symbol-error count; bins above ``correctable_max`` are uncorrectable.

    RS(544,514) "KP4" corrects up to 15 symbols (domain-methodology.md §2).
    """
    counts = dict(bins) if isinstance(bins, Mapping) else dict(enumerate(bins))
    fig, ax = _figure(title)
    keys = sorted(counts)
    colours = [FAIL_COLOUR if k > correctable_max else NEUTRAL for k in keys]
    ax.bar([str(k) for k in keys], [max(counts[k], 0) for k in keys], color=colours)
    if any(counts[k] > 0 for k in keys):
        ax.set_yscale("log")
        ax.minorticks_off()
    ax.set_xlabel(f"symbol errors per codeword (> {correctable_max}: uncorrectable)")
    ax.set_ylabel("codewords")
    return _png(fig)


def dom_lanes(
    values: Mapping[str, float],
    *,
    unit: str,
    low_alarm: float | None = None,
    low_warn: float | None = None,
    high_warn: float | None = None,
    high_alarm: float | None = None,
    title: str = "DOM",
) -> bytes:
    """One reading per lane (or port) against the module's warning and alarm thresholds."""
    fig, ax = _figure(title)
    names, readings = list(values), list(values.values())
    finite = [v for v in readings if math.isfinite(v)]
    span = [v for v in (low_alarm, high_alarm, *finite) if v is not None]
    lo, hi = (min(span), max(span)) if span else (0.0, 1.0)
    pad = (hi - lo) * 0.15 or 1.0
    bottom, top = lo - pad, hi + pad
    for a, b, colour in (
        (bottom, low_alarm, FAIL_COLOUR),
        (low_alarm, low_warn, WARN_COLOUR),
        (high_warn, high_alarm, WARN_COLOUR),
        (high_alarm, top, FAIL_COLOUR),
    ):
        if a is not None and b is not None and b > a:
            ax.axhspan(a, b, color=colour, alpha=0.15)
    shown = [v if math.isfinite(v) else bottom for v in readings]
    colours = [_dom_colour(v, low_alarm, low_warn, high_warn, high_alarm) for v in readings]
    ax.scatter(names, shown, color=colours, zorder=3)
    ax.set_ylim(bottom, top)
    ax.set_ylabel(unit)
    return _png(fig)


def _dom_colour(
    v: float, la: float | None, lw: float | None, hw: float | None, ha: float | None
) -> str:
    if not math.isfinite(v) or (la is not None and v < la) or (ha is not None and v > ha):
        return FAIL_COLOUR
    if (lw is not None and v < lw) or (hw is not None and v > hw):
        return WARN_COLOUR
    return PASS_COLOUR


def throughput_per_flow(
    flows: Mapping[str, float],
    *,
    expected_gbps: float | None = None,
    title: str = "Throughput per flow",
) -> bytes:
    """Achieved Gb/s per flow, with the expected (fair-share or line-rate) level."""
    fig, ax = _figure(title)
    names, rates = list(flows), list(flows.values())
    colours = [
        FAIL_COLOUR if expected_gbps is not None and r < expected_gbps else NEUTRAL for r in rates
    ]
    ax.bar(names, rates, color=colours)
    if expected_gbps is not None:
        ax.axhline(expected_gbps, color=PASS_COLOUR, linestyle="--", label="expected")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_ylabel("Gb/s")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return _png(fig)


def failover_loss(
    t_s: Sequence[float],
    rx_rate: Sequence[float],
    *,
    event_s: float,
    loss_window_s: tuple[float, float] | None = None,
    unit: str = "Gb/s",
    title: str = "Received rate around the failover",
) -> bytes:
    """Receive rate over time, the failure instant and the measured loss window."""
    fig, ax = _figure(title)
    ax.plot(list(t_s), list(rx_rate), color=NEUTRAL)
    ax.axvline(event_s, color=FAIL_COLOUR, linestyle="--", label="failure")
    if loss_window_s is not None:
        start, end = loss_window_s
        ms = (end - start) * 1000
        ax.axvspan(start, end, color=FAIL_COLOUR, alpha=0.2, label=f"loss {ms:.1f} ms")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(unit)
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def incast(
    t_s: Sequence[float],
    rates_gbps: Mapping[str, Sequence[float]],
    pause_frames: Sequence[float],
    *,
    title: str = "Incast: sender rates and PFC pauses",
) -> bytes:
    """Sender rates over time (top) and PFC pause frames per interval (bottom)."""
    fig = Figure(figsize=(SIZE_IN[0], SIZE_IN[1] * 1.4), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    for name, series in rates_gbps.items():
        top.plot(list(t_s), list(series), label=name)
    top.set_ylabel("Gb/s")
    top.set_title(title, fontsize=10)
    if rates_gbps:
        top.legend(loc="upper right", fontsize=7, ncols=2)
    bottom.bar(list(t_s), list(pause_frames), width=_step(t_s), color=WARN_COLOUR)
    bottom.set_ylabel("pause frames")
    bottom.set_xlabel("time (s)")
    return _png(fig)


def latency_cdf(
    curves: Mapping[str, Mapping[float, float]],
    *,
    limit_us: float | None = None,
    title: str = "Latency CDF",
) -> bytes:
    """Latency CDFs through the quantiles a tool printed (``{fraction: microseconds}``, e.g.
    0 for the minimum, 0.5 the median, 0.99, 0.999, 1 the maximum), one curve per load,
    on a log time axis so idle and loaded fit one plot; the limit as a dashed line."""
    fig, ax = _figure(title)
    colours = [PASS_COLOUR, FAIL_COLOUR, WARN_COLOUR, NEUTRAL]
    for i, (name, points) in enumerate(curves.items()):
        pts = sorted((us, q) for q, us in points.items() if us is not None and math.isfinite(us))
        if not pts:
            continue
        ax.plot([us for us, _ in pts], [q for _, q in pts], marker="o", markersize=3,
                color=colours[i % len(colours)], label=name)  # fmt: skip
    if limit_us is not None:
        ax.axvline(limit_us, color=FAIL_COLOUR, linestyle="--", linewidth=1, label="p99 limit")
    ax.set_xscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))  # 1-2-5: enough to read a value,
    ax.xaxis.set_minor_formatter(plain)  # and a third of the labels to lay out
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("one-way latency (us)")
    ax.set_ylabel("fraction of samples")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def _step(t_s: Sequence[float]) -> float:
    return (t_s[1] - t_s[0]) * 0.9 if len(t_s) > 1 else 0.8


def _figure(title: str) -> tuple[Figure, Axes]:
    fig = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
