"""Traffic generator capability: one OTG-shaped model for every backend.

The shape follows the Open Traffic Generator model (ports, flows with a
header stack, size, rate, duration; per-flow metrics) so a test written
against the Scapy backend reads the same on snappi/ixia-c hardware. Names
carry units where OTG's do not (``rate_pps``, ``size_bytes``,
``loss_duration_ms``).

Conventions (the same as OTG's):

- ``size_bytes`` is the frame as on the wire *including* the 4-byte FCS, so
  a minimum Ethernet frame is 64.
- ``rate_bps`` counts layer-1 bits: the frame plus 20 bytes of preamble,
  start delimiter and inter-frame gap (OTG's minimum of 672 bps is one
  64-byte frame per second: (64 + 20) * 8). ``rate_line_pct`` is a share of
  the port's line rate on the same layer-1 basis.
- Loss duration is lost frames / frame rate, as featureprofiles computes an
  outage from a flow (and as OTG's ``packet_loss_duration`` does).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

ETHERNET_L1_OVERHEAD_BYTES = 20  # preamble 7 + SFD 1 + inter-frame gap 12
FCS_BYTES = 4
MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 9216  # a common jumbo maximum on switch ports
PFC_PRIORITIES = range(8)
MAX_PAUSE_QUANTA = 0xFFFF
PAUSE_QUANTUM_BITS = 512  # IEEE 802.1Qbb: one quantum = 512 bit times at the port's speed

MAC = r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- ports and header stack -------------------------------------------------------


class Port(_Model):
    """A traffic port: OTG's ``name`` and ``location``.

    ``location`` is backend-specific: for Scapy a TG port named in the
    device's ``packet.interfaces`` (or an OS interface), for snappi the
    generator's port location (``eth1`` on ixia-c, ``chassis;card;port``).
    ``speed_gbps`` is needed for ``rate_line_pct`` when the backend cannot
    read it from the port.
    """

    name: str = Field(min_length=1)
    location: str = Field(min_length=1)
    speed_gbps: float | None = Field(None, gt=0)


class Ethernet(_Model):
    """Ethernet II. A MAC left ``None`` is filled in by the backend from the ports."""

    kind: Literal["ethernet"] = "ethernet"
    src_mac: str | None = Field(None, pattern=MAC)
    dst_mac: str | None = Field(None, pattern=MAC)


class Vlan(_Model):
    kind: Literal["vlan"] = "vlan"
    vlan_id: int = Field(ge=0, le=4095)
    pcp: int = Field(0, ge=0, le=7, description="802.1p priority: the PFC class on the wire")


class Ipv4(_Model):
    kind: Literal["ipv4"] = "ipv4"
    src: str
    dst: str
    dscp: int = Field(0, ge=0, le=63)
    ecn: int = Field(0, ge=0, le=3, description="0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE")
    ttl: int = Field(64, ge=1, le=255)


class Ipv6(_Model):
    kind: Literal["ipv6"] = "ipv6"
    src: str
    dst: str
    dscp: int = Field(0, ge=0, le=63)
    ecn: int = Field(0, ge=0, le=3)
    hop_limit: int = Field(64, ge=1, le=255)


class Udp(_Model):
    kind: Literal["udp"] = "udp"
    src_port: int = Field(49152, ge=0, le=65535)
    dst_port: int = Field(ge=0, le=65535)


class Rocev2Bth(_Model):
    """InfiniBand Base Transport Header; the UDP destination port must be 4791."""

    kind: Literal["rocev2_bth"] = "rocev2_bth"
    dest_qp: int = Field(ge=0, le=0xFFFFFF)
    opcode: int = Field(0x04, ge=0, le=0xFF, description="0x04 = RC SEND only")
    partition_key: int = Field(0xFFFF, ge=0, le=0xFFFF)
    psn: int = Field(0, ge=0, le=0xFFFFFF)


class PfcPause(_Model):
    """An 802.1Qbb PFC frame: priority -> pause quanta (0 = resume)."""

    kind: Literal["pfc_pause"] = "pfc_pause"
    pause_quanta: dict[int, int] = Field(min_length=1)

    @model_validator(mode="after")
    def _ranges(self) -> PfcPause:
        for priority, quanta in self.pause_quanta.items():
            if priority not in PFC_PRIORITIES or not 0 <= quanta <= MAX_PAUSE_QUANTA:
                raise ValueError(
                    f"priority must be 0..7 and quanta 0..65535, got {priority}: {quanta}"
                )
        return self


Header = Annotated[
    Ethernet | Vlan | Ipv4 | Ipv6 | Udp | Rocev2Bth | PfcPause, Field(discriminator="kind")
]

_HEADER_BYTES = {
    "ethernet": 14, "vlan": 4, "ipv4": 20, "ipv6": 40, "udp": 8, "rocev2_bth": 12 + 4,
    "pfc_pause": 46,  # opcode, class-enable vector, 8 timers, padded to the 60-byte minimum
}  # fmt: skip
ROCEV2_UDP_PORT = 4791
SIGNATURE_BYTES = 18  # see drivers/tg/frames.py: magic, flow id, sequence, tx time, checksum fix


# --- flows ------------------------------------------------------------------------


class Flow(_Model):
    """One stream of identical frames from ``tx_port`` to ``rx_ports``.

    Exactly one of ``rate_pps``, ``rate_bps`` (layer 1) or ``rate_line_pct``.
    Duration: ``packets`` or ``duration_s``, neither for continuous traffic.
    Flows with a UDP header carry a signature (flow id, sequence number, send
    time) in their payload and get receive metrics; PFC flows are transmit-only.
    """

    name: str = Field(min_length=1)
    tx_port: str
    rx_ports: list[str] = Field(default_factory=list)
    packet: list[Header] = Field(min_length=1)
    size_bytes: int = Field(128, ge=MIN_FRAME_BYTES, le=MAX_FRAME_BYTES)
    rate_pps: float | None = Field(None, gt=0)
    rate_bps: float | None = Field(None, gt=0)
    rate_line_pct: float | None = Field(None, gt=0, le=100)
    packets: int | None = Field(None, ge=1)
    duration_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> Flow:
        rates = [r for r in (self.rate_pps, self.rate_bps, self.rate_line_pct) if r is not None]
        if len(rates) != 1:
            raise ValueError("give exactly one of rate_pps, rate_bps, rate_line_pct")
        if self.packets is not None and self.duration_s is not None:
            raise ValueError("give packets or duration_s (or neither for continuous), not both")
        _check_stack(self.kinds)
        if self.is_measured and not self.rx_ports:
            raise ValueError("a UDP flow needs at least one rx port to be measured")
        if self.has_bth and self.header(Udp).dst_port != ROCEV2_UDP_PORT:  # type: ignore[union-attr]
            raise ValueError(f"a RoCEv2 flow must use UDP destination port {ROCEV2_UDP_PORT}")
        if self.size_bytes < self.min_size_bytes:
            raise ValueError(
                f"size_bytes {self.size_bytes} is below {self.min_size_bytes}, the smallest frame "
                "that holds these headers and the test signature (incl. FCS)"
            )
        return self

    @property
    def kinds(self) -> list[str]:
        return [h.kind for h in self.packet]

    def header(self, cls: type[_Model]) -> _Model | None:
        return next((h for h in self.packet if isinstance(h, cls)), None)

    @property
    def is_measured(self) -> bool:
        """Carries a signature, so frames can be counted and ordered per flow at the receiver."""
        return "udp" in self.kinds

    @property
    def is_pfc(self) -> bool:
        return "pfc_pause" in self.kinds

    @property
    def has_bth(self) -> bool:
        return "rocev2_bth" in self.kinds

    @property
    def min_size_bytes(self) -> int:
        headers = sum(_HEADER_BYTES[k] for k in self.kinds)
        return max(MIN_FRAME_BYTES, headers + (SIGNATURE_BYTES if self.is_measured else 0) + 4)

    def pps(self, line_speed_gbps: float | None = None) -> float:
        """The frame rate, converting bps and % of line on the layer-1 basis."""
        return frames_per_second(
            self.size_bytes,
            rate_pps=self.rate_pps,
            rate_bps=self.rate_bps,
            rate_line_pct=self.rate_line_pct,
            line_speed_gbps=line_speed_gbps,
        )

    def packets_at(self, rate_pps: float) -> int | None:
        """How many frames this flow sends at ``rate_pps`` (``None``: continuous)."""
        if self.packets is not None:
            return self.packets
        if self.duration_s is not None:
            return max(1, round(self.duration_s * rate_pps))
        return None


def _check_stack(kinds: list[str]) -> None:
    """Ethernet [VLAN] then either PFC, or IPv4/IPv6 + UDP [+ BTH]."""
    rest = kinds[1:] if kinds[:1] == ["ethernet"] else None
    if rest is None:
        raise ValueError(f"the header stack must start with ethernet, got {kinds}")
    if rest == ["pfc_pause"]:
        return
    if rest[:1] == ["vlan"]:
        rest = rest[1:]
    if rest[:1] in (["ipv4"], ["ipv6"]) and rest[1:] in (["udp"], ["udp", "rocev2_bth"]):
        return
    raise ValueError(
        "unsupported header stack "
        f"{kinds}: expected ethernet [vlan] ipv4|ipv6 udp [rocev2_bth], or ethernet pfc_pause"
    )


class TrafficConfig(_Model):
    """OTG's ``Config``: the ports and the flows over them."""

    ports: list[Port]
    flows: list[Flow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> TrafficConfig:
        names = [p.name for p in self.ports]
        if len(set(names)) != len(names):
            raise ValueError(f"port names must be unique: {names}")
        flows = [f.name for f in self.flows]
        if len(set(flows)) != len(flows):
            raise ValueError(f"flow names must be unique: {flows}")
        if len(flows) > 0xFFFF:
            raise ValueError("at most 65535 flows (the signature's flow id is 16 bits)")
        for flow in self.flows:
            for port in [flow.tx_port, *flow.rx_ports]:
                if port not in names:
                    raise ValueError(f"flow {flow.name!r} uses unknown port {port!r}")
        return self

    def port(self, name: str) -> Port:
        return next(p for p in self.ports if p.name == name)


# --- rate and loss arithmetic -----------------------------------------------------------


def frames_per_second(
    size_bytes: int,
    *,
    rate_pps: float | None = None,
    rate_bps: float | None = None,
    rate_line_pct: float | None = None,
    line_speed_gbps: float | None = None,
) -> float:
    """Frames/s for one of pps, layer-1 bps or % of line (which needs ``line_speed_gbps``)."""
    wire_bits = (size_bytes + ETHERNET_L1_OVERHEAD_BYTES) * 8
    if rate_pps is not None:
        return rate_pps
    if rate_bps is not None:
        return rate_bps / wire_bits
    if rate_line_pct is not None:
        if not line_speed_gbps:
            raise ValueError("a rate in % of line needs the port's speed (Port.speed_gbps)")
        return rate_line_pct / 100 * line_speed_gbps * 1e9 / wire_bits
    raise ValueError("no rate given")


def line_rate_pps(size_bytes: int, line_speed_gbps: float) -> float:
    """100 % of line: 148,809,524 frames/s of 64 B at 100G."""
    return frames_per_second(size_bytes, rate_line_pct=100, line_speed_gbps=line_speed_gbps)


def loss_pct(frames_tx: int, frames_rx: int) -> float:
    """Lost share of the sent frames in percent; 0 when nothing was sent (check tx first)."""
    return max(0, frames_tx - frames_rx) * 100.0 / frames_tx if frames_tx else 0.0


def loss_duration_ms(frames_lost: int, rate_pps: float) -> float:
    """The outage a loss corresponds to: lost frames / (frames per ms)."""
    return max(0, frames_lost) / rate_pps * 1000.0 if rate_pps > 0 else 0.0


def longest_outage_ms(gaps_frames: Sequence[int], rate_pps: float) -> float:
    """The longest run of consecutive missing sequence numbers, as time at ``rate_pps``."""
    return loss_duration_ms(max(gaps_frames, default=0), rate_pps)


def pause_refresh_pps(quanta: int, speed_gbps: float, refreshes_per_pause: float = 2.0) -> float:
    """The pause-frame rate that keeps a priority paused: several frames per pause time.

    65535 quanta last 335 us at 100G, so a storm refreshing twice per pause
    runs at about 6,000 frames/s.
    """
    pause_s = quanta * PAUSE_QUANTUM_BITS / (speed_gbps * 1e9)
    if pause_s <= 0:
        raise ValueError("quanta must be > 0 for a storm")
    return refreshes_per_pause / pause_s


def pfc_storm_flow(
    name: str,
    port: str,
    *,
    priority: int,
    quanta: int = MAX_PAUSE_QUANTA,
    rate_pps: float,
    duration_s: float | None = None,
    src_mac: str | None = None,
) -> Flow:
    """A PFC storm as a flow: pause frames on one priority (for PFC watchdog tests).

    The same flow runs on any backend; the Scapy driver also offers
    ``pfc_storm()`` to run one next to a running configuration.
    """
    return Flow(
        name=name,
        tx_port=port,
        packet=[Ethernet(src_mac=src_mac), PfcPause(pause_quanta={priority: quanta})],
        size_bytes=MIN_FRAME_BYTES,
        rate_pps=rate_pps,
        duration_s=duration_s,
    )


# --- metrics ------------------------------------------------------------------------------

RxCountMethod = Literal["signature", "interface-counters", "signature-incomplete", "generator"]


@dataclass(frozen=True)
class FlowMetrics:
    """OTG's ``Flow.Metric`` with units in the names; ``None`` = not measured.

    Loss is given three ways: ``loss_duration_ms`` is all lost frames / rate
    (OTG's ``packet_loss_duration``: the total outage time, however many
    outages there were); ``longest_gap_frames`` is the longest run of missing
    sequence numbers; ``longest_outage_ms`` is that run as time (its frames x
    the frame interval, measured on the send clock where the backend can: see
    docs/traffic.md). ``outages`` counts the runs.

    ``rx_count_method`` says where ``frames_rx`` came from: ``signature``
    (every frame seen and checked by the receiver), ``interface-counters``
    (the receiver dropped frames, so the kernel's count of the rx interface
    was used; latency, order and ECN then describe a sample),
    ``signature-incomplete`` (the receiver dropped frames on a port shared by
    several flows: counts are a lower bound), ``generator`` (a hardware
    generator's own counters).

    ``missing_frames`` is the loss so far while the flow runs, exactly: the
    sequence numbers missing below the highest one received (late frames fill
    their gap). Frames sent and not yet received are in flight, not lost, so
    ``frames_tx - frames_rx`` overstates a running flow's loss by a few frames
    that come and go between reads. ``None`` where the backend does not number
    frames, or several rx ports share the flow.

    ``tx_max_lag_us`` is how far behind its schedule a software sender fell;
    a late sender catches up in a burst, which shifts frames across the edge
    of an outage, so ``loss_duration_ms`` is trustworthy to about that much.
    """

    name: str
    transmit: Literal["started", "stopped", "paused"]
    frames_tx: int
    bytes_tx: int
    frames_tx_rate_pps: float
    frames_rx: int | None = None
    bytes_rx: int | None = None
    loss_frames: int | None = None
    missing_frames: int | None = None
    loss_pct: float | None = None
    loss_duration_ms: float | None = None
    longest_gap_frames: int | None = None
    longest_outage_ms: float | None = None
    outages: int | None = None
    latency_min_us: float | None = None
    latency_avg_us: float | None = None
    latency_max_us: float | None = None
    first_rx_timestamp_ns: int | None = None
    last_rx_timestamp_ns: int | None = None
    ecn_ce_count: int | None = None
    out_of_order: int | None = None
    duplicates: int | None = None
    rx_count_method: RxCountMethod | None = None
    rx_socket_drops: int = 0
    tx_max_lag_us: float | None = None  # software senders: worst delay behind the schedule

    @property
    def anomalies(self) -> list[str]:
        """Results that make a verdict meaningless (featureprofiles' two failure categories)."""
        found = []
        if self.frames_tx == 0:
            found.append(f"flow {self.name}: no frames transmitted")
        if self.frames_rx is not None and self.frames_rx > self.frames_tx:
            found.append(f"flow {self.name}: {self.frames_rx} received > {self.frames_tx} sent")
        return found


# --- the capability --------------------------------------------------------------------------


@runtime_checkable
class TrafficGenerator(Protocol):
    """OTG's control surface: configure, start, stop, wait, read metrics."""

    def set_config(self, config: TrafficConfig) -> None: ...

    def start_traffic(self, flows: Sequence[str] | None = None) -> None: ...

    def stop_traffic(self) -> None: ...

    def wait_done(self, timeout_s: float) -> bool:
        """True once every flow has stopped and in-flight frames are counted."""
        ...

    def metrics(self, flows: Sequence[str] | None = None) -> list[FlowMetrics]: ...


@runtime_checkable
class PfcStormGenerator(Protocol):
    """Pause frames on one priority, beside whatever traffic is configured."""

    def pfc_storm(
        self,
        port: str,
        *,
        priority: int,
        quanta: int = MAX_PAUSE_QUANTA,
        rate_pps: float,
        duration_s: float | None = None,
    ) -> PfcStorm: ...


class PfcStorm(ABC):
    """A running storm (a handle, not a capability); ``stop()`` returns the frames sent."""

    @abstractmethod
    def stop(self) -> int: ...

    @property
    @abstractmethod
    def frames_sent(self) -> int: ...
