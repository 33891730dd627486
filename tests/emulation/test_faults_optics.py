"""Every fault the fabric core owns changes the model the way its summary says."""

from __future__ import annotations

import pytest

from labtest.emulation.model import Fabric, FaultError
from labtest.emulation.model.faults import CATALOGUE, describe, load_catalogue, parse_params
from labtest.emulation.model.optics import THERMAL_TAU_S
from labtest.testbed import model as tbm

L0 = "sw1:Ethernet0--sw2:Ethernet0"
L8 = "sw1:Ethernet8--sw2:Ethernet8"
OURS = {
    "dirty_connector", "failing_laser", "marginal_lane", "flapping_link", "miswired",
    "unapproved_optic", "firmware_mismatch", "hot_module", "unreachable_device",
}
FAMILIES = {"link", "transceiver", "cabling", "roce", "congestion", "failover", "collective"}


def lab(optic: str = "400G-DR4", faults: list[tbm.FaultSpec] | None = None) -> tbm.Testbed:
    return tbm.Testbed(
        name="lab",
        devices={
            "sw1": tbm.Device(role="leaf", driver="sonic", vars={"firmware_version": "4.1"}),
            "sw2": tbm.Device(role="spine", driver="sonic"),
        },
        links=[
            tbm.Link(a=f"sw1:Ethernet{p}", b=f"sw2:Ethernet{p}", speed_gbps=400, optic=optic,
                     length_m=30)
            for p in (0, 8)
        ],
        emulation=tbm.Emulation(seed=11, faults=faults or []),
    )


def rx(fabric: Fabric, device: str, port: str, reads: int = 10) -> list[float]:
    """Mean Rx power per lane over a few reads (DOM noise is 0.05 dB)."""
    total = None
    for _ in range(reads):
        lanes = [lane.rx_power_dbm for lane in fabric.dom(device, port).lanes]
        total = lanes if total is None else [a + b for a, b in zip(total, lanes, strict=True)]
    assert total is not None
    return [t / reads for t in total]


def test_catalogue_documents_our_faults() -> None:
    load_catalogue()
    assert set(CATALOGUE) >= OURS
    for kind in OURS:
        ft = CATALOGUE[kind]
        assert ft.summary and "\n" not in ft.summary
        assert ft.caught_by in FAMILIES
    with pytest.raises(FaultError, match=r"params\.bogus"):
        parse_params("dirty_connector", {"bogus": 1})
    with pytest.raises(FaultError, match="unknown fault"):
        parse_params("cosmic_ray", {})
    rows = {row["kind"]: row for row in describe()}  # what `--list-faults` prints
    assert rows["dirty_connector"]["params"]["loss_db"]["default"] == 3.0
    assert rows["miswired"]["caught_by"] == "cabling"


def test_dirty_connector_dims_the_far_receiver_on_its_lanes() -> None:
    fabric = Fabric(lab())
    tx_before = [lane.tx_power_dbm for lane in fabric.dom("sw1", "Ethernet0").lanes]
    before = rx(fabric, "sw2", "Ethernet0")
    ber_before = fabric.ber("sw2", "Ethernet0")
    fabric.inject("dirty_connector", L0, loss_db=3.0, end="a", lanes=[2])
    after = rx(fabric, "sw2", "Ethernet0")
    assert after[1] == pytest.approx(before[1] - 3.0, abs=0.1)
    for i in (0, 2, 3):  # a speck on an MPO hits single fibres (reference section 2)
        assert after[i] == pytest.approx(before[i], abs=0.1)
    tx_after = [lane.tx_power_dbm for lane in fabric.dom("sw1", "Ethernet0").lanes]
    assert tx_after == pytest.approx(tx_before, abs=0.25)  # local Tx unchanged
    assert fabric.ber("sw2", "Ethernet0")[1] > 1e3 * ber_before[1]
    fabric.advance(60.0)
    assert sum(fabric.fec("sw2", "Ethernet0").bins[2:]) > 0  # the tail fills
    fabric.clear("dirty_connector")
    assert fabric.ber("sw2", "Ethernet0") == ber_before


def test_dirty_lc_connector_hits_every_wavelength() -> None:
    # LC on FR4: one fibre carries all four CWDM lanes (reference section 2)
    fabric = Fabric(lab("400G-FR4"))
    before = rx(fabric, "sw1", "Ethernet0")
    fabric.inject("dirty_connector", "sw2:Ethernet0", loss_db=2.0, lanes=[1])
    after = rx(fabric, "sw1", "Ethernet0")
    for b, a in zip(before, after, strict=True):
        assert a == pytest.approx(b - 2.0, abs=0.1)


