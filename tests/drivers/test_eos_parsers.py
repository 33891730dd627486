"""Arista EOS parsers (JSON first, text fallback) against real published outputs."""

from __future__ import annotations

import json
import math

import pytest
from switch_samples import parse, sample

from labtest.drivers.common.subnets import port_of
from labtest.drivers.eos import parsers as p
from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable


def eos(command: str, name: str):
    return parse("eos", command, name)


def test_version_json_across_releases():
    a = eos("show version | json", "show_version_json__napalm_7010t_4_20")
    assert (a.vendor, a.model, a.os_version, a.serial) == (
        "Arista",
        "DCS-7010T-48-R",
        "4.20.7M",
        "SSJ12345678",
    )
    assert (a.uptime_s, a.hardware_rev, a.mac) == (5860361.78, "12.00", "28:99:3a:23:92:09")
    old = eos("show version | json", "show_version_json__napalm_veos_4_15")
    assert (old.model, old.serial, old.uptime_s, old.hardware_rev) == ("vEOS", None, None, None)
    new = eos("show version", "show_version_json__veoslab_4_33")  # JSON pasted to the bare command
    assert (new.model, new.os_version, new.uptime_s) == ("vEOS-lab", "4.33.2F", 11635.67)
    c = eos("show version | json", "show_version_json__napalm_ceoslab_4_30")
    assert c.os_version.startswith("4.30.0F") and c.serial == "DE5B7D98C24A207BE70876CC0AD5546F"


def test_version_text_fallback():
    f = eos("show version", "show_version__eantc_7280sr2a")
    assert (f.model, f.os_version, f.serial, f.hardware_rev) == (
        "DCS-7280SR2A-48YC6-F",
        "4.31.2F",
        "SSJ17280867",
        "21.01",
    )
    assert f.uptime_s == 86400 + 16 * 3600 + 45 * 60
    g = eos("show version", "show_version__eantc_7050sx3")
    assert g.uptime_s == 5 * 3600 + 4 * 60 and g.mac == "985d.82a2.04f9"


def test_interfaces_status_json():
    st = eos("show interfaces status | json", "show_interfaces_status_json__veoslab_4_33")
    assert (st["Management1"].admin_up, st["Management1"].oper_up) == (True, True)
    assert st["Management1"].vlan == "routed" and st["Management1"].speed_gbps == 1.0
    e1 = st["Ethernet1"]
    assert (e1.admin_up, e1.oper_up, e1.vlan, e1.state) == (True, False, "1", "notconnect")
    doc = eos("show interfaces status | json", "show_interfaces_status_json__arista_doc_7050sx")
    assert doc["Ethernet8"].type == "10GBASE-SR" and doc["Ethernet8"].speed_gbps == 10.0
    assert doc["Ethernet9"].type == "Not Present"


def test_interfaces_status_text_fallback_uses_long_names():
    st = eos("show interfaces status", "show_interfaces_status__eantc_7050sx3")
    assert len(st) == 15
    assert (st["Ethernet5"].admin_up, st["Ethernet5"].vlan) == (False, "in Po200")  # disabled
    assert (st["Ethernet6"].admin_up, st["Ethernet6"].oper_up) == (True, False)  # errdisabled
    assert st["Ethernet6"].speed_gbps == 25.0 and st["Ethernet1"].description == "A-Spine-200"
    other = eos("show interfaces status", "show_interfaces_status__eantc_7280sr2a")
    assert other["Ethernet6"].type == "10GBASE-LR" and other["Ethernet2"].description is None
    assert other["Ethernet5"].vlan == "in Po100" and other["Ethernet5"].oper_up is True


