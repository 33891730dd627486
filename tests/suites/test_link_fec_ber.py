"""LINK-1 from FEC counters (suites/link/link_fec_ber.py): the per-lane pre-FEC BER bound
of a receiver whose end cannot run PRBS, and the FEC window it is read from."""

from __future__ import annotations

import pytest
from link_fec_ber import FecCounts, fec_ber_proof, post_fec_ber_upper_bound
from link_watch import FecWindow

from labtest.capabilities.switch import FecHistogram, FecStats
from labtest.stats import Decision

RATE_400G = 400e9 * 257 / 256 * 544 / 514  # 425 Gb/s on the wire (IEEE 802.3 cl.119)
TARGET, CL = 5e-7, 0.95  # acceptance-400g: link.prbs_target_ber, link.prbs_confidence


def proof(counts: FecCounts, inner_s: float = 12.0, outer_s: float | None = None):
    return fec_ber_proof(counts, inner_s=inner_s, outer_s=outer_s or inner_s + 0.5,
                         line_rate_bps=RATE_400G, lanes=4, target_ber=TARGET, confidence=CL)


def test_codewords_seen_follow_the_line_rate() -> None:
    p = proof(FecCounts(corrected_cw=0, uncorrectable_cw=0))
    assert pytest.approx(425e9) == RATE_400G
    assert p.codewords == pytest.approx(12 * 7.8125e7)  # 425e9 / 5440 codewords per second
    assert p.lane_bits == pytest.approx(12 * 106.25e9)
    # no error: chi2_0.95(2)/2 = 3.0 events, 150 bits each, over one lane's bits
    assert p.upper_bound == pytest.approx(150 * 2.9957 / (12 * 106.25e9), rel=1e-4)
    assert p.decision is Decision.PROVEN


def test_a_window_too_short_is_not_proven_and_says_its_bound() -> None:
    p = proof(FecCounts(corrected_cw=0, uncorrectable_cw=0), inner_s=0.001, outer_s=0.002)
    assert p.decision is Decision.CONTINUE and p.upper_bound > TARGET
    assert "BER <= 4.23e-06" in str(p) and "continue" in str(p)


def test_one_uncorrectable_codeword_takes_the_proof_away() -> None:
    """An uncorrectable codeword may hold 5440 bit errors: the same healthy window is no
    longer enough (and link.fec_uncorrectable_cw fails the link on its own)."""
    healthy = proof(FecCounts(corrected_cw=3000, uncorrectable_cw=0))
    assert healthy.decision is Decision.PROVEN and healthy.bits_per_event == 150
    one = proof(FecCounts(corrected_cw=3000, uncorrectable_cw=1))
    assert one.decision is not Decision.PROVEN and one.bits_per_event == 5440
    assert "+ 1 uncorrectable" in str(one)


def test_a_dirty_connector_fails_and_a_marginal_lane_is_not_proven() -> None:
    # 2e-4 pre-FEC (a 3 dB dirty connector): nearly every codeword needs correcting
    dirty = proof(FecCounts(corrected_cw=int(5e8), uncorrectable_cw=0))
    assert dirty.decision is Decision.IMPOSSIBLE and dirty.lower_bound > TARGET
    # issue 14 case 2: one lane at 1e-6 (1.3e6 errors on 1.275e12 lane bits), three clean:
    # above the target on that lane, but the port average (2.5e-7) cannot show it: a hole
    marginal = proof(FecCounts(corrected_cw=1_275_000, uncorrectable_cw=0))
    assert marginal.decision is Decision.CONTINUE


def test_symbol_counts_bound_tighter_than_codeword_counts() -> None:
    by_symbols = proof(FecCounts(corrected_cw=30_000, uncorrectable_cw=0, symbol_errors=30_000))
    by_codewords = proof(FecCounts(corrected_cw=30_000, uncorrectable_cw=0))
    assert by_symbols.bits_per_event == 10 and by_symbols.decision is Decision.PROVEN
    assert by_codewords.decision is Decision.CONTINUE  # 150 bits each: 3.5e-6 > 5e-7


def test_bad_windows_and_missing_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="inner <= outer"):
        proof(FecCounts(0, 0), inner_s=2.0, outer_s=1.0)
    with pytest.raises(ValueError, match="neither"):
        proof(FecCounts(None, 0))


def test_post_fec_bound_counts_every_payload_bit_of_a_bad_codeword() -> None:
    assert post_fec_ber_upper_bound(0, 9.375e8, CL) == pytest.approx(2.9957 / 9.375e8, rel=1e-4)
    assert post_fec_ber_upper_bound(2, 9.375e8, CL) > post_fec_ber_upper_bound(0, 9.375e8, CL)


def test_fec_window_without_histogram_has_no_tail_bin() -> None:
    """An EOS end (FecCounters only): counters are judged, the tail bin is not invented."""
    before = FecStats(corrected_cw=10, uncorrectable_cw=0, pre_fec_ber=1e-9)
    after = FecStats(corrected_cw=25, uncorrectable_cw=1, pre_fec_ber=2e-9)
    eos = FecWindow(before, after)
    assert (eos.tail_bin, eos.corrected_cw, eos.uncorrectable_cw) == (None, 15, 1)
    assert eos.symbol_errors is None and eos.pre_fec_ber == 2e-9
    sonic = FecWindow(before, after, FecHistogram([5, 1, 0]), FecHistogram([9, 2, 1]))
    assert sonic.tail_bin == 2


class CountersOnlySwitch:
    """An EOS-like switch: link state and FEC counters, no codeword histogram."""

    def __init__(self, port: str) -> None:
        self.port, self.reads = port, 0

    def interfaces(self) -> dict:
        from labtest.capabilities.switch import InterfaceStatus

        return {self.port: InterfaceStatus(name=self.port, admin_up=True, oper_up=True)}

    def counters(self) -> dict:
        return {}

    def fec_stats(self) -> dict[str, FecStats]:
        self.reads += 1
        return {self.port: FecStats(corrected_cw=100 * self.reads, uncorrectable_cw=0)}


class FullFecSwitch(CountersOnlySwitch):
    def fec_histogram(self, port: str) -> FecHistogram:
        return FecHistogram([1000 * self.reads, 10 * self.reads, self.reads - 1])


def test_the_watch_reads_counters_everywhere_and_histograms_where_offered() -> None:
    from link_watch import watch_links

    from labtest.capabilities.switch import FecCounters
    from labtest.testbed import model

    eos, sonic = CountersOnlySwitch("Ethernet1/1"), FullFecSwitch("Ethernet0")
    devices = {"eos1": eos, "sonic1": sonic}
    tb = model.Testbed(
        name="t",
        devices={n: model.Device(role="leaf", driver="x") for n in devices},
        links=[model.Link(a="sonic1:Ethernet0", b="eos1:Ethernet1/1", speed_gbps=400)],
    )

    class Lab:
        def device(self, name: str):
            return devices[name]

    watch = watch_links(Lab(), tb.links, duration_s=0.02, poll_s=0.005,
                        fec_capable={n for n, d in devices.items() if isinstance(d, FecCounters)},
                        watchable=set(devices))
    assert watch.outer_s >= watch.duration_s >= 0.02
    eos_w, sonic_w = watch.fec["eos1:Ethernet1/1"], watch.fec["sonic1:Ethernet0"]
    assert (eos_w.corrected_cw, eos_w.tail_bin, eos_w.hist_after) == (100, None, None)
    assert (sonic_w.corrected_cw, sonic_w.tail_bin) == (100, 2)
