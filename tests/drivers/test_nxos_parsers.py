"""Cisco NX-OS text parsers against real published outputs."""

from __future__ import annotations

import pytest
from switch_samples import parse, sample

from labtest.drivers.common.subnets import port_of
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
        "400GBASE-DR4",  # the advertised media interface, not "type is QSFP-DD-400G-DR4"
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
        "show ip bgp summary vrf all",
        "show bfd neighbors details",
        "show ip interface vrf all",
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
        (
            "show ip bgp summary vrf all",
            "show_bfd_neighbors_details__genie_five_sessions_up",
            "show bfd neighbors details",
        ),
        (
            "show bfd neighbors details",
            "show_ip_interface_vrf_all__ntc_three_vrfs",
            "show ip interface vrf all",
        ),
        (
            "show ip interface vrf all",
            "show_ip_bgp_summary_vrf_all__ntc_four_vrfs",
            "show ip bgp summary vrf all",
        ),
        (
            "show interface status",
            "show_bgp_vrf_all_all_summary__genie_vrf_default_vpn1",
            "show ip bgp summary vrf all",
        ),
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


# --- BGP, BFD and interface addresses (issue 35) -------------------------------------------

DAY, WEEK = 86400.0, 7 * 86400.0


def test_bgp_summary_vrf_all_ntc():
    """``show ip bgp summary vrf all``: peers of each VRF keyed ``ADDRESS vrf NAME``; a 4-byte
    AS number pushes the rest of its row onto the next line."""
    b = nxos("show ip bgp summary vrf all", "show_ip_bgp_summary_vrf_all__ntc_four_vrfs")
    assert len(b) == 12 and all(s.established and s.local_port is None for s in b.values())
    red = b["192.168.1.2 vrf RED"]
    assert (red.peer_address, red.state, red.prefixes_received, red.remote_as) == (
        "192.168.1.2",
        "Established",
        7,
        65002,
    )
    assert red.uptime_s == 10 * WEEK + 4 * DAY  # "10w4d"
    wrapped = b["10.101.1.1 vrf PURPLE"]
    assert (wrapped.remote_as, wrapped.prefixes_received, wrapped.uptime_s) == (
        4233316914,
        100,
        5 * WEEK + DAY,
    )
    assert b["10.101.1.4 vrf PURPLE"].prefixes_received == 0
    assert b["192.168.111.2 vrf PURPLE"].uptime_s == 3 * DAY + 3 * 3600  # "3d03h"
    assert "192.168.1.2" not in b  # VRF RED's peer is not the default VRF's


def test_bgp_summary_keeps_ipv4_unicast_only():
    """``show bgp vrf all all summary`` (genie): the IPv4 Unicast tables only; the same peer's
    IPv4 Multicast (2 prefixes) and VPNv4 rows do not overwrite it."""
    b = nxos("show bgp vrf all all summary", "show_bgp_vrf_all_all_summary__genie_vrf_default_vpn1")
    assert set(b) == {"10.106.101.1", "10.106.102.3", "10.106.102.4", "10.106.103.1 vrf vpn1"}
    up = b["10.106.101.1"]
    assert (up.state, up.prefixes_received, up.remote_as, up.uptime_s) == (
        "Established",
        3,
        333,
        20 * 60 + 33.0,
    )
    assert b["10.106.102.3"].remote_as == 888
    idle = b["10.106.103.1 vrf vpn1"]  # a session down, in another VRF
    assert (idle.state, idle.established, idle.uptime_s, idle.prefixes_received) == (
        "Idle",
        False,
        None,
        None,
    )
    e = nxos(
        "show bgp vrf all all summary", "show_bgp_vrf_all_all_summary__genie_prompt_ipv6_neighbor"
    )
    assert set(e) == {"10.186.0.2", "2001:db8:8b05::112"}  # the prompt lines are no peers
    assert (e["10.186.0.2"].uptime_s, e["2001:db8:8b05::112"].uptime_s) == (502.0, 497.0)


