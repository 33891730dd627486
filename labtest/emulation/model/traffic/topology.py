"""Ports, peers, addresses and per-device traffic settings, built once from the testbed.

Everything downstream works on integer port indices: a port is one end of a
cabled link (``"dev:port"``), so it is both an egress (towards its peer) and an
ingress (from its peer). Device settings come from ``Device.vars`` so a lab can
tune timers, QoS and NIC limits per device without touching code; the defaults
and their sources are listed on ``TrafficSettings``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labtest.emulation.model.faults import FaultError
from labtest.errors import ConfigError
from labtest.testbed.model import Testbed

#: roles whose devices are traffic end points, never transit
ENDPOINT_ROLES = frozenset({"host", "tg"})
PRIORITIES = 8
ROCE_DPORT = 4791  # IANA port of RoCEv2
UDP = 17


class LinkView(Protocol):
    """What the traffic model needs to know about the physical links (the core's view)."""

    def link_up(self, link_name: str) -> bool: ...

    def link_rate_fraction(self, link_name: str) -> float: ...

    def link_speed_gbps(self, link_name: str) -> float: ...

    def link_names(self) -> list[str]: ...


class TrafficSettings(BaseModel):
    """Per-device knobs read from ``Device.vars`` (unknown keys belong to drivers: ignored).

    Defaults and where they come from (reference/domain-methodology.md):
    - BFD 200 ms x 3 = 600 ms detection: Dell OS10 default (section 5);
    - convergence 50 ms after detection: our assumption for a local ECMP member
      removal (the reference marks sub-second targets as convention);
    - lossless priorities 3 and 4 with PFC on: the SONiC default QoS profile;
    - PFC watchdog 200 ms detect / 200 ms restore / 200 ms poll, action drop:
      SONiC ``pfcwd start_default`` (section 4);
    - switch port MTU 9100 (SONiC default), host netdev MTU 9000 (RoCE MTU 4096);
    - switch port-to-port latency 0.6 us: our assumption (cut-through ASIC class).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    bfd_interval_ms: float = Field(200.0, gt=0)
    bfd_multiplier: int = Field(3, ge=1)
    convergence_ms: float = Field(50.0, ge=0)
    hash_seed: int | None = None  # None: derived from the device name
    hash_fields: tuple[str, ...] = ("src_ip", "dst_ip", "proto", "sport", "dport")
    pfc_priorities: tuple[int, ...] = (3, 4)
    ecn: bool = True
    pfcwd: bool = True
    pfcwd_detect_ms: float = Field(200.0, gt=0)
    pfcwd_restore_ms: float = Field(200.0, gt=0)
    pfcwd_poll_ms: float = Field(200.0, gt=0)
    pfcwd_action: str = Field("drop", pattern=r"^(drop|forward|alert)$")
    mtu: int | None = Field(None, ge=68)
    switch_latency_us: float = Field(0.6, ge=0)
    nic_speed_gbps: float | None = Field(None, gt=0)
    pcie_gbps: float | None = Field(None, gt=0)
    dcqcn: bool = True
    honor_pfc: bool = True  # a TG port obeys pause frames (OTG layer1 ieee_802_1qbb)

    @property
    def detection_s(self) -> float:
        return self.bfd_interval_ms * self.bfd_multiplier / 1000.0


@dataclass(frozen=True)
class Port:
    index: int
    device: str
    name: str
    link: int  # index into Topology.links
    peer: int  # port index of the far end

    @property
    def endpoint(self) -> str:
        return f"{self.device}:{self.name}"


@dataclass(frozen=True)
class LinkInfo:
    index: int
    name: str
    ports: tuple[int, int]
    length_m: float


class Topology:
    """The cabling plan as indexed ports, with device roles and settings."""

    def __init__(self, testbed: Testbed) -> None:
        self.testbed = testbed
        self.ports: list[Port] = []
        self.links: list[LinkInfo] = []
        self._by_endpoint: dict[str, int] = {}
        for li, link in enumerate(testbed.links):
            a, b = link.ends
            ia, ib = len(self.ports), len(self.ports) + 1
            self.ports.append(Port(ia, a.device, a.port, li, ib))
            self.ports.append(Port(ib, b.device, b.port, li, ia))
            self._by_endpoint[str(a)] = ia
            self._by_endpoint[str(b)] = ib
            self.links.append(LinkInfo(li, link.name, (ia, ib), link.length_m or 3.0))
        self.link_index = {lk.name: lk.index for lk in self.links}
        where = str(testbed.source or testbed.name)
        self.settings = {n: device_settings(where, n, d.vars) for n, d in testbed.devices.items()}
        self.roles = {name: dev.role for name, dev in testbed.devices.items()}
        self.device_ports: dict[str, list[int]] = {}
        for p in self.ports:
            self.device_ports.setdefault(p.device, []).append(p.index)
        self.endpoint_ports = [p.index for p in self.ports if self.is_endpoint(p.device)]
        self._ip = {pi: 0x0A000000 + k + 1 for k, pi in enumerate(sorted(self.endpoint_ports))}

    # --- roles -------------------------------------------------------------

    def is_endpoint(self, device: str) -> bool:
        return self.roles.get(device, "") in ENDPOINT_ROLES

    def is_switch(self, device: str) -> bool:
        return device in self.roles and not self.is_endpoint(device)

    def is_host(self, device: str) -> bool:
        return self.roles.get(device) == "host"

    def switches(self) -> list[str]:
        return [d for d in self.device_ports if self.is_switch(d)]

    # --- lookups -----------------------------------------------------------

    def port(self, endpoint: str) -> int:
        try:
            return self._by_endpoint[endpoint]
        except KeyError:
            raise FaultError(f"no cabled port {endpoint!r} in the testbed") from None

    def resolve_endpoint(self, text: str) -> int:
        """``dev:port``, or a host/TG device name meaning its first cabled port."""
        if ":" in text:
            return self.port(text)
        ports = self.device_ports.get(text)
        if not ports:
            raise FaultError(f"device {text!r} has no cabled port in the testbed")
        return ports[0]

    def resolve_link(self, text: str) -> int:
        """A link name ``a--b`` or either of its ends ``dev:port``."""
        if text in self.link_index:
            return self.link_index[text]
        if "--" in text:
            a, _, b = text.partition("--")
            reverse = f"{b}--{a}"
            if reverse in self.link_index:
                return self.link_index[reverse]
            raise FaultError(f"no link {text!r} in the cabling plan")
        return self.ports[self.port(text)].link

    def require_device(self, name: str) -> None:
        if name not in self.roles:
            raise FaultError(f"no device {name!r} in the testbed")

    def ip(self, port: int) -> int:
        return self._ip.get(port, 0)

    def ip_text(self, port: int) -> str:
        v = self.ip(port)
        return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))

    def peer_device(self, port: int) -> str:
        return self.ports[self.ports[port].peer].device


def device_settings(source: str, name: str, raw: dict[str, object]) -> TrafficSettings:
    """One device's ``vars`` as traffic knobs; a bad value is a ConfigError naming
    ``devices.NAME.vars.KEY`` in ``source`` (the testbed file)."""
    try:
        s = TrafficSettings.model_validate(raw)
    except ValidationError as exc:
        problems = [
            f"devices.{name}.vars.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors()
        ]
        raise ConfigError(source, problems) from None
    if s.hash_seed is None:
        s = s.model_copy(update={"hash_seed": zlib.crc32(name.encode())})
    return s
