"""Every stored sample names its source and parses with the parser of its command."""

from __future__ import annotations

import json

import pytest
from switch_samples import SOURCE_PREFIX, sample_files

from labtest.parsing import lookup, to_jsonable

# file-name slug -> the command whose parser reads it
COMMANDS = {
    "sonic": {
        "show_version": "show version",
        "show_platform_summary": "show platform summary",
        "show_interfaces_status": "show interfaces status",
        "show_interfaces_counters": "show interfaces counters",
        "show_interfaces_counters_a": "show interfaces counters -a",
        "show_interfaces_counters_errors": "show interfaces counters errors",
        "show_interfaces_flap": "show interfaces flap",
        "show_pfc_counters": "show pfc counters",
        "show_queue_counters": "show queue counters",
        "show_queue_wredcounters": "show queue wredcounters",
        "eeprom_dom": "show interfaces transceiver eeprom --dom",
        "transceiver_pm": "show interfaces transceiver pm",
        "fec_stats": "show interfaces counters fec-stats",
        "fec_histogram": "show interfaces counters fec-histogram",
        "lldp_table": "show lldp table",
        "pfcwd_stats": "show pfcwd stats",
        "pfcwd_config": "show pfcwd config",
    },
    "eos": {
        "show_version_json": "show version | json",
        "show_version": "show version",
        "show_interfaces_status_json": "show interfaces status | json",
        "show_interfaces_status": "show interfaces status",
        "show_interfaces_json": "show interfaces | json",
        "show_interfaces": "show interfaces",
        "show_interfaces_counters_errors_json": "show interfaces counters errors | json",
        "show_interfaces_transceiver_json": "show interfaces transceiver | json",
        "show_interfaces_transceiver_detail_json": "show interfaces transceiver detail | json",
        "show_lldp_neighbors_detail_json": "show lldp neighbors detail | json",
        "show_lldp_neighbors": "show lldp neighbors",
        "show_interfaces_transceiver": "show interfaces transceiver",
        "show_inventory": "show inventory",
        "show_inventory_json": "show inventory | json",
        "show_interfaces_transceiver_detail": "show interfaces transceiver detail",
        "show_interfaces_phy_detail_json": "show interfaces phy detail | json",
        "show_priority_flow_control_counters_json": "show priority-flow-control counters | json",
        "show_interfaces_counters_queue_detail_json": (
            "show interfaces counters queue detail | json"
        ),
        "show_qos_interfaces_ecn_counters_queue_json": (
            "show qos interfaces ecn counters queue | json"
        ),
        "show_clock_json": "show clock | json",
        "show_interfaces_priority_flow_control_counters_detail_json": (
            "show interfaces priority-flow-control counters detail | json"
        ),
        "show_priority_flow_control_counters_watchdog_json": (
            "show priority-flow-control counters watchdog | json"
        ),
        "show_running_config": "show running-config",
        "show_ip_bgp_summary_vrf_all_json": "show ip bgp summary vrf all | json",
        "show_ip_interface_json": "show ip interface | json",
        "show_bfd_peers_detail_json": "show bfd peers detail | json",
    },
    "nxos": {
        "show_version": "show version",
        "show_interface_status": "show interface status",
        "show_interface_counters": "show interface counters",
        "show_interface_counters_errors": "show interface counters errors",
        "show_interface_transceiver_details": "show interface transceiver details",
        "show_lldp_neighbors": "show lldp neighbors",
        "show_interface_priority_flow_control": "show interface priority-flow-control",
        "show_ip_bgp_summary_vrf_all": "show ip bgp summary vrf all",
        "show_ip_bgp_all_summary_vrf_all": "show ip bgp all summary vrf all",
        "show_bgp_vrf_all_all_summary": "show bgp vrf all all summary",
        "show_bfd_neighbors_details": "show bfd neighbors details",
        "show_ip_interface_vrf_all": "show ip interface vrf all",
    },
}

ALL = [(d, f) for d in COMMANDS for f in sample_files(d)]


@pytest.mark.parametrize(("driver", "path"), ALL, ids=[f"{d}/{p.stem}" for d, p in ALL])
def test_sample_names_source_and_parses(driver, path):
    first, _, body = path.read_text().partition("\n")
    assert first.startswith(SOURCE_PREFIX) and len(first) > len(SOURCE_PREFIX) + 10
    assert body.strip(), "sample has no output"
    slug = path.stem.split("__")[0]
    assert slug in COMMANDS[driver], f"no command mapped for sample slug {slug!r}"
    record = lookup(driver, COMMANDS[driver][slug])(body)
    assert record, "parser returned an empty record"
    json.dumps(to_jsonable(record))  # the CLI prints it as JSON


@pytest.mark.parametrize("driver", sorted(COMMANDS))
def test_every_command_has_two_samples_or_is_listed(driver):
    """At least two real outputs per command, unless only one was found (listed here)."""
    single = {
        "sonic": {"show_interfaces_counters_errors"},
        "eos": {
            "show_interfaces_counters_errors_json",
            "show_interfaces_transceiver_detail_json",
            "show_lldp_neighbors",
            "show_interfaces_transceiver_json",
            "show_interfaces_transceiver",
            "show_interfaces_transceiver_detail",
            "show_inventory_json",
            "show_priority_flow_control_counters_json",
            "show_interfaces_counters_queue_detail_json",
            "show_qos_interfaces_ecn_counters_queue_json",
            "show_interfaces_priority_flow_control_counters_detail_json",
            "show_priority_flow_control_counters_watchdog_json",
            "show_running_config",
            "show_bfd_peers_detail_json",
        },
        "nxos": {"show_ip_bgp_summary_vrf_all", "show_ip_bgp_all_summary_vrf_all"},
    }[driver]
    for slug in COMMANDS[driver]:
        count = len(sample_files(driver, slug))
        assert count >= (1 if slug in single else 2), f"{driver}/{slug}: {count} sample(s)"
