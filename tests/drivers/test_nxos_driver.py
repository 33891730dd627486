"""Cisco NX-OS driver end to end: SSH to a server answering with real published NX-OS outputs."""

from __future__ import annotations

import time

import pytest
from driver_harness import Script, driver_on, lab, nxos_unknown, opened, replay_testbed
from switch_samples import sample

from labtest import connect
from labtest.capabilities.routing import BfdSessions, BgpSessions
from labtest.capabilities.switch import (
    ConfigSnapshot,
    Interfaces,
    Lldp,
    PfcQueues,
    PortAdmin,
    Reboot,
    SwitchFacts,
    Transceivers,
)
from labtest.emulation.sshserver import CliReply
from labtest.errors import CommandNotSupported, ParseError, PermissionDenied, TransportTimeout
from labtest.transports.replay import ReplayMissing

#: ``show ip interface vrf all`` in NX-OS's form (the samples' layout), with subnets written
#: for the BGP sample's peers: VRF RED's 192.168.1.2 on Ethernet1/1, VRF PURPLE's 10.101.1.1
#: on port-channel101, and VRF WHITE's 192.168.2.2 in a subnet of VRF default only
ADDRESSES = """\
IP Interface Status for VRF "default"(1)
Ethernet1/3, Interface status: protocol-up/link-up/admin-up, iod: 3,
  IP address: 192.168.2.1, IP subnet: 192.168.2.0/30
  IP MTU: 9216 bytes (using link MTU)

IP Interface Status for VRF "RED"(3)
Ethernet1/1, Interface status: protocol-up/link-up/admin-up, iod: 1,
  IP address: 192.168.1.1, IP subnet: 192.168.1.0/30

IP Interface Status for VRF "PURPLE"(4)
port-channel101, Interface status: protocol-up/link-up/admin-up, iod: 9,
  IP address: 10.101.1.0, IP subnet: 10.101.1.0/31
"""


def nxos_script(**options) -> Script:
    replies = {
        "show version": sample("nxos", "show_version__ntc_n93180yc_fx3_10_4"),
        "show interface status": sample("nxos", "show_interface_status__ntc_n9k"),
        "show interface counters": sample("nxos", "show_interface_counters__genie_eth1_33"),
        "show interface counters errors": sample(
            "nxos", "show_interface_counters_errors__genie_24port"
        ),
        "show interface transceiver details": sample(
            "nxos", "show_interface_transceiver_details__ntc_sfp_cfp"
        ),
        "show lldp neighbors": sample("nxos", "show_lldp_neighbors__ntc_n9k"),
        "show interface priority-flow-control": sample(
            "nxos", "show_interface_priority_flow_control__blog_n5k"
        ),
        "show ip bgp summary vrf all": sample("nxos", "show_ip_bgp_summary_vrf_all__ntc_four_vrfs"),
        "show ip interface vrf all": ADDRESSES,
        "show bfd neighbors details": sample(
            "nxos", "show_bfd_neighbors_details__genie_five_sessions_up"
        ),
    }
    return Script(replies, nxos_unknown, prompt="N9K-LAB-15# ", hostname="N9K-LAB-15", **options)


@pytest.fixture
def script() -> Script:
    return nxos_script()


@pytest.fixture
def nxos(script, tmp_path):
    with lab(script, "nxos", tmp_path) as (_server, testbed), opened(testbed) as driver:
        yield driver


def test_capabilities_offered(nxos):
    offered = [
        SwitchFacts,
        Interfaces,
        Transceivers,
        Lldp,
        PortAdmin,
        ConfigSnapshot,
        BgpSessions,
        BfdSessions,
    ]
    assert all(isinstance(nxos, c) for c in offered)
    assert not isinstance(nxos, PfcQueues)  # PFC totals only: pfc_counters(), not the whole set
    assert not isinstance(nxos, Reboot)


