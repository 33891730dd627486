"""Real faults on a running kernel lab, each named as in the fault catalogue where it has one.

Every fault is done with the tool an engineer would use (``ip``, ``nft``, ``tc``,
``vtysh``, killing a daemon) and returns how to undo it. ``target`` is a testbed
endpoint ``device:port`` (a link fault, applied at that end and its peer where the
fault is on the cable) or a device name.

=====================  ===========================================================
kind                   what happens
=====================  ===========================================================
link_down              ``ip link set PORT down`` at both ends (carrier loss)
silent_drop            nft netdev ingress drop at both ends: the link stays up,
                       only BFD notices (the catalogue's blackhole)
lossy_link             the link re-cabled through a wire namespace whose nft drops a
                       random fraction (``loss``) of what crosses it, one or both ways
                       (``direction``), of every protocol or one (``proto``: udp, tcp),
                       BFD spared or not (``spare_bfd``): sent, never received
ecmp_blackhole         as ``lossy_link``'s wire, but the dropped frames are the UDP
                       flows whose 5-tuple hashes (``jhash``, ``salt``) into
                       ``flow_fraction``, one way (``direction``); BFD spared
miswired               the ``b`` ends of the target link and ``other`` swap places
                       (veth pairs re-created crossed between namespaces)
slow_convergence       BFD timers raised (``params``: detect_multiplier,
                       interval_ms) on the target link's sessions, at both ends
straggler_link         ``tc`` HTB rate on IP data at both ends (``rate_mbit``)
unreachable_device     the device's sshd and snmpd are stopped
daemon_down            a switch's routing daemon (``daemon``: bgpd or bfdd) is killed;
                       its management plane still answers
mtu_mismatch           ``ip link set PORT mtu N`` at the target end only (``mtu``)
=====================  ===========================================================
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from labtest import netns as ns
from labtest.emulation.kernel import plan as pl
from labtest.emulation.kernel.plan import WIRE_A, WIRE_B
from labtest.testbed.faultcheck import TargetType, param_problems
from labtest.testbed.model import Testbed


class KernelLab(Protocol):
    """What a fault does to a running kernel lab (``labtest.emulation.kernel.lab.KernelLab``
    is one; the lab injects its faults, so this module does not import it)."""

    testbed: Testbed
    plan: pl.LabPlan

    def veth_of(self, link: str) -> pl.VethPlan: ...

    def through_wire(self, link: str) -> str: ...

    def direct(self, link: str, wire: str) -> None: ...

    def vtysh(self, name: str, *commands: str, timeout_s: float = 10.0) -> str: ...

    def stop_daemon(self, name: str, what: str) -> None: ...

    def start_snmpd(self, name: str) -> None: ...

    def start_sshd(self, name: str) -> None: ...

    def start_frr_daemon(self, name: str, daemon: str) -> None: ...

Undo = Callable[[], None]
NFT_TABLE = "labtest_fault"


def _ends(lab: KernelLab, target: str) -> list[tuple[str, str]]:
    """(netns, port) of both ends of the link at ``target`` ("device:port", or a link
    "a--b", whose ``a`` end is meant)."""
    device, _, port = target.partition("--")[0].partition(":")
    peer = lab.testbed.peer(device, port)
    if peer is None:
        raise ValueError(f"{target} is not cabled in the testbed")
    return [(lab.plan.nodes[d].netns, p) for d, p in ((device, port), (peer.device, peer.port))]


def link_down(lab: KernelLab, target: str) -> Undo:
    ends = _ends(lab, target)
    for netns, port in ends:
        ns.ip("link", "set", port, "down", netns=netns)

    def undo() -> None:
        for netns, port in ends:
            ns.ip("link", "set", port, "up", netns=netns)

    return undo


def silent_drop(lab: KernelLab, target: str) -> Undo:
    ends = _ends(lab, target)
    for netns, port in ends:
        rules = (
            f"add table netdev {NFT_TABLE}\n"
            f"add chain netdev {NFT_TABLE} drop_{port} {{ type filter hook ingress device "
            f'"{port}" priority 0; policy accept; }}\n'
            f"add rule netdev {NFT_TABLE} drop_{port} drop\n"
        )
        _nft(netns, rules)

    def undo() -> None:
        for netns, _port in ends:
            ns.run_in_netns(netns, ["nft", "delete", "table", "netdev", NFT_TABLE], check=False)

    return undo


def lossy_link(lab: KernelLab, target: str, loss: float = 0.3, direction: str = "both",
               proto: str = "any", spare_bfd: bool = False) -> Undo:
    """The link is re-cabled through a wire (``KernelLab.through_wire``) whose ``nft``
    forwards each way and drops ``loss`` of the frames (``numgen random``): ``ab`` what the
    target's end sends, ``ba`` what it receives. The sender counts what the wire drops and
    the receiver never sees it, as on a cable that corrupts frames; a drop at the receiving
    port's ingress would count them received there, and the loss would show one hop on."""
    match = "" if proto == "any" else f"ip protocol {proto} "
    if spare_bfd:  # BFD control and echo (RFC 5881 s.4) pass: sessions stay up
        match += "udp dport != { 3784, 3785 } "
    return _through_dropping_wire(lab, target, direction, match + _share("numgen random", loss))


