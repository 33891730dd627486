"""Cisco NX-OS text parsers against real published outputs."""

from __future__ import annotations

import pytest
from switch_samples import parse, sample

from labtest.drivers.nxos import parsers as p
from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable


def nxos(command: str, name: str):
    return parse("nxos", command, name)


def test_version():
    a = nxos("show version", "show_version__ntc_n9k_c9396px_6_1")
    assert (a.vendor, a.model, a.os_version) == ("Cisco", "Nexus9000 C9396PX", "6.1(2)I3(1)")
    assert (a.serial, a.hostname) == ("SAL1819S6LU", "N9K1")
    assert a.uptime_s == 123 * 86400 + 5 * 3600 + 15 * 60 + 19
    b = nxos("show version", "show_version__ntc_n93180yc_fx3_10_4")
    assert (b.model, b.os_version, b.serial, b.hostname) == (
        "Nexus9000 C93180YC-FX3",
        "10.4(5)",
        "FLM27400B3D",
        "N9K-LAB-15",
    )


def test_interface_status_fixed_width_columns():
    st = nxos("show interface status", "show_interface_status__ntc_n9k")
    e1 = st["Eth1/1"]
    assert (e1.description, e1.admin_up, e1.oper_up, e1.type) == (
        "managed by puppet",
        False,
        False,
        "SFP-H10GB-CU2M",
    )
    assert st["mgmt0"].speed_gbps == 0.1 and st["mgmt0"].oper_up is True
    assert (st["Eth1/3"].state, st["Eth1/3"].admin_up, st["Eth1/3"].type) == (
        "xcvrAbsen",
        True,
        None,
    )
    assert st["Vlan146"].description == "my vlan 146" and st["Vlan146"].admin_up is None
    f = nxos("show interface status", "show_interface_status__ntc_fex_10g")
    assert f["Eth1/1"].speed_gbps == 10.0 and f["Eth101/1/1"].speed_gbps == 1.0
    assert f["Eth105/1/1"].type is None and f["Eth1/7"].type == "Fabric Exte"


def test_interface_counters_merge_narrow_tables():
    c = nxos("show interface counters", "show_interface_counters__genie_eth1_33")
    assert list(c) == ["Eth1/33"]  # the echoed command and the "P1#" prompt are not ports
    e = c["Eth1/33"]
    assert (e.rx_octets, e.rx_unicast_packets, e.rx_multicast_packets) == (1162614, 14178, 64)
    assert (e.tx_octets, e.tx_packets, e.rx_packets) == (12199396, 23366 + 65 + 1, 14178 + 64)
    v = nxos("show interface counters", "show_interface_counters__genie_vlan2_dashes")["Vlan2"]
    assert (v.rx_octets, v.rx_multicast_packets, v.rx_packets) == (21719007220, None, None)
    s = nxos("show interface counters", "show_interface_counters__genie_subif_inpkts")
    assert s["Eth1/1.1"].rx_packets == 1778 and s["Eth1/1.1"].tx_packets == 1778


def test_interface_error_counters():
    e = nxos("show interface counters errors", "show_interface_counters_errors__genie_24port")
    assert (e["Eth1/13"].rx_alignment_errors, e["Eth1/13"].tx_discards) == (500, 14500)
    assert e["Eth1/23"].tx_discards == 20340 and e["Eth1/24"].rx_discards == 0
    assert (e["mgmt0"].tx_errors, e["mgmt0"].rx_discards, e["mgmt0"].rx_giants) == (None, None, 0)
    one = nxos("show interface counters errors", "show_interface_counters_errors__genie_single")
    assert (one["Eth1/1"].tx_errors, one["Eth1/1"].rx_errors) == (230, 0)


