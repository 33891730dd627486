"""Arista EOS driver end to end: SSH to a server answering with real published EOS outputs."""

from __future__ import annotations

import copy
import time

import pytest
from driver_harness import Script, driver_on, eos_unknown, lab, opened, replay_testbed
from switch_samples import sample

from labtest import connect
from labtest.capabilities.routing import BfdSessions, BgpSessions
from labtest.capabilities.switch import (
    ConfigSnapshot,
    Fec,
    FecCodewordHistogram,
    FecCounters,
    Interfaces,
    LinkFlapCounts,
    Lldp,
    PfcQueues,
    PortAdmin,
    Prbs,
    Reboot,
    SwitchFacts,
    Transceivers,
    link_flap_counts,
)
from labtest.errors import CommandNotSupported, ParseError, PermissionDenied, TransportTimeout
from labtest.transports.replay import ReplayMissing

VERSION = sample("eos", "show_version_json__veoslab_4_33")  # "uptime": 11635.67


def eos_script(**options) -> Script:
    replies = {
        "show version | json": VERSION,
        "show interfaces status | json": sample("eos", "show_interfaces_status_json__veoslab_4_33"),
        "show interfaces | json": sample("eos", "show_interfaces_json__veoslab_4_33"),
        "show interfaces transceiver detail | json": sample(
            "eos", "show_interfaces_transceiver_detail_json__dwdm_ethernet5_2"
        ),
        "show lldp neighbors detail | json": sample(
            "eos", "show_lldp_neighbors_detail_json__napalm_normal"
        ),
        "show interfaces phy detail | json": sample(
            "eos", "show_interfaces_phy_detail_json__anta_ber_uncorrected"
        ),
        "show priority-flow-control counters | json": sample(
            "eos", "show_priority_flow_control_counters_json__anta_fixture"
        ),
        "show interfaces counters queue detail | json": sample(
            "eos", "show_interfaces_counters_queue_detail_json__anta_fixture"
        ),
        "show inventory | json": (
            '{"xcvrSlots": {"5": {"mfgName": "Arista Networks", "modelName": "100G-DWDM-E", '
            '"serialNum": "SMD5309.1", "hardwareRev": "11"}}}\n'
        ),
        "show interfaces priority-flow-control counters detail | json": sample(
            "eos", "show_interfaces_priority_flow_control_counters_detail_json__dne_taac_keys"
        ),
        "show priority-flow-control counters watchdog | json": sample(
            "eos", "show_priority_flow_control_counters_watchdog_json__dne_taac_keys"
        ),
        "show running-config": sample("eos", "show_running_config__avd_pfc_watchdog"),
        "show ip bgp summary vrf all | json": sample(
            "eos", "show_ip_bgp_summary_vrf_all_json__napalm_normal"
        ),
        "show ip interface | json": (
            '{"interfaces": {"Ethernet7": {"interfaceAddress": {"primaryIp": '
            '{"address": "10.0.0.0", "maskLen": 31}, "secondaryIpsOrderedList": []}}}}'
        ),
        "show bfd peers detail | json": sample(
            "eos", "show_bfd_peers_detail_json__anta_single_hop"
        ),
        "show clock | json": '{"utcTime": 1721080627.052693, "timezone": "UTC"}',
        "show qos interfaces ecn counters queue | json": (
            '{"intfQueueCounters": {"Ethernet2": {"queueCounters": {"0": "5", "1": "-"}}}}'
        ),
    }
    return Script(replies, eos_unknown, prompt="sw1#", config_enter="configure", **options)


@pytest.fixture
def script() -> Script:
    return eos_script()


@pytest.fixture
def eos(script, tmp_path):
    with lab(script, "eos", tmp_path) as (_server, testbed), opened(testbed) as driver:
        yield driver


def test_capabilities_offered_and_left_out(eos):
    offered = [SwitchFacts, Interfaces, Transceivers, Lldp, PortAdmin, ConfigSnapshot, Reboot,
               PfcQueues, BgpSessions, BfdSessions]
    assert all(isinstance(eos, c) for c in offered)
    assert not any(isinstance(eos, c) for c in (Fec, FecCodewordHistogram, Prbs))
    assert isinstance(eos, FecCounters)  # corrected/uncorrectable codewords, pre-FEC BER


def test_link_status_changes_from_the_command_counters_read(eos, script):
    """LinkFlapCounts: ``linkStatusChanges`` of ``show interfaces | json``; a watcher that
    holds the counters already takes the count from them, without a second command."""
    assert isinstance(eos, LinkFlapCounts)
    assert eos.link_status_changes() == {"Management1": 15, "Ethernet7": 3}
    assert script.log[-1:] == ["show interfaces | json"]
    counters = eos.counters()
    sent = len(script.log)
    assert link_flap_counts(eos, counters) == {"Management1": 15, "Ethernet7": 3}
    assert len(script.log) == sent


