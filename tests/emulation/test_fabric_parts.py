"""The fabric model's parts on their own: flaps and link history, and the link counters."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from labtest.emulation.model.flaps import Flap, LinkTimeline
from labtest.emulation.model.linkcounts import LinkCounters
from labtest.emulation.model.modules import MAX_LANES, ModuleArrays


def timeline(end_s: float = math.inf) -> LinkTimeline:
    """Link 0 comes up at 0 s and flaps (dark 1 s of every 10 s from 10 s); link 1 stays up."""
    tl = LinkTimeline(2)
    for li in (0, 1):
        tl.record(li, 0.0, True)
    tl.add(0, Flap(start_s=10.0, period_s=10.0, down_s=1.0, end_s=end_s))
    return tl


def test_a_flap_is_counted_in_closed_form_for_any_step() -> None:
    tl = timeline()
    assert tl.down_s_in(0.0, 35.0).tolist() == [3.0, 0.0]
    assert tl.drops_in(0.0, 35.0).tolist() == [3, 0]
    # the same span in uneven steps counts each drop once
    steps = [0.0, 10.5, 12.0, 20.0, 20.7, 35.0]
    drops = sum(tl.drops_in(a, b)[0] for a, b in itertools.pairwise(steps))
    assert drops == 3
    assert tl.dark_mask(10.5).tolist() == [True, False]
    assert tl.dark_links(11.0) == []  # lit again at the end of its dark second
    assert tl.edges_inside(10.0, 21.0) == {11.0, 20.0}  # the ends themselves are not inside
    assert tl.flapping() == [0]


def test_transitions_merge_the_history_with_the_flaps() -> None:
    tl = timeline()
    tl.record(0, 25.0, False)  # down for another reason (admin down) from 25 s
    tl.record(0, 32.0, True)
    assert tl.transitions(0, 0.0, 42.0) == [
        (0.0, True),
        (10.0, False),
        (11.0, True),
        (20.0, False),
        (21.0, True),
        (25.0, False),
        (32.0, True),
        (40.0, False),
        (41.0, True),
    ]
    assert tl.transitions(1, 0.0, 42.0) == [(0.0, True)]


def test_a_flap_that_ends_stops_dropping_the_link() -> None:
    tl = timeline(end_s=25.0)
    assert tl.drops_in(0.0, 100.0).tolist() == [2, 0]
    assert tl.transitions(0, 5.0, 100.0) == [
        (10.0, False),
        (11.0, True),
        (20.0, False),
        (21.0, True),
    ]
    assert not tl.is_dark(0, 30.0)


def one_module(lanes: int = 4, rate_gbps: float = 425.0) -> ModuleArrays:
    """The arrays the counters read: one module of ``lanes`` lanes, checker running."""
    mask = np.arange(MAX_LANES)[None, :] < lanes
    zeros = np.zeros((1, MAX_LANES))
    return ModuleArrays(
        n=1,
        lanes=np.array([lanes]),
        mask=mask,
        tx_oma_nom_dbm=zeros,
        er_db=np.zeros(1),
        sens_oma_dbm=np.zeros(1),
        penalty_db=zeros,
        los_dbm=np.zeros(1),
        path_loss_db=zeros,
        dirty_tx_db=zeros,
        dirty_rx_db=zeros,
        bias_nom_ma=zeros,
        bias_max_ma=np.zeros(1),
        vcc_v=np.zeros(1),
        laser_loss_db=zeros,
        laser_drift_db_per_s=zeros,
        temp_c=np.zeros(1),
        self_heat_c=np.zeros(1),
        load_heat_c=np.zeros(1),
        hot_c=np.zeros(1),
        peer=np.array([-1]),
        line_rate_gbps=np.array([rate_gbps]),
        thresholds=np.zeros((1, 5, 4)),
        gen_pattern=["PRBS31Q"],
        chk_pattern=["PRBS31Q"],
    )


def test_prbs_counts_only_locked_lit_time_and_resets() -> None:
    a = one_module()
    c = LinkCounters(1)
    rng = np.random.default_rng(1)
    ber = np.where(a.mask, 1e-6, 0.0)
    lock = a.mask.copy()
    lock[0, 3] = False  # lane 4 not locked
    c.count_prbs(a, ber, lock, lit_s=np.array([2.0]), drops=np.array([1]), rng=rng)
    lanes = c.prbs_lanes(0, a, locked=lock[0])
    assert [ln.locked_s for ln in lanes] == [2.0, 2.0, 2.0, 0.0]
    lane_bits = int(2.0 * 425e9 / 4)
    assert lanes[0].bits == lane_bits and lanes[3].bits == 0
    assert lanes[0].ber == pytest.approx(1e-6, rel=0.05)  # ~1e5 errors drawn
    assert [ln.loss_of_lock_count for ln in lanes] == [1, 1, 1, 0]
    c.reset_prbs(0)
    assert all(ln.bits == 0 and ln.errors == 0 for ln in c.prbs_lanes(0, a, locked=lock[0]))


def test_a_cleared_fec_reads_from_zero_and_shows_no_ber_while_down() -> None:
    a = one_module()
    c = LinkCounters(1)
    rng = np.random.default_rng(2)
    ber = np.where(a.mask, 1e-5, 0.0)
    c.count_fec(a, ber, up_s=np.array([1e-3]), rng=rng)
    before = c.fec_stats("leaf1", "Ethernet0", 0, a, errors_1s=None)
    assert before.total_codewords > 0 and before.corrected_codewords > 0
    assert before.pre_fec_ber == 0.0 and before.lanes_pre_fec_ber == (0.0,) * 4  # link down
    c.clear_fec(0)
    assert c.fec_stats("leaf1", "Ethernet0", 0, a, errors_1s=None).total_codewords == 0
    up = c.fec_stats("leaf1", "Ethernet0", 0, a, errors_1s=[1062, 0, 0, 0])
    assert up.lanes_pre_fec_ber[0] == pytest.approx(1062 / (425e9 / 4))
    assert up.pre_fec_ber == pytest.approx(1062 / 425e9)
