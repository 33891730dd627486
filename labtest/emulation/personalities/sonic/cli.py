"""The SONiC CLI of one SSH channel: command-word expansion, dispatch, privilege, and the
system, LLDP and configuration commands (the other groups: ``interfaces``, ``optics``)."""

from __future__ import annotations

import json
import shlex
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from labtest.emulation.personalities import PRIORITIES
from labtest.emulation.personalities._clock import date_output, epoch_s
from labtest.emulation.personalities._routing import routing_command
from labtest.emulation.personalities._text import expand, procps_uptime, table
from labtest.emulation.personalities.sonic.base import (
    CONFIG_DB,
    DEFAULT_ASIC,
    DEFAULT_HWSKU,
    DEFAULT_MODEL,
    DEFAULT_PLATFORM,
    ROOT_REQUIRED,
    CliError,
    SonicDevice,
    config_key,
    ok,
    option,
    port_alias,
    port_lanes,
    usage,
    without_options,
)
from labtest.emulation.personalities.sonic.interfaces import InterfaceCommands
from labtest.emulation.personalities.sonic.optics import OpticCommands
from labtest.emulation.sshserver import CliReply

_DOCKER_IMAGES = [  # `docker images` layout, as "show version" appends it
    "REPOSITORY                    TAG                             IMAGE ID       SIZE",
    "docker-syncd-mlnx             latest                          ddd49cfcb0fd   755MB",
    "docker-orchagent              latest                          4e1f3c2a9b10   312MB",
    "docker-lldp                   latest                          9681bbfea3ac   298MB",
    "docker-snmp                   latest                          e2776e2a30b7   309MB",
]


# --- command-word abbreviations (SONiC's AliasedGroup) ----------------------------------

_TREE: dict[str, Any] = {
    "show": {
        "version": {},
        "platform": {"summary": {}},
        "interfaces": {
            "status": {},
            "counters": {"errors": {}, "fec-stats": {}, "fec-histogram": {}},
            "flap": {},
            "transceiver": {"eeprom": {}, "pm": {}},
            "prbs": {"status": {}},
        },
        "pfc": {"counters": {}},
        "queue": {"counters": {}, "wredcounters": {}},
        "lldp": {"table": {}},
        "pfcwd": {"stats": {}, "config": {}},
        "runningconfiguration": {"all": {}},
    },
    "config": {
        "interface": {"shutdown": {}, "startup": {}, "pfc": {"priority": {}}, "prbs": {}},
        "save": {},
        "reload": {},
    },
    "pfcwd": {"start": {}, "stop": {}},
    "sonic-clear": {"counters": {}, "pfccounters": {}},
}
_ALIASES = {"interface": "interfaces", "int": "interfaces"}


