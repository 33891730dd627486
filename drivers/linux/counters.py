"""NIC counter names per NIC family ("flavour"), as data.

``ethtool -S`` and RDMA hardware counter names are chosen by each NIC driver,
so the names a congestion suite needs (per-priority pause, buffer discards,
CNPs) live in one table per family instead of branches in the driver. A lab
with another NIC picks the closest flavour and overrides names in the
device's ``vars: {counter_names: {...}}``.

mlx5 (ConnectX-4 and later) names are from the mlx5 driver's ethtool
counters (Linux ``Documentation/networking/device_drivers/ethernet/mellanox/
mlx5/counters.rst``; en_stats.c ``rx_prio%d_pause``, ``rx_prio%d_discards``,
``tx_pause_storm_error_events``) and its RDMA hw_counters (``np_cnp_sent``,
``rp_cnp_handled``, ``np_ecn_marked_roce_packets``, ``out_of_sequence``, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labtest.capabilities.host import RdmaHwCounters
from labtest.capabilities.nic_fec import NicPhyErrors
from labtest.errors import CapabilityAbsent, ConfigError, ParseError

PRIORITIES = range(8)


@dataclass(frozen=True)
class NicFlavour:
    """One NIC family's counter names; ``{prio}`` stands for the priority 0-7."""

    name: str
    rx_pause_prio: str | None = None
    tx_pause_prio: str | None = None
    rx_discards_prio: str | None = None
    rx_discards: str | None = None  # port drops for lack of receive buffer
    rx_pause_frames: str | None = None  # every pause control frame, link-level or PFC
    tx_pause_frames: str | None = None
    tx_pause_storm_errors: str | None = None  # the NIC's own PFC storm guard tripped
    rx_bits_phy: str | None = None  # bits received at the PHY
    rx_corrected_bits_phy: str | None = None  # bits RS-FEC corrected
    rx_lane_corrected_bits: str | None = None  # per lane; ``{lane}`` is 0, 1, ...
    rx_uncorrected_symbols: str | None = None  # errors FEC did not correct
    rdma_aliases: Mapping[str, str] = field(default_factory=dict)  # RdmaHwCounters field -> name


FLAVOURS: dict[str, NicFlavour] = {
    "mlx5": NicFlavour(
        name="mlx5",
        rx_pause_prio="rx_prio{prio}_pause",
        tx_pause_prio="tx_prio{prio}_pause",
        rx_discards_prio="rx_prio{prio}_discards",
        rx_discards="rx_discards_phy",
        rx_pause_frames="rx_pause_ctrl_phy",
        tx_pause_frames="tx_pause_ctrl_phy",
        tx_pause_storm_errors="tx_pause_storm_error_events",
        # PPCNT physical-layer statistical group (en_stats.c pport_phy_statistical_*)
        rx_bits_phy="rx_bits_phy",
        rx_corrected_bits_phy="rx_corrected_bits_phy",
        rx_lane_corrected_bits="rx_err_lane_{lane}_phy",
        rx_uncorrected_symbols="rx_pcs_symbol_err_phy",
    ),
}

_NAME_FIELDS = tuple(f.name for f in dataclasses.fields(NicFlavour) if f.name[:3] in ("rx_", "tx_"))
_HW_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(RdmaHwCounters)
    if f.name not in ("device", "port", "counters")
)


def flavour(name: str, overrides: Mapping[str, Any], *, device: str) -> NicFlavour:
    """The named flavour with the device's overrides: ethtool names by field, RDMA
    counter names by the RdmaHwCounters field they stand for."""
    if name not in FLAVOURS:
        known = ", ".join(sorted(FLAVOURS))
        raise ConfigError(device, [f"vars.flavour: unknown NIC flavour {name!r}; known: {known}"])
    base = FLAVOURS[name]
    names = {k: v for k, v in overrides.items() if k in _NAME_FIELDS}
    aliases = {k: v for k, v in overrides.items() if k in _HW_FIELDS}
    problems = [
        f"vars.counter_names.{k}: unknown key; valid: {', '.join((*_NAME_FIELDS, *_HW_FIELDS))}"
        for k in sorted(set(overrides) - set(names) - set(aliases))
    ]
    problems += [
        f"vars.counter_names.{k}: {v!r} needs a {{prio}} placeholder"
        for k, v in names.items()
        if k.endswith("_prio") and "{prio}" not in str(v)
    ]
    problems += [
        f"vars.counter_names.{k}: {v!r} needs a {{lane}} placeholder"
        for k, v in names.items()
        if k == "rx_lane_corrected_bits" and "{lane}" not in str(v)
    ]
    if problems:
        raise ConfigError(device, problems)
    return dataclasses.replace(base, **names, rdma_aliases={**base.rdma_aliases, **aliases})


