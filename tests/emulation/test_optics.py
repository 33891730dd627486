"""Optics and DOM: catalogue, realistic readings, Rx = far Tx - loss, thermal model, flags."""

from __future__ import annotations

import math

import pytest

from labtest.emulation.model import OPTICS, Fabric, ModelError
from labtest.emulation.model.optics import LEVELS, QUANTITIES, THERMAL_TAU_S
from labtest.testbed import model as tbm


def pair(optic: str = "400G-DR4", length_m: float = 30.0, seed: int = 3) -> tbm.Testbed:
    speed = 800 if optic == "800G-DR8" else 400
    return tbm.Testbed(
        name="pair",
        devices={
            "sw1": tbm.Device(role="leaf", driver="sonic", ports=["Ethernet0", "Ethernet99"]),
            "sw2": tbm.Device(role="spine", driver="sonic"),
        },
        links=[tbm.Link(a="sw1:Ethernet0", b="sw2:Ethernet0", speed_gbps=speed, optic=optic,
                        length_m=length_m)],
        emulation=tbm.Emulation(seed=seed, ambient_c=25.0),
    )


@pytest.mark.parametrize("name", sorted(OPTICS))
def test_catalogue_entries_are_consistent(name: str) -> None:
    spec = OPTICS[name]
    assert spec.lanes * 106.25 == pytest.approx(spec.speed_gbps * 1.0625)
    assert len(spec.wavelengths_nm) == spec.lanes
    for q in QUANTITIES:
        th = getattr(spec.thresholds, q)
        # Order: LowAlarm < LowWarn < HighWarn < HighAlarm (Google OpticalPower.State, section 2)
        assert th.low_alarm < th.low_warning < th.high_warning < th.high_alarm
    assert spec.part_number


@pytest.mark.parametrize(
    ("optic", "tx_range", "rx_range"),
    [
        # Edgecore ET7502-DR4: Tx avg -2.9..4.0, Rx avg -5.9..4.0 dBm (reference section 2)
        ("400G-DR4", (-2.9, 4.0), (-5.9, 4.0)),
        # Edgecore ET7502-FR4: Tx avg -3.3..3.5, Rx avg -7.3..3.5 dBm
        ("400G-FR4", (-3.3, 3.5), (-7.3, 3.5)),
        # Trixon 800G DR8: Tx avg -2.9..4.0; Rx assumed as DR4
        ("800G-DR8", (-2.9, 4.0), (-5.9, 4.0)),
    ],
)
def test_healthy_dom_sits_inside_the_datasheet(
    optic: str, tx_range: tuple, rx_range: tuple
) -> None:
    fabric = Fabric(pair(optic))
    dom = fabric.dom("sw1", "Ethernet0")
    assert len(dom.lanes) == OPTICS[optic].lanes
    # case temperature 0..70 C and Vcc 3.135..3.465 V (Ascent DR8 operating envelope)
    assert 0.0 < dom.temperature_c < 70.0
    assert 3.135 < dom.voltage_v < 3.465
    for lane in dom.lanes:
        assert tx_range[0] < lane.tx_power_dbm < tx_range[1]
        assert rx_range[0] < lane.rx_power_dbm < rx_range[1]
        assert 0.5 * OPTICS[optic].bias_nom_ma < lane.bias_ma < OPTICS[optic].bias_apc_max_ma
    assert fabric.dom_flags("sw1", "Ethernet0") == []


def test_rx_power_is_far_end_tx_minus_link_loss() -> None:
    # 500 m of fibre at 0.4 dB/km plus two mated connectors at 0.3 dB (catalogue values)
    fabric = Fabric(pair(length_m=500.0))
    loss_db = 0.5 * 0.4 + 2 * 0.3
    n = 20
    tx = [0.0] * 4
    rx = [0.0] * 4
    for _ in range(n):  # average out the 0.05 dB read noise
        for i, lane in enumerate(fabric.dom("sw1", "Ethernet0").lanes):
            tx[i] += lane.tx_power_dbm / n
        for i, lane in enumerate(fabric.dom("sw2", "Ethernet0").lanes):
            rx[i] += lane.rx_power_dbm / n
    for i in range(4):
        assert rx[i] == pytest.approx(tx[i] - loss_db, abs=0.05)


