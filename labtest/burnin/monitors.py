"""Monitors: one capability call on one target, turned into samples.

Each monitor reads through the capability Protocols only (``Transceivers``,
``Fec``, ``Interfaces``, ``Prbs``, ``ThermalChamber``), so it works with every
driver that offers them, real or emulated. Counters are stored as the device
reports them (cumulative); the analysis takes increments, which survives a
resume or a counter reset. A sample belongs to the unit it describes: DOM
values to the module's serial, port counters to the switch's serial.

A PRBS reading covers one link: SONiC reads the checker only once PRBS is
disabled, so each end in turn is stopped, read and started again; doing the
ends one after the other keeps the far end's generator running while the
near end's checker state is captured (both ends at once would make the
second one report a lock loss the first one's stop caused).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labtest.burnin.station import Station
from labtest.burnin.store import Sample
from labtest.burnin.units import Plan, PortPlan, module_of
from labtest.capabilities.instruments import ThermalChamber
from labtest.capabilities.switch import Fec, Interfaces, Transceivers
from labtest.capabilities.transceiver import Transceiver
from labtest.errors import CommandFailed
from labtest.lab import Lab

COUNTER_FIELDS = ("rx_errors", "tx_errors", "rx_discards", "tx_discards", "rx_fcs_errors",
                  "rx_symbol_errors")
FEC_FIELDS = (("corrected_cw", "fec_corrected_cw", "codewords"),
              ("uncorrectable_cw", "fec_uncorrectable_cw", "codewords"),
              ("symbol_errors", "fec_symbol_errors", "symbols"))


@dataclass
class Result:
    """Samples of one reading plus anything the operator should hear about."""

    samples: list[Sample] = field(default_factory=list)
    notes: list[tuple[str, str, str | None]] = field(default_factory=list)  # (kind, text, unit)

    def add(self, unit: str, port: str, lane: int, metric: str, value: float | None,
            uom: str) -> None:
        if value is not None:
            self.samples.append(Sample(unit, port, lane, metric, float(value), uom))


Reader = Callable[[Lab, Plan, Station, str], Result]


@dataclass(frozen=True)
class MonitorSpec:
    name: str
    read: Reader
    first_at_period: bool = False  # the first reading comes one period after the start


# --- DOM ---------------------------------------------------------------------------------------


def read_dom(lab: Lab, plan: Plan, station: Station, device: str) -> Result:
    drv = lab.device(device)
    ports = plan.ports_of(device)
    cabled = {p.port for p in ports}
    if isinstance(drv, Transceivers):
        found = drv.transceivers()
        modules = {p.port: module_of(found, p.port, cabled) for p in ports}
    else:
        modules = {p.port: drv.module_dom(p.port) for p in ports}
    out = Result()
    for p in ports:
        _dom_samples(out, p, modules.get(p.port))
    return out


def _dom_samples(out: Result, p: PortPlan, module: Transceiver | None) -> None:
    if module is None or not module.present:
        out.notes.append(("module-missing", f"{p.name}: no module read", p.module_serial))
        return
    if p.module_serial and module.serial and module.serial != p.module_serial:
        out.notes.append(("module-changed", f"{p.name}: serial {p.module_serial} now reads "
                          f"{module.serial}; samples not recorded", p.module_serial))
        return
    unit = p.module_serial or module.serial or p.name
    out.add(unit, p.name, 0, "temperature_c", module.temperature_c, "degC")
    out.add(unit, p.name, 0, "voltage_v", module.voltage_v, "V")
    for lane in module.lanes:
        out.add(unit, p.name, lane.lane, "tx_bias_ma", lane.tx_bias_ma, "mA")
        out.add(unit, p.name, lane.lane, "tx_power_dbm", _finite_dbm(lane.tx_power_dbm), "dBm")
        out.add(unit, p.name, lane.lane, "rx_power_dbm", _finite_dbm(lane.rx_power_dbm), "dBm")
    for flag, raised in sorted(module.flags.items()):
        if raised:  # latched flags clear on read: a set flag is an event since the last read
            out.add(unit, p.name, 0, f"flag:{flag}", 1.0, "flag")


#: what a dark receiver is stored as (a DOM's own floor is about -40 dBm)
DARK_DBM = -40.0


def _finite_dbm(value: float | None) -> float | None:
    if value is None:
        return None
    return value if math.isfinite(value) else DARK_DBM


# --- FEC ---------------------------------------------------------------------------------------


def read_fec(lab: Lab, plan: Plan, station: Station, device: str) -> Result:
    drv = lab.device(device)
    serial = plan.device_serials.get(device, device)
    stats = drv.fec_stats()
    histogram = station.monitors.fec is not None and station.monitors.fec.histogram
    out = Result()
    for p in plan.ports_of(device):
        if p.mode != "mission" or p.port not in stats:
            continue
        rec = stats[p.port]
        for attr, metric, uom in FEC_FIELDS:
            out.add(serial, p.name, 0, metric, getattr(rec, attr), uom)
        out.add(serial, p.name, 0, "pre_fec_ber", rec.pre_fec_ber, "")
        if histogram:
            for i, count in enumerate(drv.fec_histogram(p.port).bins):
                out.add(serial, p.name, 0, f"fec_bin_{i:02d}", count, "codewords")
    return out


# --- interface status and error counters ---------------------------------------------------------


def read_counters(lab: Lab, plan: Plan, station: Station, device: str) -> Result:
    drv = lab.device(device)
    serial = plan.device_serials.get(device, device)
    status = drv.interfaces()
    counters = drv.counters()
    out = Result()
    for p in plan.ports_of(device):
        st = status.get(p.port)
        if st is not None and st.oper_up is not None:
            out.add(serial, p.name, 0, "oper_up", 1.0 if st.oper_up else 0.0, "bool")
        rec = counters.get(p.port)
        for name in COUNTER_FIELDS if rec is not None else ():
            out.add(serial, p.name, 0, name, getattr(rec, name), "count")
    return out


# --- PRBS ----------------------------------------------------------------------------------------


def link_name(a: tuple[str, str], b: tuple[str, str]) -> str:
    return f"{a[0]}:{a[1]}--{b[0]}:{b[1]}"


def read_prbs(lab: Lab, plan: Plan, station: Station, link: str) -> Result:
    pattern = getattr(station.load, "pattern", "PRBS31Q")
    out = Result()
    for a, b in plan.prbs_links:
        if link_name(a, b) != link:
            continue
        for device, port in (a, b):
            serial = plan.device_serials.get(device, device)
            drv = lab.device(device)
            drv.prbs_stop(port)
            results = drv.prbs_read(port)
            drv.prbs_start(port, pattern)
            where = f"{device}:{port}"
            for r in results:
                out.add(serial, where, r.lane, "prbs_errors", r.errors, "errors")
                out.add(serial, where, r.lane, "prbs_bits", r.bits, "bits")
                out.add(serial, where, r.lane, "prbs_ber", r.ber, "")
                out.add(serial, where, r.lane, "prbs_locked", 1.0 if r.locked else 0.0, "bool")
    return out


def start_prbs(lab: Lab, plan: Plan, station: Station) -> None:
    """Put every PRBS link under load; a generator left running by a crash is restarted."""
    pattern = getattr(station.load, "pattern", "PRBS31Q")
    for a, b in plan.prbs_links:
        for device, port in (a, b):
            # not running: SONiC refuses to disable what is not enabled
            with contextlib.suppress(CommandFailed):
                lab.device(device).prbs_stop(port)
        for device, port in (a, b):
            lab.device(device).prbs_start(port, pattern)


def stop_prbs(lab: Lab, plan: Plan) -> None:
    for a, b in plan.prbs_links:
        for device, port in (a, b):
            lab.device(device).prbs_stop(port)


# --- chamber -------------------------------------------------------------------------------------


def read_chamber(lab: Lab, plan: Plan, station: Station, device: str) -> Result:
    status = lab.device(device).status()
    out = Result()
    unit = chamber_unit(device)
    out.add(unit, "", 0, "chamber_temperature_c", status.temperature_c, "degC")
    out.add(unit, "", 0, "chamber_setpoint_c", status.setpoint_c, "degC")
    return out


def chamber_unit(device: str) -> str:
    return f"chamber:{device}"


# --- which monitor reads what ----------------------------------------------------------------


MONITORS: dict[str, MonitorSpec] = {
    "dom": MonitorSpec("dom", read_dom),
    "fec": MonitorSpec("fec", read_fec),
    "counters": MonitorSpec("counters", read_counters),
    "prbs": MonitorSpec("prbs", read_prbs, first_at_period=True),
    "chamber": MonitorSpec("chamber", read_chamber),
}


def targets(monitor: str, lab: Lab, plan: Plan, station: Station) -> list[str]:
    """What ``monitor`` reads: devices (or links, for PRBS) that offer its capability."""
    devices = [d for d in station.units.devices if plan.ports_of(d)]
    if monitor == "dom":
        return [d for d in devices if _has_dom(lab.device(d))]
    if monitor == "fec":
        return [d for d in devices if isinstance(lab.device(d), Fec)
                and any(p.mode == "mission" for p in plan.ports_of(d))]
    if monitor == "counters":
        return [d for d in devices if isinstance(lab.device(d), Interfaces)]
    if monitor == "prbs":
        return [link_name(a, b) for a, b in plan.prbs_links]
    if monitor == "chamber" and station.chamber is not None:
        drv = lab.device(station.chamber.device)
        return [station.chamber.device] if isinstance(drv, ThermalChamber) else []
    return []


def _has_dom(drv: Any) -> bool:
    return isinstance(drv, Transceivers) or callable(getattr(drv, "module_dom", None))

