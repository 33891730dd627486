"""What the kernel lab builds from a testbed: pure data, no side effects.

The plan decides namespaces, veth pairs (named after the testbed's ports),
addresses, AS numbers and every daemon's configuration text, so it can be
unit-tested without root. ``lab.py`` carries it out.

Roles come from the driver: ``frr`` devices are switches (FRR, lldpd, snmpd,
sshd), ``linux`` devices are hosts (one NIC, sshd, lldpd), ``scapy-tg``
devices are traffic generators (raw veth ports, lldpd so the switch end of the
cable hears who is there). Anything else has no kernel-lab counterpart.

Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544/6815),
which is never routed: link ``i`` of the plan is 198.18.0.0/31 + 2i, its
``a`` end taking the even address. Switches run eBGP with one private AS each
(RFC 6996) and BFD on every switch-to-switch session. With ``emulation.bgp:
unnumbered`` a switch-to-switch link gets no IPv4 address: its session runs on the
interface (IPv6 link-local, ``neighbor PORT interface remote-as external``) and IPv4
routes point at IPv6 next hops (RFC 5549), as in many production leaf-spine fabrics.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from labtest.testbed.model import Testbed

SWITCH_DRIVERS = frozenset({"frr"})
HOST_DRIVERS = frozenset({"linux"})
TG_DRIVERS = frozenset({"scapy-tg"})
BASE = ipaddress.IPv4Address("198.18.0.0")
FIRST_ASN = 65101
IFNAME_MAX = 15  # Linux IFNAMSIZ - 1
#: every link runs jumbo frames, as an AI fabric does (RoCE's 4096-byte MTU needs 4140)
LINK_MTU_BYTES = 9100

#: BFD defaults (RFC 5880 timers, in ms); the testbed's ``emulation.bfd`` overrides them
BFD_DEFAULTS = {"detect_multiplier": 3, "receive_interval_ms": 100, "transmit_interval_ms": 100}


#: the wire namespace's ports: ``WIRE_A`` faces the link's ``a`` end (``KernelLab.through_wire``)
WIRE_A, WIRE_B = "wa", "wb"


class PlanError(ValueError):
    """The testbed cannot be built as a kernel lab (the message says why)."""


@dataclass(frozen=True)
class VethPlan:
    link: str  # the testbed link name
    a_device: str
    a_port: str
    a_address: str  # CIDR
    b_device: str
    b_port: str
    b_address: str


@dataclass
class NodePlan:
    name: str
    kind: str  # "switch" | "host" | "tg"
    netns: str
    asn: int | None = None
    router_id: str | None = None
    ports: dict[str, str] = field(default_factory=dict)  # port -> CIDR
    #: (peer, asn, port): the peer's address, or the port itself for an unnumbered session
    neighbours: list[tuple[str, int, str]] = field(default_factory=list)
    gateway: str | None = None  # hosts: the leaf's address on the host link


@dataclass
class LabPlan:
    prefix: str
    nodes: dict[str, NodePlan]
    veths: list[VethPlan]
    bfd: dict[str, int]
    unsupported: dict[str, str]  # device -> why it is not built
    unnumbered: bool = False  # switch-to-switch links: BGP on the interface, no IPv4


def kind_of(driver: str) -> str | None:
    if driver in SWITCH_DRIVERS:
        return "switch"
    if driver in HOST_DRIVERS:
        return "host"
    if driver in TG_DRIVERS:
        return "tg"
    return None


def make_plan(
    testbed: Testbed, prefix: str, bfd: dict[str, int] | None = None, unnumbered: bool = False
) -> LabPlan:
    nodes: dict[str, NodePlan] = {}
    unsupported: dict[str, str] = {}
    switch_index = 0
    for name, dev in testbed.devices.items():
        kind = kind_of(dev.driver)
        if kind is None:
            unsupported[name] = f"driver {dev.driver!r} has no kernel-lab counterpart"
            continue
        node = NodePlan(name=name, kind=kind, netns=f"{prefix}{name}")
        if kind == "switch":
            node.asn = FIRST_ASN + switch_index
            node.router_id = f"198.19.255.{switch_index + 1}"
            switch_index += 1
        nodes[name] = node
    veths: list[VethPlan] = []
    for i, link in enumerate(testbed.links):
        a, b = link.ends
        if a.device not in nodes or b.device not in nodes:
            continue
        for end in (a, b):
            if len(end.port) > IFNAME_MAX:
                raise PlanError(f"{end}: port name longer than {IFNAME_MAX} characters")
        net = BASE + 2 * i
        a_addr, b_addr = f"{net}/31", f"{net + 1}/31"
        fabric = nodes[a.device].kind == nodes[b.device].kind == "switch"
        if unnumbered and fabric:
            a_addr = b_addr = ""  # link-local IPv6 only
        veths.append(VethPlan(link.name, a.device, a.port, a_addr, b.device, b.port, b_addr))
        na, nb = nodes[a.device], nodes[b.device]
        if a.port in na.ports or b.port in nb.ports:
            raise PlanError(f"{link.name}: a port is cabled twice")
        na.ports[a.port], nb.ports[b.port] = a_addr, b_addr
        for here, there, there_addr, here_port in (
            (na, nb, b_addr, a.port),
            (nb, na, a_addr, b.port),
        ):
            if here.kind == "switch" and there.kind == "switch":
                assert there.asn is not None
                peer = there_addr.split("/")[0] if there_addr else here_port
                here.neighbours.append((peer, there.asn, here_port))
            if here.kind == "host" and there.kind == "switch":
                here.gateway = there_addr.split("/")[0]
    return LabPlan(
        prefix, nodes, veths, {**BFD_DEFAULTS, **(bfd or {})}, unsupported, unnumbered
    )


# --- configuration text ---------------------------------------------------------------------


def frr_configs(node: NodePlan, bfd: dict[str, int]) -> dict[str, str]:
    """zebra.conf, bfdd.conf and bgpd.conf of a switch (one file per daemon, as each reads
    only its own part)."""
    head = [f"hostname {node.name}", "log timestamp precision 6", "!"]
    # routes carry their next hops inline: with kernel nexthop objects, FRR 8.4's zebra
    # lost an ECMP member for good after a link flap (seen here: RIB 2 paths, kernel 1)
    zebra = [*head, "no zebra nexthop kernel enable", "!"]
    zebra += [line for port in sorted(node.ports) for line in (f"interface {port}", "!")]
    bfdd = [
        *head,
        "bfd",
        " profile fast",
        f"  detect-multiplier {bfd['detect_multiplier']}",
        f"  receive-interval {bfd['receive_interval_ms']}",
        f"  transmit-interval {bfd['transmit_interval_ms']}",
        " exit",
        "exit",
        "!",
    ]
    bgpd = [
        *head,
        f"router bgp {node.asn}",
        f" bgp router-id {node.router_id}",
        " no bgp ebgp-requires-policy",
        " no bgp network import-check",
        " bgp bestpath as-path multipath-relax",
        " timers bgp 3 9",
        # a recovered link carries traffic again as soon as its session is up: no update
        # batching (default 1 s) and no eBGP advertisement interval
        " coalesce-time 0",
    ]
    for peer, asn, port in node.neighbours:
        if peer == port:  # unnumbered: the session is the interface's (IPv6 link-local)
            bgpd.append(f" neighbor {port} interface remote-as external")
        else:
            bgpd.append(f" neighbor {peer} remote-as {asn}")
        bgpd += [
            f" neighbor {peer} bfd profile fast",
            f" neighbor {peer} timers connect 1",
            f" neighbor {peer} advertisement-interval 0",
        ]
    bgpd += [
        " address-family ipv4 unicast",
        "  redistribute connected",
        "  maximum-paths 4",
        " exit-address-family",
        "exit",
        "!",
    ]
    return {d: "\n".join(t) + "\n" for d, t in (("zebra", zebra), ("bfdd", bfdd), ("bgpd", bgpd))}


def lldpd_config(hostname: str) -> str:
    """tx every second so a re-cable shows at once; port ID = interface name (as the plan)."""
    return (
        f"configure system hostname {hostname}\n"
        "configure lldp tx-interval 1\n"
        "configure lldp portidsubtype ifname\n"
    )


def snmpd_config(
    hostname: str, community: str, user: str, auth: str, priv: str, agentx: str
) -> str:
    return (
        "agentAddress udp:127.0.0.1:161\n"
        f"rocommunity {community} 127.0.0.1\n"
        f'createUser {user} SHA "{auth}" AES "{priv}"\n'
        f"rouser {user} priv\n"
        f"sysName {hostname}\n"
        "sysDescr Linux FRRouting kernel-lab switch\n"
        "master agentx\n"
        f"agentXSocket {agentx}\n"
        "agentXPerms 0660 0770\n"
    )


def sshd_config(workdir: str, node: str) -> str:
    d = f"{workdir}/{node}"
    return (
        "Port 22\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {d}/secret/ssh_host_ed25519_key\n"
        f"PidFile {d}/sshd.pid\n"
        f"AuthorizedKeysFile {workdir}/authorized_keys\n"
        "PermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "UseDNS no\n"
        "PrintMotd no\n"
        "Subsystem sftp internal-sftp\n"
        f"ForceCommand {d}/login\n"
    )


def login_script(workdir: str, node: str) -> str:
    """The device's shell: the lab's tools first on PATH (vtysh and lldpcli bound to this
    namespace's daemons), then the command the client asked for, or an interactive shell."""
    return (
        "#!/bin/sh\n"
        f"PATH={workdir}/{node}/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        "export PATH\n"
        'if [ -n "$SSH_ORIGINAL_COMMAND" ]; then exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"; fi\n'
        f"PS1='{node}# ' exec /bin/sh -i\n"
    )


def wrappers(workdir: str, node: NodePlan) -> dict[str, str]:
    """Tool wrappers bound to the node's own daemons."""
    out = {
        "lldpcli": f'#!/bin/sh\nexec /usr/sbin/lldpcli -u {workdir}/{node.name}/lldpd.sock "$@"\n',
    }
    if node.kind == "switch":
        out["vtysh"] = f'#!/bin/sh\nexec /usr/bin/vtysh -N {node.netns} "$@"\n'
    return out
