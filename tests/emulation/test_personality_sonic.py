"""The SONiC personality: real layouts, read back by our parsers, equal to the fabric.

Every command is checked three ways: its structure against a real published
output of the same command, its values (through ``labtest.drivers.sonic.parsers``)
against the fabric model, and faults or config changes showing through.
The last tests run the lab: SSH to the emulated switch, and the real driver.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import switch_helpers as h

from labtest.drivers.common.cli import check_answer
from labtest.drivers.sonic import parsers as p
from labtest.emulation.lab import EmulatedLab
from labtest.emulation.personalities import sonic
from labtest.errors import (
    CommandFailed,
    CommandNotSupported,
    PermissionDenied,
    TransportError,
    TransportTimeout,
)
from labtest.transports.ssh import CommandResult, SshTransport

LEAF = "leaf1"


def serve(fabric):
    return sonic.serve(fabric, LEAF, fabric.testbed.devices[LEAF])


def run(served, command: str) -> str:
    reply = served.cli().run(command)
    assert reply.exit_status == 0, f"{command}: {reply}"
    return reply.output


@pytest.fixture(scope="module")
def fabric():
    """One quiet fabric for the read-only tests (they change nothing)."""
    mp = pytest.MonkeyPatch()
    yield h.quiet_fabric(mp)
    mp.undo()


@pytest.fixture(scope="module")
def leaf(fabric):
    served = serve(fabric)
    yield served
    served.stop()


@pytest.fixture
def fresh(monkeypatch):
    """A fabric and leaf of their own, for tests that change state."""
    fab = h.quiet_fabric(monkeypatch, h.testbed(reboot_down_s=0.3))
    served = serve(fab)
    yield fab, served
    served.stop()


# --- structure: the same columns, keys and layout as real SONiC ---------------------------

TABLES = [
    ("show interfaces status", "show_interfaces_status__pr764_fec_vlan"),
    ("show interfaces counters", "show_interfaces_counters__cmdref"),
    ("show interfaces counters -a", "show_interfaces_counters_a__portstat_test_printall"),
    ("show interfaces counters errors", "show_interfaces_counters_errors__cmdref_s6000"),
    ("show interfaces counters fec-stats", "fec_stats__pr4124_ber_flr"),
    ("show interfaces counters fec-histogram Ethernet0", "fec_histogram__swss3919_eth48"),
    ("show interfaces counters fec-histogram", "fec_histogram__portstat_fh_table"),
    ("show pfc counters", "show_pfc_counters__pfcstat_test"),
    ("show queue counters", "show_queue_counters__cmdref"),
    ("show queue wredcounters", "show_queue_wredcounters__sonic_mgmt_s6100_ecn"),
    ("show lldp table", "lldp_table__cmdref"),
    ("show pfcwd stats", "pfcwd_stats__pfcwd_test_vectors"),
    ("show pfcwd config", "pfcwd_config__issue9193_z9332"),
]


@pytest.mark.parametrize(("command", "stem"), TABLES, ids=[c for c, _ in TABLES])
def test_tables_have_the_real_columns(leaf, command, stem) -> None:
    ours, real = run(leaf, command), h.sample("sonic", stem)
    assert {tuple(t) for t in h.table_headers(ours)} == {tuple(t) for t in h.table_headers(real)}
    # the lines around the tables too
    def banner(text: str) -> list[str]:
        return [re.sub(r"\d+", "N", ln) for ln in text.splitlines()
                if ln.startswith(("Changed polling interval", "Capability codes"))]

    assert banner(ours) == banner(real)


def test_fec_histogram_rows_and_lldp_footer(leaf) -> None:
    ours = run(leaf, "show interfaces counters fec-histogram Ethernet0")
    real = h.sample("sonic", "fec_histogram__swss3919_eth48")
    assert h.first_column(ours) == h.first_column(real)
    lldp = run(leaf, "show lldp table").splitlines()
    assert lldp[-2] == "-" * 50 and re.fullmatch(r"Total entries displayed:  \d+", lldp[-1])


@pytest.mark.parametrize(
    ("command", "stem"),
    [
        ("show version", "show_version__arista7060x6_master2025"),
        ("show platform summary", "show_platform_summary__dx010_202105"),
    ],
)
def test_reports_have_the_real_keys(leaf, command, stem) -> None:
    ours, real = run(leaf, command), h.sample("sonic", stem)
    assert h.report_keys(ours) == h.report_keys(real)
    if command == "show version":  # and the docker image list after it
        docker = ours.split("Docker images:\n")[1].splitlines()[0].split()
        assert docker == real.split("Docker images:\n")[1].splitlines()[0].split()


def test_eeprom_dump_has_the_real_cmis_keys(leaf) -> None:
    ours = run(leaf, "show interfaces transceiver eeprom --dom Ethernet0")
    real = h.sample("sonic", "eeprom_dom__sfp_test_cmis_qsfpdd")
    assert h.eeprom_keys(ours) == h.eeprom_keys(real)
    assert ours.splitlines()[0] == "Ethernet0: SFP EEPROM detected"


def test_pm_of_non_coherent_optics_reads_like_sonic(leaf) -> None:
    ours = run(leaf, "show interfaces transceiver pm")
    real = h.sample("sonic", "transceiver_pm__sfp_test_not_applicable")
    shape = re.compile(r"^\S+: Transceiver performance monitoring not applicable$")
    for text in (ours, real):
        lines = text.strip().split("\n\n")
        assert all(shape.match(line) for line in lines), text
    assert len(ours.strip().split("\n\n")) == 4


# --- values: our parsers read back what the fabric holds -------------------------------------


def test_status_parses_to_the_fabric_state(leaf, fabric) -> None:
    found = p.parse_interfaces_status(run(leaf, "show interfaces status"))
    assert sorted(found) == sorted(fabric.ports(LEAF))
    for port, rec in found.items():
        st = fabric.interface(LEAF, port)
        assert (rec.admin_up, rec.oper_up, rec.mtu_bytes) == (st.admin_up, st.oper_up, 9100)
        assert rec.speed_gbps == 400.0 and rec.fec == "rs" and len(rec.lanes) == 8
    assert found["Ethernet24"].oper_up is False  # no cable, no module
    assert found["Ethernet0"].type == "QSFP-DD Double Density 8X Pluggable Transceiver"


def test_counters_parse_to_the_fabric_counters(leaf, fabric) -> None:
    for command in ("show interfaces counters", "show interfaces counters -a"):
        found = p.parse_interface_counters(run(leaf, command))
        for port, rec in found.items():
            c = fabric.counters(LEAF, port)
            assert rec.rx_packets == c.rx_packets and rec.tx_packets == c.tx_packets
            assert rec.rx_errors == c.rx_errors and rec.rx_discards == c.rx_drops
        assert found["Ethernet0"].rx_packets > 0  # LLDP frames every 30 s
    errors = p.parse_interface_counters(run(leaf, "show interfaces counters errors"))
    assert errors["Ethernet0"].rx_errors == fabric.counters(LEAF, "Ethernet0").rx_errors


def test_dom_parses_to_the_fabric_dom(leaf, fabric) -> None:
    found = p.parse_transceiver_eeprom(run(leaf, "show interfaces transceiver eeprom --dom"))
    assert found["Ethernet24"].present is False
    for port in ("Ethernet0", "Ethernet8", "Ethernet16"):
        rec, dom = found[port], fabric.dom(LEAF, port)
        inv, th = fabric.transceiver(LEAF, port), fabric.dom_thresholds(LEAF, port)
        assert [lane.lane for lane in rec.lanes] == [1, 2, 3, 4]
        for ours, model in zip(rec.lanes, dom.lanes, strict=True):
            assert ours.rx_power_dbm == pytest.approx(model.rx_power_dbm, abs=0.01)
            assert ours.tx_power_dbm == pytest.approx(model.tx_power_dbm, abs=0.01)
            assert ours.tx_bias_ma == pytest.approx(model.bias_ma, abs=0.01)
        assert rec.temperature_c == pytest.approx(dom.temperature_c, abs=0.01)
        assert rec.voltage_v == pytest.approx(dom.voltage_v, abs=0.001)
        assert (rec.vendor, rec.part_number, rec.serial) == (inv.vendor, inv.part_number,
                                                            inv.serial)
        assert rec.firmware == inv.firmware_version
        assert rec.thresholds["rx_power_dbm"].low_alarm == th.rx_power_dbm.low_alarm
        assert rec.thresholds["temperature_c"].high_warn == th.temperature_c.high_warning


def test_fec_parses_to_the_fabric_fec(leaf, fabric) -> None:
    stats = p.parse_fec_stats(run(leaf, "show interfaces counters fec-stats"))
    fec = fabric.fec(LEAF, "Ethernet0")
    assert stats["Ethernet0"].corrected_cw == fec.corrected_codewords
    assert stats["Ethernet0"].uncorrectable_cw == fec.uncorrectable_codewords
    assert stats["Ethernet0"].symbol_errors == fec.symbol_errors
    assert stats["Ethernet0"].pre_fec_ber == pytest.approx(fec.pre_fec_ber, rel=0.01)
    assert stats["Ethernet24"].corrected_cw is None  # no module: N/A
    one = p.parse_fec_histogram(run(leaf, "show interfaces counters fec-histogram Ethernet0"),
                                port="Ethernet0")
    assert one["Ethernet0"].bins == list(fec.bins) and sum(fec.bins) > 10**9
    every = p.parse_fec_histogram(run(leaf, "show interfaces counters fec-histogram"))
    assert every["Ethernet8"].bins == list(fabric.fec(LEAF, "Ethernet8").bins)


def test_lldp_parses_to_the_fabric_neighbours(leaf, fabric) -> None:
    found = p.parse_lldp_table(run(leaf, "show lldp table"))
    expected = {n.local_port: (n.system_name, n.port_id) for n in fabric.lldp_neighbours(LEAF)}
    assert {k: (v.remote_system, v.remote_port) for k, v in found.items()} == expected
    assert found["Ethernet0"].capabilities == "BR" and found["Ethernet16"].capabilities == "O"


def test_pfc_queues_and_watchdog_parse(leaf, fabric) -> None:
    pfc = p.parse_pfc_counters(run(leaf, "show pfc counters"))
    t = fabric.traffic.port_counters(f"{LEAF}:Ethernet0")
    assert pfc["Ethernet0"].rx == list(t.pfc_rx_frames) and len(pfc["Ethernet0"].tx) == 8
    queues = p.parse_queue_counters(run(leaf, "show queue counters Ethernet0"))
    names = [q.queue for q in queues["Ethernet0"].queues]
    assert names == [f"UC{i}" for i in range(8)] + [f"MC{i}" for i in range(8, 16)]
    wred = p.parse_queue_counters(run(leaf, "show queue wredcounters"))
    assert wred["Ethernet8"].queues[3].ecn_marked_packets == t.queues[3].ecn_marked_packets
    stats = p.parse_pfcwd_stats(run(leaf, "show pfcwd stats"))
    assert set(stats) == {f"{port}:{q}" for port in ("Ethernet0", "Ethernet8", "Ethernet16")
                          for q in (3, 4)}
    assert all(s.status == "operational" for s in stats.values())
    config = p.parse_pfcwd_config(run(leaf, "show pfcwd config"))
    assert config["Ethernet0"].detection_time_ms == 200 and config["Ethernet0"].action == "drop"
    assert config["Ethernet0"].poll_interval_ms == 200


def test_version_and_platform_parse(leaf, fabric) -> None:
    facts = p.parse_version(run(leaf, "show version"))
    assert facts.serial == fabric.device_facts(LEAF).serial and facts.vendor == "Mellanox"
    assert facts.os_version.startswith("SONiC.") and facts.uptime_s > 3 * 86400
    summary = p.parse_platform_summary(run(leaf, "show platform summary"))
    assert summary.hwsku == facts.hwsku and summary.serial == facts.serial


# --- faults and configuration show through ---------------------------------------------------


def test_dirty_connector_lowers_rx_power_and_fills_fec_tail(fresh) -> None:
    fab, served = fresh

    def rx_dbm() -> list[float]:
        found = p.parse_transceiver_eeprom(
            run(served, "show interfaces transceiver eeprom --dom Ethernet0"))
        return [lane.rx_power_dbm for lane in found["Ethernet0"].lanes]

    def tail() -> int:
        text = run(served, "show interfaces counters fec-histogram Ethernet0")
        return sum(p.parse_fec_histogram(text, port="Ethernet0")["Ethernet0"].bins[4:])

    before_rx, before_tail = rx_dbm(), tail()
    fab.inject("dirty_connector", "spine1:Ethernet1/1", loss_db=3)  # the far end's connector
    fab.advance(60.0)
    after_rx = rx_dbm()
    for b, a in zip(before_rx, after_rx, strict=True):
        assert a == pytest.approx(b - 3.0, abs=0.05)
    assert tail() > before_tail + 1000


def test_shutdown_and_startup_change_oper_status(fresh) -> None:
    fab, served = fresh
    run(served, "sudo config interface shutdown Ethernet0")
    found = p.parse_interfaces_status(run(served, "show interfaces status"))
    assert (found["Ethernet0"].admin_up, found["Ethernet0"].oper_up) == (False, False)
    assert fab.interface("spine1", "Ethernet1/1").oper_up is False  # the far end sees LOS
    counters = p.parse_interface_counters(run(served, "show interfaces counters"))
    assert "Ethernet0" in counters
    assert "  X  " in run(served, "show interfaces counters errors").splitlines()[2]
    run(served, "sudo config interface startup Ethernet0")
    found = p.parse_interfaces_status(run(served, "show interfaces status"))
    assert (found["Ethernet0"].admin_up, found["Ethernet0"].oper_up) == (True, True)


def test_refusals_are_the_real_ones_and_typed(leaf) -> None:
    def judged(command: str) -> type[Exception] | None:
        reply = leaf.cli().run(command)
        try:
            check_answer(LEAF, command, CommandResult(reply.output, reply.stderr,
                                                      reply.exit_status, 0.0))
        except (CommandNotSupported, PermissionDenied, CommandFailed) as exc:
            return type(exc)
        return None

    assert judged("show interfaces frobnicate") is CommandNotSupported
    assert judged("frobnicate") is CommandNotSupported
    assert judged("config interface shutdown Ethernet0") is PermissionDenied
    assert judged("pfcwd stop") is PermissionDenied
    assert judged("sudo config interface shutdown Ethernet99") is CommandFailed
    assert judged("show int status") is None  # abbreviations SONiC accepts
    reply = leaf.cli().run("show foo")
    assert reply.exit_status == 2
    assert reply.stderr.splitlines()[-1] == 'Error: No such command "foo".'


def test_config_save_and_reload_restore_the_snapshot(fresh) -> None:
    fab, served = fresh
    before = json.loads(run(served, "show runningconfiguration all"))
    path = "/etc/sonic/labtest-20250101T000000Z-abcdef.json"
    assert path in run(served, f"sudo config save -y {path}")
    run(served, "sudo config interface shutdown Ethernet8")
    run(served, "sudo config interface pfc priority Ethernet8 4 off")
    run(served, "sudo pfcwd stop")
    changed = json.loads(run(served, "show runningconfiguration all"))
    assert changed["PORT"]["Ethernet8"]["admin_status"] == "down"
    assert changed["PORT_QOS_MAP"]["Ethernet8"]["pfc_enable"] == "3"
    assert set(changed["PFC_WD"]) == {"GLOBAL"}
    assert fab.traffic.qos[LEAF].pfc == {3}  # the model itself changed
    run(served, f"sudo config reload -y {path}")
    assert json.loads(run(served, "show runningconfiguration all")) == before
    assert fab.interface(LEAF, "Ethernet8").admin_up is True
    missing = served.cli().run("sudo config reload -y /etc/sonic/nope.json")
    assert missing.exit_status == 1 and "does not exist" in missing.stderr


def test_pfcwd_start_sets_the_watchdog(fresh) -> None:
    fab, served = fresh
    run(served, "sudo pfcwd stop")
    assert p.parse_pfcwd_config(run(served, "show pfcwd config")) == {}
    assert {s.status for s in p.parse_pfcwd_stats(run(served, "show pfcwd stats")).values()} \
        == {None}  # N/A while stopped
    run(served, "sudo pfcwd start --action forward --restoration-time 300 all 250")
    config = p.parse_pfcwd_config(run(served, "show pfcwd config"))
    assert (config["Ethernet8"].action, config["Ethernet8"].detection_time_ms,
            config["Ethernet8"].restoration_time_ms) == ("forward", 250, 300)
    assert fab.traffic.qos[LEAF].pfcwd is True


def test_sonic_clear_counters_sets_a_baseline(fresh) -> None:
    fab, served = fresh
    assert run(served, "sonic-clear counters").strip() == "Cleared counters"
    cleared = p.parse_interface_counters(run(served, "show interfaces counters"))
    assert cleared["Ethernet0"].rx_packets == 0
    fab.advance(60.0)  # two more LLDP frames
    assert p.parse_interface_counters(run(served, "show interfaces counters"))[
        "Ethernet0"].rx_packets == 2
    assert fab.counters(LEAF, "Ethernet0").rx_packets > 2  # the model itself is untouched


def test_prbs_run_reads_like_the_sonic_prbs_cli(fresh) -> None:
    fab, served = fresh
    run(served, "sudo config interface prbs Ethernet0 enable --mode both --pattern PRBS31")
    fab.prbs_start("spine1", "Ethernet1/1", "PRBS31", checker=False)  # the far end generates
    fab.advance(10.0)
    running = run(served, "show interfaces prbs status -i Ethernet0")
    assert p.parse_prbs_status(running) == {"Ethernet0": []}
    assert running.splitlines()[2] == "Note: No PRBS result data available"
    run(served, "sudo config interface prbs Ethernet0 disable")
    done = run(served, "show interfaces prbs status -i Ethernet0")
    real = h.sample("sonic", "prbs_status__mgmt25213_ethernet128")
    assert h.table_headers(done) == h.table_headers(real)
    header = r"Interface: Ethernet0 \| Mode: both \| Pattern: PRBS31 \| Status: Completed"
    assert re.match(header + r" \| Duration: 00:00:10$", done.splitlines()[0])
    lanes = p.parse_prbs_status(done)["Ethernet0"]
    model = fab.prbs_read(LEAF, "Ethernet0")
    assert [(r.lane, r.locked, r.errors) for r in lanes] == [
        (m.lane, True, m.errors) for m in model]


def test_reboot_goes_silent_then_comes_back_fresh(fresh) -> None:
    fab, served = fresh
    uptime = p.parse_version(run(served, "show version")).uptime_s
    run(served, "sudo config interface shutdown Ethernet8")  # not saved: gone after the boot
    denied = served.cli().run("reboot")
    assert denied.exit_status == 1 and fab.reachable(LEAF)
    run(served, "sudo reboot")
    assert _until(lambda: not fab.reachable(LEAF), 2.0), "never went down"
    assert _until(lambda: fab.reachable(LEAF), 3.0), "never came back"
    assert p.parse_version(run(served, "show version")).uptime_s < uptime
    assert fab.interface(LEAF, "Ethernet8").admin_up is True


def _until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


# --- end to end: SSH into the emulated lab, and the real driver -----------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = EmulatedLab(h.testbed(reboot_down_s=0.5, reboot_poll_s=0.2),
                      workdir=tmp_path_factory.mktemp("lab"))
    emulated = lab.start()
    yield lab, emulated
    lab.stop()


def test_ssh_exec_and_shell_answer_in_sonic_format(lab) -> None:
    _, tb = lab
    device = tb.devices[LEAF]
    with SshTransport(LEAF, device.address, device.ssh) as ssh:
        result = ssh.exec("show interfaces status")
        assert result.exit_status == 0
        assert p.parse_interfaces_status(result.stdout)["Ethernet0"].oper_up is True
        refused = ssh.exec("show nonsense")
        assert refused.exit_status == 2 and "No such command" in refused.stderr
        with ssh.shell() as shell:
            assert shell.prompt == "admin@leaf1:~$ "
            assert "Software for Open Networking in the Cloud" in shell.banner
            lldp = p.parse_lldp_table(shell.send("show lldp table"))
            assert lldp["Ethernet8"].remote_port == "Ethernet2/1"


def test_a_rebooting_switch_refuses_connections_and_holds_no_clock(tmp_path) -> None:
    # a reboot is dark the way a box whose sshd is down is: a client fails at once, so
    # no one waits on a wall-clock timeout and the elastic clock may skip the boot
    emulated = EmulatedLab(h.testbed(reboot_down_s=0.5), workdir=tmp_path)
    tb = emulated.start()
    try:
        _reboot_refuses(emulated, tb)
    finally:
        emulated.stop()


def _reboot_refuses(emulated, tb) -> None:
    device = tb.devices[LEAF]
    with SshTransport(LEAF, device.address, device.ssh) as ssh:
        assert ssh.exec("sudo reboot").exit_status == 0
    assert _until(lambda: LEAF in emulated.fabric.refusing(), 2.0), "never went dark"
    assert not emulated.fabric.clock.held
    assert _until(lambda: emulated._devices[LEAF].ssh.mode == "refuse", 1.0)
    with pytest.raises(TransportError) as refused:
        SshTransport(LEAF, device.address, device.ssh).connect()
    assert not isinstance(refused.value, TransportTimeout), refused.value
    assert _until(lambda: emulated.fabric.reachable(LEAF), 5.0), "never came back"
    assert LEAF not in emulated.fabric.refusing()
    assert _until(lambda: emulated._devices[LEAF].ssh.mode == "normal", 1.0)


def test_sonic_driver_runs_unchanged_against_the_emulator(lab) -> None:
    driver_module = pytest.importorskip("labtest.drivers.sonic.driver")
    _, tb = lab
    switch = driver_module.SonicSwitch(LEAF, tb.devices[LEAF], tb)
    try:
        assert switch.facts().serial.startswith("EMU")
        assert switch.interfaces()["Ethernet0"].oper_up is True
        assert switch.counters()["Ethernet0"].rx_packets is not None
        assert switch.pfc_counters()["Ethernet8"].rx == [0] * 8
        queues = switch.queue_counters()["Ethernet0"].queues
        assert queues[3].ecn_marked_packets == 0 and queues[3].tx_packets is not None
        assert "Ethernet0:3" in switch.pfc_watchdog()
        assert switch.fec_stats()["Ethernet0"].corrected_cw is not None
        assert len(switch.fec_histogram("Ethernet0").bins) == 16
        assert switch.transceivers()["Ethernet0"].lanes[0].rx_power_dbm > -5
        assert switch.lldp_neighbors()["Ethernet0"].remote_system == "spine1"
        token = switch.snapshot()
        switch.set_admin("Ethernet8", False)
        assert switch.interfaces()["Ethernet8"].admin_up is False
        switch.restore(token)
        assert switch.interfaces()["Ethernet8"].admin_up is True
        uptime = switch.facts().uptime_s
        switch.reboot(timeout_s=10.0)
        assert switch.facts().uptime_s < uptime
    finally:
        switch.close()
