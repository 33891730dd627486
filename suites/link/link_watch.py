"""Which links the link suite tests, and the live watch behind LINK-2 and LINK-3.

The watch observes every selected link at once for ``link.watch_s``: FEC
counters (and histograms, where the switch publishes them) at both ends of
switch-switch links before and after,
and the oper state of every end that reports it (a switch; the switch end of a
host or traffic-generator link) sampled all along (one thread per switch, each at its own pace, so a
slow switch does not thin out the others' samples). Each link's test then
judges its own share, so the whole fabric pays for one watch, not one per
link. A device that cannot be read is kept as its error and re-raised by the
tests of its links (broken, not failed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from labtest.capabilities.switch import (
    FecCodewordHistogram,
    FecCounters,
    FecHistogram,
    FecStats,
    Interfaces,
)
from labtest.errors import InfraError
from labtest.testbed.model import Endpoint, Link, Testbed


def switch_links(testbed: Testbed, switches: Iterable[str]) -> list[Link]:
    """Links of the cabling plan whose both ends are switches (devices offering Interfaces)."""
    names = set(switches)
    return [lk for lk in testbed.links if all(e.device in names for e in lk.ends)]


def switch_names(lab: Any) -> list[str]:
    return lab.names(capability=Interfaces)


@dataclass
class PortWatch:
    """Oper-state samples of one link end."""

    samples: int = 0
    down_samples: int = 0
    down_events: int = 0  # up->down transitions, plus one if it was down at the first sample
    last_up: bool | None = None

    def add(self, up: bool) -> None:
        if not up and self.last_up in (True, None):
            self.down_events += 1
        self.samples += 1
        self.down_samples += 0 if up else 1
        self.last_up = up


def _delta(before: int | None, after: int | None) -> int | None:
    """What a counter counted between two reads (from zero if it was cleared meanwhile)."""
    if after is None:
        return None
    b = before or 0
    return after - b if after >= b else after


@dataclass
class FecWindow:
    """FEC counters of one end at the start and the end of the watch; the histograms are
    ``None`` where the switch publishes none (FecCounters without FecCodewordHistogram)."""

    before: FecStats
    after: FecStats
    hist_before: FecHistogram | None = None
    hist_after: FecHistogram | None = None

    @property
    def uncorrectable_cw(self) -> int:
        return _delta(self.before.uncorrectable_cw, self.after.uncorrectable_cw) or 0

    @property
    def corrected_cw(self) -> int | None:
        return _delta(self.before.corrected_cw, self.after.corrected_cw)

    @property
    def symbol_errors(self) -> int | None:
        return _delta(self.before.symbol_errors, self.after.symbol_errors)

    @property
    def tail_bin(self) -> int | None:
        """Highest bin that counted codewords during the watch (0 when none moved; ``None``
        without a histogram)."""
        if self.hist_before is None or self.hist_after is None:
            return None
        before = self.hist_before.bins
        delta = [
            (v or 0) - ((before[i] or 0) if i < len(before) else 0)
            for i, v in enumerate(self.hist_after.bins)
        ]
        if any(d < 0 for d in delta):
            delta = [v or 0 for v in self.hist_after.bins]
        hits = [i for i, d in enumerate(delta) if d > 0]
        return hits[-1] if hits else 0

    @property
    def pre_fec_ber(self) -> float | None:
        values = [s.pre_fec_ber for s in (self.before, self.after) if s.pre_fec_ber is not None]
        return max(values) if values else None


@dataclass
class LinkWatch:
    duration_s: float  # from the last "before" FEC read to the first "after" read
    ports: dict[str, PortWatch] = field(default_factory=dict)  # "device:port"
    #: from the first "before" FEC read to the last "after" read (what a counter may span)
    outer_s: float = 0.0
    fec: dict[str, FecWindow] = field(default_factory=dict)
    errors: dict[str, InfraError] = field(default_factory=dict)  # device -> what broke

    def raise_for(self, *devices: str) -> None:
        """Re-raise the error of the first of ``devices`` that could not be read."""
        for name in devices:
            if name in self.errors:
                raise self.errors[name].with_traceback(None)  # fresh: no frames pile up


def watch_links(
    lab: Any,
    links: list[Link],
    duration_s: float,
    poll_s: float,
    fec_capable: set[str],
    watchable: set[str],
) -> LinkWatch:
    """Watch ``links`` for ``duration_s`` (bounded) through their ends on ``watchable``
    devices (those reporting link state: the switch end of a host or TG link); see the
    module docstring."""
    ends: dict[str, list[str]] = {}
    for lk in links:
        for e in lk.ends:
            if e.device in watchable:
                ends.setdefault(e.device, []).append(e.port)
    watch = LinkWatch(duration_s=0.0)
    for device, ports in ends.items():
        for port in ports:
            watch.ports[f"{device}:{port}"] = PortWatch()
    outer_start = time.monotonic()
    before = _per_device(watch, ends, lambda d, ps: _fec_read(lab, d, ps, fec_capable))
    start = time.monotonic()
    deadline = start + duration_s
    _per_device(watch, ends, lambda d, ps: _sample_until(lab, d, ps, watch, deadline, poll_s))
    watch.duration_s = time.monotonic() - start
    after = _per_device(watch, ends, lambda d, ps: _fec_read(lab, d, ps, fec_capable))
    watch.outer_s = time.monotonic() - outer_start
    for device, stats in after.items():
        for port, (s1, h1) in stats.items():
            s0, h0 = before.get(device, {}).get(port, (None, None))
            if s0 is not None:
                both = h0 is not None and h1 is not None
                watch.fec[f"{device}:{port}"] = FecWindow(
                    s0, s1, h0 if both else None, h1 if both else None
                )
    return watch


def _per_device(
    watch: LinkWatch,
    ends: dict[str, list[str]],
    read: Callable[[str, list[str]], Any],
) -> dict[str, Any]:
    """``read(device, ports)`` on every device not yet broken, one thread each."""
    todo = [d for d in ends if d not in watch.errors]
    if not todo:
        return {}
    with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="link-watch") as pool:
        futures = {d: pool.submit(read, d, ends[d]) for d in todo}
    out: dict[str, Any] = {}
    for device, future in futures.items():
        exc = future.exception()
        if isinstance(exc, InfraError):
            watch.errors[device] = exc
        elif exc is not None:
            raise exc
        else:
            out[device] = future.result()
    return out


def _sample_until(lab: Any, device: str, ports: list[str], watch: LinkWatch,
                  deadline: float, poll_s: float) -> None:
    """Sample one switch's ports on its own pace (at most every ``poll_s``) until ``deadline``:
    a slow switch does not slow the others' sampling, so short flaps are still seen."""
    while True:
        sampled = time.monotonic()
        for port, up in _oper_states(lab, device, ports).items():
            watch.ports[f"{device}:{port}"].add(up)
        if sampled >= deadline:
            return
        time.sleep(max(0.0, min(poll_s - (time.monotonic() - sampled),
                                deadline - time.monotonic())))


def _oper_states(lab: Any, device: str, ports: list[str]) -> dict[str, bool]:
    status = lab.device(device).interfaces()
    return {p: bool(status[p].oper_up) if p in status else False for p in ports}


def _fec_read(
    lab: Any, device: str, ports: list[str], fec_capable: set[str]
) -> dict[str, tuple[FecStats, FecHistogram | None]]:
    """Counters of ``ports`` (FecCounters), with each port's histogram where the switch
    offers FecCodewordHistogram."""
    if device not in fec_capable:
        return {}
    driver = lab.device(device)
    if not isinstance(driver, FecCounters):
        return {}
    stats = driver.fec_stats()
    hist = isinstance(driver, FecCodewordHistogram)
    return {p: (stats[p], driver.fec_histogram(p) if hist else None)
            for p in ports if p in stats}


def link_id(link: Link) -> str:
    return link.name


def end_name(end: Endpoint) -> str:
    return f"{end.device}:{end.port}"
