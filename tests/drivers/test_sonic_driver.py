"""SONiC driver end to end: SSH to a server that answers with real published SONiC outputs.

Values asserted were read off the sample files by hand. The server runs on
127.0.0.1 and every test stops it (the ``lab`` context manager).
"""

from __future__ import annotations

import copy
import json
import time

import pytest
from driver_harness import (
    Script,
    driver_on,
    driver_sample,
    lab,
    opened,
    replay_testbed,
    sonic_unknown,
)
from switch_samples import sample

from labtest import connect
from labtest.capabilities.switch import SWITCH_CAPABILITIES, LinkFlapCounts, link_flap_counts
from labtest.emulation.sshserver import CliReply
from labtest.errors import (
    CommandFailed,
    CommandNotSupported,
    ParseError,
    PermissionDenied,
    TransportTimeout,
)
from labtest.parsing import lookup
from labtest.transports.replay import ReplayMissing


def sonic_replies() -> dict[str, object]:
    return {
        "show version": sample("sonic", "show_version__cmdref_sn2700"),
        "show interfaces status": sample("sonic", "show_interfaces_status__pr764_fec_vlan"),
        "show interfaces counters": sample("sonic", "show_interfaces_counters__cmdref"),
        "show pfc counters": sample("sonic", "show_pfc_counters__pfcstat_test"),
        "show queue counters": sample("sonic", "show_queue_counters__cmdref"),
        "show queue wredcounters": sample("sonic", "show_queue_wredcounters__sonic_mgmt_s6100_ecn"),
        "show pfcwd stats": sample("sonic", "pfcwd_stats__pfcwd_test_vectors"),
        "show pfcwd config": sample("sonic", "pfcwd_config__pfcwd_test_vectors_history"),
        "show interfaces counters fec-stats": sample("sonic", "fec_stats__pr4124_ber_flr"),
        "show interfaces counters fec-histogram Ethernet48": sample(
            "sonic", "fec_histogram__swss3919_eth48"
        ),
        "show interfaces transceiver eeprom --dom": sample(
            "sonic", "eeprom_dom__sfp_test_cmis_qsfpdd"
        ),
        "show interfaces transceiver pm": sample("sonic", "transceiver_pm__cmdref_400zr"),
        "show lldp table": sample("sonic", "lldp_table__cmdref"),
        "show interfaces prbs status -i Ethernet0": driver_sample(
            "sonic", "prbs_status__hld_ethernet0"
        ),
        "sudo config interface shutdown Ethernet0": "",
        "sudo config interface startup Ethernet0": "",
        "sudo config interface pfc priority Ethernet0 3 off": "",
        "sudo pfcwd start --action drop --restoration-time 200 Ethernet0 Ethernet4 400": "",
        "sudo pfcwd stop": "",
        "sudo config interface prbs Ethernet0 enable --mode both --pattern PRBS31": "",
        "sudo config interface prbs Ethernet0 disable": "",
    }


@pytest.fixture
def script() -> Script:
    return Script(sonic_replies(), sonic_unknown)


@pytest.fixture
def sonic(script, tmp_path):
    with lab(script, "sonic", tmp_path) as (_server, testbed), opened(testbed) as driver:
        yield driver


# --- reads -------------------------------------------------------------------------------


def test_driver_offers_every_switch_capability(sonic):
    assert [c.__name__ for c in SWITCH_CAPABILITIES if not isinstance(sonic, c)] == []


def test_facts_from_show_version(sonic, script):
    facts = sonic.facts()
    assert (facts.vendor, facts.model, facts.serial) == (
        "Mellanox",
        "MSN2700-CS2FO",
        "MT1822K07815",
    )
    assert facts.os_version == "SONiC.HEAD.32-21ea29a"
    assert facts.uptime_s == 180.0
    assert script.log == ["show version"]  # serial and model present: no second command


def test_facts_fill_serial_from_platform_summary(script, tmp_path):
    # the same Celestica DX010 (issue 11319): 202111 prints Serial Number N/A
    script.replies["show version"] = sample("sonic", "show_version__dx010_202111")
    script.replies["show platform summary"] = sample("sonic", "show_platform_summary__dx010_202105")
    with lab(script, "sonic", tmp_path) as (_s, testbed), opened(testbed) as sonic:
        facts = sonic.facts()
    assert facts.serial == "DX010B2F108606LK******"
    assert facts.model == "R0872-F0010-01"
    assert facts.os_version == "SONiC.202111.114441-e8daeacd3"


