"""The kernel lab (root, FRR, lldpd, snmpd, sshd): it builds, the frr driver reads it, and
stopping it leaves no namespace, process or file behind."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB, poll

from labtest import netns as ns
from labtest.emulation.kernel import KernelLab
from labtest.emulation.kernel.lab import BFDD_NICE, FRR_RUN
from labtest.errors import TransportError
from labtest.lab import Lab
from labtest.testbed import load_testbed

pytestmark = [pytest.mark.netns, NEEDS_KERNEL_LAB]


def test_stop_leaves_no_namespace_process_or_file() -> None:
    lab = KernelLab(load_testbed(KERNEL_TESTBED))
    lab.start()
    made = [n for n in ns.list_netns() if n.startswith(lab.prefix)]
    pids = [p.popen.pid for p in lab._procs]
    run_dirs = [FRR_RUN / n for n in made if (FRR_RUN / n).exists()]
    assert len(made) == 7 and len(run_dirs) == 4 and len(pids) >= 7 * 2
    assert lab.leftovers() != []  # the check sees a running lab
    # bfdd runs at BFDD_NICE, its threads too (3 x 100 ms must not starve behind a loaded
    # machine's other work); the other daemons at the test's own
    own = os.nice(0)
    for proc in lab._procs:
        nice = {int(_stat(t / "stat")[16]) for t in Path(f"/proc/{proc.popen.pid}/task").iterdir()}
        want = max(own + BFDD_NICE, -20) if proc.what == "bfdd" else own
        assert nice == {want}, (proc.what, nice)
    stray = subprocess.Popen(  # like a command left running by an SSH session
        ["ip", "netns", "exec", made[0], "sleep", "300"], start_new_session=True
    )
    pids.append(stray.pid)
    lab.stop()
    stray.wait(5)
    assert lab.leftovers() == []
    assert not [n for n in ns.list_netns() if n.startswith(lab.prefix)]
    assert not [pid for pid in pids if _alive(pid)]
    assert not [d for d in [*run_dirs, lab.workdir] if d.exists()]


def _stat(path: Path) -> list[str]:
    """A /proc stat line's fields after the command name (state first, niceness 17th)."""
    return path.read_text().rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    try:
        state = _stat(Path(f"/proc/{pid}/stat"))[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def lab(kernel_lab: tuple[KernelLab, Any]) -> Any:
    devices = Lab(kernel_lab[1])
    yield devices
    devices.close()


def test_switch_facts_interfaces_and_routing(lab: Lab) -> None:
    for name in ("spine1", "spine2", "leaf1", "leaf2"):
        sw = lab.device(name)
        facts = sw.facts()
        assert (facts.vendor, facts.hostname) == ("FRRouting", name)
        ifs = sw.interfaces()
        planned = [lk.ends for lk in lab.testbed.links_of(name)]
        for a, b in planned:
            port = a.port if a.device == name else b.port
            assert (ifs[port].oper_up, ifs[port].speed_gbps) == (True, 10.0)
        assert {p.state for p in sw.bgp_peers().values()} == {"Established"}
        bfd = sw.bfd_peers()
        assert {(p.status, p.detect_multiplier) for p in bfd.values()} == {("up", 3)}


def test_lldp_matches_the_cabling_plan_at_every_switch_end(lab: Lab) -> None:
    checked = 0
    for link in lab.testbed.links:
        for here, there in (link.ends, link.ends[::-1]):
            if lab.testbed.devices[here.device].driver != "frr":
                continue
            n = lab.device(here.device).lldp_neighbors()[here.port]
            assert (n.remote_system, n.remote_port) == (there.device, there.port)
            checked += 1
    assert checked == 12


def _udp(kernel: KernelLab, src: str, dst_ip: str, count: int) -> None:
    """``count`` UDP datagrams from ``src``'s namespace to ``dst_ip`` (discard port)."""

    def send() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(count):
                s.sendto(i.to_bytes(4, "big"), (dst_ip, 9))

    ns.call_in_netns(kernel.plan.nodes[src].netns, send, timeout_s=10)


def test_kernel_and_snmp_counters_count_host_traffic(
    lab: Lab, kernel_lab: tuple[KernelLab, Any]
) -> None:
    kernel = kernel_lab[0]
    leaf1 = lab.device("leaf1")
    host2_ip = kernel.plan.nodes["host2"].ports["eth0"].split("/")[0]
    before = leaf1.counters()["Ethernet16"]
    _udp(kernel, "host1", host2_ip, 50)
    after = leaf1.counters()["Ethernet16"]
    assert after.rx_packets - before.rx_packets >= 50  # the datagrams from host1
    # SNMP: net-snmp's IF-MIB cache; the driver waits it out, so the agent's count lies
    # between the kernel's just before and just after the SNMP read
    _udp(kernel, "host1", host2_ip, 50)
    low = leaf1.counters()["Ethernet16"].rx_packets
    snmp = leaf1.snmp_counters()["Ethernet16"].rx_packets
    high = leaf1.counters()["Ethernet16"].rx_packets
    assert low <= snmp <= high


def test_shut_brings_bgp_down_and_restore_brings_the_config_back(lab: Lab) -> None:
    leaf1 = lab.device("leaf1")
    saved = leaf1.running_config()
    token = leaf1.snapshot()
    leaf1.set_admin("Ethernet0", False)
    try:
        assert leaf1.interfaces()["Ethernet0"].admin_up is False

        def session_down() -> bool:
            """leaf1's session to spine1 leaves Established"""
            return any(p.state != "Established" for p in leaf1.bgp_peers().values())

        poll(session_down)
    finally:
        leaf1.restore(token)
    assert leaf1.running_config() == saved
    assert leaf1.interfaces()["Ethernet0"].admin_up is True

    def all_up() -> bool:
        """leaf1's sessions Established and BFD up again"""
        return {p.state for p in leaf1.bgp_peers().values()} == {"Established"} and {
            p.status for p in leaf1.bfd_peers().values()
        } == {"up"}

    poll(all_up)


def test_a_stopped_sshd_is_a_transport_error_and_comes_back(
    lab: Lab, kernel_lab: tuple[KernelLab, Any]
) -> None:
    from labtest.emulation.kernel.faults import inject

    kernel = kernel_lab[0]
    spine2 = lab.device("spine2")
    spine2.close()
    undo = inject(kernel, "unreachable_device", "spine2")
    try:
        with pytest.raises(TransportError):
            spine2.facts()
    finally:
        spine2.close()
        undo()
    assert spine2.facts().hostname == "spine2"


@pytest.mark.parametrize("version", ["2c", "3"])
def test_snmp_agent_serves_if_mib_and_lldp_mib_over_agentx(
    lab: Lab, kernel_lab: tuple[KernelLab, Any], version: str
) -> None:
    from labtest.drivers.snmp_switch.driver import SnmpSwitch

    testbed = kernel_lab[1]
    device = testbed.devices["leaf1"]
    assert device.snmp is not None
    device = device.model_copy(update={"snmp": device.snmp.model_copy(update={"version": version})})
    def lldp_converged() -> bool:
        """leaf1's lldpd knows all 4 of its neighbours (a fresh lab takes a few seconds)."""
        return len(lab.device("leaf1").lldp_neighbors()) == 4

    poll(lldp_converged)
    agent = SnmpSwitch("leaf1", device, testbed)
    try:
        assert agent.facts().hostname == "leaf1"
        by_snmp = {p: (n.remote_system, n.remote_port) for p, n in agent.lldp_neighbors().items()}
        ifs = agent.interfaces()
    finally:
        agent.close()
    by_cli = {
        p: (n.remote_system, n.remote_port) for p, n in lab.device("leaf1").lldp_neighbors().items()
    }
    assert by_snmp == by_cli and len(by_cli) == 4
    assert {ifs[p].mtu_bytes for p in by_cli} == {9100}
