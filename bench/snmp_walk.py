"""SNMP bulk walk of a switch's IF-MIB: our transport vs ezsnmp and net-snmp's snmpbulkwalk.

    python bench/snmp_walk.py [--ports 300] [--repeat 5] [--max-repetitions 50]
                              [--oid 1.3.6.1.2.1.31.1.1] [--emulated]

The clients walk the same subtree (ifXTable unless ``--oid``), GETBULK with
the same max-repetitions, against the same agent, in one run; the bench prints
the best of ``--repeat`` walks for each and the ratios, for v2c and for v3
authPriv (SHA/AES):

- **net-snmp's snmpd** serving the real IF-MIB of a network namespace with
  ``--ports`` veth interfaces plus lo (needs root); a C agent answers fast
  enough that the clients' own costs show;
- with ``--emulated`` also **our SnmpAgent** serving the emulated SONiC
  switch's MIB, in a child process (v2c only); there the Python agent's time
  is in both clients' walks.

``snmpbulkwalk`` runs as a script would run it: one process per walk (its
start-up, and for v3 its engine discovery, is part of its time), numeric OIDs,
no MIB loading (``-m ""``). Our transport is warmed up once (socket, v3
discovery and key localization), as a driver's transport is.

**ezsnmp** (net-snmp's library in-process, the maintained alternative that issue
38 item 5 weighed against our client; docs/scale.md) is one ``Session`` warmed up
by one GET, numeric OIDs, no MIBs (``MIBS=""``). It is optional:
``pip install 'labtest[bench-snmp]'``; without it its column is skipped.

Profile our side of a walk with
``python -m cProfile -s cumtime bench/snmp_walk.py --repeat 1``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from _child import stop  # bench/_child.py: this script's folder is on sys.path
from pydantic import SecretStr

from labtest import netns
from labtest.testbed.model import SnmpSettings
from labtest.transports.snmp import SnmpTransport

IF_X_TABLE = "1.3.6.1.2.1.31.1.1"
COMMUNITY = "bench-walk"
USER, AUTH_KEY, PRIV_KEY = "benchuser", "bench-auth-key", "bench-priv-key"  # SHA / AES
SNMPBULKWALK = shutil.which("snmpbulkwalk") or "/usr/bin/snmpbulkwalk"


@dataclass(frozen=True)
class Agent:
    name: str
    port: int
    netns: str | None = None  # where the agent (and so the clients) must run


@dataclass(frozen=True)
class Timing:
    best_s: float
    oids: int

    @property
    def oids_per_s(self) -> float:
        return self.oids / self.best_s


# --- agents -----------------------------------------------------------------------------


def serve_switch_mib(ports: int) -> int:
    """The child process: one emulated SONiC switch's MIB on an ephemeral UDP port."""
    from labtest.emulation.model.fabric import Fabric
    from labtest.emulation.personalities import sonic
    from labtest.emulation.snmpagent import SnmpAgent
    from labtest.testbed.model import Testbed

    links = [
        {"a": f"sw1:Ethernet{8 * i}", "b": f"sw2:Ethernet{8 * i}", "speed_gbps": 400,
         "optic": "400G-DR4", "length_m": 3}
        for i in range(ports)
    ]  # fmt: skip
    devices = {n: {"role": "leaf", "driver": "sonic"} for n in ("sw1", "sw2")}
    testbed = Testbed.model_validate({"name": "walk", "devices": devices, "links": links})
    fabric = Fabric(testbed)  # a stepped clock: the walk reads one instant
    fabric.advance(60.0)
    served = sonic.serve(fabric, "sw1", testbed.devices["sw1"])
    agent = SnmpAgent(served.mib, community=COMMUNITY).start()
    print(agent.port, flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin
    finally:
        agent.stop()
    return 0


@contextmanager
def switch_mib_agent(ports: int) -> Iterator[Agent]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--ports", str(ports)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # the child prints its port once the agent is up
        if not line.strip().isdigit():
            raise RuntimeError(f"the agent did not start (exit status {child.poll()})")
        yield Agent("our SnmpAgent (emulated SONiC switch MIB)", int(line))
    finally:
        assert child.stdin is not None
        stop(child, child.stdin.close, 15, 5)


@contextmanager
def snmpd_agent(ports: int, workdir: Path) -> Iterator[Agent]:
    """net-snmp's snmpd in a namespace holding ``ports`` interfaces."""
    with netns.namespace() as ns:
        batch = workdir / "links.batch"
        names = [f"Ethernet{8 * i}" for i in range(ports)]
        pairs = list(zip(names[0::2], names[1::2], strict=False))  # veth: no dummy module needed
        lines = ["link set lo up"]
        lines += [f"link add {a} type veth peer name {b}" for a, b in pairs]
        lines += [f"link set {name} up" for name in names[: 2 * len(pairs)]]
        batch.write_text("\n".join(lines) + "\n")
        netns.ip("-batch", str(batch), netns=ns, timeout_s=60)
        port = 16161
        conf = workdir / "agent.conf"  # not snmpd.conf: snmpd rewrites that one in its state dir
        conf.write_text(
            f"agentAddress udp:127.0.0.1:{port}\nrocommunity {COMMUNITY} 127.0.0.1\n"
            f'createUser {USER} SHA "{AUTH_KEY}" AES "{PRIV_KEY}"\nrouser {USER} priv\n'
        )
        state = workdir / "state"
        state.mkdir(exist_ok=True)
        env = {**os.environ, "MIBS": "", "SNMP_PERSISTENT_DIR": str(state)}
        command = ["ip", "netns", "exec", ns, "snmpd", "-f", "-Lf", str(workdir / "snmpd.log"),
                   "-C", "-c", str(conf), "-p", str(workdir / "snmpd.pid")]  # fmt: skip
        daemon = subprocess.Popen(command, env=env)
        try:
            agent = Agent(f"net-snmp snmpd ({2 * len(pairs)} veth interfaces + lo)", port, ns)
            _wait_until(lambda: _answers(agent), 20.0, "snmpd did not answer")
            yield agent
        finally:
            stop(daemon, partial(daemon.send_signal, signal.SIGTERM), 10, 5)


def _answers(agent: Agent) -> bool:
    done = subprocess.run(
        _bulkwalk_argv(agent, "2c", "1.3.6.1.2.1.1.1", 10), capture_output=True, text=True,
        timeout=10,
    )
    return done.returncode == 0 and bool(done.stdout.strip())


def _wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(what)
        time.sleep(0.2)


# --- clients ----------------------------------------------------------------------------


def _bulkwalk_argv(agent: Agent, version: str, oid: str, max_repetitions: int) -> list[str]:
    if version == "2c":
        auth = ["-v2c", "-c", COMMUNITY]
    else:
        auth = ["-v3", "-l", "authPriv", "-u", USER, "-a", "SHA", "-A", AUTH_KEY,
                "-x", "AES", "-X", PRIV_KEY]  # fmt: skip
    argv = [SNMPBULKWALK, *auth, "-m", "", "-On", "-t", "2", "-r", "1",
            f"-Cr{max_repetitions}", f"udp:127.0.0.1:{agent.port}", oid]  # fmt: skip
    return ["nsenter", f"--net={netns.NETNS_DIR / agent.netns}", *argv] if agent.netns else argv


def net_snmp_walk(agent: Agent, version: str, oid: str, max_repetitions: int) -> int:
    """One walk of the subtree with snmpbulkwalk; returns the number of OIDs."""
    done = subprocess.run(
        _bulkwalk_argv(agent, version, oid, max_repetitions), capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    return sum(1 for line in done.stdout.splitlines() if line.startswith("."))


def ezsnmp_walker(
    agent: Agent, version: str, oid: str, max_repetitions: int
) -> Callable[[], int] | None:
    """A warmed-up ezsnmp session's walk (it opens a socket per call, so it runs in the
    agent's namespace); None when ezsnmp is not installed."""
    os.environ["MIBS"] = ""  # as snmpbulkwalk -m "": net-snmp reads it at its first session
    try:
        from ezsnmp import Session
    except ImportError:
        return None
    if version == "2c":
        auth = {"community": COMMUNITY}
    else:
        auth = {"security_level": "authPriv", "security_username": USER,
                "auth_protocol": "SHA", "auth_passphrase": AUTH_KEY,
                "privacy_protocol": "AES", "privacy_passphrase": PRIV_KEY}  # fmt: skip
    session = Session(
        hostname="127.0.0.1", port_number=agent.port, version=version, timeout=2, retries=1,
        print_oids_numerically=True, set_max_repeaters_to_num=max_repetitions, **auth,
    )  # fmt: skip
    netns.call_in_netns(agent.netns, lambda: session.get("1.3.6.1.2.1.1.3.0"))
    return partial(netns.call_in_netns, agent.netns, lambda: len(session.bulk_walk(oid)), 60.0)


def settings_for(agent: Agent, version: str) -> SnmpSettings:
    if version == "2c":
        return SnmpSettings(
            version="2c", port=agent.port, community=SecretStr(COMMUNITY), timeout_s=2.0,
            retries=1,
        )  # fmt: skip
    return SnmpSettings(
        version="3", port=agent.port, user=USER, auth_protocol="SHA",
        auth_key=SecretStr(AUTH_KEY), priv_protocol="AES", priv_key=SecretStr(PRIV_KEY),
        timeout_s=2.0, retries=1,
    )  # fmt: skip


def best_of(repeat: int, walk: Callable[[], int]) -> Timing:
    times, counts = [], set()
    for _ in range(repeat):
        start = time.perf_counter()
        counts.add(walk())
        times.append(time.perf_counter() - start)
    if len(counts) != 1:
        raise RuntimeError(f"walks returned different OID counts: {sorted(counts)}")
    return Timing(min(times), counts.pop())


def compare(agent: Agent, version: str, oid: str, repeat: int, max_repetitions: int) -> None:
    transport = SnmpTransport("bench", "127.0.0.1", settings_for(agent, version))
    try:
        # the first call opens the transport's socket (and for v3 discovers the
        # engine): inside the agent's namespace when there is one
        netns.call_in_netns(agent.netns, lambda: transport.get("1.3.6.1.2.1.1.3.0"))
        ours = best_of(repeat, lambda: len(transport.walk(oid, max_repetitions)))
    finally:
        transport.close()
    ez_walk = ezsnmp_walker(agent, version, oid, max_repetitions)
    ez = best_of(repeat, ez_walk) if ez_walk else None
    theirs = best_of(repeat, lambda: net_snmp_walk(agent, version, oid, max_repetitions))
    for name, timing in (("ezsnmp", ez), ("snmpbulkwalk", theirs)):
        if timing is not None and timing.oids != ours.oids:
            raise RuntimeError(f"our walk saw {ours.oids} OIDs, {name} {timing.oids}")
    print(f"\nagent: {agent.name}; SNMP v{version}; {ours.oids} OIDs per walk, best of {repeat}")
    print(f"  labtest SnmpTransport : {ours.best_s * 1e3:8.1f} ms ({ours.oids_per_s:9,.0f} OIDs/s)")
    if ez is None:
        print("  ezsnmp                : skipped (pip install 'labtest[bench-snmp]')")
    else:
        print(f"  ezsnmp Session        : {ez.best_s * 1e3:8.1f} ms ({ez.oids_per_s:9,.0f} OIDs/s)")
    print(f"  net-snmp snmpbulkwalk : {theirs.best_s * 1e3:8.1f} ms "
          f"({theirs.oids_per_s:9,.0f} OIDs/s, one process per walk)")  # fmt: skip
    print(f"  ratio ours / net-snmp : {ours.best_s / theirs.best_s:.2f}x the time")
    if ez is not None:
        print(f"  ratio ezsnmp / ours   : {ez.best_s / ours.best_s:.2f}x the time")


def driver_counters(agent: Agent, version: str, repeat: int) -> None:
    """The snmp-switch driver's ``counters()`` (ifName, ifDescr and eight counter columns)."""
    from labtest.drivers.snmp_switch.driver import SnmpSwitch
    from labtest.testbed.model import Testbed

    settings = settings_for(agent, version).model_dump(mode="json")
    for key in ("community", "auth_key", "priv_key"):  # SecretStr dumps masked
        secret = getattr(settings_for(agent, version), key)
        settings[key] = secret.get_secret_value() if secret is not None else None
    device = {"role": "leaf", "driver": "snmp-switch", "address": "127.0.0.1", "snmp": settings}
    testbed = Testbed.model_validate({"name": "walk", "devices": {"sw": device}, "links": []})
    switch = SnmpSwitch("sw", testbed.devices["sw"], testbed)
    try:
        netns.call_in_netns(agent.netns, lambda: switch.snmp.get("1.3.6.1.2.1.1.3.0"))
        timing = best_of(repeat, lambda: len(switch.counters()))
    finally:
        switch.close()
    print(f"  snmp-switch counters(): {timing.best_s * 1e3:7.1f} ms for {timing.oids} interfaces")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ports", type=int, default=300)
    ap.add_argument("--oid", default=IF_X_TABLE, help="subtree to walk (default ifXTable)")
    ap.add_argument("--emulated", action="store_true", help="also against our SnmpAgent")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--max-repetitions", type=int, default=50)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        return serve_switch_mib(args.ports)
    if not Path(SNMPBULKWALK).exists():
        print("snmpbulkwalk not found: apt-get install snmp", file=sys.stderr)
        return 2
    print(f"walk of {args.oid}, GETBULK max-repetitions {args.max_repetitions}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    if args.emulated:
        with switch_mib_agent(args.ports) as agent:
            compare(agent, "2c", args.oid, args.repeat, args.max_repetitions)
    if not netns.is_root() or shutil.which("snmpd") is None:
        print("\nnet-snmp snmpd: skipped (needs root for a namespace, and snmpd)")
        return 0
    with (
        tempfile.TemporaryDirectory(prefix="labtest-walk-") as tmp,
        snmpd_agent(args.ports, Path(tmp)) as agent,
    ):
        for version in ("2c", "3"):
            compare(agent, version, args.oid, args.repeat, args.max_repetitions)
            driver_counters(agent, version, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
