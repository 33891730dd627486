"""The EOS personality: JSON shaped like real EOS, text tables, config mode, the real driver."""

from __future__ import annotations

import json
import time

import pytest
import switch_helpers as h

from labtest.drivers.common.cli import check_answer
from labtest.drivers.common.subnets import port_of
from labtest.drivers.eos import parsers as p
from labtest.emulation.lab import EmulatedLab
from labtest.emulation.personalities import eos
from labtest.errors import CommandNotSupported
from labtest.testbed.model import Testbed
from labtest.transports import mibs
from labtest.transports.snmp import to_python
from labtest.transports.ssh import CommandResult, SshTransport

SPINE = "spine1"


def serve(fabric):
    return eos.serve(fabric, SPINE, fabric.testbed.devices[SPINE])


def run(served, command: str, cli=None) -> str:
    reply = (cli or served.cli()).run(command)
    assert reply.exit_status == 0, f"{command}: {reply}"
    return reply.output


@pytest.fixture(scope="module")
def fabric():
    mp = pytest.MonkeyPatch()
    yield h.quiet_fabric(mp)
    mp.undo()


@pytest.fixture(scope="module")
def spine(fabric):
    served = serve(fabric)
    yield served
    served.stop()


@pytest.fixture
def fresh(monkeypatch):
    fab = h.quiet_fabric(monkeypatch)
    served = serve(fab)
    yield fab, served
    served.stop()


# --- structure ---------------------------------------------------------------------------

JSON = [  # command -> the real samples whose shape it must have
    ("show version | json", ["show_version_json__veoslab_4_33"]),
    ("show interfaces status | json", ["show_interfaces_status_json__veoslab_4_33",
                                       "show_interfaces_status_json__arista_doc_7050sx"]),
    ("show interfaces | json", ["show_interfaces_json__veoslab_4_33"]),
    ("show interfaces counters errors | json",
     ["show_interfaces_counters_errors_json__anta_fixture"]),
    ("show interfaces transceiver | json",
     ["show_interfaces_transceiver_json__netpanda_ethernet52"]),
    ("show interfaces transceiver detail | json",
     ["show_interfaces_transceiver_detail_json__dwdm_ethernet5_2"]),
    ("show lldp neighbors | json", ["show_lldp_neighbors_json__sonic_mgmt_vlab04"]),
    ("show lldp neighbors detail | json", ["show_lldp_neighbors_detail_json__napalm_normal"]),
    ("show interfaces phy detail | json", ["show_interfaces_phy_detail_json__anta_ber_success"]),
    ("show priority-flow-control counters | json",
     ["show_priority_flow_control_counters_json__anta_fixture"]),
    ("show interfaces counters queue detail | json",
     ["show_interfaces_counters_queue_detail_json__anta_fixture"]),
    ("show qos interfaces ecn counters queue | json",
     ["show_qos_interfaces_ecn_counters_queue_json__anta_fixture"]),
    ("show inventory | json", ["show_inventory_json__anta_fixture"]),
    ("show interfaces priority-flow-control counters detail | json",
     ["show_interfaces_priority_flow_control_counters_detail_json__dne_taac_keys"]),
    ("show ip interface | json", ["show_ip_interface_json__napalm_normal"]),
]
#: VRF-keyed documents: our default VRF against every VRF entry of the real samples
VRF_JSON = [
    ("show ip bgp summary vrf all | json", ["show_ip_bgp_summary_vrf_all_json__napalm_normal",
                                            "show_ip_bgp_summary_vrf_all_json__napalm_issue1759"]),
    ("show bfd peers detail | json", ["show_bfd_peers_detail_json__anta_single_hop"]),
]


@pytest.mark.parametrize(("command", "stems"), JSON, ids=[c for c, _ in JSON])
def test_json_has_the_keys_and_types_of_real_eos(spine, command, stems) -> None:
    ours = h.load_json(run(spine, command))
    real = [h.load_json(h.sample("eos", stem)) for stem in stems]
    assert h.json_problems(ours, real) == []


@pytest.mark.parametrize(("command", "stems"), VRF_JSON, ids=[c for c, _ in VRF_JSON])
def test_vrf_json_has_the_keys_and_types_of_real_eos(spine, command, stems) -> None:
    ours = h.load_json(run(spine, command))["vrfs"]["default"]
    real = [v for stem in stems for v in h.load_json(h.sample("eos", stem))["vrfs"].values()]
    assert h.json_problems(ours, real) == []