def test_reads_keyed_by_long_port_names(nxos):
    facts = nxos.facts()
    assert (facts.model, facts.os_version, facts.serial) == (
        "Nexus9000 C93180YC-FX3",
        "10.4(5)",
        "FLM27400B3D",
    )
    status = nxos.interfaces()
    assert status["Ethernet1/1"].name == "Ethernet1/1" and status["Ethernet1/1"].admin_up is False
    assert status["Ethernet2/1"].admin_up and not status["Ethernet2/1"].oper_up
    assert status["mgmt0"].oper_up
    lldp = nxos.lldp_neighbors()
    assert lldp["Ethernet1/2"].remote_port == "Ethernet1/2"  # first neighbour on the port
    optic = nxos.transceivers()["Ethernet3/1"]
    assert optic.lanes[0].rx_power_dbm == pytest.approx(-30.45)
    assert optic.thresholds["temperature_c"].high_alarm == 75.0
    pfc = nxos.pfc_counters()
    assert (pfc["Ethernet1/47"].rx_total, pfc["Ethernet1/47"].tx_total) == (7316, 762946)


def test_counters_merge_traffic_and_error_tables(nxos, script):
    counters = nxos.counters()
    assert counters["Ethernet1/33"].rx_packets == 14178 + 64 + 0
    assert counters["Ethernet1/33"].tx_octets == 12_199_396
    assert counters["Ethernet1/13"].rx_alignment_errors == 500
    assert counters["Ethernet1/13"].tx_discards == 14_500
    assert script.log == ["show interface counters", "show interface counters errors"]


def test_port_admin_in_config_mode(nxos, script):
    nxos.set_admin("Ethernet1/1", True)
    assert script.log == ["configure terminal", "interface Ethernet1/1", "no shutdown", "end"]


def test_snapshot_is_a_checkpoint_and_restore_a_rollback(script, tmp_path):
    script.patterns = {
        r"checkpoint (labtest-[\w-]+)": lambda m: "Done\n",
        r"no checkpoint (labtest-[\w-]+)": lambda m: "",
        r"rollback running-config checkpoint (labtest-[\w-]+)": lambda m: (
            "Note: Applying config parallelly may fail Rollback verification\n"
            "Collecting Running-Config\n#Generating Rollback Patch\nExecuting Rollback Patch\n"
            "Generating Running-config for verification\nRollback completed successfully.\n"
        ),
    }
    running = (
        "!Command: show running-config\n!Running configuration last done at: {done}\n"
        "!Time: {now}\n\nversion 10.4(5) Bios:version 01.11\nhostname N9K-LAB-15\n"
    )
    calls = []
    script.replies["show running-config"] = lambda _: (
        calls.append(1)
        or running.format(
            done=f"Mon Jun 10 21:1{len(calls)}:12 2024", now=f"Mon Jun 10 21:2{len(calls)}:12 2024"
        )
    )
    with lab(script, "nxos", tmp_path) as (_s, testbed), opened(testbed) as nxos:
        first, second = nxos.running_config(), nxos.running_config()
        token = nxos.snapshot()
        nxos.restore(token)
    assert first == second and "!Time" not in first and "hostname N9K-LAB-15" in first
    # the checkpoint is deleted once rolled back: NX-OS keeps at most ten
    assert script.log[-3:] == [f"checkpoint {token}", f"rollback running-config checkpoint {token}",
                               f"no checkpoint {token}"]


def test_errors_are_typed(script, tmp_path):
    script.replies["show interface status"] = "Port  Nme  Stat\n----\n"
    script.replies["show lldp neighbors"] = CliReply("% Permission denied for the role\n")
    with driver_on(script, "nxos", tmp_path) as nxos:
        with pytest.raises(CommandNotSupported, match="Invalid command"):
            nxos.snapshot()  # this box does not know "checkpoint"
        with pytest.raises(PermissionDenied):
            nxos.lldp_neighbors()
        with pytest.raises(ParseError) as info:
            nxos.interfaces()
    assert info.value.device == "sw1" and info.value.raw.startswith("Port  Nme")