def test_transceiver_details_sfp_with_low_alarms():
    t = nxos(
        "show interface transceiver details", "show_interface_transceiver_details__ntc_sfp_cfp"
    )
    x = t["Ethernet3/1"]
    assert (x.vendor, x.part_number, x.serial, x.media_type) == (
        "CISCO-FINISAR",
        "FTLX8571D3BCL-C2",
        "FNS18510TXL",
        "10Gbase-SR",
    )
    assert (x.temperature_c, x.voltage_v) == (35.66, 3.29)
    lane = x.lanes[0]
    assert (lane.tx_bias_ma, lane.tx_power_dbm, lane.rx_power_dbm) == (None, -14.05, -30.45)
    assert x.thresholds["rx_power_dbm"].low_alarm == -13.9
    assert x.thresholds["tx_power_dbm"].high_alarm == 1.69
    assert x.flags == {"lane1_tx_power_dbm_low_alarm": True, "lane1_rx_power_dbm_low_alarm": True}
    assert t["Ethernet3/3"].lanes[0].tx_power_dbm is None  # "N/A"
    cfp = t["Ethernet4/1"]
    assert cfp.temperature_c == 40.44 and [ln.lane for ln in cfp.lanes] == [2, 3]
    assert cfp.lanes[1].rx_power_dbm == -1.57 and cfp.thresholds["rx_power_dbm"].low_warn == -10.59


def test_transceiver_details_qsfpdd_lanes_without_readings():
    t = nxos(
        "show interface transceiver details",
        "show_interface_transceiver_details__genie_qsfpdd_400g_dr4",
    )["Ethernet1/63"]
    assert (t.firmware, t.media_type, t.vendor) == (
        "204.154",
        "QSFP-DD-400G-DR4",
        "CISCO-INNOLIGHT",
    )
    assert [ln.lane for ln in t.lanes] == [1, 2, 3, 4]
    assert all(ln.rx_power_dbm is None for ln in t.lanes)
    assert t.thresholds["tx_bias_ma"].high_alarm == 120.0
    doc = to_jsonable(t)
    assert doc["lanes"][3] == {
        "lane": 4,
        "tx_bias_ma": None,
        "tx_power_dbm": None,
        "rx_power_dbm": None,
    }


def test_lldp_neighbors():
    n = nxos("show lldp neighbors", "show_lldp_neighbors__ntc_n9k")
    assert (
        n["mgmt0"].remote_system == "PERIMETER.cisco.com" and n["mgmt0"].remote_port == "Fa1/0/10"
    )
    assert n["Eth1/2"].remote_port == "Ethernet1/2"  # first of two neighbours on the port
    # no age in this table: the other neighbour is named, so the cabling suite re-reads
    assert n["Eth1/2"].older_neighbours == ("n9k1.cisconxapi.com:Ethernet1/3",)
    m = nxos("show lldp neighbors", "show_lldp_neighbors__ntc_multiline")
    assert len(m) == 15
    assert m["mgmt0"].remote_system == "dcx3.org.local" and m["mgmt0"].remote_port == "Gi1/0/37"
    assert (m["Eth1/5"].remote_system, m["Eth1/5"].capabilities) == ("fw1-clinical-partner", None)
    assert m["Eth3/1"].remote_system == "cr-ebc.org.local"  # misaligned row
    assert to_jsonable(m)["Eth4/1"] == {
        "remote_system": "cr-park.org.local",
        "remote_port": "Fo1/0/8",
        "remote_port_description": None,
        "remote_chassis_id": None,
        "capabilities": "BR",
        "ttl_s": 120,
        "remote_mgmt_address": None,
        "older_neighbours": [],
    }


