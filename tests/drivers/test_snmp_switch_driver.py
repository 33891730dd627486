"""Generic SNMP switch driver against labtest's SNMP agent serving a filled DictMib.

The ENTITY-MIB layouts follow what the agents publish: EOS puts each optic in
an ``Xcvr for EthernetN`` container with its lane sensors under ``Lane 0 for
Xcvr for EthernetN`` (power in watts, milli scale, precision 4); SONiC's
snmpagent names lane sensors ``DOM RX Power Sensor for Ethernet0/1``. The
values are made up and checked by hand. Agents listen on 127.0.0.1 and stop.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from driver_harness import opened, replay_testbed

from labtest import connect
from labtest.capabilities.switch import Interfaces, Lldp, PortAdmin, SwitchFacts, Transceivers
from labtest.emulation.snmpagent import Counter64, DictMib, Gauge32, ObjectIdentifier, SnmpAgent
from labtest.emulation.snmpagent import TimeTicks as Ticks
from labtest.errors import ParseError, TransportTimeout
from labtest.testbed import model
from labtest.transports.replay import ReplayMissing

COMMUNITY = "drv-snmp-Secret-3"


def system(descr: str, enterprise_oid: str) -> dict[str, object]:
    return {
        "sysDescr.0": descr,
        "sysObjectID.0": ObjectIdentifier(enterprise_oid),
        "sysUpTime.0": Ticks(1_163_567),
        "sysName.0": "leaf1",
    }


def interfaces() -> dict[str, object]:
    values: dict[str, object] = {}
    for index, name in ((1, "Ethernet1"), (2, "Ethernet2"), (999001, "Management1")):
        values |= {
            f"ifDescr.{index}": name,
            f"ifName.{index}": name,
            f"ifMtu.{index}": 9214 if index < 3 else 1500,
            f"ifAdminStatus.{index}": 2 if index == 2 else 1,
            f"ifOperStatus.{index}": 1 if index == 1 else 2,
            f"ifHighSpeed.{index}": Gauge32(400_000 if index < 3 else 1000),
            f"ifAlias.{index}": f"to spine{index}" if index < 3 else "",
            f"ifHCInOctets.{index}": Counter64(2**40 + index),
            f"ifHCOutOctets.{index}": Counter64(2**33),
            f"ifHCInUcastPkts.{index}": Counter64(1000 * index),
            f"ifHCInMulticastPkts.{index}": Counter64(20),
            f"ifHCOutUcastPkts.{index}": Counter64(900),
            f"ifHCOutMulticastPkts.{index}": Counter64(10),
            f"ifHCOutBroadcastPkts.{index}": Counter64(1),
            f"ifInErrors.{index}": 2,
            f"ifInDiscards.{index}": 5,
            f"ifOutErrors.{index}": 0,
            f"ifOutDiscards.{index}": 7,
        }
        if index < 3:  # Management1 lacks it: its rx_packets cannot be summed
            values[f"ifHCInBroadcastPkts.{index}"] = Counter64(3)
    return values


def lldp() -> dict[str, object]:
    return {
        "lldpLocPortIdSubtype.1": 5,
        "lldpLocPortId.1": "Ethernet1",  # port 2 names no id: ifName.2 is used
        "lldpRemChassisIdSubtype.0.1.1": 4,
        "lldpRemChassisId.0.1.1": bytes.fromhex("001c73a0b1c2"),
        "lldpRemPortIdSubtype.0.1.1": 5,
        "lldpRemPortId.0.1.1": "Ethernet49/1",
        "lldpRemPortDesc.0.1.1": "to leaf1",
        "lldpRemSysName.0.1.1": "spine1",
        "lldpRemPortIdSubtype.0.2.1": 3,  # macAddress: the description names the port
        "lldpRemPortId.0.2.1": bytes.fromhex("0c0000000a02"),
        "lldpRemPortDesc.0.2.1": "swp2",
        "lldpRemSysName.0.2.1": "spine2",
    }


def entity(index: int, descr: str, parent: int, cls: int, **more: object) -> dict[str, object]:
    values = {
        f"entPhysicalDescr.{index}": descr,
        f"entPhysicalContainedIn.{index}": parent,
        f"entPhysicalClass.{index}": cls,
        f"entPhysicalName.{index}": "",
    }
    for column, value in more.items():
        values[f"entPhysical{column}.{index}"] = value
    return values


def sensor(index: int, kind: int, scale: int, precision: int, value: int) -> dict[str, object]:
    return {
        f"entPhySensorType.{index}": kind,
        f"entPhySensorScale.{index}": scale,
        f"entPhySensorPrecision.{index}": precision,
        f"entPhySensorValue.{index}": value,
        f"entPhySensorOperStatus.{index}": 1,
    }


def eos_like_mib(with_entity: bool = True, lldp_rows: dict[str, object] | None = None) -> DictMib:
    values = (
        system(
            "Arista Networks EOS version 4.33.2F running on an Arista DCS-7050SX-64",
            "1.3.6.1.4.1.30065.1.3011.7050.1958.64",
        )
        | interfaces()
        | (lldp() if lldp_rows is None else lldp_rows)
    )
    if with_entity:
        values |= (
            entity(
                1,
                "64-port switch chassis",
                0,
                3,
                SerialNum="JPE14030002",
                ModelName="DCS-7050SX-64",
                MfgName="Arista Networks",
                HardwareRev="11.02",
            )
            | entity(100301000, "Xcvr Slot 1", 1, 5)
            | entity(
                100301100,
                "Xcvr for Ethernet1",
                100301000,
                5,
                SerialNum="G1904016438",
                ModelName="SFP-10GLR-31",
                MfgName="Arista Networks",
            )
            | entity(100301201, "DOM Temperature Sensor for Ethernet1", 100301100, 8)
            | entity(100301202, "DOM Voltage Sensor for Ethernet1", 100301100, 8)
            | entity(100301210, "Lane 0 for Xcvr for Ethernet1", 100301100, 9)
            | entity(100301211, "DOM TX Bias Sensor for Ethernet1", 100301210, 8)
            | entity(100301212, "DOM TX Power Sensor for Ethernet1", 100301210, 8)
            | entity(100301213, "DOM RX Power Sensor for Ethernet1", 100301210, 8)
            | entity(100000001, "Cpu temp sensor", 1, 8)
            | sensor(100301201, 8, 9, 1, 258)  # 25.8 C
            | sensor(100301202, 4, 9, 2, 331)  # 3.31 V
            | sensor(100301211, 5, 8, 2, 3345)  # 33.45 mA
            | sensor(100301212, 6, 8, 4, 6322)  # 0.6322 mW
            | sensor(100301213, 6, 8, 4, 1)  # 0.0001 mW: no light
            | sensor(100000001, 8, 9, 1, 375)  # a chassis sensor, no port
        )
    return DictMib(values)


def sonic_like_mib() -> DictMib:
    values = system("SONiC Software Version: SONiC.202311.1", "1.3.6.1.4.1.8072.3.2.10")
    values |= {"ifName.1": "Ethernet0", "ifDescr.1": "Ethernet0"}
    values |= entity(
        1000,
        "SFP/SFP+/SFP28 for Ethernet0",
        1,
        10,
        SerialNum="INKAO2900002A",
        ModelName="C-DQ8FNM010-N00",
        MfgName="INNOLIGHT",
    )
    values |= entity(1001, "DOM Temperature Sensor for Ethernet0", 1000, 8)
    values |= sensor(1001, 8, 9, 1, 412)
    for lane, rx_uw in ((1, 850), (2, 0)):
        base = 1000 + lane * 10
        values |= entity(base + 1, f"DOM RX Power Sensor for Ethernet0/{lane}", 1000, 8)
        values |= entity(base + 2, f"DOM TX Bias Sensor for Ethernet0/{lane}", 1000, 8)
        values |= entity(base + 3, f"DOM TX Power Sensor for Ethernet0/{lane}", 1000, 8)
        values |= sensor(base + 1, 6, 7, 0, rx_uw)  # microwatts
        values |= sensor(base + 2, 5, 8, 1, 75)  # 7.5 mA
        values |= sensor(base + 3, 6, 7, 0, 1000)  # 1 mW = 0 dBm
    return DictMib(values)


def snmp_testbed(port: int, timeout_s: float = 0.5) -> model.Testbed:
    settings = model.SnmpSettings(port=port, community=COMMUNITY, timeout_s=timeout_s, retries=1)
    device = model.Device(role="leaf", driver="snmp-switch", address="127.0.0.1", snmp=settings)
    return model.Testbed(name="snmp", devices={"sw1": device})


@contextlib.contextmanager
def served(mib: DictMib) -> Iterator[Any]:
    """The driver of a switch whose agent serves ``mib`` (agent stopped afterwards)."""
    with SnmpAgent(mib, community=COMMUNITY) as agent, opened(snmp_testbed(agent.port)) as switch:
        yield switch


@pytest.fixture
def agent():
    with SnmpAgent(eos_like_mib(), community=COMMUNITY) as running:
        yield running


@pytest.fixture
def switch(agent):
    with opened(snmp_testbed(agent.port)) as driver:
        yield driver


def test_capabilities(switch):
    assert all(isinstance(switch, c) for c in (SwitchFacts, Interfaces, Lldp, Transceivers))
    assert not isinstance(switch, PortAdmin)


def test_facts_from_system_group_and_chassis_entity(switch):
    facts = switch.facts()
    assert (facts.vendor, facts.model, facts.serial) == (
        "Arista Networks",
        "DCS-7050SX-64",
        "JPE14030002",
    )
    assert facts.os_version == "4.33.2F"  # from sysDescr: the chassis has no software rev
    assert (facts.hostname, facts.uptime_s, facts.hardware_rev) == ("leaf1", 11635.67, "11.02")


def test_facts_without_entity_mib_fall_back_to_the_enterprise_number():
    with served(eos_like_mib(with_entity=False)) as switch:
        facts = switch.facts()
    assert (facts.vendor, facts.model, facts.serial) == ("Arista", None, None)


def test_interfaces_and_64_bit_counters(switch):
    status = switch.interfaces()
    assert status["Ethernet1"].admin_up and status["Ethernet1"].oper_up
    assert status["Ethernet2"].admin_up is False and status["Ethernet2"].state == "down"
    assert status["Ethernet1"].speed_gbps == 400.0 and status["Ethernet1"].mtu_bytes == 9214
    assert status["Ethernet2"].alias == "to spine2"
    counters = switch.counters()
    assert counters["Ethernet2"].rx_packets == 2000 + 20 + 3
    assert counters["Ethernet1"].rx_octets == 2**40 + 1
    assert counters["Ethernet1"].tx_packets == 911
    assert (counters["Ethernet1"].rx_errors, counters["Ethernet1"].tx_discards) == (2, 7)
    assert counters["Management1"].rx_packets is None  # no ifHCInBroadcastPkts: no total


def test_lldp_neighbours(switch):
    lldp = switch.lldp_neighbors()
    assert lldp["Ethernet1"].remote_system == "spine1"
    assert lldp["Ethernet1"].remote_port == "Ethernet49/1"
    assert lldp["Ethernet1"].remote_chassis_id == "00:1c:73:a0:b1:c2"
    assert lldp["Ethernet2"].remote_port == "swp2"  # port id is a MAC: the description wins


def test_transceiver_sensors_eos_layout(switch):
    optics = switch.transceivers()
    assert list(optics) == ["Ethernet1"]  # the CPU sensor belongs to no port
    optic = optics["Ethernet1"]
    assert (optic.vendor, optic.part_number, optic.serial) == (
        "Arista Networks",
        "SFP-10GLR-31",
        "G1904016438",
    )
    assert optic.temperature_c == pytest.approx(25.8)
    assert optic.voltage_v == pytest.approx(3.31)
    assert [lane.lane for lane in optic.lanes] == [1]  # "Lane 0" renumbered from 1
    assert optic.lanes[0].tx_bias_ma == pytest.approx(33.45)
    assert optic.lanes[0].tx_power_dbm == pytest.approx(10 * math.log10(0.6322))
    assert optic.lanes[0].rx_power_dbm == pytest.approx(-40.0)
    assert optic.thresholds == {}


def test_transceiver_sensors_sonic_layout():
    with served(sonic_like_mib()) as switch:
        optic = switch.transceivers()["Ethernet0"]
    assert optic.vendor == "INNOLIGHT" and optic.temperature_c == pytest.approx(41.2)
    assert [lane.lane for lane in optic.lanes] == [1, 2]
    assert optic.lanes[0].rx_power_dbm == pytest.approx(10 * math.log10(0.85))
    assert optic.lanes[1].rx_power_dbm == -math.inf  # 0 W
    assert optic.lanes[1].tx_bias_ma == pytest.approx(7.5)
    assert optic.lanes[1].tx_power_dbm == pytest.approx(0.0)


def test_agent_without_interfaces_is_a_parse_error():
    with (
        served(DictMib(system("x", "1.3.6.1.4.1.9.1"))) as switch,
        pytest.raises(ParseError) as info,
    ):
        switch.interfaces()
    assert info.value.device == "sw1"


def test_silent_agent_times_out_bounded(agent):
    agent.silent = True
    with opened(snmp_testbed(agent.port, timeout_s=0.3)) as switch:
        start = time.monotonic()
        with pytest.raises(TransportTimeout):
            switch.facts()
        assert time.monotonic() - start < 4


def test_record_then_replay(agent, tmp_path):
    record_dir = tmp_path / "rec"
    connect.set_record_dir(record_dir)
    try:
        with opened(snmp_testbed(agent.port)) as switch:
            live = (switch.facts(), switch.counters(), switch.lldp_neighbors())
    finally:
        connect.set_record_dir(None)
    agent.stop()
    replay = replay_testbed("snmp-switch", record_dir / "sw1.jsonl")
    with opened(replay) as replayed:
        assert (replayed.facts(), replayed.counters(), replayed.lldp_neighbors()) == live
        with pytest.raises(ReplayMissing, match="SNMP walk"):
            replayed.transceivers()


def swapped_lldp() -> dict[str, object]:
    """Ethernet1 re-cabled at sysUpTime 5000: the table still holds the row learnt at 100
    until its hold time runs out (issue 14 case 4, as real lldpd + snmpd show it)."""
    values = lldp()
    values.update({
        "lldpRemChassisIdSubtype.5000.1.2": 4,
        "lldpRemChassisId.5000.1.2": bytes.fromhex("001c73a0b1c9"),
        "lldpRemPortIdSubtype.5000.1.2": 5,
        "lldpRemPortId.5000.1.2": "Ethernet7/1",
        "lldpRemPortDesc.5000.1.2": "to leaf9",
        "lldpRemSysName.5000.1.2": "spine9",
    })
    # the first row was learnt at timeMark 100, not 0
    for column in ("ChassisIdSubtype", "ChassisId", "PortIdSubtype", "PortId", "PortDesc",
                   "SysName"):
        values[f"lldpRem{column}.100.1.1"] = values.pop(f"lldpRem{column}.0.1.1")
    return values


def test_lldp_newest_row_wins_and_the_change_is_named():
    with served(eos_like_mib(lldp_rows=swapped_lldp())) as switch:
        lldp = switch.lldp_neighbors()
    assert (lldp["Ethernet1"].remote_system, lldp["Ethernet1"].remote_port) == (
        "spine9", "Ethernet7/1")  # lldpRemTimeMark 5000 beats 100
    assert lldp["Ethernet1"].older_neighbours == ("spine1:Ethernet49/1",)
    assert lldp["Ethernet2"].older_neighbours == ()  # one neighbour: nothing changed
