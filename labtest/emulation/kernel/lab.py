"""The kernel lab: the testbed built from real software in network namespaces.

One namespace per device (named ``lt-k<run id>-<device>``), veth pairs named
after the testbed's ports, and per device the daemons its role needs, each
started by hand with its own configuration, log and socket under one lab
folder: FRR (zebra, bfdd, bgpd), net-snmp snmpd with lldpd as its AgentX
sub-agent, and OpenSSH sshd for switches; sshd and lldpd for hosts; lldpd for
traffic-generator namespaces. ``start()`` returns the testbed pointing at
forwarders on 127.0.0.1 (see ``forward.py``), so the drivers run unchanged.

``stop()`` stops every daemon by its process group, deletes every namespace
and removes the lab folder and FRR's runtime folders; ``leftovers()`` lists
whatever survived, so a test can prove nothing did. Before it creates anything,
``start()`` reaps the leftovers of dead runs and records its own (``labtest.runs``): a
SIGKILLed lab is removed by the next one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import secrets as pysecrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from labtest import interrupt, runs
from labtest import netns as ns
from labtest.emulation.kernel import plan as pl
from labtest.emulation.kernel.carrier import CarrierRelay, End
from labtest.emulation.kernel.forward import TcpForwarder, UdpForwarder
from labtest.emulation.kernel.prereq import why_not
from labtest.errors import InfraError, LabtestError
from labtest.secrets import register
from labtest.testbed.model import PacketSettings, SnmpSettings, SshSettings, Testbed

log = logging.getLogger("labtest.emulation.kernel")

FRR_RUN = Path("/var/run/frr")
POLL_S = 0.2
DAEMON_READY_S = 15.0  # bound on one daemon's socket or port appearing
CONVERGED_S = 90.0  # bound on every BGP session and BFD peer coming up
#: bfdd's niceness: its 3 x 100 ms detection must not starve behind a loaded machine's other
#: work (a switch runs BFD in hardware or at high priority; here two busy test workers share
#: two cores, and a leaf whose BFD missed 300 ms dropped both BGP sessions mid-test). GNU
#: ``nice`` runs the daemon anyway where it may not raise its priority.
BFDD_NICE = -10
ROUTES_STABLE_S = 1.0  # every switch's kernel routes unchanged this long: BGP has settled
LLDP_READY_S = 30.0  # bound on every cabled port hearing its neighbour
LLDP_HOLD_S = 4.5  # lldpd: tx-interval 1 s x tx-hold 4: a silent neighbour is gone after 4 s
STOP_GRACE_S = 5.0
#: the FIFO on a TG-facing veth: a full queue makes the TG's send fail (ENOBUFS) and retry,
#: so a burst waits instead of dropping; kept short so little is still queued when the TG
#: reports done (a counter read right after would miss it)
LOSSLESS_QUEUE_PKTS = 1000


class KernelLabUnavailable(LabtestError):
    """This machine cannot build a kernel lab (not root, or packages missing)."""


@dataclass
class _Proc:
    device: str
    what: str
    popen: subprocess.Popen[bytes]


@dataclass
class KernelLab:
    """Build with a testbed; ``start()`` returns the testbed to hand the drivers."""

    testbed: Testbed
    faults: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    run_id: str = field(default_factory=runs.new_id)
    prefix: str = field(init=False)  # of every namespace and folder name: "lt-k<run id>-"
    reaped: runs.Reaped = field(default_factory=runs.Reaped, init=False)  # at start()
    plan: pl.LabPlan = field(init=False)
    workdir: Path = field(init=False)
    skipped: dict[str, str] = field(default_factory=dict, init=False)
    start_s: float = field(default=0.0, init=False)
    _procs: list[_Proc] = field(default_factory=list, init=False)
    _forwarders: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    _relays: dict[str, CarrierRelay] = field(default_factory=dict, init=False)  # by wire
    _made_netns: list[str] = field(default_factory=list, init=False)
    _netns_ids: set[str] = field(default_factory=set, init=False)  # "net:[inode]"
    _made_dirs: list[Path] = field(default_factory=list, init=False)
    _pgids: set[int] = field(default_factory=set, init=False)  # every daemon ever started
    _snmp: dict[str, tuple[str, str, str, str]] = field(default_factory=dict, init=False)
    _run: runs.Run | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.prefix = f"lt-k{self.run_id}-"

    # --- building ----------------------------------------------------------------------

    def start(self) -> Testbed:
        reason = why_not()
        if reason is not None:
            raise KernelLabUnavailable(f"kernel lab: {reason}")
        began = time.monotonic()
        emu = self.testbed.emulation
        bfd = emu.bfd.model_dump() if emu is not None and emu.bfd is not None else None
        unnumbered = emu is not None and emu.bgp == "unnumbered"
        self.plan = pl.make_plan(self.testbed, self.prefix, bfd, unnumbered)
        self.skipped = dict(self.plan.unsupported)
        self.reaped = runs.reap()
        self.workdir = Path(tempfile.gettempdir()) / f"{self.prefix}lab"
        frr_runs = [FRR_RUN / n.netns for n in self.plan.nodes.values() if n.kind == "switch"]
        self._run = runs.Run.begin(
            self.run_id,
            [n.netns for n in self.plan.nodes.values()],
            [self.workdir, *frr_runs],
        )
        try:
            self.workdir.mkdir(mode=0o700)  # exclusive: never a folder or link already there
        except OSError:
            self._run.end()  # what is there is not ours: no reaper may remove it
            raise
        self.workdir.chmod(0o755)  # FRR daemons run as user frr and read their configs here
        try:
            self._keys()
            for node in self.plan.nodes.values():
                self._namespace(node)
            for veth in self.plan.veths:
                self._veth(veth)
            for node in self.plan.nodes.values():
                self._files(node)
                self._daemons(node)
            self.wait_converged()
            self.wait_routes()
            self.wait_lldp()
            self._start_faults()
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - began
        return self.lab_testbed()

    def _start_faults(self) -> None:
        """The testbed's ``emulation.faults`` (and the constructor's), on the converged lab;
        then one LLDP hold time passes, so neighbour tables show the faulty lab."""
        from labtest.emulation.kernel.faults import inject

        wanted = [
            (f.kind, f.target, dict(f.params))
            for f in (self.testbed.emulation.faults if self.testbed.emulation else [])
        ]
        in_file = len(wanted)
        wanted += self.faults
        for i, (kind, target, params) in enumerate(wanted):
            try:
                inject(self, kind, target, **params)
            except Exception as exc:  # name the entry: the error can locate it in the file
                from labtest.emulation.model.faults import FaultError

                where = i if i < in_file else None
                raise FaultError(f"fault {i + 1} ({kind} at {target!r}): {exc}", where) from exc
        if wanted:
            time.sleep(LLDP_HOLD_S)

    def _keys(self) -> None:
        key = self.client_key()
        key.parent.mkdir(mode=0o700)  # the lab folder is 0755 (FRR reads it): keys go apart
        key.parent.chmod(0o700)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "labtest", "-f", str(key)])
        shutil.copy(key.with_suffix(".pub"), self.workdir / "authorized_keys")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir

    def _own_netns(self, name: str) -> None:
        """Create ``name`` as this lab's: stop() and a later reaper remove it. Recorded
        before it exists: an interrupt between the two must not leave it unowned."""
        self._made_netns.append(name)
        ns.create_netns(name)
        self._netns_ids.add(ns.netns_id(name))

    def _namespace(self, node: pl.NodePlan) -> None:
        self._own_netns(node.netns)
        # every probe answered: Linux sends at most one ICMP error a second per peer by
        # default (icmp_ratelimit 1000 ms), which the doctor's traceroutes counted as loss
        # (4 to 7 of 10 probes a path on a healthy lab, hiding a 30 % UDP drop); and at most
        # 1000 a second with a burst of 50 per namespace (icmp_msgs_per_sec/_burst, per netns
        # since Linux 6.12): a healthy interval already lost 4 time-exceeded answers on leaf1
        # (OutRateLimitGlobal), and under a full test run's load a host's bunched port
        # unreachables were lost and paged its access link. An empty ratemask limits no type.
        ns.run_in_netns(node.netns, ["sysctl", "-q", "-w", "net.ipv4.icmp_ratelimit=0",
                                     "net.ipv4.icmp_ratemask=0"])
        if node.kind == "switch":
            ns.run_in_netns(node.netns, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
            # ECMP: hash on the 5-tuple so flows spread over the spines and each stays on
            # one path, as a switch's does. Policy 3 with the fields named (Linux >= 5.12):
            # policy 1 sprayed one 5-tuple over both spines packet by packet on Linux 6.18
            # (a doctor traceroute met both spines at one TTL), policy 1 where 3 is unknown
            ns.ensure_l4_multipath_hash(node.netns)

    def _veth(self, v: pl.VethPlan) -> None:
        na, nb = self.plan.nodes[v.a_device], self.plan.nodes[v.b_device]
        _veth_pair(v.a_port, na.netns, v.b_port, nb.netns)
        self._ends_up(v)

    def _ends_up(self, v: pl.VethPlan) -> None:
        """Each end of a link's (re-)created veths as the plan has it: MTU, address, queue,
        up; a TG's static neighbour, a host's default route."""
        na, nb = self.plan.nodes[v.a_device], self.plan.nodes[v.b_device]
        for node, port, addr in ((na, v.a_port, v.a_address), (nb, v.b_port, v.b_address)):
            ns.ip("link", "set", port, "mtu", str(pl.LINK_MTU_BYTES), netns=node.netns)
            if not addr and node.kind == "switch":  # unnumbered: IPv6 link-local only
                ns.run_in_netns(
                    node.netns, ["sysctl", "-q", "-w", f"net.ipv6.conf.{port}.disable_ipv6=0"]
                )
            elif node.kind != "tg":  # a TG port has no IP stack: it only sends and counts
                ns.ip("addr", "add", addr, "dev", port, netns=node.netns)
            if "tg" in (na.kind, nb.kind):  # only here: see _lossless
                self._lossless(node.netns, port)
            ns.ip("link", "set", port, "up", netns=node.netns)
        for here, there, there_port, there_addr in (
            (na, nb, v.b_port, v.b_address),
            (nb, na, v.a_port, v.a_address),
        ):
            if there.kind == "tg" and here.kind == "switch":
                mac = ns.interface_mac(there_port, there.netns)
                port = v.a_port if here is na else v.b_port
                ns.ip(
                    "neigh",
                    "replace",
                    there_addr.split("/")[0],
                    "lladdr",
                    mac,
                    "dev",
                    port,
                    "nud",
                    "permanent",
                    netns=here.netns,
                )
            if here.kind == "host" and there.kind == "switch":
                ns.ip(
                    "route", "replace", "default", "via", there_addr.split("/")[0], netns=here.netns
                )

    # --- a wire between a link's ends (faults that must happen on the cable) --------------

    def through_wire(self, link: str) -> str:
        """Re-cable ``link`` through a namespace of its own, the *wire*: the ``a`` end's veth
        meets the wire's ``a``, the wire's ``b`` meets the ``b`` end. What the wire drops was
        sent (the sender counted it) and never received, as on a cable that loses frames;
        a drop at a port's own ingress would count it received there. Nothing crosses until
        the caller forwards one to the other in the wire (``nft`` ``fwd``). Returns the wire's
        namespace; ``direct()`` undoes it."""
        v = self.veth_of(link)
        wire = f"{self.prefix}wire{self.plan.veths.index(v)}"
        self._own_netns(wire)
        if self._run is not None:  # created after start(): the run's record learns it
            self._run.namespaces.append(wire)
            self._run.save()
        na, nb = self.plan.nodes[v.a_device], self.plan.nodes[v.b_device]
        ns.ip("link", "del", v.a_port, netns=na.netns)  # the pair goes with it
        _veth_pair(v.a_port, na.netns, pl.WIRE_A, wire)
        _veth_pair(pl.WIRE_B, wire, v.b_port, nb.netns)
        for port in (pl.WIRE_A, pl.WIRE_B):
            ns.ip("link", "set", "dev", port, "mtu", str(pl.LINK_MTU_BYTES), netns=wire)
            ns.ip("link", "set", "dev", port, "up", netns=wire)
        self._ends_up(v)
        relay = CarrierRelay(wire, End(na.netns, v.a_port), End(nb.netns, v.b_port),
                             pl.WIRE_A, pl.WIRE_B)
        relay.start()
        self._pgids.update(relay.pids)
        self._relays[wire] = relay
        return wire

    def direct(self, link: str, wire: str) -> None:
        """``link``'s ends cabled to each other again, its wire removed."""
        v = self.veth_of(link)
        if (relay := self._relays.pop(wire, None)) is not None:
            relay.stop()
        na, nb = self.plan.nodes[v.a_device], self.plan.nodes[v.b_device]
        for node, port in ((na, v.a_port), (nb, v.b_port)):
            with contextlib.suppress(ns.NetnsError):
                ns.ip("link", "del", port, netns=node.netns)
        ns.delete_netns(wire)
        if wire in self._made_netns:
            self._made_netns.remove(wire)
        self._veth(v)

    def veth_of(self, link: str) -> pl.VethPlan:
        for v in self.plan.veths:
            if link in (v.link, f"{v.a_device}:{v.a_port}", f"{v.b_device}:{v.b_port}"):
                return v
        raise ValueError(f"{link} is not a link of this lab")

    @staticmethod
    def _lossless(netns: str, port: str) -> None:
        """Back-pressure instead of drops on a burst: GRO puts the veth's receive side in
        NAPI mode (a ring the sender stops on when full, Linux 6.15+) and a FIFO queue
        on the sending side holds what waits (a veth has no queue by default). Done on
        TG-facing ports only: where the TG's bursts enter the fabric."""
        ns.run_in_netns(netns, ["ethtool", "-K", port, "gro", "on"], check=False)
        ns.run_in_netns(
            netns,
            [
                "tc",
                "qdisc",
                "replace",
                "dev",
                port,
                "root",
                "pfifo",
                "limit",
                str(LOSSLESS_QUEUE_PKTS),
            ],
            check=False,
        )

    def _files(self, node: pl.NodePlan) -> None:
        d = self.node_dir(node.name)
        d.mkdir(mode=0o755)
        (d / "bin").mkdir(mode=0o755)
        for tool, text in pl.wrappers(str(self.workdir), node).items():
            _write(d / "bin" / tool, text, 0o755)
        _write(d / "lldpd.conf", pl.lldpd_config(node.name))
        if node.kind == "tg":
            return
        _write(d / "login", pl.login_script(str(self.workdir), node.name), 0o755)
        _write(d / "sshd_config", pl.sshd_config(str(self.workdir), node.name))
        (d / "secret").mkdir(mode=0o700)  # host key, snmpd.conf: 0600 in a 0700 folder
        (d / "secret").chmod(0o700)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
              str(d / "secret" / "ssh_host_ed25519_key")])
        if node.kind == "switch":
            for daemon, text in pl.frr_configs(node, self.plan.bfd).items():
                _write(d / f"{daemon}.conf", text)
            (d / "snmp").mkdir(mode=0o700)
            creds = (_secret(), f"lt-{node.name}", _secret(), _secret())
            self._snmp[node.name] = creds
            _write(
                d / "secret" / "snmpd.conf",
                pl.snmpd_config(node.name, *creds, agentx=str(d / "agentx.sock")),
                0o600,
            )

    def node_dir(self, name: str) -> Path:
        return self.workdir / name

    def client_key(self) -> Path:
        """The lab's SSH client key (per run, 0600 in a 0700 folder: only its user reads it)."""
        return self.workdir / "secret" / "id_ed25519"

    # --- daemons -------------------------------------------------------------------------

    def _daemons(self, node: pl.NodePlan) -> None:
        if node.kind == "switch":
            self._start_frr(node)
            self.start_snmpd(node.name)
        self._start_lldpd(node)
        if node.kind != "tg":
            self.start_sshd(node.name)

    def _spawn(
        self, node: pl.NodePlan, what: str, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        logf = open(self.node_dir(node.name) / f"{what}.out", "ab")  # noqa: SIM115
        try:
            p = subprocess.Popen(
                ["ip", "netns", "exec", node.netns, *argv],
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        finally:
            logf.close()
        self._procs.append(_Proc(node.name, what, p))
        self._pgids.add(p.pid)
        return p

    def _start_frr(self, node: pl.NodePlan) -> None:
        run = FRR_RUN / node.netns
        self._made_dirs.append(run)  # first: an interrupt after mkdir leaves it owned
        run.mkdir(parents=True, exist_ok=True)
        shutil.chown(run, "frr", "frr")
        for daemon in ("zebra", "bfdd", "bgpd"):
            self.start_frr_daemon(node.name, daemon)

    def start_frr_daemon(self, name: str, daemon: str) -> None:
        """Start one FRR daemon of a switch and wait for its socket (at start, and to undo
        a ``daemon_down`` fault)."""
        node = self.plan.nodes[name]
        run = FRR_RUN / node.netns
        d = self.node_dir(node.name)
        argv = [
            f"/usr/lib/frr/{daemon}",
            "-N",
            node.netns,
            "-f",
            str(d / f"{daemon}.conf"),
            "-i",
            str(run / f"{daemon}.pid"),
            "-u",
            "frr",
            "-g",
            "frr",
            "--log",
            f"file:{d / daemon}.log",
        ]
        sock = run / ("zserv.api" if daemon == "zebra" else f"{daemon}.vty")
        sock.unlink(missing_ok=True)  # a killed daemon's socket is no sign of the new one
        if daemon == "bfdd":
            argv = ["nice", "-n", str(BFDD_NICE), *argv]
        p = self._spawn(node, daemon, argv)
        _wait(
            sock.exists,
            DAEMON_READY_S,
            node.name,
            f"{daemon} socket {sock}",
            p,
            self.node_dir(node.name) / f"{daemon}.out",
        )

    def start_snmpd(self, name: str) -> None:
        node = self.plan.nodes[name]
        d = self.node_dir(name)
        argv = [
            "/usr/sbin/snmpd",
            "-f",
            "-C",
            "-c",
            str(d / "secret" / "snmpd.conf"),
            "-p",
            str(d / "snmpd.pid"),
            "-Lf",
            str(d / "snmpd.log"),
        ]
        p = self._spawn(node, "snmpd", argv, {"SNMP_PERSISTENT_DIR": str(d / "snmp"), "MIBS": ""})
        _wait(
            lambda: (d / "agentx.sock").exists(),
            DAEMON_READY_S,
            name,
            "snmpd AgentX socket",
            p,
            d / "snmpd.out",
        )
        self._forward(name, "snmp", UdpForwarder, 161)

    def stop_daemon(self, name: str, what: str) -> None:
        """Stop one daemon of a device (a fault: its management plane goes dark)."""
        for proc in [p for p in self._procs if p.device == name and p.what == what]:
            _kill_group(proc.popen)
            self._procs.remove(proc)

    def start_sshd(self, name: str) -> None:
        node = self.plan.nodes[name]
        d = self.node_dir(name)
        pid = d / "sshd.pid"
        pid.unlink(missing_ok=True)
        p = self._spawn(
            node,
            "sshd",
            ["/usr/sbin/sshd", "-D", "-f", str(d / "sshd_config"), "-E", str(d / "sshd.log")],
        )
        _wait(pid.exists, DAEMON_READY_S, name, "sshd listening (pid file)", p, d / "sshd.log")
        self._forward(name, "ssh", TcpForwarder, 22)

    def _start_lldpd(self, node: pl.NodePlan) -> None:
        d = self.node_dir(node.name)
        argv = ["/usr/sbin/lldpd", "-d", "-u", str(d / "lldpd.sock"), "-O", str(d / "lldpd.conf")]
        if node.kind == "switch":
            argv += ["-x", "-X", str(d / "agentx.sock")]
        p = self._spawn(node, "lldpd", argv)
        _wait(
            lambda: (d / "lldpd.sock").exists(),
            DAEMON_READY_S,
            node.name,
            "lldpd socket",
            p,
            d / "lldpd.out",
        )

    def _forward(self, name: str, what: str, kind: Any, port: int) -> None:
        if what not in self._forwarders.get(name, {}):
            self._forwarders.setdefault(name, {})[what] = kind(
                self.plan.nodes[name].netns, port
            ).start()

    # --- readiness -------------------------------------------------------------------------

    def vtysh(self, name: str, *commands: str, timeout_s: float = 10.0) -> str:
        """vtysh's answer to ``commands`` in turn (one session: ``configure terminal`` and
        what follows). A command vtysh refuses ("% Unknown command") is an error."""
        node = self.plan.nodes[name]
        argv = ["vtysh", "-N", node.netns, *(a for c in commands for a in ("-c", c))]
        out = _run(argv, timeout_s).stdout
        if out.lstrip().startswith("%"):
            raise InfraError(name, f"vtysh {' / '.join(commands)}: {out.strip()[:300]}")
        return out

    def bgp_state(self, name: str) -> dict[str, str]:
        """peer address -> BGP state of one switch (``show bgp summary json``)."""
        data = json.loads(self.vtysh(name, "show bgp summary json") or "{}")
        peers = (data.get("ipv4Unicast") or {}).get("peers") or {}
        return {ip: str(p.get("state")) for ip, p in peers.items()}

    def bfd_state(self, name: str) -> dict[str, str]:
        """peer address (and, where FRR names it, the interface) -> BFD status."""
        data = json.loads(self.vtysh(name, "show bfd peers json") or "[]")
        out = {str(p.get("peer")): str(p.get("status")) for p in data}
        out.update({str(p["interface"]): str(p.get("status")) for p in data
                    if p.get("interface")})
        return out

    def wait_converged(self, timeout_s: float = CONVERGED_S) -> None:
        """Every planned BGP session Established and its BFD peer up (bounded)."""
        switches = [n for n in self.plan.nodes.values() if n.kind == "switch"]

        def down() -> list[str]:
            out = []
            for node in switches:
                bgp, bfd = self.bgp_state(node.name), self.bfd_state(node.name)
                for ip, _asn, port in node.neighbours:
                    if bgp.get(ip) != "Established" or bfd.get(ip) != "up":
                        out.append(f"{node.name}:{port} (BGP {bgp.get(ip)}, BFD {bfd.get(ip)})")
            return out

        if left := _still_failing(down, timeout_s):
            raise InfraError(
                left[0].split(":")[0],
                f"kernel lab did not converge in {timeout_s:g} s: {', '.join(left)}",
            )

    def kernel_routes(self, name: str) -> dict[str, int]:
        """IPv4 destination -> next hops in one switch's kernel table (``ip -j route``)."""
        text = _run(["ip", "-n", self.plan.nodes[name].netns, "-j", "route", "show"]).stdout
        return {str(r["dst"]): len(r.get("nexthops") or [r]) for r in json.loads(text or "[]")}

    def wait_routes(self, timeout_s: float = CONVERGED_S) -> None:
        """Every switch's kernel holds a route to every addressed link, and no switch's
        table changed for ``ROUTES_STABLE_S`` (bounded). Sessions up is not routes
        installed: a spine that has not yet learnt a leaf's prefixes drops the share of
        traffic ECMP hashes to it, and a suite would blame the spine."""
        switches = [n.name for n in self.plan.nodes.values() if n.kind == "switch"]
        wanted = sorted({
            str(ipaddress.ip_interface(addr).network)
            for v in self.plan.veths
            if "switch" in (self.plan.nodes[v.a_device].kind, self.plan.nodes[v.b_device].kind)
            for addr in (v.a_address, v.b_address)
            if addr
        })
        deadline = time.monotonic() + timeout_s
        last: dict[str, dict[str, int]] = {}
        since = time.monotonic()
        while True:
            now = {name: self.kernel_routes(name) for name in switches}
            missing = [(n, d) for n, r in now.items() for d in wanted if d not in r]
            if now != last or missing:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= ROUTES_STABLE_S:
                return
            if time.monotonic() > deadline:
                why = [f"{n} has no route to {d}" for n, d in missing[:3]]
                raise InfraError(
                    missing[0][0] if missing else switches[0],
                    f"kernel lab routes not settled in {timeout_s:g} s: "
                    + ("; ".join(why) or "the routes kept changing"),
                )
            time.sleep(POLL_S)

    def lldp_heard(self, name: str) -> dict[str, str]:
        """port -> "system:port" each neighbour table row (lldpcli JSON)."""
        d = self.node_dir(name)
        text = _run(
            ["lldpcli", "-u", str(d / "lldpd.sock"), "-f", "json", "show", "neighbors"], 10
        ).stdout
        out: dict[str, str] = {}
        for port, info in _lldp_rows(json.loads(text or "{}")):
            system = next(iter((info.get("chassis") or {}).keys()), "?")
            pid = ((info.get("port") or {}).get("id") or {}).get("value", "?")
            out[port] = f"{system}:{pid}"
        return out

    def wait_lldp(self, timeout_s: float = LLDP_READY_S) -> None:
        """Every cabled port of every node hears someone (bounded)."""

        def deaf() -> list[str]:
            out = []
            for node in self.plan.nodes.values():
                heard = self.lldp_heard(node.name)
                out += [f"{node.name}:{p}" for p in node.ports if p not in heard]
            return out

        if left := _still_failing(deaf, timeout_s):
            raise InfraError(
                left[0].split(":")[0], f"LLDP silent after {timeout_s:g} s on {', '.join(left)}"
            )

    # --- the testbed the drivers get --------------------------------------------------------

    def lab_testbed(self) -> Testbed:
        known = self.workdir / "known_hosts"
        lines = []
        devices = dict(self.testbed.devices)
        for name, node in self.plan.nodes.items():
            dev = devices[name]
            update: dict[str, Any] = {"address": "127.0.0.1"}
            fw = self._forwarders.get(name, {})
            if "ssh" in fw:
                pub = (
                    self.node_dir(name) / "secret" / "ssh_host_ed25519_key.pub"
                ).read_text().split()
                lines.append(f"[127.0.0.1]:{fw['ssh'].port} {pub[0]} {pub[1]}\n")
                base = dev.ssh or SshSettings(username="root")
                update["ssh"] = base.model_copy(
                    update={
                        "port": fw["ssh"].port,
                        "username": "root",
                        "password": None,
                        "key_file": self.client_key(),
                        "known_hosts": known,
                        "host_key_policy": "reject",
                    }
                )
            if "snmp" in fw:
                community, user, auth, priv = self._snmp[name]
                for s in (community, auth, priv):
                    register(s)
                base_snmp = dev.snmp or SnmpSettings()
                update["snmp"] = base_snmp.model_copy(
                    update={
                        "port": fw["snmp"].port,
                        "community": SecretStr(community),
                        "user": user,
                        "auth_key": SecretStr(auth),
                        "priv_key": SecretStr(priv),
                        "auth_protocol": "SHA",
                        "priv_protocol": "AES",
                        "context": "",
                    }
                )
            if node.kind == "switch":
                update["vars"] = {**dev.vars, "snapshot_dir": str(self.node_dir(name))}
            if node.kind == "tg":
                update["packet"] = PacketSettings(
                    interfaces={p: p for p in node.ports}, netns=node.netns
                )
                update["vars"] = {**dev.vars, **self._tg_vars(node)}
            devices[name] = dev.model_copy(update=update)
        known.write_text("".join(lines))
        tb = self.testbed.model_copy(update={"devices": devices})
        tb._source = self.testbed.source
        return tb

    def _tg_vars(self, node: pl.NodePlan) -> dict[str, Any]:
        """The TG ports' addresses and the router MAC of the switch port each is cabled to."""
        ipv4, gateways = {}, {}
        for v in self.plan.veths:
            for mine, port, addr, other, other_port in (
                (v.a_device, v.a_port, v.a_address, v.b_device, v.b_port),
                (v.b_device, v.b_port, v.b_address, v.a_device, v.a_port),
            ):
                if mine == node.name:
                    ipv4[port] = addr.split("/")[0]
                    gateways[port] = ns.interface_mac(other_port, self.plan.nodes[other].netns)
        return {"ipv4": ipv4, "gateway_macs": gateways}

    # --- teardown ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Everything this lab made goes, whenever it is called (a start interrupted at
        any step included: bench/chaos.py, tests/kernel/test_interrupted_start.py); an
        interrupt waits until it is done."""
        with interrupt.held("stopping the kernel lab"):
            self._stop()

    def _stop(self) -> None:
        # the namespaces by name too: one made just before an interrupt may be unrecorded
        named = [n for n in ns.list_netns() if n.startswith(self.prefix)]
        netns = list(dict.fromkeys([*self._made_netns, *named]))
        for name in named:
            with contextlib.suppress(OSError):
                self._netns_ids.add(ns.netns_id(name))
        for relay in self._relays.values():
            relay.stop()
        self._relays.clear()
        for fws in self._forwarders.values():
            for fw in fws.values():
                fw.stop()
        self._forwarders.clear()
        for proc in reversed(self._procs):
            _kill_group(proc.popen)
        self._procs.clear()
        # anything else still inside (an SSH session's command runs in its own session,
        # outside sshd's process group): stopped by PID before its namespace goes
        for pid in ns.pids_in_netns(self._netns_ids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for name in reversed(netns):
            with contextlib.suppress(ns.NetnsError):
                ns.delete_netns(name)
        for d in self._made_dirs:
            shutil.rmtree(d, ignore_errors=True)
        if getattr(self, "workdir", None) is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self._run is not None and not self.leftovers():
            self._run.end()  # else the next lab's reap() removes what is left
            self._run = None

    def leftovers(self) -> list[str]:
        """Namespaces, processes and files of this lab still present (empty after stop())."""
        out = [f"netns {n}" for n in ns.list_netns() if n.startswith(self.prefix)]
        pids = set(_pids_in_groups(self._pgids)) | set(ns.pids_in_netns(self._netns_ids))
        out += [f"process {pid}" for pid in sorted(pids)]
        out += [f"file {d}" for d in self._made_dirs if d.exists()]
        if getattr(self, "workdir", None) is not None and self.workdir.exists():
            out.append(f"file {self.workdir}")
        return out

    def __enter__(self) -> Testbed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- helpers -----------------------------------------------------------------------------


def _veth_pair(a_port: str, a_netns: str, b_port: str, b_netns: str) -> None:
    # "name" spelt out: a bare port name may read as a keyword ("b": broadcast)
    ns.ip("link", "add", "name", a_port, "netns", a_netns, "type", "veth", "peer", "name",
          b_port, "netns", b_netns)  # fmt: skip


def _lldp_rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """lldpcli JSON: ``lldp.interface`` is a dict (one port) or a list of one-key dicts."""
    iface = (data.get("lldp") or {}).get("interface") or []
    items = iface if isinstance(iface, list) else [{k: v} for k, v in iface.items()]
    return [(port, info) for item in items for port, info in item.items()]


def _secret() -> str:
    return pysecrets.token_urlsafe(12)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    """``mode`` from the first byte (a secret is never readable while written), no link followed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), mode)  # the umask cut the open's mode; set it exactly
        fh.write(text)


def _run(argv: list[str], timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise InfraError(
            "kernel-lab", f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-300:]}"
        )
    return done


def _wait(
    ready: Any,
    timeout_s: float,
    device: str,
    what: str,
    proc: subprocess.Popen[bytes],
    logfile: Path,
) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = logfile.read_text(errors="replace")[-400:] if logfile.exists() else ""
            state = f"exited {proc.returncode}" if proc.poll() is not None else "timed out"
            raise InfraError(device, f"{what}: {state}; log: {tail.strip()}")
        time.sleep(POLL_S / 4)


def _still_failing(failing: Callable[[], list[str]], timeout_s: float) -> list[str]:
    """Poll ``failing`` (what is not ready yet, as ``node:port ...`` texts) until it is
    empty or ``timeout_s`` passed; what still fails then (empty: all ready)."""
    deadline = time.monotonic() + timeout_s
    while (left := failing()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon's process group, then SIGKILL what is left after a grace time."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if p.poll() is not None and not _pids_in_groups({p.pid}):
                return
            time.sleep(0.05)
    p.poll()


def _pids_in_groups(pgids: set[int]) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) in pgids:
            out.append(int(entry.name))
    return out