def test_reads_from_json(eos):
    facts = eos.facts()
    assert (facts.vendor, facts.model, facts.os_version) == ("Arista", "vEOS-lab", "4.33.2F")
    assert facts.serial == "5F6BC4D03506543E211EA99D4FE27DC7"
    status = eos.interfaces()
    assert status["Ethernet1"].admin_up and not status["Ethernet1"].oper_up
    assert status["Management1"].state == "connected"
    counters = eos.counters()
    assert counters["Management1"].rx_packets == 3321 + 0 + 813
    assert counters["Management1"].tx_octets == 7_886_286
    optic = eos.transceivers()["Ethernet5/2"]
    assert optic.serial == "SMD5309.1" and optic.lanes[0].rx_power_dbm == pytest.approx(-0.53)
    assert (optic.vendor, optic.part_number) == ("Arista Networks", "100G-DWDM-E")  # inventory
    assert optic.thresholds["tx_power_dbm"].high_alarm == 5.0
    lldp = eos.lldp_neighbors()
    assert lldp["Ethernet8"].remote_system == "78m3"
    assert lldp["Ethernet8"].remote_mgmt_address == "192.168.8.21"


def test_fec_pfc_and_queue_reads(eos):
    """The parts of Fec EOS publishes a format for (the histogram has none: that capability
    stays absent, see docs/drivers.md); PFC per priority and the queues."""
    fec = eos.fec_stats()["Ethernet1/1"]
    assert (fec.corrected_cw, fec.uncorrectable_cw, fec.bins) == (3, 10, [])
    pfc = eos.pfc_counters()["Ethernet1/1"]
    assert (pfc.rx[3], pfc.tx[3], pfc.rx[0], pfc.rx_total) == (1520, 37, 0, None)
    queues = eos.queue_counters()["Ethernet2"]
    assert queues.get("UC0").ecn_marked_packets == 5
    assert queues.get("UC1").ecn_marked_packets is None  # "-": ECN not configured
    assert queues.get("MC1").drop_packets == 4 and queues.get("MC1").ecn_marked_packets is None


def test_pfc_totals_where_the_release_has_no_per_priority_command(script, tmp_path):
    del script.replies["show interfaces priority-flow-control counters detail | json"]
    with driver_on(script, "eos", tmp_path) as eos:
        pfc = eos.pfc_counters()["Ethernet3/3/1"]
        assert (pfc.rx_total, pfc.rx) == (2, [None] * 8)
        assert script.log[-1] == "show priority-flow-control counters | json"


def test_pfc_watchdog_config_and_state(eos):
    """Timers from the running-config (seconds -> ms) for every PFC port with a lossless
    priority; per-queue state from the watchdog counters, and a configured queue the
    counters do not list yet (no event) operational with its counts unread."""
    config = eos.pfc_watchdog_config()
    assert sorted(config) == ["Ethernet1/1", "Ethernet2/1"]  # Ethernet3/1: PFC off
    wd = config["Ethernet2/1"]
    assert (wd.action, wd.detection_time_ms, wd.restoration_time_ms, wd.poll_interval_ms) == (
        "drop", 200, 400, 100)
    state = eos.pfc_watchdog()
    assert state["Ethernet1/1:3"].status == "operational"
    assert state["Ethernet1/1:3"].storms_detected is None  # absent from the counters
    assert state["Ethernet4/1:2"].status == "stormed"  # stuck 1, recovered 0
    assert (state["Ethernet4/1:3"].status, state["Ethernet4/1:3"].storms_detected) == (
        "operational", 5)
    assert set(state) >= {"Ethernet2/1:3", "Ethernet2/1:4", "Ethernet3/1:2"}


def test_bgp_and_bfd_sessions(eos):
    """BGP peers on the port whose /31 holds them (``show ip interface``), uptime from the
    switch clock less ``upDownTime``; BFD sessions with EOS's own detection time."""
    bgp = eos.bgp_sessions()
    up = bgp["10.0.0.1"]
    assert (up.local_port, up.state, up.prefixes_received, up.remote_as) == (
        "Ethernet7", "Established", 3, 65002)
    assert up.uptime_s == pytest.approx(100.0)
    assert (bgp["10.0.0.3"].state, bgp["10.0.0.3"].local_port, bgp["10.0.0.3"].uptime_s) == (
        "Active", None, None)  # 10.0.0.3 is in no subnet of the switch
    bfd = eos.bfd_sessions()
    assert bfd["fe80::a8c1:abff:fe91:788e vrf MGMT"].local_port == "Ethernet1"
    prod = bfd["fe80::a8c1:abff:fe4b:8c48 vrf PROD"]
    assert (prod.detect_multiplier, prod.receive_interval_ms, prod.transmit_interval_ms) == (
        4, 1200, 1300)
    assert prod.detection_time_ms == 4000.0 and prod.up
    assert not bfd["192.0.255.70 vrf MGMT"].up


