"""LINK-1 from FEC counters: the per-lane BER target proven on a live link, without PRBS.

Where PRBS cannot run (an end without a generator/checker, no BERT on that
receiver) but the receiver's RS-FEC counters can be read, the same requirement
(``link.prbs_target_ber``: the *pre-FEC* BER of every lane) is bounded from
what the decoder counted during the link suite's watch:

* Codewords seen. A live 200GBASE-R/400GBASE-R link carries RS(544,514)
  codewords back to back, idles included (IEEE 802.3 cl.119: the PCS never
  stops transmitting; 10-bit symbols, 544 per codeword = 5440 bits, t = 15),
  so in a window of ``T`` seconds at line rate ``R`` the receiver decodes
  ``N = T * R / 5440`` codewords. 400GBASE-R: R = 400 Gb/s x 257/256 x 544/514 =
  425 Gb/s over the PMA (4 x 106.25 Gb/s for DR4), N = 7.8125e7 codewords/s.
  ``T`` is the watch's inner window (after the last "before" read, before the
  first "after" read): a lower bound of what the counters span, so ``N`` is too.
* Bit errors, counted high. A corrected 10-bit symbol holds at most 10 bit
  errors; a corrected codeword at most t x 10 = 150 (a switch that counts
  codewords but not symbols, like EOS); an uncorrectable codeword at most 5440.
  Every bit error may sit on one lane, so the lane's bits are ``N * 5440 / lanes``.
* Bound. With ``E`` such events, the mean is at most ``chi2_CL(2(E+1))/2`` at the
  profile's confidence (``labtest.stats.poisson_upper_mean``, the Poisson model
  of the PRBS statement), so ``BER_lane <= w * that / lane_bits``.

The result is PROVEN when that bound meets the target, FAILED when even the
lowest reading (one bit error per event, spread evenly, over the outer window
that may hold more codewords) exceeds it, and otherwise not proven: the watch
was too short, and the reason states the bound. This is conservative by up to
w x lanes against a PRBS checker's count, so PRBS (or a BERT) stays the method
of choice where it can run. A *post-FEC* bound is not what this requirement is:
a link with a marginal lane at 1e-6 pre-FEC shows no uncorrectable codeword.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtest.stats import Decision, ber_lower_bound, poisson_upper_mean

#: RS(544,514) "KP4" (IEEE 802.3 cl.119.2.4.6 / cl.91.5.2.7): 10-bit symbols, 544 symbols
#: per codeword, corrects t = 15 symbols; mandatory for 200GBASE-R and 400GBASE-R (cl.119)
SYMBOL_BITS = 10
CODEWORD_BITS = 544 * SYMBOL_BITS  # 5440
CORRECTABLE_SYMBOLS = 15
#: the slowest Ethernet rate whose PCS always runs RS(544,514) (cl.119: 200G and 400G)
MIN_RS544_GBPS = 200.0


@dataclass(frozen=True)
class FecCounts:
    """What one receiver's decoder counted during the window."""

    corrected_cw: int | None
    uncorrectable_cw: int
    symbol_errors: int | None = None  # corrected symbols, where the switch counts them


@dataclass(frozen=True)
class FecBerProof:
    """The per-lane pre-FEC BER bound of one receiver, with what it rests on."""

    codewords: float  # N over the inner window
    lane_bits: float
    events: int  # counted error events (symbols or codewords)
    bits_per_event: int  # the most bit errors one event can hold
    basis: str
    target_ber: float
    confidence: float
    upper_bound: float
    lower_bound: float
    decision: Decision

    def __str__(self) -> str:
        return (
            f"{self.events} {self.basis} in {self.codewords:.3g} RS(544,514) codewords "
            f"(<= {self.bits_per_event} bit errors each, all on one lane of "
            f"{self.lane_bits:.3g} bits): BER <= {self.upper_bound:.3g} at "
            f"{self.confidence:.0%} CL (target {self.target_ber:.3g}): {self.decision.value}"
        )


def fec_ber_proof(
    counts: FecCounts,
    *,
    inner_s: float,
    outer_s: float,
    line_rate_bps: float,
    lanes: int,
    target_ber: float,
    confidence: float,
) -> FecBerProof:
    """Bound the worst lane's pre-FEC BER from ``counts`` (see the module docstring)."""
    if inner_s < 0 or outer_s < inner_s:
        raise ValueError(f"windows must satisfy 0 <= inner <= outer, got {inner_s}, {outer_s}")
    if line_rate_bps <= 0 or lanes < 1 or target_ber <= 0:
        raise ValueError("line rate, lanes and target must be positive")
    unc = counts.uncorrectable_cw
    if counts.symbol_errors is not None:
        events, per_event, basis = counts.symbol_errors, SYMBOL_BITS, "corrected symbols"
    elif counts.corrected_cw is not None:
        events, per_event = counts.corrected_cw, CORRECTABLE_SYMBOLS * SYMBOL_BITS
        basis = "corrected codewords"
    else:
        raise ValueError("neither corrected symbols nor corrected codewords were counted")
    if unc:
        events, per_event = events + unc, CODEWORD_BITS
        basis += f" + {unc} uncorrectable"
    codewords = inner_s * line_rate_bps / CODEWORD_BITS
    lane_bits = codewords * CODEWORD_BITS / lanes
    upper = (
        per_event * poisson_upper_mean(events, confidence) / lane_bits if lane_bits else
        float("inf")
    )
    lower = ber_lower_bound(outer_s * line_rate_bps, events, confidence)
    if upper <= target_ber:
        decision = Decision.PROVEN
    elif lower > target_ber:
        decision = Decision.IMPOSSIBLE
    else:
        decision = Decision.CONTINUE
    return FecBerProof(codewords, lane_bits, events, per_event, basis, target_ber, confidence,
                       upper, lower, decision)


def post_fec_ber_upper_bound(uncorrectable_cw: int, codewords: float, confidence: float) -> float:
    """Post-FEC BER bound, conservative: every payload bit of an uncorrectable codeword
    counted wrong, so ``U_CL * 5140 / (N * 5140) = U_CL / N`` (evidence, not a limit)."""
    return poisson_upper_mean(uncorrectable_cw, confidence) / codewords if codewords else float(
        "inf")
