"""The NX-OS CLI of one SSH channel: modes, keyword expansion, ``| include``, configuration,
checkpoints and rollback, version and running-config (the tables of the other areas:
``interfaces``, ``optics``, ``lldp``, ``routing``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from labtest.emulation.personalities import STARTUP
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.personalities._routing import _asn, router_id, sessions
from labtest.emulation.personalities._text import INTERFACE_CONFIG_TREE, expand
from labtest.emulation.personalities.nxos.base import (
    BIOS_VERSION,
    INCOMPLETE,
    MEMORY_KB,
    NxosDevice,
    long_name,
    nxos_time,
    refuse,
)
from labtest.emulation.personalities.nxos.interfaces import InterfaceCommands
from labtest.emulation.personalities.nxos.lldp import LldpCommands
from labtest.emulation.personalities.nxos.optics import OpticCommands
from labtest.emulation.personalities.nxos.routing import RoutingCommands
from labtest.emulation.sshserver import CliReply

#: Cisco's configuration guides: up to ten user checkpoints per switch
MAX_CHECKPOINTS = 10
_TREE: dict[str, Any] = {
    "show": {
        "version": {},
        "interface": {
            "status": {},
            "counters": {"errors": {}},
            "transceiver": {"details": {}},
            "priority-flow-control": {},
        },
        "lldp": {"neighbors": {}},
        "ip": {"bgp": {"summary": {"vrf": {"all": {}}}}, "interface": {"vrf": {"all": {}}}},
        "bfd": {"neighbors": {"details": {}}},
        "running-config": {},
    },
    "configure": {"terminal": {}},
    "checkpoint": {},
    "no": {"checkpoint": {}},
    "rollback": {"running-config": {"checkpoint": {}}},
    "copy": {"running-config": {"startup-config": {}}},
    "terminal": {"length": {}, "width": {}},
}
_CONFIG_BANNER = "Enter configuration commands, one per line. End with CNTL/Z.\n"
_ROLLBACK_DONE = (
    "Note: Applying config parallelly may fail Rollback verification\n"
    "Collecting Running-Config\n"
    "#Generating Rollback Patch\n"
    "Executing Rollback Patch\n"
    "Generating Running-config for verification\n"
    "Generating Patch for verification\n"
    "Verification is Successful.\n"
    "\n"
    "Rollback completed successfully.\n"
)


class NxosCli(InterfaceCommands, OpticCommands, LldpCommands, RoutingCommands):
    """One SSH channel: exec mode, config mode, or an interface's config mode."""

    def __init__(self, dev: NxosDevice) -> None:
        super().__init__(dev)
        self.mode = "exec"  # exec | config | config-if
        self.interface: str | None = None
        self._shows: dict[str, Callable[[], str]] = {
            "show version": self.version_text,
            "show interface status": self.status_text,
            "show interface counters": self.counters_text,
            "show interface counters errors": self.errors_text,
            "show interface transceiver details": self.transceiver_details_text,
            "show interface priority-flow-control": self.pfc_text,
            "show lldp neighbors": self.lldp_text,
            "show ip bgp summary": self.bgp_summary_text,
            "show ip bgp summary vrf all": self.bgp_summary_text,
            "show ip interface": self.ip_interface_text,
            "show ip interface vrf all": self.ip_interface_text,
            "show bfd neighbors details": self.bfd_details_text,
            "show running-config": self.running_config,
        }

    @property
    def prompt(self) -> str:
        suffix = {"config": "(config)", "config-if": "(config-if)"}.get(self.mode, "")
        return f"{self.state.name}{suffix}#"

    def run(self, command: str) -> CliReply:
        line = command.strip()
        if not line or line.startswith("!"):
            return CliReply("")
        if line in ("exit", "quit") and self.mode == "exec":
            return CliReply("", close=True)
        body, bar, pipe = line.partition("|")
        words = body.split()
        if not words:
            return refuse(line, 0)
        if self.mode != "exec" and words[0].lower() not in ("sh", "sho", "show"):
            return self._config_line(line, words)
        reply = self._exec(line, words)
        if bar and reply.exit_status == 0:
            return _filtered(line, len(words), reply.output, pipe.strip())
        return reply

    # --- exec mode -------------------------------------------------------------------

    def _exec(self, line: str, words: list[str]) -> CliReply:
        path, used, unknown = expand(words, _TREE)
        if unknown is not None:
            return refuse(line, len(path))
        key, args = " ".join(path), words[used:]
        show = self._shows.get(key)
        if show is not None:
            return refuse(line, used) if args else CliReply(show())
        return self._action(line, key, args, used)

    def _action(self, line: str, key: str, args: list[str], used: int) -> CliReply:
        dev, state = self.dev, self.state
        if key in ("configure", "configure terminal") and not args:
            self.mode = "config"
            return CliReply(_CONFIG_BANNER)
        # the refusals' wording below is ours: no public capture of them was found
        if key == "checkpoint" and len(args) == 1:
            if args[0] in dev.checkpoints:  # names are unique; an old one is never replaced
                return CliReply(f"Checkpoint name {args[0]} is already in use\n", 1)
            if len(dev.checkpoints) >= MAX_CHECKPOINTS:
                return CliReply(f"Maximum number of checkpoints ({MAX_CHECKPOINTS}) reached\n", 1)
            dev.checkpoints[args[0]] = state.running_config()
            return CliReply("Done\n")
        if key == "no checkpoint" and len(args) == 1:
            if dev.checkpoints.pop(args[0], None) is None:
                return CliReply(f"Checkpoint {args[0]} does not exist\n", 1)
            return CliReply("Done\n")
        if key == "rollback running-config checkpoint" and len(args) == 1:
            config = dev.checkpoints.get(args[0])
            if config is None:
                return CliReply(f"Checkpoint {args[0]} does not exist\n", 1)
            state.apply_config(config)
            dev.changed()
            return CliReply(_ROLLBACK_DONE)
        if key == "copy running-config startup-config" and not args:
            state.save(STARTUP)
            return CliReply("[########################################] 100%\nCopy complete.\n")
        if key in ("terminal length", "terminal width") and len(args) == 1 and args[0].isdigit():
            return CliReply("")
        return refuse(line, used) if args else refuse(line, None, INCOMPLETE)

    # --- config mode -----------------------------------------------------------------

    def _config_line(self, line: str, words: list[str]) -> CliReply:
        path, used, unknown = expand(words, INTERFACE_CONFIG_TREE)
        if unknown is not None:
            return refuse(line, len(path))
        key, args = " ".join(path), words[used:]
        fabric, name = self.dev.fabric, self.state.name
        if key == "end":
            self.mode, self.interface = "exec", None
        elif key == "exit":
            self.mode = "config" if self.mode == "config-if" else "exec"
            self.interface = None
        elif key == "interface":
            if not args:
                return refuse(line, None, INCOMPLETE)
            port = long_name("".join(args))
            if not self.state.has_port(port):
                return refuse(line, used)
            self.mode, self.interface = "config-if", port
        elif self.mode != "config-if" or self.interface is None:
            return refuse(line, 0)
        elif key in ("shutdown", "no shutdown") and not args:
            fabric.set_admin(name, self.interface, key == "no shutdown")
            self.dev.changed()
        elif key == "mtu" and len(args) == 1 and args[0].isdigit():
            fabric.set_mtu(name, self.interface, int(args[0]))
            self.dev.changed()
        elif key == "description" and args:
            self.state.descriptions[self.interface] = " ".join(args)
            self.dev.changed()
        elif key == "no description":
            self.state.descriptions.pop(self.interface, None)
            self.dev.changed()
        elif args:
            return refuse(line, used)
        else:
            return refuse(line, None, INCOMPLETE)
        return CliReply("")

    # --- version and running-config ----------------------------------------------------

    # layout: show_version__ntc_n93180yc_fx3_10_4 (NX-OS 10.4(5) on a Nexus 9000)
    def version_text(self) -> str:
        dev, state = self.dev, self.state
        version = dev.version()
        image = re.sub(r"\W+", ".", version).strip(".")  # 10.4(5) -> nxos64-cs.10.4.5.bin
        up = int(state.uptime_s())
        days, hours, mins, secs = up // 86400, up % 86400 // 3600, up % 3600 // 60, up % 60
        return "\n".join([
            "Cisco Nexus Operating System (NX-OS) Software",
            "TAC support: http://www.cisco.com/tac",
            "",
            "Software",
            f"  BIOS: version {BIOS_VERSION}",
            f"  NXOS: version {version}",
            f"  NXOS image file is: bootflash:///nxos64-cs.{image}.bin",
            "",
            "Hardware",
            f"  cisco Nexus9000 {dev.chassis()} Chassis",
            f"  Intel(R) Xeon(R) CPU with {MEMORY_KB} kB of memory.",
            f"  Processor Board ID {dev.fabric.device_facts(state.name).serial}",
            f"  Device name: {state.name}",
            "",
            f"Kernel uptime is {days} day(s), {hours} hour(s), {mins} minute(s), "
            f"{secs} second(s)",
            "",
            "plugin",
            "  Core Plugin, Ethernet Plugin",
            "",
        ]) + "\n"

    # layout: NX-OS "show running-config" (the two volatile comment lines the driver drops,
    # then version, hostname, features, one stanza per interface, router bgp)
    def running_config(self) -> str:
        dev, state = self.dev, self.state
        cfg = state.running_config()
        fabric, name = dev.fabric, state.name
        mine = {s.port: s for s in sessions(fabric, name)}
        lines = [
            "!Command: show running-config",
            f"!Running configuration last done at: {nxos_time(dev.last_change_epoch_s())}",
            f"!Time: {nxos_time(epoch_s(fabric))}",
            "",
            f"version {dev.version()} Bios:version {BIOS_VERSION}",
            f"hostname {name}",
            "feature bgp",
            "feature bfd",
            "feature lldp",
            "",
        ]
        for port in state.ports:
            lines.append(f"interface {port}")
            if cfg["description"].get(port):
                lines.append(f"  description {cfg['description'][port]}")
            lines.append(f"  mtu {cfg['mtu'][port]}")
            if cfg["pfc"]:
                lines.append("  priority-flow-control mode on")
            lines.append("  no switchport")
            if port in mine:
                lines.append(f"  ip address {mine[port].local_ip}/31")
            lines += ["  no shutdown" if cfg["admin"][port] else "  shutdown", ""]
        if mine:
            rid = router_id(fabric, name)
            lines += ["interface loopback0", f"  ip address {rid}/32", "",
                      f"router bgp {_asn(fabric, name)}", f"  router-id {rid}",
                      "  address-family ipv4 unicast", f"    network {rid}/32"]
            for s in mine.values():
                lines += [f"  neighbor {s.peer_ip}", "    bfd",
                          f"    remote-as {_asn(fabric, s.peer_device)}",
                          "    address-family ipv4 unicast"]
            lines.append("")
        return "\n".join(lines) + "\n"


def _filtered(line: str, words: int, text: str, pipe: str) -> CliReply:
    """``| include RE`` / ``| exclude RE`` / ``| grep RE`` on a text answer."""
    verb, _, pattern = pipe.partition(" ")
    if verb.lower() not in ("include", "exclude", "grep") or not pattern.strip():
        return refuse(line, words + 1)
    keep = verb.lower() != "exclude"
    rx = re.compile(pattern.strip())
    kept = [ln for ln in text.splitlines() if bool(rx.search(ln)) == keep]
    return CliReply("\n".join(kept) + ("\n" if kept else ""))
