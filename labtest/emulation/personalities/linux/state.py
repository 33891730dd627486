"""The state one emulated Linux host keeps between SSH sessions, and how hosts find each other.

A real host remembers what its sessions started: background processes (a
perftest server waiting for its client), files they wrote (logs, JSON
reports). :class:`HostState` holds both for one host and is shared by every
SSH channel of it; the fabric model holds everything physical. Hosts of one
fabric find each other through a registry keyed by the fabric, so a perftest
client on one host can see whether a server listens on its peer.

Addresses a host answers to (perftest's server argument, mpirun's ``-H``): its
testbed name, ``vars.hostname``, ``vars.mpi_host``, its data-plane IPv4s and
``vars.rdma_address``. Loopback names (``127.0.0.1``, ``localhost``) mean the
host itself: in the emulated lab every management address is 127.0.0.1, so
they cannot name a peer.

Model calls that may change the traffic model run through ``fabric.schedule``,
i.e. under the fabric's lock, in the lock order the fault catalogue uses
(fabric, then traffic).
"""

from __future__ import annotations

import itertools
import random
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities.linux.nic import NicPort, nic_ports, stable_int
from labtest.emulation.personalities.linux.tools import PerftestOptions
from labtest.testbed.model import Device

T = TypeVar("T")
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "localhost.localdomain"})
BASE_PROCESSES = (
    (1, "root", "systemd", "/sbin/init"),
    (612, "root", "systemd-journal", "/lib/systemd/systemd-journald"),
    (905, "root", "sshd", "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups"),
    (931, "root", "lldpd", "lldpd: monitor."),
    (1022, "root", "cron", "/usr/sbin/cron -f -P"),
)

_REGISTRY: weakref.WeakKeyDictionary[Fabric, dict[str, HostState]] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


@dataclass
class Sink:
    """Where a process's stdout (fd 1) and stderr (fd 2) go: a host file, a buffer or nowhere."""

    host: HostState
    targets: dict[int, tuple[str, str]]  # fd -> ("file", path) | ("buffer", "") | ("null", "")
    buffer: list[str] = field(default_factory=list)

    def write(self, fd: int, text: str) -> None:
        kind, path = self.targets.get(fd, ("null", ""))
        if kind == "file":
            self.host.append_file(path, text)
        elif kind == "buffer":
            self.buffer.append(text)


@dataclass
class Proc:
    """One process in a host's table."""

    pid: int
    comm: str  # the kernel's 15-character name
    args: str  # the full command line
    user: str
    sink: Sink
    perftest: PerftestOptions | None = None
    listen_port: int | None = None  # a TCP listener ``ss -ltn`` shows
    claimed: bool = False  # a perftest server whose client connected
    one_off: bool = False  # an iperf3 server that exits after one test (-1)
    killed: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    started_s: float = 0.0


