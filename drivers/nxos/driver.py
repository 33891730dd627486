"""Cisco NX-OS switch driver: text ``show`` commands over SSH, configuration in a CLI session.

Reads: facts, interfaces, counters (``show interface counters`` and ``...
errors`` merged per port), transceiver DOM with thresholds, LLDP, and PFC
frame totals per port (NX-OS does not split them by priority, so the driver
has ``pfc_counters`` but not the whole PfcQueues capability). Port admin goes
through ``configure terminal`` / ``interface X`` / ``[no] shutdown`` / ``end``
in one interactive session.

Port names are given in NX-OS's long form (``Ethernet1/1``, ``port-channel5``) whatever
the command printed (``show interface status``, the counters and BFD abbreviate to
``Eth1/1``, ``Po5``), so every capability keys the same port the same way.

Config snapshot and restore use NX-OS checkpoints: ``checkpoint TOKEN`` records
the running config on the switch, ``rollback running-config checkpoint TOKEN``
returns to it (atomic by default: all or nothing), then ``no checkpoint TOKEN``
deletes it (the switch keeps at most ten). Reboot is not offered: ``reload`` asks for a
confirmation that an exec channel cannot give.

BGP and BFD sessions (``BgpSessions``, ``BfdSessions``) come from the text of ``show ip
bgp summary vrf all`` and ``show bfd neighbors details``, with the same meaning as on EOS
and FRR: a BGP peer sits on the port whose connected subnet (``show ip interface vrf
all``, same VRF) holds it, its uptime is Up/Down while Established; a BFD session names its
port itself, its intervals are in ms and the detection time is computed from the peer's
multiplier and interval (RFC 5880), not read (parsers and sources: ``parsers.py``).
"""

from __future__ import annotations

import re
from dataclasses import fields, replace

from labtest.capabilities.routing import BfdSession, BgpSession
from labtest.capabilities.switch import (
    Facts,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import CliSwitch, new_snapshot_token, port_name, snapshot_token
from labtest.drivers.common.subnets import port_of
from labtest.drivers.nxos import parsers as p

#: lines of ``show running-config`` that change on every call (a clock, not config)
VOLATILE = re.compile(r"^!(?:Time|Running configuration last done at):.*\n?", re.MULTILINE)


class NxosSwitch(CliSwitch):
    """A Cisco NX-OS switch reached over SSH."""

    config_mode = ("configure terminal", "end")

    def facts(self) -> Facts:
        return self.show("show version", p.parse_version)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        found = self.show("show interface status", p.parse_interface_status)
        return {long_name(k): replace(v, name=long_name(k)) for k, v in found.items()}

    def counters(self) -> dict[str, InterfaceCounters]:
        """Packets from ``show interface counters``, errors from ``... counters errors``."""
        traffic = self.show("show interface counters", p.parse_interface_counters)
        errors = self.show("show interface counters errors", p.parse_interface_counters)
        ports = list(traffic) + [port for port in errors if port not in traffic]
        return {
            long_name(port): _fill(traffic.get(port) or errors[port], errors.get(port))
            for port in ports
        }

    def transceivers(self) -> dict[str, Transceiver]:
        found = self.show("show interface transceiver details", p.parse_transceiver_details)
        return {long_name(k): v for k, v in found.items()}

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        found = self.show("show lldp neighbors", p.parse_lldp_neighbors)
        return {long_name(k): v for k, v in found.items()}

    def pfc_counters(self) -> dict[str, PfcCounters]:
        """Per-port PFC frame totals (``rx``/``tx`` per priority stay None on NX-OS)."""
        found = self.show("show interface priority-flow-control", p.parse_priority_flow_control)
        return {long_name(k): v for k, v in found.items()}

    # --- BGP and BFD ----------------------------------------------------------------------

    def _addresses(self) -> dict[str, dict[str, list[str]]]:
        return self.show("show ip interface vrf all", p.parse_ip_interfaces)

    def bgp_sessions(self) -> dict[str, BgpSession]:
        """IPv4 unicast peers of every VRF (``show ip bgp summary vrf all``), each on the port
        of its VRF whose subnet holds it (``show ip interface vrf all``); an Established
        session's uptime is its Up/Down, to the unit NX-OS prints (seconds below a day)."""
        sessions = self.show("show ip bgp summary vrf all", p.parse_bgp_summary)
        if not sessions:
            return sessions
        addresses = self._addresses()
        return {
            key: replace(s, local_port=port_of(s.peer_address, addresses.get(_vrf(key), {})))
            for key, s in sessions.items()
        }

    def bfd_sessions(self) -> dict[str, BfdSession]:
        """Every BFD session (``show bfd neighbors details``) on the port it names, in the
        long form; a session that names none (``N/A``) sits on the port of its VRF whose
        subnet holds the peer."""
        found = self.show("show bfd neighbors details", p.parse_bfd_neighbors)
        addresses = self._addresses() if any(not s.local_port for s in found.values()) else {}
        out: dict[str, BfdSession] = {}
        for key, s in found.items():
            if s.local_port:
                port: str | None = long_name(s.local_port)
            else:
                port = port_of(s.peer_address, addresses.get(_vrf(key), {}))
            name, pct, printed = key.partition("%")
            out[f"{name}%{long_name(printed)}" if pct else key] = replace(s, local_port=port)
        return out

    def set_admin(self, port: str, up: bool) -> None:
        self.configure([f"interface {port_name(port)}", "no shutdown" if up else "shutdown"])

    # --- config snapshot and restore ----------------------------------------------------

    def running_config(self) -> str:
        """``show running-config`` without its timestamp lines, so two reads compare equal."""
        return VOLATILE.sub("", self.run("show running-config"))

    def snapshot(self) -> str:
        token = new_snapshot_token()
        self.run(f"checkpoint {token}")
        return token

    def restore(self, token: str) -> None:
        """Roll back, then delete the checkpoint: NX-OS keeps at most ten user checkpoints,
        so a run that left each behind would fail its eleventh snapshot. A failed rollback
        keeps it, for whoever puts the switch right."""
        name = snapshot_token(token)
        self.run(f"rollback running-config checkpoint {name}")
        self.run(f"no checkpoint {name}")


_LONG = {"Eth": "Ethernet", "Po": "port-channel"}


def long_name(port: str) -> str:
    """``Eth1/1`` -> ``Ethernet1/1``, ``Po5`` -> ``port-channel5`` (as ``show ip interface``
    and the running-config name them); other names as printed."""
    m = re.fullmatch(r"(Eth|Po)(\d[\d/.]*)", port)
    return f"{_LONG[m.group(1)]}{m.group(2)}" if m else port


def _vrf(key: str) -> str:
    """The VRF of a session key (``ADDRESS vrf NAME``; a bare address is VRF default's)."""
    return key.partition(" vrf ")[2].partition("%")[0] or "default"


def _fill(base: InterfaceCounters, extra: InterfaceCounters | None) -> InterfaceCounters:
    """``base`` with the fields it lacks taken from ``extra``."""
    if extra is None:
        return base
    missing = {
        f.name: getattr(extra, f.name)
        for f in fields(InterfaceCounters)
        if getattr(base, f.name) is None and getattr(extra, f.name) is not None
    }
    return replace(base, **missing)