def test_priority_flow_control_totals():
    p = nxos(
        "show interface priority-flow-control", "show_interface_priority_flow_control__blog_n5k"
    )
    e = p["Ethernet1/47"]
    assert (e.rx_total, e.tx_total, e.mode, e.oper) == (7316, 762946, "Auto", "Off")
    assert e.rx == [None] * 8 and e.enabled_priorities == []
    leaf = nxos(
        "show interface priority-flow-control", "show_interface_priority_flow_control__gpu_leaf"
    )
    assert set(leaf) == {"Ethernet1/27", "Ethernet1/28"} and leaf["Ethernet1/28"].tx_total == 0
    on = lookup("nxos", "show interface priority-flow-control")(
        "Port               Mode Oper(VL bmap)  RxPPP      TxPPP\n"
        "Ethernet1/2        Auto On  (8)       4088353    1890\n"
    )
    assert on["Ethernet1/2"].enabled_priorities == [3] and on["Ethernet1/2"].rx_total == 4088353


@pytest.mark.parametrize(
    "command",
    [
        "show version",
        "show interface status",
        "show interface counters",
        "show interface transceiver details",
        "show lldp neighbors",
        "show interface priority-flow-control",
    ],
)
def test_garbled_output_raises(command):
    garbage = "% Invalid command at '^' marker.\n"
    with pytest.raises(ParseError) as info:
        lookup("nxos", command)(garbage, device="n9k")
    assert info.value.raw == garbage


def test_corrupted_values_raise():
    text = sample("nxos", "show_interface_counters__genie_eth1_33").replace("1162614", "11626x4")
    with pytest.raises(ParseError, match="11626x4"):
        lookup("nxos", "show interface counters")(text)
    dom = sample("nxos", "show_interface_transceiver_details__ntc_sfp_cfp").replace(
        "  Voltage        3.29 V         3.63 V ", "  Voltage        3.29 V ", 1
    )
    with pytest.raises(ParseError, match="values"):
        lookup("nxos", "show interface transceiver details")(dom)


# --- validation before extraction (issue 15) ---------------------------------------------


@pytest.mark.parametrize(
    ("command", "other", "looks"),
    [
        ("show interface counters", "show_interface_status__ntc_n9k", "show interface status"),
        (
            "show interface status",
            "show_interface_counters__genie_eth1_33",
            "show interface counters",
        ),
        (
            "show interface priority-flow-control",
            "show_lldp_neighbors__ntc_n9k",
            "show lldp neighbors",
        ),
        (
            "show lldp neighbors",
            "show_interface_priority_flow_control__blog_n5k",
            "show interface priority-flow-control",
        ),
        ("show interface transceiver details", "show_version__ntc_n9k_c9396px_6_1", "show version"),
    ],
)
def test_another_commands_output_is_refused_by_name(command, other, looks):
    with pytest.raises(ParseError, match=f"looks like '{looks}' output"):
        lookup("nxos", command)(sample("nxos", other))


def test_error_counters_are_read_by_the_counters_command_too():
    text = sample("nxos", "show_interface_counters_errors__genie_single")
    assert lookup("nxos", "show interface counters")(text)


def test_counter_row_with_fewer_cells_is_refused_with_its_line():
    lines = sample("nxos", "show_interface_counters__genie_eth1_33").splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("Eth1/33"))
    cut = lines[row].split()
    lines[row] = "  ".join(cut[:-1])
    with pytest.raises(ParseError, match="cells") as info:
        lookup("nxos", "show interface counters")("\n".join(lines) + "\n")
    assert f"line {row + 1}" in str(info.value)


def test_duplicated_rows_and_blocks_are_refused():
    lines = sample("nxos", "show_interface_counters_errors__genie_24port").splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("Eth1/13"))
    twice = "\n".join([*lines[: row + 1], lines[row], *lines[row + 1 :]]) + "\n"
    with pytest.raises(ParseError, match="Eth1/13 listed twice"):
        lookup("nxos", "show interface counters errors")(twice)
    status = sample("nxos", "show_interface_status__ntc_n9k").splitlines()
    with pytest.raises(ParseError, match="listed twice"):
        lookup("nxos", "show interface status")("\n".join([*status[:5], *status[4:]]) + "\n")
    pfc = sample("nxos", "show_interface_priority_flow_control__gpu_leaf").splitlines()
    with pytest.raises(ParseError, match="listed twice"):
        lookup("nxos", "show interface priority-flow-control")("\n".join([*pfc, pfc[-1]]) + "\n")
    dom = sample("nxos", "show_interface_transceiver_details__ntc_sfp_cfp")
    with pytest.raises(ParseError, match="listed twice"):
        lookup("nxos", "show interface transceiver details")(dom + dom)