def test_silent_device_times_out_bounded(script, tmp_path):
    with driver_on(script, "nxos", tmp_path, mode="silent", command_timeout_s=1.0) as nxos:
        start = time.monotonic()
        with pytest.raises(TransportTimeout):
            nxos.set_admin("Ethernet1/1", False)  # the shell never shows a prompt
        assert time.monotonic() - start < 4


def test_record_then_replay(script, tmp_path):
    record_dir = tmp_path / "rec"
    connect.set_record_dir(record_dir)
    try:
        with lab(script, "nxos", tmp_path) as (_s, testbed), opened(testbed) as nxos:
            live = (nxos.facts(), nxos.counters(), nxos.transceivers(), nxos.pfc_counters())
            nxos.set_admin("Ethernet1/1", False)
    finally:
        connect.set_record_dir(None)
    with opened(replay_testbed("nxos", record_dir / "sw1.jsonl")) as replayed:
        assert (
            replayed.facts(),
            replayed.counters(),
            replayed.transceivers(),
            replayed.pfc_counters(),
        ) == live
        replayed.set_admin("Ethernet1/1", False)
        with pytest.raises(ReplayMissing, match="show lldp neighbors"):
            replayed.lldp_neighbors()


def test_bgp_sessions_on_the_port_of_their_vrf(nxos, script):
    bgp = nxos.bgp_sessions()
    assert script.log == ["show ip bgp summary vrf all", "show ip interface vrf all"]
    red = bgp["192.168.1.2 vrf RED"]
    assert (red.local_port, red.state, red.prefixes_received, red.remote_as) == (
        "Ethernet1/1",
        "Established",
        7,
        65002,
    )
    assert red.uptime_s == (10 * 7 + 4) * 86400.0  # "10w4d"
    assert bgp["10.101.1.1 vrf PURPLE"].local_port == "port-channel101"
    assert bgp["192.168.2.2 vrf WHITE"].local_port is None  # its subnet is VRF default's
    assert bgp["192.168.3.2 vrf BLUE"].local_port is None  # no subnet holds it


def test_bfd_sessions_in_long_port_names(nxos, script):
    bfd = nxos.bfd_sessions()
    assert script.log == ["show bfd neighbors details"]  # every session names its port
    assert {k: s.local_port for k, s in bfd.items()} == {
        "21.1.1.2": "Ethernet1/17/1",
        "22.1.1.2": "Ethernet1/17/2.5",
        "23.1.1.2": "port-channel5",
        "26.1.1.2": "port-channel6.5",
        "27.1.1.2": "Vlan5",
    }
    s = bfd["21.1.1.2"]
    assert (s.up, s.detect_multiplier, s.receive_interval_ms, s.detection_time_ms) == (
        True,
        3,
        50,
        150.0,
    )


def test_bfd_session_without_port_takes_the_subnets(script, tmp_path):
    text = sample("nxos", "show_bfd_neighbors_details__genie_five_sessions_up")
    script.replies["show bfd neighbors details"] = text.replace(
        "Eth1/17/1         default", "N/A               default", 1
    )
    script.replies["show ip interface vrf all"] = ADDRESSES.replace(
        "Ethernet1/3,", "Ethernet1/17/1,"
    ).replace("192.168.2.1, IP subnet: 192.168.2.0/30", "21.1.1.1, IP subnet: 21.1.1.0/24")
    with driver_on(script, "nxos", tmp_path) as nxos:
        bfd = nxos.bfd_sessions()
    assert bfd["21.1.1.2"].local_port == "Ethernet1/17/1"
    assert bfd["23.1.1.2"].local_port == "port-channel5"
    assert script.log == ["show bfd neighbors details", "show ip interface vrf all"]
