"""Gray failures in the fabric model: what each one loses, and the random schedule."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from labtest.emulation.model import gray
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.faults import CATALOGUE
from labtest.run import default_testbed
from labtest.testbed import load_testbed

LINK = "leaf1:Ethernet0--spine1:Ethernet0"


@pytest.fixture
def fabric() -> Iterator[Fabric]:
    gray.register()
    try:
        yield Fabric(load_testbed(default_testbed()))
    finally:
        gray.unregister()  # other tests' catalogue stays the acceptance one


def test_acceptance_gray_faults_are_catalogued_and_the_hourly_flap_is_opt_in() -> None:
    # lossy links, silent drops and blackholing members are caught by the paths suite's
    # member loss (issue 33); an hourly flap outlasts any acceptance run: the doctor's only
    assert {"lossy_link", "silent_drop", "ecmp_blackhole"} <= set(CATALOGUE)
    assert all(ft.kind not in CATALOGUE for ft in gray.OPT_IN)


def test_silent_drop_loses_one_direction_only_and_clears(fabric: Fabric) -> None:
    fid = fabric.inject("silent_drop", LINK, direction="ba", loss=1.0)
    assert gray.frame_loss(fabric, LINK, "ba", 1) == 1.0
    assert gray.frame_loss(fabric, LINK, "ab", 1) == 0.0
    assert fabric.link_up(LINK)  # gray: the link stays up
    fabric.clear(fid)
    assert gray.frame_loss(fabric, LINK, "ba", 1) == 0.0


def test_lossy_links_compound(fabric: Fabric) -> None:
    fabric.inject("lossy_link", LINK, loss=0.1)
    fabric.inject("lossy_link", LINK, loss=0.1)
    assert gray.frame_loss(fabric, LINK, "ab", 5) == pytest.approx(0.19)


def test_ecmp_blackhole_drops_about_its_share_of_flows(fabric: Fabric) -> None:
    fabric.inject("ecmp_blackhole", LINK, flow_fraction=0.25)
    lost = [gray.frame_loss(fabric, LINK, "ab", h) for h in range(4000)]
    assert set(lost) == {0.0, 1.0}
    assert 0.22 < sum(lost) / 4000 < 0.28
    assert gray.frame_loss(fabric, LINK, "ba", 3) == 0.0


def test_intermittent_flap_is_dark_for_down_s_once_per_period(fabric: Fabric) -> None:
    fabric.inject("intermittent_flap", LINK, period_s=3600, down_s=2)
    assert not fabric.link_up(LINK)
    assert gray.frame_loss(fabric, LINK, "ab", 0) == 1.0
    fabric.advance(3.0)
    assert fabric.link_up(LINK)
    fabric.advance(3598.0)  # t = 3601 s: inside the second dark period [3600, 3602)
    assert not fabric.link_up(LINK)


def test_random_schedule_fits_and_does_not_overlap() -> None:
    rng = np.random.default_rng(11)
    kinds = [("silent_drop", {}), ("lossy_link", {"loss": 0.05})]
    sched = gray.random_schedule(rng, [LINK, "leaf2:Ethernet0--spine1:Ethernet8"], kinds,
                                 count=50, horizon_s=86400, duration_s=(60, 600), gap_s=120)
    assert len(sched) == 50
    for a, b in itertools.pairwise(sched):
        assert b.at_s >= a.at_s + a.duration_s + 120
    assert sched[-1].at_s + sched[-1].duration_s <= 86400
    assert len({f.target for f in sched}) == 2 and len({f.kind for f in sched}) == 2
    with pytest.raises(ValueError):
        gray.random_schedule(rng, [LINK], kinds, count=10, horizon_s=100, duration_s=(60, 60))


def test_schedule_applies_at_its_times(fabric: Fabric) -> None:
    sched = [gray.ScheduledFault("silent_drop", LINK, {}, at_s=10.0, duration_s=5.0)]
    gray.apply_schedule(fabric, sched)
    assert gray.frame_loss(fabric, LINK, "ab", 0) == 0.0
    fabric.advance(11.0)
    assert gray.frame_loss(fabric, LINK, "ab", 0) == 1.0
    fabric.advance(5.0)
    assert gray.frame_loss(fabric, LINK, "ab", 0) == 0.0