def test_bgp_summary_sessions_down_and_wrapped_neighbours():
    b = nxos("show bgp vrf all all summary", "show_bgp_vrf_all_all_summary__genie_shut_admin")
    assert set(b) == {"10.16.2.5", "2001:db8:8191:506d:5::5", "10.16.2.10 vrf VRF1"}
    shut = b["10.16.2.5"]
    assert (shut.state, shut.uptime_s, shut.prefixes_received, shut.remote_as) == (
        "Shut (Admin)",
        None,
        None,
        200,
    )  # "5w6d" is how long it has been down
    assert b["2001:db8:8191:506d:5::5"].state == "Shut (Admin)"  # continued after tabs
    assert (b["10.16.2.10 vrf VRF1"].state, b["10.16.2.10 vrf VRF1"].remote_as) == ("Idle", 0)
    w = nxos(
        "show bgp vrf all all summary", "show_bgp_vrf_all_all_summary__genie_wrapped_4byte_asn"
    )
    assert len(w) == 9  # the IPv6 Unicast table's Active/Idle peers are not IPv4 sessions
    assert (w["10.167.70.123 vrf hgtref"].remote_as, w["10.167.70.123 vrf hgtref"].uptime_s) == (
        4230103023,
        2 * WEEK + DAY,
    )
    assert w["10.167.68.50 vrf hgtref"].uptime_s == 6 * DAY + 13 * 3600  # "6d13h"
    assert w["10.167.68.52 vrf hgtref"].prefixes_received == 4157


def test_bgp_summary_asdot_years_and_padding():
    a = nxos("show bgp vrf all all summary", "show_bgp_vrf_all_all_summary__genie_asdot")
    s = a["2.2.2.2 vrf 100"]
    assert (s.remote_as, s.prefixes_received, s.uptime_s) == (
        65536 + 57920,
        12,
        4 * 3600 + 52 * 60 + 49.0,
    )  # asdot "1.57920", "04:52:49"
    t = nxos("show ip bgp all summary vrf all", "show_ip_bgp_all_summary_vrf_all__ntc_ten_vrfs")
    assert len(t) == 7 and "172.23.129.240" not in t  # L2VPN EVPN peers are left out
    assert t["172.16.102.2"].uptime_s == 2 * 365 * DAY  # "2y0w"
    assert t["172.16.14.2"].uptime_s == DAY + 8 * 3600  # "1d08h"
    assert (t["10.25.113.1 vrf BLU"].prefixes_received, t["10.23.1.74 vrf TRI"].remote_as) == (
        0,
        65171,
    )


def test_bgp_summary_without_section_line_never_and_no_cap():
    """``show ip bgp summary`` of a release that prints no section line: VRF default's IPv4
    Unicast table (rows from ntc-templates ``tests/cisco_nxos/show_ip_bgp_summary/
    cisco_nxos_show_ip_bgp_summary2.raw``); ``never`` is no uptime. "0 (No Cap)" (genie's
    golden_output_3 row, placed under an IPv4 Unicast title): Established, 0 prefixes."""
    text = (
        "Neighbor        V           AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd\n"
        "10.0.0.81    4         132       0       0        1    0    0 never    Idle (Admin)\n"
        "10.0.0.66   4        6230  363273  392165    39619    0    0 6w1d            9\n"
    )
    b = lookup("nxos", "show ip bgp summary")(text)
    assert (b["10.0.0.81"].state, b["10.0.0.81"].uptime_s, b["10.0.0.81"].remote_as) == (
        "Idle (Admin)",
        None,
        132,
    )
    assert (b["10.0.0.66"].uptime_s, b["10.0.0.66"].prefixes_received) == (6 * WEEK + DAY, 9)
    no_cap = (
        "BGP summary information for VRF default, address family IPv4 Unicast\n"
        "Neighbor        V    AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd\n"
        "10.106.101.1    4   333      29      31        0    0    0 00:20:33 0 (No Cap)\n"
    )
    s = lookup("nxos", "show ip bgp summary vrf all")(no_cap)["10.106.101.1"]
    assert (s.state, s.prefixes_received) == ("Established", 0)
    assert p.bgp_age_s("never") is None