def test_interfaces_and_counters(sonic):
    status = sonic.interfaces()
    assert status["Ethernet1"].oper_up and status["Ethernet1"].speed_gbps == 25.0
    assert status["Ethernet5"].admin_up is False and status["Ethernet5"].fec == "rs"
    counters = sonic.counters()
    assert counters["Ethernet0"].rx_packets == 471_729_839_997
    assert counters["Ethernet0"].rx_discards == 18_682
    assert counters["Ethernet24"].tx_packets == 43_066_076_370


def test_counters_are_one_command_and_the_flap_count_is_read_apart(script, tmp_path):
    """Issue 19: counter snapshots run ``show interfaces counters`` alone (each ``show``
    costs about a second on a real switch); only the watchers read ``show interfaces
    flap``, through LinkFlapCounts."""
    script.replies["show interfaces flap"] = sample(
        "sonic", "show_interfaces_flap__utilities_masic_test")
    with lab(script, "sonic", tmp_path) as (_s, testbed), opened(testbed) as sonic:
        counters = sonic.counters()
        assert script.log == ["show interfaces counters"]
        assert all(c.link_status_changes is None for c in counters.values())
        assert isinstance(sonic, LinkFlapCounts)
        flaps = sonic.link_status_changes()
        assert script.log[1:] == ["show interfaces flap"]
        assert (flaps["Ethernet0"], flaps["Ethernet64"], flaps["Ethernet4"]) == (5, 2, 0)
        assert link_flap_counts(sonic, counters) == flaps  # counters carry none: asked apart


def test_a_release_without_the_flap_command_has_no_count(sonic, script):
    # "show interfaces flap" is not in the script: the click CLI answers "No such command"
    with pytest.raises(CommandNotSupported):
        sonic.link_status_changes()
    assert link_flap_counts(sonic) is None  # the watchers fall back to link-state samples
    assert sonic.counters()["Ethernet0"].rx_packets == 471_729_839_997  # counters unaffected


def test_pfc_counters_per_priority(sonic):
    pfc = sonic.pfc_counters()
    assert pfc["Ethernet4"].rx == [1400, 401, 402, 403, 404, 405, 406, 407]
    assert pfc["Ethernet8"].tx[7] == 817


def test_queue_counters_merge_ecn_marks_from_wredcounters(sonic, script):
    queues = sonic.queue_counters()
    uc1 = queues["Ethernet0"].get("UC1")
    assert uc1.tx_packets == 0 and uc1.drop_packets == 0  # from "show queue counters"
    assert uc1.ecn_marked_packets == 1_032_731  # from "show queue wredcounters"
    assert queues["Ethernet0"].get("UC4").ecn_marked_bytes == 48_165_031_500
    assert script.log == ["show queue counters", "show queue wredcounters"]


def test_queue_counters_without_wredcounters_on_older_release(script, tmp_path):
    del script.replies["show queue wredcounters"]  # the click CLI answers "No such command"
    with lab(script, "sonic", tmp_path) as (_s, testbed), opened(testbed) as sonic:
        queues = sonic.queue_counters()
    assert queues["Ethernet0"].get("UC1").ecn_marked_packets is None
    assert queues["Ethernet0"].get("UC1").tx_packets == 0


def test_pfc_watchdog_state_and_config(sonic):
    state = sonic.pfc_watchdog()
    assert state["Ethernet0:3"].status == "stormed"
    assert (state["Ethernet8:4"].storms_detected, state["Ethernet8:4"].storms_restored) == (3, 2)
    config = sonic.pfc_watchdog_config()
    assert config["Ethernet0"].action == "forward"
    assert config["Ethernet0"].detection_time_ms == 102
    assert config["Ethernet4"].poll_interval_ms == 600


def test_fec_stats_and_histogram(sonic):
    stats = sonic.fec_stats()
    assert (stats["Ethernet0"].corrected_cw, stats["Ethernet0"].uncorrectable_cw) == (916, 4)
    assert stats["Ethernet1"].pre_fec_ber == pytest.approx(1.88e-11)
    histogram = sonic.fec_histogram("Ethernet48")
    assert histogram.bins[:3] == [78_924_019_231, 118_358, 279]
    assert len(histogram.bins) == 16 and histogram.max_nonzero_bin == 2


