"""``watch_oper_states`` (fixtures/stragglers.py), the collective suite's network-error watch:
a switch's own oper-status change count (LinkFlapCounts) sees a flap between two samples;
a switch without one is sampled at the fast pace. It never reads the counters."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from labtest.capabilities.switch import InterfaceStatus
from labtest.errors import CommandNotSupported
from labtest.fixtures.stragglers import watch_oper_states

PORT = "Ethernet24"


class Switch:
    """Oper state from a script of samples (the last repeats); no change count."""

    def __init__(self, script: list[bool]) -> None:
        self.script, self.reads = script, 0

    def interfaces(self) -> dict[str, InterfaceStatus]:
        up = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        return {PORT: InterfaceStatus(PORT, admin_up=True, oper_up=up),
                "Ethernet99": InterfaceStatus("Ethernet99", admin_up=True, oper_up=False)}

    def counters(self) -> dict[str, Any]:
        raise AssertionError("the watch needs no counter snapshot")


class Blinking(Switch):
    """Every sample sees the port up; the switch counts it going down and up twice."""

    def __init__(self) -> None:
        super().__init__([True])
        self.counted = 0

    def link_status_changes(self) -> dict[str, int]:
        self.counted += 1
        return {PORT: 10 + 4 * (self.counted - 1), "Ethernet99": 50 * self.counted}


class OldRelease(Switch):
    def link_status_changes(self) -> dict[str, int]:
        raise CommandNotSupported("leaf1", "'show interfaces flap' is not supported")


def watch(driver: Switch, counted_poll_s: float = 10.0) -> tuple[dict, dict]:
    lab = SimpleNamespace(device=lambda name: driver,
                          testbed=SimpleNamespace(links=[SimpleNamespace(
                              ends=(f"leaf1:{PORT}", "host2:eth0"))]))
    view: Any = SimpleNamespace(lab=lab, switches=["leaf1"])
    return watch_oper_states(view, 0.2, 0.005, counted_poll_s)


def test_a_flap_between_two_samples_is_counted_and_the_switch_sampled_slowly() -> None:
    driver = Blinking()
    last, events = watch(driver)
    assert last == {f"leaf1:{PORT}": True}  # an uncabled port is not watched
    assert events == {f"leaf1:{PORT}": 2}  # 4 changes: 2 drops, none sampled
    assert driver.reads == 2 and driver.counted == 2  # at the start and the deadline


def test_a_switch_without_the_count_is_sampled_fast_and_its_drop_seen() -> None:
    driver = OldRelease([True, False, True])
    last, events = watch(driver)
    assert events == {f"leaf1:{PORT}": 1} and last == {f"leaf1:{PORT}": True}
    assert driver.reads > 2  # the fast pace
