"""The Switch capability: what a suite may ask of a switch, whatever its vendor.

Each Protocol is one capability; a driver implements the subset its device
offers, and a suite checks ``isinstance(device, PfcQueues)`` (the Protocols are
runtime-checkable) and is skipped, with the reason, when the testbed lacks it.

Records carry units in their field names and use ``None`` for "the device did
not report it" — never 0, which is a measurement. Per-port results are plain
``dict[str, Record]`` keyed by the device's own port name, so
``labtest.parsing.to_jsonable`` turns them into the JSON that ``labtest parse``
prints (``{PORT: {"rx": [...], "tx": [...]}}`` and so on).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from labtest.capabilities.transceiver import Transceiver
from labtest.errors import CommandNotSupported

# --- records -----------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    vendor: str | None
    model: str | None
    os_version: str | None
    serial: str | None
    hostname: str | None = None
    uptime_s: float | None = None
    platform: str | None = None  # e.g. SONiC "x86_64-mlnx_msn2700-r0"
    hwsku: str | None = None
    asic: str | None = None
    hardware_rev: str | None = None
    mac: str | None = None


@dataclass(frozen=True)
class PlatformSummary:
    """SONiC ``show platform summary``: the hardware half of the facts."""

    platform: str | None
    hwsku: str | None
    asic: str | None
    asic_count: int | None = None
    serial: str | None = None
    model: str | None = None
    hardware_rev: str | None = None


@dataclass(frozen=True)
class InterfaceStatus:
    name: str
    admin_up: bool | None
    oper_up: bool | None
    speed_gbps: float | None = None
    mtu_bytes: int | None = None
    fec: str | None = None  # "rs", "fc", "none", ... as the device names it
    type: str | None = None  # media/transceiver type as printed
    alias: str | None = None
    lanes: list[int] = field(default_factory=list)
    vlan: str | None = None
    description: str | None = None
    state: str | None = None  # the raw status word ("connected", "xcvrAbsen", ...)


@dataclass(frozen=True)
class InterfaceCounters:
    """Interface counters since the last clear; ``None`` where the command has no column."""

    rx_packets: int | None = None
    rx_errors: int | None = None
    rx_discards: int | None = None
    tx_packets: int | None = None
    tx_errors: int | None = None
    tx_discards: int | None = None
    rx_octets: int | None = None
    tx_octets: int | None = None
    rx_overruns: int | None = None
    tx_overruns: int | None = None
    rx_unicast_packets: int | None = None
    rx_multicast_packets: int | None = None
    rx_broadcast_packets: int | None = None
    tx_unicast_packets: int | None = None
    tx_multicast_packets: int | None = None
    tx_broadcast_packets: int | None = None
    rx_fcs_errors: int | None = None
    rx_alignment_errors: int | None = None
    rx_symbol_errors: int | None = None
    rx_runts: int | None = None
    rx_giants: int | None = None
    rx_pause_frames: int | None = None
    tx_pause_frames: int | None = None
    #: oper up<->down transitions since the last clear, both directions (EOS "link status
    #: changes"): the one reading that sees a flap shorter than any state-polling gap. Filled
    #: only where the counters' own command carries it (EOS, FRR); a watcher reads
    #: :func:`link_flap_counts`, which also asks :class:`LinkFlapCounts` (SONiC)
    link_status_changes: int | None = None


def drops_in(status_changes: int) -> int:
    """Link drops behind a number of oper-status changes: each drop comes back up, so two
    changes are one drop, and an odd one is a drop not yet back."""
    return -(-status_changes // 2) if status_changes > 0 else 0


@dataclass(frozen=True)
class PfcCounters:
    """PFC frames per priority 0..7. Platforms that only give a port total
    (NX-OS ``show interface priority-flow-control``) leave the lists ``None``
    and fill the totals."""

    rx: list[int | None]
    tx: list[int | None]
    rx_total: int | None = None
    tx_total: int | None = None
    mode: str | None = None  # NX-OS admin mode ("Auto", "On")
    oper: str | None = None  # NX-OS operational state ("On", "Off")
    enabled_priorities: list[int] | None = None


@dataclass(frozen=True)
class QueueCounter:
    queue: str  # as printed: "UC3", "MC10", "ALL20"
    kind: str  # "unicast" | "multicast" | "all"
    index: int
    tx_packets: int | None = None
    tx_bytes: int | None = None
    drop_packets: int | None = None
    drop_bytes: int | None = None
    ecn_marked_packets: int | None = None
    ecn_marked_bytes: int | None = None
    wred_drop_packets: int | None = None
    wred_drop_bytes: int | None = None


@dataclass(frozen=True)
class QueueCounters:
    queues: list[QueueCounter]

    def get(self, queue: str) -> QueueCounter:
        for q in self.queues:
            if q.queue == queue:
                return q
        raise KeyError(queue)


@dataclass(frozen=True)
class FecStats:
    corrected_cw: int | None
    uncorrectable_cw: int | None
    symbol_errors: int | None = None
    pre_fec_ber: float | None = None
    post_fec_ber: float | None = None
    pre_fec_ber_max: float | None = None
    flr_observed: float | None = None  # FEC frame loss ratio, observed
    flr_predicted: float | None = None
    bins: list[int | None] = field(default_factory=list)
    state: str | None = None


@dataclass(frozen=True)
class FecHistogram:
    """Codewords seen with N symbol errors, ``bins[N]``; high bins mean a sick link."""

    bins: list[int | None]

    @property
    def max_nonzero_bin(self) -> int | None:
        hits = [i for i, v in enumerate(self.bins) if v]
        return hits[-1] if hits else None


@dataclass(frozen=True)
class LldpNeighbor:
    remote_system: str | None
    remote_port: str | None
    remote_port_description: str | None = None
    remote_chassis_id: str | None = None
    capabilities: str | None = None
    ttl_s: int | None = None
    remote_mgmt_address: str | None = None
    #: other neighbours the port's table still held in the same read ("system:port"), older
    #: than this one: the neighbour changed during the check (a re-cabled port, until the
    #: old entry's hold time runs out)
    older_neighbours: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrbsResult:
    lane: int
    pattern: str
    locked: bool
    bits: int | None
    errors: int | None
    ber: float | None


@dataclass(frozen=True)
class PfcWatchdogConfig:
    action: str | None  # "drop", "forward", "alert"
    detection_time_ms: int | None
    restoration_time_ms: int | None
    history: bool | None = None
    poll_interval_ms: int | None = None


@dataclass(frozen=True)
class PfcWatchdogState:
    """Watchdog state of one lossless queue (key ``"PORT:QUEUE"``)."""

    port: str
    queue: int
    status: str | None  # "operational", "stormed", None when N/A (watchdog stopped)
    storms_detected: int | None
    storms_restored: int | None
    tx_ok: int | None = None
    tx_drop: int | None = None
    rx_ok: int | None = None
    rx_drop: int | None = None
    tx_last_ok: int | None = None
    tx_last_drop: int | None = None
    rx_last_ok: int | None = None
    rx_last_drop: int | None = None


@dataclass(frozen=True)
class PmParameter:
    """One row of a coherent-optics PM table (``show interfaces transceiver pm``)."""

    unit: str | None
    min: float | None
    avg: float | None
    max: float | None
    high_alarm: float | None = None
    high_warn: float | None = None
    high_alert: bool | None = None
    low_alarm: float | None = None
    low_warn: float | None = None
    low_alert: bool | None = None


@dataclass(frozen=True)
class TransceiverPm:
    """Keyed by snake-cased parameter: ``tx_power``, ``rx_total_power``, ``pre_fec_ber``..."""

    params: dict[str, PmParameter]


# --- capabilities ------------------------------------------------------------


@runtime_checkable
class SwitchFacts(Protocol):
    def facts(self) -> Facts: ...


@runtime_checkable
class Interfaces(Protocol):
    def interfaces(self) -> dict[str, InterfaceStatus]: ...

    def counters(self) -> dict[str, InterfaceCounters]: ...


@runtime_checkable
class LinkFlapCounts(Protocol):
    """Each port's oper-status changes since the last clear (``show interfaces flap`` on
    SONiC): kept apart from ``counters()``, whose every caller would otherwise pay for a
    command only the link watchers need. Raises ``CommandNotSupported`` where the device
    keeps no such count (a SONiC release before the command)."""

    def link_status_changes(self) -> dict[str, int]: ...


def status_changes_in(counted: Mapping[str, InterfaceCounters]) -> dict[str, int]:
    """The oper-status change counts counters carry, per port (ports without one left out)."""
    return {p: c.link_status_changes for p, c in counted.items()
            if c.link_status_changes is not None}


def link_flap_counts(
    device: object, counted: Mapping[str, InterfaceCounters] | None = None
) -> dict[str, int] | None:
    """A switch's oper-status changes per port, or ``None`` when it keeps no count.

    Counters already read (``counted``) that carry the count (EOS, FRR: the same command)
    are used as they are, so a caller holding both pays one command; otherwise the device's
    :class:`LinkFlapCounts` is asked. A device without it, or one whose release lacks the
    command, has no count: the watchers then rely on link-state samples alone."""
    known = status_changes_in(counted or {})
    if known:
        return known
    if not isinstance(device, LinkFlapCounts):
        return None
    try:
        counts = device.link_status_changes()
    except CommandNotSupported:
        return None
    return counts or None


@runtime_checkable
class PfcQueues(Protocol):
    def pfc_counters(self) -> dict[str, PfcCounters]: ...

    def queue_counters(self) -> dict[str, QueueCounters]: ...

    def pfc_watchdog(self) -> dict[str, PfcWatchdogState]: ...

    def pfc_watchdog_config(self) -> dict[str, PfcWatchdogConfig]: ...


@runtime_checkable
class FecCounters(Protocol):
    """Corrected and uncorrectable codewords, pre-FEC BER per port (what EOS publishes)."""

    def fec_stats(self) -> dict[str, FecStats]: ...


@runtime_checkable
class FecCodewordHistogram(Protocol):
    """Codewords per count of symbol errors, one port (SONiC ``fec-histogram``)."""

    def fec_histogram(self, port: str) -> FecHistogram: ...


@runtime_checkable
class Fec(FecCounters, FecCodewordHistogram, Protocol):
    """Both FEC reads: what the burn-in and the tail-bin check need."""


@runtime_checkable
class Transceivers(Protocol):
    def transceivers(self) -> dict[str, Transceiver]: ...


@runtime_checkable
class Lldp(Protocol):
    def lldp_neighbors(self) -> dict[str, LldpNeighbor]: ...


@runtime_checkable
class PortAdmin(Protocol):
    def set_admin(self, port: str, up: bool) -> None: ...


@runtime_checkable
class Prbs(Protocol):
    def prbs_start(self, port: str, pattern: str, lanes: list[int] | None = None) -> None: ...

    def prbs_stop(self, port: str) -> None: ...

    def prbs_read(self, port: str) -> list[PrbsResult]: ...


@runtime_checkable
class ConfigSnapshot(Protocol):
    """``snapshot()`` returns an opaque token; ``restore(token)`` puts that config back."""

    def snapshot(self) -> str: ...

    def restore(self, token: str) -> None: ...

    def running_config(self) -> str: ...


@runtime_checkable
class Reboot(Protocol):
    def reboot(self, timeout_s: float) -> None:
        """Reboot and return once the device answers again (raise on timeout)."""
        ...


SWITCH_CAPABILITIES: tuple[type, ...] = (
    SwitchFacts,
    Interfaces,
    LinkFlapCounts,
    PfcQueues,
    FecCounters,
    FecCodewordHistogram,
    Fec,
    Transceivers,
    Lldp,
    PortAdmin,
    Prbs,
    ConfigSnapshot,
    Reboot,
)


def missing(device: object, *needed: type) -> list[str]:
    """Names of the capabilities ``device`` lacks, for a suite's skip reason."""
    return [cap.__name__ for cap in needed if not isinstance(device, cap)]
