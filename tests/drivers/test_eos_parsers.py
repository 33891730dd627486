"""Arista EOS parsers (JSON first, text fallback) against real published outputs."""

from __future__ import annotations

import pytest
from switch_samples import parse, sample

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
    doc += '"neighborPort": "\\"Ethernet49/1\\"", "ttl": 120}]}'
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
        lookup("eos", "show interfaces transceiver")("Port  Temp  Voltage\nEt1  30.1  3.3\n")