class HostState:
    """Process table, files and identity of one emulated host (see the module docstring)."""

    def __init__(self, fabric: Fabric, name: str, device: Device) -> None:
        self.fabric = fabric
        self.name = name
        self.device = device
        self.nics: tuple[NicPort, ...] = nic_ports(fabric, name, device)
        self.hostname = str(device.vars.get("hostname") or name)
        self.user = device.ssh.username if device.ssh else "root"
        self.missing = {str(t) for t in device.vars.get("missing_tools", [])}
        self.perftest_out_json = bool(device.vars.get("perftest_out_json", True))
        self.lock = threading.RLock()
        self.procs: dict[int, Proc] = {}
        self.files: dict[str, str] = {}
        self.stopped = threading.Event()
        self._pids = itertools.count(2000 + stable_int(name, modulo=30000))
        #: probe answers lost to noise: one stream per host for the lab's life, seeded by the
        #: lab's seed (a stream per SSH session replayed the same draws in every command,
        #: so one host lost the same probes every interval: a "lossy" access link)
        self.rng = random.Random(f"{fabric.seed}:{name}:probes")

    def __repr__(self) -> str:
        return f"HostState({self.name!r})"

    # --- identity and peers ------------------------------------------------------

    def var(self, key: str, default: Any = None) -> Any:
        return self.device.vars.get(key, default)

    def names(self) -> set[str]:
        """Every address this host answers to (see the module docstring)."""
        out = {self.name, self.hostname}
        for key in ("mpi_host", "rdma_address"):
            if self.var(key):
                out.add(str(self.var(key)))
        out.update(nic.ipv4 for nic in self.nics if nic.ipv4)
        return out

    def resolve(self, address: str) -> tuple[HostState, NicPort | None] | None:
        """The host (and the NIC, when ``address`` is one of its IPs) an address names."""
        if address in LOOPBACK:
            return self, None
        for host in hosts_of(self.fabric).values():
            for nic in host.nics:
                if nic.ipv4 == address:
                    return host, nic
            if address in host.names():
                return host, None
        return None

    def nic(self, rdma: str | None) -> NicPort | None:
        if rdma is None:
            return self.nics[0] if self.nics else None
        return next((n for n in self.nics if n.rdma == rdma), None)

    def nic_by_netdev(self, netdev: str) -> NicPort | None:
        return next((n for n in self.nics if n.netdev == netdev), None)

    # --- files -------------------------------------------------------------------

    def append_file(self, path: str, text: str) -> None:
        if path == "/dev/null":
            return
        with self.lock:
            self.files[path] = self.files.get(path, "") + text

    def write_file(self, path: str, text: str) -> None:
        if path == "/dev/null":
            return
        with self.lock:
            self.files[path] = text

    # --- processes ---------------------------------------------------------------

    def spawn(self, comm: str, args: str, sink: Sink, **fields: Any) -> Proc:
        with self.lock:
            pid = next(self._pids)
            proc = Proc(
                pid, comm[:15], args, self.user, sink, started_s=self.fabric.now_s(), **fields
            )
            self.procs[pid] = proc
            return proc

    def new_pid(self) -> int:
        """A PID for a process that ends before anyone can see it."""
        with self.lock:
            return next(self._pids)

    def finish(self, proc: Proc) -> None:
        with self.lock:
            self.procs.pop(proc.pid, None)
        proc.done.set()

    def kill(self, pid: int) -> bool:
        with self.lock:
            proc = self.procs.pop(pid, None)
        if proc is None:
            return False
        proc.killed = True
        proc.done.set()
        return True

    def listener(self, port: int, tool: str | None = None) -> Proc | None:
        """The perftest server waiting on ``port`` (any tool unless ``tool`` is given)."""
        with self.lock:
            return next(
                (p for p in self.procs.values()
                 if _awaits_client(p, tool) and p.perftest is not None and p.perftest.port == port),
                None,
            )

    def listener_on(self, port: int) -> Proc | None:
        """The unclaimed iperf3 server listening on TCP ``port`` (None: nothing there)."""
        with self.lock:
            return next((p for p in self.procs.values() if p.comm == "iperf3"
                         and p.listen_port == port and not p.claimed), None)

    def awaits_bandwidth_client(self, tool: str) -> bool:
        """Whether a perftest bandwidth server of ``tool`` here still waits for its client."""
        with self.lock:
            return any(
                _awaits_client(p, tool) and p.perftest is not None and p.perftest.kind == "bw"
                for p in self.procs.values()
            )

    def stop(self) -> None:
        """The lab is going away: end every process and leave the registry."""
        self.stopped.set()
        with self.lock:
            procs, self.procs = list(self.procs.values()), {}
        for proc in procs:
            proc.killed = True
            proc.done.set()
        with _REGISTRY_LOCK:
            hosts = _REGISTRY.get(self.fabric)
            if hosts is not None and hosts.get(self.name) is self:
                del hosts[self.name]

    # --- time ----------------------------------------------------------------------

    def run_for(self, virtual_s: float) -> None:
        """Let ``virtual_s`` of model time pass: wall time on a real-time clock (scaled),
        a clock step on a stepped one (pure-model tests)."""
        if virtual_s <= 0:
            return
        clock = self.fabric.clock
        if clock.realtime:
            clock.sleep(virtual_s, self.stopped)
        else:
            self.fabric.advance(virtual_s)


def register(host: HostState) -> None:
    with _REGISTRY_LOCK:
        _REGISTRY.setdefault(host.fabric, {})[host.name] = host


def _awaits_client(proc: Proc, tool: str | None) -> bool:
    """A perftest server (of ``tool``, when given) that no client has claimed yet."""
    opts = proc.perftest
    return (opts is not None and not opts.is_client and not proc.claimed
            and (tool is None or opts.tool == tool))


def hosts_of(fabric: Fabric) -> dict[str, HostState]:
    with _REGISTRY_LOCK:
        return dict(_REGISTRY.get(fabric, {}))


def in_model(fabric: Fabric, action: Callable[[], T]) -> T:
    """Run ``action`` under the fabric's lock (see the module docstring) and return its value."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = action()
        except BaseException as exc:  # re-raised in the caller's thread below
            box["error"] = exc

    fabric.schedule(0.0, run)
    if "error" in box:
        raise box["error"]
    return box["value"]
