"""Arista EOS switch driver: ``show ... | json`` over SSH, configuration in a CLI session.

EOS renders every show command it can as JSON, whose keys are stable across
releases, so reads use ``| json`` (``labtest.drivers.eos.parsers`` reads it). The
account needs privilege 15, so that each SSH session starts in enable mode.

Config snapshot and restore use EOS's own mechanism: ``copy running-config
flash:TOKEN.cfg`` saves the running config to flash, ``configure replace
flash:TOKEN.cfg`` makes the running config exactly that file again (a replace,
not a merge). The startup config is never touched; snapshot files stay on
flash until someone removes them.

Not offered yet (no real published JSON of these commands to build parsers
against): PFC and queue counters, FEC statistics and histogram, PRBS.

``vars`` understood: ``reboot_command`` (``reload now``), ``reboot_poll_s`` (5),
``reboot_command_timeout_s`` (30).
"""

from __future__ import annotations

from labtest.drivers.common.cli import CliSwitch, new_snapshot_token, port_name, snapshot_token
from labtest.drivers.eos import parsers as p

from labtest.capabilities.switch import Facts, InterfaceCounters, InterfaceStatus, LldpNeighbor
from labtest.capabilities.transceiver import Transceiver


class EosSwitch(CliSwitch):
    """An Arista EOS switch reached over SSH."""

    config_mode = ("configure", "end")

    def facts(self) -> Facts:
        return self.show("show version | json", p.parse_version)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        return self.show("show interfaces status | json", p.parse_interfaces_status)

    def counters(self) -> dict[str, InterfaceCounters]:
        """``show interfaces | json``: packets, octets and the error detail in one answer."""
        return self.show("show interfaces | json", p.parse_interface_counters)

    def transceivers(self) -> dict[str, Transceiver]:
        """DOM with thresholds; EOS lists each lane of a multi-lane optic as its own port."""
        return self.show("show interfaces transceiver detail | json", p.parse_transceivers)

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        return self.show("show lldp neighbors detail | json", p.parse_lldp_neighbors)

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
