"""BER confidence maths and the sequential decision (labtest.stats)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from labtest import stats
from labtest.capabilities import instruments
from labtest.reports import plots

# N = k / BER multipliers, domain-methodology.md section 1 (derived with scipy there)
TABLE = {
    0.90: {0: 2.303, 1: 3.890, 2: 5.322, 3: 6.681, 5: 9.275, 10: 15.41},
    0.95: {0: 2.996, 1: 4.744, 2: 6.296, 3: 7.754, 5: 10.51, 10: 16.96},
    0.99: {0: 4.605, 1: 6.638, 2: 8.406, 3: 10.05, 5: 13.11, 10: 20.15},
}


@pytest.mark.parametrize("cl", sorted(TABLE))
def test_bits_required_matches_the_reference_table(cl: float) -> None:
    for errors, k in TABLE[cl].items():
        assert stats.bits_required(1e-12, errors, cl) == pytest.approx(k * 1e12, rel=1e-3)


def test_zero_errors_is_the_closed_form() -> None:
    assert stats.bits_required(1e-9, 0, 0.95) == pytest.approx(-math.log(0.05) / 1e-9)


def test_upper_bound_is_the_poisson_sum() -> None:
    # CL = 1 - sum_{k<=E} Poisson(k; N*BER_upper)
    bits, errors = 4.2e11, 3
    upper = stats.ber_upper_bound(bits, errors, 0.95)
    assert 1.0 - sps.poisson.cdf(errors, bits * upper) == pytest.approx(0.95, rel=1e-9)


def test_agrees_with_the_other_implementations_in_the_tree() -> None:
    for bits, errors in [(3e12, 0), (1e10, 7), (5e8, 300)]:
        ours = stats.ber_upper_bound(bits, errors, 0.95)
        assert instruments.ber_upper_bound(int(bits), errors, 0.95) == pytest.approx(ours, rel=1e-6)
        assert plots.ber_upper_bound(bits, errors, 0.95) == pytest.approx(ours, rel=1e-3)
    # many errors: scipy's chi-square stays exact where a hand-rolled Poisson sum underflows
    many = stats.ber_upper_bound(5e8, 1200)
    assert many > 1200 / 5e8
    assert plots.ber_upper_bound(5e8, 1200) == pytest.approx(many, rel=1e-3)


def test_lower_bound_brackets_the_observed_ber() -> None:
    bits, errors = 1e9, 50
    low, high = stats.ber_lower_bound(bits, errors), stats.ber_upper_bound(bits, errors)
    assert low < errors / bits < high
    assert sps.poisson.sf(errors - 1, bits * low) == pytest.approx(0.05, rel=1e-9)
    assert stats.ber_lower_bound(bits, 0) == 0.0
    assert stats.ber_upper_bound(0, 0) == math.inf


def test_confidence_below_inverts_the_upper_bound() -> None:
    bits, errors = 2e10, 4
    upper = stats.ber_upper_bound(bits, errors, 0.95)
    assert stats.confidence_below(bits, errors, upper) == pytest.approx(0.95, rel=1e-9)
    assert stats.confidence_below(bits, errors, upper / 10) < 0.95


def test_min_test_time_matches_the_reference() -> None:
    # 1e-12 at 95 %: 28.2 s on a 106.25 Gb/s lane, 7.0 s at 425 Gb/s
    assert stats.min_test_time_s(1e-12, 106.25e9) == pytest.approx(28.2, abs=0.05)
    assert stats.min_test_time_s(1e-12, 425e9) == pytest.approx(7.05, abs=0.05)


def test_sequential_decisions() -> None:
    test = stats.SequentialBerTest(target_ber=1e-9, confidence=0.95, max_bits=1e11)
    need = test.bits_needed(0)
    assert test.decide(need * 0.99, 0) is stats.Decision.CONTINUE
    assert test.decide(need * 1.01, 0) is stats.Decision.PROVEN
    assert test.remaining_bits(need / 2, 0) == pytest.approx(need / 2)
    # a few errors only move the goal post
    assert test.decide(need * 1.01, 1) is stats.Decision.CONTINUE
    assert test.decide(test.bits_needed(1) * 1.01, 1) is stats.Decision.PROVEN
    # many errors early: the lower bound is above the target
    assert test.decide(1e9, 40) is stats.Decision.IMPOSSIBLE
    assert test.remaining_bits(1e9, 40) == 0.0
    # errors the budget can no longer outweigh, although the lower bound is still low
    assert test.decide(1e10, 90) is stats.Decision.IMPOSSIBLE
    assert stats.ber_lower_bound(1e10, 90) < 1e-8


def test_statement_states_bits_errors_cl_and_bound() -> None:
    s = stats.SequentialBerTest(5e-7).statement(3e10, 2)
    assert s.decision is stats.Decision.PROVEN
    text = str(s)
    for part in ("2 errors", "3e+10 bits", "95% CL", "5e-07", "proven"):
        assert part in text


@pytest.mark.parametrize(
    "kwargs",
    [{"target_ber": 0}, {"target_ber": 1e-9, "confidence": 1.0}, {"target_ber": -1.0}],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        stats.SequentialBerTest(**kwargs)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        stats.ber_upper_bound(-1, 0)
    with pytest.raises(ValueError):
        stats.ber_upper_bound(10, -1)
    with pytest.raises(ValueError):
        stats.min_test_time_s(1e-12, 0)


@pytest.mark.parametrize("errors", [0, 1, 2, 7, 50, 1000])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.999])
def test_bounds_equal_scipy_chi_square_quantiles(errors: int, confidence: float) -> None:
    """The incomplete-gamma forms give scipy.stats.chi2's numbers (to rounding)."""
    bits = 3.7e12
    assert stats.ber_upper_bound(bits, errors, confidence) == pytest.approx(
        sps.chi2.ppf(confidence, 2 * (errors + 1)) / (2 * bits), rel=1e-12)
    if errors:
        assert stats.ber_lower_bound(bits, errors, confidence) == pytest.approx(
            sps.chi2.ppf(1 - confidence, 2 * errors) / (2 * bits), rel=1e-12)
    target = 1e-12
    assert stats.confidence_below(bits, errors, target) == pytest.approx(
        sps.chi2.cdf(2 * bits * target, 2 * (errors + 1)), rel=1e-12, abs=1e-300)
