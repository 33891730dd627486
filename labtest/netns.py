"""Network namespaces and veth pairs for packet tests and emulated traffic ports.

Everything is done with iproute2 (``ip``), the tool a lab engineer would use
to reproduce it by hand. Names are ``lt`` plus a random hex suffix so that
parallel runs (xdist workers, two CI jobs on one host) never clash, and every
helper that creates something is a context manager that removes it, however
the block ends.

Running Python *inside* a namespace: ``call_in_netns`` runs a callable in a
short-lived thread that first joins the namespace with ``setns(2)``. Linux
keeps the network namespace per thread, so the rest of the process stays
where it was, and a socket keeps the namespace it was created in for its
whole life: open a socket in the namespace, then use it from any thread. A
subprocess (``ip netns exec python ...``) would work too but pays the Scapy
import (about a second) on every call. What a thread cannot do is see the
namespace's ``/sys/class/net`` (sysfs shows the namespace of whoever mounted
it), so commands that read sysfs go through ``ip netns exec``, which remounts
``/sys`` for the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from labtest.errors import InfraError

T = TypeVar("T")

NETNS_DIR = Path("/var/run/netns")
PREFIX = "lt"
_CLONE_NEWNET = 0x40000000  # <sched.h>; os.CLONE_NEWNET only exists from Python 3.12


class NetnsError(InfraError):
    """A namespace or veth operation failed (the host, not the product, is broken)."""


def is_root() -> bool:
    return os.geteuid() == 0


def unique_name(prefix: str = PREFIX) -> str:
    """``lt`` + 6 hex digits: short enough for interface names (15 characters at most)."""
    return f"{prefix}{secrets.token_hex(3)}"


# --- running things -------------------------------------------------------------


def ip(*args: str, netns: str | None = None, timeout_s: float = 10.0) -> str:
    """Run ``ip [-n NETNS] ARGS`` and return its stdout; NetnsError on failure."""
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    return _run(argv, netns or "host", timeout_s).stdout


def run_in_netns(
    netns: str, argv: Sequence[str], timeout_s: float = 10.0, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run a command inside ``netns`` (with its own ``/sys``) via ``ip netns exec``."""
    return _run(["ip", "netns", "exec", netns, *argv], netns, timeout_s, check)


#: net.ipv4.fib_multipath_hash_fields: source and destination address, IP protocol, source
#: and destination port (Linux Documentation/networking/ip-sysctl.rst)
FIVE_TUPLE_FIELDS = 0x0037


def ensure_l4_multipath_hash(netns: str) -> None:
    """ECMP on the 5-tuple in ``netns``: policy 3 with the fields named where the kernel
    has it (>= 5.12), else policy 1."""
    custom = run_in_netns(netns, ["sysctl", "-q", "-w", "net.ipv4.fib_multipath_hash_policy=3",
                                  f"net.ipv4.fib_multipath_hash_fields={FIVE_TUPLE_FIELDS}"],
                          check=False)
    if custom.returncode != 0:
        run_in_netns(netns, ["sysctl", "-q", "-w", "net.ipv4.fib_multipath_hash_policy=1"])


