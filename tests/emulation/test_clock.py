"""The virtual clock: stepped for pure-model runs, scaled real time for live emulators."""

from __future__ import annotations

import threading
import time

import pytest

from labtest import labtime
from labtest.emulation.model.clock import _GUARDED, VirtualClock, serving


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


# --- elastic: idle time is skipped, busy time and dark devices are not ------------------------


def _sleep_in_thread(clock: VirtualClock, virtual_s: float) -> tuple[threading.Thread, list[bool]]:
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(clock.sleep(virtual_s)), daemon=True)
    thread.start()
    return thread, done


def test_elastic_clock_jumps_to_the_wake_up_when_everyone_waits() -> None:
    # an emulated 'ib_write_bw -D 3600' at time_scale 1 would take an hour of wall time
    # (skipped at idle_scale: the lab's default runs 300 virtual seconds per idle wall second)
    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6  # an hour of idle virtual time in a few ms
    clock.set_elastic(True)
    try:
        thread, done = _sleep_in_thread(clock, 3600.0)
        thread.join(60.0)
        assert done == [True]
        assert clock.now_s() >= 3600.0
        assert clock.jumped_s >= 3500.0  # skipped, not waited
    finally:
        clock.set_elastic(False)


def test_elastic_clock_does_not_jump_while_a_request_is_served_or_a_device_is_dark() -> None:
    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6  # an hour of idle virtual time in a few ms
    clock.set_elastic(True)
    try:
        with clock.busy():
            thread, done = _sleep_in_thread(clock, 3600.0)
            thread.join(0.3)
            assert not done and clock.jumped_s == 0.0
        clock.set_hold(True)  # e.g. a rebooting switch: its clients wait on the wall clock
        thread.join(0.3)
        assert not done and clock.jumped_s == 0.0
        clock.set_hold(False)
        thread.join(60.0)
        assert done == [True] and clock.jumped_s > 0.0
    finally:
        clock.set_elastic(False)


def test_a_sleep_inside_a_served_request_lets_the_clock_jump() -> None:
    # the emulated host's run sleeps inside the SSH request that started it
    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6  # an hour of idle virtual time in a few ms
    clock.set_elastic(True)
    try:
        with serving(clock):
            assert clock.sleep(600.0)
        assert clock.jumped_s > 0.0
    finally:
        clock.set_elastic(False)


def test_a_virtual_timer_fires_at_its_virtual_time_or_never_when_cancelled() -> None:
    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6  # an hour of idle virtual time in a few ms
    clock.set_elastic(True)
    fired: list[float] = []
    try:
        keep = clock.call_later(900.0, lambda: fired.append(clock.now_s()))
        drop = clock.call_later(1800.0, lambda: fired.append(-1.0))
        keep.join(60.0)
        drop.cancel()
        drop.join(5.0)
        assert len(fired) == 1 and fired[0] >= 900.0
    finally:
        clock.set_elastic(False)


def test_a_stepped_clock_refuses_to_sleep() -> None:
    with pytest.raises(RuntimeError):
        VirtualClock().sleep(1.0)


def test_a_wall_clock_sleep_anywhere_holds_the_jumps() -> None:
    # a driver polling with time.sleep expects scaled wall time under it, not a jump
    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6  # an hour of idle virtual time in a few ms
    clock.set_elastic(True)
    try:
        waller = threading.Thread(target=time.sleep, args=(1.0,), daemon=True)
        waller.start()
        thread, done = _sleep_in_thread(clock, 3600.0)
        threading.Event().wait(0.3)  # not time.sleep: this wait must not hold the clock
        assert not done and clock.jumped_s == 0.0
        thread.join(60.0)
        assert done == [True]
    finally:
        clock.set_elastic(False)
    assert clock not in _GUARDED  # a stopped lab's clock no longer counts sleepers


def test_lab_time_is_the_emulated_clock_in_lab_seconds_while_installed() -> None:
    # time_scale 10: one lab second is ten virtual seconds, as the suites' settings assume
    clock = VirtualClock(time_scale=10.0, realtime=True)
    clock.idle_scale = 1e6
    clock.set_elastic(True)
    labtime.use(clock)
    try:
        start_virtual, start = clock.now_s(), labtime.monotonic()
        start_device = labtime.device_s()
        labtime.sleep(600.0)  # a ten-minute watch: skipped, not waited
        assert labtime.monotonic() - start >= 600.0
        assert clock.now_s() - start_virtual >= 6000.0
        # what a device's timer (a perftest -D) counts meanwhile: the virtual seconds
        assert labtime.device_s() - start_device == pytest.approx(
            (labtime.monotonic() - start) * 10.0, rel=0.01)
    finally:
        labtime.release(clock)
        clock.set_elastic(False)
    assert clock not in labtime._STACK  # its lab stopped: lab time is what it was before


def test_lab_time_ignores_a_stepped_clock() -> None:
    # a burn-in's stepped clock moves only when the burn-in advances it: a wait on it
    # would never end, so lab time stays the wall clock
    clock = VirtualClock(time_scale=10.0)
    labtime.use(clock)
    try:
        start = labtime.monotonic()
        labtime.sleep(0.01)
        assert labtime.monotonic() > start
        assert clock.now_s() == 0.0
    finally:
        labtime.release(clock)


def test_pacer_survives_the_last_sleeper_waking_during_its_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the pacer lets the lock go to read /proc; the last sleeper may leave meanwhile (seen in a
    # full test run: 'min() arg is an empty sequence' killed the pacer thread)
    import labtest.emulation.model.clock as clock_module

    clock = VirtualClock(time_scale=1.0, realtime=True)
    clock.idle_scale = 1e6
    stop = threading.Event()
    probed = threading.Event()

    def sleeper_leaves() -> bool:
        stop.set()  # the sleeper below is interrupted and leaves while the lock is free
        deadline = time.monotonic() + 5.0
        while clock._sleepers and time.monotonic() < deadline:
            clock_module._REAL_SLEEP(0.001)
        probed.set()
        return False

    monkeypatch.setattr(clock_module, "_runnable_threads", sleeper_leaves)
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    clock.set_elastic(True)
    try:
        thread = threading.Thread(target=clock.sleep, args=(3600.0, stop), daemon=True)
        thread.start()
        assert probed.wait(10.0)
        thread.join(5.0)
        clock_module._REAL_SLEEP(0.05)  # the pacer's turn after the probe
        assert errors == []
        assert clock._pacer is not None and clock._pacer.is_alive()
    finally:
        clock.set_elastic(False)


def test_a_load_outlived_by_a_slow_lab_grows_by_what_was_needed_within_bounds() -> None:
    assert labtime.longer_s(20, 30.0, 2.0, 8) == 60  # what the attempt needed, with margin
    assert labtime.longer_s(20, 5.0, 2.0, 8) == 40  # at least twice the last
    assert labtime.longer_s(20, 500.0, 2.0, 8) == 160  # at most max_stretch times it
