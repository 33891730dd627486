"""SONiC parsers against real published outputs; expected values read off the samples by hand."""

from __future__ import annotations

import math

import pytest
from switch_samples import parse, sample

from labtest.errors import ParseError
from labtest.parsing import lookup, to_jsonable


def sonic(command: str, name: str, **kwargs):
    return parse("sonic", command, name, **kwargs)


# --- facts -------------------------------------------------------------------


def test_version_command_reference_sn2700():
    f = sonic("show version", "show_version__cmdref_sn2700")
    assert (f.vendor, f.model, f.serial) == ("Mellanox", "MSN2700-CS2FO", "MT1822K07815")
    assert f.os_version == "SONiC.HEAD.32-21ea29a"
    assert (f.hwsku, f.asic, f.hardware_rev) == ("Mellanox-SN2700", "mellanox", "A1")
    assert f.uptime_s == 3 * 60


def test_version_uptime_in_days_and_model_number_on_arm64():
    f = sonic("show version", "show_version__nokia7215_arm64")
    assert f.uptime_s == 19 * 86400 + 3 * 3600 + 33 * 60
    assert (f.vendor, f.model, f.serial) == ("Nokia", "3HE22118AARA01", "UN255000006")


def test_version_missing_serial_and_model_fall_back_to_none_and_hwsku():
    f = sonic("show version", "show_version__as9716_eeprom_error")  # decode-syseeprom error line
    assert f.serial is None and f.model == "Accton-AS9716-32D" and f.vendor == "Accton"
    g = sonic("show version", "show_version__dx010_202111")  # "Serial Number: N/A"
    assert g.serial is None and g.model == "Seastone-DX010" and g.uptime_s == 30 * 60


def test_version_hardware_revision_spelling_2025():
    f = sonic("show version", "show_version__arista7060x6_master2025")
    assert (f.model, f.hardware_rev, f.uptime_s) == ("DCS-7060X6-64PE-B", "02.00", 480)


def test_platform_summary():
    a = sonic("show platform summary", "show_platform_summary__cmdref_sn2700")
    assert (a.asic_count, a.model, a.hardware_rev) == (1, "MSN2700-CS2FO", "A1")
    b = sonic("show platform summary", "show_platform_summary__dx010_na")
    assert (b.serial, b.model, b.hardware_rev) == (None, None, None)
    c = sonic("show platform summary", "show_platform_summary__dx010_202105")
    assert c.model == "R0872-F0010-01"
    # a damaged capture (the space after the colon turned into a letter) is no "Key: value"
    # line: the model is unknown, never "C MSN2700-CS2FO" (found by the byte-flip fuzzing)
    glued = sample("sonic", "show_platform_summary__cmdref_sn2700").replace(
        "Model Number: ", "Model Number:C ")
    assert lookup("sonic", "show platform summary")(glued).model is None


# --- interfaces --------------------------------------------------------------


def test_interfaces_status_command_reference():
    st = sonic("show interfaces status", "show_interfaces_status__cmdref_100g")
    assert list(st) == ["Ethernet0", "Ethernet4", "Ethernet8"]
    e8 = st["Ethernet8"]
    assert (e8.admin_up, e8.oper_up, e8.speed_gbps, e8.mtu_bytes) == (False, False, 100.0, 9100)
    assert e8.lanes == [57, 58, 59, 60] and e8.alias == "hundredGigE1/3" and e8.type is None


def test_interfaces_status_hand_aligned_doc_rows():
    st = sonic("show interfaces status", "show_interfaces_status__cmdref_range")
    assert st["Ethernet176"].lanes == [109, 110, 111, 112]
    assert st["Ethernet176"].alias == "hundredGigE45"


def test_interfaces_status_with_fec_and_vlan_columns():
    st = sonic("show interfaces status", "show_interfaces_status__pr764_fec_vlan")
    assert (st["Ethernet1"].fec, st["Ethernet1"].vlan, st["Ethernet1"].speed_gbps) == (
        "none",
        "trunk",
        25.0,
    )
    assert (st["Ethernet5"].fec, st["Ethernet5"].admin_up, st["Ethernet5"].vlan) == (
        "rs",
        False,
        "routed",
    )
    assert st["Ethernet7"].type is None and st["Ethernet6"].type == "SFP/SFP+/SFP28"


