"""BER confidence statistics and the sequential BER test.

Bit errors on a link are Poisson: with ``E`` errors in ``N`` compared bits the
BER is at most ``chi2_CL(2(E+1)) / (2N)`` with confidence CL, so proving a
target BER needs ``N = chi2_CL(2(E+1)) / (2·BER)`` bits (E = 0: ``-ln(1-CL)/BER``,
the "3/BER bits for 95 %" rule). See shared/design/reference/domain-methodology.md
section 1 (SiTime "BER Confidence-level Calculator"; MATLAB ``berconfint``).

A *sequential* test looks at the running counts and stops as soon as they
decide: PROVEN once the upper bound is at or below the target, IMPOSSIBLE once
the lower bound is above it (the link is worse, with the same confidence) or
once even an error-free remainder of the bit budget could no longer prove it.
A healthy link therefore stops after about the statistical minimum
``-ln(1-CL)/(BER·rate)`` instead of a fixed soak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

# the chi-square quantiles as regularised incomplete gamma functions (chi2(2k) = 2·Gamma(k)):
# the same numbers as scipy.stats.chi2, without scipy.stats' ~0.4 s of import in every process
from scipy.special import gammainc, gammaincinv


def _check(confidence: float, bits: float | None = None, errors: int = 0) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if errors < 0:
        raise ValueError(f"errors must be >= 0, got {errors}")
    if bits is not None and bits < 0:
        raise ValueError(f"bits must be >= 0, got {bits}")


def poisson_upper_mean(errors: int, confidence: float) -> float:
    """The mean count that ``errors`` proves not exceeded: ``chi2_CL(2(E+1)) / 2``."""
    _check(confidence, errors=errors)
    return float(gammaincinv(errors + 1, confidence))


def bits_required(target_ber: float, errors: int = 0, confidence: float = 0.95) -> float:
    """Bits to compare so that ``errors`` errors still prove ``BER <= target_ber``."""
    if target_ber <= 0:
        raise ValueError(f"target_ber must be > 0, got {target_ber}")
    return poisson_upper_mean(errors, confidence) / target_ber


def ber_upper_bound(bits: float, errors: int, confidence: float = 0.95) -> float:
    """The BER that ``errors`` in ``bits`` proves not exceeded (``inf`` with no bits)."""
    _check(confidence, bits, errors)
    return math.inf if bits == 0 else poisson_upper_mean(errors, confidence) / bits


def ber_lower_bound(bits: float, errors: int, confidence: float = 0.95) -> float:
    """The BER that ``errors`` in ``bits`` proves exceeded: ``chi2_(1-CL)(2E) / (2N)``."""
    _check(confidence, bits, errors)
    if errors == 0 or bits == 0:
        return 0.0
    return float(gammaincinv(errors, 1.0 - confidence)) / bits


def confidence_below(bits: float, errors: int, target_ber: float) -> float:
    """Confidence that the true BER is at or below ``target_ber``: P(Poisson(N·BER) > E)."""
    _check(0.5, bits, errors)
    return float(gammainc(errors + 1, bits * target_ber))


def min_test_time_s(target_ber: float, rate_bps: float, confidence: float = 0.95) -> float:
    """Error-free time that proves ``target_ber`` at ``rate_bps``: ``-ln(1-CL)/(BER·rate)``."""
    if rate_bps <= 0:
        raise ValueError(f"rate_bps must be > 0, got {rate_bps}")
    return bits_required(target_ber, 0, confidence) / rate_bps


class Decision(StrEnum):
    PROVEN = "proven"  # the upper bound is at or below the target
    IMPOSSIBLE = "impossible"  # the errors rule the target out (or the budget cannot prove it)
    CONTINUE = "continue"


@dataclass(frozen=True)
class BerStatement:
    """What a BER result must state: bits, errors, CL and the bound, and the decision."""

    bits: float
    errors: int
    confidence: float
    target_ber: float
    upper_bound: float
    lower_bound: float
    decision: Decision

    def __str__(self) -> str:
        return (
            f"{self.errors} errors in {self.bits:.3g} bits: BER <= {self.upper_bound:.3g} "
            f"at {self.confidence:.0%} CL (target {self.target_ber:.3g}): {self.decision.value}"
        )


@dataclass(frozen=True)
class SequentialBerTest:
    """Decide ``BER <= target_ber`` at ``confidence`` from running counts.

    ``max_bits`` is the budget (run time x lane rate): once the errors already
    seen need more bits than the budget holds, the target is out of reach.
    """

    target_ber: float
    confidence: float = 0.95
    max_bits: float | None = None

    def __post_init__(self) -> None:
        _check(self.confidence)
        if self.target_ber <= 0:
            raise ValueError(f"target_ber must be > 0, got {self.target_ber}")

    def statement(self, bits: float, errors: int) -> BerStatement:
        upper = ber_upper_bound(bits, errors, self.confidence)
        lower = ber_lower_bound(bits, errors, self.confidence)
        if upper <= self.target_ber:
            decision = Decision.PROVEN
        elif lower > self.target_ber or self.bits_needed(errors) > (self.max_bits or math.inf):
            decision = Decision.IMPOSSIBLE
        else:
            decision = Decision.CONTINUE
        return BerStatement(bits, errors, self.confidence, self.target_ber, upper, lower, decision)

    def decide(self, bits: float, errors: int) -> Decision:
        return self.statement(bits, errors).decision

    def bits_needed(self, errors: int) -> float:
        """Total bits that prove the target if no error beyond ``errors`` comes."""
        return bits_required(self.target_ber, errors, self.confidence)

    def remaining_bits(self, bits: float, errors: int) -> float:
        """Bits still to compare before the counts can decide (0 when they already do)."""
        if self.decide(bits, errors) is not Decision.CONTINUE:
            return 0.0
        return max(self.bits_needed(errors) - bits, 0.0)
