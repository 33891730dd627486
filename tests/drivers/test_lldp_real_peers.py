"""The SNMP driver's LLDP row choice against real lldpd + net-snmp snmpd (issue 14 case 4).

Four namespaces: ``sw1`` (lldpd exporting LLDP-MIB over AgentX to snmpd, the switch
under test), ``sw2`` and ``sw3`` (lldpd neighbours), and ``panel``: a bridge that
forwards LLDP (group_fwd_mask bit 14) and plays the patch panel. ``sw1:Ethernet0`` is
patched to ``sw2`` and then re-patched to ``sw3`` without its carrier dropping, as a
cable moved at a panel: lldpd keeps the old neighbour until its TTL runs out, so the
remote table holds two rows for the port. The driver must report ``sw3`` as soon as
its row is in the table and name ``sw2`` as the older neighbour.

Needs root and the Debian packages ``lldpd snmpd`` (skipped with that reason otherwise).
Recipe: shared/design/reference/real-software-peers.md.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from driver_harness import opened

from labtest import netns
from labtest.testbed import model

COMMUNITY = "lab-ro"
TTL_HOLD = 100  # x tx-interval 1 s: the old neighbour lingers 100 s, far beyond the test
WAIT_S = 20.0

pytestmark = pytest.mark.skipif(
    not netns.is_root() or not all(shutil.which(b) for b in ("lldpd", "lldpcli", "snmpd")),
    reason="needs root and the Debian packages lldpd snmpd (apt-get install lldpd snmpd)",
)


def _start(args: list[str], ns: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *args], check=True, timeout=10,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _kill(pid_file: Path) -> None:
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        import os
        import signal

        os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)


def _neighbours(sock: Path) -> list[str]:
    """System names lldpd itself lists on Ethernet0 (the truth the driver is held to)."""
    done = subprocess.run(["lldpcli", "-u", str(sock), "-f", "json", "show", "neighbors"],
                          capture_output=True, text=True, timeout=10)
    if done.returncode != 0:  # lldpd still starting: no socket yet
        return []
    ifaces = json.loads(done.stdout).get("lldp", {}).get("interface") or []
    if isinstance(ifaces, dict):
        ifaces = [ifaces]
    names = []
    for entry in ifaces:
        for port, body in (entry.items() if isinstance(entry, dict) else []):
            if port == "Ethernet0":
                names += list((body.get("chassis") or {}).keys())
    return names


@contextlib.contextmanager
def lab(tmp: Path) -> Iterator[dict[str, object]]:
    base = netns.unique_name()
    spaces = {n: f"{base}{n}" for n in ("s1", "s2", "s3", "pp")}
    pid_files: list[Path] = []
    mgmt = f"{base}m"
    tmp.chmod(0o755)
    try:
        for ns in spaces.values():
            netns.create_netns(ns)
        pp = spaces["pp"]
        netns.ip("link", "add", "br0", "type", "bridge", "group_fwd_mask", "0x4000", netns=pp)
        netns.ip("link", "set", "br0", "up", netns=pp)
        for sw, peer in (("s1", "p1"), ("s2", "p2"), ("s3", "p3")):
            netns.add_veth("Ethernet0", peer, spaces[sw], pp)
        for peer in ("p1", "p2"):  # sw1 patched to sw2
            netns.ip("link", "set", peer, "master", "br0", netns=pp)
        netns.add_veth(mgmt, "mgmt0", None, spaces["s1"], address_a="198.18.255.1/30",
                       address_b="198.18.255.2/30")
        s1 = tmp / "s1"
        s1.mkdir(mode=0o755)
        (s1 / "persist").mkdir()
        (s1 / "snmpd.conf").write_text(
            f"agentAddress udp:198.18.255.2:161\nrocommunity {COMMUNITY} 198.18.255.0/30\n"
            f"sysName sw1\nmaster agentx\nagentXSocket {s1 / 'agentx.sock'}\n")
        pid_files.append(s1 / "snmpd.pid")
        _start(["/usr/sbin/snmpd", "-C", "-c", str(s1 / "snmpd.conf"), "-p",
                str(s1 / "snmpd.pid"), "-Lf", str(s1 / "snmpd.log")], spaces["s1"],
               env={"SNMP_PERSISTENT_DIR": str(s1 / "persist"), "PATH": "/usr/sbin:/usr/bin"})
        for sw in ("s1", "s2", "s3"):
            d = tmp / sw
            d.mkdir(mode=0o755, exist_ok=True)
            (d / "lldpd.conf").write_text(
                f"configure system hostname {sw.replace('s', 'sw')}\n"
                "configure lldp tx-interval 1\n"
                f"configure lldp tx-hold {TTL_HOLD}\n"
                "configure system interface pattern Ethernet*\n")
            agentx = ["-x", "-X", str(s1 / "agentx.sock")] if sw == "s1" else []
            pid_files.append(d / "lldpd.pid")
            _start(["lldpd", "-u", str(d / "lldpd.sock"), "-p", str(d / "lldpd.pid"), *agentx,
                    "-O", str(d / "lldpd.conf")], spaces[sw])
        yield {"spaces": spaces, "sock": tmp / "s1" / "lldpd.sock"}
    finally:
        for pid_file in pid_files:
            _kill(pid_file)
        time.sleep(0.3)
        for ns in spaces.values():
            netns.delete_netns(ns)
        with contextlib.suppress(netns.NetnsError):
            netns.ip("link", "del", mgmt)


def _testbed() -> model.Testbed:
    settings = model.SnmpSettings(port=161, community=COMMUNITY, timeout_s=2.0, retries=1)
    device = model.Device(role="leaf", driver="snmp-switch", address="198.18.255.2",
                          snmp=settings)
    return model.Testbed(name="lldp-real", devices={"sw1": device})


def _until(what: str, predicate: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    pytest.fail(f"not within {timeout_s:g} s: {what}")


def test_recabled_port_reports_the_new_neighbour_at_once() -> None:
    # lldpcli refuses a control socket below a 0700 folder (pytest's tmp_path is one)
    folder = Path(tempfile.mkdtemp(prefix="lt-lldp-"))
    try:
        _recable(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _recable(folder: Path) -> None:
    with lab(folder) as running, opened(_testbed()) as switch:
        sock = running["sock"]
        _until("lldpd on sw1 hears sw2", lambda: _neighbours(sock) == ["sw2"])
        _until("the SNMP agent shows sw2 on Ethernet0",
               lambda: getattr(switch.lldp_neighbors().get("Ethernet0"), "remote_system",
                               None) == "sw2")
        assert switch.lldp_neighbors()["Ethernet0"].older_neighbours == ()
        pp = running["spaces"]["pp"]
        netns.ip("link", "set", "p2", "nomaster", netns=pp)  # the cable moves to sw3
        netns.ip("link", "set", "p3", "master", "br0", netns=pp)
        _until("lldpd on sw1 lists sw2 and sw3", lambda: set(_neighbours(sock)) == {"sw2",
                                                                                    "sw3"})
        # the first read once the agent has both rows: the newest wins, the old is named
        def both_rows() -> bool:
            n = switch.lldp_neighbors().get("Ethernet0")
            return n is not None and bool(n.older_neighbours)

        _until("the agent exports both rows", both_rows)
        found = switch.lldp_neighbors()["Ethernet0"]
        assert found.remote_system == "sw3", found
        assert [o.split(":", 1)[0] for o in found.older_neighbours] == ["sw2"]