def test_interfaces_status_400g_long_type():
    e0 = sonic("show interfaces status", "show_interfaces_status__issue4653_400g")["Ethernet0"]
    assert e0.speed_gbps == 400.0 and e0.lanes == list(range(73, 81))
    assert e0.type == "QSFP-DD Double Density 8X Pluggable Transceiver"


def test_counters_thousands_separators():
    c = sonic("show interfaces counters", "show_interfaces_counters__cmdref")
    assert c["Ethernet0"].rx_packets == 471_729_839_997
    assert c["Ethernet0"].rx_discards == 18_682
    assert c["Ethernet0"].tx_packets == 409_682_385_925
    assert c["Ethernet24"].rx_discards == 1_613 and c["Ethernet24"].tx_errors == 0


def test_counters_na_is_none_not_zero():
    c = sonic("show interfaces counters", "show_interfaces_counters__portstat_test_na")
    assert c["Ethernet4"].rx_discards == 1_000
    assert c["Ethernet4"].tx_errors is None and c["Ethernet0"].rx_overruns is None
    assert c["Ethernet8"].rx_errors == 100


def test_counters_prompt_and_cache_banner_are_skipped():
    c = sonic("show interfaces counters", "show_interfaces_counters__issue8181_7050qx")
    assert sorted(c) == ["Ethernet0", "Ethernet1", "Ethernet2", "Ethernet3"]
    assert c["Ethernet3"].tx_packets == 0


def test_counters_printall_and_errors_views():
    a = sonic("show interfaces counters -a", "show_interfaces_counters_a__portstat_test_printall")
    assert (a["Ethernet8"].rx_errors, a["Ethernet8"].rx_discards, a["Ethernet8"].tx_packets) == (
        100,
        10,
        60,
    )
    m = sonic("show interfaces counters -a", "show_interfaces_counters_a__multiasic_printall")
    assert list(m) == ["Ethernet0", "Ethernet4"]  # the reminder line is not a row
    e = sonic("show interfaces counters errors", "show_interfaces_counters_errors__cmdref_s6000")
    assert e["Ethernet0"].rx_discards == 4 and e["Ethernet8"].rx_discards == 1
    assert e["Ethernet0"].rx_packets is None  # the errors view has no RX_OK column


# --- PFC and queues ----------------------------------------------------------


def test_pfc_counters_per_priority():
    p = sonic("show pfc counters", "show_pfc_counters__pfcstat_test")
    assert p["Ethernet4"].rx == [1400, 401, 402, 403, 404, 405, 406, 407]
    assert p["Ethernet8"].tx[7] == 817 and p["Ethernet0"].tx[0] == 1210


def test_pfc_counters_real_storm_on_priority_3():
    p = sonic("show pfc counters", "show_pfc_counters__enterprise_sonic_pfc3")
    assert p["Ethernet272"].rx[3] == 1798 and sum(p["Ethernet272"].tx) == 0
    assert to_jsonable(p)["Ethernet513"] == {
        "rx": [0] * 8,
        "tx": [0] * 8,
        "rx_total": None,
        "tx_total": None,
        "mode": None,
        "oper": None,
        "enabled_priorities": None,
    }


def test_pfc_counters_na_ports_and_doc_layout():
    p = sonic("show pfc counters", "show_pfc_counters__pfcstat_test_masic_na")
    assert p["Ethernet-BP256"].rx == [None] * 8 and p["Ethernet-BP4"].tx[1] == 811
    d = sonic("show pfc counters", "show_pfc_counters__cmdref")
    assert list(d) == ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]


def test_queue_counters():
    q = sonic("show queue counters", "show_queue_counters__queue_counter_test_ns")["Ethernet0"]
    uc1 = q.get("UC1")
    assert (uc1.kind, uc1.index, uc1.tx_packets, uc1.tx_bytes) == ("unicast", 1, 60, 43)
    assert (uc1.drop_packets, uc1.drop_bytes, uc1.ecn_marked_packets) == (39, 1, None)
    assert q.get("MC10").kind == "multicast" and q.get("MC10").tx_packets == 83
    assert q.get("ALL29").tx_packets is None and len(q.queues) == 30
    doc = sonic("show queue counters", "show_queue_counters__cmdref")
    assert len(doc["Ethernet4"].queues) == 20 and doc["Ethernet4"].get("MC9").index == 9


