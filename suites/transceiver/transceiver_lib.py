"""Reading and judging optics for the transceiver suite: pure helpers, no pytest.

A *module* is the optic at a cabled ``device:port``: read from a switch through
the ``Transceivers`` capability (one call per switch gives every port) or from
a host through ``ModuleDom`` (``ethtool -m``), into the same ``Transceiver``
record, so both are judged by the same code.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from labtest import labtime
from labtest.capabilities.host import ModuleDom
from labtest.capabilities.switch import Transceivers
from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.errors import InfraError
from labtest.lab import Lab
from labtest.measure import Limit
from labtest.sweep import each_device
from labtest.testbed.model import Testbed

HERE = Path(__file__).resolve().parent
LANE_QUANTITIES = ("tx_power_dbm", "rx_power_dbm", "tx_bias_ma")
MODULE_QUANTITIES = ("temperature_c", "voltage_v")
UNITS = {
    "tx_power_dbm": "dBm",
    "rx_power_dbm": "dBm",
    "tx_bias_ma": "mA",
    "temperature_c": "degC",
    "voltage_v": "V",
}
#: flag names that are conditions (reported), not threshold crossings (judged)
CONDITION_FLAGS = re.compile(r"^(rx_los|tx_los|rx_lol|tx_lol)(_lane\d+)?$")


# --- approved optics -----------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovedOptic:
    part_number: str
    vendor: str
    media_type: str
    firmware: tuple[str, ...]


def load_approved(path: Path = HERE / "approved-optics.yaml") -> dict[str, ApprovedOptic]:
    data = yaml.safe_load(path.read_text()) or {}
    out = {}
    for raw in data.get("approved") or []:
        optic = ApprovedOptic(
            part_number=str(raw["part_number"]),
            vendor=str(raw["vendor"]),
            media_type=str(raw["media_type"]),
            firmware=tuple(str(v) for v in raw.get("firmware") or ()),
        )
        out[optic.part_number] = optic
    return out


def firmware_matches(version: str, qualified: Iterable[str], components: int | None) -> bool:
    """``version`` is one of ``qualified``, compared on its first ``components`` parts."""
    cut = (lambda v: ".".join(v.split(".")[:components])) if components else (lambda v: v)
    return cut(version) in {cut(q) for q in qualified}


def media_type_of(module: Transceiver, approved: dict[str, ApprovedOptic]) -> str | None:
    """The PMD the module implements: as reported, else from its approved part number."""
    if module.media_type:
        return module.media_type
    optic = approved.get(module.part_number or "")
    return optic.media_type if optic else None


# --- which modules, and reading them -------------------------------------------------------


def cabled_modules(testbed: Testbed, lab: Lab) -> list[str]:
    """``device:port`` of every cabled port whose device can report its optic."""
    readable = set(lab.names(capability=Transceivers)) | set(lab.names(capability=ModuleDom))
    ends = [str(e) for lk in testbed.links for e in lk.ends if e.device in readable]
    return list(dict.fromkeys(ends))


def merge_lane_interfaces(found: dict[str, Transceiver], port: str) -> Transceiver | None:
    """One module from per-lane interfaces ``EthernetX/1..n`` (the lane is the suffix)."""
    base, sep, _ = port.rpartition("/")
    first = found.get(port)
    if not sep or first is None:
        return first
    lanes: list[LaneDom] = []
    for name, module in found.items():
        prefix, _, index = name.rpartition("/")
        if prefix == base and index.isdigit() and module.serial == first.serial:
            lanes += [replace(lane, lane=int(index)) for lane in module.lanes[:1]]
    return replace(first, lanes=sorted(lanes, key=lambda lane: lane.lane))


@dataclass
class Reading:
    """Modules of a set of ports at one moment, and the devices that could not be read."""

    time_s: float
    modules: dict[str, Transceiver] = field(default_factory=dict)  # "device:port"
    errors: dict[str, InfraError] = field(default_factory=dict)  # device -> error

    def raise_for_devices(self, *devices: str) -> None:
        """Re-raise the error of the first of ``devices`` that could not be read."""
        for device in devices:
            if device in self.errors:
                raise self.errors[device].with_traceback(None)

    def get(self, end: str) -> Transceiver:
        device = end.split(":", 1)[0]
        if device in self.errors:
            raise self.errors[device].with_traceback(None)  # fresh: no frames pile up
        if end not in self.modules:
            raise LookupError(f"{end}: the device reported no transceiver on this port")
        return self.modules[end]


def read_device(lab: Lab, device: str, ports: list[str], merge_lanes: bool) -> dict[str, Any]:
    """``{port: Transceiver}`` for ``ports`` of one device (one call on a switch)."""
    driver = lab.device(device)
    if isinstance(driver, Transceivers):
        found = driver.transceivers()
        out: dict[str, Any] = {}
        for port in ports:
            module = merge_lane_interfaces(found, port) if merge_lanes else found.get(port)
            if module is not None:
                out[port] = module
        return out
    return {port: driver.module_dom(port) for port in ports}


def read_modules(
    lab: Lab,
    ends: list[str],
    merge_lanes: Callable[[str], bool],
    broken: dict[str, InfraError] | None = None,
) -> Reading:
    """Read every module of ``ends`` at once (labtest.sweep); devices already
    ``broken`` keep their error instead of being asked again (no second timeout)."""
    by_device: dict[str, list[str]] = {}
    for end in ends:
        device, _, port = end.partition(":")
        by_device.setdefault(device, []).append(port)
    reading = Reading(time_s=labtime.monotonic(), errors=dict(broken or {}))
    answers = each_device(
        lab, by_device, lambda d: read_device(lab, d, by_device[d], merge_lanes(d)), reading.errors
    )
    for device, modules in answers.items():
        for port, module in modules.items():
            reading.modules[f"{device}:{port}"] = module
    return reading


def is_dark(module: Transceiver) -> bool:
    """Some lane receives less than the module's Rx low alarm (no light, or nearly)."""
    th = module.thresholds.get("rx_power_dbm")
    floor = th.low_alarm if th is not None and th.low_alarm is not None else -30.0
    return any(lane.rx_power_dbm is not None and lane.rx_power_dbm < floor for lane in module.lanes)


