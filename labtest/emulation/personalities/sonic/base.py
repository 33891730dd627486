"""What every part of the SONiC CLI shares: the device's state, the session base class,
sonic-utilities' error shapes and the small formatters more than one command uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from labtest.emulation.personalities import STARTUP, PortView, SwitchDevice, SwitchState
from labtest.emulation.personalities._text import first_number
from labtest.emulation.sshserver import CliReply

DEFAULT_VERSION = "SONiC.202405.35-b4c2f0a1"
DEFAULT_PLATFORM = "x86_64-mlnx_msn4700-r0"
DEFAULT_HWSKU = "ACS-MSN4700"
DEFAULT_MODEL = "MSN4700-WS2FO"
DEFAULT_ASIC = "mellanox"
CONFIG_DB = "/etc/sonic/config_db.json"
ROOT_REQUIRED = "Root privileges are required for this operation"
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 8072, 3, 2, 10)  # net-snmp "linux", what SONiC reports
RATE_MIN_DT_S = 0.5  # a rate needs two counter samples at least this far apart
MODULE_TYPES = {  # SFF-8024 identifier names as sfputil prints them
    "QSFP-DD": "QSFP-DD Double Density 8X Pluggable Transceiver",
    "OSFP": "OSFP 8X Pluggable Transceiver",
    "QSFP28": "QSFP28 or later",
}


def sonic_if_index(port: str) -> int | None:
    """sonic-snmpagent numbers ``EthernetN`` as ifIndex N+1."""
    n = first_number(port)
    return n + 1 if port.startswith("Ethernet") and n is not None else None


@dataclass
class PrbsRun:
    """One ``config interface prbs`` run of a port, as ``show interfaces prbs status`` shows it."""

    mode: str  # rx | tx | both
    pattern: str
    start_s: float
    stop_s: float | None = None
    lanes: list[Any] | None = None  # fabric PrbsLane records captured at disable


@dataclass
class SonicDevice(SwitchDevice):
    """One SONiC switch: its shared state plus what sonic-utilities keeps on disk."""

    cleared: dict[str, dict[str, int]] = field(default_factory=dict)  # sonic-clear counters
    cleared_at: str | None = None
    pfc_cleared: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    prbs: dict[str, PrbsRun] = field(default_factory=dict)

    def version(self) -> str:
        fw = self.fabric.device_facts(self.name).firmware_version
        if not fw:
            return DEFAULT_VERSION
        return fw if fw.startswith("SONiC.") else f"SONiC.{fw}"


class SonicCommands:
    """One SSH channel's view of the switch; the command groups (interfaces, optics, the
    CLI itself) extend it."""

    def __init__(self, dev: SonicDevice) -> None:
        self.dev = dev
        self.state = dev.state

    def _ports(self, args: list[str]) -> list[str]:
        """The ports an optional PORT argument selects (all of them without one)."""
        names = [a for a in args if not a.startswith("-")]
        if not names:
            return list(self.state.ports)
        wanted = names[0].split(",")
        for port in wanted:
            if not self.state.has_port(port):
                raise CliError(f"Invalid port {port}\n", 1)
        return wanted

    def _check_port(self, port: str, command: str) -> None:
        if not self.state.has_port(port):
            raise CliError(
                usage(
                    command,
                    "<interface_name>",
                    "Interface name is invalid. Please enter a valid interface name!!",
                ),
                2,
            )


class CliError(Exception):
    def __init__(self, text: str, status: int) -> None:
        super().__init__(text)
        self.text, self.status = text, status


def ok(lines: list[str], status: int = 0) -> CliReply:
    text = "\n".join(lines)
    return CliReply(text + "\n" if text else "", status)


def usage(command: str, args: str, error: str) -> str:
    """click's usage error, as sonic-utilities prints it on stderr."""
    return f'Usage: {command} [OPTIONS] {args}\nTry "{command} -h" for help.\n\nError: {error}\n'


def option(args: list[str], name: str, default: str) -> str:
    if name in args and args.index(name) + 1 < len(args):
        return args[args.index(name) + 1]
    return default


def without_options(args: list[str], names: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        else:
            out.append(a)
    return out


def config_key(path: str) -> str:
    return STARTUP if path == CONFIG_DB else path


def counter_values(view: PortView) -> dict[str, int]:
    return {
        "rx_ok": view.rx_packets,
        "rx_err": view.rx_errors,
        "rx_drp": view.rx_discards,
        "tx_ok": view.tx_packets,
        "tx_err": view.tx_errors,
        "tx_drp": view.tx_discards,
    }


def state_letter(view: PortView) -> str:
    """portstat: X = admin down, U = oper up, D = oper down."""
    if not view.admin_up:
        return "X"
    return "U" if view.oper_up else "D"


def port_lanes(port: str, speed_gbps: float) -> str:
    """Serdes lanes from the port number: 8 x 50G at 400G and above, 4 below."""
    first = first_number(port) or 0
    count = 8 if speed_gbps >= 400 else 4 if speed_gbps >= 100 else 1
    return ",".join(str(first + i) for i in range(count))


def port_alias(state: SwitchState, port: str) -> str:
    return f"etp{state.ports.index(port) + 1}"

