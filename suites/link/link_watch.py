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

The time the counters were kept over is the *device's*: each FEC counter read
is bracketed by two readings of the switch's clock (the Clock capability), and
the window is taken from those (``device_window``), not from the test host's
clock. The two differ when the device's time runs at another pace (an emulated
lab at ``time_scale`` 10 counts ten seconds per wall second) and when a read
queues behind a slow CLI. A switch without a clock falls back to the host's
monotonic clock, and the window says so (``clock="host"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from labtest import labtime
from labtest.capabilities.clock import Clock
from labtest.capabilities.switch import (
    FecCodewordHistogram,
    FecCounters,
    FecHistogram,
    FecStats,
    Interfaces,
    drops_in,
    link_flap_counts,
)
from labtest.errors import CommandNotSupported, InfraError
from labtest.lab import Lab
from labtest.sweep import each_device
from labtest.testbed.model import Endpoint, Link, Testbed


def switch_links(testbed: Testbed, switches: Iterable[str]) -> list[Link]:
    """Links of the cabling plan whose both ends are switches (devices offering Interfaces)."""
    names = set(switches)
    return [lk for lk in testbed.links if all(e.device in names for e in lk.ends)]


def host_links(testbed: Testbed, switches: Iterable[str]) -> list[Link]:
    """Links of the cabling plan with one switch end and one host end (a TG is no host)."""
    names = set(switches)
    return [lk for lk in testbed.links
            if sum(e.device in names for e in lk.ends) == 1
            and any(testbed.devices[e.device].role == "host" for e in lk.ends)]


def switch_names(lab: Lab) -> list[str]:
    return lab.names(capability=Interfaces)


@dataclass
class PortWatch:
    """Oper-state samples of one link end, and the device's own count of oper-status
    changes over the watch where it keeps one (``None``: it keeps none, or the port was
    missing from a read)."""

    samples: int = 0
    down_samples: int = 0
    down_events: int = 0  # up->down transitions, plus one if it was down at the first sample
    last_up: bool | None = None
    status_changes: int | None = None

    @property
    def flaps(self) -> int:
        """Drops seen by either witness: the counter sees one shorter than any sampling gap."""
        return max(self.down_events, drops_in(self.status_changes or 0))

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


@dataclass(frozen=True)
class Window:
    """How long one device's FEC counters counted, on the clock named by ``clock``."""

    inner_s: float  # at most what the counter deltas span: a lower bound of codewords seen
    outer_s: float  # at least what they span: for the lowest reading of the error rate
    clock: str  # "device" (its own clock, Clock) or "host" (the test host's, a fallback)
    note: str = ""  # why the host's clock was used

    def __str__(self) -> str:
        why = f" ({self.note})" if self.note else ""
        return f"{self.inner_s:.3f}-{self.outer_s:.3f} s on the {self.clock} clock{why}"


@dataclass(frozen=True)
class Bracket:
    """Device-clock readings right before and right after one FEC counter read."""

    start_s: float
    end_s: float


def device_window(before: Bracket, after: Bracket) -> Window | None:
    """The counters' window from the clock readings around the two reads: the inner
    interval (after the first read ended to before the second began) cannot exceed what
    the deltas span, so ``N`` stays a lower bound; the outer one cannot fall short of it.
    None when the readings are out of order (the device's clock was stepped meanwhile)."""
    if not (before.start_s <= before.end_s <= after.start_s <= after.end_s):
        return None
    return Window(after.start_s - before.end_s, after.end_s - before.start_s, "device")


@dataclass
class LinkWatch:
    duration_s: float  # host clock: from the last "before" FEC read to the first "after" read
    ports: dict[str, PortWatch] = field(default_factory=dict)  # "device:port"
    #: host clock: from the first "before" FEC read to the last "after" read
    outer_s: float = 0.0
    fec: dict[str, FecWindow] = field(default_factory=dict)
    errors: dict[str, InfraError] = field(default_factory=dict)  # device -> what broke
    #: device -> its own-clock window; a device missing here falls back to the host clock
    device_windows: dict[str, Window] = field(default_factory=dict)
    #: device -> why its own clock was not used (no Clock, clock stepped)
    clock_notes: dict[str, str] = field(default_factory=dict)

    def window(self, device: str) -> Window:
        """The window ``device``'s FEC counters counted over: its own clock's, else the
        host's (labelled so)."""
        if device in self.device_windows:
            return self.device_windows[device]
        note = self.clock_notes.get(device, f"{device} offers no clock (Clock capability)")
        return Window(self.duration_s, max(self.outer_s, self.duration_s), "host", note)

    def raise_for(self, *devices: str) -> None:
        """Re-raise the error of the first of ``devices`` that could not be read."""
        for name in devices:
            if name in self.errors:
                raise self.errors[name].with_traceback(None)  # fresh: no frames pile up


def watch_links(
    lab: Lab,
    links: list[Link],
    duration_s: float,
    poll_s: float,
    fec_capable: set[str],
    watchable: set[str],
    counted_poll_s: float | None = None,
) -> LinkWatch:
    """Watch ``links`` for ``duration_s`` (bounded) through their ends on ``watchable``
    devices (those reporting link state: the switch end of a host or TG link); see the
    module docstring. A switch that counts its oper-status changes is sampled every
    ``counted_poll_s`` instead (its counter sees any flap; the samples only show state)."""
    ends: dict[str, list[str]] = {}
    for lk in links:
        for e in lk.ends:
            if e.device in watchable:
                ends.setdefault(e.device, []).append(e.port)
    watch = LinkWatch(duration_s=0.0)
    for device, ports in ends.items():
        for port in ports:
            watch.ports[f"{device}:{port}"] = PortWatch()
    outer_start = labtime.monotonic()
    changes0 = _per_device(lab, watch, ends, lambda d, ps: _status_changes(lab, d, ps))
    before = _per_device(lab, watch, ends, lambda d, ps: _fec_read(lab, d, ps, fec_capable))
    start = labtime.monotonic()
    deadline = start + duration_s

    def pace(device: str) -> float:
        counted = any(v is not None for v in changes0.get(device, {}).values())
        return counted_poll_s if counted and counted_poll_s is not None else poll_s

    _per_device(lab, watch, ends,
                lambda d, ps: _sample_until(lab, d, ps, watch, deadline, pace(d)))
    watch.duration_s = labtime.monotonic() - start
    after = _per_device(lab, watch, ends, lambda d, ps: _fec_read(lab, d, ps, fec_capable))
    changes1 = _per_device(lab, watch, ends, lambda d, ps: _status_changes(lab, d, ps))
    watch.outer_s = labtime.monotonic() - outer_start
    for device, counted in changes1.items():
        for port, c1 in counted.items():
            c0 = changes0.get(device, {}).get(port)
            if c0 is not None and c1 is not None:
                watch.ports[f"{device}:{port}"].status_changes = _delta(c0, c1)
    for device, read1 in after.items():
        read0 = before.get(device)
        if read0 is None:
            continue
        for port, (s1, h1) in read1.stats.items():
            s0, h0 = read0.stats.get(port, (None, None))
            if s0 is not None:
                both = h0 is not None and h1 is not None
                watch.fec[f"{device}:{port}"] = FecWindow(
                    s0, s1, h0 if both else None, h1 if both else None
                )
        _clock_window(watch, device, read0, read1)
    return watch


def _clock_window(watch: LinkWatch, device: str, read0: _FecRead, read1: _FecRead) -> None:
    if read0.clock is None or read1.clock is None:
        if read0.clock_note or read1.clock_note:
            watch.clock_notes[device] = read0.clock_note or read1.clock_note
        return
    window = device_window(read0.clock, read1.clock)
    if window is None:
        watch.clock_notes[device] = (
            f"{device}'s clock read {read0.clock.start_s:.3f}, {read0.clock.end_s:.3f}, "
            f"{read1.clock.start_s:.3f}, {read1.clock.end_s:.3f}: out of order (stepped?)"
        )
    else:
        watch.device_windows[device] = window


def _per_device(
    lab: Lab,
    watch: LinkWatch,
    ends: dict[str, list[str]],
    read: Callable[[str, list[str]], Any],
) -> dict[str, Any]:
    """``read(device, ports)`` on every device not yet broken, all at once."""
    return each_device(lab, ends, lambda d: read(d, ends[d]), watch.errors)


def _sample_until(lab: Lab, device: str, ports: list[str], watch: LinkWatch,
                  deadline: float, poll_s: float) -> None:
    """Sample one switch's ports on its own pace (at most every ``poll_s``) until ``deadline``:
    a slow switch does not slow the others' sampling, so short flaps are still seen."""
    while True:
        sampled = labtime.monotonic()
        for port, up in _oper_states(lab, device, ports).items():
            watch.ports[f"{device}:{port}"].add(up)
        if sampled >= deadline:
            return
        labtime.sleep(max(0.0, min(poll_s - (labtime.monotonic() - sampled),
                                deadline - labtime.monotonic())))


def _status_changes(lab: Lab, device: str, ports: list[str]) -> dict[str, int | None]:
    """The switch's oper-status change counters of ``ports`` (``None`` where it keeps none).
    A switch without them (no LinkFlapCounts, or a release without the command) is watched
    by its samples alone; any other failure to read them breaks the device like its FEC
    read."""
    counted = link_flap_counts(lab.device(device)) or {}
    return {p: counted.get(p) for p in ports}


def _oper_states(lab: Lab, device: str, ports: list[str]) -> dict[str, bool]:
    status = lab.device(device).interfaces()
    return {p: bool(status[p].oper_up) if p in status else False for p in ports}


@dataclass
class _FecRead:
    """One device's FEC read: per port (counters, histogram), and the device-clock readings
    around the counter command (``None`` without a clock, ``clock_note`` saying why)."""

    stats: dict[str, tuple[FecStats, FecHistogram | None]] = field(default_factory=dict)
    clock: Bracket | None = None
    clock_note: str = ""


def _fec_read(lab: Lab, device: str, ports: list[str], fec_capable: set[str]) -> _FecRead:
    """Counters of ``ports`` (FecCounters) between two readings of the switch's clock
    (Clock), then each port's histogram where the switch offers FecCodewordHistogram."""
    if device not in fec_capable:
        return _FecRead()
    driver = lab.device(device)
    if not isinstance(driver, FecCounters):
        return _FecRead()
    read = _FecRead()
    start = _device_time(driver, device, read)
    stats = driver.fec_stats()
    end = _device_time(driver, device, read) if start is not None else None
    if start is not None and end is not None:
        read.clock = Bracket(start, end)
    hist = driver if isinstance(driver, FecCodewordHistogram) else None
    read.stats = {p: (stats[p], hist.fec_histogram(p) if hist is not None else None)
                  for p in ports if p in stats}
    return read


def _device_time(driver: Any, device: str, read: _FecRead) -> float | None:
    """The switch's clock, or None (noted in ``read``) when it offers none; any other
    failure to read it breaks the device like a failed counter read."""
    if not isinstance(driver, Clock):
        read.clock_note = f"{device} offers no clock (Clock capability)"
        return None
    try:
        return driver.device_time_s()
    except CommandNotSupported as exc:
        read.clock_note = f"{device} cannot tell its time: {exc}"
        return None


def link_id(link: Link) -> str:
    return link.name


def end_name(end: Endpoint) -> str:
    return f"{end.device}:{end.port}"
