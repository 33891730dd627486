"""Pure helpers of the transceiver suite: lane merging, thresholds, flags, fleet odd ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from transceiver_lib import (
    dom_values,
    firmware_matches,
    is_dark,
    judge_firmware,
    lane_losses,
    link_loss_limit,
    load_approved,
    load_approved_firmware,
    media_type_of,
    merge_lane_interfaces,
    odd_ones,
    raised_flags,
    warning_margin,
)

from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.measure import Verdict

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


# --- optical link budget -----------------------------------------------------------------


def _limits() -> dict:
    from labtest.measure import load_limits

    return dict(load_limits(Path(__file__).resolve().parents[2] / "suites" / "limits"
                            / "acceptance-400g.yaml").limits)


def _module(tx: list[float | None], rx: list[float | None]) -> Transceiver:
    return Transceiver(lanes=[LaneDom(lane=i + 1, tx_power_dbm=t, rx_power_dbm=r)
                              for i, (t, r) in enumerate(zip(tx, rx, strict=True))])


def test_link_loss_budget_from_length_connectors_and_channel_maximum() -> None:
    limits = _limits()
    dr4 = link_loss_limit(limits, "400GBASE-DR4", 30.0, 2)
    # 0.03 km x 0.5 dB/km + 2 x 0.75 dB + 1.0 dB monitor allowance
    assert dr4.high == pytest.approx(2.515)
    assert "TIA-568" in dr4.source and "802.3" in dr4.source
    # a long link is capped at the PMD's channel maximum (3 dB DR4, 4 dB FR4), + allowance
    assert link_loss_limit(limits, "400GBASE-DR4", 2000.0, 2).high == pytest.approx(3.5)
    assert link_loss_limit(limits, "400GBASE-DR4", 4000.0, 2).high == pytest.approx(4.0)
    assert link_loss_limit(limits, "400GBASE-FR4", 2000.0, 4).high == pytest.approx(5.0)
    # unknown length: the whole channel budget of the PMD
    assert link_loss_limit(limits, "400GBASE-FR4", None, 2).high == pytest.approx(5.0)
    assert link_loss_limit(limits, None, None, 2).high == pytest.approx(4.0)  # plain key: DR4
    with pytest.raises(KeyError, match="connector_loss_db"):
        link_loss_limit({k: v for k, v in limits.items() if "connector" not in k}, None, 3, 2)


def test_dirty_connector_fails_the_budget_while_each_rx_is_inside_its_band() -> None:
    """Issue 14 case 1: 2.5 dB at a connector of a 30 m DR4 link; every Rx stays inside the
    -5.9..4 dBm absolute band, only the per-lane loss shows it, at the receiving lanes."""
    limits = _limits()
    budget = link_loss_limit(limits, "400GBASE-DR4", 30.0, 2)
    far = _module([0.1, 0.2, 0.0, 0.1], [-0.5] * 4)
    healthy = _module([0.0] * 4, [-0.5, -0.4, -0.6, -0.5])  # ~0.6 dB: two connectors, 30 m
    dirty = _module([0.0] * 4, [-3.0, -0.4, -3.1, -0.5])  # lanes 1 and 3 behind the speck
    rx_band = limits["transceiver.rx_power_dbm"]
    assert all(rx_band.judge(lane.rx_power_dbm) is not Verdict.FAIL for lane in dirty.lanes)
    ok, missing = lane_losses(far, healthy)
    assert not missing and all(budget.judge(x.loss_db) is Verdict.PASS for x in ok)
    bad, _ = lane_losses(far, dirty)
    assert [x.lane for x in bad if budget.judge(x.loss_db) is Verdict.FAIL] == [1, 3]
    assert bad[0].loss_db == pytest.approx(3.1)


def test_lanes_without_both_powers_are_reported_not_invented() -> None:
    far = _module([1.0, None], [0.0, 0.0])
    near = _module([0.0, 0.0], [0.4, 0.3])
    found, missing = lane_losses(far, near)
    assert [(x.lane, x.loss_db) for x in found] == [(1, pytest.approx(0.6))]
    assert missing == [2]


# --- device firmware against a declared expectation --------------------------------------------


def test_approved_firmware_judges_a_group_of_two() -> None:
    """Issue 23 case 1: two Arista switches, one downgraded: only that one fails."""
    approved = load_approved_firmware()
    peers = {"spine2": "4.2.1", "leaf3": "4.1.0"}
    good = judge_firmware("spine2", "switch/Arista", "DCS-7060DX5-64S", peers, approved)
    bad = judge_firmware("leaf3", "switch/Arista", "DCS-7060DX5-64S", peers, approved)
    assert good.ok is True and bad.ok is False
    assert bad.expected == "4.2.1" and "approved" not in bad.basis  # the row's own source
    assert "emulated lab qualification" in bad.basis


def test_without_expectation_two_devices_prove_nothing_and_a_majority_decides() -> None:
    pair = {"a": "1.0", "b": "2.0"}
    for name in pair:
        v = judge_firmware(name, "switch/X", None, pair, [])
        assert v.ok is None and "no majority" in v.basis
    trio = {"a": "1.0", "b": "1.0", "c": "2.0"}
    assert judge_firmware("c", "switch/X", None, trio, []).ok is False
    assert judge_firmware("a", "switch/X", None, trio, []).ok is True
    assert judge_firmware("a", "switch/X", None, {"a": "1", "b": "1"}, []).ok is True
    assert judge_firmware("a", "switch/X", None, {"a": "1"}, []).ok is None  # alone: no peer


def test_declared_and_platform_rows_win(tmp_path: Path) -> None:
    path = tmp_path / "fw.yaml"
    path.write_text(
        "approved:\n"
        "  - {group: switch/X, versions: ['1'], source: any platform}\n"
        "  - {group: switch/X, platform: M2, versions: ['2'], source: M2 only}\n")
    rows = load_approved_firmware(path)
    peers = {"a": "2", "b": "1"}
    assert judge_firmware("a", "switch/X", "M2", peers, rows).ok is True
    assert judge_firmware("a", "switch/X", "M1", peers, rows).ok is False
    declared = judge_firmware("a", "switch/X", "M1", peers, rows, (("2",), "testbed says 2"))
    assert declared.ok is True and declared.basis == "testbed says 2"
