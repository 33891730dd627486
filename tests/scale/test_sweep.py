"""Fabric-wide sweeps: bounded concurrency, one device at a time, deadlines, partial results."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
import scale_helpers as h

from labtest.emulation.lab import EmulatedLab
from labtest.errors import ParseError, TransportTimeout
from labtest.lab import Lab
from labtest.registry import register_driver
from labtest.sweep import (
    SwitchHealth,
    counters_sweep,
    dom_sweep,
    health_sweep,
    lldp_sweep,
    sweep,
)
from labtest.testbed import model

# --- a fake driver that records how it is driven ------------------------------------------


class Tracker:
    """Counts callers in flight, overall and per device, and remembers the peaks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.opened: Counter[str] = Counter()
        self.hold_s = 0.05
        self.hang: set[str] = set()
        self.release_hung = threading.Event()

    def enter(self, name: str) -> None:
        with self.lock:
            for key in (name, "*"):
                self.now[key] += 1
                self.peak[key] = max(self.peak[key], self.now[key])

    def leave(self, name: str) -> None:
        with self.lock:
            for key in (name, "*"):
                self.now[key] -= 1


TRACK = Tracker()


class CountingSwitch:
    def __init__(self, name, device, testbed) -> None:
        self.name = name
        self.closed = 0
        TRACK.opened[name] += 1

    def ask(self) -> str:
        TRACK.enter(self.name)
        try:
            if self.name in TRACK.hang:
                TRACK.release_hung.wait(10.0)
                raise TransportTimeout(self.name, "closed under a stuck command")
            time.sleep(TRACK.hold_s)
            if self.name == "bad":
                raise ParseError(self.name, "garbled", raw="%$#")
            return f"answer of {self.name}"
        finally:
            TRACK.leave(self.name)

    def close(self) -> None:
        self.closed += 1
        TRACK.release_hung.set()


register_driver("sweep-counting", CountingSwitch)


@pytest.fixture
def fake_lab():
    global TRACK
    TRACK = Tracker()
    names = [f"sw{i}" for i in range(12)]
    tb = model.Testbed.model_validate(
        {
            "name": "fake",
            "devices": {n: {"role": "leaf", "driver": "sweep-counting"} for n in names},
        }
    )
    lab = Lab(tb)
    yield lab, names
    lab.close()


def test_the_pool_is_bounded_and_every_device_answers_once(fake_lab) -> None:
    lab, names = fake_lab
    result = sweep(lab, names, lambda d: d.ask(), max_workers=4, timeout_s=5)
    assert result.ok == {n: f"answer of {n}" for n in names}
    assert list(result.ok) == names  # testbed order, whatever order they finished in
    assert result.failed == {}
    assert TRACK.peak["*"] == 4  # bounded: never more than max_workers at once
    assert all(TRACK.opened[n] == 1 for n in names)  # one driver (connection) per device
    assert 3 * TRACK.hold_s <= result.duration_s < 12 * TRACK.hold_s


def test_two_sweeps_never_interleave_on_one_device(fake_lab) -> None:
    lab, names = fake_lab
    results = []

    def run() -> None:
        results.append(sweep(lab, names, lambda d: d.ask(), max_workers=12, timeout_s=5))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert [len(r.ok) for r in results] == [12, 12, 12]
    assert max(TRACK.peak[n] for n in names) == 1  # commands to one device serialised
    assert TRACK.peak["*"] > 1  # ... while different devices ran at once


def test_a_hung_device_costs_one_deadline_and_the_rest_still_answer(fake_lab) -> None:
    lab, names = fake_lab
    TRACK.hang = {"sw3"}
    start = time.monotonic()
    result = sweep(lab, names, lambda d: d.ask(), max_workers=2, timeout_s=0.5)
    elapsed = time.monotonic() - start
    assert set(result.failed) == {"sw3"}
    assert isinstance(result.failed["sw3"], TransportTimeout)
    assert "within 0.5 s" in str(result.failed["sw3"])
    assert set(result.ok) == set(names) - {"sw3"}
    # one deadline plus 11 x 0.05 s on the other worker: not a wait for the stuck one (10 s)
    assert elapsed < 0.5 + 2.0
    assert lab.device("sw3").closed >= 1  # closed to free the stuck worker


