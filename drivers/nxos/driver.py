"""Cisco NX-OS switch driver: text ``show`` commands over SSH, configuration in a CLI session.

Reads: facts, interfaces, counters (``show interface counters`` and ``...
errors`` merged per port), transceiver DOM with thresholds, LLDP, and PFC
frame totals per port (NX-OS does not split them by priority, so the driver
has ``pfc_counters`` but not the whole PfcQueues capability). Port admin goes
through ``configure terminal`` / ``interface X`` / ``[no] shutdown`` / ``end``
in one interactive session.

Port names are given in NX-OS's long form (``Ethernet1/1``) whatever the
command printed (``show interface status`` and the counters abbreviate to
``Eth1/1``), so every capability keys the same port the same way.

Config snapshot and restore use NX-OS checkpoints: ``checkpoint TOKEN`` records
the running config on the switch, ``rollback running-config checkpoint TOKEN``
returns to it (atomic by default: all or nothing). Checkpoints stay until
``no checkpoint TOKEN``. Reboot is not offered: ``reload`` asks for a
confirmation that an exec channel cannot give.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace

from labtest.capabilities.switch import (
    Facts,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import CliSwitch, new_snapshot_token, port_name, snapshot_token
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
        self.run(f"rollback running-config checkpoint {snapshot_token(token)}")


def long_name(port: str) -> str:
    """``Eth1/1`` -> ``Ethernet1/1``; other names as printed."""
    m = re.fullmatch(r"Eth(\d[\d/.]*)", port)
    return f"Ethernet{m.group(1)}" if m else port


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
