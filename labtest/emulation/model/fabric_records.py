"""What the fabric model hands out (records, errors) and its port table.

The records are the model's truth that the personalities print and the tests
check drivers against; ``PortState`` is the mutable per-port row behind them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from labtest.testbed.model import Link, Testbed

HOST_ROLES = frozenset({"host"})

CounterSource = Callable[[str, str], Mapping[str, int]]
COUNTER_FIELDS = (
    "rx_octets",
    "rx_packets",
    "tx_octets",
    "tx_packets",
    "rx_errors",
    "tx_errors",
    "rx_drops",
    "tx_drops",
)


class ModelError(LookupError):
    """A device, port or link the model does not have, or a call it cannot honour."""


@dataclass(frozen=True, slots=True)
class InterfaceStatus:
    device: str
    port: str
    admin_up: bool
    oper_up: bool
    speed_gbps: float
    mtu_bytes: int
    lanes: int
    mac: str
    link: str | None  # Link.name in the cabling plan
    optic: str  # catalogue name of the module, "" when none


@dataclass(frozen=True, slots=True)
class IfCounters:
    """One port's interface counters as the fabric keeps them (the truth a driver's
    ``InterfaceCounters`` reading is checked against)."""

    device: str
    port: str
    rx_octets: int
    rx_packets: int
    tx_octets: int
    tx_packets: int
    rx_errors: int  # includes FCS errors
    tx_errors: int
    rx_drops: int
    tx_drops: int
    rx_fcs_errors: int  # frames hit by an uncorrectable codeword
    oper_down_count: int  # link-down transitions seen by this port
    time_s: float


#: the counts of ``IfCounters``: the traffic-driven ones and the two the optics add
IF_COUNTER_FIELDS = (*COUNTER_FIELDS, "rx_fcs_errors", "oper_down_count")


@dataclass(frozen=True, slots=True)
class LldpAdvert:
    """What the peer on ``local_port`` advertises (the truth a driver's ``LldpNeighbor``
    reading is checked against)."""

    local_port: str
    chassis_id: str  # the neighbour's base MAC
    system_name: str
    port_id: str
    port_description: str
    management_address: str | None
    ttl_s: int


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    name: str
    role: str
    driver: str
    serial: str
    base_mac: str
    firmware_version: str | None  # None: the emulator's default for its OS
    reachable: bool


# --- the port table ------------------------------------------------------------


@dataclass
class PortState:
    device: str
    port: str
    mac: str
    speed_gbps: float
    mtu_bytes: int
    link: int | None = None  # index into the testbed's links
    module: int | None = None  # index into the module arrays
    admin_up: bool = True
    load: float = 0.0
    extra: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTER_FIELDS, 0))
    base: dict[str, int] = field(default_factory=dict)  # snapshot at the last clear


def crc(text: str) -> int:
    """A stable hash of a name: serials, MACs and spreads do not change between runs."""
    return zlib.crc32(text.encode())


def mac_of(device: str, index: int = 0) -> str:
    """A locally administered MAC, stable per device (index 0: its base MAC)."""
    h = crc(device)
    octets = [0x02, (h >> 24) & 0xFF, (h >> 16) & 0xFF, (h >> 8) & 0xFF, h & 0xFF, index & 0xFF]
    return ":".join(f"{o:02x}" for o in octets)


def build_ports(testbed: Testbed, links: list[Link]) -> dict[tuple[str, str], PortState]:
    """Every port of the testbed's devices and cabling plan, each cabled port on its link."""
    ports: dict[tuple[str, str], PortState] = {}

    def add(device: str, port: str) -> PortState:
        key = (device, port)
        if key not in ports:
            dev = testbed.devices.get(device)
            role = dev.role if dev else ""
            default_mtu = 9000 if role in HOST_ROLES else 9100
            mtu = int(dev.vars.get("mtu_bytes", default_mtu)) if dev else default_mtu
            index = sum(1 for d, _ in ports if d == device) + 1
            ports[key] = PortState(device, port, mac_of(device, index), 400.0, mtu)
        return ports[key]

    for name, dev in testbed.devices.items():
        for port in dev.ports:
            add(name, port)
    for li, lk in enumerate(links):
        for end in lk.ends:
            p = add(end.device, end.port)
            if p.link is not None:
                raise ModelError(f"port {end} is cabled more than once")
            p.link = li
            if lk.speed_gbps:
                p.speed_gbps = lk.speed_gbps
    return ports
