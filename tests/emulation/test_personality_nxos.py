"""The NX-OS personality: NX-OS text in the layout of the driver's public samples, config
mode and checkpoints, the real nxos driver over the emulated SSH, faults it must see, and
the variant testbed (leafspine-nxos.yaml) through ``labtest run``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import switch_helpers as h

from labtest import labtime
from labtest.drivers.common.cli import check_answer
from labtest.drivers.nxos import parsers as p
from labtest.drivers.nxos.driver import VOLATILE, NxosSwitch
from labtest.emulation.lab import EmulatedLab
from labtest.emulation.personalities import _routing, nxos
from labtest.emulation.personalities.nxos.optics import flag
from labtest.errors import CommandFailed, CommandNotSupported
from labtest.testbed.model import Testbed as _Testbed  # not a test class
from labtest.transports import mibs
from labtest.transports.snmp import to_python
from labtest.transports.ssh import CommandResult, SshTransport

NX = "nx1"
REPO = Path(__file__).resolve().parents[2]
VARIANT = REPO / "testbeds" / "emulated" / "leafspine-nxos.yaml"
QSFP_DD = "show_interface_transceiver_details__genie_qsfpdd_400g_dr4"
FABRIC_PORTS = {"Ethernet1/1": ("leaf1", "Ethernet0"), "Ethernet1/2": ("leaf1", "Ethernet8")}


def nxos_testbed() -> _Testbed:
    """A SONiC leaf cabled twice to an NX-OS switch, a host behind it, an empty NX-OS port."""
    return _Testbed.model_validate({
        "name": "nxos-personality",
        "devices": {
            "leaf1": {"role": "leaf", "driver": "sonic", "ssh": h.SSH},
            NX: {"role": "spine", "driver": "nxos", "ports": ["Ethernet1/5"], "ssh": h.SSH},
            "host1": {"role": "host", "driver": "manual-host"},
        },
        "links": [
            {"a": "leaf1:Ethernet0", "b": f"{NX}:Ethernet1/1", "speed_gbps": 400,
             "optic": "400G-DR4", "length_m": 30},
            {"a": "leaf1:Ethernet8", "b": f"{NX}:Ethernet1/2", "speed_gbps": 400,
             "optic": "400G-FR4", "length_m": 30},
            {"a": "host1:eth0", "b": f"{NX}:Ethernet1/3", "speed_gbps": 400,
             "optic": "400G-DR4", "length_m": 3},
        ],
    })


def run(cli, command: str) -> str:
    reply = cli.run(command)
    assert reply.exit_status == 0, f"{command}: {reply}"
    return reply.output


@pytest.fixture(scope="module")
def quiet():
    """The personality on a noiseless virtual-clock fabric, asked without SSH."""
    mp = pytest.MonkeyPatch()
    fabric = h.quiet_fabric(mp, nxos_testbed())
    served = nxos.serve(fabric, NX, fabric.testbed.devices[NX])
    yield fabric, served
    served.stop()
    mp.undo()


# --- layout: the lines the driver's samples print --------------------------------------------


def _headers(text: str, first: str) -> list[list[str]]:
    return [ln.split() for ln in text.splitlines() if ln.startswith(first)]


@pytest.mark.parametrize(
    ("command", "stem", "first"),
    [
        ("show interface status", "show_interface_status__ntc_n9k", "Port "),
        ("show interface counters", "show_interface_counters__genie_eth1_33", "Port "),
        ("show interface counters errors", "show_interface_counters_errors__genie_24port",
         "Port "),
        ("show interface priority-flow-control", "show_interface_priority_flow_control__gpu_leaf",
         "Port "),
        ("show lldp neighbors", "show_lldp_neighbors__ntc_n9k", "Device ID"),
        ("show ip bgp summary vrf all", "show_ip_bgp_summary_vrf_all__ntc_four_vrfs",
         "Neighbor "),
        ("show bfd neighbors details", "show_bfd_neighbors_details__genie_five_sessions_up",
         "OurAddr "),
    ],
)
def test_tables_have_the_headers_of_the_real_samples(quiet, command, stem, first) -> None:
    _, served = quiet
    ours = _headers(run(served.cli(), command), first)
    real = _headers(h.sample("nxos", stem), first)
    assert ours and set(map(tuple, ours)) == set(map(tuple, real))


def _labels(text: str, pattern: str) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(pattern, text, re.MULTILINE)}


@pytest.mark.parametrize(
    ("command", "stem", "pattern"),
    [
        ("show version", "show_version__ntc_n93180yc_fx3_10_4", r"^\s*([A-Za-z][\w ]*?):"),
        ("show interface transceiver details", QSFP_DD, r"^    ([a-zA-Z ]+?) is "),
        ("show interface transceiver details", QSFP_DD,
         r"^    ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\s+(?:N/A|[-\d])"),  # the DOM rows
        ("show bfd neighbors details", "show_bfd_neighbors_details__genie_five_sessions_up",
         r"^\s*([A-Za-z][\w .()/]*?):"),
        ("show ip interface vrf all", "show_ip_interface_vrf_all__ntc_three_vrfs",
         r"^  ([A-Za-z][\w ]*?)\s*:"),
    ],
)
def test_report_lines_are_lines_of_the_real_samples(quiet, command, stem, pattern) -> None:
    """Every labelled line we print is one the real capture prints (we print a subset)."""
    _, served = quiet
    ours = _labels(run(served.cli(), command), pattern)
    assert ours and ours <= _labels(h.sample("nxos", stem), pattern)


def test_parsers_read_an_absent_module_and_the_advertised_pmd(quiet) -> None:
    fabric, served = quiet
    cli = served.cli()
    assert p.parse_version(run(cli, "show version")).os_version == nxos.DEFAULT_VERSION
    status = p.parse_interface_status(run(cli, "show interface status"))
    assert sorted(status) == ["Eth1/1", "Eth1/2", "Eth1/3", "Eth1/5"]
    assert status["Eth1/5"].state == "xcvrAbsen" and status["Eth1/5"].speed_gbps is None
    optics = p.parse_transceiver_details(run(cli, "show interface transceiver details"))
    assert optics["Ethernet1/5"].present is False
    assert optics["Ethernet1/2"].media_type == "400GBASE-FR4"  # the advertised PMD
    assert p.parse_ip_interfaces(run(cli, "show ip interface vrf all"))["default"][
        "loopback0"] == [f"{_routing.router_id(fabric, NX)}/32"]


def test_dom_flags_follow_the_thresholds(quiet) -> None:
    th = quiet[0].dom_thresholds(NX, "Ethernet1/1").rx_power_dbm
    marks = [flag(v, th) for v in (th.high_alarm, th.high_warning, 0.0,
                                                th.low_warning, th.low_alarm - 1)]
    assert marks == ["++", "+", "", "-", "--"]


def test_the_mib_numbers_ports_and_names_the_os_as_nxos_does(quiet) -> None:
    mib = quiet[1].mib
    assert to_python(mib.get(mibs.oid_tuple("sysDescr.0"))).startswith(
        "Cisco NX-OS(tm) Nexus9000 ")
    assert to_python(mib.get(mibs.oid_tuple("sysObjectID.0"))) == "1.3.6.1.4.1.9.12.3.1.3.1955"
    for port, index in (("Ethernet1/1", 0x1A000000), ("Ethernet1/2", 0x1A000200)):
        assert to_python(mib.get(mibs.oid_tuple(f"ifName.{index}"))) == port


# --- config mode, checkpoints and refusals (one channel, no SSH) ---------------------------


@pytest.fixture
def fresh(monkeypatch):
    fabric = h.quiet_fabric(monkeypatch, nxos_testbed())
    served = nxos.serve(fabric, NX, fabric.testbed.devices[NX])
    yield fabric, served
    served.stop()


def test_config_mode_prompts_and_what_each_line_changes(fresh) -> None:
    fabric, served = fresh
    cli = served.cli()
    steps = [("conf t", "nx1(config)#"), ("interface eth 1/2", "nx1(config-if)#"),
             ("description to leaf1 Ethernet8", "nx1(config-if)#"),
             ("mtu 4200", "nx1(config-if)#"), ("shutdown", "nx1(config-if)#"),
             ("exit", "nx1(config)#"), ("end", "nx1#")]
    for line, prompt in steps:
        run(cli, line)
        assert cli.prompt == prompt, line
    assert (fabric.interface(NX, "Ethernet1/2").admin_up, fabric.interface(NX, "Ethernet1/2")
            .mtu_bytes) == (False, 4200)
    assert fabric.interface("leaf1", "Ethernet8").oper_up is False  # the laser went dark
    row = p.parse_interface_status(run(cli, "show interface status"))["Eth1/2"]
    assert (row.state, row.description) == ("disabled", "to leaf1 Ethernet8")
    config = run(cli, "show running-config")
    assert "interface Ethernet1/2\n  description to leaf1 Ethernet8\n  mtu 4200\n" in config
    assert re.search(r"^!Running configuration last done at: .+\n!Time: ", config, re.M)
    for bad in ("shutdown", "interface Ethernet9/9", "show interface status now"):
        assert cli.run(bad).exit_status == 1, bad
    run(cli, "configure terminal")
    assert cli.run("shutdown").output.endswith("% Invalid command at '^' marker.\n")
    run(cli, "end")


def test_checkpoint_and_rollback_restore_the_running_config(fresh) -> None:
    fabric, served = fresh
    cli = served.cli()
    before = p_config(run(cli, "show running-config"))
    assert run(cli, "checkpoint before") == "Done\n"
    assert cli.run("checkpoint before").exit_status == 1  # names are unique
    for line in ("configure terminal", "interface Ethernet1/1", "shutdown", "end"):
        run(cli, line)
    assert p_config(run(cli, "show running-config")) != before
    assert "Rollback completed successfully." in run(cli, "rollback running-config checkpoint "
                                                          "before")
    assert p_config(run(cli, "show running-config")) == before
    assert fabric.interface(NX, "Ethernet1/1").oper_up is True
    assert cli.run("rollback running-config checkpoint none").exit_status == 1
    for n in range(nxos.MAX_CHECKPOINTS - 1):
        run(cli, f"checkpoint c{n}")
    refused = cli.run("checkpoint one-too-many")
    with pytest.raises(CommandFailed):
        check_answer(NX, "checkpoint", CommandResult(refused.output, "", refused.exit_status, 0))
    run(cli, "no checkpoint c0")
    run(cli, "checkpoint one-too-many")


def p_config(text: str) -> str:
    """The running config as the driver compares it (its clock lines dropped)."""
    return VOLATILE.sub("", text)


@pytest.mark.parametrize("line", ["show frobnicate", "sh int status bogus", "shw version",
                                  "show version | json", "show"])
def test_bad_input_gets_the_nxos_refusal(quiet, line) -> None:
    reply = quiet[1].cli().run(line)
    lines = reply.output.splitlines()
    assert lines[0] == line and lines[1].strip() == "^"
    assert lines[2] in ("% Invalid command at '^' marker.", "% Incomplete command at '^' marker.")
    with pytest.raises(CommandNotSupported):
        check_answer(NX, line, CommandResult(reply.output, reply.stderr, reply.exit_status, 0))
    word = {"show frobnicate": "frobnicate", "sh int status bogus": "bogus", "shw version":
            "shw", "show version | json": "json"}.get(line)
    if word:  # the caret sits under the word NX-OS could not take
        assert line[len(lines[1]) - 1:].startswith(word)


# --- the real driver over the emulated SSH ---------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = EmulatedLab(nxos_testbed(), workdir=tmp_path_factory.mktemp("nxos-lab"))
    testbed = lab.start()
    switch = NxosSwitch(NX, testbed.devices[NX], testbed)
    yield lab, switch
    switch.close()
    lab.stop()


def test_each_capability_reads_the_fabric(lab) -> None:
    emulated, nx = lab
    fabric = emulated.fabric
    facts = nx.facts()
    assert (facts.vendor, facts.os_version, facts.hostname) == ("Cisco", "10.4(5)", NX)
    assert facts.model == f"Nexus9000 {nxos.DEFAULT_CHASSIS}"
    assert facts.serial == fabric.device_facts(NX).serial and facts.uptime_s > 3 * 86400
    status = nx.interfaces()
    assert sorted(status) == ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3", "Ethernet1/5"]
    assert all(status[p].oper_up and status[p].speed_gbps == 400 for p in FABRIC_PORTS)
    assert (status["Ethernet1/5"].admin_up, status["Ethernet1/5"].oper_up) == (True, False)
    fabric.add_port_counters(NX, "Ethernet1/1", rx_packets=1000, rx_octets=250_000)
    model, read = fabric.counters(NX, "Ethernet1/1"), nx.counters()["Ethernet1/1"]
    assert read.rx_packets >= model.rx_packets >= 1000 and read.rx_octets >= 250_000
    assert (read.rx_fcs_errors, read.rx_errors, read.tx_discards) == (0, 0, 0)
    optics = nx.transceivers()
    dom = fabric.dom(NX, "Ethernet1/1")
    assert [ln.lane for ln in optics["Ethernet1/1"].lanes] == [1, 2, 3, 4]
    for lane, read in zip(dom.lanes, optics["Ethernet1/1"].lanes, strict=True):
        assert read.rx_power_dbm == pytest.approx(lane.rx_power_dbm, abs=0.2)  # DOM noise
    assert optics["Ethernet1/1"].serial == fabric.transceiver(NX, "Ethernet1/1").serial
    assert optics["Ethernet1/1"].media_type == "400GBASE-DR4"
    lldp = nx.lldp_neighbors()
    assert {k: (v.remote_system, v.remote_port) for k, v in lldp.items()} == {
        **FABRIC_PORTS, "Ethernet1/3": ("host1", "eth0")}
    pfc = nx.pfc_counters()
    assert pfc["Ethernet1/3"].enabled_priorities == sorted(fabric.traffic.qos[NX].pfc)
    bgp = nx.bgp_sessions()
    assert {s.local_port for s in bgp.values()} == set(FABRIC_PORTS)
    assert all(s.state == "Established" and s.remote_as == _routing._asn(fabric, "leaf1")
               for s in bgp.values())
    bfd = nx.bfd_sessions()
    assert {s.local_port for s in bfd.values()} == set(FABRIC_PORTS)
    assert all(s.status == "up" and s.detection_time_ms == 3 * 200 for s in bfd.values())


def test_a_dark_link_shows_in_every_reading(lab) -> None:
    """A connector so dirty that Ethernet1/2's far end loses light: the link goes down and
    NX-OS's status, LLDP, BGP and BFD say so; cleaning it brings all of it back."""
    emulated, nx = lab
    fault = emulated.fabric.inject("dirty_connector", f"{NX}:Ethernet1/2", loss_db=12)
    try:
        labtime.sleep(1.0)
        assert nx.interfaces()["Ethernet1/2"].state == "notconnec"
        assert "Ethernet1/2" not in nx.lldp_neighbors()
        bgp = {s.local_port: s for s in nx.bgp_sessions().values()}
        assert bgp["Ethernet1/2"].state == "Active" and bgp["Ethernet1/1"].established
        bfd = {s.local_port: s for s in nx.bfd_sessions().values()}
        assert (bfd["Ethernet1/2"].status, bfd["Ethernet1/1"].status) == ("down", "up")
    finally:
        emulated.fabric.clear(fault)
    labtime.sleep(1.0)
    assert nx.interfaces()["Ethernet1/2"].oper_up is True
    assert next(iter(nx.bgp_sessions().values())).established


