"""The EOS CLI of one SSH channel: modes, keyword expansion, ``| json`` and ``| include``,
configuration and snapshots, version, clock and running-config (the documents of the other
areas: ``interfaces``, ``optics``, ``lldp``)."""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime
from typing import Any

from labtest.emulation.personalities import STARTUP
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.personalities._text import INTERFACE_CONFIG_TREE, eos_uptime, expand
from labtest.emulation.personalities.eos.base import (
    BUILD_ID,
    INTERNAL_BUILD,
    INVALID,
    MEM_FREE_KB,
    MEM_TOTAL_KB,
    EosDevice,
    dotted_mac,
    short_name,
)
from labtest.emulation.personalities.eos.interfaces import InterfaceCommands
from labtest.emulation.personalities.eos.lldp import LldpCommands
from labtest.emulation.personalities.eos.optics import OpticCommands
from labtest.emulation.personalities.eos.routing import RoutingCommands
from labtest.emulation.sshserver import CliReply

_TREE: dict[str, Any] = {
    "show": {
        "version": {},
        "clock": {},
        "interfaces": {
            "status": {},
            "counters": {"errors": {}, "queue": {"detail": {}}},
            "transceiver": {"detail": {}},
            "phy": {"detail": {}},
            "priority-flow-control": {"counters": {"detail": {}}},
        },
        "priority-flow-control": {"counters": {"detail": {}, "watchdog": {}}},
        "ip": {"bgp": {"summary": {"vrf": {"all": {}}}}, "interface": {}},
        "bfd": {"peers": {"detail": {}}},
        "inventory": {},
        "qos": {"interfaces": {"ecn": {"counters": {"queue": {}}}}},
        "lldp": {"neighbors": {"detail": {}}},
        "running-config": {},
    },
    "configure": {"terminal": {}, "replace": {}},
    "copy": {},
    "write": {"memory": {}},
    "reload": {},
    "enable": {},
    "terminal": {"length": {}, "width": {}},
}