def test_transceivers_dom_per_lane_with_thresholds(sonic):
    optic = sonic.transceivers()["Ethernet8"]
    assert (optic.vendor, optic.part_number, optic.serial) == (
        "INNOLIGHT",
        "C-DQ8FNM010-N00",
        "INKAO2900002A",
    )
    assert len(optic.lanes) == 8
    assert optic.lanes[2].rx_power_dbm == pytest.approx(-22.9243)
    assert optic.lanes[0].tx_bias_ma == pytest.approx(17.476)
    assert optic.thresholds["rx_power_dbm"].high_alarm == pytest.approx(6.9999)
    assert optic.thresholds["rx_power_dbm"].state(optic.lanes[2].rx_power_dbm) == "low_alarm"


def test_transceiver_pm_of_coherent_module(sonic):
    pm = sonic.transceiver_pm()["Ethernet100"].params
    assert pm["tx_power"].avg == pytest.approx(-8.23)
    assert pm["pre_fec_ber"].max == pytest.approx(5.76e-4)


def test_lldp_neighbours(sonic):
    lldp = sonic.lldp_neighbors()
    assert (lldp["Ethernet112"].remote_system, lldp["Ethernet112"].remote_port) == (
        "T1-1",
        "hundredGigE1/2",
    )
    assert lldp["eth0"].remote_port == "GigabitEthernet 0/2"


# --- writes --------------------------------------------------------------------------------


def test_port_admin_and_pfc_config_commands(sonic, script):
    sonic.set_admin("Ethernet0", False)
    sonic.set_admin("Ethernet0", True)
    sonic.set_pfc_priority("Ethernet0", 3, False)
    sonic.pfc_watchdog_start(
        ["Ethernet0", "Ethernet4"], 400, restoration_time_ms=200, action="drop"
    )
    sonic.pfc_watchdog_stop()
    assert script.log == [
        "sudo config interface shutdown Ethernet0",
        "sudo config interface startup Ethernet0",
        "sudo config interface pfc priority Ethernet0 3 off",
        "sudo pfcwd start --action drop --restoration-time 200 Ethernet0 Ethernet4 400",
        "sudo pfcwd stop",
    ]


def test_port_name_cannot_inject_a_command(sonic, script):
    with pytest.raises(ValueError, match="not a port name"):
        sonic.set_admin("Ethernet0; sudo reboot", False)
    assert script.log == []


def test_prbs_start_stop_read_per_lane(sonic, script):
    sonic.prbs_start("Ethernet0", "PRBS31", lanes=[2, 7])
    sonic.prbs_stop("Ethernet0")
    results = sonic.prbs_read("Ethernet0")
    assert [r.lane for r in results] == [2, 7]  # SONiC prints lanes 1 and 6 (from 0)
    assert results[0].errors == 1426 and results[0].ber == pytest.approx(1.18e-8)
    assert all(r.locked and r.pattern == "PRBS31" for r in results)
    assert script.log[:2] == [
        "sudo config interface prbs Ethernet0 enable --mode both --pattern PRBS31",
        "sudo config interface prbs Ethernet0 disable",
    ]


# --- snapshot / restore -------------------------------------------------------------------


def config_db_script() -> tuple[Script, dict]:
    """A SONiC whose CONFIG_DB changes with ``config`` commands and is saved/reloaded."""
    state = {
        "running": {
            "PORT": {"Ethernet0": {"admin_status": "up", "speed": "400000"}},
            "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3,4"}},
        },
        "files": {},
    }
    running = state["running"]

    def save(m):
        state["files"][m.group(1)] = copy.deepcopy(state["running"])
        return f"Running command: /usr/local/bin/sonic-cfggen -d --print-data > {m.group(1)}\n"

    def reload(m):
        if m.group(1) not in state["files"]:
            return CliReply("", exit_status=1, stderr=f"Error: {m.group(1)} not found\n")
        state["running"] = copy.deepcopy(state["files"][m.group(1)])
        return "Running command: systemctl restart sonic.target\n"

    def admin(m):
        state["running"]["PORT"][m.group(2)]["admin_status"] = (
            "down" if m.group(1) == "shutdown" else "up"
        )
        return ""

    def pfc(m):
        qos = state["running"]["PORT_QOS_MAP"][m.group(1)]
        priorities = set(qos["pfc_enable"].split(","))
        (priorities.add if m.group(3) == "on" else priorities.discard)(m.group(2))
        qos["pfc_enable"] = ",".join(sorted(priorities))
        return ""

    replies = {
        "show runningconfiguration all": lambda _: json.dumps(state["running"], indent=4) + "\n",
        "show interfaces status": sample("sonic", "show_interfaces_status__cmdref_100g"),
    }
    patterns = {
        r"sudo config save -y (/etc/sonic/labtest-[\w-]+\.json)": save,
        r"sudo config reload -y (/etc/sonic/labtest-[\w-]+\.json)": reload,
        r"sudo config interface (shutdown|startup) (\S+)": admin,
        r"sudo config interface pfc priority (\S+) (\d) (on|off)": pfc,
    }
    assert running is state["running"]
    return Script(replies, sonic_unknown, patterns=patterns), state


