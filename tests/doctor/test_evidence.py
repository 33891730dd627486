"""The doctor's switch read (labtest/doctor/evidence.py ``read_switch``): where its
link-down counter comes from on each kind of switch, what is said when a switch keeps none,
and the physical layer it hands over before the rest of the read."""

from __future__ import annotations

import math
import threading
import time

import pytest

from labtest.capabilities.switch import FecStats, InterfaceCounters, InterfaceStatus
from labtest.capabilities.transceiver import LaneDom, Transceiver
from labtest.doctor.evidence import read_switch
from labtest.doctor.service import _Background
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


class WithOptics(EosLike):
    """FEC and DOM too; ``link_status_changes`` comes with the counters (EOS)."""

    def fec_stats(self) -> dict[str, FecStats]:
        self.calls.append("fec")
        return {"Ethernet0": FecStats(corrected_cw=1200, uncorrectable_cw=0, pre_fec_ber=3e-5)}

    def transceivers(self) -> dict[str, Transceiver]:
        self.calls.append("dom")
        return {"Ethernet0": Transceiver(temperature_c=41.0, media_type="400GBASE-DR4", lanes=[
            LaneDom(lane=i, tx_bias_ma=7.0, tx_power_dbm=1.0, rx_power_dbm=-2.5 - i)
            for i in range(1, 5)])}


def test_the_physical_layer_is_read_after_the_watch_and_handed_over_without_counters() -> None:
    """FEC and DOM are read as the watch ends, not before it (the report follows them by
    seconds, not by a watch); a late switch's are judged while the rest of its read runs,
    and what is handed over carries levels only (counters are diffed with the next read's,
    stamped by the device clock read last; a partial reading has no stamp)."""
    driver = WithOptics(changes=2)
    handed: list[dict] = []

    def publish(parts: dict) -> None:
        handed.append(parts)
        driver.calls.append("published")

    ports, _ = read_switch(driver, "sw1", watch_s=0.05, poll_s=0.01, publish=publish)
    at = driver.calls.index("fec")
    assert driver.calls[at:at + 3] == ["fec", "dom", "published"], driver.calls
    watch = driver.calls[:at]
    assert watch and set(watch) == {"interfaces"}, driver.calls  # sampled first
    assert "counters" in driver.calls[at:] and "interfaces" in driver.calls[at:]
    [early] = handed
    r = early["sw1:Ethernet0"]
    assert r.partial and math.isnan(r.time_s) and r.counters == {}
    assert r.pre_fec_ber == 3e-5 and r.rx_power_dbm == (-3.5, -4.5, -5.5, -6.5)
    assert r.temperature_c == 41.0 and r.media == "400GBASE-DR4" and r.oper_up is None
    whole = ports["sw1:Ethernet0"]  # the whole reading: counters and state, no partial mark
    assert not whole.partial and whole.counters["fec_corrected_cw"] == 1200
    assert whole.oper_up is True and whole.counters["link_status_changes"] == 2


def test_a_held_watch_reads_the_counters_only_after_the_bursts() -> None:
    """The interval's bursts run while the switches watch their links (issue 34: run
    before the watch, four bursts took 18-20 s of a noisy lab's round on top of it); a
    switch reads its counters once they ended, so the interval's counters hold their bytes
    (``Bursts.settle`` tells which uplink each took from them)."""
    bursts_done = threading.Event()
    driver = Switch(changes=0)
    timer = threading.Timer(0.3, bursts_done.set)
    timer.start()
    try:
        read_switch(driver, "sw1", watch_s=0.0, poll_s=0.01,
                    hold=lambda: not bursts_done.is_set())
        assert bursts_done.is_set()  # the read waited for the bursts
        first = driver.calls.index("counters")
        assert driver.calls[:first] == ["interfaces"] * first  # watched, then counted
        assert first >= 3  # the watch's sample, the closing one, the state read
    finally:
        timer.cancel()
    held_for = time.monotonic()
    read_switch(Switch(changes=0), "sw1", watch_s=0.0, poll_s=0.01, hold=lambda: False)
    assert time.monotonic() - held_for < 0.3  # nothing running: no wait