class SonicCli(InterfaceCommands, OpticCommands):
    """One SSH channel's view of the switch (a fresh one per exec or shell)."""

    def __init__(self, dev: SonicDevice) -> None:
        super().__init__(dev)
        self._user = str(dev.state.device.ssh.username) if dev.state.device.ssh else "admin"

    @property
    def prompt(self) -> str:
        return f"{self._user}@{self.state.name}:~$ "

    def run(self, command: str) -> CliReply:
        line = command.strip()
        if line in ("exit", "logout"):
            return CliReply("", close=True)
        try:
            words = shlex.split(line)
        except ValueError:
            return CliReply("", 2, "-bash: syntax error: unterminated quoted string\n")
        sudo = bool(words) and words[0] == "sudo"
        if sudo:
            words = words[1:]
        if not words:
            return CliReply("")
        program = words[0]
        if program == "reboot":
            return self._reboot(sudo)
        if program == "date":  # SONiC's Linux shell; the clock runs at the fabric's pace
            out, err, status = date_output(words[1:], epoch_s(self.dev.fabric))
            return CliReply(out, status, err)
        if program in ("vtysh", "ip"):  # FRR in the bgp container; iproute2 on the host
            out, err, status = routing_command(self.dev.fabric, self.state.name, words)
            return CliReply(out, status, err)
        if program not in _TREE:
            return CliReply("", 127, f"-bash: {program}: command not found\n")
        if program in ("config", "pfcwd") and not sudo:
            return CliReply("", 1, f"{ROOT_REQUIRED}\n")
        path, used, unknown = expand(words, _TREE, _ALIASES)
        if unknown is not None:
            return _no_such_command(path, unknown)
        handler = _HANDLERS.get(" ".join(path))
        if handler is None:
            return _usage_missing(path)
        try:
            return handler(self, words[used:])
        except CliError as exc:
            return CliReply("", exc.status, exc.text)

    # --- system ------------------------------------------------------------------------

    # format: show_version__arista7060x6_master2025 (SONiC master, 2025) and
    # show_version__cmdref_sn2700 (sonic-utilities Command-Reference.md)
    def show_version(self, args: list[str]) -> CliReply:
        state = self.state
        version = self.dev.version()
        commit = (
            version.rsplit("-", 1)[1][:9]
            if "-" in version
            else (f"{zlib.crc32(version.encode()):08x}")
        )
        now = datetime.now(UTC)
        load = "0.52, 0.58, 0.59"
        lines = [
            "",
            f"SONiC Software Version: {version}",
            "SONiC OS Version: 12",
            "Distribution: Debian 12.11",
            "Kernel: 6.1.0-29-2-amd64",
            f"Build commit: {commit}",
            "Build date: Thu Jul 31 07:48:38 UTC 2025",
            "Built by: labtest@emulator",
            "",
            *self._platform_lines(),
            f"Uptime: {now:%H:%M:%S} up {procps_uptime(state.uptime_s())},  1 user,  "
            f"load average: {load}",
            f"Date: {now:%a %d %b %Y %H:%M:%S}",
            "",
            "Docker images:",
            *_DOCKER_IMAGES,
        ]
        return ok(lines)

    # format: show_platform_summary__dx010_202105 (keys as SONiC 202105+ prints them)
    def show_platform_summary(self, args: list[str]) -> CliReply:
        return ok(self._platform_lines())

    def _platform_lines(self) -> list[str]:
        """The platform block ``show version`` and ``show platform summary`` share."""
        state, facts = self.state, self.dev.fabric.device_facts(self.state.name)
        return [
            f"Platform: {state.var('platform', DEFAULT_PLATFORM)}",
            f"HwSKU: {state.var('hwsku', DEFAULT_HWSKU)}",
            f"ASIC: {state.var('asic', DEFAULT_ASIC)}",
            "ASIC Count: 1",
            f"Serial Number: {facts.serial}",
            f"Model Number: {state.var('model', DEFAULT_MODEL)}",
            f"Hardware Revision: {state.var('hardware_rev', 'A1')}",
        ]

    # --- LLDP --------------------------------------------------------------------------

    # format: lldp_table__cmdref (left-aligned tabulate, rule and total line)
    def show_lldp_table(self, args: list[str]) -> CliReply:
        rows = []
        for n in self.dev.lldp_neighbours():
            caps = "BR" if self.state.is_switch(n.system_name) else "O"
            rows.append([n.local_port, n.system_name, n.port_id, caps, n.port_description])
        headers = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
        return ok(
            [
                "Capability codes: (R) Router, (B) Bridge, (O) Other",
                table(headers, rows, align="left"),
                "-" * 50,
                f"Total entries displayed:  {len(rows)}",
            ]
        )

    # --- running configuration -------------------------------------------------------

    # format: CONFIG_DB as ``sonic-cfggen -d --print-data`` prints it (indent 4, sorted)
    def show_running_configuration(self, args: list[str]) -> CliReply:
        return ok([json.dumps(config_db(self.dev), indent=4, sort_keys=True)])

    # --- configuration ---------------------------------------------------------------

    def config_admin(self, up: bool) -> Callable[[list[str]], CliReply]:
        def handler(args: list[str]) -> CliReply:
            verb = "startup" if up else "shutdown"
            if not args:
                raise CliError(
                    usage(
                        f"config interface {verb}",
                        "<interface_name>",
                        'Missing argument "<interface_name>".',
                    ),
                    2,
                )
            for port in args[0].split(","):
                self._check_port(port, f"config interface {verb}")
            for port in args[0].split(","):
                self.dev.fabric.set_admin(self.state.name, port, up)
            return ok([])

        return handler

    def config_pfc_priority(self, args: list[str]) -> CliReply:
        if len(args) != 3 or args[2] not in ("on", "off") or not args[1].isdigit():
            raise CliError(
                usage(
                    "config interface pfc priority",
                    "<interface_name> <priority> <status>",
                    "Missing argument or invalid value.",
                ),
                2,
            )
        self._check_port(args[0], "config interface pfc priority")
        priority = int(args[1])
        if not 0 <= priority < PRIORITIES:
            raise CliError(f"Error: Invalid priority {priority}\n", 1)
        self.state.set_pfc(priority, args[2] == "on")
        return ok([])

    def config_save(self, args: list[str]) -> CliReply:
        if "-y" not in args:
            return ok(
                ["Existing files will be overwritten, continue? [y/N]: ", "Aborted!"], status=1
            )
        path = next((a for a in args if not a.startswith("-")), CONFIG_DB)
        self.state.save(config_key(path))
        return ok([f"Running command: /usr/local/bin/sonic-cfggen -d --print-data > {path}"])

    # format: ``config reload -y`` log lines of sonic-utilities 202x
    def config_reload(self, args: list[str]) -> CliReply:
        if "-y" not in args:
            return ok(
                [
                    "Clear current config and reload config in config_db format from "
                    "the default config file(s) ? [y/N]: ",
                    "Aborted!",
                ],
                status=1,
            )
        path = next((a for a in args if not a.startswith("-")), CONFIG_DB)
        if not self.state.load(config_key(path)):
            raise CliError(f"Error: File {path} does not exist!\n", 1)
        return ok(
            [
                "Acquired lock on /etc/sonic/reload.lock",
                "Disabling container monitoring ...",
                "Stopping SONiC target ...",
                f"Running command: /usr/local/bin/sonic-cfggen -j {path} --write-to-db",
                "Running command: /usr/local/bin/db_migrator.py -o migrate",
                "Restarting SONiC target ...",
                "Enabling container monitoring ...",
                "Reloading Monit configuration ...",
                "Reinitializing monit daemon",
                "Released lock on /etc/sonic/reload.lock",
            ]
        )

    def pfcwd_start(self, args: list[str]) -> CliReply:
        action = option(args, "--action", self.state.pfcwd.action)
        restoration = option(args, "--restoration-time", "")
        rest = [a for a in without_options(args, ("--action", "--restoration-time"))]
        if not rest or not rest[-1].isdigit():
            raise CliError(
                usage(
                    "pfcwd start",
                    "[OPTIONS] [PORTS]... DETECTION_TIME",
                    'Missing argument "DETECTION_TIME".',
                ),
                2,
            )
        if action not in ("drop", "forward", "alert"):
            raise CliError(f'Error: Invalid value for "--action": invalid choice: {action}\n', 2)
        for port in rest[:-1]:
            if port != "all":
                self._check_port(port, "pfcwd start")
        wd = self.state.pfcwd
        wd.action = action
        wd.detection_ms = int(rest[-1])
        wd.restoration_ms = int(restoration) if restoration.isdigit() else wd.detection_ms
        self.state.set_pfcwd(True)  # the model's watchdog is per switch, not per port
        return ok([])

    def pfcwd_stop(self, args: list[str]) -> CliReply:
        self.state.set_pfcwd(False)
        return ok([])

    def _reboot(self, sudo: bool) -> CliReply:
        if not sudo:
            return CliReply("", 1, "This command must be run as root\n")
        self.state.reboot()
        return ok(["User requested rebooting device ...", "Rebooting with platform reboot ..."])


