"""Transceiver records shared by switch drivers (DOM CLI, SNMP) and hosts (``ethtool -m``).

One record whatever the source, so a transceiver suite judges an optic the same
way whether it sits in a switch cage or a NIC. Absent values are ``None``; a
dark receiver is ``-inf`` dBm (printed as the JSON string ``"-inf"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

NEG_INF_DBM = -math.inf


@dataclass(frozen=True)
class Threshold:
    """DOM alarm/warning levels; order is low_alarm < low_warn < high_warn < high_alarm."""

    low_alarm: float | None = None
    low_warn: float | None = None
    high_warn: float | None = None
    high_alarm: float | None = None

    def state(self, value: float | None) -> str:
        """``ok``, ``low_warn``, ``low_alarm``, ``high_warn``, ``high_alarm`` or ``unknown``."""
        if value is None:
            return "unknown"
        if self.low_alarm is not None and value < self.low_alarm:
            return "low_alarm"
        if self.high_alarm is not None and value > self.high_alarm:
            return "high_alarm"
        if self.low_warn is not None and value < self.low_warn:
            return "low_warn"
        if self.high_warn is not None and value > self.high_warn:
            return "high_warn"
        return "ok"


@dataclass(frozen=True)
class LaneDom:
    lane: int  # 1-based, as SONiC and ethtool print it
    tx_bias_ma: float | None = None
    tx_power_dbm: float | None = None
    rx_power_dbm: float | None = None


@dataclass(frozen=True)
class Transceiver:
    """Inventory and DOM of one module. ``thresholds`` is keyed by quantity:
    ``temperature_c``, ``voltage_v``, ``tx_bias_ma``, ``tx_power_dbm``, ``rx_power_dbm``."""

    temperature_c: float | None = None
    voltage_v: float | None = None
    lanes: list[LaneDom] = field(default_factory=list)
    thresholds: dict[str, Threshold] = field(default_factory=dict)
    vendor: str | None = None
    part_number: str | None = None
    serial: str | None = None
    firmware: str | None = None
    media_type: str | None = None  # e.g. "400GBASE-DR4"
    identifier: str | None = None  # form factor as the EEPROM names it, e.g. "QSFP28 or later"
    flags: dict[str, bool] = field(default_factory=dict)  # latched flags as read (read clears)
    present: bool = True


def mw_to_dbm(mw: float) -> float:
    return 10.0 * math.log10(mw) if mw > 0 else NEG_INF_DBM


def dbm_to_mw(dbm: float) -> float:
    return 0.0 if dbm == NEG_INF_DBM else 10.0 ** (dbm / 10.0)
