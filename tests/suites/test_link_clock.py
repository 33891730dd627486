"""The FEC-counter window of the link watch is the receiving device's own time
(suites/link/link_watch.py: ``device_window``, ``LinkWatch.window``), so the codewords
counted ``N = T x 425e9 / 5440`` follow the clock the counters ran on."""

from __future__ import annotations

import time

import pytest
from link_fec_ber import CODEWORD_BITS, FecCounts, fec_ber_proof
from link_watch import Bracket, device_window, watch_links

from labtest.capabilities.clock import Clock
from labtest.capabilities.switch import FecCounters, FecStats, InterfaceCounters, InterfaceStatus
from labtest.errors import CommandNotSupported, ParseError
from labtest.stats import Decision
from labtest.testbed import model

RATE_400G = 400e9 * 257 / 256 * 544 / 514  # 425 Gb/s (IEEE 802.3 cl.119)
SCALE = 10.0  # the emulated lab's time_scale: ten device seconds per wall second


def test_window_is_the_inner_and_outer_of_the_two_brackets() -> None:
    w = device_window(Bracket(100.0, 100.5), Bracket(130.0, 130.25))
    assert w is not None and w.clock == "device"
    assert (w.inner_s, w.outer_s) == (29.5, 30.25)  # end of read 1 -> start of read 2, and out
    assert device_window(Bracket(100.0, 100.5), Bracket(99.0, 99.5)) is None  # stepped back
    assert device_window(Bracket(100.0, 99.0), Bracket(130.0, 131.0)) is None


class FastClockSwitch:
    """An EOS-like receiver (link state, FEC counters) whose clock runs ``scale`` times
    the host's monotonic clock, the one the watch measures the host windows with."""

    def __init__(self, port: str, scale: float = SCALE, clock_error: Exception | None = None):
        self.port, self.scale, self.clock_error, self.reads = port, scale, clock_error, 0

    def interfaces(self) -> dict[str, InterfaceStatus]:
        return {self.port: InterfaceStatus(name=self.port, admin_up=True, oper_up=True)}

    def counters(self) -> dict[str, InterfaceCounters]:
        return {self.port: InterfaceCounters(rx_packets=0)}  # keeps no oper-status change count

    def fec_stats(self) -> dict[str, FecStats]:
        self.reads += 1
        return {self.port: FecStats(corrected_cw=1000 * self.reads, uncorrectable_cw=0)}

    def device_time_s(self) -> float:
        if self.clock_error is not None:
            raise self.clock_error
        return 1.7e9 + self.scale * time.monotonic()


class NoClockSwitch(FastClockSwitch):
    device_time_s = None  # type: ignore[assignment]  # offers no Clock


class Lab:
    def __init__(self, devices: dict) -> None:
        self.devices = devices

    def device(self, name: str):
        return self.devices[name]


def _watch(receiver, duration_s: float = 0.05):
    devices = {"eos1": receiver}
    tb = model.Testbed(
        name="t",
        devices={"eos1": model.Device(role="leaf", driver="eos"),
                 "x": model.Device(role="leaf", driver="eos")},
        links=[model.Link(a="x:Ethernet1", b="eos1:Ethernet1/1", speed_gbps=400)],
    )
    return watch_links(Lab(devices), tb.links, duration_s=duration_s, poll_s=0.01,
                       fec_capable={"eos1"}, watchable={"eos1"})


def test_codewords_follow_a_device_clock_ten_times_the_host_clock() -> None:
    receiver = FastClockSwitch("Ethernet1/1")
    assert isinstance(receiver, Clock) and isinstance(receiver, FecCounters)
    watch = _watch(receiver)
    span = watch.window("eos1")
    assert span.clock == "device" and not span.note
    # the device's readings bracket the host's: its inner window holds the host's inner
    # one, ten times over, and its outer one lies within the host's outer one, ten times
    assert span.inner_s >= SCALE * watch.duration_s > 0
    assert span.outer_s <= SCALE * watch.outer_s
    proof = fec_ber_proof(FecCounts(1000, 0), inner_s=span.inner_s, outer_s=span.outer_s,
                          line_rate_bps=RATE_400G, lanes=4, target_ber=5e-7, confidence=0.95)
    assert proof.codewords == pytest.approx(span.inner_s * RATE_400G / CODEWORD_BITS)
    assert proof.codewords >= SCALE * watch.duration_s * RATE_400G / CODEWORD_BITS
    assert watch.fec["eos1:Ethernet1/1"].corrected_cw == 1000


def test_more_device_time_tightens_the_bound_the_host_clock_would_leave_open() -> None:
    """The same counts over the same host window: 10x the codewords, 10x lower bound."""
    host = fec_ber_proof(FecCounts(2000, 0), inner_s=1.0, outer_s=1.1, line_rate_bps=RATE_400G,
                         lanes=4, target_ber=5e-7, confidence=0.95)
    device = fec_ber_proof(FecCounts(2000, 0), inner_s=SCALE * 1.0, outer_s=SCALE * 1.1,
                           line_rate_bps=RATE_400G, lanes=4, target_ber=5e-7, confidence=0.95)
    assert host.upper_bound == pytest.approx(SCALE * device.upper_bound)
    assert host.decision is Decision.CONTINUE and device.decision is Decision.PROVEN


@pytest.mark.parametrize("receiver, why", [
    (NoClockSwitch("Ethernet1/1"), "eos1 offers no clock (Clock capability)"),
    (FastClockSwitch("Ethernet1/1", clock_error=CommandNotSupported("eos1", "show clock")),
     "eos1 cannot tell its time"),
])
def test_without_a_device_clock_the_host_clock_is_used_and_named(receiver, why) -> None:
    watch = _watch(receiver, duration_s=0.02)
    span = watch.window("eos1")
    assert span.clock == "host" and why in span.note
    assert (span.inner_s, span.outer_s) == (watch.duration_s, watch.outer_s)
    assert "host clock" in str(span)


def test_a_clock_that_steps_back_falls_back_to_the_host_and_says_so() -> None:
    receiver = FastClockSwitch("Ethernet1/1", scale=-1.0)  # each reading earlier than the last
    span = _watch(receiver, duration_s=0.02).window("eos1")
    assert span.clock == "host" and "out of order" in span.note


def test_an_unreadable_clock_breaks_the_device_like_its_counters() -> None:
    receiver = FastClockSwitch("Ethernet1/1", clock_error=ParseError("eos1", "show clock: junk"))
    watch = _watch(receiver, duration_s=0.02)
    with pytest.raises(ParseError, match="junk"):
        watch.raise_for("eos1")
    assert "eos1:Ethernet1/1" not in watch.fec