def call_in_netns(netns: str | None, fn: Callable[[], T], timeout_s: float = 10.0) -> T:
    """Call ``fn`` in a fresh thread that has joined ``netns`` (see the module docstring).

    Threads that ``fn`` starts inherit the namespace. Returns what ``fn``
    returns and re-raises what it raises; NetnsError if it takes longer than
    ``timeout_s``.
    """
    if netns is None:
        return fn()
    outcome: dict[str, object] = {}

    def worker() -> None:
        try:
            _enter_netns(netns)
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    thread = threading.Thread(target=worker, name=f"netns-{netns}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise NetnsError(netns, f"call did not finish within {timeout_s} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def _enter_netns(netns: str) -> None:
    fd = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if hasattr(os, "setns"):  # Python 3.12+
            os.setns(fd, _CLONE_NEWNET)
            return
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NetnsError(netns, f"setns failed: {os.strerror(err)}")
    finally:
        os.close(fd)


def _run(
    argv: list[str], where: str, timeout_s: float, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """One short ``ip``/``nft``/``tc`` command, bounded by ``timeout_s``, in a session of
    its own: a terminal's Ctrl-C reaches the run's whole process group, and an ``ip netns
    del`` it killed while the lab stopped left that namespace behind (test_interrupted_stop,
    under load: ``lt-...-host1`` left after repeated Ctrl-C)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              check=False, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise NetnsError(where, f"{' '.join(argv)}: no result within {timeout_s} s") from None
    except FileNotFoundError:
        raise NetnsError(where, f"{argv[0]} not found (install iproute2)") from None
    if check and done.returncode != 0:
        raise NetnsError(
            where, f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}", done.stderr
        )
    return done


# --- namespaces and veth pairs --------------------------------------------------


def list_netns() -> list[str]:
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


def create_netns(name: str) -> str:
    """Create ``name`` with loopback up and IPv6 off.

    IPv6 is off so the kernel sends nothing on its own (router solicitations,
    DAD, MLD): frame counts on a test link are then exactly what was sent.
    """
    ip("netns", "add", name)
    try:
        ip("link", "set", "lo", "up", netns=name)
        for scope in ("all", "default"):
            run_in_netns(name, ["sysctl", "-q", "-w", f"net.ipv6.conf.{scope}.disable_ipv6=1"])
    except BaseException:  # an interrupt too: never a half-made namespace left
        with contextlib.suppress(NetnsError):  # what ended the setup is what is raised
            delete_netns(name)
        raise
    return name


def delete_netns(name: str) -> None:
    """Delete ``name`` (and the interfaces in it); no error if it is already gone."""
    if name in list_netns():
        ip("netns", "del", name)


def netns_id(name: str) -> str:
    """How ``/proc/PID/ns/net`` names the namespace ``name``: ``net:[inode]``."""
    return f"net:[{(NETNS_DIR / name).stat().st_ino}]"


def pids_in_netns(ids: set[str]) -> list[int]:
    """Live processes (not zombies, not this one) whose network namespace is one of ``ids``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.readlink(entry / "ns" / "net") in ids and _state(entry) != "Z":
                out.append(int(entry.name))
        except OSError:
            continue
    return out


def _state(entry: Path) -> str:
    return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]


@contextlib.contextmanager
def namespace(name: str | None = None) -> Iterator[str]:
    """A namespace that exists for the duration of the block."""
    name = create_netns(name or unique_name())
    try:
        yield name
    finally:
        delete_netns(name)


@dataclass(frozen=True)
class VethEnd:
    netns: str | None
    interface: str
    mac: str
    address: str | None  # CIDR, e.g. "198.18.0.1/24"

    @property
    def ip(self) -> str | None:
        return self.address.split("/")[0] if self.address else None


def add_veth(
    a: str,
    b: str,
    netns_a: str | None = None,
    netns_b: str | None = None,
    *,
    address_a: str | None = None,
    address_b: str | None = None,
    mtu: int | None = None,
) -> tuple[VethEnd, VethEnd]:
    """Create veth ``a``--``b`` directly in its namespaces, address it and bring it up."""
    args = ["link", "add", a, *(["netns", netns_a] if netns_a else [])]
    args += ["type", "veth", "peer", "name", b, *(["netns", netns_b] if netns_b else [])]
    ip(*args)
    ends = []
    for name, ns, address in ((a, netns_a, address_a), (b, netns_b, address_b)):
        if mtu is not None:
            ip("link", "set", name, "mtu", str(mtu), netns=ns)
        if address:
            ip("addr", "add", address, "dev", name, netns=ns)
        ip("link", "set", name, "up", netns=ns)
        ends.append(VethEnd(ns, name, interface_mac(name, ns), address))
    return ends[0], ends[1]


def interface_mac(interface: str, netns: str | None = None) -> str:
    info = json.loads(ip("-j", "link", "show", "dev", interface, netns=netns))
    return str(info[0]["address"])


@dataclass(frozen=True)
class VethLink:
    """Two namespaces joined by one veth pair: a cable between two test ports."""

    a: VethEnd
    b: VethEnd

    @property
    def namespaces(self) -> list[str]:
        return [ns for ns in (self.a.netns, self.b.netns) if ns]


@contextlib.contextmanager
def veth_link(
    address_a: str | None = None, address_b: str | None = None, mtu: int | None = None
) -> Iterator[VethLink]:
    """Two fresh namespaces and a veth between them; all removed when the block ends.

    Addresses are optional: without them the kernel never answers test
    traffic (no ICMP, no ARP), which keeps receive counters exact.
    """
    base = unique_name()
    created: list[str] = []
    try:
        for side in ("a", "b"):
            created.append(create_netns(f"{base}{side}"))
        a, b = add_veth(
            f"{base}a", f"{base}b", *created, address_a=address_a, address_b=address_b, mtu=mtu
        )
        yield VethLink(a, b)
    finally:
        for ns in created:
            delete_netns(ns)
