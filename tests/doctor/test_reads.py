"""The doctor's background reads: a slow device is left answering and judged later, a
hung one that a probe cannot reach is failed in the round (never waited out): its probe runs
beside the round's probe mesh (``Reads.probe``)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from labtest.doctor import reads
from labtest.errors import TransportTimeout


class _Driver:
    def __init__(self, name: str, lab: _Lab) -> None:
        self.name, self.lab, self.closed = name, lab, threading.Event()

    def close(self) -> None:
        self.closed.set()


class _Lab:
    def __init__(self, names: list[str]) -> None:
        self.testbed = SimpleNamespace(devices={
            n: SimpleNamespace(ssh=None, snmp=None, visa=None) for n in names})
        self.drivers = {n: _Driver(n, self) for n in names}

    def device(self, name: str) -> _Driver:
        return self.drivers[name]


def _read(drv: _Driver, publish: Any = None) -> str:
    if drv.name == "hung":
        drv.closed.wait(30)
        raise TransportTimeout(drv.name, "closed while reading")
    time.sleep(1.5 if drv.name == "slow" else 0.05)
    return f"{drv.name} read"


def test_slow_is_late_and_arrives_next_round_hung_is_failed_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def probe_of(name: str, device: Any, answer_s: float | None = None) -> Any:
        def probe() -> None:
            if name == "hung":
                raise TransportTimeout(name, "probe: no answer")
        return probe

    monkeypatch.setattr(reads, "probe_of", probe_of)
    lab = _Lab(["sw1", "sw2", "sw3", "slow", "hung"])
    r = reads.Reads()
    first = r.round(lab, [list(lab.drivers), []], _read, floor_s=0.2)  # type: ignore[arg-type]
    # neither the slow read nor the hung one was waited out
    assert set(first.ok) == {"sw1", "sw2", "sw3"} and set(first.late) == {"slow", "hung"}
    dead = r.probe(lab, first.late).join()  # type: ignore[arg-type]
    assert set(dead) == {"hung"} and "probe got no answer" in str(dead["hung"]), dead
    assert lab.drivers["hung"].closed.is_set()  # its hung read is freed
    assert "hung" not in r.pending and "slow" in r.pending  # the slow one is still awaited
    while r.pending["slow"].result is None:  # the slow read goes on in the background
        time.sleep(0.05)
    second = r.round(lab, [list(lab.drivers), []], _read, floor_s=0.2)  # type: ignore[arg-type]
    assert second.ok["slow"] == "slow read" and not second.late, second


def test_a_kind_waits_for_half_of_it_before_the_grant() -> None:
    """Half of a kind not yet answered: the round waits (no median to grant from)."""
    lab = _Lab(["a", "b"])

    def read(drv: _Driver, publish: Any) -> str:
        time.sleep(0.3 if drv.name == "a" else 0.6)
        return drv.name

    got = reads.Reads().round(lab, [["a", "b"]], read, floor_s=0.0)  # type: ignore[arg-type]
    # a answered at 0.3 s: the grant is 3 x 0.3 = 0.9 s, so b (0.6 s) is waited for
    assert set(got.ok) == {"a", "b"} and not got.late, got


def test_a_late_read_that_times_out_is_dead_without_waiting_for_its_probe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34's evaluation: an unreachable device's read failed on its own command timeout
    (~30 s) while the doctor's probe of it, given the same timeout from 12 s on, still ran:
    the page waited for the probe (42 s). The read's own timeout settles it."""
    release = threading.Event()

    def probe_of(name: str, device: Any, answer_s: float | None = None) -> Any:
        def probe() -> None:
            release.wait(30)  # a probe given the device's full command timeout
            raise TransportTimeout(name, "probe: no answer")
        return probe

    def read(drv: _Driver, publish: Any) -> str:
        if drv.name == "dead":
            time.sleep(3.0)  # well past the round's grant, even on a loaded machine
            raise TransportTimeout(drv.name, "exec 'show interfaces status': no complete "
                                             "answer within 30 s")
        return f"{drv.name} read"

    monkeypatch.setattr(reads, "probe_of", probe_of)
    lab = _Lab(["sw1", "sw2", "sw3", "dead"])
    r = reads.Reads()
    first = r.round(lab, [list(lab.drivers), []], read, floor_s=0.2)  # type: ignore[arg-type]
    assert set(first.late) == {"dead"}, first
    probing = r.probe(lab, first.late)  # type: ignore[arg-type]
    joined: dict[str, Any] = {}
    t = threading.Thread(target=lambda: joined.update(probing.join()))
    t.start()
    t.join(15)
    waited = t.is_alive()
    release.set()
    t.join(30)
    assert not waited, "the round waited for the probe after the read had timed out"
    assert set(joined) == {"dead"} and "no complete answer" in str(joined["dead"]), joined
    assert "dead" not in r.pending


