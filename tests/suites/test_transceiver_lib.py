"""Pure helpers of the transceiver suite: lane merging, thresholds, flags, fleet odd ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from transceiver_lib import (
    dom_values,
    firmware_matches,
    is_dark,
    load_approved,
    media_type_of,
    merge_lane_interfaces,
    odd_ones,
    raised_flags,
    warning_margin,
)

from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver

RX = Threshold(low_alarm=-8.9, low_warn=-5.9, high_warn=4.0, high_alarm=5.0)


def _lane_port(lane_rx: float, serial: str = "S1") -> Transceiver:
    return Transceiver(temperature_c=45.0, voltage_v=3.3, serial=serial,
                       lanes=[LaneDom(lane=1, tx_bias_ma=55.0, tx_power_dbm=1.0,
                                      rx_power_dbm=lane_rx)],
                       thresholds={"rx_power_dbm": RX}, media_type="400GBASE-DR4")


def test_lane_interfaces_merge_into_one_module() -> None:
    found = {f"Ethernet1/{i}": _lane_port(-1.0 - i) for i in range(1, 5)}
    found["Ethernet2/1"] = _lane_port(0.0, serial="OTHER")
    found["Ethernet1/5"] = _lane_port(0.0, serial="OTHER")  # another module's lane: not ours
    merged = merge_lane_interfaces(found, "Ethernet1/1")
    assert merged is not None
    assert [(lane.lane, lane.rx_power_dbm) for lane in merged.lanes] == [
        (1, -2.0), (2, -3.0), (3, -4.0), (4, -5.0)]
    assert merge_lane_interfaces(found, "Ethernet9/1") is None
    plain = {"Ethernet0": _lane_port(0.0)}
    assert merge_lane_interfaces(plain, "Ethernet0") is plain["Ethernet0"]


def test_values_thresholds_and_margins() -> None:
    module = _lane_port(-5.0)
    values = {(v.quantity, v.lane): v.value for v in dom_values(module)}
    assert values == {("temperature_c", None): 45.0, ("voltage_v", None): 3.3,
                      ("tx_power_dbm", 1): 1.0, ("rx_power_dbm", 1): -5.0,
                      ("tx_bias_ma", 1): 55.0}
    assert warning_margin(-5.0, RX) == pytest.approx(0.9)
    assert warning_margin(4.5, RX) == pytest.approx(-0.5)  # outside: negative
    assert not is_dark(module)
    assert is_dark(_lane_port(-40.0))


def test_flags_split_into_judged_and_conditions() -> None:
    module = Transceiver(flags={"rx_los": True, "tx_lol_lane2": True, "tx_fault": True,
                                "temperature_c_high_warn": True, "rx_power_dbm_low_alarm_lane1":
                                False})
    judged, conditions = raised_flags(module)
    assert judged == ["temperature_c_high_warn", "tx_fault"]
    assert conditions == ["rx_los", "tx_lol_lane2"]


def test_odd_ones_out() -> None:
    assert odd_ones({"a": "1", "b": "1", "c": "2"}) == {"c": "2"}
    assert odd_ones({"a": "1", "b": "1"}) == {}
    assert odd_ones({"a": "1", "b": "2"}) == {"a": "1", "b": "2"}  # a tie names both


def test_firmware_and_media_type(tmp_path: Path) -> None:
    assert firmware_matches("3.2.1", ["3.2.1"], None)
    assert not firmware_matches("3.2", ["3.2.1"], None)
    assert firmware_matches("3.2", ["3.2.1"], 2)
    assert not firmware_matches("0.9", ["3.2.1"], 2)
    approved = load_approved()
    assert {"LTP-400G-DR4", "LTP-400G-FR4", "LTP-800G-DR8"} <= set(approved)
    assert all(o.firmware == ("3.2.1",) for o in approved.values())
    by_pn = Transceiver(part_number="LTP-400G-FR4")
    assert media_type_of(by_pn, approved) == "400GBASE-FR4"
    assert media_type_of(Transceiver(part_number="X"), approved) is None
    path = tmp_path / "approved.yaml"
    path.write_text("approved:\n  - {part_number: P1, vendor: V, media_type: M, firmware: [1]}\n")
    assert load_approved(path)["P1"].firmware == ("1",)