def test_queue_wred_and_ecn_counters():
    name = "show_queue_wredcounters__sonic_mgmt_s6100_ecn"
    q = sonic("show queue wredcounters", name)["Ethernet0"]
    uc2 = q.get("UC2")
    assert (uc2.ecn_marked_packets, uc2.ecn_marked_bytes) == (32_098_257, 48_147_385_500)
    assert (uc2.wred_drop_packets, uc2.tx_packets) == (None, None)  # N/A / not in this view
    e = sonic("show queue wredcounters", "show_queue_wredcounters__sonic_mgmt_ecn_only")
    assert e["Ethernet64"].get("UC0").ecn_marked_packets == 160_510_586
    assert e["Ethernet64"].get("UC1").wred_drop_packets is None


# --- transceivers ------------------------------------------------------------


def test_dom_sff8636_with_thresholds():
    x = sonic("show interfaces transceiver eeprom --dom", "eeprom_dom__sfp_test_sff8636")[
        "Ethernet0"
    ]
    assert (x.vendor, x.part_number, x.serial) == ("Mellanox", "MFA1A00-C003", "MT1706FT02064")
    assert x.identifier == "QSFP28 or later" and x.media_type == "40G Active Cable (XLPPI)"
    assert (x.temperature_c, x.voltage_v) == (30.9258, 3.2824)
    assert [ln.rx_power_dbm for ln in x.lanes] == [0.3802, -0.4871, -0.0860, 0.3830]
    assert all(ln.tx_power_dbm is None and ln.tx_bias_ma == 6.75 for ln in x.lanes)
    rx = x.thresholds["rx_power_dbm"]
    assert (rx.high_alarm, rx.high_warn, rx.low_warn, rx.low_alarm) == (
        3.4001,
        2.4,
        -9.5001,
        -13.5067,
    )
    assert x.thresholds["temperature_c"].high_alarm == 75.0
    assert x.thresholds["voltage_v"].low_warn == 3.1349
    assert x.thresholds["tx_bias_ma"].low_warn == 1.0


def test_dom_cmis_eight_lanes_with_tx_power():
    x = sonic("show interfaces transceiver eeprom --dom", "eeprom_dom__sfp_test_cmis_qsfpdd")[
        "Ethernet8"
    ]
    assert [ln.lane for ln in x.lanes] == list(range(1, 9)) and x.firmware == "2.1.1"
    lane3 = x.lanes[2]
    assert (lane3.rx_power_dbm, lane3.tx_bias_ma, lane3.tx_power_dbm) == (-22.9243, 0.0, 1.175)
    assert x.thresholds["tx_power_dbm"].low_alarm == -10.5012
    assert x.thresholds["rx_power_dbm"].state(lane3.rx_power_dbm) == "low_alarm"
    assert x.identifier == "QSFP-DD Double Density 8X Pluggable Transceiver"


def test_dom_old_layout_and_empty_threshold_sections():
    old = sonic("show interfaces transceiver eeprom --dom", "eeprom_dom__cmdref_qsfp_dac")
    x = old["Ethernet0"]
    assert (x.media_type, x.identifier, x.part_number) == ("40GBASE-CR4", "QSFP+", "1111111111")
    assert x.lanes[1].rx_power_dbm == -1.1793 and x.temperature_c == 1.1111 and x.voltage_v == 0
    osfp = sonic("show interfaces transceiver eeprom", "eeprom_dom__sfp_test_osfp_no_thresholds")
    y = osfp["Ethernet72"]
    assert y.thresholds == {} and (y.vendor, y.serial) == ("vendor1", "serial1")
    assert y.lanes[7].tx_power_dbm == 0.4 and y.temperature_c == 40.5


def test_dom_json_shape():
    doc = to_jsonable(
        sonic("show interfaces transceiver eeprom --dom", "eeprom_dom__sfp_test_sff8636")
    )["Ethernet0"]
    assert {"temperature_c", "voltage_v", "lanes", "thresholds", "vendor", "part_number"} <= set(
        doc
    )
    assert doc["lanes"][0] == {
        "lane": 1,
        "tx_bias_ma": 6.75,
        "tx_power_dbm": None,
        "rx_power_dbm": 0.3802,
    }


def test_dom_dark_receiver_is_minus_inf():
    text = sample("sonic", "eeprom_dom__sfp_test_sff8636").replace(
        "RX2Power: -0.4871dBm", "RX2Power: -infdBm"
    )
    x = lookup("sonic", "show interfaces transceiver eeprom --dom")(text)["Ethernet0"]
    assert math.isinf(x.lanes[1].rx_power_dbm) and x.lanes[1].rx_power_dbm < 0
    assert to_jsonable(x)["lanes"][1]["rx_power_dbm"] == "-inf"


