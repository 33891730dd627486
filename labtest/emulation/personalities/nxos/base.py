"""What every part of the NX-OS CLI shares: the device, the session base class, port names,
the refusal of bad input."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from labtest.emulation.personalities import SwitchDevice
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.sshserver import CliReply

DEFAULT_VERSION = "10.4(5)"  # the release of the ntc-templates N93180YC-FX3 'show version'
#: LibreNMS tests/snmpsim/nxos_lag-mib.snmprec pairs this sysObjectID (cevChassis subtree)
#: with a "Cisco NX-OS(tm) Nexus9000 C9336C-FX2, Software (NXOS 64-bit)" sysDescr
DEFAULT_CHASSIS = "C9336C-FX2"
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 9, 12, 3, 1, 3, 1955)
BIOS_VERSION = "01.11"
MEMORY_KB = 32802700
INVALID = "% Invalid command at '^' marker."
INCOMPLETE = "% Incomplete command at '^' marker."


def nxos_if_index(port: str) -> int | None:
    """NX-OS numbers ``EthernetX/Y`` from 0x1a000000: 0x200 per port (a Nexus 9000's
    LLDP-MIB walk has Ethernet1/6..1/9 at 436210176..436211712), 0x80000 per slot
    [assumption: the slot step]; breakout sub-ports get free numbers."""
    m = re.fullmatch(r"Ethernet(\d+)/(\d+)", port)
    if not m:
        return None
    return 0x1A000000 + (int(m.group(1)) - 1) * 0x80000 + (int(m.group(2)) - 1) * 0x200


def short_name(port: str) -> str:
    """``Ethernet1/1`` -> ``Eth1/1``, as NX-OS's tables (status, counters, LLDP, BFD) print."""
    return re.sub(r"^Ethernet", "Eth", port)


def long_name(text: str) -> str:
    """What ``interface e1/1``, ``eth 1/1`` or ``Ethernet1/1`` names: ``Ethernet1/1``."""
    m = re.fullmatch(r"(?i)e(?:th(?:ernet)?)?\s*(\d[\d/]*)", text.strip())
    return f"Ethernet{m.group(1)}" if m else text


def nxos_time(epoch: float) -> str:
    """``Wed Mar  4 13:45:46 2020``: the date of the running-config's comment lines."""
    t = datetime.fromtimestamp(epoch, UTC)
    return f"{t:%a %b} {t.day:2d} {t:%H:%M:%S %Y}"


def refuse(line: str, at: int | None, message: str = INVALID) -> CliReply:
    """NX-OS's answer to bad input: the line, a caret under the first word it could not
    take (``at``: that word's index; None: past the end) and the message."""
    spans = [m.start() for m in re.finditer(r"\S+", line)]
    column = spans[at] if at is not None and at < len(spans) else len(line.rstrip()) + 1
    return CliReply(f"{line}\n{' ' * column}^\n{message}\n", 1)


@dataclass
class NxosDevice(SwitchDevice):
    """One NX-OS switch: the shared state plus its checkpoints and when its config last
    changed (``!Running configuration last done at:``)."""

    checkpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed_epoch_s: float | None = None

    def version(self) -> str:
        return self.fabric.device_facts(self.name).firmware_version or DEFAULT_VERSION

    def chassis(self) -> str:
        return self.state.var("model", DEFAULT_CHASSIS)

    def changed(self) -> None:
        """Note a configuration change now (a config-mode line, a rollback)."""
        self.changed_epoch_s = epoch_s(self.fabric)

    def last_change_epoch_s(self) -> float:
        if self.changed_epoch_s is None:  # as booted
            return epoch_s(self.fabric) - self.state.uptime_s()
        return self.changed_epoch_s


class NxosCommands:
    """One SSH channel's view of the switch; the command groups (interfaces, optics, LLDP,
    routing, the CLI itself) extend it."""

    def __init__(self, dev: NxosDevice) -> None:
        self.dev = dev
        self.state = dev.state