def test_status_row_cut_before_speed_is_refused():
    lines = sample("nxos", "show_interface_status__ntc_n9k").splitlines()
    lines[5] = lines[5][:40]
    with pytest.raises(ParseError, match="Duplex/Speed") as info:
        lookup("nxos", "show interface status")("\n".join(lines) + "\n")
    assert "line 6" in str(info.value)


# --- examples the fuzzing found (kept as regular tests) ------------------------------------


def test_cut_last_row_of_a_one_row_table_is_refused():
    lines = sample("nxos", "show_interface_priority_flow_control__blog_n5k").splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("Ethernet1/47"))
    text = "\n".join(lines[: row + 1]).rstrip()
    assert text.endswith("762946")
    with pytest.raises(ParseError, match="cut mid-line"):
        p.parse_priority_flow_control(text[:-3])  # the driver's path: 762946 -> 762
    version = sample("nxos", "show_version__ntc_n9k_c9396px_6_1")
    cut = version[: version.index("6.1(2)") + 5]
    with pytest.raises(ParseError, match="cut mid-line"):
        lookup("nxos", "show version")(cut)


def test_repeated_header_and_damaged_rule_are_not_ports():
    lines = sample("nxos", "show_interface_status__ntc_n9k").splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("Port"))
    again = "\n".join([*lines[: header + 2], lines[header], *lines[header + 2 :]]) + "\n"
    with pytest.raises(ParseError, match="no port name"):
        lookup("nxos", "show interface status")(again)


def test_damaged_bytes_are_refused_with_their_line():
    text = sample("nxos", "show_interface_transceiver_details__genie_qsfpdd_400g_dr4")
    at = text.index("Lane Number:2") + len("Lane Number:")
    damaged = (text[:at].encode() + b"\xb2" + text[at + 1 :].encode()).decode(errors="replace")
    with pytest.raises(ParseError, match="U\\+FFFD") as info:
        p.parse_transceiver_details(damaged)  # the driver's path; labtest parse refuses it too
    assert f"line {text.count(chr(10), 0, at) + 1}" in str(info.value)


def test_sub_interface_packets_are_not_summed_from_a_partial_capture():
    text = sample("nxos", "show_interface_counters__genie_subif_inpkts")
    partial = text[: text.index("Port                                       InPkts")]
    s = lookup("nxos", "show interface counters")(partial)["Eth1/1.1"]
    assert (s.rx_packets, s.tx_packets, s.rx_unicast_packets) == (None, None, 0)


def test_eos_status_text_is_not_nxos_status():
    eos_text = sample("eos", "show_interfaces_status__eantc_7050sx3")
    with pytest.raises(ParseError, match="Arista EOS"):
        lookup("nxos", "show interface status")(eos_text)


def test_transceiver_details_power_in_mw_becomes_dbm_and_a_foreign_unit_is_refused():
    """The unit printed after each value is read: mW is converted, a volt on a power row refused."""
    import math

    dom = sample("nxos", "show_interface_transceiver_details__ntc_sfp_cfp")
    mw = dom.replace("Rx Power     -30.45 dBm --", "Rx Power       0.50 mW  --", 1)
    lane = lookup("nxos", "show interface transceiver details")(mw)["Ethernet3/1"].lanes[0]
    assert lane.rx_power_dbm == pytest.approx(10 * math.log10(0.5))
    volts = dom.replace("Rx Power     -30.45 dBm --", "Rx Power     -30.45 V   --", 1)
    with pytest.raises(ParseError, match="rx_power_dbm"):
        lookup("nxos", "show interface transceiver details")(volts)