def read_lit(
    lab: Lab, end: str, merge_lanes: bool, first: Transceiver, timeout_s: float, poll_s: float
) -> Transceiver:
    """Re-read a module that read dark until it has light again (bounded); the last read."""
    device, _, port = end.partition(":")
    module, deadline = first, labtime.monotonic() + timeout_s
    while is_dark(module) and labtime.monotonic() < deadline:
        labtime.sleep(poll_s)
        module = read_device(lab, device, [port], merge_lanes).get(port, module)
    return module


# --- values and flags ----------------------------------------------------------------------


@dataclass(frozen=True)
class DomValue:
    quantity: str
    lane: int | None  # None for a module-level value
    value: float
    threshold: Threshold | None


def dom_values(module: Transceiver) -> list[DomValue]:
    out = []
    for q in MODULE_QUANTITIES:
        value = getattr(module, q)
        if value is not None:
            out.append(DomValue(q, None, float(value), module.thresholds.get(q)))
    for lane in module.lanes:
        for q in LANE_QUANTITIES:
            value = getattr(lane, q)
            if value is not None:
                out.append(DomValue(q, lane.lane, float(value), module.thresholds.get(q)))
    return out


def warning_margin(value: float, th: Threshold) -> float | None:
    """Distance to the nearer warning threshold (negative: outside the warning band)."""
    sides = [
        x
        for x in (
            value - th.low_warn if th.low_warn is not None else None,
            th.high_warn - value if th.high_warn is not None else None,
        )
        if x is not None
    ]
    return min(sides) if sides else None


def raised_flags(module: Transceiver) -> tuple[list[str], list[str]]:
    """(threshold/fault flags that are set, condition flags such as LOS that are set)."""
    judged: list[str] = []
    conditions: list[str] = []
    for name, on in sorted(module.flags.items()):
        if on:
            (conditions if CONDITION_FLAGS.match(name) else judged).append(name)
    return judged, conditions


# --- fleet consistency -----------------------------------------------------------------------


def odd_ones(values: dict[str, str]) -> dict[str, str]:
    """Members whose value differs from the single most common one (all, if it is a tie)."""
    counts = Counter(values.values()).most_common()
    if len(counts) <= 1:
        return {}
    if counts[0][1] == counts[1][1]:
        return dict(values)  # no majority: nobody can be called the odd one out
    common = counts[0][0]
    return {k: v for k, v in values.items() if v != common}


# --- optical link budget -----------------------------------------------------------------------


@dataclass(frozen=True)
class LaneLoss:
    """One lane of one direction: the far end's launch power against what arrives here."""

    lane: int
    tx_dbm: float  # far end's Tx average power (its DOM)
    rx_dbm: float  # this end's Rx average power (its DOM)

    @property
    def loss_db(self) -> float:
        return self.tx_dbm - self.rx_dbm


def lane_losses(far: Transceiver, near: Transceiver) -> tuple[list[LaneLoss], list[int]]:
    """Per lane, far Tx against near Rx (lane N feeds lane N: a parallel fibre or a CWDM
    wavelength); and the lanes one of the two modules does not report."""
    tx = {lane.lane: lane.tx_power_dbm for lane in far.lanes if lane.tx_power_dbm is not None}
    rx = {lane.lane: lane.rx_power_dbm for lane in near.lanes if lane.rx_power_dbm is not None}
    found = [LaneLoss(n, tx[n], rx[n]) for n in sorted(set(tx) & set(rx))]
    return found, sorted(set(tx) ^ set(rx))