def ecmp_blackhole(lab: KernelLab, target: str, flow_fraction: float = 0.5,
                   direction: str = "ab", salt: int = 0) -> Undo:
    """The link, as one ECMP member, drops every UDP flow whose 5-tuple hashes into
    ``flow_fraction`` of the hash space (``nft jhash``, seeded by ``salt``), one way, in a
    wire (as ``lossy_link``): a corrupted forwarding entry blackholes some flows, the
    others pass, and the control plane (BFD's UDP ports, BGP over TCP) keeps the member in
    ECMP. RoCE, iperf3 and traceroute are UDP."""
    keys = "ip saddr . ip daddr . udp sport . udp dport"
    return _through_dropping_wire(
        lab, target, direction, "ip protocol udp udp dport != { 3784, 3785 } "
        + _share(f"jhash {keys}", flow_fraction, seed=int(salt)))


def _share(draw: str, fraction: float, seed: int | None = None) -> str:
    """The nft condition true for ``fraction`` of ``draw``'s values 0-999 (``seed``: the
    hash's): none for the whole (nft refuses ``< 1000`` on a 0-999 range; the kernel lab
    would not start)."""
    thousandths = round(fraction * 1000)
    if thousandths >= 1000:
        return ""
    seeded = "" if seed is None else f" seed {seed:#x}"
    return f"{draw} mod 1000{seeded} < {thousandths}"


def _through_dropping_wire(lab: KernelLab, target: str, direction: str, drop_if: str) -> Undo:
    """Re-cable the target's link through a wire that forwards each way and drops the
    frames matching ``drop_if`` on the ``direction`` way(s) (``ab``: what the target's end
    sends)."""
    end = target.partition("--")[0]
    device, _, port = end.partition(":")
    v = lab.veth_of(end)
    # the wire's port facing the target's end receives what that end sends
    a_end = (device, port) == (v.a_device, v.a_port)
    sends_into, other = (WIRE_A, WIRE_B) if a_end else (WIRE_B, WIRE_A)
    lossy = {"ab": [sends_into], "ba": [other], "both": [WIRE_A, WIRE_B]}[direction]
    wire = lab.through_wire(end)
    try:
        rules = [f"add table netdev {NFT_TABLE}"]
        for rx, tx in ((WIRE_A, WIRE_B), (WIRE_B, WIRE_A)):
            rules.append(f"add chain netdev {NFT_TABLE} from_{rx} {{ type filter hook ingress "
                         f'device "{rx}" priority 0; policy accept; }}')
            if rx in lossy:
                rules.append(f"add rule netdev {NFT_TABLE} from_{rx} {drop_if} counter drop")
            rules.append(f'add rule netdev {NFT_TABLE} from_{rx} fwd to "{tx}"')
        _nft(wire, "\n".join(rules) + "\n")
    except BaseException:
        lab.direct(end, wire)
        raise
    return lambda: lab.direct(end, wire)