class EosCli(InterfaceCommands, OpticCommands, LldpCommands, RoutingCommands):
    """One SSH channel: exec mode, config mode, or an interface's config mode."""

    def __init__(self, dev: EosDevice) -> None:
        super().__init__(dev)
        self.mode = "exec"  # exec | config | config-if
        self.interface: str | None = None

    @property
    def prompt(self) -> str:
        name = self.state.name
        if self.mode == "config":
            return f"{name}(config)#"
        if self.mode == "config-if" and self.interface:
            return f"{name}(config-if-{short_name(self.interface)})#"
        return f"{name}#"

    def run(self, command: str) -> CliReply:
        line = command.strip()
        if not line or line.startswith("!"):
            return CliReply("")
        if line in ("exit", "logout", "quit") and self.mode == "exec":
            return CliReply("", close=True)
        body, _, pipe = line.partition("|")
        try:
            words = shlex.split(body)
        except ValueError:
            return _invalid()
        if self.mode != "exec" and words and words[0].lower() not in ("sh", "sho", "show"):
            return self._config_line(words)
        path, used, unknown = expand(words, _TREE)
        if unknown is not None or not path:
            return _invalid(unknown, len(path) + 1)
        return self._exec(path, words[used:], pipe.strip())

    # --- exec mode -------------------------------------------------------------------

    def _exec(self, path: list[str], args: list[str], pipe: str) -> CliReply:
        key = " ".join(path)
        as_json = pipe.lower() == "json"
        if pipe and not as_json:
            return self._filtered(key, args, pipe)
        documents = {
            "show version": self.version_json,
            "show clock": self.clock_json,
            "show interfaces status": self.status_json,
            "show interfaces": self.interfaces_json,
            "show interfaces counters": self.counters_json,
            "show interfaces counters errors": self.errors_json,
            "show interfaces transceiver": lambda: self.transceiver_json(False),
            "show interfaces transceiver detail": lambda: self.transceiver_json(True),
            "show lldp neighbors": self.lldp_json,
            "show lldp neighbors detail": self.lldp_detail_json,
            "show interfaces phy detail": self.phy_detail_json,
            "show priority-flow-control counters": self.pfc_json,
            "show interfaces priority-flow-control counters detail": self.pfc_detail_json,
            "show priority-flow-control counters detail": self.pfc_detail_json,
            "show priority-flow-control counters watchdog": self.pfc_watchdog_json,
            "show interfaces counters queue detail": self.queue_detail_json,
            "show qos interfaces ecn counters queue": self.ecn_json,
            "show inventory": self.inventory_json,
            "show ip bgp summary vrf all": self.bgp_summary_json,
            "show ip bgp summary": self.bgp_summary_json,
            "show ip interface": self.ip_interface_json,
            "show bfd peers detail": self.bfd_detail_json,
            "show bfd peers": self.bfd_detail_json,
        }
        texts = {
            "show version": self.version_text,
            "show clock": self.clock_text,
            "show interfaces status": self.status_text,
            "show interfaces transceiver": self.transceiver_text,
            "show interfaces transceiver detail": self.transceiver_detail_text,
            "show inventory": self.inventory_text,
            "show interfaces": self.interfaces_text,
            "show lldp neighbors": self.lldp_text,
            "show running-config": self.running_config,
        }
        if as_json and key in documents:
            return CliReply(json.dumps(documents[key](), indent=4) + "\n")
        if as_json:
            return CliReply("% This is an unconverted command\n", 1)
        if key in texts:
            return CliReply(texts[key]())
        return self._action(key, args)

    def _filtered(self, key: str, args: list[str], pipe: str) -> CliReply:
        """``| include RE`` / ``| exclude RE`` on a text answer."""
        verb, _, pattern = pipe.partition(" ")
        verb = verb.lower()
        reply = self._exec(key.split(), args, "")
        if verb not in ("include", "exclude", "grep") or reply.exit_status:
            return reply if verb in ("include", "exclude", "grep") else _invalid()
        keep = verb != "exclude"
        rx = re.compile(pattern.strip())
        lines = [ln for ln in reply.output.splitlines() if bool(rx.search(ln)) == keep]
        return CliReply("\n".join(lines) + ("\n" if lines else ""))

    def _action(self, key: str, args: list[str]) -> CliReply:
        state = self.state
        if key in ("configure", "configure terminal") and not args:
            self.mode = "config"
            return CliReply("")
        if key == "configure replace" and args:
            if not state.load(_flash_key(args[0])):
                return CliReply(f"% Error: file {args[0]} does not exist\n", 1)
            return CliReply("")
        if key == "copy" and len(args) == 2 and args[0] == "running-config":
            state.save(STARTUP if args[1] == "startup-config" else _flash_key(args[1]))
            return CliReply("Copy completed successfully.\n")
        if key == "write memory":
            state.save(STARTUP)
            return CliReply("Copy completed successfully.\n")
        if key == "reload" and args and args[0] in ("now", "force"):
            state.reboot()
            return CliReply("")
        if key in ("enable", "terminal length", "terminal width"):
            return CliReply("")
        return CliReply("% Incomplete command\n", 1) if not args else _invalid(args[0])

    # --- config mode -----------------------------------------------------------------

    def _config_line(self, words: list[str]) -> CliReply:
        path, used, unknown = expand(words, INTERFACE_CONFIG_TREE)
        if unknown is not None or not path:
            return _invalid(unknown)
        key, args = " ".join(path), words[used:]
        if key == "end":
            self.mode, self.interface = "exec", None
        elif key == "exit":
            self.mode, self.interface = (
                ("config", None) if self.mode == "config-if" else ("exec", None)
            )
        elif key == "interface":
            port = _long_name("".join(args))
            if not self.state.has_port(port):
                return _invalid(args[0] if args else None)
            self.mode, self.interface = "config-if", port
        elif self.mode != "config-if" or self.interface is None:
            return _invalid(words[0])
        elif key in ("shutdown", "no shutdown"):
            self.dev.fabric.set_admin(self.state.name, self.interface, key == "no shutdown")
        elif key == "mtu" and args and args[0].isdigit():
            self.dev.fabric.set_mtu(self.state.name, self.interface, int(args[0]))
        elif key == "description":
            self.state.descriptions[self.interface] = " ".join(args)
        elif key == "no description":
            self.state.descriptions.pop(self.interface, None)
        else:
            return CliReply("% Incomplete command\n", 1)
        return CliReply("")

    # --- version ---------------------------------------------------------------------

    # keys: show_version_json__veoslab_4_33 (EOS 4.33.2F eAPI capture)
    def version_json(self) -> dict[str, Any]:
        facts = self.dev.fabric.device_facts(self.state.name)
        version = self.dev.version()
        return {
            "mfgName": "Arista",
            "modelName": self.dev.model(),
            "hardwareRevision": self.state.var("hardware_rev", "11.03"),
            "serialNumber": facts.serial,
            "systemMacAddress": facts.base_mac,
            "hwMacAddress": facts.base_mac,
            "configMacAddress": "00:00:00:00:00:00",
            "version": version,
            "architecture": "x86_64",
            "internalVersion": f"{version}-{INTERNAL_BUILD}",
            "internalBuildId": BUILD_ID,
            "imageFormatVersion": "3.0",
            "imageOptimization": "Default",
            "bootupTimestamp": round(self.state.boot_epoch_s(), 6),
            "uptime": round(self.state.uptime_s(), 2),
            "memTotal": MEM_TOTAL_KB,
            "memFree": MEM_FREE_KB,
            "isIntlVersion": False,
        }

    # --- clock: the fabric's virtual pace, so counter windows match what they counted ---

    # shape: show_clock_json__anta_asynceapi_ceoslab / show_clock_json__vane_fixture_dut
    def clock_json(self) -> dict[str, Any]:
        now = epoch_s(self.state.fabric)
        t = datetime.fromtimestamp(now, UTC)
        return {
            "utcTime": now,
            "timezone": "UTC",
            "localTime": {
                "year": t.year,
                "month": t.month,
                "dayOfMonth": t.day,
                "hour": t.hour,
                "min": t.minute,
                "sec": t.second,
                "dayOfWeek": (t.weekday() + 1) % 7,
                "dayOfYear": t.timetuple().tm_yday,
                "daylightSavingsAdjust": 0,
            },
            "clockSource": {"local": True},
        }

    # layout: the text of show_clock_json__vane_fixture_dut
    def clock_text(self) -> str:
        t = datetime.fromtimestamp(epoch_s(self.state.fabric), UTC)
        return f"{t:%a %b %d %H:%M:%S %Y}\nTimezone: UTC\nClock source: local\n"

    # layout: show_version__eantc_7050sx3 (EOS 4.31.2F text)
    def version_text(self) -> str:
        v = self.version_json()
        mac = dotted_mac(v["systemMacAddress"])
        return "\n".join(
            [
                f"Arista {v['modelName']}",
                f"Hardware version: {v['hardwareRevision']}",
                f"Serial number: {v['serialNumber']}",
                f"Hardware MAC address: {mac}",
                f"System MAC address: {mac}",
                "",
                f"Software image version: {v['version']}",
                "Architecture: x86_64",
                f"Internal build version: {v['internalVersion']}",
                f"Internal build ID: {BUILD_ID}",
                "Image format version: 3.0",
                "Image optimization: Default",
                "",
                f"Uptime: {eos_uptime(v['uptime'])}",
                f"Total memory: {MEM_TOTAL_KB} kB",
                f"Free memory: {MEM_FREE_KB} kB",
                "",
            ]
        )


    # --- running-config --------------------------------------------------------------

    # layout: EOS "show running-config" (header comments, one stanza per interface)
    def running_config(self) -> str:
        state = self.state
        cfg = state.running_config()
        lines = [
            "! Command: show running-config",
            f"! device: {state.name} ({self.dev.model()}, EOS-{self.dev.version()})",
            "!",
            "! boot system flash:/EOS.swi",
            "!",
            "transceiver qsfp default-mode 4x10G",
            "!",
            f"hostname {state.name}",
            "!",
        ]
        pfc = cfg["pfc"]
        for port in state.ports:
            lines.append(f"interface {port}")
            if cfg["description"].get(port):
                lines.append(f"   description {cfg['description'][port]}")
            lines.append(f"   mtu {cfg['mtu'][port]}")
            lines.append("   no switchport")
            if pfc:
                lines.append("   priority-flow-control on")
                lines += [f"   priority-flow-control priority {p} no-drop" for p in pfc]
            if not cfg["admin"][port]:
                lines.append("   shutdown")
            lines.append("!")
        wd = cfg["pfcwd"]
        if wd["enabled"]:  # the global lines as AVD's eos/priority-flow-control.j2 prints them
            action = _WD_ACTIONS.get(wd["action"])
            if action:
                lines.append(f"priority-flow-control pause watchdog action {action}")
            lines += [
                "priority-flow-control pause watchdog default timeout "
                f"{wd['detection_ms'] / 1000:g}",
                "priority-flow-control pause watchdog default recovery-time "
                f"{wd['restoration_ms'] / 1000:g}",
                "priority-flow-control pause watchdog default polling-interval "
                f"{wd['poll_ms'] / 1000:g}",
                "!",
            ]
        lines.append("end")
        return "\n".join(lines) + "\n"


# --- helpers ------------------------------------------------------------------------

#: the model's watchdog action -> EOS's word ("pause watchdog action drop|no-drop"); EOS
#: has no alert-only action, so none is printed for it
_WD_ACTIONS = {"drop": "drop", "forward": "no-drop"}


def _invalid(word: str | None = None, token: int = 0) -> CliReply:
    """EOS's refusal of an unknown keyword."""
    detail = f" (at token {token}: '{word}')" if word and token else ""
    return CliReply(f"{INVALID}{detail}\n", 1)


def _flash_key(path: str) -> str:
    return "flash:" + path.removeprefix("flash:").lstrip("/")


def _long_name(text: str) -> str:
    m = re.fullmatch(r"(?i)(?:et|eth|ethernet)\s*(\d[\d/]*)", text.strip())
    return f"Ethernet{m.group(1)}" if m else text