def _lines(name: str) -> list[str]:
    return sample("nxos", name).splitlines()


def test_bgp_summary_refuses_cut_duplicated_and_damaged_rows():
    bgp = lookup("nxos", "show ip bgp summary vrf all")
    lines = _lines("show_ip_bgp_summary_vrf_all__ntc_four_vrfs")
    wrap = next(i for i, ln in enumerate(lines) if ln.startswith("10.101.1.1 "))
    cut = "\n".join(lines[: wrap + 1] + lines[wrap + 2 :]) + "\n"  # its second line lost
    with pytest.raises(ParseError, match="stops after 3 cells") as info:
        bgp(cut)
    assert f"line {wrap + 1}" in str(info.value)
    again = "\n".join([*lines[: wrap + 2], lines[wrap + 1], *lines[wrap + 2 :]]) + "\n"
    with pytest.raises(ParseError, match="without its neighbour"):
        bgp(again)
    last = len(lines) - 1
    twice = "\n".join([*lines, lines[last]]) + "\n"
    with pytest.raises(ParseError, match=r"192\.168\.111\.6 vrf PURPLE listed twice"):
        bgp(twice)
    no_state = "\n".join([*lines[:last], lines[last].rsplit(" ", 1)[0], ""]) + "\n"
    with pytest.raises(ParseError, match="stops after 9 cells"):
        bgp(no_state)  # a row with fewer cells than its header
    with pytest.raises(ParseError, match="cut mid-line"):
        bgp("\n".join(lines))  # the last row "... 2w2d 1" without its line end: 1 or 12?
    for bad, good, why in (
        ("2w2d 1", "2x2d 1", "Up/Down '2x2d'"),
        ("4 11111", "4 1x111", "AS '1x111'"),
        ("2w2d 1", "2w2d Establishd", "State/PfxRcd 'Establishd'"),
    ):
        damaged = lines[last].replace(bad, good)
        with pytest.raises(ParseError, match=why):
            bgp("\n".join([*lines[:last], damaged]) + "\n")


def test_bgp_summary_refuses_other_outputs():
    with pytest.raises(ParseError, match="'show bgp sessions'"):
        lookup("nxos", "show ip bgp summary vrf all")(  # genie ShowBgpSessions golden_output_2
            "Neighbor        ASN    Flaps LastUpDn|LastRead|LastWrit St Port(L/R)  Notif(S/R)\n"
            "10.51.1.101        300 2     00:30:22|never   |never    I   0/0          2/0\n"
        )
    with pytest.raises(ParseError, match="no 'BGP summary information"):
        lookup("nxos", "show ip bgp summary vrf all")("BGP router identifier 10.0.0.1\n")


def test_bfd_neighbors_details_up():
    b = nxos("show bfd neighbors details", "show_bfd_neighbors_details__genie_five_sessions_up")
    assert list(b) == ["21.1.1.2", "22.1.1.2", "23.1.1.2", "26.1.1.2", "27.1.1.2"]
    s = b["21.1.1.2"]
    assert (s.peer_address, s.local_port, s.status, s.up) == ("21.1.1.2", "Eth1/17/1", "up", True)
    assert (s.detect_multiplier, s.receive_interval_ms, s.transmit_interval_ms) == (3, 50, 50)
    assert (s.remote_detect_multiplier, s.remote_transmit_interval_ms) == (3, 50)
    assert s.reported_detection_time_ms is None and s.detection_time_ms == 150.0  # 3 x 50 ms
    assert [b[k].local_port for k in list(b)[1:]] == ["Eth1/17/2.5", "Po5", "Po6.5", "Vlan5"]


