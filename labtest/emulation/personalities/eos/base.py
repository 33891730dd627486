"""What every part of the EOS CLI shares: the device, the session base class, port names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtest.emulation.personalities import SwitchDevice

DEFAULT_VERSION = "4.33.2F"
DEFAULT_MODEL = "DCS-7060DX5-64S"
INTERNAL_BUILD = "40713977.4332F"
BUILD_ID = "bb0a7f77-9bdd-4ede-92a0-7a42f1a6dda3"
SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 30065, 1, 3011, 7060, 3913, 64)  # aristaProducts subtree
MEM_TOTAL_KB, MEM_FREE_KB = 8051592, 5439548
LLDP_TTL_S = 120
INVALID = "% Invalid input"


def eos_if_index(port: str) -> int | None:
    """EOS numbers ``EthernetN`` as N and ``EthernetX/Y`` as X*1000+Y [assumption: the
    layout LibreNMS walks show for breakout ports]."""
    m = re.fullmatch(r"Ethernet(\d+)(?:/(\d+))?", port)
    if not m:
        return None
    return int(m.group(1)) * 1000 + int(m.group(2)) if m.group(2) else int(m.group(1))


def short_name(port: str) -> str:
    """``Ethernet1/1`` -> ``Et1/1`` as EOS text tables print it."""
    return re.sub(r"^Ethernet", "Et", port)


def dotted_mac(mac: str) -> str:
    """``02:ab:cd:ef:01:02`` -> ``02ab.cdef.0102`` (EOS text and LLDP chassis ids)."""
    digits = mac.replace(":", "").lower()
    return ".".join(digits[i : i + 4] for i in range(0, 12, 4))


@dataclass
class EosDevice(SwitchDevice):
    """One EOS switch: the shared state plus rate samples."""

    def version(self) -> str:
        return self.fabric.device_facts(self.name).firmware_version or DEFAULT_VERSION

    def model(self) -> str:
        return self.state.var("model", DEFAULT_MODEL)


class EosCommands:
    """One SSH channel's view of the switch; the command groups (interfaces, optics, LLDP,
    the CLI itself) extend it."""

    def __init__(self, dev: EosDevice) -> None:
        self.dev = dev
        self.state = dev.state
