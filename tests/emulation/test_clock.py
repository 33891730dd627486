"""The virtual clock: stepped for pure-model runs, scaled real time for live emulators."""

from __future__ import annotations

import pytest

from labtest.emulation.model.clock import VirtualClock


class FakeWall:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_stepped_clock_moves_only_when_advanced() -> None:
    clock = VirtualClock()
    assert clock.now_s() == 0.0
    assert clock.advance(2.5) == 2.5
    assert clock.now_s() == 2.5
    assert not clock.realtime


def test_clock_never_runs_backwards() -> None:
    clock = VirtualClock()
    with pytest.raises(ValueError):
        clock.advance(-1.0)
    with pytest.raises(ValueError):
        VirtualClock(time_scale=0)


def test_realtime_clock_follows_the_wall_scaled() -> None:
    wall = FakeWall()
    # time_scale 1000: a 72-hour burn-in in 259.2 s of wall time (issue 3: "about 4 minutes")
    clock = VirtualClock(time_scale=1000.0, realtime=True, wall=wall)
    wall.t += 2.0
    assert clock.now_s() == pytest.approx(2000.0)
    assert clock.wall_s(72 * 3600) == pytest.approx(259.2)


def test_realtime_clock_can_jump_and_freeze() -> None:
    wall = FakeWall()
    clock = VirtualClock(time_scale=10.0, realtime=True, wall=wall)
    clock.advance(50.0)
    wall.t += 1.0
    assert clock.now_s() == pytest.approx(60.0)
    clock.set_realtime(False)
    wall.t += 5.0
    assert clock.now_s() == pytest.approx(60.0)
    clock.set_realtime(True)
    wall.t += 1.0
    assert clock.now_s() == pytest.approx(70.0)