def test_errors_are_reported_per_device_and_bugs_kept_apart(fake_lab) -> None:
    lab, names = fake_lab
    tb = lab.testbed.model_copy(
        update={"devices": {**lab.testbed.devices, "bad": lab.testbed.devices["sw0"]}}
    )
    lab2 = Lab(tb)

    def ask(driver):
        if driver.name == "sw1":
            raise KeyError("a bug in the swept function")
        return driver.ask()

    result = sweep(lab2, [*names, "bad"], ask, max_workers=4, timeout_s=5)
    assert isinstance(result.failed["bad"], ParseError)
    assert set(result.unexpected) == {"sw1"}
    assert len(result.ok) == len(names) - 1
    assert "2 failed" in result.summary() and "bad: ParseError" in result.summary()
    lab2.close()


# --- against the emulated lab with the real SONiC driver -----------------------------------


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    lab = EmulatedLab(h.leaf_spine(2, 2, parallel=2), workdir=tmp_path_factory.mktemp("lab"))
    tb = lab.start()
    yield lab, tb
    lab.stop()


def test_health_sweep_reads_every_switch(emulated) -> None:
    _, tb = emulated
    lab = Lab(tb)
    try:
        result = health_sweep(lab, max_workers=4, timeout_s=20)
        assert result.failed == {}
        assert set(result.ok) == {"leaf1", "leaf2", "spine1", "spine2"}
        leaf1 = result.ok["leaf1"]
        assert isinstance(leaf1, SwitchHealth)
        assert len(leaf1.transceivers) == 4 and len(leaf1.counters) == 4
        assert leaf1.lldp["Ethernet0"].remote_system == "spine1"
        assert leaf1.lldp["Ethernet24"].remote_system == "spine2"
        assert leaf1.transceivers["Ethernet0"].lanes[0].rx_power_dbm > -5
        # the single-capability sweeps ask the same switches
        assert set(dom_sweep(lab, timeout_s=20).ok) == set(result.ok)
        assert set(counters_sweep(lab, timeout_s=20).ok) == set(result.ok)
        assert lldp_sweep(lab, timeout_s=20).ok["spine2"]["Ethernet16"].remote_system == "leaf2"
    finally:
        lab.close()


def test_one_unreachable_switch_is_reported_the_others_answer(emulated) -> None:
    emu, tb = emulated
    lab = Lab(tb)
    try:
        assert len(lldp_sweep(lab, timeout_s=20).ok) == 4  # connections open and warm
        emu.fabric.set_reachable("spine2", False)
        time.sleep(0.2)  # the lab applies reachability every 50 ms
        command_timeout_s = tb.devices["spine2"].ssh.command_timeout_s
        result = health_sweep(lab, max_workers=4, timeout_s=30)
        assert set(result.failed) == {"spine2"}
        assert isinstance(result.failed["spine2"], TransportTimeout)
        assert set(result.ok) == {"leaf1", "leaf2", "spine1"}
        assert result.duration_s < command_timeout_s + 3.0  # bounded by the device timeout
        # the deadline of the sweep itself, shorter than the transport's, bounds it too
        quick = lldp_sweep(lab, max_workers=4, timeout_s=0.5)
        assert set(quick.failed) == {"spine2"} and len(quick.ok) == 3
        assert quick.duration_s < 2.0
    finally:
        emu.fabric.set_reachable("spine2", True)
        time.sleep(0.2)
        back = lldp_sweep(lab, timeout_s=20)  # it reconnects once the switch is back
        lab.close()
    assert back.failed == {} and len(back.ok) == 4


def test_a_worker_that_fails_before_the_device_is_asked_is_a_result_not_a_hang() -> None:
    """A lab the per-device locks cannot be kept for (unhashable: found with a test's fake
    lab) killed every worker before it handed a result over: the sweep waited out its
    deadline, and ``each_device``, which has none, would wait for ever."""
    from types import SimpleNamespace

    from labtest.sweep import each_device

    lab = SimpleNamespace(device=lambda name: name)  # unhashable: no lock can be kept
    got: dict[str, object] = {}

    def both() -> None:
        got["sweep"] = sweep(lab, ["a", "b"], lambda drv: drv, timeout_s=600.0)  # type: ignore[arg-type]
        try:
            each_device(lab, ["a"], lambda name: name, {})  # type: ignore[arg-type]
        except TypeError as exc:  # not an InfraError: a bug, raised, not waited on
            got["each_device"] = exc

    t = threading.Thread(target=both, daemon=True)
    t.start()
    t.join(30.0)  # a liveness bound, far below the sweep's deadline; the old code hung
    assert not t.is_alive(), "the sweep waited on a worker that had died"
    res = got["sweep"]
    assert set(res.failed) == {"a", "b"} and not res.ok  # type: ignore[attr-defined]
    assert all(isinstance(e, TypeError) for e in res.failed.values())  # type: ignore[attr-defined]
    assert isinstance(got.get("each_device"), TypeError)