def test_failing_laser_raises_bias_then_loses_power() -> None:
    # ageing: rising bias at constant Tx power (reference section 7, burn-in drift)
    fabric = Fabric(lab())
    d0 = fabric.dom("sw1", "Ethernet0").lanes
    rx0 = rx(fabric, "sw2", "Ethernet0")
    fabric.inject("failing_laser", "sw1:Ethernet0", drift_db_per_hour=1.0)
    fabric.advance(3600.0)
    d1 = fabric.dom("sw1", "Ethernet0").lanes
    for a, b in zip(d0, d1, strict=True):
        assert b.bias_ma == pytest.approx(a.bias_ma * 10 ** 0.1, rel=0.03)  # +1 dB of drive
        assert b.tx_power_dbm == pytest.approx(a.tx_power_dbm, abs=0.25)
    fabric.advance(5 * 3600.0)  # 6 dB lost: the APC limit (115 mA) is long reached
    d6 = fabric.dom("sw1", "Ethernet0").lanes
    assert all(lane.bias_ma == pytest.approx(115.0, abs=1.0) for lane in d6)
    rx6 = rx(fabric, "sw2", "Ethernet0")
    assert all(b < a - 2.0 for a, b in zip(rx0, rx6, strict=True))
    flags = {(f.quantity, f.level) for f in fabric.dom_flags("sw1", "Ethernet0")}
    assert ("bias_ma", "high_warning") in flags  # 110 mA warning (catalogue)
    fabric.clear("failing_laser")
    assert rx(fabric, "sw2", "Ethernet0") == pytest.approx(rx0, abs=0.1)


def test_marginal_lane_sets_that_lanes_margin() -> None:
    fabric = Fabric(lab())
    healthy = fabric.margin_db("sw2", "Ethernet0")
    fabric.inject("marginal_lane", "sw2:Ethernet0", lane=3, margin_db=1.0)
    margins = fabric.margin_db("sw2", "Ethernet0")
    assert margins[2] == pytest.approx(1.0, abs=1e-9)
    assert [margins[i] for i in (0, 1, 3)] == [healthy[i] for i in (0, 1, 3)]
    fabric.advance(1.0)
    # 1 dB margin -> BER 6.5e-6 (reference section 2 table), read like a device's FEC BER
    assert fabric.fec("sw2", "Ethernet0").lanes_pre_fec_ber[2] == pytest.approx(6.5e-6, rel=0.05)
    with pytest.raises(FaultError, match="outside"):
        fabric.inject("marginal_lane", "sw2:Ethernet0", lane=5)


def test_flapping_link_goes_down_every_period() -> None:
    fabric = Fabric(lab())
    fabric.inject("flapping_link", L0, period_s=10.0, down_s=1.0)
    fabric.advance(100.0)
    changes = fabric.link_transitions(L0, 0.0, 99.9)
    downs = [t for t, up in changes if not up]
    assert downs == [10.0 * k for k in range(10)]
    assert fabric.counters("sw1", "Ethernet0").oper_down_count == 10
    assert fabric.counters("sw2", "Ethernet0").oper_down_count == 10
    # codewords only while up: 9 s in every 10 (7.8125e7 CW/s at 400G)
    assert fabric.fec("sw1", "Ethernet0").total_codewords == pytest.approx(90 * 7.8125e7, rel=1e-6)
    assert any(f.quantity == "rx_los" for f in fabric.dom_flags("sw1", "Ethernet0"))
    fabric.advance(0.5)
    assert not fabric.link_up(L0)
    assert not fabric.interface("sw1", "Ethernet0").oper_up
    fabric.advance(1.0)
    assert fabric.link_up(L0)
    assert fabric.link_up(L8)  # the other link never moved
    fabric.clear("flapping_link")
    fabric.advance(100.0)
    assert fabric.counters("sw1", "Ethernet0").oper_down_count == 11


def test_miswired_links_show_in_lldp_not_in_link_state() -> None:
    fabric = Fabric(lab())
    planned = {n.local_port: n.port_id for n in fabric.lldp_neighbours("sw1")}
    assert planned == {"Ethernet0": "Ethernet0", "Ethernet8": "Ethernet8"}
    fabric.inject("miswired", L0, other=L8)
    seen = {n.local_port: (n.system_name, n.port_id) for n in fabric.lldp_neighbours("sw1")}
    assert seen == {"Ethernet0": ("sw2", "Ethernet8"), "Ethernet8": ("sw2", "Ethernet0")}
    assert str(fabric.physical_peer("sw2", "Ethernet8")) == "sw1:Ethernet0"
    assert fabric.link_up(L0) and fabric.link_up(L8)
    fabric.clear("miswired")
    assert {n.local_port: n.port_id for n in fabric.lldp_neighbours("sw1")} == planned
    with pytest.raises(FaultError, match="two different"):
        fabric.inject("miswired", L0, other="sw2:Ethernet0")