@dataclass(frozen=True)
class PfcCounters:
    """Pause and discard counters of one NIC port, by priority where the NIC has them.

    A priority missing from a ``*_by_prio`` dict (or a None) is a counter this
    NIC does not expose, never a zero.
    """

    ifname: str
    flavour: str
    rx_pause_by_prio: dict[int, int]
    tx_pause_by_prio: dict[int, int]
    rx_discards_by_prio: dict[int, int]
    rx_discards: int | None
    rx_pause_frames: int | None
    tx_pause_frames: int | None
    tx_pause_storm_errors: int | None


def _by_prio(stats: Mapping[str, int], pattern: str | None) -> dict[int, int]:
    if pattern is None:
        return {}
    names = {p: pattern.format(prio=p) for p in PRIORITIES}
    return {p: stats[name] for p, name in names.items() if name in stats}


def _one(stats: Mapping[str, int], name: str | None) -> int | None:
    return stats.get(name) if name is not None else None


def pfc_counters(ifname: str, stats: Mapping[str, int], nic: NicFlavour) -> PfcCounters:
    return PfcCounters(
        ifname=ifname,
        flavour=nic.name,
        rx_pause_by_prio=_by_prio(stats, nic.rx_pause_prio),
        tx_pause_by_prio=_by_prio(stats, nic.tx_pause_prio),
        rx_discards_by_prio=_by_prio(stats, nic.rx_discards_prio),
        rx_discards=_one(stats, nic.rx_discards),
        rx_pause_frames=_one(stats, nic.rx_pause_frames),
        tx_pause_frames=_one(stats, nic.tx_pause_frames),
        tx_pause_storm_errors=_one(stats, nic.tx_pause_storm_errors),
    )


MAX_LANES = 8


def nic_phy_errors(ifname: str, stats: Mapping[str, int], nic: NicFlavour,
                   device: str) -> NicPhyErrors:
    """The PHY bit counters of one port. A NIC (or flavour) without them is absent
    (``CapabilityAbsent``: not proven, never zero); lane counters with a gap (lane 0 and
    2 but no 1) are output this parser cannot read (``ParseError``)."""
    names = (nic.rx_bits_phy, nic.rx_corrected_bits_phy)
    missing = [n for n in names if n is None or n not in stats]
    if missing:
        raise CapabilityAbsent(
            device,
            f"ethtool -S {ifname} has no {' / '.join(str(n) for n in missing)} "
            f"(NIC flavour {nic.name}: set vars.counter_names.rx_bits_phy / "
            "rx_corrected_bits_phy if this NIC names them otherwise)")
    bits, corrected = (stats[str(n)] for n in names)
    lanes: list[int] = []
    if nic.rx_lane_corrected_bits is not None:
        found = {ln: stats[nic.rx_lane_corrected_bits.format(lane=ln)] for ln in range(MAX_LANES)
                 if nic.rx_lane_corrected_bits.format(lane=ln) in stats}
        lanes = [found[ln] for ln in range(len(found)) if ln in found]
        if len(lanes) != len(found):
            raise ParseError(
                device,
                f"lane counters {nic.rx_lane_corrected_bits} for lanes {sorted(found)}: "
                "a lane is missing between them", command=f"ethtool -S {ifname}",
                expected="lanes 0..n-1")
    return NicPhyErrors(ifname=ifname, rx_bits=bits, rx_corrected_bits=corrected,
                        lane_corrected_bits=tuple(lanes),
                        rx_uncorrected_symbols=_one(stats, nic.rx_uncorrected_symbols))


def hw_counters(
    device: str, port: int, counters: Mapping[str, int], nic: NicFlavour
) -> RdmaHwCounters:
    """The RDMA hw counters record, with this NIC's names mapped onto the named fields
    (the raw dict keeps the NIC's own names)."""
    record = RdmaHwCounters.from_counters(device, port, dict(counters))
    mapped = {
        canonical: counters[name]
        for canonical, name in nic.rdma_aliases.items()
        if name in counters and getattr(record, canonical) is None
    }
    return dataclasses.replace(record, **mapped)  # type: ignore[arg-type]