def test_port_admin_goes_through_one_config_session(eos, script):
    eos.set_admin("Ethernet1", False)
    eos.set_admin("Ethernet1", True)
    assert script.log == [
        "configure",
        "interface Ethernet1",
        "shutdown",
        "end",
        "configure",
        "interface Ethernet1",
        "no shutdown",
        "end",
    ]


def test_config_line_the_device_refuses_is_command_not_supported(tmp_path):
    script = eos_script(config_lines=r"shutdown|no shutdown")  # no "interface ..." accepted
    with (
        driver_on(script, "eos", tmp_path) as eos,
        pytest.raises(CommandNotSupported, match="interface Ethernet99") as info,
    ):
        eos.set_admin("Ethernet99", False)
    assert "% Invalid input" in info.value.raw


def test_snapshot_restore_with_configure_replace(tmp_path):
    state = {"shutdown": set(), "files": {}}

    def running(_):
        lines = ["! Command: show running-config", "! device: sw1 (vEOS-lab, EOS-4.33.2F)", "!"]
        for port in ("Ethernet1", "Ethernet2"):
            lines += [f"interface {port}"] + (["   shutdown"] if port in state["shutdown"] else [])
            lines.append("!")
        return "\n".join([*lines, "end"]) + "\n"

    def on_config(interface, line):
        (state["shutdown"].add if line == "shutdown" else state["shutdown"].discard)(interface)

    def copy_to(m):
        state["files"][m.group(1)] = copy.deepcopy(state["shutdown"])
        return "Copy completed successfully.\n"

    def replace(m):
        state["shutdown"] = copy.deepcopy(state["files"][m.group(1)])
        return ""

    script = eos_script(
        on_config=on_config,
        patterns={
            r"copy running-config flash:(labtest-[\w-]+)\.cfg": copy_to,
            r"configure replace flash:(labtest-[\w-]+)\.cfg": replace,
        },
    )
    script.replies["show running-config"] = running
    with lab(script, "eos", tmp_path) as (_s, testbed), opened(testbed) as eos:
        before = eos.running_config()
        token = eos.snapshot()
        eos.set_admin("Ethernet2", False)
        changed = eos.running_config()
        eos.restore(token)
        after = eos.running_config()
    assert "interface Ethernet2\n   shutdown" in changed
    assert after == before
    assert f"configure replace flash:{token}.cfg" in script.log


def test_reboot_waits_for_uptime_to_go_back(script, tmp_path):
    booted = []
    script.replies["show version | json"] = lambda _: (
        VERSION.replace("11635.67", "42.0") if booted else VERSION
    )
    script.replies["reload now"] = lambda _: booted.append(True) or ""
    with driver_on(script, "eos", tmp_path, vars={"reboot_poll_s": 0.05}) as eos:
        eos.reboot(timeout_s=5)
    assert script.log == ["show version | json", "reload now", "show version | json"]


def test_errors_are_typed(script, tmp_path):
    script.replies["show interfaces | json"] = '{"interfaces": {"Ethernet1": {"inOctets": "x"}}'
    script.replies["show running-config"] = (
        "% Authorization denied for command 'show running-config'\n"
    )
    with driver_on(script, "eos", tmp_path) as eos:
        with pytest.raises(CommandNotSupported):
            eos.restore("labtest-20250101T000000Z-abcdef")  # "configure replace" unknown here
        with pytest.raises(PermissionDenied):
            eos.running_config()
        with pytest.raises(ParseError) as info:
            eos.counters()
    assert info.value.device == "sw1" and '"inOctets": "x"' in info.value.raw


def test_silent_device_times_out_bounded(script, tmp_path):
    with driver_on(script, "eos", tmp_path, mode="silent", command_timeout_s=1.0) as eos:
        start = time.monotonic()
        with pytest.raises(TransportTimeout):
            eos.interfaces()
        assert time.monotonic() - start < 4


def test_record_then_replay_including_the_config_session(script, tmp_path):
    record_dir = tmp_path / "rec"
    connect.set_record_dir(record_dir)
    try:
        with lab(script, "eos", tmp_path) as (_s, testbed), opened(testbed) as eos:
            live = (eos.facts(), eos.interfaces(), eos.transceivers(), eos.lldp_neighbors())
            eos.set_admin("Ethernet1", False)
    finally:
        connect.set_record_dir(None)
    with opened(replay_testbed("eos", record_dir / "sw1.jsonl")) as replayed:
        assert (
            replayed.facts(),
            replayed.interfaces(),
            replayed.transceivers(),
            replayed.lldp_neighbors(),
        ) == live
        replayed.set_admin("Ethernet1", False)  # each config line answers from the recording
        with pytest.raises(ReplayMissing, match="show interfaces phy detail \\| json"):
            replayed.fec_stats()