def _nft(netns: str, rules: str) -> None:
    done = subprocess.run(
        ["ip", "netns", "exec", netns, "nft", "-f", "-"],
        input=rules,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    if done.returncode != 0:
        raise ns.NetnsError(netns, f"nft: {done.stderr.strip()}")


#: the straggler's default rate: below the paths suite's load per path on the kernel lab
#: (testbeds/kernel/suite-settings.yaml: 2,000 frames/s of 512 B, 8.2 Mbit/s)
STRAGGLER_RATE_MBIT = 2.0


def straggler_link(lab: KernelLab, target: str, rate_mbit: float = STRAGGLER_RATE_MBIT) -> Undo:
    """An HTB class at ``rate_mbit`` for the link's IP data at both ends (a 50-frame
    FIFO behind it). Network control (IP precedence 6 and 7: BGP and BFD, RFC 4594
    s.3.1) and non-IP frames (ARP, LLDP) pass in an unlimited class, as a switch queues
    its control plane strictly first: the link is slow, not broken, so its sessions stay
    up and it keeps its place in ECMP. (HTB, not prio + tbf: not every kernel has
    sch_prio.)"""
    ends = _ends(lab, target)
    touched: list[tuple[str, str]] = []

    def undo() -> None:
        for netns, port in touched:  # deleting the root qdisc removes its classes and filters
            ns.run_in_netns(netns, ["tc", "qdisc", "del", "dev", port, "root"], check=False)

    try:
        for netns, port in ends:
            dev = ["dev", port]
            touched.append((netns, port))
            for argv in (
                ["qdisc", "replace", *dev, "root", "handle", "1:", "htb", "default", "10"],
                ["class", "add", *dev, "parent", "1:", "classid", "1:10", "htb",
                 "rate", "10gbit", "quantum", "60000"],
                ["class", "add", *dev, "parent", "1:", "classid", "1:20", "htb",
                 "rate", f"{rate_mbit:g}mbit", "ceil", f"{rate_mbit:g}mbit"],
                ["qdisc", "add", *dev, "parent", "1:20", "handle", "20:", "pfifo", "limit", "50"],
                ["filter", "add", *dev, "parent", "1:", "protocol", "ip", "prio", "1",
                 "u32", "match", "ip", "tos", "0xc0", "0xc0", "flowid", "1:10"],
                ["filter", "add", *dev, "parent", "1:", "protocol", "ip", "prio", "2",
                 "u32", "match", "u32", "0", "0", "flowid", "1:20"],
            ):
                ns.run_in_netns(netns, ["tc", *argv])
    except BaseException:
        undo()  # a half-built shaper must not outlive the failed injection
        raise
    return undo


#: slow_convergence's default BFD timers: 10 x 300 ms = 3 s to detect (the lab: 3 x 100 ms)
SLOW_BFD_MULTIPLIER, SLOW_BFD_INTERVAL_MS = 10, 300


def slow_convergence(
    lab: KernelLab,
    target: str,
    detect_multiplier: int = SLOW_BFD_MULTIPLIER,
    interval_ms: int = SLOW_BFD_INTERVAL_MS,
) -> Undo:
    """Slow BFD on the target link's sessions only: a ``slow`` profile on both its switches,
    taken by that link's BGP neighbour at each end. (Changing the shared ``fast`` profile
    slowed every session of both switches: the fault was theirs, not the link's.)"""
    device, _, port = target.partition("--")[0].partition(":")
    peer = lab.testbed.peer(device, port)
    if peer is None:
        raise ValueError(f"{target} is not cabled in the testbed")
    ends = [(device, port), (peer.device, peer.port)]
    node = lab.plan.nodes
    if any(node[d].kind != "switch" for d, _ in ends):
        raise ValueError(f"{target}: slow BFD needs a switch at both ends (FRR runs there)")
    neighbour = {d: next(n for n, _asn, p in node[d].neighbours if p == prt) for d, prt in ends}
    profile = [
        "bfd",
        f"profile {SLOW_PROFILE}",
        f"detect-multiplier {detect_multiplier}",
        f"receive-interval {interval_ms}",
        f"transmit-interval {interval_ms}",
        "end",
    ]
    for d, _ in ends:
        lab.vtysh(d, "configure terminal", *profile)
        lab.vtysh(d, "configure terminal", f"router bgp {node[d].asn}",
                  f"neighbor {neighbour[d]} bfd profile {SLOW_PROFILE}", "end")

    def undo() -> None:
        for d, _ in ends:
            lab.vtysh(d, "configure terminal", f"router bgp {node[d].asn}",
                      f"neighbor {neighbour[d]} bfd profile fast", "end")

    return undo


#: the profile ``slow_convergence`` gives the target link's sessions
SLOW_PROFILE = "slow"


def unreachable_device(lab: KernelLab, target: str) -> Undo:
    device = target.partition(":")[0]
    node = lab.plan.nodes[device]
    lab.stop_daemon(device, "sshd")
    if node.kind == "switch":
        lab.stop_daemon(device, "snmpd")

    def undo() -> None:
        if node.kind == "switch":
            lab.start_snmpd(device)
        lab.start_sshd(device)

    return undo


def daemon_down(lab: KernelLab, target: str, daemon: str = "bgpd") -> Undo:
    """The switch's routing daemon is killed (``pkill`` of its process group), as a crash
    would leave it: zebra withdraws its routes, its neighbours' sessions go down after
    their hold time (BFD at once for bgpd's sessions), and sshd and snmpd still answer, so
    the device is asked and says "bgpd is not running"."""
    device = target.partition(":")[0]
    lab.stop_daemon(device, daemon)
    return lambda: lab.start_frr_daemon(device, daemon)


def mtu_mismatch(lab: KernelLab, target: str, mtu: int = 1400) -> Undo:
    """One end of the link gets a smaller MTU (``ip link set PORT mtu``): a frame larger
    than it is not sent out of that port (IPv4 with DF: dropped, "fragmentation needed"
    back), and the far end, still at the plan's MTU, receives what it is sent."""
    device, _, port = target.partition("--")[0].partition(":")
    netns = lab.plan.nodes[device].netns
    ns.ip("link", "set", port, "mtu", str(mtu), netns=netns)

    def undo() -> None:
        ns.ip("link", "set", port, "mtu", str(pl.LINK_MTU_BYTES), netns=netns)

    return undo


def miswired(lab: KernelLab, target: str, other: str) -> Undo:
    """The far (``b``) ends of the link at ``target`` and the link at ``other`` swap
    places: both veth pairs are deleted and re-created crossed, as a technician would
    re-plug two cables."""
    (n1, p1), (m1, q1) = _ends(lab, target)
    (n2, p2), (m2, q2) = _ends(lab, other)

    def cable(x: tuple[str, str, str, str], y: tuple[str, str, str, str]) -> None:
        for netns, port, _far_ns, _far_port in (x, y):
            ns.ip("link", "del", port, netns=netns)  # deletes the veth pair (both ends)
        for netns, port, far_ns, far_port in (x, y):
            ns.ip(
                "link",
                "add",
                port,
                "netns",
                netns,
                "type",
                "veth",
                "peer",
                "name",
                far_port,
                "netns",
                far_ns,
            )
        for netns, port, far_ns, far_port in (x, y):
            for where, dev in ((netns, port), (far_ns, far_port)):
                _readdress(lab, where, dev)
                ns.ip("link", "set", dev, "up", netns=where)

    cable((n1, p1, m2, q2), (n2, p2, m1, q1))
    return lambda: cable((n1, p1, m1, q1), (n2, p2, m2, q2))


def _readdress(lab: KernelLab, netns: str, port: str) -> None:
    """A re-created veth end gets back the MTU and address the plan gave its port."""
    ns.ip("link", "set", port, "mtu", str(pl.LINK_MTU_BYTES), netns=netns)
    for node in lab.plan.nodes.values():
        if node.netns == netns and port in node.ports and node.kind != "tg":
            ns.ip("addr", "replace", node.ports[port], "dev", port, netns=netns)


class _Params(BaseModel):
    """A kernel fault's parameters: unknown keys are an error, not a silent no-op."""

    model_config = ConfigDict(extra="forbid")


class StragglerParams(_Params):
    #: above the veth's 10 Gbit/s there is nothing left to slow
    rate_mbit: float = Field(STRAGGLER_RATE_MBIT, gt=0, le=10_000)


class SlowConvergenceParams(_Params):
    detect_multiplier: int = Field(SLOW_BFD_MULTIPLIER, ge=1, le=255)  # RFC 5880: 8 bits
    interval_ms: int = Field(SLOW_BFD_INTERVAL_MS, ge=10, le=60_000)  # as emulation.bfd allows


class LossyParams(_Params):
    loss: float = Field(0.3, gt=0.0, le=1.0)  # fraction of the frames dropped
    direction: Literal["ab", "ba", "both"] = "both"  # ab: what the target's end sends
    proto: Literal["any", "udp", "tcp"] = "any"
    spare_bfd: bool = False  # BFD's UDP ports pass (the sessions stay up; only data suffers)


class BlackholeParams(_Params):
    flow_fraction: float = Field(0.5, gt=0.0, le=1.0)  # of the UDP hash space
    direction: Literal["ab", "ba", "both"] = "ab"  # ab: what the target's end sends
    salt: int = Field(0, ge=0, le=65535)  # the hash's seed: which flows


class DaemonParams(_Params):
    daemon: Literal["bgpd", "bfdd"] = "bgpd"


class MtuParams(_Params):
    mtu: int = Field(1400, ge=576, le=pl.LINK_MTU_BYTES - 1)  # IPv4's minimum to below the plan's


class MiswiredParams(_Params):
    other: str  # the second link (name or either end)


@dataclass(frozen=True)
class KernelFault:
    """One kernel-lab fault: its effect and, as data, what it may target and take."""

    effect: Callable[..., Undo]
    targets: tuple[TargetType, ...]
    params: type[BaseModel] = _Params
    refs: Mapping[str, tuple[TargetType, ...]] = field(default_factory=dict)


FAULTS: dict[str, KernelFault] = {
    "link_down": KernelFault(link_down, ("link",)),
    "silent_drop": KernelFault(silent_drop, ("link",)),
    "lossy_link": KernelFault(lossy_link, ("link",), LossyParams),
    "ecmp_blackhole": KernelFault(ecmp_blackhole, ("link",), BlackholeParams),
    "straggler_link": KernelFault(straggler_link, ("link",), StragglerParams),
    # BFD timers of both switches of the link: FRR runs on switches only
    "slow_convergence": KernelFault(slow_convergence, ("fabric_link",), SlowConvergenceParams),
    # sshd (and a switch's snmpd): a TG namespace runs neither
    "unreachable_device": KernelFault(unreachable_device, ("switch", "host")),
    "miswired": KernelFault(miswired, ("link",), MiswiredParams, {"other": ("link",)}),
    "daemon_down": KernelFault(daemon_down, ("switch",), DaemonParams),
    "mtu_mismatch": KernelFault(mtu_mismatch, ("port",), MtuParams),
}


def declarations() -> dict[str, KernelFault]:
    """The kernel lab's faults, for the testbed loader (``labtest.fault_backends``)."""
    return FAULTS


def inject(lab: KernelLab, kind: str, target: str, **params: Any) -> Undo:
    if kind not in FAULTS:
        raise ValueError(f"kernel lab has no fault {kind!r}; known: {', '.join(sorted(FAULTS))}")
    fault = FAULTS[kind]
    problems = param_problems(kind, fault.params, params)
    if problems:
        raise ValueError(f"fault {kind!r}: {problems[0][1]}")
    return fault.effect(lab, target, **fault.params.model_validate(params).model_dump())