def test_interface_counters_from_show_interfaces_json():
    c = eos("show interfaces | json", "show_interfaces_json__veoslab_4_33")["Management1"]
    assert (c.rx_packets, c.rx_octets, c.rx_broadcast_packets) == (4134, 678348, 813)
    assert (c.tx_packets, c.tx_octets, c.tx_multicast_packets) == (7420, 7886286, 374)
    assert (c.rx_errors, c.rx_fcs_errors, c.rx_pause_frames, c.tx_discards) == (0, 0, 0, 0)
    assert c.link_status_changes == 15  # "linkStatusChanges": the flap counter the doctor reads
    old = eos("show interfaces | json", "show_interfaces_json__napalm_veos_4_15")
    assert old["Management1"].rx_packets == 15  # no inTotalPkts in 4.15: summed
    assert old["Ethernet2"].rx_multicast_packets == 1429 and old["Ethernet2"].tx_packets == 94
    assert to_jsonable(old)["Ethernet2"]["rx_discards"] == 0


def test_interface_error_counters_json():
    e = eos(
        "show interfaces counters errors | json",
        "show_interfaces_counters_errors_json__anta_fixture",
    )
    assert set(e) == {"Ethernet1", "Ethernet6"}
    assert (e["Ethernet6"].rx_errors, e["Ethernet6"].rx_giants, e["Ethernet6"].rx_packets) == (
        0,
        0,
        None,
    )


def test_transceiver_json_and_detail_thresholds():
    t = eos(
        "show interfaces transceiver | json",
        "show_interfaces_transceiver_json__netpanda_ethernet52",
    )
    x = t["Ethernet52"]
    assert (x.serial, x.media_type, x.temperature_c, x.voltage_v) == (
        "ACW1738001SP",
        "10GBASE-SR",
        52.1484375,
        3.3571,
    )
    assert x.lanes[0].rx_power_dbm == pytest.approx(-1.6071, abs=1e-4)
    assert x.lanes[0].tx_bias_ma == pytest.approx(6.302)
    d = eos(
        "show interfaces transceiver detail | json",
        "show_interfaces_transceiver_detail_json__dwdm_ethernet5_2",
    )["Ethernet5/2"]
    assert d.lanes[0].rx_power_dbm == -0.53 and d.media_type == "100G-DWDM-E"
    assert d.thresholds["tx_power_dbm"].low_alarm == -12.0
    assert d.thresholds["voltage_v"].high_warn == 3.5
    assert d.thresholds["rx_power_dbm"].state(d.lanes[0].rx_power_dbm) == "ok"


def test_lldp_detail_json():
    n = eos("show lldp neighbors detail | json", "show_lldp_neighbors_detail_json__napalm_normal")
    assert set(n) == {"Ethernet8", "Ethernet2"}  # Ethernet12 has no neighbour
    e8 = n["Ethernet8"]
    assert (e8.remote_system, e8.remote_port, e8.remote_port_description) == (
        "78m3",
        "000f.532e.ced1",
        "eth3",
    )
    assert (e8.ttl_s, e8.remote_mgmt_address, e8.remote_chassis_id) == (
        120,
        "192.168.8.21",
        "2c60.0cad.30de",
    )
    one = eos(
        "show lldp neighbors detail | json", "show_lldp_neighbors_detail_json__napalm_issue903"
    )
    assert one["Ethernet22"].capabilities == "stationOnly"
    assert to_jsonable(one)["Ethernet22"]["remote_system"] == "linux"


def test_lldp_text_fallback_and_list_json():
    n = eos("show lldp neighbors", "show_lldp_neighbors__pr5698_eos_side")
    assert n["Ethernet2"].remote_port == "Ethernet1/2" and n["Ethernet1"].ttl_s == 120
    # the summary form "show lldp neighbors | json" is a list; EOS quotes interface names
    doc = '{"lldpNeighbors": [{"port": "Ethernet1", "neighborDevice": "leaf1", '
    doc += '"neighborPort": "\\"Ethernet49/1\\"", "ttl": 120}]}\n'
    m = lookup("eos", "show lldp neighbors | json")(doc)
    assert m["Ethernet1"].remote_port == "Ethernet49/1"


@pytest.mark.parametrize(
    "command",
    [
        "show version",
        "show interfaces status",
        "show interfaces | json",
        "show interfaces transceiver | json",
        "show lldp neighbors",
    ],
)
def test_garbled_output_raises(command):
    garbage = "% Invalid input detected at '^' marker.\n"
    with pytest.raises(ParseError) as info:
        lookup("eos", command)(garbage, device="spine1")
    assert info.value.raw == garbage and info.value.device == "spine1"