def test_a_background_call_hands_its_error_to_the_joining_thread() -> None:
    """A burst prober that crashed must not vanish with its thread."""

    def boom() -> None:
        raise RuntimeError("burst prober crashed")

    bg = _Background(boom, "test-bursts")
    with pytest.raises(RuntimeError, match="burst prober crashed"):
        bg.join()
    assert not bg.is_alive()


class _SlowDead(BfddDead):
    """bfdd dead on a switch whose BFD read answers late."""

    def bfd_sessions(self) -> dict[str, object]:
        time.sleep(0.6)
        return super().bfd_sessions()


def test_what_a_late_read_says_reaches_the_round_it_arrives_in() -> None:
    """A late switch's read went on in the background and wrote its dead daemon into the
    round it began in, whose snapshot was already made: the round it arrived in had its
    ports but not the daemon, so its neighbours' sessions down towards it would page their
    links, not the switch (found reviewing issue 34's lean read)."""
    from types import SimpleNamespace

    from labtest.doctor.evidence import collect
    from labtest.doctor.reads import Reads

    drivers = {"sw1": _SlowDead(changes=3), "sw2": EosLike(changes=0)}
    for name, d in drivers.items():
        d.name = name  # type: ignore[attr-defined]

    class Lab:  # what collect asks of a lab (hashable: the sweep keeps a lock a device)
        testbed = SimpleNamespace(devices={n: SimpleNamespace(role="leaf", ssh=None, snmp=None,
                                                              visa=None) for n in drivers})

        def names(self, capability: str) -> list[str]:
            return sorted(drivers)

        def device(self, name: str) -> Switch:
            return drivers[name]

    lab = Lab()
    reads = Reads()
    first = collect(lab, reads=reads, scale=100.0)  # type: ignore[arg-type]
    assert "sw1" in first.late and first.services_down == {}
    time.sleep(1.0)
    second = collect(lab, reads=reads, scale=100.0)  # type: ignore[arg-type]
    assert "sw1:Ethernet0" in second.ports  # its read arrived
    assert second.services_down == {"sw1": "bfdd is not running (BfdSessions unread)"}


class _Nic:
    """A host whose NIC counts, with an RDMA port whose hw counters cannot be read (a
    kernel without them: the sysfs read fails)."""

    name = "host1"

    def ethtool_stats(self, ifname: str) -> dict[str, int]:
        return {"rx_packets": 5, "rx_bytes_phy": 4096, "rx_vport_rdma_unicast_packets": 1}

    def rdma_hw_counters(self, device: str, port: int = 1) -> object:
        from labtest.errors import CommandFailed

        raise CommandFailed("host1", "grep: hw_counters: No such file or directory")

    def pfc_counters(self, ifname: str) -> object:
        from types import SimpleNamespace

        return SimpleNamespace(rx_pause_frames=0, tx_pause_frames=0)

    def rdma_devices(self) -> list[object]:
        from labtest.capabilities.host import RdmaDevice

        return [RdmaDevice("mlx5_0", 1, netdev="eth0")]

    def links(self) -> list[object]:
        return []


def test_a_host_whose_marks_cannot_be_read_is_read_and_says_so() -> None:
    """The ECN marks a host received are one more counter: a NIC whose hw counters fail to
    read keeps the rest of its reading, says why, and is not asked again every round."""
    from labtest.doctor.evidence import read_host
    from labtest.run import default_testbed
    from labtest.testbed import load_testbed

    rdma: dict[str, tuple[str, int] | None] = {}
    ports, missing = read_host(_Nic(), "host1", load_testbed(default_testbed()), rdma)
    assert ports["host1:eth0"].counters["rx_bytes"] == 4096
    assert "np_ecn_marked" not in ports["host1:eth0"].counters
    assert "mlx5_0/1 hw counters unread" in missing["host1 ECN marks received"], missing
    assert rdma == {"eth0": None}


def test_a_lean_read_hands_over_its_physical_layer_before_anything_else() -> None:
    """A lean read (a late switch's) has no watch: its FEC and DOM come first, before
    the counters it must read after the interval's bursts, so they are judged while
    the rest of its slow read runs."""
    driver = WithOptics(changes=2)
    read_switch(driver, "sw1", watch_s=0.05, poll_s=0.01, lean=True,
                publish=lambda parts: driver.calls.append("published"))
    assert driver.calls[:3] == ["fec", "dom", "published"], driver.calls
    assert "counters" in driver.calls and "interfaces" not in driver.calls
