"""The switch MIB view: IF-MIB, LLDP-MIB and ENTITY MIBs computed from the fabric."""

from __future__ import annotations

import math
import time

import pytest
import switch_helpers as h

from labtest.emulation.lab import EmulatedLab
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import eos, sonic
from labtest.emulation.personalities.switch_mib import SwitchMib
from labtest.testbed import model as tb_model
from labtest.transports import mibs
from labtest.transports.snmp import SnmpTransport, to_python

LEAF = "leaf1"


def mib_of(fabric: Fabric, name: str = LEAF, cache_s: float = 0.0) -> SwitchMib:
    """The personality's MIB, rebuilt without the agent-style cache (instant values)."""
    personality = sonic if fabric.testbed.devices[name].driver == "sonic" else eos
    served = personality.serve(fabric, name, fabric.testbed.devices[name])
    return SwitchMib(served.mib.state, sys_descr=lambda: "test", sys_object_id=(1, 3, 6),
                     cache_s=cache_s)


def walk(mib: SwitchMib, prefix: str) -> dict[tuple[int, ...], object]:
    """Every (index, value) under ``prefix``, through ``next()`` like a manager's walk."""
    base = mibs.oid_tuple(prefix)
    out, oid = {}, base
    while (found := mib.next(oid)) is not None and found[0][: len(base)] == base:
        oid = found[0]
        out[oid[len(base):]] = to_python(found[1])
    return out


def dbm(sensor_value: int) -> float:
    return 10 * math.log10(mibs.sensor_reading(sensor_value, 8, 4) * 1000)  # W -> dBm


@pytest.fixture
def fabric(monkeypatch):
    return h.quiet_fabric(monkeypatch)


def test_if_tables_follow_the_fabric(fabric) -> None:
    mib = mib_of(fabric)
    names = walk(mib, "ifName")
    assert names == {(1,): "Ethernet0", (9,): "Ethernet8", (17,): "Ethernet16",
                     (25,): "Ethernet24"}  # sonic-snmpagent: EthernetN -> ifIndex N+1
    assert set(walk(mib, "ifHighSpeed").values()) == {400_000}
    assert walk(mib, "ifOperStatus") == {(1,): 1, (9,): 1, (17,): 1, (25,): 2}
    hc_in = walk(mib, "ifHCInOctets")
    assert hc_in[(1,)] == fabric.counters(LEAF, "Ethernet0").rx_octets > 0
    fabric.advance(60.0)  # two more LLDP frames each way
    assert walk(mib, "ifHCInOctets")[(1,)] == hc_in[(1,)] + 2 * 256
    assert walk(mib, "ifInOctets")[(1,)] == hc_in[(1,)] + 2 * 256  # Counter32 below 2^32
    assert walk(mib, "ifInErrors")[(1,)] == fabric.counters(LEAF, "Ethernet0").rx_errors
    assert walk(mib, "ifMtu")[(9,)] == 9100
    assert mib.get(mibs.oid_tuple("ifNumber.0")) == 4


def test_shutdown_shows_in_if_mib(fabric) -> None:
    mib = mib_of(fabric)
    fabric.set_admin(LEAF, "Ethernet8", False)
    assert to_python(mib.get(mibs.oid_tuple("ifAdminStatus.9"))) == 2
    assert to_python(mib.get(mibs.oid_tuple("ifOperStatus.9"))) == 2
    spine = mib_of(fabric, "spine1")  # the far end: EOS numbers Ethernet2/1 as 2001
    assert to_python(spine.get(mibs.oid_tuple("ifOperStatus.2001"))) == 2
    assert to_python(spine.get(mibs.oid_tuple("ifAdminStatus.2001"))) == 1
    fabric.set_admin(LEAF, "Ethernet8", True)
    assert to_python(mib.get(mibs.oid_tuple("ifOperStatus.9"))) == 1


def test_transceiver_entities_and_dom_sensors(fabric) -> None:
    mib = mib_of(fabric)
    xcvr = 1_000_000_000 + 1 * 100  # Ethernet0, ifIndex 1 (sonic-snmpagent numbering)
    entity = {col: to_python(mib.get((*mibs.ENT_PHYSICAL_ENTRY, col, xcvr)))
              for col in (5, 7, 9, 11, 12, 13)}
    inv = fabric.transceiver(LEAF, "Ethernet0")
    assert entity == {5: 9, 7: "Ethernet0", 9: inv.firmware_version, 11: inv.serial,
                      12: inv.vendor, 13: inv.part_number}
    names = walk(mib, "entPhysicalName")
    rx_sensors = {idx[0]: name for idx, name in names.items() if "RX Power" in str(name)}
    assert rx_sensors[xcvr + 31] == "DOM RX Power Sensor for Ethernet0/1"
    assert len(rx_sensors) == 12  # 4 lanes on each of the 3 modules
    assert to_python(mib.get((*mibs.ENT_PHYSICAL_ENTRY, 4, xcvr + 31))) == xcvr  # contained in
    dom = fabric.dom(LEAF, "Ethernet0")
    for lane in dom.lanes:
        index = xcvr + 30 + lane.lane
        row = {c: to_python(mib.get((*mibs.ENT_PHY_SENSOR_ENTRY, c, index))) for c in (1, 2, 3, 4)}
        assert (row[1], row[2], row[3]) == (6, 8, 4)  # watts, milli, precision 4
        assert dbm(row[4]) == pytest.approx(lane.rx_power_dbm, abs=0.01)
        bias = to_python(mib.get((*mibs.ENT_PHY_SENSOR_ENTRY, 4, xcvr + 40 + lane.lane)))
        assert mibs.sensor_reading(bias, 8, 3) * 1000 == pytest.approx(lane.bias_ma, abs=0.01)
    temp = to_python(mib.get((*mibs.ENT_PHY_SENSOR_ENTRY, 4, xcvr + 10)))
    assert mibs.sensor_reading(temp, 9, 6) == pytest.approx(dom.temperature_c, abs=0.01)
    assert to_python(mib.get((*mibs.ENT_PHY_SENSOR_ENTRY, 1, xcvr + 10))) == 8  # celsius


