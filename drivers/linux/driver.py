"""The ``linux`` driver: a RoCE host (Linux + RDMA NIC) over SSH.

It offers the Host capabilities (``labtest.capabilities.host``): RDMA devices
with their netdevs and GID tables, NIC and RDMA hardware counters, module DOM,
perftest between two hosts and nccl-tests across hosts. Everything is read
with the standard tools (iproute2 ``ip``/``rdma``/``ss``, rdma-core
``ibv_devinfo``, ``ethtool``, perftest, nccl-tests with Open MPI) and sysfs,
and parsed by ``labtest.drivers.linux.parsers``. Counter names come from a NIC
flavour table (``counters.py``), mlx5/ConnectX by default. The device's
``vars`` are documented in docs/hosts.md.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labtest import connect, labtime
from labtest.capabilities.host import (
    GidEntry,
    LinkInfo,
    NcclResult,
    NcclSpec,
    PcieLink,
    PerftestBandwidthPair,
    PerftestLatencyPair,
    PerftestSpec,
    RdmaDevice,
    RdmaHwCounters,
)
from labtest.capabilities.nic_fec import NicPhyErrors
from labtest.capabilities.probes import (
    UdpStreamResult,
    UdpStreamsRun,
    UdpTrace,
    merge_traces,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import telling
from labtest.drivers.common.clock import DATE_EPOCH_COMMAND, parse_date_epoch
from labtest.drivers.linux.counters import (
    PfcCounters,
    flavour,
    hw_counters,
    nic_phy_errors,
    pfc_counters,
)
from labtest.drivers.linux.nccl import run_collective
from labtest.drivers.linux.parsers.ethtool import parse_ethtool_module, parse_ethtool_stats
from labtest.drivers.linux.parsers.iperf import INCOMPLETE, iperf3_failure, parse_iperf3_udp
from labtest.drivers.linux.parsers.iproute import parse_ip_addresses, parse_ip_link
from labtest.drivers.linux.parsers.pcie import parse_pcie_sysfs
from labtest.drivers.linux.parsers.rdma import (
    parse_ibv_devinfo,
    parse_rdma_link,
    parse_rdma_statistic,
    parse_sysfs_hw_counters,
)
from labtest.drivers.linux.parsers.traceroute import parse_traceroute
from labtest.drivers.linux.perftest import (
    PerftestPair,
    RdmaEndpoint,
    default_timeout_s,
    is_latency,
    run_pairs,
)
from labtest.drivers.linux.shell import HostShell
from labtest.errors import (
    CapabilityAbsent,
    CommandFailed,
    CommandNotSupported,
    ConfigError,
    DataplaneFailed,
    InfraError,
    ParseError,
    TransportTimeout,
)
from labtest.testbed.model import Device, Testbed

log = logging.getLogger("labtest.drivers.linux")

T = TypeVar("T")
_Pair = TypeVar("_Pair", PerftestBandwidthPair, PerftestLatencyPair)
NCCL_TIMEOUT_S = 600.0
#: what iproute2's rdma says without the RDMA netlink family (no RDMA driver loaded)
NO_RDMA = "Failed to open NETLINK_RDMA socket"
#: what ethtool -m says where the NIC driver gives no module EEPROM (veth, virtio, ...)
NO_MODULE = "Operation not supported"


class HostVars(BaseModel):
    """The ``vars`` a linux device understands; other keys are left to other tools."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    rdma_device: str | None = None  # e.g. mlx5_0; None: the port on `netdev`, else the first
    ib_port: int = Field(1, ge=1)
    netdev: str | None = None  # e.g. ens1f0np0
    gid_index: int | None = Field(None, ge=0)  # None: the RoCE v2 GID with an IPv4 address
    rdma_address: str | None = None  # what perftest clients connect to; None: the GID's IPv4
    flavour: str = "mlx5"
    counter_names: dict[str, str] = Field(default_factory=dict)
    sudo: bool = False  # run `ethtool -m` through `sudo -n`
    tool_paths: dict[str, str] = Field(default_factory=dict)
    tmp_dir: str = "/tmp"
    server_start_timeout_s: float = Field(10.0, gt=0)
    mpi_host: str | None = None  # this host's name in mpirun's -H list; None: its address
    gpus_per_host: int = Field(1, ge=1)
    mpirun_args: list[str] = Field(default_factory=list)  # e.g. ["--allow-run-as-root"]
    nccl_env: dict[str, str] = Field(default_factory=dict)  # e.g. NCCL_IB_HCA, NCCL_IB_GID_INDEX