def test_the_json_comparator_catches_a_drift(spine) -> None:
    ours = h.load_json(run(spine, "show version | json"))
    real = [h.load_json(h.sample("eos", "show_version_json__veoslab_4_33"))]
    ours["uptime"] = "5 hours"
    del ours["serialNumber"]
    ours["extra"] = 1
    assert len(h.json_problems(ours, real)) == 3


@pytest.mark.parametrize(
    ("command", "stem", "first_word"),
    [
        ("show interfaces status", "show_interfaces_status__eantc_7050sx3", "Port"),
        ("show lldp neighbors", "show_lldp_neighbors__pr5698_eos_side", "Port"),
        ("show interfaces transceiver", "show_interfaces_transceiver__ntc_templates", "Port"),
        ("show interfaces transceiver detail", "show_interfaces_transceiver_detail__ntc_templates",
         "Port"),
    ],
)
def test_text_tables_have_the_real_header(spine, command, stem, first_word) -> None:
    ours, real = run(spine, command), h.sample("eos", stem)
    assert h.header_words(ours, first_word) == h.header_words(real, first_word)


def test_version_text_has_the_real_lines(spine) -> None:
    ours, real = run(spine, "show version"), h.sample("eos", "show_version__eantc_7050sx3")
    assert h.report_keys(ours) == h.report_keys(real)
    assert ours.startswith("Arista DCS-")


# --- values ------------------------------------------------------------------------------


def test_version_parses_to_the_fabric_facts(spine, fabric) -> None:
    for command in ("show version | json", "show version"):
        facts = p.parse_version(run(spine, command))
        assert facts.serial == fabric.device_facts(SPINE).serial
        assert (facts.vendor, facts.os_version) == ("Arista", "4.33.2F")
        assert facts.uptime_s > 3 * 86400


def test_status_parses_from_json_and_text(spine, fabric) -> None:
    for command in ("show interfaces status | json", "show interfaces status"):
        found = p.parse_interfaces_status(run(spine, command))
        assert sorted(found) == ["Ethernet1/1", "Ethernet2/1"]
        for port, rec in found.items():
            st = fabric.interface(SPINE, port)
            assert (rec.admin_up, rec.oper_up, rec.speed_gbps) == (st.admin_up, st.oper_up, 400)
        assert found["Ethernet2/1"].type == "400GBASE-FR4"


def test_counters_parse_to_the_fabric_counters(spine, fabric) -> None:
    for command in ("show interfaces | json", "show interfaces counters | json",
                    "show interfaces counters errors | json", "show interfaces"):
        found = p.parse_interface_counters(run(spine, command))
        c = fabric.counters(SPINE, "Ethernet1/1")
        if "errors" in command:
            assert found["Ethernet1/1"].rx_fcs_errors == c.rx_fcs_errors
        else:
            assert found["Ethernet1/1"].rx_packets == c.rx_packets > 0
            assert found["Ethernet1/1"].tx_octets == c.tx_octets


def test_rates_follow_the_counters_and_a_clear_reads_as_no_traffic(fresh) -> None:
    fab, served = fresh
    cli = served.cli()

    def rates() -> dict[str, float]:
        doc = json.loads(run(served, "show interfaces | json", cli))
        stats = doc["interfaces"]["Ethernet1/1"]["interfaceStatistics"]
        return {k: stats[k] for k in ("inBitsRate", "inPktsRate", "outBitsRate", "outPktsRate")}

    rates()  # the first sample
    fab.add_port_counters(SPINE, "Ethernet1/1", rx_octets=250_000, rx_packets=1_000)
    fab.advance(2.0)
    moved = rates()
    assert moved["inBitsRate"] >= 8 * 250_000 / 2.0 > 0  # plus LLDP's own frames
    assert moved["inPktsRate"] >= 1_000 / 2.0
    fab.clear_counters(SPINE)  # counters went back (a clear, a reboot): no traffic, not negative
    fab.advance(2.0)
    assert rates() == dict.fromkeys(moved, 0.0)


def test_transceivers_list_one_interface_per_lane(spine, fabric) -> None:
    found = p.parse_transceivers(run(spine, "show interfaces transceiver detail | json"))
    assert sorted(found) == ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3", "Ethernet1/4",
                             "Ethernet2/1", "Ethernet2/2", "Ethernet2/3", "Ethernet2/4"]
    dom = fabric.dom(SPINE, "Ethernet2/1")
    for lane in dom.lanes:
        rec = found[f"Ethernet2/{lane.lane}"]
        assert rec.lanes[0].rx_power_dbm == pytest.approx(lane.rx_power_dbm, abs=0.01)
        assert rec.lanes[0].tx_bias_ma == pytest.approx(lane.bias_ma, abs=0.01)
        assert rec.serial == fabric.transceiver(SPINE, "Ethernet2/1").serial
    th = fabric.dom_thresholds(SPINE, "Ethernet1/1")
    assert found["Ethernet1/3"].thresholds["rx_power_dbm"].low_alarm == th.rx_power_dbm.low_alarm