def test_truncated_json_and_wrong_types_raise():
    text = sample("eos", "show_version_json__napalm_7010t_4_20")
    with pytest.raises(ParseError, match="broken JSON"):
        lookup("eos", "show version | json")(text[: len(text) // 2])
    bad = sample("eos", "show_interfaces_json__veoslab_4_33").replace(
        '"inOctets": 678348', '"inOctets": "lots"'
    )
    with pytest.raises(ParseError, match="lots"):
        lookup("eos", "show interfaces | json")(bad)


def test_json_only_commands_refuse_text():
    with pytest.raises(ParseError, match=r"\| json"):
        lookup("eos", "show interfaces counters")("Port  InOctets\nEt1  30\n")
    # transceiver text is read, but only with EOS's own header
    with pytest.raises(ParseError, match=r"\(Celsius\)"):
        lookup("eos", "show interfaces transceiver")("Port  Temp  Voltage\nEt1  30.1  3.3\n")


# --- transceiver text (issue 15: engineers paste text captures) --------------------------


def test_transceiver_text_reads_every_row():
    t = eos("show interfaces transceiver", "show_interfaces_transceiver__ntc_templates")
    assert sorted(t) == [
        "Ethernet3/1/1",
        "Ethernet3/17/1",
        "Ethernet3/17/2",
        "Ethernet3/17/3",
        "Ethernet5/29/1",
    ]
    x = t["Ethernet3/17/2"]
    assert (x.temperature_c, x.voltage_v) == (35.61, 3.21)
    assert (x.lanes[0].tx_bias_ma, x.lanes[0].tx_power_dbm, x.lanes[0].rx_power_dbm) == (
        36.94,
        -0.20,
        -0.20,
    )
    assert t["Ethernet3/1/1"].lanes[0].tx_power_dbm is None  # N/A, not 0
    blank = t["Ethernet5/29/1"]
    assert (blank.temperature_c, blank.lanes[0].rx_power_dbm) == (None, None)


def test_transceiver_detail_text_reads_thresholds():
    d = eos(
        "show interfaces transceiver detail", "show_interfaces_transceiver_detail__ntc_templates"
    )
    e61 = d["Ethernet6/1"]
    assert (e61.temperature_c, e61.voltage_v, e61.lanes[0].tx_power_dbm) == (27.48, 3.30, -2.39)
    assert e61.lanes[0].rx_power_dbm == -0.90 and e61.lanes[0].tx_bias_ma is None
    th = e61.thresholds["rx_power_dbm"]
    assert (th.high_alarm, th.high_warn, th.low_alarm, th.low_warn) == (4.40, 3.40, -11.50, -10.50)
    assert d["Ethernet29/1"].thresholds["tx_bias_ma"].high_alarm == 38.30
    assert d["Ethernet7/1"].lanes[0].rx_power_dbm == -1.15


def test_transceiver_text_and_json_give_the_same_record():
    """The same DOM printed both ways (the JSON sample's values laid out as EOS text)."""
    j = eos(
        "show interfaces transceiver | json",
        "show_interfaces_transceiver_json__netpanda_ethernet52",
    )["Ethernet52"]
    text = sample("eos", "show_interfaces_transceiver__ntc_templates").splitlines()[:7]
    text.append("Et52       52.15      3.36      6.30     -2.25      -1.61     0:00:01 ago")
    t = lookup("eos", "show interfaces transceiver")("\n".join(text) + "\n")["Ethernet52"]
    assert t.temperature_c == pytest.approx(j.temperature_c, abs=0.005)
    assert t.voltage_v == pytest.approx(j.voltage_v, abs=0.005)
    for field in ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm"):
        assert getattr(t.lanes[0], field) == pytest.approx(getattr(j.lanes[0], field), abs=0.005)


@pytest.mark.parametrize(
    ("cut", "expected"),
    [
        ("Et3/17/3   35.61      3.21      37.42    1.65", "complete DOM row"),
        ("Et3/17/3   35.61      3.21      37.42    1.6x      -0.72     0:00:03 ago", "1.6x"),
        ("Et3/17/2   35.61      3.21      36.94    -0.20     -0.20     0:00:03 ago", "twice"),
    ],
)
def test_transceiver_text_refuses_cut_and_duplicated_rows(cut, expected):
    lines = sample("eos", "show_interfaces_transceiver__ntc_templates").splitlines()[:10]
    text = "\n".join([*lines, cut]) + "\n"
    with pytest.raises(ParseError, match=expected) as info:
        lookup("eos", "show interfaces transceiver")(text)
    assert "line 11" in str(info.value)


# --- FEC, PFC, queues (ANTA's JSON shapes) ------------------------------------------------


def test_phy_detail_reads_fec_counters_and_pre_fec_ber():
    ok = eos(
        "show interfaces phy detail | json", "show_interfaces_phy_detail_json__anta_ber_success"
    )
    e11 = ok["Ethernet1/1"]
    assert (e11.corrected_cw, e11.uncorrectable_cw) == (3, 0)
    assert e11.pre_fec_ber == pytest.approx(0.5378509864228316e-9)
    assert e11.bins == [] and e11.symbol_errors is None  # EOS prints no histogram here
    assert ok["Ethernet1/2"].pre_fec_ber == pytest.approx(1.3005834847433436e-2)
    bad = eos(
        "show interfaces phy detail | json", "show_interfaces_phy_detail_json__anta_ber_uncorrected"
    )
    assert bad["Ethernet1/1"].uncorrectable_cw == 10


def test_pfc_counters_are_port_totals():
    c = eos(
        "show priority-flow-control counters | json",
        "show_priority_flow_control_counters_json__anta_fixture",
    )
    assert (c["Ethernet3/3/1"].rx_total, c["Ethernet3/3/1"].tx_total) == (2, 0)
    assert c["Ethernet3/4/1"].tx_total == 2 and c["Ethernet3/4/1"].rx == [None] * 8


def test_queue_drops_and_ecn_marks():
    q = eos(
        "show interfaces counters queue detail | json",
        "show_interfaces_counters_queue_detail_json__anta_fixture",
    )
    assert q["Ethernet2"].get("MC1").drop_packets == 4
    assert (
        q["Ethernet2"].get("UC0").drop_packets == 0 and q["Ethernet2"].get("UC0").tx_packets is None
    )
    assert q["Ethernet1"].get("UC1").kind == "unicast"
    ecn = eos(
        "show qos interfaces ecn counters queue | json",
        "show_qos_interfaces_ecn_counters_queue_json__anta_fixture",
    )
    assert ecn["Ethernet10/28/1"] == {0: 0, 1: 0, 2: 0}
    dash = '{"intfQueueCounters": {"Ethernet1": {"queueCounters": {"0": "-", "1": "17"}}}}\n'
    assert lookup("eos", "show qos interfaces ecn counters queue | json")(dash)["Ethernet1"] == {
        0: None,
        1: 17,
    }


# --- validation before extraction (issue 15) ---------------------------------------------


def test_another_commands_json_is_refused_by_name():
    interfaces = sample("eos", "show_interfaces_json__veoslab_4_33")
    with pytest.raises(ParseError, match="looks like 'show interfaces \\| json'"):
        lookup("eos", "show interfaces transceiver | json")(interfaces)
    with pytest.raises(ParseError, match="looks like 'show interfaces transceiver"):
        lookup("eos", "show interfaces | json")(
            sample("eos", "show_interfaces_transceiver_json__netpanda_ethernet52")
        )
    with pytest.raises(ParseError, match="looks like 'show interfaces phy detail"):
        lookup("eos", "show version | json")(
            sample("eos", "show_interfaces_phy_detail_json__anta_ber_success")
        )
    with pytest.raises(ParseError, match="looks like 'show priority-flow-control counters"):
        lookup("eos", "show interfaces status | json")(
            sample("eos", "show_priority_flow_control_counters_json__anta_fixture")
        )


def test_json_that_does_not_close_or_repeats_a_key_is_refused_with_its_line():
    text = sample("eos", "show_interfaces_transceiver_json__netpanda_ethernet52")
    cut = text[: text.index('"mediaType"')]
    with pytest.raises(ParseError, match="broken JSON") as info:
        lookup("eos", "show interfaces transceiver | json")(cut)
    assert "line" in str(info.value)
    twice = text.replace('"txPower": -2.2482661457521322,', '"txPower": -2.2,\n"txPower": -9.9,')
    with pytest.raises(ParseError, match="duplicated key 'txPower'"):
        lookup("eos", "show interfaces transceiver | json")(twice)
    with pytest.raises(ParseError, match="broken JSON"):  # a second document is read too
        lookup("eos", "show interfaces transceiver | json")(text + text)


def test_status_text_refuses_a_cut_row():
    text = sample("eos", "show_interfaces_status__eantc_7050sx3")
    lines = text.splitlines()
    with pytest.raises(ParseError, match="link status") as info:
        lookup("eos", "show interfaces status")("\n".join([*lines[:3], "Et3        notcon"]) + "\n")
    assert "line 4" in str(info.value)
    with pytest.raises(ParseError, match="twice"):
        lookup("eos", "show interfaces status")("\n".join([*lines[:3], lines[2]]) + "\n")


# --- examples the fuzzing found (kept as regular tests) ------------------------------------


def test_damaged_bytes_are_refused_not_read_around():
    text = sample("eos", "show_version__eantc_7050sx3")  # "Uptime: 5 hours and 4 minutes"
    with pytest.raises(ParseError, match="U\\+0000"):  # the driver's path
        p.parse_version(text.replace("5 hours", "5\x00 hours"))
    with pytest.raises(ParseError, match="line 14"):  # labtest parse refuses it too
        lookup("eos", "show version")(text.replace("5 hours", "5\x00 hours"))
    doc = sample("eos", "show_interfaces_status_json__arista_doc_7050sx")
    with pytest.raises(ParseError, match="U\\+FFFD"):
        p.parse_interfaces_status(doc.replace('"vlanId"', '"vlanI\ufffd"'))


def test_cut_last_line_is_refused():
    text = sample("eos", "show_version__eantc_7050sx3")
    cut = text[: text.index("4.31.2F") + 3]
    with pytest.raises(ParseError, match="cut mid-line"):
        lookup("eos", "show version")(cut)
    status = sample("eos", "show_interfaces_status__eantc_7050sx3").splitlines()
    with pytest.raises(ParseError, match="cut mid-line"):
        lookup("eos", "show interfaces status")("\n".join(status[:2]) + "\n" + status[2][:-5])


# --- inventory: vendor and part number of each transceiver slot ----------------------------


def test_inventory_json_and_text_give_vendor_and_part_number():
    j = eos("show inventory | json", "show_inventory_json__anta_fixture")
    assert (j["1"].vendor, j["1"].part_number, j["1"].serial) == (
        "Arista Networks",
        "QSFP-100G-DR",
        "XKT203501340",
    )
    t = eos("show inventory", "show_inventory__ntc_7280dr3a")
    assert sorted(t, key=int) == ["1", "3", "8", "24", "35", "53"]
    assert (t["8"].vendor, t["8"].part_number, t["8"].serial) == (
        "PROLABS",
        "CAB-Q-Q-100G-5MC",
        "PL300OQME039B",
    )
    assert t["1"].vendor == "Arista Networks"  # a manufacturer with a space
    assert eos("show inventory", "show_inventory__ntc_7150s")["52"].part_number == "SFP-10G-SR"


def test_slot_of_port():
    slots = {"3": 1, "52": 1, "2/1": 1}
    assert p.slot_of("Ethernet3/2", slots) == "3"  # lane 2 of the optic in slot 3
    assert p.slot_of("Ethernet52", slots) == "52"
    assert p.slot_of("Ethernet2/1/4", slots) == "2/1"  # modular: card 2, port 1, lane 4
    assert p.slot_of("Ethernet9/1", slots) is None and p.slot_of("Management1", slots) is None


def test_inventory_refuses_cut_rows_and_other_commands():
    lines = sample("eos", "show_inventory__ntc_7280dr3a").splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith(" 8 PROLABS"))
    lines[row] = " 8 PROLABS CAB-Q-Q-100G-5MC"
    with pytest.raises(ParseError, match="stops early") as info:
        lookup("eos", "show inventory")("\n".join(lines) + "\n")
    assert f"line {row + 1}" in str(info.value)
    with pytest.raises(ParseError, match="looks like 'show version"):
        lookup("eos", "show inventory | json")(sample("eos", "show_version_json__veoslab_4_33"))


def test_show_interfaces_text_reads_the_counter_lines():
    c = eos("show interfaces", "show_interfaces__ntc_portchannel_members")
    e = c["Ethernet47"]
    assert (e.rx_packets, e.rx_octets, e.rx_broadcast_packets, e.rx_multicast_packets) == (
        209559,
        26469103,
        66320,
        136323,
    )
    assert (e.tx_packets, e.tx_octets, e.tx_discards, e.rx_pause_frames) == (7809, 1398036, 0, 0)
    assert e.rx_unicast_packets is None  # the text prints no unicast count
    routed = eos("show interfaces", "show_interfaces__ntc_routed")
    assert routed["Ethernet1"].rx_packets == 292 and routed["Ethernet1"].tx_octets == 33221
    assert routed["Ethernet1"].link_status_changes == 1  # "1 link status changes since ..."
    text = sample("eos", "show_interfaces__ntc_routed")
    block = text[: text.index("Ethernet2 is up")]
    with pytest.raises(ParseError, match="Ethernet1 listed twice"):
        lookup("eos", "show interfaces")(block + block)


def test_transceiver_text_reads_the_units_its_header_prints():
    """A power column headed (mW) is converted to dBm; a header in units no field carries
    is refused rather than read as dBm."""
    text = sample("eos", "show_interfaces_transceiver__ntc_templates")
    header = "Port      (Celsius)  (Volts)   (mA)      (dBm)     (dBm)     Last Update"
    assert header in text
    head = text[: text.index("Et3/1/1")].replace(header, header.replace("(dBm) ", "(mW)  "))
    mw = head + "Et3/17/1   35.61      3.21      36.64    1.51       0.00     0:00:03 ago\n"
    t = lookup("eos", "show interfaces transceiver")(mw)
    assert t["Ethernet3/17/1"].lanes[0].tx_power_dbm == pytest.approx(10 * math.log10(1.51))
    assert t["Ethernet3/17/1"].lanes[0].rx_power_dbm == -math.inf
    with pytest.raises(ParseError, match="tx_bias_ma"):
        lookup("eos", "show interfaces transceiver")(text.replace("(mA)  ", "(V)   ", 1))


_RX_DETAIL_MW = """\
                         High Alarm  High Warn   Low Alarm   Low Warn
           Rx Power      Threshold   Threshold   Threshold   Threshold
Port       (mW)          (mW)        (mW)        (mW)        (mW)
-------    ------------  ----------  ----------  ----------  ----------
Et6/1      0.50          4.40        3.40        0.07        0.09
"""


def test_transceiver_detail_text_reads_each_tables_unit():
    e61 = lookup("eos", "show interfaces transceiver detail")(_RX_DETAIL_MW)["Ethernet6/1"]
    assert e61.lanes[0].rx_power_dbm == pytest.approx(10 * math.log10(0.5))
    assert e61.thresholds["rx_power_dbm"].high_alarm == pytest.approx(10 * math.log10(4.4))
    mixed = _RX_DETAIL_MW.replace("(mW)          (mW)", "(dBm)         (mW)")
    with pytest.raises(ParseError, match="units"):
        lookup("eos", "show interfaces transceiver detail")(mixed)


def test_phy_detail_symbol_errors_are_unknown_when_a_lane_has_no_value():
    """A lane EOS printed without a value is not read as 0 symbol errors."""
    from labtest.drivers.eos.parsers.interfaces import parse_phy_detail

    def doc(lane1: dict) -> str:
        fec = {"correctedCodewords": {"value": 3}, "uncorrectedCodewords": {"value": 0},
               "correctedSymbols": {"0": {"value": 5}, "1": lane1}, "encoding": "reedSolomon"}
        port = {"phyStatuses": [{"fec": fec}]}
        return json.dumps({"interfacePhyStatuses": {"Ethernet1/1": port}})

    assert parse_phy_detail(doc({"value": 2}))["Ethernet1/1"].symbol_errors == 7
    assert parse_phy_detail(doc({"changes": 1}))["Ethernet1/1"].symbol_errors is None


# --- PFC per priority and the PFC watchdog ---------------------------------------------------


def test_pfc_per_priority_and_watchdog_counters():
    pfc = eos("show interfaces priority-flow-control counters detail | json",
              "show_interfaces_priority_flow_control_counters_detail_json__dne_taac_keys")
    assert pfc["Ethernet1/1"].rx == [0, 0, 0, 1520, 0, 0, 0, 0]
    assert pfc["Ethernet2/1"].tx[3] == 912 and pfc["Ethernet2/1"].rx_total is None
    wd = eos("show priority-flow-control counters watchdog | json",
             "show_priority_flow_control_counters_watchdog_json__dne_taac_keys")
    assert {k: (s.status, s.storms_detected, s.storms_restored) for k, s in wd.items()} == {
        "Ethernet3/1:2": ("operational", 3, 3),
        "Ethernet4/1:2": ("stormed", 1, 0),
        "Ethernet4/1:3": ("operational", 5, 5),
    }
    # before any event EOS answers an empty table (DNE-TaaC's note): nothing stormed
    assert p.parse_pfc_watchdog_counters('{"interfaces": {}}') == {}


def test_pfc_watchdog_config_from_running_config():
    cfg = eos("show running-config", "show_running_config__avd_pfc_watchdog")
    assert sorted(cfg) == ["Ethernet1/1", "Ethernet2/1"]
    assert (cfg["Ethernet1/1"].detection_time_ms, cfg["Ethernet1/1"].restoration_time_ms) == (
        200, 400)
    text = sample("eos", "show_running_config__avd_pfc_watchdog")
    unarmed = "".join(ln for ln in text.splitlines(True) if "default timeout" not in ln)
    assert p.parse_pfc_watchdog_config(unarmed) == {}  # no timeout: EOS watches nothing


@pytest.mark.parametrize(
    ("command", "text", "why"),
    [
        ("show interfaces priority-flow-control counters detail",
         '{"interfaces": {"Et1": {"priorities": {"3": {"rxFrames": 5}}}}}', "txFrames"),
        ("show interfaces priority-flow-control counters detail",
         '{"interfaces": {"Et1": {"priorities": {"9": {"rxFrames": 5, "txFrames": 0}}}}}',
         "priority"),
        ("show interfaces priority-flow-control counters detail",
         '{"interfaces": {"Et1": {"priorities": {"3": {"rxFrames": -1, "txFrames": 0}}}}}',
         "non-negative"),
        ("show interfaces priority-flow-control counters detail",
         '{"interfaces": {"Et1": {"txQueues": {"3": {"stuckCount": 1, "recoveryCount": 0}}}}}',
         "watchdog"),
        ("show priority-flow-control counters watchdog",
         '{"interfaces": {"Et1": {"txQueues": {"3": {"stuckCount": "1", "recoveryCount": 0}}}}}',
         "number"),
        ("show priority-flow-control counters watchdog",
         '{"interfaces": {"Et1": {"txQueues": {"3": {"stuckCount": 1}}}}}', "recoveryCount"),
        ("show priority-flow-control counters watchdog",
         '{"interfaces": {"Et1": {"txQueues": {"3": {"stuckCount": 1, "recoveryCount": 0}}',
         "JSON"),
        ("show priority-flow-control counters watchdog",
         '{"interfaces": {"Ethernet1": {"lineProtocolStatus": "up"}}}', "txQueues"),
        ("show priority-flow-control counters watchdog",
         '{"interfaceCounters": {"Et1": {"rxFrames": 0, "txFrames": 0}}}',
         "show priority-flow-control counters"),
        ("show running-config",
         "interface Ethernet1\n   priority-flow-control on\n", "end"),
        ("show running-config",
         "priority-flow-control pause watchdog default timeout fast\ninterface Et1\nend\n",
         "seconds"),
    ],
)
def test_pfc_parsers_refuse_truncated_and_foreign_input(command, text, why):
    with pytest.raises(ParseError, match=why):
        lookup("eos", command)(text)


# --- BGP and BFD sessions --------------------------------------------------------------------


def test_bgp_summary_and_interface_addresses():
    bgp = eos("show ip bgp summary vrf all | json",
              "show_ip_bgp_summary_vrf_all_json__napalm_normal")
    assert (bgp["10.0.0.1"].remote_as, bgp["10.0.0.3"].state) == (65002, "Active")
    ll = eos("show ip bgp summary vrf all | json",
             "show_ip_bgp_summary_vrf_all_json__napalm_issue1759")
    peer = ll["fe80::a8c1:abff:fe94:4171%Et3"]
    assert (peer.local_port, peer.remote_as) == ("Ethernet3", 65001 * 65536 + 1028)  # asdot
    assert p.parse_bgp_summary('{"vrfs": {}}') == {}  # napalm "nobgp"
    assert p.parse_bgp_summary(
        '{"vrfs": {"default": {"vrf": "default", "asn": "65001", "peers": {}}}}') == {}
    addrs = eos("show ip interface | json", "show_ip_interface_json__napalm_normal")
    assert addrs["Vlan100"][0] == "192.168.233.1/24" and len(addrs["Vlan100"]) == 3
    assert port_of("172.17.17.100", addrs) == "Ethernet36"
    assert port_of("10.9.9.9", addrs) is None


def test_bfd_peers_detail():
    bfd = eos("show bfd peers detail | json", "show_bfd_peers_detail_json__anta_single_hop")
    assert bfd["192.0.255.7"].local_port is None  # "" : no interface named
    assert bfd["192.0.255.7"].detection_time_ms == 3600.0
    nested = ('{"vrfs": {"default": {"ipv4Neighbors": {"192.0.255.7": {"peers": {"": {"types": '
              '{"multihop": {"peerStats": {"192.0.255.1": {"status": "up", "peerStatsDetail": '
              '{"operTxInterval": 1200000, "operRxInterval": 1200000, "detectMult": 3}}}}}}}}}}}}')
    s = p.parse_bfd_peers(nested)["192.0.255.7"]  # the newer revision's nesting
    assert (s.status, s.receive_interval_ms, s.detection_time_ms) == ("up", 1200, None)


@pytest.mark.parametrize(
    ("command", "text", "why"),
    [
        ("show ip bgp summary vrf all",
         '{"vrfs": {"default": {"peers": {"10.0.0.1": {"asn": "65002"}}}}}', "peerState"),
        ("show ip bgp summary vrf all",
         '{"vrfs": {"default": {"peers": {"10.0.0.1": {"peerState": "Idle", "asn": "x"}}}}}',
         "AS number"),
        ("show ip bgp summary vrf all",
         '{"vrfs": {"default": {"ipv4Neighbors": {"10.0.0.1": {"peerStats": {}}}}}}',
         "show bfd peers detail"),
        ("show bfd peers detail",
         '{"vrfs": {"default": {"peers": {"10.0.0.1": {"peerState": "Idle"}}}}}',
         "show ip bgp summary"),
        ("show bfd peers detail",
         '{"vrfs": {"default": {"ipv4Neighbors": {"10.0.0.1": {"peerStats": {"": {}}}}}}}',
         "status"),
        ("show ip interface",
         '{"interfaces": {"Ethernet1": {"interfaceAddress": '
         '{"primaryIp": {"address": "1.2.3.4"}}}}}',
         "maskLen"),
        ("show ip interface", '{"interfaces": {"Ethernet1": {"lineProtocolStatus": "up"}}}',
         "interfaceAddress"),
    ],
)
def test_routing_parsers_refuse_truncated_and_foreign_input(command, text, why):
    with pytest.raises(ParseError, match=why):
        lookup("eos", command)(text)