def test_a_dirty_far_connector_lowers_nxos_rx_power(lab) -> None:
    emulated, nx = lab
    before = [ln.rx_power_dbm for ln in nx.transceivers()["Ethernet1/1"].lanes]
    fault = emulated.fabric.inject("dirty_connector", "leaf1:Ethernet0", loss_db=3)
    try:
        after = [ln.rx_power_dbm for ln in nx.transceivers()["Ethernet1/1"].lanes]
    finally:
        emulated.fabric.clear(fault)
    for b, a in zip(before, after, strict=True):
        assert a == pytest.approx(b - 3.0, abs=0.4)  # two noisy DOM reads


def test_a_pause_storm_from_the_host_shows_in_nxos_pfc_frames(lab) -> None:
    emulated, nx = lab
    quiet_rx = nx.pfc_counters()["Ethernet1/3"].rx_total
    fault = emulated.fabric.inject("pfc_storm", "host1", priority=3)
    try:
        labtime.sleep(1.0)
        stormed = nx.pfc_counters()
    finally:
        emulated.fabric.clear(fault)
    assert stormed["Ethernet1/3"].rx_total > quiet_rx
    assert stormed["Ethernet1/1"].rx_total == 0  # the fabric ports heard none


def test_set_admin_and_snapshot_restore_round_trip(lab) -> None:
    emulated, nx = lab
    baseline = nx.running_config()
    assert "!Time:" not in baseline and baseline == nx.running_config()
    token = nx.snapshot()
    nx.set_admin("Ethernet1/1", False)  # configure terminal / interface / shutdown / end
    assert nx.interfaces()["Ethernet1/1"].admin_up is False
    assert emulated.fabric.interface("leaf1", "Ethernet0").oper_up is False
    assert nx.running_config() != baseline
    nx.restore(token)
    assert nx.running_config() == baseline
    assert nx.interfaces()["Ethernet1/1"].oper_up is True
    # each restore deletes its checkpoint: NX-OS keeps ten, a long run takes many more
    for _ in range(12):
        nx.restore(nx.snapshot())
    with pytest.raises(CommandFailed):
        nx.restore(token)  # deleted: nothing to roll back to