# --- dispatch table -------------------------------------------------------------------

Handler = Callable[[SonicCli, list[str]], CliReply]


_HANDLERS: dict[str, Handler] = {
    "show version": SonicCli.show_version,
    "show platform summary": SonicCli.show_platform_summary,
    "show interfaces status": SonicCli.show_interfaces_status,
    "show interfaces counters": SonicCli.show_interfaces_counters,
    "show interfaces flap": SonicCli.show_interfaces_flap,
    "show interfaces counters errors": SonicCli.show_interfaces_counters_errors,
    "show interfaces counters fec-stats": SonicCli.show_fec_stats,
    "show interfaces counters fec-histogram": SonicCli.show_fec_histogram,
    "show interfaces transceiver eeprom": SonicCli.show_transceiver_eeprom,
    "show interfaces transceiver pm": SonicCli.show_transceiver_pm,
    "show interfaces prbs status": SonicCli.show_prbs_status,
    "show pfc counters": SonicCli.show_pfc_counters,
    "show queue counters": SonicCli.show_queue_counters,
    "show queue wredcounters": SonicCli.show_queue_wredcounters,
    "show lldp table": SonicCli.show_lldp_table,
    "show pfcwd stats": SonicCli.show_pfcwd_stats,
    "show pfcwd config": SonicCli.show_pfcwd_config,
    "show runningconfiguration all": SonicCli.show_running_configuration,
    "config interface shutdown": lambda cli, args: cli.config_admin(False)(args),
    "config interface startup": lambda cli, args: cli.config_admin(True)(args),
    "config interface pfc priority": SonicCli.config_pfc_priority,
    "config interface prbs": SonicCli.config_prbs,
    "config save": SonicCli.config_save,
    "config reload": SonicCli.config_reload,
    "pfcwd start": SonicCli.pfcwd_start,
    "pfcwd stop": SonicCli.pfcwd_stop,
    "sonic-clear counters": SonicCli.sonic_clear_counters,
    "sonic-clear pfccounters": SonicCli.sonic_clear_pfc,
}