def test_dom_power_in_mw_is_converted_to_dbm():
    """A power printed in mW lands in rx_power_dbm as dBm (10·log10 mW), not as the mW number."""
    text = (
        sample("sonic", "eeprom_dom__sfp_test_sff8636")
        .replace("RX1Power: 0.3802dBm", "RX1Power: 1.0920mW")
        .replace("RX2Power: -0.4871dBm", "RX2Power: 0.0000mW")
        .replace("RxPowerHighAlarm  : 3.4001dBm", "RxPowerHighAlarm  : 2.1881mW")
    )
    x = lookup("sonic", "show interfaces transceiver eeprom --dom")(text)["Ethernet0"]
    assert x.lanes[0].rx_power_dbm == pytest.approx(10 * math.log10(1.092))
    assert x.lanes[1].rx_power_dbm == -math.inf  # no light
    assert x.lanes[2].rx_power_dbm == -0.0860  # dBm stays dBm
    assert x.thresholds["rx_power_dbm"].high_alarm == pytest.approx(10 * math.log10(2.1881))


@pytest.mark.parametrize(
    "reading", ["RX1Power: -1.0000mW", "RX1Power: 0.3802mA", "TX1Bias: 6.7500dBm"]
)
def test_dom_reading_in_a_unit_not_its_own_is_rejected(reading):
    field = reading.split(":")[0]
    original = {"RX1Power": "RX1Power: 0.3802dBm", "TX1Bias": "TX1Bias: 6.7500mA"}[field]
    text = sample("sonic", "eeprom_dom__sfp_test_sff8636").replace(original, reading)
    with pytest.raises(ParseError):
        lookup("sonic", "show interfaces transceiver eeprom --dom")(text)


def test_transceiver_pm_coherent():
    pm = sonic("show interfaces transceiver pm", "transceiver_pm__cmdref_400zr")["Ethernet100"]
    tx = pm.params["tx_power"]
    assert (tx.unit, tx.min, tx.avg, tx.max, tx.high_alarm, tx.low_warn) == (
        "dBm",
        -8.22,
        -8.23,
        -8.24,
        -5.0,
        -16.003,
    )
    assert pm.params["rx_signal_power"].high_alert is True
    ber = pm.params["pre_fec_ber"]
    assert (ber.unit, ber.max, ber.high_alarm, ber.high_alert) == (None, 5.76e-4, 1.25e-2, None)
    assert pm.params["sop_roc"].high_alarm is None and pm.params["evm"].unit == "%"
    other = sonic("show interfaces transceiver pm", "transceiver_pm__sfp_test_eth44")
    assert other["Ethernet44"].params["cd_short_link"].unit == "ps/nm"



def test_transceiver_pm_not_applicable_is_an_empty_record_per_port():
    pm = sonic("show interfaces transceiver pm", "transceiver_pm__sfp_test_not_applicable")
    assert set(pm) == {"Ethernet0", "Ethernet4", "Ethernet64"}
    assert all(not p.params for p in pm.values())


# --- FEC ---------------------------------------------------------------------


def test_fec_stats_first_release_and_ber_columns():
    a = sonic("show interfaces counters fec-stats", "fec_stats__pr2027_initial")["Ethernet0"]
    assert (a.corrected_cw, a.uncorrectable_cw, a.symbol_errors, a.pre_fec_ber) == (
        136_403,
        34,
        40,
        None,
    )
    b = sonic("show interfaces counters fec-stats", "fec_stats__pr4124_ber_flr")["Ethernet2"]
    assert (b.corrected_cw, b.symbol_errors, b.pre_fec_ber, b.post_fec_ber) == (
        50,
        50,
        9.41e-12,
        0.0,
    )
    c = sonic("show interfaces counters fec-stats", "fec_stats__portstat_test_max_flr")
    assert c["Ethernet4"].flr_observed == 4.21e-10 and c["Ethernet4"].flr_predicted == 7.81e-10
    assert c["Ethernet0"].corrected_cw == 130_402 and c["Ethernet4"].state is None


def test_fec_histogram_single_port():
    h = sonic("show interfaces counters fec-histogram", "fec_histogram__issue21554_eth0")
    bins = h["Ethernet0"].bins
    assert len(bins) == 16 and bins[0] == 77_092_897_948_028 and bins[3] == 217
    assert h["Ethernet0"].max_nonzero_bin == 3
    g = sonic("show interfaces counters fec-histogram", "fec_histogram__swss3919_eth48")
    assert g["Ethernet48"].bins[1] == 118_358 and g["Ethernet48"].bins[2] == 279