def test_transceiver_text_gives_the_json_values(spine, fabric) -> None:
    for detail in ("", " detail"):
        text = p.parse_transceivers(run(spine, f"show interfaces transceiver{detail}"))
        doc = p.parse_transceivers(run(spine, f"show interfaces transceiver{detail} | json"))
        assert sorted(text) == sorted(doc)
        for port, rec in doc.items():
            for field in ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm"):
                assert getattr(text[port].lanes[0], field) == pytest.approx(
                    getattr(rec.lanes[0], field), abs=0.005)
            if detail:  # text prints two decimals
                for quantity, th in rec.thresholds.items():
                    printed = text[port].thresholds[quantity]
                    for level in ("low_alarm", "low_warn", "high_warn", "high_alarm"):
                        assert getattr(printed, level) == pytest.approx(
                            getattr(th, level), abs=0.0051)


def test_fec_pfc_and_queues_parse_to_the_fabric_values(spine, fabric) -> None:
    fec = p.parse_phy_detail(run(spine, "show interfaces phy detail | json"))
    model = fabric.fec(SPINE, "Ethernet1/1")
    assert fec["Ethernet1/1"].corrected_cw == model.corrected_codewords
    assert fec["Ethernet1/1"].uncorrectable_cw == model.uncorrectable_codewords
    assert fec["Ethernet1/1"].pre_fec_ber == pytest.approx(model.pre_fec_ber)
    pfc = p.parse_pfc_counters(run(spine, "show priority-flow-control counters | json"))
    paused = p.parse_interface_counters(run(spine, "show interfaces | json"))["Ethernet1/1"]
    assert pfc["Ethernet1/1"].rx_total == paused.rx_pause_frames  # PFC frames are pauses
    queues = p.parse_queue_drops(run(spine, "show interfaces counters queue detail | json"))
    assert [q.queue for q in queues["Ethernet1/1"].queues][:2] == ["UC0", "UC1"]
    ecn = p.parse_ecn_counters(run(spine, "show qos interfaces ecn counters queue | json"))
    assert set(ecn["Ethernet1/1"]) == set(range(8))


def _host_behind_eos() -> Testbed:
    tb = h.testbed()
    data = tb.model_dump(mode="json", exclude_none=True)
    data["links"][2]["b"] = "spine1:Ethernet3/1"  # host1 now behind the EOS switch
    data["devices"]["spine1"]["ports"] = ["Ethernet3/1"]
    return Testbed.model_validate(data)


def test_pfc_storm_behind_eos_shows_in_its_pfc_and_watchdog_counters(monkeypatch) -> None:
    """A host's pause storm into an EOS port: Rx PFC frames on the priority, a stuck count
    in the watchdog document, and the driver's reading "stormed" on that queue; the
    watchdog's configuration is the running-config's (the same model timers SONiC prints)."""
    fab = h.quiet_fabric(monkeypatch, _host_behind_eos())
    served = serve(fab)
    try:
        assert h.load_json(run(served, "show priority-flow-control counters watchdog | json")) \
            == {"interfaces": {}}  # no event yet: EOS lists no port
        config = p.parse_pfc_watchdog_config(run(served, "show running-config"))
        wd = served.cli().state.pfcwd
        assert config["Ethernet3/1"].detection_time_ms == wd.detection_ms
        assert config["Ethernet3/1"].restoration_time_ms == wd.restoration_ms
        assert config["Ethernet3/1"].poll_interval_ms == wd.poll_ms
        fab.inject("pfc_storm", "host1", priority=3)
        fab.advance(1.0)
        pfc = p.parse_pfc_counters_detail(
            run(served, "show interfaces priority-flow-control counters detail | json"))
        assert pfc["Ethernet3/1"].rx[3] > 0 and pfc["Ethernet3/1"].rx[0] == 0
        states = p.parse_pfc_watchdog_counters(
            run(served, "show priority-flow-control counters watchdog | json"))
        assert states["Ethernet3/1:3"].status == "stormed"
        assert states["Ethernet3/1:3"].storms_detected == 1
        assert states["Ethernet3/1:3"].storms_restored == 0
    finally:
        served.stop()


