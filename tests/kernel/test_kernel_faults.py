"""Real faults on the kernel lab, and the traffic generator's loss duration against the
kernel's own record of when the route changed (``ip -ts monitor route``).

A silent drop (nft netdev ingress on both ends of a leaf-spine link) leaves the link up;
only BFD notices, BGP withdraws, zebra changes the kernel route. The outage of a flow that
crossed the link runs from the drop to that route change; the TG must measure it within
10 % (plus two frame intervals and its own sender lag, which shift frames across the edges).

Every wait is on an event with a bound, never a sleep: the route monitor is confirmed
listening (it prints a sentinel route the test adds), the test then waits for the route
change itself and for frames after it. (It used to wait for one probe flow's route to
move and then 0.5 s: when the ECMP hash had put that flow on the other uplink, it stopped
the monitor before a 5 x 200 ms BFD had even detected the drop, and the capture was empty.)
The probe flows that do not cross the link are the control: their loss would be the host's.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB, POLL_S, poll

from labtest import netns as ns
from labtest.capabilities.traffic import TrafficConfig, TrafficGenerator
from labtest.emulation.kernel import KernelLab
from labtest.emulation.kernel.faults import inject
from labtest.fixtures.tg_probes import probe_config, probe_flow_name, tg_ports
from labtest.lab import Lab
from labtest.testbed import load_testbed

pytestmark = [pytest.mark.netns, NEEDS_KERNEL_LAB]

RATE_PPS = 2000  # per flow: 0.5 ms resolution
FLOWS = 8
TOLERANCE = 0.10  # the acceptance: within 10 % of the kernel's truth
_STAMP = re.compile(r"^\[(?P<ts>[0-9T:.\-]+)\]\s+(?P<rest>.*)$")
CONTROL_MS = 20.0  # a flow that never crossed the link may lose this much (a route replace)
ROUTE_CHANGE_S = 15.0  # bound on BFD detecting the drop and zebra changing the route
SENTINEL = "192.0.2.1"  # TEST-NET-1, in a table no daemon reads: the monitor's start mark
SENTINEL_TABLE = "4242"


@pytest.fixture
def fresh_lab() -> Iterator[tuple[KernelLab, Lab]]:
    """A lab per test: faults here change timers and cables."""
    kernel = KernelLab(load_testbed(KERNEL_TESTBED))
    devices = Lab(kernel.start())
    try:
        yield kernel, devices
    finally:
        devices.close()
        kernel.stop()
    assert kernel.leftovers() == []


def _sh(kernel: KernelLab, node: str, *argv: str) -> str:
    netns = kernel.plan.nodes[node].netns
    return subprocess.run(
        ["ip", "netns", "exec", netns, *argv],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout


def _egress(kernel: KernelLab, dst: str, src: str, sport: int) -> str:
    """The leaf1 port a probe flow leaves by (the kernel's own ECMP choice)."""
    out = _sh(
        kernel,
        "leaf1",
        "ip",
        "route",
        "get",
        dst,
        "from",
        src,
        "iif",
        "Ethernet32",
        "ipproto",
        "udp",
        "sport",
        str(sport),
        "dport",
        "5001",
    )
    return out.split(" dev ")[1].split()[0]


class _RouteMonitor:
    """``ip -ts monitor route`` in one namespace, read line by line as it prints.

    ``ip monitor`` prints nothing when it starts, so ``confirm_started`` adds a sentinel
    route and returns once the monitor has printed it: no later change can be missed.
    """

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._proc = subprocess.Popen(
            ["ip", "-n", netns, "-ts", "monitor", "route"], stdout=subprocess.PIPE, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()

    def wait_for(self, wanted: Callable[[str], bool], timeout_s: float) -> str | None:
        """The first line so far or within ``timeout_s`` that ``wanted`` accepts."""
        deadline = time.monotonic() + timeout_s
        with self._new:
            while True:
                hit = next((line for line in self.lines if wanted(line)), None)
                left = deadline - time.monotonic()
                if hit is not None or left <= 0:
                    return hit
                self._new.wait(left)

    def confirm_started(self, timeout_s: float = 10.0) -> None:
        """Add and delete the sentinel until the monitor prints it: a change made before
        it has subscribed to the kernel's route events is never printed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for verb in ("add", "del"):
                self._sentinel(verb)
                if self.wait_for(lambda line: SENTINEL in line, POLL_S) is not None:
                    if verb == "add":
                        self._sentinel("del")
                    return
        pytest.fail(f"ip monitor printed no sentinel route within {timeout_s} s")

    def _sentinel(self, verb: str) -> None:
        ns.ip("route", verb, "blackhole", SENTINEL, "table", SENTINEL_TABLE, netns=self.netns)

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)
        self._reader.join(10)


def _stamp(line: str) -> float | None:
    """When ``ip -ts`` printed ``line`` (epoch seconds)."""
    m = _STAMP.match(line)
    return datetime.fromisoformat(m["ts"]).timestamp() if m else None


def _bfd_timers_agree(kernel: KernelLab, target: str, mult: int, interval_ms: int) -> bool:
    """Both ends of the link run ``mult`` x ``interval_ms`` and hear the peer say so."""
    device, port = target.split(":")
    peer = kernel.testbed.peer(device, port)
    assert peer is not None
    want = {"status": "up", "detect-multiplier": mult, "remote-detect-multiplier": mult}
    for side in ("", "remote-"):
        want |= {f"{side}receive-interval": interval_ms, f"{side}transmit-interval": interval_ms}
    for here, there, there_port in ((device, peer.device, peer.port), (peer.device, device, port)):
        ip = kernel.plan.nodes[there].ports[there_port].split("/")[0]
        rows = [r for r in json.loads(kernel.vtysh(here, "show bfd peers json")) if r["peer"] == ip]
        if not rows or any(rows[0].get(k) != v for k, v in want.items()):
            return False
    return True


def test_silent_drop_is_seen_by_bfd_only(fresh_lab: tuple[KernelLab, Lab]) -> None:
    kernel, lab = fresh_lab
    leaf1 = lab.device("leaf1")
    spine1_ip = kernel.plan.nodes["spine1"].ports["Ethernet0"].split("/")[0]
    inject(kernel, "silent_drop", "leaf1:Ethernet0")

    def bfd_down() -> bool:
        """leaf1's BFD session to spine1 goes down"""
        return leaf1.bfd_peers()[spine1_ip].status == "down"

    poll(bfd_down)
    assert leaf1.interfaces()["Ethernet0"].oper_up is True  # the link itself looks fine
    assert leaf1.bgp_peers()[spine1_ip].state != "Established"
    # packet sockets see frames before the ingress hook drops them: LLDP still hears
    assert leaf1.lldp_neighbors()["Ethernet0"].remote_system == "spine1"


def _tx_rx(kernel: KernelLab, device: str, port: str) -> tuple[int, int]:
    tx, rx = (int(_sh(kernel, device, "cat", f"/sys/class/net/{port}/statistics/{k}_packets"))
              for k in ("tx", "rx"))  # fmt: skip
    return tx, rx


def test_a_lossy_link_loses_on_the_wire_sent_but_never_received(
    fresh_lab: tuple[KernelLab, Lab],
) -> None:
    """Kernel campaign 87970119: nft's drop at the receiving port's ingress counted the frame
    received there, so the paths suite saw the loss one hop on and named the next link. The
    wire drops between the ends: the sender counts what the receiver never gets."""
    kernel, _lab = fresh_lab
    undo = inject(kernel, "lossy_link", "leaf1:Ethernet0", loss=0.5, direction="ab")
    wire = f"{kernel.prefix}wire0"
    assert wire in ns.list_netns()
    spine1_ip = kernel.plan.nodes["spine1"].ports["Ethernet0"].split("/")[0]

    def resolved() -> bool:
        """leaf1 knows spine1's MAC across the lossy wire (else sends wait on ARP)"""
        _datagrams(kernel, "leaf1", spine1_ip, 1)
        seen = _sh(kernel, "leaf1", "ip", "neigh", "show", spine1_ip, "dev", "Ethernet0")
        return any(state in seen for state in ("REACHABLE", "STALE", "DELAY", "PROBE"))

    poll(resolved, 20)
    tx0, _ = _tx_rx(kernel, "leaf1", "Ethernet0")
    _, rx0 = _tx_rx(kernel, "spine1", "Ethernet0")
    sent = 400
    _datagrams(kernel, "leaf1", spine1_ip, sent)
    tx1, _ = _tx_rx(kernel, "leaf1", "Ethernet0")
    _, rx1 = _tx_rx(kernel, "spine1", "Ethernet0")
    out, got = tx1 - tx0, rx1 - rx0
    assert out >= sent, (out, got)  # the sender counted every request (and BFD, BGP)
    assert 0.3 < 1 - got / out < 0.7, (out, got)  # half of it never arrived

    def far_end(state: str) -> Callable[[], bool]:
        def check() -> bool:
            """spine1:Ethernet0's carrier follows leaf1's end across the wire"""
            return f"state {state}" in _sh(kernel, "spine1", "ip", "link", "show", "Ethernet0")
        return check

    # a cable's far end loses light when this end is shut (the failover suite waited its
    # whole bound for it on every event at a wired link)
    _sh(kernel, "leaf1", "ip", "link", "set", "Ethernet0", "down")
    poll(far_end("DOWN"), 5)
    _sh(kernel, "leaf1", "ip", "link", "set", "Ethernet0", "up")
    poll(far_end("UP"), 5)
    undo()
    assert wire not in ns.list_netns()

    def direct() -> bool:
        """a burst leaf1 sends spine1 all arrives (cabled direct again, re-addressed)"""
        tx0, _ = _tx_rx(kernel, "leaf1", "Ethernet0")
        _, rx0 = _tx_rx(kernel, "spine1", "Ethernet0")
        _datagrams(kernel, "leaf1", spine1_ip, 50)
        tx1, _ = _tx_rx(kernel, "leaf1", "Ethernet0")
        _, rx1 = _tx_rx(kernel, "spine1", "Ethernet0")
        return tx1 - tx0 >= 50 and rx1 - rx0 >= tx1 - tx0

    poll(direct, 10)


def _datagrams(kernel: KernelLab, device: str, to_ip: str, n: int) -> None:
    """``n`` UDP datagrams to the discard port, 2 ms apart, from inside ``device``."""
    import socket

    def send() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(n):
                s.sendto(b"x" * 64, (to_ip, 9))
                time.sleep(0.002)

    ns.call_in_netns(kernel.plan.nodes[device].netns, send, timeout_s=30)


def test_a_killed_bgpd_takes_its_sessions_down_and_comes_back_on_undo(
        fresh_lab: tuple[KernelLab, Lab]) -> None:
    """Issue 39: bgpd killed on a spine. Its neighbours' sessions leave Established, the
    spine's own management plane still answers and says why ("bgpd is not running", past
    vtysh's harmless first line); undone, the daemon is back and the sessions with it."""
    from labtest.errors import CommandFailed

    kernel, lab = fresh_lab
    leaf1 = lab.device("leaf1")
    spine2_ip = kernel.plan.nodes["spine2"].ports["Ethernet0"].split("/")[0]
    undo = inject(kernel, "daemon_down", "spine2")

    def down() -> bool:
        """leaf1's session to spine2 leaves Established"""
        peer = leaf1.bgp_peers().get(spine2_ip)
        return peer is not None and peer.state != "Established"

    poll(down, 20)
    with pytest.raises(CommandFailed) as info:
        lab.device("spine2").bgp_peers()
    assert "bgpd is not running" in str(info.value)
    undo()

    def back() -> bool:
        """leaf1's session to spine2 is Established again"""
        peer = leaf1.bgp_peers().get(spine2_ip)
        return peer is not None and peer.state == "Established"

    poll(back, 30)


def test_an_mtu_mismatch_drops_what_is_larger_at_one_end_only(
        fresh_lab: tuple[KernelLab, Lab]) -> None:
    """Issue 39: ``ip link set mtu`` at one end. A datagram larger than it, DF set, does not
    leave that port; a smaller one does, and the far end keeps the plan's MTU."""
    kernel, _lab = fresh_lab
    spine1_ip = kernel.plan.nodes["spine1"].ports["Ethernet0"].split("/")[0]
    undo = inject(kernel, "mtu_mismatch", "leaf1:Ethernet0", mtu=1400)
    assert "mtu 1400 " in _sh(kernel, "leaf1", "ip", "link", "show", "Ethernet0")
    assert "mtu 1400 " not in _sh(kernel, "spine1", "ip", "link", "show", "Ethernet0")

    def fits(size: int) -> bool:
        """a UDP datagram of ``size`` bytes, DF set, leaves leaf1 towards spine1"""
        import errno
        import socket

        def send() -> bool:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                # <linux/in.h>: IP_MTU_DISCOVER 10, IP_PMTUDISC_DO 2 (Python names neither)
                sock.setsockopt(socket.IPPROTO_IP, 10, 2)
                try:
                    sock.sendto(b"x" * size, (spine1_ip, 9))
                except OSError as exc:
                    if exc.errno != errno.EMSGSIZE:
                        raise
                    return False
                return True

        return bool(ns.call_in_netns(kernel.plan.nodes["leaf1"].netns, send, timeout_s=10))

    assert fits(1300)
    assert not fits(1472)  # 1500 bytes of IP
    undo()
    assert "mtu 1400 " not in _sh(kernel, "leaf1", "ip", "link", "show", "Ethernet0")
    assert fits(1472)


def test_rate_limit_and_slow_bfd_are_applied(fresh_lab: tuple[KernelLab, Lab]) -> None:
    kernel, lab = fresh_lab
    inject(kernel, "straggler_link", "leaf1:Ethernet4", rate_mbit=50)
    for node in ("leaf1", "spine2"):
        dev = "Ethernet0" if node == "spine2" else "Ethernet4"
        assert "qdisc htb 1: root" in _sh(kernel, node, "tc", "qdisc", "show", "dev", dev)
        classes = _sh(kernel, node, "tc", "class", "show", "dev", dev)
        assert "class htb 1:20" in classes and "rate 50Mbit ceil 50Mbit" in classes, classes
    inject(kernel, "slow_convergence", "leaf1:Ethernet0", detect_multiplier=5, interval_ms=300)
    leaf1 = lab.device("leaf1")
    spine1_ip = kernel.plan.nodes["spine1"].ports["Ethernet0"].split("/")[0]

    def slow() -> Any:
        """leaf1's BFD session to spine1 runs the slow timers"""
        p = leaf1.bfd_peers()[spine1_ip]
        return (p.status, p.detect_multiplier, p.receive_interval_ms) == ("up", 5, 300)

    poll(slow)
    # the link's sessions only: leaf1's session over its other uplink keeps the fast timers
    # (the shared profile, changed, had slowed every session of both switches)
    spine2_ip = kernel.plan.nodes["spine2"].ports["Ethernet0"].split("/")[0]
    other = leaf1.bfd_peers()[spine2_ip]
    assert (other.detect_multiplier, other.receive_interval_ms) == (
        kernel.plan.bfd["detect_multiplier"], kernel.plan.bfd["receive_interval_ms"]), other


@pytest.mark.wall_clock
@pytest.mark.parametrize("bfd", [None, (5, 200)], ids=["bfd-3x100ms", "slow-bfd-5x200ms"])
def test_loss_duration_matches_the_kernel_route_change(
    fresh_lab: tuple[KernelLab, Lab], bfd: tuple[int, int] | None
) -> None:
    kernel, lab = fresh_lab
    if bfd is not None:
        inject(
            kernel,
            "slow_convergence",
            "leaf1:Ethernet0",
            detect_multiplier=bfd[0],
            interval_ms=bfd[1],
        )

        def agreed() -> bool:
            """both ends of leaf1:Ethernet0 run and hear the slow BFD timers"""
            return _bfd_timers_agree(kernel, "leaf1:Ethernet0", *bfd)

        poll(agreed, 10)
    a, b = tg_ports(lab)[:2]
    tg = lab.device(a.tg)
    assert isinstance(tg, TrafficGenerator)
    cfg = probe_config(
        lab, a, b, flows_per_direction=FLOWS, frame_size_bytes=128, rate_pps=RATE_PPS
    )
    # a -> b only: the reverse flows never leave by leaf1:Ethernet0, they would only double
    # the TG's CPU, and a starved host drops frames of every flow
    outwards = [f for f in cfg.flows if f.tx_port == a.port]
    tg.set_config(TrafficConfig(ports=cfg.ports, flows=outwards))
    ips = lab.testbed.devices[a.tg].vars["ipv4"]
    crossing = [
        probe_flow_name(a, b, i)
        for i in range(FLOWS)
        if _egress(kernel, ips[b.port], ips[a.port], 49152 + i) == "Ethernet0"
    ]
    if not crossing:
        pytest.skip("ECMP put no probe flow on leaf1:Ethernet0 (hash): nothing to measure")
    network = str(ipaddress.ip_interface(kernel.plan.nodes["tg1"].ports[b.port]).network)
    monitor = _RouteMonitor(kernel.plan.nodes["leaf1"].netns)
    try:
        monitor.confirm_started()
        tg.start_traffic()

        def flowing() -> bool:
            """every probe flow delivers frames"""
            return all((m.frames_rx or 0) > RATE_PPS // 10 for m in tg.metrics())

        poll(flowing, 10)
        t0 = time.time()
        inject(kernel, "silent_drop", "leaf1:Ethernet0")
        t1 = time.time()

        def route_changed(line: str) -> bool:
            return network in line.split() and (_stamp(line) or 0.0) >= t0

        line = monitor.wait_for(route_changed, ROUTE_CHANGE_S)
        assert line is not None, (
            f"no route change for {network} within {ROUTE_CHANGE_S} s of the drop; "
            "the monitor printed:\n" + "\n".join(monitor.lines)
        )
        changed = _stamp(line) or 0.0

        def rerouted() -> bool:
            """every crossing flow's route on leaf1 now leaves by Ethernet4"""
            return all(
                _egress(kernel, ips[b.port], ips[a.port], 49152 + i) == "Ethernet4"
                for i in range(FLOWS)
                if probe_flow_name(a, b, i) in crossing
            )

        poll(rerouted, 5)
        after = {m.name: m.frames_rx or 0 for m in tg.metrics()}

        def resumed() -> bool:
            """every crossing flow delivers frames again: its outage has ended"""
            now = {m.name: m.frames_rx or 0 for m in tg.metrics()}
            return all(now[n] > after[n] + RATE_PPS // 10 for n in crossing)

        poll(resumed, 10)
        tg.stop_traffic()
        tg.wait_done(timeout_s=10)
    finally:
        monitor.stop()
    truth_low_ms, truth_high_ms = (changed - t1) * 1000, (changed - t0) * 1000
    metrics = {m.name: m for m in tg.metrics()}
    # every change of the route after the drop (a second one: the new path flapped too)
    history = [f"{(_stamp(x) or t0) - t0:+.3f} s {x}" for x in monitor.lines if route_changed(x)]
    host_loss = {
        n: m.longest_outage_ms
        for n, m in metrics.items()
        if n not in crossing and (m.longest_outage_ms or 0.0) > CONTROL_MS
    }
    assert not host_loss, (
        f"flows that never crossed leaf1:Ethernet0 lost traffic too (longest outage, ms: "
        f"{host_loss}): something other than the fault lost frames (a host starved of CPU "
        "by other work?), so the crossing flows' outage is not the fault's alone"
    )
    for name in crossing:
        m = metrics[name]
        slack_ms = 2000 / RATE_PPS + (m.tx_max_lag_us or 0) / 1000
        measured = m.longest_outage_ms or 0.0
        why = (name, measured, truth_low_ms, truth_high_ms, history)
        assert (1 - TOLERANCE) * truth_low_ms - slack_ms <= measured, why
        assert measured <= (1 + TOLERANCE) * truth_high_ms + slack_ms, why
        print(
            f"{name}: TG outage {measured:.1f} ms; kernel route changed "
            f"{truth_low_ms:.1f}-{truth_high_ms:.1f} ms after the drop"
        )
