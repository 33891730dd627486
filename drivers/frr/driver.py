"""Linux + FRR switch driver: iproute2, lldpcli and vtysh over SSH.

A "switch" here is a Linux box routing with FRR (zebra, bgpd, bfdd), the way
the kernel lab builds one and the way SONiC's routing container works. Every
method is one shell command (``docs/drivers.md``):

- interfaces: ``ip -j -d link show`` plus ``/sys/class/net/*/speed``;
- counters: ``ip -s -s -j link show`` (the kernel's own counters, read directly:
  no agent cache in between, unlike net-snmp's IF-MIB, which refreshes every
  ~3 s — see docs/kernel-lab.md), with ``carrier_changes``, which sees a flap
  between two link-state samples (LinkFlapCounts reads the same command);
- LLDP: ``lldpcli -f json show neighbors`` (the newest row per port);
- BGP and BFD: ``vtysh -c 'show bgp summary json'``, ``show bfd peers json`` (the
  sessions per local port add ``ip -j -4 addr show``: drivers/frr/routing.py);
- port admin: ``vtysh`` ``interface X`` / ``shutdown`` (zebra takes the link down);
- snapshot and restore: the FRR running-config, saved to a file on the box
  (``vars.snapshot_dir``, default ``/var/lib/frr``); restore negates what was
  added since and applies the saved file again with ``vtysh -f``.
"""

from __future__ import annotations

import shlex
import time

from labtest.capabilities.switch import (
    Facts,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
)
from labtest.drivers.common.cli import (
    FlapsFromCounters,
    new_snapshot_token,
    port_name,
    snapshot_token,
)
from labtest.drivers.frr import parsers as p
from labtest.drivers.frr.routing import FrrRouting
from labtest.drivers.snmp_switch.driver import SnmpSwitch

#: net-snmp refreshes IF-MIB from the kernel at most every 3 s (its ifTable/ifXTable data
#: cache, IFTABLE_CACHE_TIMEOUT): a read sooner after traffic can miss all of it
NET_SNMP_IFMIB_CACHE_S = 3.0

SPEEDS = f"echo '{p.SPEED_MARK}'; grep -Hs . /sys/class/net/*/speed; true"


class FrrSwitch(FlapsFromCounters, FrrRouting):
    """A Linux + FRR router reached over SSH (a shell with ip, lldpcli and vtysh)."""

    posix_shell = True  # every command is a shell line: a timed-out one is killed on the box

    def facts(self) -> Facts:
        command = "vtysh -c 'show version'"
        text = self.run(f"{command}; vtysh -c 'show running-config' | grep '^hostname '; true")
        return self.parse(p.parse_version, command, text)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        command = "ip -j -d link show"
        return self.parse(p.parse_links, command, self.run(f"{command}; {SPEEDS}"))

    def counters(self) -> dict[str, InterfaceCounters]:
        return self.show("ip -s -s -j link show", p.parse_link_stats)

    def snmp_counters(self) -> dict[str, InterfaceCounters]:
        """IF-MIB counters through the box's SNMP agent, counting everything sent before
        the call: the agent's cache time (``vars.snmp_cache_s``, net-snmp: 3 s) passes
        first, so the agent has refreshed from the kernel since. ``counters()`` reads the
        kernel directly and needs no wait."""
        time.sleep(self.seconds("snmp_cache_s", NET_SNMP_IFMIB_CACHE_S) + 0.1)
        agent = SnmpSwitch(self.name, self.device, self.testbed)
        try:
            return agent.counters()
        finally:
            agent.close()

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        return self.show("lldpcli -f json show neighbors", p.parse_lldp_neighbors)

    def bgp_peers(self) -> dict[str, p.BgpPeer]:
        return self.show("vtysh -c 'show bgp summary json'", p.parse_bgp_summary)

    def bfd_peers(self) -> dict[str, p.BfdPeer]:
        return self.show("vtysh -c 'show bfd peers json'", p.parse_bfd_peers)

    def set_admin(self, port: str, up: bool) -> None:
        self.vtysh_config(f"interface {port_name(port)}", "no shutdown" if up else "shutdown")

    def vtysh_config(self, *lines: str) -> None:
        args = " ".join(f"-c {shlex.quote(x)}" for x in ("configure terminal", *lines, "end"))
        self.run(f"vtysh {args}")

    # --- snapshot and restore -----------------------------------------------------------

    def running_config(self) -> str:
        return self.run("vtysh -c 'show running-config'")

    def _path(self, token: str) -> str:
        folder = str(self.device.vars.get("snapshot_dir", "/var/lib/frr"))
        return shlex.quote(f"{folder}/{snapshot_token(token)}.conf")

    def snapshot(self) -> str:
        token = new_snapshot_token()
        strip = "grep -v -e '^Building configuration' -e '^Current configuration'"
        self.run(f"vtysh -c 'show running-config' | {strip} > {self._path(token)}")
        return token

    def restore(self, token: str) -> None:
        path = self._path(token)
        saved = self.run(f"cat {path}")
        undo = p.undo_commands(saved, self.running_config())
        if undo:
            self.vtysh_config(*undo)
        self.run(f"vtysh -f {path}")
