"""The linux host driver against SSH servers playing two RoCE hosts.

Each ``FakeLinux`` answers the commands the driver really sends with the real
published outputs under ``samples/`` and keeps a process table, so a
perftest server started in the background has a PID, ``kill PID`` removes it,
and ``ps -eo pid,comm`` lists what is still running: the tests can prove that
no server is ever left behind. The samples come from different machines; where
two of them must describe one host the fake renames the device (noted inline).
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from labtest.capabilities.host import (
    Collectives,
    ModuleDom,
    NicCounters,
    PerftestBandwidthPair,
    PerftestSpec,
    RdmaDevices,
)
from labtest.capabilities.host import Perftest as PerftestCapability
from labtest.drivers.linux.driver import LinuxHost
from labtest.drivers.linux.perftest import PerftestPair, run_pairs
from labtest.drivers.linux.shell import ToolMissing
from labtest.emulation.sshserver import CliReply, SshServer
from labtest.errors import (
    CommandFailed,
    ConfigError,
    ParseError,
    ProtocolError,
    TransportTimeout,
)
from labtest.registry import capabilities_of, open_driver
from labtest.testbed import model

PASSWORD = "Fake-Linux-Host-Pass-7f3a"
PERFTEST = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat")
WAITING = "\n************************************\n* Waiting for client to connect... *\n"

# The option list perftest prints for --help (perftest_parameters.c usage()), abridged.
HELP = """Usage:
  {tool}            start a server and wait for connection
  {tool} <host>     connect to server at <host>

Options:
  -a, --all  Run sizes from 2 till 2^23
  -D, --duration  Run test for a customized period of seconds.
  -p, --port=<port>  Listen on/connect to port <port> (default 18515)
  -x, --gid-index=<index>  Test uses GID with GID index
{json}"""
JSON_HELP = "      --out_json  Save the report in a json file\n"

# Open MPI's message for a missing executable (as quoted in QEF/q-e#32).
MPI_NO_EXE = """--------------------------------------------------------------------------
mpirun was unable to find the specified executable file, and therefore
did not launch the job.  This error was first reported for process
rank 0; it may have occurred for other processes as well.