def link_loss_limit(
    limits: dict[str, Any], media: str | None, length_m: float | None, connectors: int
) -> Limit:
    """The loss a healthy channel of this length may show on DOM, with every term's source.

    Plant budget: fibre attenuation x length + ``connectors`` mated pairs at the connector
    allowance, never more than the PMD's maximum channel insertion loss; a link of unknown
    length gets the PMD's whole channel budget (the IEEE figure assumes its maximum reach).
    Two DOM monitors take part (the far Tx, the near Rx), so their calibration allowance is
    added on top.
    """
    def pick(key: str) -> tuple[str, Limit]:
        for k in ([f"{key}@{media}"] if media else []) + [key]:
            if k in limits:
                return k, limits[k]
        raise KeyError(f"limits profile has no {key!r} (the link loss budget needs it)")

    ch_key, channel = pick("transceiver.channel_insertion_loss_db")
    _, fibre = pick("transceiver.fibre_attenuation_db_per_km")
    _, conn = pick("transceiver.connector_loss_db")
    _, monitor = pick("transceiver.link_loss_monitor_allowance_db")
    channel_db = float(channel.high or 0.0)
    if length_m is None:
        plant_db, how = channel_db, f"length unknown: the whole channel budget {channel_db:g} dB"
    else:
        built = length_m / 1000.0 * float(fibre.high or 0.0) + connectors * float(conn.high or 0.0)
        plant_db = min(built, channel_db)
        how = (f"{length_m:g} m x {fibre.high:g} dB/km + {connectors} x {conn.high:g} dB "
               f"(capped at {ch_key} {channel_db:g} dB) = {plant_db:.3g} dB")
    allowance = float(monitor.high or 0.0)
    return Limit(
        high=round(plant_db + allowance, 4),
        unit="dB",
        source=(f"{how}, + {allowance:g} dB DOM monitor allowance; sources: {channel.source}; "
                f"{fibre.source}; {conn.source}; {monitor.source}"),
        description="far-end Tx power minus near-end Rx power per lane (DOM)",
    )


# --- device firmware against a declared expectation ------------------------------------------


@dataclass(frozen=True)
class ApprovedFirmware:
    group: str  # "switch/<vendor>" or "nic/<driver>"
    platform: str | None  # a model to narrow to; None: every platform of the group
    versions: tuple[str, ...]
    source: str


def load_approved_firmware(path: Path = HERE / "approved-firmware.yaml") -> list[ApprovedFirmware]:
    data = yaml.safe_load(path.read_text()) or {}
    return [
        ApprovedFirmware(
            group=str(raw["group"]),
            platform=str(raw["platform"]) if raw.get("platform") else None,
            versions=tuple(str(v) for v in raw["versions"]),
            source=str(raw["source"]),
        )
        for raw in data.get("approved") or []
    ]


@dataclass(frozen=True)
class FirmwareVerdict:
    """``ok`` True/False when judged, None when nothing can decide (not proven)."""

    ok: bool | None
    expected: str
    basis: str  # the expectation's source, or why nothing could decide


def judge_firmware(
    device: str,
    group: str,
    platform: str | None,
    peers: dict[str, str],
    approved: list[ApprovedFirmware],
    declared: tuple[tuple[str, ...], str] | None = None,
) -> FirmwareVerdict:
    """Device firmware against, in order: the testbed's declaration for the device
    (``declared``: versions, source), the approved list for its group and platform, else
    the group's strict majority of at least three. Two devices that disagree (or a tie)
    prove nothing about either: not proven, never a failure of the healthy one."""
    version = peers[device]
    if declared is not None:
        versions, source = declared
        return FirmwareVerdict(version in versions, "/".join(versions), source)
    rows = [a for a in approved if a.group == group and a.platform in (None, platform)]
    rows.sort(key=lambda a: a.platform is None)  # a platform's own row first
    if rows:
        row = rows[0]
        return FirmwareVerdict(version in row.versions, "/".join(row.versions), row.source)
    counts = Counter(peers.values()).most_common()
    if len(counts) == 1 and len(peers) >= 2:
        return FirmwareVerdict(True, version, f"all {len(peers)} members of {group} run {version}")
    if len(peers) >= 3 and counts[0][1] > counts[1][1]:
        common = counts[0][0]
        return FirmwareVerdict(
            version == common, common,
            f"no approved firmware declared for {group}; the group's majority "
            f"({counts[0][1]} of {len(peers)}) runs {common}",
        )
    return FirmwareVerdict(
        None, "undecided",
        f"no approved firmware declared for {group} (approved-firmware.yaml or the testbed's "
        f"vars.approved_firmware) and its {len(peers)} member(s) have no majority to compare "
        f"with ({', '.join(f'{n}={v}' for n, v in sorted(peers.items()))})",
    )