def test_bfd_neighbors_details_echo_and_sessions_down():
    echo = nxos("show bfd neighbors details", "show_bfd_neighbors_details__genie_echo_function")
    s = echo["21.1.1.2"]  # MinRxInt 2000000 us while the echo function runs
    assert (s.receive_interval_ms, s.transmit_interval_ms, s.remote_transmit_interval_ms) == (
        2000,
        50,
        50,
    )
    assert s.detection_time_ms == 6000.0  # 3 x max(2000, 50)
    assert echo["22.1.1.2"].receive_interval_ms == 50
    down = nxos("show bfd neighbors details", "show_bfd_neighbors_details__genie_admin_down")
    assert set(down) == {"22.1.1.2", "21.1.1.2", "23.1.1.2", "27.1.1.2"}
    d = down["21.1.1.2"]
    assert (d.status, d.up, d.local_port, d.detect_multiplier) == ("down", False, "Eth7/1", 5)
    assert (d.receive_interval_ms, d.remote_detect_multiplier, d.remote_transmit_interval_ms) == (
        2000,
        5,
        2000,
    )
    assert d.detection_time_ms == 10000.0


def test_bfd_other_vrf_and_second_session_to_one_address():
    text = sample("nxos", "show_bfd_neighbors_details__genie_five_sessions_up")
    blue = text.replace("Eth1/17/1         default ", "Eth1/17/1         blue    ", 1)
    b = lookup("nxos", "show bfd neighbors details")(blue)
    assert b["21.1.1.2 vrf blue"].local_port == "Eth1/17/1" and "21.1.1.2" not in b
    both = text.replace("        22.1.1.2 ", "        21.1.1.2 ", 1)
    two = lookup("nxos", "show bfd neighbors details")(both)
    assert (two["21.1.1.2"].local_port, two["21.1.1.2%Eth1/17/2.5"].local_port) == (
        "Eth1/17/1",
        "Eth1/17/2.5",
    )


def test_bfd_refuses_damaged_blocks():
    bfd = lookup("nxos", "show bfd neighbors details")
    lines = _lines("show_bfd_neighbors_details__genie_admin_down")
    row = next(i for i, ln in enumerate(lines) if "Po5" in ln)
    # genie's golden_output5 as published: a row spliced into a later line of its block
    head = lines[row].split("default")[0] + "default           Hello (hits): 2000 ms (2524015)"
    spliced = [*lines[:row], head, *lines[row + 1 :]]
    with pytest.raises(ParseError, match="has 13 cells, its header 9") as info:
        bfd("\n".join(spliced))
    assert f"line {row + 1}" in str(info.value)
    # golden_output3/4 as published: a block whose timer lines were cut out
    timers = next(i for i, ln in enumerate(lines) if i > row and ln.startswith("Local Diag"))
    lost = [*lines[:timers], *lines[timers + 3 :]]
    with pytest.raises(ParseError, match="no 'MinTxInt"):
        bfd("\n".join(lost))
    cut = lines[timers + 1].rsplit(" ", 1)[0]  # "... Multiplier:" without its value
    with pytest.raises(ParseError, match="MinTxInt: line"):
        bfd("\n".join([*lines[: timers + 1], cut, *lines[timers + 2 :]]))
    with pytest.raises(ParseError, match="has 8 cells, its header 9"):
        bfd("\n".join([*lines[:row], lines[row].replace("SH", ""), *lines[row + 1 :]]))
    with pytest.raises(ParseError, match="second session row"):
        bfd("\n".join([*lines[: row + 1], lines[row], *lines[row + 1 :]]))
    with pytest.raises(ParseError, match="listed twice"):
        bfd("\n".join(lines) + "\n" + "\n".join(lines))
    with pytest.raises(ParseError, match="Session state is Up"):
        bfd("\n".join(lines).replace("Session state is Down", "Session state is Up", 1))
    with pytest.raises(ParseError, match="State 'Dwn'"):
        bfd("\n".join(lines).replace("Down        Eth7/6.5", "Dwn         Eth7/6.5", 1))