def test_temperature_follows_ambient_with_a_lag_and_load() -> None:
    fabric = Fabric(pair())
    base = fabric.dom("sw1", "Ethernet0").temperature_c
    # idle case temperature = ambient 25 C + 20 C self-heating (DR4 catalogue entry)
    assert base == pytest.approx(45.0, abs=0.5)
    fabric.set_ambient_c(35.0, devices=["sw1"])
    fabric.advance(THERMAL_TAU_S)
    # first-order lag: 1 - 1/e of the 10 C step after one time constant
    assert fabric.dom("sw1", "Ethernet0").temperature_c == pytest.approx(
        45.0 + 10.0 * (1 - math.exp(-1)), abs=0.5
    )
    assert fabric.dom("sw2", "Ethernet0").temperature_c == pytest.approx(45.0, abs=0.5)
    fabric.set_port_load("sw1", "Ethernet0", 1.0)
    fabric.advance(20 * THERMAL_TAU_S)
    # + 3 C at full load (catalogue load_heat_c)
    assert fabric.dom("sw1", "Ethernet0").temperature_c == pytest.approx(58.0, abs=0.5)


def test_flags_latch_and_clear_on_read() -> None:
    # CMIS flags are latched and clear on read (reference section 2, SONiC CMIS doc)
    fabric = Fabric(pair())
    fabric.set_ambient_c(57.0)  # case 77 C: above the 75 C high alarm
    fabric.advance(20 * THERMAL_TAU_S)
    flags = {(f.quantity, f.level): f for f in fabric.dom_flags("sw1", "Ethernet0")}
    assert flags[("temperature_c", "high_alarm")].active
    assert flags[("temperature_c", "high_warning")].active
    assert flags[("temperature_c", "high_alarm")].lane is None
    fabric.set_ambient_c(25.0)
    fabric.advance(20 * THERMAL_TAU_S)
    latched = {(f.quantity, f.level): f for f in fabric.dom_flags("sw1", "Ethernet0")}
    assert ("temperature_c", "high_alarm") in latched  # still latched: not read since
    assert not latched[("temperature_c", "high_alarm")].active
    assert latched[("temperature_c", "high_alarm")].set_count == 1
    assert fabric.dom_flags("sw1", "Ethernet0") == []  # the read cleared it


def test_admin_down_darkens_the_laser_and_latches_los_at_the_far_end() -> None:
    # FBOSS verifyTxRxLatches: Tx/Rx LOS latches set on a port disable (reference section 7)
    fabric = Fabric(pair())
    fabric.set_admin("sw1", "Ethernet0", False)
    lanes = fabric.dom("sw1", "Ethernet0").lanes
    assert all(lane.tx_power_dbm == -40.0 and lane.bias_ma == 0.0 for lane in lanes)
    far = {(f.quantity, f.lane) for f in fabric.dom_flags("sw2", "Ethernet0")}
    assert {("rx_los", lane) for lane in range(1, 5)} <= far
    local = {f.quantity for f in fabric.dom_flags("sw1", "Ethernet0")}
    assert "tx_los" in local
    fabric.set_admin("sw1", "Ethernet0", True)
    fabric.advance(1.0)
    fabric.dom_flags("sw2", "Ethernet0")  # clears the latch
    assert fabric.dom_flags("sw2", "Ethernet0") == []


def test_thresholds_and_inventory_come_from_the_part_number() -> None:
    dr4 = Fabric(pair("400G-DR4"))
    fr4 = Fabric(pair("400G-FR4"))
    assert dr4.dom_thresholds("sw1", "Ethernet0") == OPTICS["400G-DR4"].thresholds
    assert fr4.dom_thresholds("sw1", "Ethernet0").rx_power_dbm.low_warning == -7.3
    inv = dr4.transceiver("sw1", "Ethernet0")
    assert (inv.present, inv.part_number, inv.connector, inv.lanes) == (
        True, "LTP-400G-DR4", "MPO-12", 4)
    assert inv.serial and inv.firmware_version and inv.vendor
    # serials are per port, stable across seeds (a unit keeps its serial)
    assert Fabric(pair(seed=99)).transceiver("sw1", "Ethernet0").serial == inv.serial
    assert dr4.transceiver("sw2", "Ethernet0").serial != inv.serial
    assert set(LEVELS) == {"high_alarm", "high_warning", "low_warning", "low_alarm"}


def test_uncabled_port_has_no_module() -> None:
    fabric = Fabric(pair())
    assert not fabric.transceiver("sw1", "Ethernet99").present
    assert not fabric.interface("sw1", "Ethernet99").oper_up
    with pytest.raises(ModelError):
        fabric.dom("sw1", "Ethernet99")
    with pytest.raises(ModelError):
        fabric.dom("sw1", "Ethernet7")