def test_fec_histogram_port_from_caller_when_output_omits_it():
    name = "fec_histogram__portstat_test_noport"
    assert list(sonic("show interfaces counters fec-histogram", name)) == ["unknown"]
    h = sonic("show interfaces counters fec-histogram", name, port="Ethernet0")
    assert h["Ethernet0"].bins[7] == 300_000 and to_jsonable(h)["Ethernet0"]["bins"][0] == 1_000_000


def test_fec_histogram_all_ports_table_and_gearbox_sections():
    t = sonic("show interfaces counters fec-histogram", "fec_histogram__portstat_fh_table")
    assert t["Ethernet0"].bins[:2] == [1_000_000, 900_000] and t["Ethernet4"].bins == [None] * 16
    g = sonic("show interfaces counters fec-histogram", "fec_histogram__pr4523_gearbox_line")
    assert list(g) == ["Ethernet0 Line"] and g["Ethernet0 Line"].max_nonzero_bin is None


# --- LLDP --------------------------------------------------------------------


def test_lldp_table_command_reference():
    n = sonic("show lldp table", "lldp_table__cmdref")
    assert n["eth0"].remote_port == "GigabitEthernet 0/2" and n["eth0"].capabilities == "OBR"
    assert n["eth0"].remote_port_description is None
    assert n["Ethernet112"].remote_port_description == "T0-2:hundredGigE1/29"
    assert to_jsonable(n)["Ethernet116"]["remote_system"] == "T1-2"


def test_lldp_table_blank_cells_stay_in_their_column():
    n = sonic("show lldp table", "lldp_table__issue11645_blanks")
    assert len(n) == 8
    e4 = n["Ethernet4"]
    assert (e4.remote_system, e4.remote_port, e4.capabilities) == (None, "fortyGigE0/0", None)
    assert e4.remote_port_description == "Ethernet1"
    m = sonic("show lldp table", "lldp_table__pr5698_mgmt")
    assert m["eth0"].remote_system == "MTR-F-1-S-LAB-R2-5-SW01" and m["eth0"].remote_port == "35"
    assert m["Ethernet224"].remote_port_description is None and len(m) == 5


# --- PFC watchdog ------------------------------------------------------------


def test_pfcwd_stats():
    s = sonic("show pfcwd stats", "pfcwd_stats__pr682_running")
    q = s["Ethernet96:4"]
    assert (q.port, q.queue, q.status) == ("Ethernet96", 4, "operational")
    assert (q.storms_detected, q.storms_restored, q.tx_ok, q.tx_drop, q.rx_ok, q.rx_drop) == (
        5,
        5,
        200,
        400,
        100,
        300,
    )
    assert sonic("show pfcwd stats", "pfcwd_stats__pr682_stopped")["Ethernet96:4"].status is None
    z = sonic("show pfcwd stats", "pfcwd_stats__issue8483_z9332_stormed")["Ethernet4:3"]
    assert (z.status, z.storms_detected, z.storms_restored, z.tx_drop) == (
        "stormed",
        1,
        0,
        41_507_426,
    )
    v = sonic("show pfcwd stats", "pfcwd_stats__pfcwd_test_vectors")["Ethernet8:4"]
    assert (v.queue, v.storms_restored, v.tx_last_drop) == (4, 2, 200)


def test_pfcwd_config():
    c = sonic("show pfcwd config", "pfcwd_config__issue9193_z9332")
    assert list(c) == ["Ethernet0", "Ethernet2"]  # the trailing prompt is not a port
    assert (c["Ethernet2"].detection_time_ms, c["Ethernet2"].poll_interval_ms) == (200, 100)
    v = sonic("show pfcwd config", "pfcwd_config__pfcwd_test_vectors_history")["Ethernet0"]
    assert (v.action, v.detection_time_ms, v.restoration_time_ms, v.history) == (
        "forward",
        102,
        101,
        False,
    )
    n = sonic("show pfcwd config", "pfcwd_config__issue17434_voq")["Ethernet0"]
    assert (n.detection_time_ms, n.poll_interval_ms, n.history) == (300, None, None)


# --- garbled output ----------------------------------------------------------