def test_bfd_neighbors_without_details_is_refused():
    """``show bfd neighbors`` prints the same header and rows, without the timers."""
    lines = _lines("show_bfd_neighbors_details__genie_five_sessions_up")
    table = "\n".join(lines[:4] + [ln for ln in lines if ln.lstrip("*")[:3] in ("22.", "23.")])
    with pytest.raises(ParseError, match="without 'details'"):
        lookup("nxos", "show bfd neighbors details")(table + "\n")


def test_ip_interface_vrf_all():
    a = nxos("show ip interface vrf all", "show_ip_interface_vrf_all__ntc_three_vrfs")
    assert set(a) == {"default", "management", "TEST"}
    assert a["default"]["Vlan100"] == ["172.16.100.69/25", "172.16.69.209/26"]  # + secondary
    assert a["default"]["port-channel10"] == ["172.20.200.14/30"]
    assert a["TEST"] == {"Ethernet2/1": ["172.20.1.94/24"]}
    assert a["management"]["mgmt0"] == ["10.46.16.122/24"]
    assert port_of("172.20.200.13", a["default"]) == "port-channel10"
    assert port_of("172.20.200.14", a["default"]) is None  # the switch's own address
    assert port_of("172.20.1.1", a["default"]) is None  # VRF TEST's subnet
    assert port_of("10.9.9.9", a["default"]) is None
    u = nxos("show ip interface vrf all", "show_ip_interface_vrf_all__genie_unnumbered_lists")
    # the address after "Unnumbered interfaces of loopback0 ... Ethernet2/11:" is loopback0's
    assert u == {
        "default": {
            "loopback0": ["10.64.4.4/24"],
            "Ethernet2/1": ["10.3.4.4/24"],
            "Ethernet2/10.12": ["10.66.12.12/24"],
        }
    }
    t = nxos("show ip interface vrf all", "show_ip_interface_vrf_all__genie_loopback_tunnels")
    assert t["default"] == {"loopback0": ["192.168.4.1/32"], "Ethernet1/5": ["192.168.1.1/24"]}
    assert (t["VRF1"], t["blue"], t["management"]) == ({}, {}, {"mgmt0": ["10.1.17.218/24"]})
    assert port_of("192.168.4.9", t["default"]) is None  # a /32 holds no peer


def test_ip_interface_refusals():
    ip = lookup("nxos", "show ip interface vrf all")
    with pytest.raises(ParseError, match="'show ip interface brief'"):
        ip(  # genie ShowIpInterfaceBriefVrfAll golden1: no prefix lengths
            'IP Interface Status for VRF "default"(1)\n'
            "Interface            IP Address      Interface Status\n"
            "Vlan100              10.51.1.1        protocol-up/link-up/admin-up\n"
        )
    text = sample("nxos", "show_ip_interface_vrf_all__ntc_three_vrfs")
    with pytest.raises(ParseError, match="not in its subnet"):
        ip(text.replace("IP subnet: 172.20.200.12/30", "IP subnet: 172.20.200.16/30", 1))
    with pytest.raises(ParseError, match="address line"):
        ip(text.replace("IP subnet: 172.20.200.12/30", "IP subnet: 172.20.200.12", 1))
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Ethernet1/1,"))
    with pytest.raises(ParseError, match="listed twice"):
        ip("\n".join([*lines[: at + 1], lines[at], *lines[at + 1 :]]) + "\n")
    with pytest.raises(ParseError, match="listed twice"):
        ip("\n".join([*lines[: at + 2], lines[at + 1], *lines[at + 2 :]]) + "\n")
    with pytest.raises(ParseError, match="before any 'IP Interface Status for VRF'"):
        ip("\n".join(lines[1:]) + "\n")