def test_a_read_carried_over_from_an_earlier_round_does_not_hold_this_one() -> None:
    """Issue 34's evaluation (seed 20261219, case 15): a switch answering 10 s late per
    command, still reading from the baseline, held round 1 for a fresh grant of three times
    the median switch read (44 s instead of 13), so the bound came after one round. Its
    grant was the baseline's; this round is done once its own reads are."""
    r = reads.Reads()
    now = reads.labtime.monotonic()
    done = reads.SweepResult(ok={"x": 1}, failed={})
    r.pending = {
        # asked by the baseline, still answering
        "late": reads._Read(round_s=now - 50.0, began=now - 50.0),
        "sw1": reads._Read(round_s=now, began=now, result=done, took_s=13.0),
        "sw2": reads._Read(round_s=now, began=now, result=done, took_s=13.0),
    }
    assert r._wait_s(["late", "sw1", "sw2"], began=now, floor_s=5.0) == 0.0
    # a read of this round still running is granted three times the median (39 s)
    r.pending["sw3"] = reads._Read(round_s=now, began=now)
    wait = r._wait_s(["late", "sw1", "sw2", "sw3"], began=now, floor_s=5.0)
    assert wait is not None and 38.0 < wait <= 39.0, wait


def test_a_late_reads_first_parts_are_handed_over_once_while_it_runs() -> None:
    """A late switch's read publishes its physical layer first (``read_switch``): the round
    that finds it late takes those parts, a later one does not take them again, and the
    whole read still arrives as before."""
    lab = _Lab(["sw1", "sw2", "slow"])
    go_on = threading.Event()

    def read(drv: _Driver, publish: Any) -> str:
        if drv.name == "slow":
            publish("slow: FEC and DOM")
            go_on.wait(30)
        return f"{drv.name} read"

    r = reads.Reads()
    first = r.round(lab, [list(lab.drivers)], read, floor_s=0.2)  # type: ignore[arg-type]
    assert set(first.late) == {"slow"} and first.early == {"slow": "slow: FEC and DOM"}, first
    second = r.round(lab, [list(lab.drivers)], read, floor_s=0.2)  # type: ignore[arg-type]
    assert set(second.late) == {"slow"} and second.early == {}, second
    go_on.set()
    while r.pending["slow"].result is None:
        time.sleep(0.02)
    third = r.round(lab, [list(lab.drivers)], read, floor_s=0.2)  # type: ignore[arg-type]
    assert third.ok["slow"] == "slow read" and not third.late and not third.early, third


def test_what_every_read_waited_for_together_is_granted_once() -> None:
    """The interval's bursts hold every switch's watch (``watch_oper``): 20 s in each
    read is no slowness of its own. Tripled into a late switch's grant it held a round
    66 s (issue 34's onset evaluation, seed 20261221); granted once: 20 + 3 x 3 s."""

    class Bursts:
        ended_s: float | None = None

        def is_alive(self) -> bool:
            return self.ended_s is None

    r = reads.Reads()
    now = reads.labtime.monotonic()
    done = reads.SweepResult(ok={"x": 1}, failed={})
    r.pending = {
        "sw1": reads._Read(round_s=now, began=now, result=done, took_s=23.0),
        "sw2": reads._Read(round_s=now, began=now, result=done, took_s=23.0),
        "late": reads._Read(round_s=now, began=now),
    }
    hold = Bursts()
    hold.ended_s = now + 20.0
    wait = r._wait_s(["sw1", "sw2", "late"], began=now, floor_s=5.0, hold=hold)
    assert wait is not None and 28.0 < wait <= 29.0, wait
    unheld = r._wait_s(["sw1", "sw2", "late"], began=now, floor_s=5.0)
    assert unheld is not None and 68.0 < unheld <= 69.0, unheld  # no hold: as before


def test_deferred_reads_are_asked_after_the_wait_and_granted_from_then() -> None:
    """The hosts are read as the switches' watch ends (``collect`` defers them): asked only
    once ``first`` returned, and their grant counts from then, not from the round's start
    (else the wait alone would name the slower half of them late)."""
    lab = _Lab(["sw", "h1", "h2"])
    asked: dict[str, float] = {}
    waited_until: list[float] = []

    def first() -> None:
        time.sleep(0.5)
        waited_until.append(time.monotonic())

    def read(drv: _Driver, publish: Any) -> str:
        asked[drv.name] = time.monotonic()
        time.sleep({"sw": 0.05, "h1": 0.2, "h2": 0.4}[drv.name])
        return drv.name

    got = reads.Reads().round(lab, [["sw"], ["h1", "h2"]], read,  # type: ignore[arg-type]
                              floor_s=0.0, first=first, deferred={"h1", "h2"})
    assert set(got.ok) == {"sw", "h1", "h2"} and not got.late, got
    assert len(waited_until) == 2 and asked["sw"] < min(waited_until)  # a switch is not held
    assert min(asked["h1"], asked["h2"]) >= min(waited_until)
