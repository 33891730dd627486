"""Link physics acceptance: BER vs Rx power, RS(544,514) FEC statistics, PRBS, LOS.

Expected numbers come from shared/design/reference/domain-methodology.md
(section 1 "Random-error model for KP4", section 2 "PAM4 heuristic"), which
derives them from the cited formulas; each assertion names its row.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labtest.emulation.model import Fabric
from labtest.emulation.model import physics as ph
from labtest.testbed import model as tbm

LINK = "sw1:Ethernet0--sw2:Ethernet0"
CW_PER_S_400G = 425e9 / 5440  # 7.8125e7: "400G ... runs 7.8e7 CW/s" (reference section 1)


def pair(optic: str = "400G-DR4", seed: int = 7, length_m: float = 30.0) -> tbm.Testbed:
    speed = 800 if optic == "800G-DR8" else 400
    return tbm.Testbed(
        name="pair",
        devices={
            "sw1": tbm.Device(role="leaf", driver="sonic"),
            "sw2": tbm.Device(role="spine", driver="sonic"),
        },
        links=[tbm.Link(a="sw1:Ethernet0", b="sw2:Ethernet0", speed_gbps=speed, optic=optic,
                    length_m=length_m)],
        emulation=tbm.Emulation(seed=seed),
    )


# --- BER vs Rx power ---------------------------------------------------------------


def test_ber_at_sensitivity_is_the_kp4_threshold() -> None:
    # KP4 pre-FEC threshold 2.4e-4 at sensitivity (reference section 1, "FEC thresholds")
    assert ph.ber_from_margin_db(0.0) == pytest.approx(2.4e-4, rel=0.20)
    fabric = Fabric(pair())
    for lane in range(1, 5):
        fabric.inject("marginal_lane", "sw2:Ethernet0", lane=lane, margin_db=0.0)
    for ber in fabric.ber("sw2", "Ethernet0"):
        assert ber == pytest.approx(2.4e-4, rel=0.20)


@pytest.mark.parametrize(
    ("margin_db", "expected_ber"),
    # reference section 2, PAM4 heuristic: OMA offsets -1/-0.5/0/+0.5/+1/+2/+3 dB give
    # 2.5e-3 / 8.8e-4 / 2.4e-4 / 4.8e-5 / 6.5e-6 / 2.3e-8 / 3.6e-12
    [(-1, 2.5e-3), (-0.5, 8.8e-4), (0, 2.4e-4), (0.5, 4.8e-5), (1, 6.5e-6), (2, 2.3e-8),
     (3, 3.6e-12)],
)
def test_ber_follows_the_reference_q_model(margin_db: float, expected_ber: float) -> None:
    assert ph.ber_from_margin_db(margin_db) == pytest.approx(expected_ber, rel=0.05)


def test_one_db_above_sensitivity_is_about_a_decade() -> None:
    # reference section 2: "near sensitivity, 1 dB is worth about 1 decade of BER"
    # (its table: 2.4e-4 -> 6.5e-6 for +1 dB, 1.6 decades; -1 dB -> 2.5e-3, 1.0 decade)
    decades_up = math.log10(ph.ber_from_margin_db(0.0) / ph.ber_from_margin_db(1.0))
    decades_down = math.log10(ph.ber_from_margin_db(-1.0) / ph.ber_from_margin_db(0.0))
    assert 1.0 <= decades_up <= 2.0
    assert 0.8 <= decades_down <= 1.2
    assert ph.margin_db_from_ber(2.4e-4) == pytest.approx(0.0, abs=1e-9)


def test_three_db_dirty_connector_moves_a_healthy_dr4_lane_into_the_fec_region() -> None:
    # issue 3 acceptance: healthy DR4 lane < 1e-8, after a 3 dB dirty connector 1e-5..1e-3
    # (field case: a 3.8 dB dirty connector kept the link up on FEC corrections,
    # reference section 2)
    fabric = Fabric(pair())
    healthy = fabric.ber("sw2", "Ethernet0")
    assert all(b < 1e-8 for b in healthy)
    fabric.inject("dirty_connector", LINK, loss_db=3.0, end="a")
    dirty = fabric.ber("sw2", "Ethernet0")
    assert all(1e-5 <= b <= 1e-3 for b in dirty), dirty
    assert fabric.link_up(LINK)  # still up, now living on FEC


# --- RS(544,514) ---------------------------------------------------------------------


def test_symbol_errors_per_codeword_at_threshold() -> None:
    # reference section 1 KP4 table: BER 2.4e-4 -> mean 1.30 symbol errors per codeword
    ser = ph.symbol_error_ratio(2.4e-4)
    assert 544 * ser == pytest.approx(1.30, rel=0.01)
    rng = np.random.default_rng(1)
    bins, _ = ph.sample_codewords(rng, np.array([10**9]), np.array([ser]))
    mean = (bins[0] * np.arange(16)).sum() / bins[0].sum()
    assert mean == pytest.approx(1.30, rel=0.01)


def test_uncorrectable_probability_is_the_exact_binomial_tail() -> None:
    # reference section 1 KP4 table: P(CW uncorrectable) = 8.2e-13 at BER 2.4e-4,
    # 2.8e-8 at 5e-4, 1.5e-4 at 1e-3
    for ber, p_unc in ((2.4e-4, 8.2e-13), (5e-4, 2.8e-8), (1e-3, 1.5e-4)):
        _, tail = ph.codeword_probabilities(ph.symbol_error_ratio(ber))
        assert float(tail) == pytest.approx(p_unc, rel=0.05)


def test_fec_bins_follow_the_binomial_shape() -> None:
    # symbol errors per codeword ~ Binom(544, SER) (reference section 1): chi-square on
    # a minute of 400G at threshold; bin ratio P(k+1)/P(k) ~ lambda/(k+1)
    fabric = Fabric(pair())
    for lane in range(1, 5):
        fabric.inject("marginal_lane", "sw2:Ethernet0", lane=lane, margin_db=0.0)
    fabric.advance(60.0)
    fec = fabric.fec("sw2", "Ethernet0")
    bins = np.array(fec.bins, dtype=float)
    assert fec.total_codewords == math.floor(CW_PER_S_400G * 60)
    ser = float(np.mean(ph.symbol_error_ratio(np.array(fabric.ber("sw2", "Ethernet0")))))
    pmf, _ = ph.codeword_probabilities(ser)
    expected = pmf * bins.sum()
    used = expected >= 20
    chi2 = float((((bins - expected) ** 2 / expected)[used]).sum())
    assert stats.chi2.sf(chi2, used.sum() - 1) > 1e-4
    lam = 544 * ser
    for k in range(0, 6):
        assert bins[k + 1] / bins[k] == pytest.approx(lam / (k + 1), rel=0.05)
    assert fec.corrected_codewords == int(bins[1:].sum())
    assert fec.symbol_errors == int((bins * np.arange(16)).sum())


def test_uncorrectable_fraction_over_a_long_virtual_run() -> None:
    # issue 3 acceptance: at BER 2.4e-4 the uncorrectable fraction is 1e-13..1e-11 over a
    # long run; expected 8.2e-13 (reference section 1: ~0.23 UCW/h at 400G)
    fabric = Fabric(pair())
    for lane in range(1, 5):
        fabric.inject("marginal_lane", "sw2:Ethernet0", lane=lane, margin_db=0.0)
    hours = 1000
    fabric.advance(hours * 3600.0)
    fec = fabric.fec("sw2", "Ethernet0")
    fraction = fec.uncorrectable_codewords / fec.total_codewords
    assert 1e-13 <= fraction <= 1e-11
    expected = 8.15e-13 * CW_PER_S_400G * hours * 3600  # ~229 codewords
    low, high = stats.poisson.interval(1 - 1e-6, expected)
    assert low <= fec.uncorrectable_codewords <= high
    counters = fabric.counters("sw2", "Ethernet0")
    assert counters.rx_fcs_errors == fec.uncorrectable_codewords


def test_codewords_count_at_line_rate_only_while_up() -> None:
    fabric = Fabric(pair())
    fabric.advance(10.0)
    assert fabric.fec("sw1", "Ethernet0").total_codewords == math.floor(CW_PER_S_400G * 10)
    fabric.set_admin("sw2", "Ethernet0", False)
    fabric.advance(10.0)
    assert fabric.fec("sw1", "Ethernet0").total_codewords == math.floor(CW_PER_S_400G * 10)
    dr8 = Fabric(pair("800G-DR8"))
    dr8.advance(1.0)
    # 800GbE: 850 Gb/s on the wire (reference section 1) -> 1.5625e8 codewords/s
    assert dr8.fec("sw1", "Ethernet0").total_codewords == 156_250_000


# --- PRBS ----------------------------------------------------------------------------------


def start_prbs(fabric: Fabric, pattern: str = "PRBS31Q") -> None:
    fabric.prbs_start("sw1", "Ethernet0", pattern)
    fabric.prbs_start("sw2", "Ethernet0", pattern)


def test_error_free_lane_counts_bits_at_line_rate() -> None:
    # 400G-DR4 lanes run 106.25 Gb/s (reference section 1, 53.125 GBd PAM4); a lane with
    # 6 dB margin has BER ~1e-37, so 10 s (1.06e12 bits) must show no error
    fabric = Fabric(pair())
    for lane in range(1, 5):
        fabric.inject("marginal_lane", "sw2:Ethernet0", lane=lane, margin_db=6.0)
    start_prbs(fabric)
    assert not fabric.link_up(LINK)  # PRBS takes the link out of service
    fabric.advance(10.0)
    for lane in fabric.prbs_read("sw2", "Ethernet0"):
        assert lane.locked
        assert lane.bits == 1_062_500_000_000
        assert lane.errors == 0
        assert lane.loss_of_lock_count == 0
    fabric.prbs_stop("sw1", "Ethernet0")
    fabric.prbs_stop("sw2", "Ethernet0")
    assert fabric.link_up(LINK)


def test_marginal_lane_errors_match_its_ber() -> None:
    # errors ~ Poisson(bits * BER) (reference section 1, Poisson confidence); 1 dB margin
    # gives BER 6.5e-6 (section 2 table) -> ~6.9e6 errors in 10 s
    fabric = Fabric(pair())
    fabric.inject("marginal_lane", "sw2:Ethernet0", lane=2, margin_db=1.0)
    start_prbs(fabric)
    fabric.advance(10.0)
    ber = fabric.ber("sw2", "Ethernet0")[1]
    assert ber == pytest.approx(6.5e-6, rel=0.05)
    lane = fabric.prbs_read("sw2", "Ethernet0")[1]
    low, high = stats.poisson.interval(1 - 1e-6, lane.bits * ber)
    assert low <= lane.errors <= high
    assert lane.ber == pytest.approx(ber, rel=0.01)


def test_prbs_checker_needs_a_matching_generator_to_lock() -> None:
    fabric = Fabric(pair())
    fabric.prbs_start("sw2", "Ethernet0", "PRBS31Q", generator=False)
    fabric.advance(1.0)
    assert not any(lane.locked for lane in fabric.prbs_read("sw2", "Ethernet0"))
    fabric.prbs_start("sw1", "Ethernet0", "PRBS13Q", checker=False)
    fabric.advance(1.0)
    assert all(lane.bits == 0 for lane in fabric.prbs_read("sw2", "Ethernet0"))
    fabric.prbs_start("sw1", "Ethernet0", "PRBS31Q", checker=False)
    fabric.advance(1.0)
    lanes = fabric.prbs_read("sw2", "Ethernet0")
    assert all(lane.locked and lane.bits == 106_250_000_000 for lane in lanes)
    fabric.prbs_stop("sw1", "Ethernet0")  # the far generator goes away: loss of lock
    fabric.advance(1.0)
    lanes = fabric.prbs_read("sw2", "Ethernet0")
    assert all(not lane.locked and lane.loss_of_lock_count == 1 for lane in lanes)
    fabric.prbs_clear("sw2", "Ethernet0")
    assert all(lane.bits == 0 for lane in fabric.prbs_read("sw2", "Ethernet0"))


# --- LOS --------------------------------------------------------------------------------


def test_link_goes_down_below_los() -> None:
    # LOS asserts below -15 dBm average Rx power (Edgecore DR4/FR4 datasheets, section 2)
    fabric = Fabric(pair())
    fabric.inject("dirty_connector", LINK, loss_db=10.0, end="a")
    assert fabric.dom("sw2", "Ethernet0").lanes[0].rx_power_dbm > -15.0
    fabric.clear("dirty_connector")
    fabric.inject("dirty_connector", LINK, loss_db=17.0, end="a")
    rx = [lane.rx_power_dbm for lane in fabric.dom("sw2", "Ethernet0").lanes]
    assert all(p < -15.0 for p in rx)
    assert not fabric.link_up(LINK)
    los = {f.lane for f in fabric.dom_flags("sw2", "Ethernet0") if f.quantity == "rx_los"}
    assert los == {1, 2, 3, 4}


# --- determinism -----------------------------------------------------------------------------


def run(seed: int) -> tuple:
    fabric = Fabric(pair(seed=seed))
    fabric.inject("dirty_connector", LINK, loss_db=3.0)
    start_prbs(fabric)
    fabric.advance(5.0)
    fabric.prbs_stop("sw1", "Ethernet0")
    fabric.prbs_stop("sw2", "Ethernet0")
    fabric.advance(60.0)
    return (fabric.fec("sw2", "Ethernet0"), fabric.dom("sw2", "Ethernet0"),
            fabric.prbs_read("sw2", "Ethernet0"))


def test_same_seed_same_lab() -> None:
    assert run(5) == run(5)
    assert run(5)[0].bins != run(6)[0].bins