def test_dirty_connector_lowers_the_far_end_sensor(fabric) -> None:
    spine = mib_of(fabric, "spine1")
    index = 1_000_000_000 + 1001 * 100 + 30 + 2  # Ethernet1/1 (ifIndex 1001), Rx lane 2
    oid = (*mibs.ENT_PHY_SENSOR_ENTRY, 4, index)
    before = dbm(to_python(spine.get(oid)))
    fabric.inject("dirty_connector", "leaf1:Ethernet0", loss_db=3)
    assert dbm(to_python(spine.get(oid))) == pytest.approx(before - 3.0, abs=0.05)


def test_lldp_remote_table_follows_the_physical_cabling(fabric) -> None:
    mib = mib_of(fabric)
    rem = walk(mib, "lldpRemSysName")
    assert rem == {(0, 1, 1): "spine1", (0, 9, 1): "spine1", (0, 17, 1): "host1"}
    ports = walk(mib, "lldpRemPortId")
    assert ports[(0, 1, 1)] == "Ethernet1/1"
    assert walk(mib, "lldpLocPortId")[(25,)] == "Ethernet24"
    # swap the far ends of leaf1:Ethernet0--spine1:Ethernet1/1 and host1:eth0--leaf1:Ethernet16
    fabric.inject("miswired", "leaf1:Ethernet0", other="leaf1:Ethernet16")
    assert walk(mib, "lldpRemSysName")[(0, 1, 1)] == "leaf1"  # LLDP tells the truth
    assert walk(mib, "lldpRemPortId")[(0, 1, 1)] == "Ethernet16"
    fabric.set_admin(LEAF, "Ethernet8", False)
    assert (0, 9, 1) not in walk(mib, "lldpRemSysName")  # no link, no neighbour


def test_walk_is_ordered_and_a_big_switch_walks_fast() -> None:
    links = [{"a": f"big:Ethernet{8 * i}", "b": f"h{i}:eth0", "speed_gbps": 400,
              "optic": "400G-DR4"} for i in range(64)]
    devices = {"big": {"role": "leaf", "driver": "sonic"}}
    devices |= {f"h{i}": {"role": "host", "driver": "manual-host"} for i in range(64)}
    testbed = {"name": "big", "devices": devices, "links": links}
    fabric = Fabric(tb_model.Testbed.model_validate(testbed))
    mib = mib_of(fabric, "big", cache_s=0.5)  # as served: the agent-style cache
    start = time.perf_counter()
    oids, oid = [], (0,)
    while (found := mib.next(oid)) is not None:
        oid = found[0]
        oids.append(oid)
    elapsed = time.perf_counter() - start
    assert oids == sorted(set(oids))  # strictly increasing: a manager's walk terminates
    assert len(oids) > 64 * 100  # every port carries IF, LLDP, entity and sensor rows
    assert elapsed < 10.0, f"full walk of {len(oids)} OIDs took {elapsed:.2f} s"
    print(f"\nfull walk of a 64-port switch: {len(oids)} OIDs in {elapsed:.2f} s")


# --- over the wire ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = EmulatedLab(h.testbed(), workdir=tmp_path_factory.mktemp("lab"))
    emulated = lab.start()
    yield lab, emulated
    lab.stop()


def test_snmp_walks_ifx_and_lldp_tables_v2c_and_v3(lab) -> None:
    _, tb = lab
    settings = tb.devices[LEAF].snmp
    with SnmpTransport(LEAF, "127.0.0.1", settings) as v2c:
        ifx = v2c.table(["ifName", "ifHighSpeed", "ifHCInOctets", "ifAlias"])
        assert {row["ifName"] for row in ifx.values()} == {
            "Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"}
        assert ifx["1"]["ifHighSpeed"] == 400_000 and ifx["1"]["ifHCInOctets"] >= 0
        rem = v2c.table(["lldpRemSysName", "lldpRemPortId"])
        assert rem["0.1.1"] == {"lldpRemSysName": "spine1", "lldpRemPortId": "Ethernet1/1"}
        descr = v2c.get("SNMPv2-MIB::sysDescr.0")
        assert next(iter(descr.values())).startswith("SONiC Software Version: SONiC.")
    v3 = settings.model_copy(update={"version": "3"})
    with SnmpTransport(LEAF, "127.0.0.1", v3) as secure:
        assert next(iter(secure.get("SNMPv2-MIB::sysName.0").values())) == LEAF
    spine = tb.devices["spine1"].snmp
    with SnmpTransport("spine1", "127.0.0.1", spine) as t:
        assert t.table(["ifName"])["1001"] == {"ifName": "Ethernet1/1"}
