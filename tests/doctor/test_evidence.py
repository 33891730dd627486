"""The doctor's link-down counter (labtest/doctor/evidence.py ``read_switch``): where it
comes from on each kind of switch, and what is said when a switch keeps none."""

from __future__ import annotations

from labtest.capabilities.switch import InterfaceCounters, InterfaceStatus
from labtest.doctor.evidence import read_switch
from labtest.errors import CommandNotSupported, ServiceDown

MISSING = "sw1 link-down counter"


class Switch:
    """Interfaces only; ``calls`` logs every read."""

    def __init__(self, changes: int | None = None) -> None:
        self.calls: list[str] = []
        self.changes = changes

    def interfaces(self) -> dict[str, InterfaceStatus]:
        self.calls.append("interfaces")
        return {"Ethernet0": InterfaceStatus("Ethernet0", admin_up=True, oper_up=True)}

    def counters(self) -> dict[str, InterfaceCounters]:
        self.calls.append("counters")
        return {"Ethernet0": InterfaceCounters(rx_packets=10, link_status_changes=self.changes)}


class SonicLike(Switch):
    """Counters without the count, which ``show interfaces flap`` answers apart."""

    def link_status_changes(self) -> dict[str, int]:
        self.calls.append("flap")
        return {"Ethernet0": 6, "Ethernet-BP0": 2}  # a backplane port counters() omits


class OldSonic(Switch):
    def link_status_changes(self) -> dict[str, int]:
        self.calls.append("flap")
        raise CommandNotSupported("sw1", "'show interfaces flap' is not supported")


class EosLike(Switch):
    def link_status_changes(self) -> dict[str, int]:
        raise AssertionError("the counters read carry the count: no second command")


def read(driver: Switch) -> tuple[dict[str, int], dict[str, str]]:
    ports, missing = read_switch(driver, "sw1", watch_s=0.0, poll_s=0.01)
    assert set(ports) == {"sw1:Ethernet0"}  # a port only the flap table lists is not added
    return ports["sw1:Ethernet0"].counters, missing


def test_a_sonic_switch_counts_its_flaps_from_the_flap_table() -> None:
    driver = SonicLike()
    counters, missing = read(driver)
    assert counters == {"rx_packets": 10, "link_status_changes": 6}
    assert MISSING not in missing and driver.calls.count("flap") == 1


def test_an_eos_switch_counts_them_from_the_counters_already_read() -> None:
    driver = EosLike(changes=15)
    counters, missing = read(driver)
    assert counters == {"rx_packets": 10, "link_status_changes": 15}
    assert MISSING not in missing and driver.calls.count("counters") == 1


def test_a_switch_without_the_count_says_so() -> None:
    for driver in (OldSonic(), Switch()):  # a release without the command; no capability
        counters, missing = read(driver)
        assert counters == {"rx_packets": 10}
        assert missing[MISSING].startswith("driver reports no link status changes")


class BfddDead(Switch):
    """FRR with bfdd killed (kernel campaign 20261211, case 001): its BFD read says so."""

    def bgp_sessions(self) -> dict[str, object]:
        return {}

    def bfd_sessions(self) -> dict[str, object]:
        raise ServiceDown("sw1", "'show bfd peers json': bfdd is not running", service="bfdd")


def test_a_switch_that_says_its_daemon_is_dead_is_read_and_says_so() -> None:
    """Its other readings stand (the ports are read), and the dead daemon is kept for the
    doctor's evidence (the first version lost the whole read to a name clash: "not read:
    spine1: TypeError")."""
    dead: dict[str, str] = {}
    ports, missing = read_switch(BfddDead(changes=3), "sw1", watch_s=0.0, poll_s=0.01, dead=dead)
    assert set(ports) == {"sw1:Ethernet0"} and ports["sw1:Ethernet0"].oper_up is True
    assert dead == {"sw1": "bfdd is not running (BfdSessions unread)"}
    assert missing["sw1 BfdSessions"] == "bfdd is not running"