def test_bgp_and_bfd_sessions_sit_on_the_fabric_ports(spine) -> None:
    """The routing model's sessions: each fabric port's BGP peer (placed by the /31 of
    ``show ip interface``) Established, its BFD session up with the model's timers."""
    bgp = p.parse_bgp_summary(run(spine, "show ip bgp summary vrf all | json"))
    addresses = p.parse_ip_interfaces(run(spine, "show ip interface | json"))
    ports = {port_of(s.peer_address, addresses): s for s in bgp.values()}
    assert set(ports) == {"Ethernet1/1", "Ethernet2/1"}
    assert all(s.established and s.prefixes_received for s in ports.values())
    bfd = p.parse_bfd_peers(run(spine, "show bfd peers detail | json"))
    assert {b.local_port for b in bfd.values()} == {"Ethernet1/1", "Ethernet2/1"}
    assert all(b.up and b.detection_time_ms == 3 * b.receive_interval_ms for b in bfd.values())


def test_inventory_names_every_optic_in_both_forms(spine, fabric) -> None:
    for command in ("show inventory | json", "show inventory"):
        slots = p.parse_inventory(run(spine, command))
        assert sorted(slots) == ["1", "2"]
        inv = fabric.transceiver(SPINE, "Ethernet2/1")
        assert (slots["2"].vendor, slots["2"].part_number, slots["2"].serial) == (
            inv.vendor, inv.part_number, inv.serial)
        assert p.slot_of("Ethernet2/3", slots) == "2"


def test_marginal_lane_raises_eos_pre_fec_ber(fresh) -> None:
    fab, served = fresh

    def ber() -> float:
        found = p.parse_phy_detail(run(served, "show interfaces phy detail | json"))
        return found["Ethernet1/1"].pre_fec_ber

    before = ber()
    fab.inject("marginal_lane", "spine1:Ethernet1/1", lane=2, margin_db=1.2)
    fab.advance(30.0)
    after = ber()
    assert after > 10 * max(before, 1e-12)
    assert after == pytest.approx(fab.fec(SPINE, "Ethernet1/1").pre_fec_ber)


def test_codeword_counters_follow_virtual_time_and_a_dirty_connector_fails(fresh) -> None:
    """What the link suite's LINK-1-from-FEC-counters proof relies on: a live 400G port
    decodes 425e9 / 5440 = 7.8125e7 codewords per virtual second (the model's total; EOS
    publishes only the errored ones), the published corrected count grows with time, and a
    dirty connector at the far end floods it and lifts pre-FEC BER over the 2.4e-5 limit."""
    fab, served = fresh

    def phy():
        return p.parse_phy_detail(run(served, "show interfaces phy detail | json"))["Ethernet1/1"]

    total0, seen0 = fab.fec(SPINE, "Ethernet1/1").total_codewords, phy()
    fab.advance(10.0)
    total1, seen1 = fab.fec(SPINE, "Ethernet1/1").total_codewords, phy()
    assert total1 - total0 == pytest.approx(10 * 425e9 / 5440, abs=2)
    assert seen1.corrected_cw >= seen0.corrected_cw and seen1.uncorrectable_cw == 0
    fab.inject("dirty_connector", "leaf1:Ethernet0", loss_db=3)
    fab.advance(1.0)
    dirty = phy()
    assert dirty.corrected_cw - seen1.corrected_cw > 1e6  # of 7.8e7 codewords in that second
    assert dirty.pre_fec_ber > 2.4e-5


def test_lldp_parses_from_every_form(spine, fabric) -> None:
    expected = {n.local_port: (n.system_name, n.port_id) for n in fabric.lldp_neighbours(SPINE)}
    assert expected == {"Ethernet1/1": ("leaf1", "Ethernet0"),
                        "Ethernet2/1": ("leaf1", "Ethernet8")}
    for command in ("show lldp neighbors | json", "show lldp neighbors detail | json",
                    "show lldp neighbors"):
        found = p.parse_lldp_neighbors(run(spine, command))
        assert {k: (v.remote_system, v.remote_port) for k, v in found.items()} == expected
    detail = p.parse_lldp_neighbors(run(spine, "show lldp neighbors detail | json"))
    assert detail["Ethernet1/1"].remote_chassis_id.replace(".", "") == \
        fabric.device_facts("leaf1").base_mac.replace(":", "")


# --- faults, config mode, refusals ---------------------------------------------------------


def test_dirty_connector_lowers_the_far_end_rx_power(fresh) -> None:
    fab, served = fresh

    def rx() -> list[float]:
        found = p.parse_transceivers(run(served, "show interfaces transceiver | json"))
        return [found[f"Ethernet1/{k}"].lanes[0].rx_power_dbm for k in range(1, 5)]

    before = rx()
    fab.inject("dirty_connector", "leaf1:Ethernet0", loss_db=3)
    for b, a in zip(before, rx(), strict=True):
        assert a == pytest.approx(b - 3.0, abs=0.05)


