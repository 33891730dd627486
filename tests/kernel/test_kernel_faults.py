"""Real faults on the kernel lab, and the traffic generator's loss duration against the
kernel's own record of when the route changed (``ip -ts monitor route``).

A silent drop (nft netdev ingress on both ends of a leaf-spine link) leaves the link up;
only BFD notices, BGP withdraws, zebra changes the kernel route. The outage of a flow that
crossed the link runs from the drop to that route change; the TG must measure it within
10 % (plus two frame intervals and its own sender lag, which shift frames across the edges).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB, poll

from labtest.capabilities.traffic import TrafficGenerator
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
        time.sleep(1.0)  # both ends agree on the new timers (BFD poll sequence)
    a, b = tg_ports(lab)[:2]
    tg = lab.device(a.tg)
    assert isinstance(tg, TrafficGenerator)
    cfg = probe_config(
        lab, a, b, flows_per_direction=FLOWS, frame_size_bytes=128, rate_pps=RATE_PPS
    )
    tg.set_config(cfg)
    ips = lab.testbed.devices[a.tg].vars["ipv4"]
    crossing = [
        probe_flow_name(a, b, i)
        for i in range(FLOWS)
        if _egress(kernel, ips[b.port], ips[a.port], 49152 + i) == "Ethernet0"
    ]
    if not crossing:
        pytest.skip("ECMP put no probe flow on leaf1:Ethernet0 (hash): nothing to measure")
    dst_prefix = kernel.plan.nodes["tg1"].ports[b.port].rsplit(".", 1)[0]
    monitor = subprocess.Popen(
        ["ip", "-n", kernel.plan.nodes["leaf1"].netns, "-ts", "monitor", "route"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        tg.start_traffic()

        def flowing() -> bool:
            """every probe flow delivers frames"""
            return all((m.frames_rx or 0) > RATE_PPS // 10 for m in tg.metrics())

        poll(flowing, 10)
        t0 = time.time()
        inject(kernel, "silent_drop", "leaf1:Ethernet0")
        t1 = time.time()

        def rerouted() -> bool:
            """leaf1's route to the far TG port no longer uses Ethernet0"""
            return _egress(kernel, ips[b.port], ips[a.port], 49152) == "Ethernet4"

        poll(rerouted, 15)
        time.sleep(0.5)  # frames after the outage prove it ended (bounded, no polling target)
        tg.stop_traffic()
        tg.wait_done(timeout_s=10)
    finally:
        monitor.terminate()
        out = monitor.communicate(timeout=10)[0]
    changes = [
        datetime.fromisoformat(m["ts"]).timestamp()
        for line in out.splitlines()
        if (m := _STAMP.match(line)) and dst_prefix in m["rest"]
    ]
    changed = [t for t in changes if t >= t0]
    assert changed, f"no route change for {dst_prefix} seen:\n{out}"
    truth_low_ms, truth_high_ms = (changed[0] - t1) * 1000, (changed[0] - t0) * 1000
    metrics = {m.name: m for m in tg.metrics()}
    for name in crossing:
        m = metrics[name]
        slack_ms = 2000 / RATE_PPS + (m.tx_max_lag_us or 0) / 1000
        measured = m.longest_outage_ms or 0.0
        assert (1 - TOLERANCE) * truth_low_ms - slack_ms <= measured, (name, measured, truth_low_ms)
        assert measured <= (1 + TOLERANCE) * truth_high_ms + slack_ms, (
            name,
            measured,
            truth_high_ms,
        )
        print(
            f"{name}: TG outage {measured:.1f} ms; kernel route changed "
            f"{truth_low_ms:.1f}-{truth_high_ms:.1f} ms after the drop"
        )