# --- helpers ----------------------------------------------------------------------------


def _no_such_command(path: list[str], word: str) -> CliReply:
    group = " ".join(path) or "show"
    text = (
        f'Usage: {group} [OPTIONS] COMMAND [ARGS]...\nTry "{group} -h" for help.\n\n'
        f'Error: No such command "{word}".\n'
    )
    return CliReply("", 2, text)


def _usage_missing(path: list[str]) -> CliReply:
    group = " ".join(path)
    return CliReply(
        "",
        2,
        f"Usage: {group} [OPTIONS] COMMAND [ARGS]...\n"
        f'Try "{group} -h" for help.\n\nError: Missing command.\n',
    )


def config_db(dev: SonicDevice) -> dict[str, Any]:
    """The running CONFIG_DB tables the emulator models (``show runningconfiguration all``)."""
    state, fabric = dev.state, dev.fabric
    facts = fabric.device_facts(state.name)
    cfg = state.running_config()
    pfc = ",".join(str(p) for p in cfg["pfc"])
    ports, qos = {}, {}
    for index, port in enumerate(state.ports):
        st = fabric.interface(state.name, port)
        ports[port] = {
            "admin_status": "up" if cfg["admin"][port] else "down",
            "alias": port_alias(state, port),
            "fec": "rs",
            "index": str(index),
            "lanes": port_lanes(port, st.speed_gbps),
            "mtu": str(cfg["mtu"][port]),
            "speed": str(int(st.speed_gbps * 1000)),
        }
        if pfc:
            qos[port] = {"pfc_enable": pfc}
        if port in dev.prbs and dev.prbs[port].stop_s is None:
            ports[port] |= {
                "prbs_mode": dev.prbs[port].mode,
                "prbs_pattern": dev.prbs[port].pattern,
            }
    wd = cfg["pfcwd"]
    pfc_wd: dict[str, dict[str, str]] = {"GLOBAL": {"POLL_INTERVAL": str(wd["poll_ms"])}}
    if wd["enabled"]:
        for port in state.ports:
            if fabric.interface(state.name, port).link:
                pfc_wd[port] = {
                    "action": wd["action"],
                    "detection_time": str(wd["detection_ms"]),
                    "restoration_time": str(wd["restoration_ms"]),
                }
    role = state.device.role
    return {
        "DEVICE_METADATA": {
            "localhost": {
                "hostname": state.name,
                "hwsku": state.var("hwsku", DEFAULT_HWSKU),
                "mac": facts.base_mac,
                "platform": state.var("platform", DEFAULT_PLATFORM),
                "type": "SpineRouter" if role == "spine" else "LeafRouter",
            }
        },
        "PFC_WD": pfc_wd,
        "PORT": ports,
        "PORT_QOS_MAP": qos,
    }


