"""ethtool -S and ethtool -m parsers against real outputs."""

from __future__ import annotations

import math

import pytest

from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.linux.parsers.ethtool import parse_ethtool_module, parse_ethtool_stats
from labtest.errors import ParseError
from labtest.parsing import lookup

# --- ethtool -S ----------------------------------------------------------------


def test_mlx5_stats_from_netdev_list(sample):
    s = parse_ethtool_stats(sample("ethtool_stats/mlx5_xdp_bpf_list_kernel515.txt"))
    assert len(s) == 101 and "NIC statistics" not in s
    assert s["tx_pause_ctrl_phy"] == 5745055
    assert s["rx_discards_phy"] == 58591428329
    assert s["rx_prio0_discards"] == 58591314012
    assert s["tx_global_pause_duration"] == 771103810
    assert s["rx0_xdp_tx_cqes"] == 87229139


def test_grepped_cx4lx_pause_and_per_priority_discards(sample):
    s = parse_ethtool_stats(sample("ethtool_stats/cx4lx_grep_discards_pause.txt"))
    assert len(s) == 31  # the two '# ethtool -S ... | grep' prompts are not counters
    assert s["tx_pause_ctrl_phy"] == 1266552 and s["rx_pause_ctrl_phy"] == 0
    assert s["rx_prio3_discards"] == 0 and s["rx_steer_missed_packets"] == 24627
    assert s["tx_global_pause_duration"] == 555665182


def test_early_mlx5_counter_names(sample):
    s = parse_ethtool_stats(sample("ethtool_stats/ethq_mlx5_core_old_names.txt"))
    assert (s["rx_packets"], s["pause_ctrl_tx"], s["p1519to2047octets"], s["rx1_packets"]) == (
        5487361,
        0,
        375454,
        51777,
    )


def test_stats_garbage_raises():
    text = "Cannot get stats strings information: Operation not supported\n"
    with pytest.raises(ParseError, match="no 'name: value' counters") as info:
        parse_ethtool_stats(text)
    assert info.value.raw == text


# --- ethtool -m ----------------------------------------------------------------


def test_sff8636_sr4_with_thresholds(sample):
    t = parse_ethtool_module(sample("ethtool_module/sff8636_mellanox_sr4_cumulus.txt"))
    assert isinstance(t, Transceiver)
    assert (t.identifier, t.vendor, t.part_number, t.serial) == (
        "QSFP28",
        "Mellanox",
        "MMA1B00-C100D",
        "MT1708FT01255",
    )
    assert t.media_type == "100G Base-SR4 or 25GBase-SR"
    assert (t.temperature_c, t.voltage_v) == (30.56, 3.2350)
    assert [(ln.lane, ln.tx_bias_ma, ln.tx_power_dbm, ln.rx_power_dbm) for ln in t.lanes] == [
        (1, 6.75, 1.44, -0.12),
        (2, 6.75, 1.20, -0.09),
        (3, 6.75, 1.26, 0.55),
        (4, 6.75, 1.27, 0.55),
    ]
    bias = t.thresholds["tx_bias_ma"]
    assert (bias.low_alarm, bias.low_warn, bias.high_warn, bias.high_alarm) == (
        5.492,
        6.0,
        8.0,
        8.5,
    )
    rx = t.thresholds["rx_power_dbm"]
    assert (rx.low_alarm, rx.low_warn, rx.high_warn, rx.high_alarm) == (-13.31, -10.30, 2.40, 5.40)
    assert t.thresholds["tx_power_dbm"].low_alarm == -11.40
    assert t.thresholds["temperature_c"].high_alarm == 80.0
    assert t.thresholds["voltage_v"].low_warn == 3.1350
    assert len(t.flags) == 56 and not any(t.flags.values())
    assert "tx_bias_ma_high_alarm_lane4" in t.flags and "temperature_c_low_warn" in t.flags
    assert all(rx.state(ln.rx_power_dbm) == "ok" for ln in t.lanes)


def test_sff8636_aoc_without_thresholds_and_dark_tx(sample):
    t = parse_ethtool_module(sample("ethtool_module/sff8636_mellanox_aoc_sonic_design.txt"))
    assert (t.part_number, t.serial, t.temperature_c) == ("MFA1A00-C003", "MT1706FT02064", 32.67)
    assert t.thresholds == {}  # all levels 0 / -inf: not implemented by this AOC
    assert all(ln.tx_power_dbm == -math.inf for ln in t.lanes)
    assert [ln.rx_power_dbm for ln in t.lanes] == [-1.41, -1.41, -0.51, 0.30]  # Rx OMA
    assert t.media_type is not None and "100G AOC" in t.media_type


def test_cmis_qsfp_dd_with_wrapped_lines_and_a_warning_flag(sample):
    t = parse_ethtool_module(sample("ethtool_module/cmis_arista_qdd400g_xdr4_netdev.txt"))
    assert t.identifier == "QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628)"
    assert (t.vendor, t.part_number, t.serial) == (
        "Arista Networks",
        "QDD-400G-XDR4",
        "XKT242211481",
    )
    assert (t.temperature_c, t.voltage_v) == (70.49, 3.2186)
    assert len(t.lanes) == 8
    assert (t.lanes[3].tx_bias_ma, t.lanes[3].tx_power_dbm, t.lanes[3].rx_power_dbm) == (
        110.1,
        1.58,
        2.60,
    )
    assert t.lanes[4].tx_power_dbm == -math.inf and t.lanes[4].tx_bias_ma == 0.0
    temp = t.thresholds["temperature_c"]
    assert (temp.low_alarm, temp.low_warn, temp.high_warn, temp.high_alarm) == (
        -5.0,
        0.0,
        70.0,
        75.0,
    )
    assert t.thresholds["tx_bias_ma"].high_alarm == 130.0
    assert t.flags["temperature_c_high_warn"] is True
    assert temp.state(t.temperature_c) == "high_warn"  # the module agrees with its flag
    assert t.flags["rx_los"] is False and t.flags["tx_fault"] is False
    assert t.flags["rx_power_dbm_low_alarm_lane8"] is False


def test_per_lane_loss_of_signal_list():
    text = (
        "\tIdentifier                                : 0x18 (QSFP-DD Double Density 8X Pluggable "
        "Transceiver (INF-8628))\n"
        "\tRx loss of signal                         : [ Yes, Yes, No, No ]\n"
        "\tModule State                              : 0x03 (ModuleReady)\n"
    )  # shape from the netdev thread on CMIS LOS/LOL reporting (Ido Schimmel's test)
    t = parse_ethtool_module(text)
    assert [t.flags[f"rx_los_lane{n}"] for n in range(1, 5)] == [True, True, False, False]


def test_hex_dump_only_raises_with_a_hint():
    text = (
        "Offset          Values\n------          ------\n"
        "0x0000:         11 06 06 00 00 00 00 00 00 00 00 00 00 00 00 00\n"
    )
    with pytest.raises(ParseError, match="hex dump") as info:
        parse_ethtool_module(text)
    assert info.value.raw == text


def test_module_lookup_as_typed():
    assert lookup("linux", "ethtool -m swp11").__wrapped__ is parse_ethtool_module
    assert lookup("linux", "ethtool -S ens1f0np0").__wrapped__ is parse_ethtool_stats
