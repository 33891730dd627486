"""The fabric model as a whole: built from any testbed, link view, interfaces, counters."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtest.emulation.model import Fabric, ModelError
from labtest.emulation.model import fabric as fabric_module
from labtest.testbed import model as tbm
from labtest.testbed.loader import load_testbed

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "testbeds" / "example-lab.yaml"


def small(emulation: bool = True) -> tbm.Testbed:
    return tbm.Testbed(
        name="small",
        devices={
            "leaf1": tbm.Device(role="leaf", driver="sonic", ports=["Ethernet0", "Ethernet4"]),
            "host1": tbm.Device(role="host", driver="linux"),
            "pdu1": tbm.Device(role="pdu", driver="pdu"),
        },
        links=[tbm.Link(a="host1:eth0", b="leaf1:Ethernet0")],
        emulation=tbm.Emulation(seed=2) if emulation else None,
    )


def test_builds_from_the_default_testbed_file() -> None:
    testbed = load_testbed(DEFAULT)
    fabric = Fabric(testbed)
    assert fabric.link_names() == [lk.name for lk in testbed.links]
    assert all(fabric.link_up(name) for name in fabric.link_names())
    assert all(fabric.link_speed_gbps(name) == 400.0 for name in fabric.link_names())
    assert all(fabric.link_rate_fraction(name) == 1.0 for name in fabric.link_names())
    assert {i.port for i in fabric.interfaces("leaf1")} == {
        "Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24", "Ethernet32"}
    assert all(i.oper_up and i.lanes == 4 for i in fabric.interfaces("leaf1"))
    neighbours = {n.local_port: (n.system_name, n.port_id) for n in fabric.lldp_neighbours("leaf1")}
    assert neighbours["Ethernet8"] == ("spine2", "Ethernet1/1")
    assert neighbours["Ethernet32"] == ("tg1", "p1")
    assert fabric.interfaces("opm1") == []
    assert fabric.transceiver("tg1", "p1").optic == "400G-FR4"


def test_any_testbed_builds_even_without_an_emulation_section() -> None:
    fabric = Fabric(small(emulation=False), seed=4)
    assert fabric.seed == 4
    assert fabric.clock.time_scale == 1.0
    # no optic/speed in the plan: a 400G-DR4 at 400G by default
    assert fabric.interface("leaf1", "Ethernet0").speed_gbps == 400.0
    assert not fabric.interface("leaf1", "Ethernet4").oper_up  # listed, not cabled
    assert fabric.interface("host1", "eth0").mtu_bytes == 9000  # host netdev default
    assert fabric.interface("leaf1", "Ethernet0").mtu_bytes == 9100  # SONiC default
    fabric.set_mtu("leaf1", "Ethernet0", 4200)
    assert fabric.interface("leaf1", "Ethernet0").mtu_bytes == 4200
    with pytest.raises(ModelError):
        fabric.interface("leaf1", "Ethernet9")
    with pytest.raises(ModelError):
        fabric.link_up("nope--nope")
    with pytest.raises(ModelError):
        fabric.device_facts("spine7")


def test_traffic_model_is_attached_when_it_imports() -> None:
    fabric = Fabric(small())
    try:
        from labtest.emulation.model.traffic import TrafficModel
    except ImportError:
        assert fabric.traffic is None
        assert any("traffic" in w for w in fabric.warnings)
    else:
        assert isinstance(fabric.traffic, TrafficModel)


def test_counters_grow_while_up_and_take_traffic_from_outside() -> None:
    fabric = Fabric(small())
    fabric.advance(300.0)
    c = fabric.counters("leaf1", "Ethernet0")
    # one LLDP frame every 30 s in each direction (IEEE 802.1AB msgTxInterval)
    assert (c.tx_packets, c.rx_packets) == (10, 10)
    assert c.tx_octets == 10 * 256
    fabric.set_admin("leaf1", "Ethernet0", False)
    fabric.advance(300.0)
    assert fabric.counters("leaf1", "Ethernet0").tx_packets == 10
    fabric.set_admin("leaf1", "Ethernet0", True)
    fabric.add_port_counters("leaf1", "Ethernet0", rx_octets=4096, rx_packets=1, rx_drops=3)
    fabric.add_counter_source(lambda d, p: {"tx_octets": 1000} if d == "leaf1" else {})
    c = fabric.counters("leaf1", "Ethernet0")
    assert (c.rx_octets, c.rx_packets, c.rx_drops) == (10 * 256 + 4096, 11, 3)
    assert c.tx_octets == 10 * 256 + 1000
    with pytest.raises(ModelError, match="unknown counter"):
        fabric.add_port_counters("leaf1", "Ethernet0", bogus=1)
    fabric.clear_counters("leaf1")
    c = fabric.counters("leaf1", "Ethernet0")
    assert (c.rx_octets, c.tx_octets, c.rx_drops, c.oper_down_count) == (0, 0, 0, 0)
    assert fabric.fec("leaf1", "Ethernet0").total_codewords == 0
    fabric.advance(1.0)
    assert fabric.fec("leaf1", "Ethernet0").total_codewords == 78_125_000


def test_admin_down_takes_the_link_down_and_is_recorded() -> None:
    fabric = Fabric(small())
    link = "host1:eth0--leaf1:Ethernet0"
    fabric.advance(5.0)
    fabric.set_admin("host1", "eth0", False)
    iface = fabric.interface("host1", "eth0")
    assert (iface.admin_up, iface.oper_up) == (False, False)
    assert not fabric.interface("leaf1", "Ethernet0").oper_up
    assert fabric.lldp_neighbours("leaf1") == []
    fabric.advance(2.0)
    fabric.set_admin("host1", "eth0", True)
    assert fabric.link_transitions(link, 1.0, 10.0) == [(5.0, False), (7.0, True)]
    assert fabric.counters("leaf1", "Ethernet0").oper_down_count == 1


def test_link_rate_fraction_can_be_overridden() -> None:
    fabric = Fabric(small())
    link = fabric.link_names()[0]
    fabric.set_link_rate_fraction(link, 0.5)
    assert fabric.link_rate_fraction(link) == 0.5
    fabric.set_link_rate_fraction(link, None)
    assert fabric.link_rate_fraction(link) == 1.0


def test_scheduled_actions_run_at_their_virtual_time() -> None:
    fabric = Fabric(small())
    seen: list[float] = []
    fabric.schedule(30.0, lambda: seen.append(fabric.model_time_s))
    fabric.advance(29.0)
    assert seen == []
    fabric.advance(10.0)
    assert seen == [30.0]


def test_realtime_mode_follows_the_scaled_wall_clock() -> None:
    fabric = Fabric(small(), time_scale=1000.0, realtime=True)
    time.sleep(0.05)
    now = fabric.now_s()
    assert 40.0 <= now <= 5000.0  # 50 ms at x1000, with generous scheduling slack
    assert fabric.counters("leaf1", "Ethernet0").time_s >= now


def test_device_facts_and_macs_are_stable() -> None:
    a, b = Fabric(small()), Fabric(small(), seed=9)
    assert a.device_facts("leaf1") == b.device_facts("leaf1")
    assert a.interface("leaf1", "Ethernet0").mac != a.interface("leaf1", "Ethernet4").mac
    assert a.device_facts("leaf1").base_mac.startswith("02:")  # locally administered


def test_model_imports_nothing_from_drivers_or_suites() -> None:
    code = (
        "import sys, labtest.emulation.model as m, labtest.testbed.loader as ld; "
        f"m.Fabric(ld.load_testbed({str(DEFAULT)!r})); "
        "bad = [n for n in sys.modules "
        "if n.split('.')[:2] in (['labtest', 'drivers'], ['labtest', 'suites'])]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


class RecordingTraffic:
    """Stands in for the traffic model: notes the link state each advance_to starts with."""

    def __init__(self, testbed: tbm.Testbed, links: Fabric, rng: object) -> None:
        self.links = links
        self.now_s = 0.0
        self.seen: list[tuple[float, bool]] = []

    def advance_to(self, t_s: float) -> None:
        up = self.links.link_up(self.links.link_names()[0])
        if not self.seen or self.seen[-1][1] != up:
            self.seen.append((self.now_s, up))
        self.now_s = max(self.now_s, t_s)


def test_traffic_model_sees_every_link_change_at_its_instant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # failover timing (detection + convergence) is measured from the instant the link
    # fails, so the core must hand the traffic model each change at its exact time
    monkeypatch.setattr(fabric_module, "TrafficModel", RecordingTraffic)
    fabric = Fabric(small())
    traffic = fabric.traffic
    assert isinstance(traffic, RecordingTraffic)
    link = fabric.link_names()[0]
    fabric.advance(5.0)
    fabric.inject("flapping_link", link, period_s=10.0, down_s=1.0)
    fabric.advance(20.0)  # one call: the flap edges inside it still reach the model
    fabric.set_admin("leaf1", "Ethernet0", False)
    fabric.advance(1.0)
    assert traffic.seen == [
        (0.0, True), (5.0, False), (6.0, True), (15.0, False), (16.0, True), (25.0, False)]
    assert traffic.now_s == 26.0
