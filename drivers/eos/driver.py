"""Arista EOS switch driver: ``show ... | json`` over SSH, configuration in a CLI session.

EOS renders every show command it can as JSON, whose keys are stable across
releases, so reads use ``| json`` (``labtest.drivers.eos.parsers`` reads it). The
account needs privilege 15, so that each SSH session starts in enable mode.

Config snapshot and restore use EOS's own mechanism: ``copy running-config
flash:TOKEN.cfg`` saves the running config to flash, ``configure replace
flash:TOKEN.cfg`` makes the running config exactly that file again (a replace,
not a merge). The startup config is never touched; snapshot files stay on
flash until someone removes them.

Read as well, from the JSON shapes ANTA's tests use: FEC codeword counters and
pre-FEC BER per port (``show interfaces phy detail``), PFC frame totals per port
(``show priority-flow-control counters``), egress drops per traffic class
(``show interfaces counters queue detail``) with ECN marks merged in (``show qos
interfaces ecn counters queue``).

Not offered (no real published output to build a parser against, see
docs/drivers.md): the FEC codeword histogram, PRBS, PFC counters per priority
and the PFC watchdog. So the driver offers ``FecCounters`` (``fec_stats``) but not
``FecCodewordHistogram`` (hence not ``Fec``, which is both), nor ``PfcQueues`` or
``Prbs`` (it has ``pfc_counters`` and ``queue_counters`` only); a suite needing them
reports the EOS end as not proven.

``vars`` understood: ``reboot_command`` (``reload now``), ``reboot_poll_s`` (5),
``reboot_command_timeout_s`` (30).
"""

from __future__ import annotations

from dataclasses import replace

from labtest.capabilities.switch import (
    Facts,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
    QueueCounters,
    status_changes_in,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.drivers.common.cli import CliSwitch, new_snapshot_token, port_name, snapshot_token
from labtest.drivers.eos import parsers as p
from labtest.errors import CommandNotSupported


class EosSwitch(CliSwitch):
    """An Arista EOS switch reached over SSH."""

    config_mode = ("configure", "end")

    def facts(self) -> Facts:
        return self.show("show version | json", p.parse_version)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        """``show interfaces status`` with each port's MTU from ``show interfaces``."""
        status = self.show("show interfaces status | json", p.parse_interfaces_status)
        mtus = self.show("show interfaces | json", p.parse_interface_mtus)
        return {name: replace(st, mtu_bytes=mtus.get(name)) for name, st in status.items()}

    def counters(self) -> dict[str, InterfaceCounters]:
        """``show interfaces | json``: packets, octets and the error detail in one answer."""
        return self.show("show interfaces | json", p.parse_interface_counters)

    def link_status_changes(self) -> dict[str, int]:
        """LinkFlapCounts: each port's ``linkStatusChanges`` from the same ``show interfaces |
        json`` (``counters()`` carries them too, so a caller holding both reads it once)."""
        return status_changes_in(self.counters())

    def transceivers(self) -> dict[str, Transceiver]:
        """DOM with thresholds; EOS lists each lane of a multi-lane optic as its own port.
        Vendor and part number come from the transceiver slots of ``show inventory``
        (the DOM answer has neither); a release without it leaves them ``None``."""
        dom = self.show("show interfaces transceiver detail | json", p.parse_transceivers)
        try:
            slots = self.show("show inventory | json", p.parse_inventory)
        except CommandNotSupported:
            return dom
        out: dict[str, Transceiver] = {}
        for port, module in dom.items():
            slot = slots.get(p.slot_of(port, slots) or "")
            if slot is not None and slot.present and module.present:
                module = replace(
                    module,
                    vendor=module.vendor or slot.vendor,
                    part_number=module.part_number or slot.part_number,
                    serial=module.serial or slot.serial,
                )
            out[port] = module
        return out

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        return self.show("show lldp neighbors detail | json", p.parse_lldp_neighbors)

    # --- FEC, PFC and queues --------------------------------------------------------

    def device_time_s(self) -> float:
        """The switch's clock (Clock): ``utcTime`` of ``show clock``."""
        return self.show("show clock | json", p.parse_clock)

    def fec_stats(self) -> dict[str, FecStats]:
        """Corrected/uncorrected codewords and pre-FEC BER of the line-side PHY."""
        return self.show("show interfaces phy detail | json", p.parse_phy_detail)

    def pfc_counters(self) -> dict[str, PfcCounters]:
        """PFC frames per port; EOS totals the priorities (``rx``/``tx`` lists stay None)."""
        return self.show("show priority-flow-control counters | json", p.parse_pfc_counters)

    def queue_counters(self) -> dict[str, QueueCounters]:
        """Drops per traffic class, with the ECN-marked packets of each unicast queue."""
        drops = self.show("show interfaces counters queue detail | json", p.parse_queue_drops)
        marks = self.show("show qos interfaces ecn counters queue | json", p.parse_ecn_counters)
        return {
            port: QueueCounters(
                queues=[
                    replace(q, ecn_marked_packets=marks.get(port, {}).get(q.index))
                    if q.kind == "unicast"
                    else q
                    for q in counters.queues
                ]
            )
            for port, counters in drops.items()
        }

    def set_admin(self, port: str, up: bool) -> None:
        self.configure([f"interface {port_name(port)}", "no shutdown" if up else "shutdown"])

    # --- config snapshot and restore ----------------------------------------------------

    def running_config(self) -> str:
        """``show running-config`` (EOS prints no clock in it: two reads compare equal)."""
        return self.run("show running-config")

    def snapshot(self) -> str:
        token = new_snapshot_token()
        self.run(f"copy running-config flash:{token}.cfg")
        return token

    def restore(self, token: str) -> None:
        self.run(f"configure replace flash:{snapshot_token(token)}.cfg")

    # --- reboot -----------------------------------------------------------------------

    def reboot(self, timeout_s: float) -> None:
        command = str(self.device.vars.get("reboot_command", "reload now"))
        self.reboot_and_wait(command, lambda: self.facts().uptime_s, timeout_s)