Node:       gpu-b
Executable: {exe}
--------------------------------------------------------------------------
"""


@dataclass
class Proc:
    tool: str
    port: int
    log: str
    polls: int = 0
    ps_calls: int = 0


#: what the SSH transport puts before each command on a POSIX host (process-group kill)
_GROUP_MARKER = re.compile(r"^echo labtest-pgid-[0-9a-f]+:\$\$ >&2; ")


@dataclass
class FakeLinux:
    """One emulated host: samples to answer with, a process table, files, behaviour flags."""

    name: str
    address: str
    sample: Callable[[str], str]
    lab: dict[str, FakeLinux]
    ssh: SshServer | None = None
    procs: dict[int, Proc] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    client_runs: list[tuple[float, float]] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    out_json: bool = False
    listen_after_polls: int = 2
    never_listen: bool = False
    server_dies: bool = False
    drop_client: bool = False
    client_run_s: float = 0.0
    old_ibv_devinfo: bool = False
    rdma_stat_supported: bool = True
    missing_remote: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_pid: int = 4242

    def run(self, command: str) -> CliReply:
        command = _GROUP_MARKER.sub("", command)  # a real shell prints its PID and runs the rest
        with self.lock:
            self.commands.append(command)
        words = command.split()
        tool = words[2 + words.index("-eL")] if words[0] == "nohup" else words[0]
        if words[:2] == ["sudo", "-n"]:
            tool = words[2]
        if tool in self.missing:
            return CliReply("", 127, f"bash: line 1: {tool}: command not found\n")
        for pattern, answer in self.ROUTES:
            if match := re.fullmatch(pattern, command):
                return answer(self, *match.groups())
        return CliReply("", 2, f"fake host: no answer for {command!r}\n")

    # --- perftest processes ---------------------------------------------------

    def help(self, tool: str) -> CliReply:
        if tool == "mpirun":
            return CliReply("mpirun (Open MPI) 4.1.5\n")
        return CliReply(HELP.format(tool=tool, json=JSON_HELP if self.out_json else ""), 1)

    def start(self, tool: str, args: str, log: str) -> CliReply:
        with self.lock:
            pid, self.next_pid = self.next_pid, self.next_pid + 1
            port = int(shlex.split(args)[shlex.split(args).index("-p") + 1])
            if self.server_dies:
                self.files[log] = " Unable to find the Infiniband/RoCE device\n"
            else:
                self.procs[pid] = Proc(tool, port, log)
                self.files[log] = WAITING
        return CliReply(f"{pid}\n")

    def ss(self, port: str) -> CliReply:
        header = "State  Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess\n"
        with self.lock:
            for proc in self.procs.values():
                if proc.port == int(port):
                    proc.polls += 1
                    if not self.never_listen and proc.polls >= self.listen_after_polls:
                        return CliReply(header + f"LISTEN 0      1   0.0.0.0:{port}   0.0.0.0:*\n")
        return CliReply(header)

    def ps_pid(self, pid: str) -> CliReply:
        proc = self.procs.get(int(pid))
        if proc is None:
            return CliReply("", 1)
        proc.ps_calls += 1  # the first look catches stdbuf before it has exec'd the tool
        return CliReply(("stdbuf" if proc.ps_calls == 1 else proc.tool[:15]) + "\n")

    def ps_all(self) -> CliReply:
        rows = "".join(f"{pid:>7} {p.tool[:15]}\n" for pid, p in sorted(self.procs.items()))
        return CliReply("    PID COMMAND\n      1 systemd\n" + rows)

    def kill(self, signal: str | None, pid: str) -> CliReply:
        with self.lock:
            if self.procs.pop(int(pid), None) is None:
                return CliReply("", 1, f"bash: line 1: kill: ({pid}) - No such process\n")
        return CliReply("")

    def cat(self, path: str) -> CliReply:
        if path.startswith("/sys/class/net/") and path.endswith("/speed"):
            return CliReply("400000\n")  # sysfs reports Mb/s
        if path in self.files:
            return CliReply(self.files[path])
        return CliReply("", 1, f"cat: {path}: No such file or directory\n")

    def rm(self, path: str) -> CliReply:
        with self.lock:
            self.files.pop(path, None)
        return CliReply("")

    def client(self, tool: str, args: str, address: str) -> CliReply:
        argv = shlex.split(args)
        port = int(argv[argv.index("-p") + 1])
        peer = self.lab.get(address)
        proc = next(
            (
                (pid, p)
                for pid, p in (peer.procs.items() if peer else ())
                if p.port == port and p.tool == tool and p.polls >= peer.listen_after_polls
            ),
            None,
        )
        if proc is None:
            return CliReply(
                "",
                1,
                f"Couldn't connect to {address}:{port}\n Unable to init the socket connection\n",
            )
        latency = tool.endswith("_lat")
        text = self.sample(
            "perftest_lat/mlx4_write_lat_sweep_percentiles.txt"
            if latency
            else "perftest_bw/bnxt_write_bw_3qp_duration_client.txt"
        )
        if self.drop_client:
            assert self.ssh is not None
            self.ssh.mode = "drop"  # the SSH server sends half of this answer, then cuts TCP
            return CliReply(text)
        start = time.monotonic()
        time.sleep(self.client_run_s)
        json_file = next((a.split("=", 1)[1] for a in argv if a.startswith("--out_json_file=")), "")
        with self.lock:
            self.client_runs.append((start, time.monotonic()))
            if json_file:
                self.files[json_file] = self.sample("perftest_bw/out_json_mlx5_11.json.txt")
        assert peer is not None
        with peer.lock:  # the server prints its report and exits
            pid, server = proc
            peer.files[server.log] += self.sample(
                "perftest_lat/rxe_send_lat_server_glued.txt"
                if latency
                else "perftest_bw/deepops_oci_write_bw_server_unit_quirk.txt"
            )
            peer.procs.pop(pid, None)
        return CliReply(text)

    # --- inventory and counters ------------------------------------------------

    def ip_link(self) -> CliReply:
        return CliReply(self.sample("ip_link/netplan_status_fixture_ip_d_j_addr.txt"))

    def rdma_link(self) -> CliReply:
        # the rdma link sample is from another ConnectX host: name its first port like
        # the ibv_devinfo sample's device so both describe this host
        text = self.sample("rdma/rdma_link_spiderpool_cx5.txt")
        return CliReply(text.replace("mlx5_0/", "mlx5_bond_0/"))

    def ibv_devinfo(self) -> CliReply:
        text = self.sample("rdma/ibv_devinfo_vv_mlx5_bond.txt")
        if self.old_ibv_devinfo:  # rdma-core before GID types were printed
            text = re.sub(r", RoCE v[12]", "", text)
        return CliReply(text)

    def gid_types(self, types_dir: str) -> CliReply:
        # sysfs gid_attrs/types: populated entries hold "IB/RoCE v1" or "RoCE v2"
        types = {0: "IB/RoCE v1", 1: "RoCE v2", 2: "IB/RoCE v1", 3: "RoCE v2"}
        out = "".join(f"{types_dir}/{i}:{t}\n" for i, t in types.items())
        return CliReply(out, 2, f"grep: {types_dir}/4: Invalid argument\n")

    def ethtool_stats(self, ifname: str) -> CliReply:
        return CliReply(self.sample("ethtool_stats/cx4lx_grep_discards_pause.txt"))

    def ethtool_module(self, sudo: str | None, ifname: str) -> CliReply:
        if ifname == "eth9":
            return CliReply("garbage from a confused tool\n")
        return CliReply(self.sample("ethtool_module/sff8636_mellanox_sr4_cumulus.txt"))

    def rdma_stat(self, link: str) -> CliReply:
        if not self.rdma_stat_supported:
            return CliReply("", 1, "error: Operation not supported\n")
        lines = self.sample("rdma/rdma_stat_show_four_links.txt").splitlines(keepends=True)
        return CliReply("".join(ln for ln in lines if ln.startswith(f"link {link} ")))

    def sysfs_hw_counters(self, path: str) -> CliReply:
        # `grep -H . *` in hw_counters prints "file:value"; values from show_counters
        text = self.sample("rdma/show_counters_mlx5_bond_cnp.txt")
        pairs = re.findall(r"^(\w+): (\d+)$", text, re.M)
        return CliReply("".join(f"{name}:{value}\n" for name, value in pairs))

    def mpirun(self, args: str) -> CliReply:
        if self.missing_remote and self.missing_remote in args:
            return CliReply("", 1, MPI_NO_EXE.format(exe=self.missing_remote))
        return CliReply(self.sample("nccl/gh200_all_reduce_wrong_nonzero.txt"), 1)

    ROUTES: tuple[tuple[str, Callable[..., CliReply]], ...] = (
        (r"(\S+) (?:--help|--version)", help),
        (r"nohup stdbuf -oL -eL (\S+) (.*) > (\S+) 2>&1 < /dev/null & echo \$!", start),
        (r"ss -ltn 'sport = :(\d+)'", ss),
        (r"ps -o comm= -p (\d+)", ps_pid),
        (r"ps -eo pid,comm", ps_all),
        (r"kill (-9 )?(\d+)", kill),
        (r"cat (\S+)", cat),
        (r"rm -f (\S+)", rm),
        (rf"((?:{'|'.join(PERFTEST)})) (.*) (\S+)", client),
        (r"ip -j link", ip_link),
        (r"rdma link show", rdma_link),
        (r"ibv_devinfo -v", ibv_devinfo),
        (r"grep -H \. (\S+)/\*", gid_types),
        (r"ethtool -S (\S+)", ethtool_stats),
        (r"(sudo -n )?ethtool -m (\S+)", ethtool_module),
        (r"rdma statistic show link (\S+)", rdma_stat),
        (r"cd (\S+) && grep -H \. \*", sysfs_hw_counters),
        (r"mpirun (.*)", mpirun),
    )  # fmt: skip


class FakeShell:
    prompt = "root@host:~# "

    def __init__(self, host: FakeLinux) -> None:
        self.host = host

    def run(self, command: str) -> CliReply:
        return self.host.run(command)


@dataclass
class Lab:
    hosts: list[LinuxHost]
    fakes: list[FakeLinux]

    def process_table(self, i: int) -> str:
        """What ``ps`` shows on host ``i``, asked over SSH like a person would."""
        return self.hosts[i].shell.run("ps -eo pid,comm", tool="ps").stdout


@pytest.fixture
def make_lab(tmp_path: Path, sample: Callable[[str], str]) -> Iterator[Callable[..., Lab]]:
    servers: list[SshServer] = []
    drivers: list[LinuxHost] = []

    def make(*host_vars: dict[str, Any], **flags: Any) -> Lab:
        registry: dict[str, FakeLinux] = {}
        fakes, devices = [], {}
        for i, extra in enumerate(host_vars or ({}, {})):
            name, address = f"h{i + 1}", f"10.0.0.{i + 1}"
            fake = FakeLinux(name, address, sample, registry, **flags)
            server = SshServer(lambda fake=fake: FakeShell(fake), password=PASSWORD).start()
            fake.ssh = server
            servers.append(server)
            server.write_known_hosts(tmp_path / "known_hosts")
            registry[address] = fake
            fakes.append(fake)
            base = {"rdma_address": address, "gid_index": 3, "rdma_device": "mlx5_bond_0"}
            devices[name] = {
                "role": "host",
                "driver": "linux",
                "address": "127.0.0.1",
                "ssh": {
                    "port": server.port,
                    "username": "admin",
                    "password": PASSWORD,
                    "known_hosts": str(tmp_path / "known_hosts"),
                    "timeout_s": 5,
                    "command_timeout_s": 10,
                },
                "vars": {**base, "server_start_timeout_s": 2, "netdev": "ens6f0np0", **extra},
            }
        testbed = model.Testbed.model_validate({"name": "fake-lab", "devices": devices})
        hosts = [open_driver(name, testbed) for name in devices]
        drivers.extend(hosts)
        return Lab(hosts, fakes)

    yield make
    for driver in drivers:
        driver.close()
    for server in servers:
        server.stop()


# --- registration, inventory, counters ------------------------------------------


def test_registered_driver_offers_every_host_capability(make_lab):
    lab = make_lab()
    host = lab.hosts[0]
    assert type(host) is LinuxHost
    for protocol in (RdmaDevices, NicCounters, ModuleDom, PerftestCapability, Collectives):
        assert isinstance(host, protocol), protocol
    offered = set(capabilities_of(LinuxHost))
    assert {"RdmaDevices", "NicCounters", "ModuleDom", "Perftest", "Collectives"} <= offered


def test_rdma_devices_merge_devinfo_link_and_pick_the_roce_v2_gid(make_lab):
    lab = make_lab({"gid_index": None, "rdma_address": None, "rdma_device": None})
    host = lab.hosts[0]
    ports = {(p.name, p.port): p for p in host.rdma_devices()}
    bond = ports[("mlx5_bond_0", 1)]
    assert (bond.state, bond.netdev, bond.active_mtu_bytes) == ("ACTIVE", "ens6f0np0", 4096)
    assert bond.fw_version and bond.gids[3].netdev == "ens6f0np0"
    assert ports[("mlx5_1", 1)].netdev == "ens6f1np1"  # known to rdma link only
    endpoint = host.rdma_endpoint()  # found through vars.netdev
    assert endpoint == type(endpoint)("mlx5_bond_0", 1, 3, "27.105.179.3")


def test_gid_types_come_from_sysfs_when_ibv_devinfo_is_old(make_lab):
    lab = make_lab({"gid_index": None}, old_ibv_devinfo=True)
    bond = lab.hosts[0].rdma_port()
    assert [g.type for g in bond.gids] == ["IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2"]
    assert bond.roce_v2_gid().index == 3


def test_links_and_speed(make_lab):
    host = make_lab().hosts[0]
    links = {link.ifname: link for link in host.links()}
    assert links["enp0s31f6"].mtu_bytes == 1500 and links["wwan0"].operstate == "DOWN"
    assert host.link_speed_gbps("ens6f0np0") == 400.0


def test_ethtool_stats_and_mlx5_pfc_names(make_lab):
    lab = make_lab()
    host = lab.hosts[0]
    stats = host.ethtool_stats()
    assert stats["tx_pause_ctrl_phy"] == 1266552 and stats["rx_discards_phy"] == 0
    pfc = host.pfc_counters()
    assert pfc.flavour == "mlx5" and pfc.ifname == "ens6f0np0"
    assert pfc.rx_discards_by_prio == dict.fromkeys(range(8), 0)
    assert pfc.rx_pause_by_prio == {}  # the sample was grep'd without them: absent, not zero
    assert (pfc.tx_pause_frames, pfc.rx_pause_frames, pfc.tx_pause_storm_errors) == (1266552, 0, 0)
    assert lab.fakes[0].commands == ["ethtool -S ens6f0np0"] * 2  # vars.netdev, no lookup


def test_counter_names_can_be_overridden_and_are_checked(make_lab):
    lab = make_lab({"counter_names": {"tx_pause_frames": "tx_global_pause_duration"}})
    assert lab.hosts[0].pfc_counters().tx_pause_frames == 555665182
    with pytest.raises(ConfigError, match=r"rx_pause_prio.*\{prio\}"):
        make_lab({"counter_names": {"rx_pause_prio": "rx_pause"}})
    with pytest.raises(ConfigError, match="tx_pauses"):
        make_lab({"counter_names": {"tx_pauses": "x"}})


def test_rdma_hw_counters_from_rdma_statistic(make_lab):
    host = make_lab({"rdma_device": "mlx5_0"}).hosts[0]
    counters = host.rdma_hw_counters()
    assert (counters.device, counters.port) == ("mlx5_0", 1)
    assert counters.out_of_buffer == 135 and counters["resp_cqe_error"] == 1009
    assert counters.np_cnp_sent == 0 and counters.np_ecn_marked_roce_packets == 0


def test_rdma_hw_counters_fall_back_to_sysfs_and_map_aliases(make_lab):
    lab = make_lab({"counter_names": {"rnr_nak_retry_err": "lifespan"}}, rdma_stat_supported=False)
    counters = lab.hosts[0].rdma_hw_counters("mlx5_bond_0", 1)
    assert counters.np_cnp_sent == 1052612505
    assert counters.np_ecn_marked_roce_packets == 21278189006
    assert counters.out_of_sequence == 1811101
    assert counters.rnr_nak_retry_err == 0  # the NIC's own counter wins over an alias
    assert lab.fakes[0].commands[-1].startswith("cd /sys/class/infiniband/mlx5_bond_0/ports/1/")


def test_module_dom_is_the_shared_transceiver_record(make_lab):
    lab = make_lab({"sudo": True})
    dom = lab.hosts[0].module_dom()
    assert lab.fakes[0].commands[-1] == "sudo -n ethtool -m ens6f0np0"
    assert dom.vendor and dom.vendor.startswith("Mellanox") and len(dom.lanes) == 4
    assert all(lane.rx_power_dbm is not None for lane in dom.lanes)


def test_parse_errors_name_the_host_and_keep_the_output(make_lab):
    host = make_lab().hosts[0]
    with pytest.raises(ParseError) as info:
        host.module_dom("eth9")
    assert info.value.device == "h1" and "garbage" in (info.value.raw or "")


def test_a_missing_tool_is_named(make_lab):
    lab = make_lab(missing={"ethtool"})
    with pytest.raises(ToolMissing, match="ethtool is not installed on h1") as info:
        lab.hosts[0].ethtool_stats()
    assert info.value.tool == "ethtool" and isinstance(info.value, CommandFailed)


# --- perftest ---------------------------------------------------------------------


def _assert_no_server_left(lab: Lab) -> None:
    for i, fake in enumerate(lab.fakes):
        table = lab.process_table(i)
        assert not any(tool in table for tool in PERFTEST), table
        assert not fake.procs


def test_bandwidth_pair_collects_both_sides_and_stops_the_server(make_lab):
    lab = make_lab()
    client, server = lab.hosts
    pair = client.run_bandwidth(server, test="ib_write_bw", qps=3, duration_s=10)
    assert isinstance(pair, PerftestBandwidthPair)
    assert pair.client.device == "bnxt_re0" and pair.client.best_average_gbps == 363.47
    assert pair.server is not None and pair.server.server_side
    assert pair.server.rows[0].bw_average_gbps is None and pair.server.warnings  # unit quirk
    start = next(c for c in lab.fakes[1].commands if c.startswith("nohup"))
    assert "-d mlx5_bond_0 -i 1 -x 3 -q 3 -s 65536 -D 10 --report_gbits -F -p 18515" in start
    ran = next(c for c in lab.fakes[0].commands if c.startswith("ib_write_bw -d"))
    assert ran.endswith(" 10.0.0.2") and "--out_json" not in ran
    assert sum(c.startswith("ss -ltn") for c in lab.fakes[1].commands) >= 2  # it waited
    _assert_no_server_left(lab)
    assert not lab.fakes[1].files  # the log is removed


def test_out_json_is_used_where_perftest_has_it(make_lab):
    lab = make_lab(out_json=True)
    pair = lab.hosts[0].run_bandwidth(lab.hosts[1], size_bytes=65536, iterations=5000)
    assert pair.client.device == "mlx5_11" and pair.client.bw_unit == "MiB/sec"
    assert any("--out_json_file=/tmp/labtest-ib_write_bw" in c for c in lab.fakes[0].commands)
    assert not lab.fakes[0].files  # the JSON file is removed
    _assert_no_server_left(lab)


def test_latency_pair(make_lab):
    lab = make_lab()
    pair = lab.hosts[0].run_latency(lab.hosts[1], test="ib_write_lat", size_bytes=None)
    assert pair.client.rows[0].p99_9_us == 5.42 and pair.client.rows[0].t_typical_us == 0.98
    assert pair.server is not None and pair.server.server_side
    start = next(c for c in lab.fakes[1].commands if c.startswith("nohup"))
    assert " -a " in start and "-q" not in start and "--report_gbits" not in start
    _assert_no_server_left(lab)


def test_a_spec_of_the_other_kind_is_refused_before_anything_runs(make_lab):
    lab = make_lab()
    client, server = lab.hosts
    with pytest.raises(ValueError, match="ib_write_lat is a latency test: use perftest_latency"):
        client.run_bandwidth(server, test="ib_write_lat")
    with pytest.raises(ValueError, match="ib_write_bw is a bandwidth test: use perftest_bandwidth"):
        client.run_latency(server, test="ib_write_bw")
    assert not any(fake.commands for fake in lab.fakes)


def test_concurrent_pairs_run_their_clients_at_the_same_time(make_lab):
    lab = make_lab(client_run_s=0.3)
    h1, h2 = lab.hosts
    spec = PerftestSpec(test="ib_send_bw", duration_s=5)
    pairs = [
        PerftestPair(h1, h2, spec),
        PerftestPair(h1, h2, PerftestSpec(test="ib_send_bw", duration_s=5, tcp_port=18516)),
        PerftestPair(h2, h1, PerftestSpec(test="ib_send_bw", duration_s=5, tcp_port=18517)),
    ]
    results = run_pairs(pairs, timeout_s=20)
    assert [r.client.best_average_gbps for r in results] == [363.47] * 3
    runs = lab.fakes[0].client_runs + lab.fakes[1].client_runs
    assert len(runs) == 3
    assert max(start for start, _ in runs) < min(end for _, end in runs)  # all overlapped
    _assert_no_server_left(lab)


def test_pairs_on_one_server_need_distinct_ports(make_lab):
    lab = make_lab()
    h1, h2 = lab.hosts
    spec = PerftestSpec()
    with pytest.raises(ValueError, match="TCP port 18515"):
        run_pairs([PerftestPair(h1, h2, spec), PerftestPair(h2, h2, spec)], timeout_s=5)
    assert not lab.fakes[1].commands


def test_server_that_never_listens_times_out_and_is_killed(make_lab):
    lab = make_lab({}, {"server_start_timeout_s": 0.5}, never_listen=True)
    start = time.monotonic()
    with pytest.raises(TransportTimeout) as info:
        lab.hosts[0].run_bandwidth(lab.hosts[1], tcp_port=18600)
    assert time.monotonic() - start < 3
    error = info.value
    assert error.device == "h2" and "h2 TCP port 18600" in str(error)
    assert "Waiting for client" in (error.raw or "")
    assert not any(c.startswith("ib_write_bw -d") for c in lab.fakes[0].commands)
    assert any(c.startswith("kill ") for c in lab.fakes[1].commands)
    _assert_no_server_left(lab)


def test_server_that_dies_at_start_reports_its_log(make_lab):
    lab = make_lab(server_dies=True)
    with pytest.raises(ProtocolError, match="exited before listening: Unable to find") as info:
        lab.hosts[0].run_bandwidth(lab.hosts[1])
    assert info.value.device == "h2" and "18515" in str(info.value)
    _assert_no_server_left(lab)


def test_client_to_a_dead_port_fails_typed_and_the_server_is_stopped(make_lab):
    lab = make_lab()
    with pytest.raises(CommandFailed, match="Unable to init the socket connection"):
        # the client connects to the wrong address: no server there
        lab.hosts[0].run_bandwidth(lab.hosts[1], server_address="10.0.0.9")
    _assert_no_server_left(lab)


def test_session_dropped_mid_run_is_a_protocol_error_and_the_server_is_stopped(make_lab):
    lab = make_lab()
    lab.fakes[0].drop_client = True
    start = time.monotonic()
    with pytest.raises(ProtocolError, match="closed the session mid-command") as info:
        lab.hosts[0].run_bandwidth(lab.hosts[1])
    assert time.monotonic() - start < 5
    assert info.value.device == "h1"
    lab.fakes[0].ssh.mode = "normal"  # h1 comes back; the driver reconnects
    assert lab.fakes[1].procs == {} and any(c.startswith("kill ") for c in lab.fakes[1].commands)
    _assert_no_server_left(lab)


def test_missing_perftest_is_named_before_anything_starts(make_lab):
    lab = make_lab(missing={"ib_write_bw"})
    with pytest.raises(ToolMissing, match="ib_write_bw is not installed") as info:
        lab.hosts[0].run_bandwidth(lab.hosts[1])
    assert info.value.tool == "ib_write_bw"
    assert not any(c.startswith("nohup") for f in lab.fakes for c in f.commands)


# --- nccl-tests -----------------------------------------------------------------


def test_all_reduce_across_hosts_with_the_corruption_gate(make_lab):
    lab = make_lab(
        {"mpi_host": "gpu-a", "mpirun_args": ["--allow-run-as-root"]}, {"mpi_host": "gpu-b"}
    )
    result = lab.hosts[0].run_collective(
        lab.hosts, gpus_per_host=4, max_bytes=2**30, extra_env={"NCCL_TESTS_SPLIT": "MOD 4"}
    )
    command = next(c for c in lab.fakes[0].commands if c.startswith("mpirun --allow"))
    assert "-np 8 -H gpu-a:4,gpu-b:4 -x 'NCCL_TESTS_SPLIT=MOD 4' all_reduce_perf" in command
    assert command.endswith("-b 8 -e 1073741824 -f 2 -n 20 -w 5 -g 1 -c 1")
    assert result.corrupted and result.out_of_bounds == 4 and result.avg_busbw_gbs == 4.79995
    wrong = [r.size_bytes for r in result.rows if r.out_of_place.wrong]
    assert wrong == [1048576]


def test_missing_nccl_binary_on_a_node_is_named(make_lab):
    lab = make_lab(missing_remote="all_reduce_perf")
    with pytest.raises(ToolMissing, match="all_reduce_perf is not installed") as info:
        lab.hosts[0].run_collective(["gpu-a", "gpu-b"], timeout_s=10)
    assert "gpu-b" in "".join(getattr(info.value, "__notes__", []))


def test_missing_mpirun_is_named(make_lab):
    lab = make_lab(missing={"mpirun"})
    with pytest.raises(ToolMissing, match="mpirun is not installed on h1"):
        lab.hosts[0].run_collective(["gpu-a"], timeout_s=10)