GARBAGE = "% Error: command not found\nsomething else entirely\n"
COMMANDS = [
    "show version",
    "show platform summary",
    "show interfaces status",
    "show interfaces counters",
    "show pfc counters",
    "show queue counters",
    "show interfaces transceiver eeprom --dom",
    "show interfaces transceiver pm",
    "show interfaces counters fec-stats",
    "show interfaces counters fec-histogram",
    "show lldp table",
    "show pfcwd stats",
    "show pfcwd config",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_output_raises_parse_error_with_raw_text(command):
    with pytest.raises(ParseError) as info:
        lookup("sonic", command)(GARBAGE, device="leaf1")
    assert info.value.raw == GARBAGE and info.value.device == "leaf1"
    assert command in str(info.value)


def test_pfc_with_only_the_rx_table_reads_rx_and_marks_tx_missing():
    """A capture cut after the Rx table: Rx as read, Tx None per priority (not zero)."""
    full = lookup("sonic", "show pfc counters")(sample("sonic", "show_pfc_counters__pfcstat_test"))
    text = sample("sonic", "show_pfc_counters__pfcstat_test").split("\n\n")[0] + "\n"
    rx_only = lookup("sonic", "show pfc counters")(text)
    assert set(rx_only) == set(full)
    for port, counters in rx_only.items():
        assert counters.rx == full[port].rx
        assert counters.tx == [None] * 8


def test_pfc_tx_only_grep_capture_from_issue_9430():
    pfc = sonic("show pfc counters", "show_pfc_counters__issue9430_tx_only_grep")
    assert list(pfc) == [f"Ethernet{n}" for n in (0, 2, 4, 6, 8, 10)]
    assert pfc["Ethernet6"].tx == [0, 0, 0, 15437, 0, 0, 0, 0]
    assert pfc["Ethernet6"].rx == [None] * 8


def test_transceiver_pm_with_leading_indentation_as_published():
    indented = sonic("show interfaces transceiver pm", "transceiver_pm__cmdref_400zr_indented")
    flush = sonic("show interfaces transceiver pm", "transceiver_pm__cmdref_400zr")
    assert to_jsonable(indented) == to_jsonable(flush)
    assert indented["Ethernet100"].params["tx_power"].min == -8.22


def test_corrupted_number_is_rejected_not_zeroed():
    text = sample("sonic", "show_pfc_counters__pfcstat_test").replace("1,400", "1,4x0")
    with pytest.raises(ParseError, match="1,4x0"):
        lookup("sonic", "show pfc counters")(text)


def test_histogram_with_a_missing_bin_is_rejected():
    text = sample("sonic", "fec_histogram__swss3919_eth48").replace(
        "BIN3                                    0\n", ""
    )
    with pytest.raises(ParseError, match="contiguous"):
        lookup("sonic", "show interfaces counters fec-histogram")(text)


def test_dom_with_unreadable_value_is_rejected():
    text = sample("sonic", "eeprom_dom__sfp_test_sff8636").replace("6.7500mA", "lots", 1)
    with pytest.raises(ParseError, match="lots"):
        lookup("sonic", "show interfaces transceiver eeprom --dom")(text)


def test_absent_module_is_reported_absent():
    absent = "Ethernet4: SFP EEPROM Not detected\n"
    x = lookup("sonic", "show interfaces transceiver eeprom")(absent)
    assert x["Ethernet4"].present is False and x["Ethernet4"].lanes == []


def test_lookup_by_typed_command_with_port_argument():
    fn = lookup("sonic", "show interfaces transceiver eeprom Ethernet0 -d")
    assert fn.__wrapped__ is lookup("sonic", "show interfaces transceiver eeprom").__wrapped__


def test_interfaces_flap_counts_oper_status_changes_and_never_is_zero():
    flaps = sonic("show interfaces flap", "show_interfaces_flap__utilities_masic_test")
    assert (flaps["Ethernet0"], flaps["Ethernet64"], flaps["Ethernet4"]) == (5, 2, 0)
    assert len(flaps) == 9 and flaps["Ethernet-BP260"] == 0
    one = sonic("show interfaces flap", "show_interfaces_flap__utilities_port")
    assert one == {"Ethernet64": 2}  # right-aligned numbers read the same
    text = sample("sonic", "show_interfaces_flap__utilities_port")
    with pytest.raises(ParseError, match="expected an integer"):
        lookup("sonic", "show interfaces flap")(text.replace("       2  Up", "    many  Up"))
    with pytest.raises(ParseError, match="Ethernet64: no flap count"):
        lookup("sonic", "show interfaces flap")(text.replace("       2  Up", "     N/A  Up"))