def test_config_mode_shutdown_and_no_shutdown(fresh) -> None:
    fab, served = fresh
    cli = served.cli()
    assert cli.prompt == "spine1#"
    for line, prompt in (("configure", "spine1(config)#"),
                         ("interface Et1/1", "spine1(config-if-Et1/1)#"),
                         ("description to-leaf1", "spine1(config-if-Et1/1)#"),
                         ("shutdown", "spine1(config-if-Et1/1)#"), ("end", "spine1#")):
        run(served, line, cli)
        assert cli.prompt == prompt
    status = p.parse_interfaces_status(run(served, "show interfaces status"))
    assert (status["Ethernet1/1"].admin_up, status["Ethernet1/1"].oper_up) == (False, False)
    assert status["Ethernet1/1"].description == "to-leaf1"
    assert fab.interface("leaf1", "Ethernet0").oper_up is False
    assert "   shutdown" in run(served, "show running-config")
    alias = served.mib.get(mibs.oid_tuple("ifAlias.1001"))  # EOS ifIndex of Ethernet1/1
    assert to_python(alias) == "to-leaf1"
    for line in ("configure terminal", "int ethernet1/1", "no shutdown", "exit", "exit"):
        run(served, line, cli)
    assert cli.prompt == "spine1#"
    assert p.parse_interfaces_status(run(served, "show interfaces status | json"))[
        "Ethernet1/1"].oper_up is True


def test_copy_and_configure_replace_restore(fresh) -> None:
    fab, served = fresh
    before = run(served, "show running-config")
    assert run(served, "copy running-config flash:snap.cfg") == "Copy completed successfully.\n"
    cli = served.cli()
    for line in ("configure", "interface Ethernet2/1", "shutdown", "end"):
        run(served, line, cli)
    assert run(served, "show running-config") != before
    run(served, "configure replace flash:snap.cfg")
    assert run(served, "show running-config") == before
    assert fab.interface(SPINE, "Ethernet2/1").admin_up is True
    assert served.cli().run("configure replace flash:none.cfg").exit_status == 1


def test_unknown_commands_get_invalid_input(spine) -> None:
    reply = spine.cli().run("show frobnicate")
    assert reply.output.startswith("% Invalid input")
    with pytest.raises(CommandNotSupported):
        check_answer(SPINE, "show frobnicate",
                     CommandResult(reply.output, reply.stderr, reply.exit_status, 0.0))
    assert spine.cli().run("sh int status | include Et2").output.startswith("Et2/1")


def test_reload_now_silences_the_switch_until_stopped(fresh) -> None:
    fab, served = fresh
    assert served.cli().run("reload now").exit_status == 0
    deadline = time.monotonic() + 2.0
    while fab.reachable(SPINE) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not fab.reachable(SPINE)
    assert served.mib.state.rebooting
    served.stop()  # cancels the pending boot: no timer outlives the lab
    assert not served.mib.state.rebooting


# --- end to end ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = EmulatedLab(h.testbed(), workdir=tmp_path_factory.mktemp("lab"))
    emulated = lab.start()
    yield lab, emulated
    lab.stop()


def test_ssh_shell_and_the_real_driver(lab) -> None:
    _, tb = lab
    device = tb.devices[SPINE]
    with SshTransport(SPINE, device.address, device.ssh) as ssh, ssh.shell() as shell:
        assert shell.prompt == "spine1#"
        found = p.parse_interfaces_status(shell.send("show interfaces status | json"))
        assert found["Ethernet1/1"].oper_up is True
    driver_module = pytest.importorskip("labtest.drivers.eos.driver")
    switch = driver_module.EosSwitch(SPINE, device, tb)
    try:
        assert switch.facts().model == eos.DEFAULT_MODEL
        assert switch.interfaces()["Ethernet2/1"].oper_up is True
        assert switch.counters()["Ethernet1/1"].rx_packets is not None
        assert switch.transceivers()["Ethernet1/4"].lanes[0].rx_power_dbm > -5
        assert switch.lldp_neighbors()["Ethernet1/1"].remote_system == "leaf1"
        token = switch.snapshot()
        switch.set_admin("Ethernet1/1", False)  # configure / interface / shutdown / end
        assert switch.interfaces()["Ethernet1/1"].admin_up is False
        switch.restore(token)
        assert switch.interfaces()["Ethernet1/1"].admin_up is True
    finally:
        switch.close()