def host_vars(name: str, device: Device) -> HostVars:
    try:
        return HostVars.model_validate(device.vars)
    except ValidationError as exc:
        problems = [
            f"devices.{name}.vars.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
        ]
        raise ConfigError(name, problems) from None


#: tries of a trace whose source port another socket held (traceroute's "bind: Address
#: already in use"; the kernel lab's ECMP-hole traces met one): the next free port each
TRACE_PORT_TRIES = 3
#: traceroute takes at most this many probes a hop (``-q``; "No more than 10 probes per hop")
TRACEROUTE_MAX_PROBES = 10


class LinuxHost:
    """One RoCE host; ``close()`` ends its SSH session."""

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        self.name = name
        self.device = device
        self.testbed = testbed
        self.vars = host_vars(name, device)
        self.nic = flavour(self.vars.flavour, self.vars.counter_names, device=name)
        self.shell = HostShell(
            name, connect.cli(name, device, posix_shell=True), self.vars.tool_paths
        )
        self.tmp_dir = self.vars.tmp_dir
        self.server_start_timeout_s = self.vars.server_start_timeout_s
        self._endpoint: RdmaEndpoint | None = None
        self._lock = threading.Lock()
        self._rdma_seen = False

    def __repr__(self) -> str:
        return f"LinuxHost({self.name!r})"

    def close(self) -> None:
        self.shell.close()

    @property
    def mpi_host(self) -> str:
        return self.vars.mpi_host or self.device.address or self.name

    def device_time_s(self) -> float:
        """The host's clock (Clock): ``date +%s.%N``."""
        return self._read(DATE_EPOCH_COMMAND, "date", parse_date_epoch)

    # --- links and RDMA devices --------------------------------------------

    def links(self) -> list[LinkInfo]:
        return self._read("ip -j link", "ip", parse_ip_link)

    def link_status_changes(self) -> dict[str, int]:
        """Each netdev's carrier changes (LinkFlapCounts): a flap between two reads shows
        here where a state sample misses it; ``ip -s -s`` prints the count."""
        links = self._read("ip -s -s -j link", "ip", parse_ip_link)
        missing = [li.ifname for li in links if li.carrier_changes is None]
        if missing:
            raise CommandNotSupported(
                self.name, f"ip -s -s -j link printed no carrier_changes for {missing[0]}")
        return {li.ifname: li.carrier_changes for li in links if li.carrier_changes is not None}

    def link_speed_gbps(self, ifname: str) -> float | None:
        """The negotiated speed from sysfs; None when the link is down (the kernel says -1)."""
        path = shlex.quote(f"/sys/class/net/{ifname}/speed")
        result = self.shell.run(f"cat {path}", tool="cat", ok=(0, 1))
        text = result.stdout.strip()
        if result.exit_status not in (0, None) or not text.lstrip("-").isdigit():
            return None
        mbps = int(text)
        return mbps / 1000 if mbps > 0 else None

    def rdma_links(self) -> list[RdmaDevice]:
        """``rdma link show``; a host with no RDMA device (no RDMA netlink, or no link
        listed) raises CapabilityAbsent: its RDMA checks are not proven, not broken."""
        try:
            text = self.shell.run("rdma link show", tool="rdma").stdout
        except CommandFailed as exc:
            if isinstance(exc, CommandNotSupported) or NO_RDMA not in str(exc.raw or exc):
                raise
            raise CapabilityAbsent(
                self.name, f"no RDMA device on host {self.name} (rdma link show: {NO_RDMA})",
                raw=exc.raw,
            ) from None
        if not text.strip():
            raise CapabilityAbsent(
                self.name, f"no RDMA device on host {self.name} (rdma link show lists none)"
            )
        return self.shell.parse(parse_rdma_link, text)

    def require_rdma(self) -> None:
        """Before an RDMA tool runs: a host without RDMA is named as such (once per
        session), not as a host missing perftest or NCCL."""
        if not self._rdma_seen:
            self.rdma_links()
            self._rdma_seen = True

    def rdma_devices(self) -> list[RdmaDevice]:
        """Every RDMA port: ``ibv_devinfo -v`` (MTU, speed, firmware, GIDs) merged with
        ``rdma link`` (state, netdev); GID types from sysfs where ibv_devinfo is too old."""
        links = {(d.name, d.port): d for d in self.rdma_links()}
        merged = []
        for port in self._read("ibv_devinfo -v", "ibv_devinfo", parse_ibv_devinfo):
            link = links.pop((port.name, port.port), None)
            netdev = link.netdev if link else port.netdev
            gids = port.gids
            if any(g.type is None for g in gids):
                gids = self._typed_gids(port.name, port.port, gids)
            merged.append(
                dataclasses.replace(
                    port,
                    state=(link.state if link else None) or port.state,
                    physical_state=(link.physical_state if link else None) or port.physical_state,
                    netdev=netdev,
                    gids=[dataclasses.replace(g, netdev=g.netdev or netdev) for g in gids],
                )
            )
        return merged + list(links.values())  # ports rdma knows and ibv_devinfo did not list

    def rdma_port(self) -> RdmaDevice:
        """This host's test port: ``vars.rdma_device``/``ib_port``, else the one on
        ``vars.netdev``, else the first active Ethernet (RoCE) port."""
        ports = self.rdma_devices()
        v = self.vars
        if v.rdma_device:
            found = [p for p in ports if p.name == v.rdma_device and p.port == v.ib_port]
        elif v.netdev:
            found = [p for p in ports if p.netdev == v.netdev]
        else:
            found = [p for p in ports if p.link_layer == "Ethernet" and p.active]
        if not found:
            listed = ", ".join(f"{p.name}/{p.port} ({p.netdev})" for p in ports) or "none"
            wanted = v.rdma_device or v.netdev or "an active RoCE port"
            raise InfraError(self.name, f"no RDMA port matches {wanted}; the host has: {listed}")
        return found[0]

    def rdma_endpoint(self) -> RdmaEndpoint:
        """Device, port, GID index and address for perftest (looked up once)."""
        with self._lock:
            if self._endpoint is None:
                self._endpoint = self._find_endpoint()
            return self._endpoint

    def _find_endpoint(self) -> RdmaEndpoint:
        v = self.vars
        if v.rdma_device and v.gid_index is not None and v.rdma_address:
            return RdmaEndpoint(v.rdma_device, v.ib_port, v.gid_index, v.rdma_address)
        port = self.rdma_port()
        if v.gid_index is None:
            gid = port.roce_v2_gid()
            if gid is None:
                raise InfraError(
                    self.name,
                    f"{port.name}/{port.port} has no RoCE v2 GID with an IPv4 address "
                    "(is an address configured on its netdev?); set vars.gid_index",
                )
        else:
            gid = next((g for g in port.gids if g.index == v.gid_index), None)
        address = v.rdma_address or (gid.ipv4 if gid else None) or self.device.address
        gid_index = v.gid_index if v.gid_index is not None else gid.index if gid else None
        return RdmaEndpoint(port.name, port.port, gid_index, address)

    def _typed_gids(self, device: str, port: int, gids: list[GidEntry]) -> list[GidEntry]:
        """Fill GID types from sysfs (``.../gid_attrs/types/N`` holds ``RoCE v2``)."""
        types_dir = f"/sys/class/infiniband/{device}/ports/{port}/gid_attrs/types"
        # unpopulated entries answer EINVAL: grep reports them and exits 2
        result = self.shell.run(f"grep -H . {shlex.quote(types_dir)}/*", tool="grep", ok=(0, 1, 2))
        types: dict[int, str] = {}
        for line in result.stdout.splitlines():
            path, _, value = line.partition(":")
            index = path.rsplit("/", 1)[-1]
            if index.isdigit() and value.strip():
                types[int(index)] = value.strip()
        return [dataclasses.replace(g, type=g.type or types.get(g.index)) for g in gids]

    # --- counters ------------------------------------------------------------

    def ethtool_stats(self, ifname: str | None = None) -> dict[str, int]:
        """``ethtool -S``: every counter the NIC driver exposes, by its own name."""
        name = shlex.quote(ifname or self._netdev())
        return self._read(f"ethtool -S {name}", "ethtool", parse_ethtool_stats)

    def pfc_counters(self, ifname: str | None = None) -> PfcCounters:
        """Per-priority pause and discard counters, named through the NIC flavour."""
        name = ifname or self._netdev()
        return pfc_counters(name, self.ethtool_stats(name), self.nic)

    def nic_phy_errors(self, ifname: str | None = None) -> NicPhyErrors:
        """PHY bits received and bits RS-FEC corrected (``ethtool -S``, per the NIC flavour):
        two readings give the NIC receiver's pre-FEC BER."""
        name = ifname or self._netdev()
        return nic_phy_errors(name, self.ethtool_stats(name), self.nic, self.name)

    # --- probes ----------------------------------------------------------------

    def probe_address(self) -> str:
        """The netdev's first global IPv4 address (``ip -j addr show dev NETDEV``)."""
        netdev = self._netdev()
        found = self._read(f"ip -j addr show dev {shlex.quote(netdev)}", "ip",
                           parse_ip_addresses)
        if not found.get(netdev):
            raise CapabilityAbsent(self.name, f"{netdev} on host {self.name} has no IPv4 "
                                   "address to probe")
        return found[netdev][0]

    def udp_traces(self, target: str, sports: Sequence[int], *, dport: int = 33434,
                   probes: int = 3, wait_s: float = 0.5, max_hops: int = 8) -> list[UdpTrace]:
        """``traceroute -n -U --sport=S -p DPORT`` once per source port, in one command
        line (traceroute's header goes to stderr, hence ``2>&1``).

        ``-w MAX,0,0``: traceroute's default also gives up on a probe after 3x the round
        trip of another answer from its hop (HERE) or 10x a later hop's (NEAR); at the
        lab's 0.1 ms round trips that is a few milliseconds, and on a busy machine a late
        answer was printed ``*``, a loss no link caused (a healthy kernel-lab link lost 23
        of 60 probes beside a CPU-heavy test). Every probe gets ``wait_s``.

        traceroute takes at most ``TRACEROUTE_MAX_PROBES`` a hop (``-q``; it refuses more):
        more ``probes`` run as several traces of the same 5-tuple (the same path), merged
        hop by hop."""
        if not sports:
            return []
        if probes < 1:
            raise ValueError(f"probes per hop must be at least 1, not {probes}")
        runs = [TRACEROUTE_MAX_PROBES] * (probes // TRACEROUTE_MAX_PROBES)
        runs += [probes % TRACEROUTE_MAX_PROBES] if probes % TRACEROUTE_MAX_PROBES else []
        chosen = [int(s) for s in sports]
        found = self._traces(target, chosen, dport, runs, wait_s, max_hops)
        for _ in range(TRACE_PORT_TRIES - 1):  # a port another socket holds: the next free one
            busy = [i for i, t in enumerate(found) if t is None]
            if not busy:
                break
            taken = set(chosen)
            for i in busy:
                while chosen[i] in taken:
                    chosen[i] += 1
                taken.add(chosen[i])
            again = self._traces(target, [chosen[i] for i in busy], dport, runs, wait_s,
                                 max_hops)
            for i, t in zip(busy, again, strict=True):
                found[i] = t
        busy = [chosen[i] for i, t in enumerate(found) if t is None]
        if busy:
            raise CommandFailed(self.name, f"traceroute: source ports {busy} still in use on "
                                f"the host after {TRACE_PORT_TRIES} tries (bind: Address "
                                "already in use)")
        return [t for t in found if t is not None]

    def _traces(self, target: str, sports: list[int], dport: int, runs: list[int],
                wait_s: float, max_hops: int) -> list[UdpTrace | None]:
        """One trace per source port, its ``runs`` merged; None where the port was taken."""
        dst = shlex.quote(target)
        line = "; ".join(
            f"traceroute -n -U --sport={s} -p {int(dport)} -q {q} "
            f"-w {wait_s:g},0,0 -m {int(max_hops)} {dst} 2>&1" for s in sports for q in runs)
        worst_s = len(sports) * max_hops * sum(runs) * wait_s + 10.0  # every probe unanswered
        # exit 1: a trace whose port was taken, when it ran last (its text says so)
        out = self.shell.run(line, tool="traceroute", timeout_s=worst_s, ok=(0, 1)).stdout
        traces = self.shell.parse(parse_traceroute, out)
        if len(traces) != len(sports) * len(runs):
            raise ParseError(self.name, f"{len(traces)} traces for {len(sports)} source ports "
                             f"x {len(runs)} run(s)", command="traceroute",
                             expected=f"{len(sports) * len(runs)} traces")
        found: list[UdpTrace | None] = []
        for i, s in enumerate(sports):
            mine = traces[i * len(runs):(i + 1) * len(runs)]
            found.append(None if any(not t.hops for t in mine) else  # its port was taken
                         dataclasses.replace(merge_traces(mine), sport=s, dport=int(dport)))
        return found

    def udp_streams_start(self, server: Any, *, streams: int, rate_pps: float,
                          payload_bytes: int, duration_s: float,
                          port: int = 5201, sport: int | None = None) -> UdpStreamsRun:
        """``iperf3 -u -P STREAMS`` from this host to ``server`` (another LinuxHost), in the
        background: the server (``iperf3 -s -1 -p PORT``) first, listening, then the client,
        its JSON report (``-J``) written to a file that ``udp_streams_result`` reads. ``-b``
        is per stream (payload bits), so each stream sends ``rate_pps`` datagrams a second.
        ``sport``: ``--cport`` (iperf3 3.12 binds every parallel stream to it and hangs, so
        one stream only)."""
        if sport is not None and streams != 1:
            raise ValueError(f"a source port pins one stream, not {streams}")
        cport = "" if sport is None else f" --cport {int(sport)}"
        target = server.probe_address()
        srv_path = f"{server.tmp_dir}/labtest-iperf3-s{int(port)}.log"
        srv_log = shlex.quote(srv_path)
        server.shell.run(
            f"nohup {server.shell.tool('iperf3')} -s -1 -p {int(port)} > {srv_log} 2>&1 "
            "< /dev/null &", tool="iperf3")
        listening = f"ss -ltnH 'sport = :{int(port)}'"
        deadline = labtime.monotonic() + self.server_start_timeout_s
        while f":{int(port)}" not in server.shell.run(listening, tool="ss").stdout:
            if labtime.monotonic() > deadline:
                said = server.shell.run(f"cat {srv_log}", tool="cat", ok=(0, 1)).stdout
                raise TransportTimeout(server.name, f"iperf3 -s did not listen on {port} "
                                       f"within {self.server_start_timeout_s:g} s"
                                       + (f": {telling(said)}" if said.strip() else ""),
                                       raw=said)
            labtime.sleep(0.05)
        # listening, its log has nothing more to say: unlinked now (the server writes on
        # into the open file), it leaves nothing in the host's tmp folder when it exits
        server._forget(srv_path)
        log = f"{self.tmp_dir}/labtest-iperf3-c{int(port)}-{server.name}.json"
        bps = rate_pps * payload_bytes * 8
        started = self.device_time_s()
        self.shell.run(
            f"rm -f {shlex.quote(log)}; nohup {self.shell.tool('iperf3')} -c "
            f"{shlex.quote(target)} -u -p {int(port)} -b {bps:.0f} -l {int(payload_bytes)} "
            f"-t {duration_s:g} -P {int(streams)}{cport} -J > {shlex.quote(log)} 2>&1 "
            "< /dev/null &",
            tool="iperf3")
        return UdpStreamsRun(self.name, server.name, target, int(port), int(streams),
                             float(rate_pps), int(payload_bytes), float(duration_s), log,
                             started)

    def udp_streams_result(self, run: UdpStreamsRun, *,
                           timeout_s: float) -> list[UdpStreamResult]:
        """The run's streams once its report is whole (polled until ``timeout_s`` after the
        streams' end); iperf3's own error is raised as a DataplaneFailed once its streams had
        connected (they died under way: 25 % loss broke its control socket), else as a
        CommandFailed (no server, no tool)."""
        deadline = labtime.monotonic() + run.duration_s + timeout_s
        command = f"cat {shlex.quote(run.log_path)}"
        while True:
            text = self.shell.run(command, tool="cat", ok=(0, 1)).stdout
            try:
                found = self.shell.parse(parse_iperf3_udp, text)
            except ParseError as exc:
                if INCOMPLETE not in str(exc) and text.strip():
                    self._forget(run.log_path)  # its text goes with the error (raw)
                    failure = iperf3_failure(text)
                    if failure is not None and failure[1]:  # died under way: the network's
                        raise DataplaneFailed(self.name, f"iperf3 to {run.server}: {exc}",
                                              raw=text, evidence=failure[0]) from None
                    if failure is not None:
                        raise CommandFailed(self.name, f"iperf3 to {run.server}: {exc}",
                                            raw=text) from None
                    raise
            else:  # read: its report leaves nothing behind in the host's tmp folder
                self._forget(run.log_path)
                return found
            if labtime.monotonic() > deadline:
                raise TransportTimeout(self.name, f"iperf3 to {run.server} wrote no whole "
                                       f"report {timeout_s:g} s after its {run.duration_s:g} s")
            labtime.sleep(min(0.5, max(run.duration_s / 10, 0.05)))

    def _forget(self, path: str) -> None:
        self.shell.run(f"rm -f {shlex.quote(path)}", tool="rm", ok=(0, 1))

    def rdma_hw_counters(self, device: str | None = None, port: int = 1) -> RdmaHwCounters:
        """RDMA hardware counters (CNPs, ECN-marked packets, out-of-sequence, retransmits):
        ``rdma statistic``, or sysfs ``hw_counters`` where that is unsupported."""
        dev = device or self.vars.rdma_device or self.rdma_port().name
        command = f"rdma statistic show link {shlex.quote(f'{dev}/{port}')}"
        try:
            records = self._read(command, "rdma", parse_rdma_statistic)
        except (CommandFailed, ParseError) as exc:
            log.info("%s: %s failed (%s); reading sysfs hw_counters", self.name, command, exc)
        else:
            for record in records:
                if (record.device, record.port) == (dev, port):
                    return hw_counters(dev, port, record.counters, self.nic)
        return self._sysfs_hw_counters(dev, port)

    def _sysfs_hw_counters(self, device: str, port: int) -> RdmaHwCounters:
        path = shlex.quote(f"/sys/class/infiniband/{device}/ports/{port}/hw_counters")
        record = self._read(f"cd {path} && grep -H . *", "grep",
                            lambda text: parse_sysfs_hw_counters(text, port))
        return hw_counters(device, port, record.counters, self.nic)

    # --- PCIe ------------------------------------------------------------------

    def pcie_link(self, ifname: str | None = None) -> PcieLink:
        """The NIC's PCIe link, trained (current) against capable (max), from sysfs: a
        NIC in a narrower slot or a link that trained down caps RDMA below line rate."""
        path = shlex.quote(f"/sys/class/net/{ifname or self._netdev()}/device")
        files = "current_link_speed current_link_width max_link_speed max_link_width uevent"
        return self._read(f"cd {path} && grep -H . {files}", "grep", parse_pcie_sysfs)

    # --- optics ----------------------------------------------------------------

    def module_dom(self, ifname: str | None = None) -> Transceiver:
        """``ethtool -m``: inventory, DOM per lane, thresholds and flags of the module."""
        sudo = "sudo -n " if self.vars.sudo else ""
        name = shlex.quote(ifname or self._netdev())
        try:
            return self._read(f"{sudo}ethtool -m {name}", "ethtool", parse_ethtool_module)
        except CommandFailed as exc:
            if isinstance(exc, CommandNotSupported) or NO_MODULE not in str(exc.raw or exc):
                raise
            raise CapabilityAbsent(
                self.name, f"no pluggable module readable at {self.name}:{ifname or name} "
                f"(ethtool -m: {NO_MODULE}: a virtual NIC, or a driver without module EEPROM "
                "access)", raw=exc.raw,
            ) from None

    # --- perftest ----------------------------------------------------------------

    def perftest_bandwidth(
        self, server: Any, server_address: str | None, spec: PerftestSpec, *, timeout_s: float
    ) -> PerftestBandwidthPair:
        """This host runs the client, ``server`` (another LinuxHost) the server."""
        return self._one_pair(server, server_address, spec, timeout_s, PerftestBandwidthPair)

    def perftest_latency(
        self, server: Any, server_address: str | None, spec: PerftestSpec, *, timeout_s: float
    ) -> PerftestLatencyPair:
        return self._one_pair(server, server_address, spec, timeout_s, PerftestLatencyPair)

    def _one_pair(
        self,
        server: Any,
        server_address: str | None,
        spec: PerftestSpec,
        timeout_s: float,
        kind: type[_Pair],
    ) -> _Pair:
        """One pair, this host the client, of the kind the caller's method promises: a spec
        of the other kind is refused (naming the method it belongs to) before any process
        starts."""
        if is_latency(spec.test) != (kind is PerftestLatencyPair):
            other = "latency" if is_latency(spec.test) else "bandwidth"
            raise ValueError(f"{spec.test} is a {other} test: use perftest_{other}")
        _require_rdma(self, server)
        (result,) = run_pairs(
            [PerftestPair(self, server, spec, server_address)], timeout_s=timeout_s
        )
        assert isinstance(result, kind)
        return result

    def perftest_pairs(
        self, pairs: Sequence[tuple[Any, Any, PerftestSpec]], *, timeout_s: float
    ) -> list[PerftestBandwidthPair | PerftestLatencyPair]:
        """Several (client, server, spec) pairs at once, servers first (``run_pairs``)."""
        _require_rdma(*(h for c, s, _spec in pairs for h in (c, s)))
        return run_pairs([PerftestPair(c, s, spec) for c, s, spec in pairs], timeout_s=timeout_s)

    def run_bandwidth(
        self,
        server: LinuxHost,
        *,
        server_address: str | None = None,
        timeout_s: float | None = None,
        **spec_fields: Any,
    ) -> PerftestBandwidthPair:
        """Keyword form: ``run_bandwidth(peer, test="ib_write_bw", size_bytes=65536, qps=4,
        duration_s=10, tcp_port=18515, bidirectional=True, gid_index=3)`` (PerftestSpec fields;
        ``size_bytes=None`` sweeps all sizes)."""
        spec = PerftestSpec(**{"test": "ib_write_bw", **spec_fields})
        budget = timeout_s if timeout_s is not None else default_timeout_s(spec)
        return self.perftest_bandwidth(server, server_address, spec, timeout_s=budget)

    def run_latency(
        self,
        server: LinuxHost,
        *,
        server_address: str | None = None,
        timeout_s: float | None = None,
        **spec_fields: Any,
    ) -> PerftestLatencyPair:
        spec = PerftestSpec(**{"test": "ib_write_lat", "size_bytes": 2, **spec_fields})
        budget = timeout_s if timeout_s is not None else default_timeout_s(spec)
        return self.perftest_latency(server, server_address, spec, timeout_s=budget)

    # --- nccl-tests --------------------------------------------------------------

    def nccl_test(
        self,
        spec: NcclSpec,
        hosts: Sequence[str],
        *,
        timeout_s: float,
        ranks_per_host: int | None = None,
    ) -> NcclResult:
        """``mpirun`` from this host across ``hosts`` (names as mpirun reaches them);
        ranks per host default to ``vars.gpus_per_host`` / ``spec.gpus_per_rank``."""
        ranks = ranks_per_host or max(1, self.vars.gpus_per_host // spec.gpus_per_rank)
        return run_collective(
            self.shell,
            spec,
            hosts,
            ranks_per_host=ranks,
            timeout_s=timeout_s,
            mpirun_args=self.vars.mpirun_args,
            env=self.vars.nccl_env,
        )

    def run_collective(
        self,
        hosts: Sequence[str | LinuxHost],
        *,
        test: str = "all_reduce_perf",
        min_bytes: int = 8,
        max_bytes: int = 128 * 2**20,
        step_factor: int = 2,
        iterations: int = 20,
        gpus_per_host: int | None = None,
        gpus_per_rank: int = 1,
        extra_env: dict[str, str] | None = None,
        timeout_s: float = NCCL_TIMEOUT_S,
    ) -> NcclResult:
        """Keyword form of :meth:`nccl_test`; hosts may be LinuxHost drivers or names."""
        spec = NcclSpec(
            collective=test,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            step_factor=step_factor,
            iterations=iterations,
            gpus_per_rank=gpus_per_rank,
            env=dict(extra_env or {}),
        )
        names = [h.mpi_host if isinstance(h, LinuxHost) else h for h in hosts]
        ranks = max(1, gpus_per_host // gpus_per_rank) if gpus_per_host else None
        return self.nccl_test(spec, names, timeout_s=timeout_s, ranks_per_host=ranks)

    # --- helpers ---------------------------------------------------------------

    def _read(self, command: str, tool: str, parse: Callable[[str], T]) -> T:
        return self.shell.parse(parse, self.shell.run(command, tool=tool).stdout)

    def _netdev(self) -> str:
        netdev = self.vars.netdev or self.rdma_port().netdev
        if not netdev:
            raise ConfigError(self.name, [f"devices.{self.name}.vars.netdev: needed, not set"])
        return netdev


def _require_rdma(*hosts: Any) -> None:
    """perftest needs an RDMA device at both ends: a host without one is named as such."""
    for host in dict.fromkeys(hosts):
        check = getattr(host, "require_rdma", None)
        if check is not None:
            check()