def test_unknown_command_is_refused_as_nxos_does(lab) -> None:
    emulated, nx = lab
    with pytest.raises(CommandNotSupported, match=r"Invalid command at '\^' marker"):
        nx.run("show frobnicate")
    device = emulated.emulated_testbed().devices[NX]
    with SshTransport(NX, device.address, device.ssh) as ssh, ssh.shell() as shell:
        assert shell.prompt == f"{NX}#"
        answer = shell.send("show interface bogus").splitlines()
        assert answer[-2:] == [" " * len("show interface ") + "^",
                               "% Invalid command at '^' marker."]


# --- the variant testbed end to end ----------------------------------------------------------


def test_the_nxos_variant_passes_routing_and_link(tmp_path: Path) -> None:
    """leafspine-nxos.yaml through ``labtest run --suite routing --suite link``: PASS, and
    leaf2's own end of each fabric link judged from what the nxos driver read (BGP, BFD and
    its detection time), not waived; its FEC and PRBS holes are waived with reasons."""
    if os.environ.get("LABTEST_SUITE_E2E", "1") == "0":
        pytest.skip("suite runs on the emulated lab skipped: LABTEST_SUITE_E2E=0")
    results = tmp_path / "allure"
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(VARIANT),
            "--suite", "routing", "--suite", "link", "--alluredir", str(results)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                          cwd=tmp_path)  # its run history lands there, not in the repo
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "verdict: PASS" in out, out[-4000:]
    doc = json.loads((results / "labtest-results.json").read_text())
    judged = {
        (m["name"], m["labels"]["link"])
        for t in doc["tests"] if t["suite"] == "routing" and t["outcome"] == "passed"
        for m in t["measurements"]
        if m.get("verdict") == "PASS" and m.get("labels", {}).get("device") == "leaf2"
    }
    links = ("leaf2:Ethernet1/1--spine1:Ethernet8", "leaf2:Ethernet1/2--spine2:Ethernet2/1")
    wanted = {(name, link) for link in links
              for name in ("bgp_session_down", "bfd_session_down", "bfd_detection_time_ms")}
    assert wanted <= judged, sorted(wanted - judged)