def test_unapproved_optic_changes_the_inventory() -> None:
    fabric = Fabric(lab())
    fid = fabric.inject("unapproved_optic", "sw2:Ethernet8", part_number="XYZ-400G")
    inv = fabric.transceiver("sw2", "Ethernet8")
    assert (inv.part_number, inv.vendor) == ("XYZ-400G", "Generic Optics")
    assert fabric.transceiver("sw2", "Ethernet0").part_number == "LTP-400G-DR4"
    fabric.clear(fid)
    assert fabric.transceiver("sw2", "Ethernet8").part_number == "LTP-400G-DR4"


def test_firmware_mismatch_on_a_module_or_a_device() -> None:
    fabric = Fabric(lab())
    fabric.inject("firmware_mismatch", "sw1:Ethernet8", version="2.9.0")
    assert fabric.transceiver("sw1", "Ethernet8").firmware_version == "2.9.0"
    assert fabric.transceiver("sw1", "Ethernet0").firmware_version == "3.2.1"
    assert fabric.device_facts("sw1").firmware_version == "4.1"
    fabric.inject("firmware_mismatch", "sw1", version="3.9")
    assert fabric.device_facts("sw1").firmware_version == "3.9"
    assert fabric.clear("firmware_mismatch") == 2
    assert fabric.device_facts("sw1").firmware_version == "4.1"
    assert fabric.transceiver("sw1", "Ethernet8").firmware_version == "3.2.1"


def test_hot_module_heats_up_with_the_thermal_lag() -> None:
    fabric = Fabric(lab())
    t0 = fabric.dom("sw2", "Ethernet0").temperature_c
    bias0 = fabric.dom("sw2", "Ethernet0").lanes[0].bias_ma
    fabric.inject("hot_module", "sw2:Ethernet0", delta_c=27.0)
    assert fabric.dom("sw2", "Ethernet0").temperature_c == pytest.approx(t0, abs=0.5)
    fabric.advance(20 * THERMAL_TAU_S)
    hot = fabric.dom("sw2", "Ethernet0")
    assert hot.temperature_c == pytest.approx(t0 + 27.0, abs=0.5)  # 72 C
    assert hot.lanes[0].bias_ma > bias0 * 1.1  # +0.5 %/C at constant Tx power
    levels = {(f.quantity, f.level) for f in fabric.dom_flags("sw2", "Ethernet0")}
    assert ("temperature_c", "high_warning") in levels  # 70 C warning
    assert ("temperature_c", "high_alarm") not in levels  # 75 C alarm
    assert fabric.dom("sw1", "Ethernet0").temperature_c == pytest.approx(t0, abs=1.0)
    fabric.inject("hot_module", "sw1", delta_c=10.0)  # a device target heats all its modules
    fabric.advance(20 * THERMAL_TAU_S)
    assert fabric.dom("sw1", "Ethernet8").temperature_c == pytest.approx(t0 + 10.0, abs=1.0)


def test_unreachable_device_silences_management_only() -> None:
    fabric = Fabric(lab())
    fabric.inject("unreachable_device", "sw2")
    assert not fabric.reachable("sw2")
    assert not fabric.device_facts("sw2").reachable
    assert fabric.reachable("sw1")
    assert fabric.link_up(L0)  # forwarding untouched
    fabric.clear("unreachable_device")
    assert fabric.reachable("sw2")
    with pytest.raises(FaultError):
        fabric.inject("unreachable_device", "sw1:Ethernet0")


def test_faults_from_the_testbed_start_and_end_on_time() -> None:
    faults = [
        tbm.FaultSpec(kind="unreachable_device", target="sw1", at_s=100.0, duration_s=50.0),
        tbm.FaultSpec(kind="dirty_connector", target=L8, params={"loss_db": 3.0}),
    ]
    fabric = Fabric(lab(faults=faults))
    assert fabric.ber("sw2", "Ethernet8")[0] > 1e-5  # at_s 0: applied at construction
    assert fabric.reachable("sw1")
    fabric.advance(99.0)
    assert fabric.reachable("sw1")
    fabric.advance(2.0)
    assert not fabric.reachable("sw1")
    fabric.advance(60.0)
    assert fabric.reachable("sw1")
    states = {f.kind: f.state for f in fabric.faults.values()}
    assert states == {"unreachable_device": "cleared", "dirty_connector": "active"}
    assert next(f for f in fabric.faults.values() if f.kind == "unreachable_device").cleared_at_s \
        == pytest.approx(150.0)


def test_bad_fault_specs_are_refused() -> None:
    fabric = Fabric(lab())
    with pytest.raises(FaultError, match="not a device, port or link"):
        fabric.inject("hot_module", "sw9:Ethernet0")
    with pytest.raises(FaultError, match="loss_db"):
        fabric.inject("dirty_connector", L0, loss_db=-1.0)
    with pytest.raises(FaultError, match="down_s"):
        fabric.inject("flapping_link", L0, period_s=1.0, down_s=2.0)
    with pytest.raises(FaultError):
        Fabric(lab(faults=[tbm.FaultSpec(kind="no_such_fault")]))
    assert fabric.active_faults() == []