def test_snapshot_restore_brings_back_the_exact_running_config(tmp_path):
    script, _state = config_db_script()
    with driver_on(script, "sonic", tmp_path, vars={"reboot_poll_s": 0.05}) as sonic:
        before = sonic.running_config()
        token = sonic.snapshot()
        sonic.set_admin("Ethernet0", False)
        sonic.set_pfc_priority("Ethernet0", 4, False)
        changed = sonic.running_config()
        sonic.restore(token)
        after = sonic.running_config()
    assert json.loads(changed)["PORT"]["Ethernet0"]["admin_status"] == "down"
    assert json.loads(changed)["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3"
    assert after == before
    assert f"sudo config reload -y /etc/sonic/{token}.json" in script.log
    assert script.log[-2:] == ["show interfaces status", "show runningconfiguration all"]


def test_restore_refuses_a_token_it_did_not_hand_out(sonic, script):
    with pytest.raises(ValueError, match="snapshot token"):
        sonic.restore("../../etc/passwd")
    assert script.log == []


def test_running_config_that_is_not_json_is_a_parse_error(script, tmp_path):
    script.replies["show runningconfiguration all"] = "Error: database is not ready\n"
    with driver_on(script, "sonic", tmp_path) as sonic, pytest.raises(ParseError) as info:
        sonic.running_config()
    assert info.value.device == "sw1" and "database is not ready" in info.value.raw


# --- reboot -----------------------------------------------------------------------------------


def test_reboot_returns_when_uptime_went_back(script, tmp_path):
    version = sample("sonic", "show_version__cmdref_sn2700")  # "up 3 min"
    booted = []
    script.replies["show version"] = lambda _: version.replace(
        "up 3 min", "up 1 min" if booted else "up 3 min"
    )
    script.replies["sudo reboot"] = lambda _: booted.append(True) or ""
    with driver_on(script, "sonic", tmp_path, vars={"reboot_poll_s": 0.05}) as sonic:
        sonic.reboot(timeout_s=5)
    assert script.log == ["show version", "sudo reboot", "show version"]


def test_reboot_returns_after_the_device_went_away_and_came_back(script, tmp_path):
    cut_probes = [0]  # uptime stays "3 min": only the outage can tell the reboot happened
    with lab(script, "sonic", tmp_path, vars={"reboot_poll_s": 0.05}) as (server, testbed):

        def reboot(_):
            server.mode = "drop"  # this answer is cut, and so are the next probes
            cut_probes[0] = 2
            return "Broadcast message from root: the system is going down for reboot NOW!\n"

        def version(_):
            if server.mode == "drop":
                cut_probes[0] -= 1
                if cut_probes[0] == 0:
                    server.mode = "normal"  # this probe gets a whole answer
            return sample("sonic", "show_version__cmdref_sn2700")

        script.replies["sudo reboot"] = reboot
        script.replies["show version"] = version
        with opened(testbed) as sonic:
            sonic.reboot(timeout_s=10)
    assert script.log == ["show version", "sudo reboot", "show version", "show version"]


def test_reboot_that_never_happens_times_out_bounded(script, tmp_path):
    script.replies["sudo reboot"] = ""
    with driver_on(script, "sonic", tmp_path, vars={"reboot_poll_s": 0.05}) as sonic:
        start = time.monotonic()
        with pytest.raises(TransportTimeout, match="no completed reboot"):
            sonic.reboot(timeout_s=0.5)
    assert time.monotonic() - start < 3


# --- errors ---------------------------------------------------------------------------------


def test_unknown_command_is_command_not_supported(script, tmp_path):
    del script.replies["show interfaces prbs status -i Ethernet0"]
    with (
        driver_on(script, "sonic", tmp_path) as sonic,
        pytest.raises(CommandNotSupported, match="No such command") as info,
    ):
        sonic.prbs_read("Ethernet0")
    assert info.value.device == "sw1" and 'No such command "Ethernet0"' in info.value.raw


@pytest.mark.parametrize(
    "stderr",
    [
        "admin is not in the sudoers file.  This incident will be reported.\n",
        "Root privileges are required for this operation\n",
    ],
)
def test_permission_denied(script, tmp_path, stderr):
    script.replies["sudo config interface shutdown Ethernet0"] = CliReply(
        "", exit_status=1, stderr=stderr
    )
    with driver_on(script, "sonic", tmp_path) as sonic, pytest.raises(PermissionDenied) as info:
        sonic.set_admin("Ethernet0", False)
    assert info.value.device == "sw1" and stderr in info.value.raw


def test_other_failure_is_command_failed_with_exit_status(script, tmp_path):
    script.replies["sudo pfcwd stop"] = CliReply("", exit_status=1, stderr="Error: DB busy\n")
    with (
        driver_on(script, "sonic", tmp_path) as sonic,
        pytest.raises(CommandFailed, match="status 1: Error: DB busy"),
    ):
        sonic.pfc_watchdog_stop()


def test_garbled_output_is_a_parse_error_with_raw_text_and_device(script, tmp_path):
    garbled = "   Interface    Lanes    Speed\n\x1b[0m Ethernet0 8 4\n"
    script.replies["show interfaces status"] = garbled
    with driver_on(script, "sonic", tmp_path) as sonic, pytest.raises(ParseError) as info:
        sonic.interfaces()
    assert info.value.device == "sw1"
    assert info.value.raw == garbled
    assert "[sw1]" in str(info.value)


def test_silent_device_times_out_bounded(script, tmp_path):
    with driver_on(script, "sonic", tmp_path, mode="silent", command_timeout_s=1.0) as sonic:
        start = time.monotonic()
        with pytest.raises(TransportTimeout):
            sonic.facts()
        elapsed = time.monotonic() - start
    assert elapsed < 4


# --- record / replay ------------------------------------------------------------------------


@pytest.fixture
def record_dir(tmp_path):
    directory = tmp_path / "recorded"
    connect.set_record_dir(directory)
    try:
        yield directory
    finally:
        connect.set_record_dir(None)


def read_everything(sonic):
    return (
        sonic.facts(),
        sonic.interfaces(),
        sonic.counters(),
        sonic.pfc_counters(),
        sonic.queue_counters(),
        sonic.fec_histogram("Ethernet48"),
        sonic.transceivers(),
        sonic.lldp_neighbors(),
    )


def test_recorded_session_replays_the_same_records(script, tmp_path, record_dir):
    with lab(script, "sonic", tmp_path) as (_server, testbed), opened(testbed) as sonic:
        live = read_everything(sonic)
        sonic.set_admin("Ethernet0", False)
    connect.set_record_dir(None)  # the server is stopped: only the recording answers now
    recording = record_dir / "sw1.jsonl"
    with opened(replay_testbed("sonic", recording)) as replayed:
        assert read_everything(replayed) == live
        replayed.set_admin("Ethernet0", False)
        with pytest.raises(ReplayMissing, match="show pfcwd stats"):
            replayed.pfc_watchdog()


# --- the PRBS parser added for the driver (samples under driver_samples/sonic) ---------------


def test_prbs_status_parser_on_published_outputs():
    parse = lookup("sonic", "show interface prbs status -i Ethernet0")
    hld = parse(driver_sample("sonic", "prbs_status__hld_ethernet0"))["Ethernet0"]
    assert [r.errors for r in hld] == [2782, 1426, 3189, 5252, 812, 700, 225, 1247]
    assert [r.lane for r in hld] == list(range(1, 9))
    assert hld[6].ber == pytest.approx(1.18e-14) and hld[2].ber == 1.0 and hld[0].ber == 0.0
    marvell = parse(driver_sample("sonic", "prbs_status__mgmt25213_ethernet128"))["Ethernet128"]
    assert [(r.lane, r.locked, r.errors) for r in marvell] == [
        (1, True, 0),
        (2, False, 0),
        (3, True, 2),
        (4, True, 0),
    ]
    assert marvell[1].ber == pytest.approx(1.38e-11) and marvell[0].pattern == "PRBS7"
    assert parse(driver_sample("sonic", "prbs_status__hld_running")) == {"Ethernet0": []}


def test_prbs_status_parser_refuses_garbled_output():
    text = "Interface: Ethernet0 | Mode: rx | Pattern: PRBS31 | Status: Completed\n\nLane Lock\n"
    with pytest.raises(ParseError, match="Lane") as info:
        lookup("sonic", "show interfaces prbs status")(text)
    assert info.value.raw == text
