"""Who is under test and which ports carry what: units from inventory, the port plan.

Units are identified by serial, read from inventory at the start of a run:
a device's ``facts().serial`` and each cabled port's transceiver serial. The
operator may enter serials in the station (``units.serials``, e.g. scanned
from labels): they must agree with inventory, and stand in where inventory has
none. Every cabled port of a device under test is monitored; its module is a
unit under test when the station's ``units.optics`` selects it (otherwise it
is monitored as a fixture, which still matters for attributing failures).

With a PRBS load, a link runs PRBS when both of its ends are devices under
test whose drivers offer the ``Prbs`` capability; other links stay in mission
mode and are judged on FEC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from labtest.burnin.station import PrbsLoad, Station
from labtest.burnin.store import Unit
from labtest.capabilities.switch import Facts, Prbs, SwitchFacts, Transceivers
from labtest.capabilities.transceiver import Transceiver
from labtest.errors import ConfigError
from labtest.lab import Lab
from labtest.parsing import to_jsonable

PortKey = tuple[str, str]  # (device, port)


@dataclass(frozen=True)
class PortPlan:
    device: str
    port: str
    peer: PortKey | None  # the far end in the cabling plan
    module_serial: str | None
    mode: str  # "prbs" or "mission"

    @property
    def name(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass
class Plan:
    units: list[Unit]
    ports: dict[PortKey, PortPlan]
    device_serials: dict[str, str]
    prbs_links: list[tuple[PortKey, PortKey]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def ports_of(self, device: str) -> list[PortPlan]:
        return [p for p in self.ports.values() if p.device == device]

    def unit_at(self, device: str, port: str = "") -> Unit | None:
        for u in self.units:
            if u.device == device and u.port == port:
                return u
        return None


def discover(lab: Lab, station: Station) -> Plan:
    """Read inventory and build the plan; every problem is reported at once."""
    problems: list[str] = []
    tb = lab.testbed
    units: list[Unit] = []
    device_serials: dict[str, str] = {}
    module_serials: dict[PortKey, str] = {}
    entered = station.units.serials
    for name in station.units.devices:
        drv = lab.device(name)
        facts = drv.facts() if isinstance(drv, SwitchFacts) else None
        serial = _device_serial(name, facts, entered.get(name), problems)
        if serial is not None:
            device_serials[name] = serial
            units.append(Unit(serial, "switch", name, "", True, _facts_info(facts)))
        cabled = [p for lk in tb.links_of(name) for e in lk.ends if e.device == name
                  for p in [e.port]]
        modules = _modules(name, drv, cabled)
        for port in cabled:
            module = modules.get(port)
            serial = _module_serial(name, port, module, entered.get(f"{name}:{port}"), problems)
            if serial is None:
                continue
            module_serials[(name, port)] = serial
            under_test = _optic_selected(station, name, port)
            units.append(Unit(serial, "module", name, port, under_test, _module_info(module)))
    _check_unique(units, problems)
    if problems:
        raise ConfigError(str(station.source or station.station), problems)
    ports, links, notes = _port_plan(lab, station, module_serials)
    return Plan(units, ports, device_serials, links, notes)


def _device_serial(
    name: str, facts: Facts | None, entered: str | None, problems: list[str]
) -> str | None:
    found = facts.serial if facts is not None else None
    if found and entered and found != entered:
        problems.append(f"{name}: inventory serial {found!r} differs from the station's {entered!r}"
                        " (wrong unit in this position?)")
        return None
    serial = found or entered
    if serial is None and facts is not None:
        problems.append(f"{name}: inventory reports no serial; enter it under units.serials")
    return serial


def _module_serial(
    device: str, port: str, module: Transceiver | None, entered: str | None, problems: list[str]
) -> str | None:
    where = f"{device}:{port}"
    if module is None or not module.present:
        problems.append(f"{where}: no transceiver found in inventory (cabled in the testbed)")
        return None
    if module.serial and entered and module.serial != entered:
        problems.append(f"{where}: module serial {module.serial!r} differs from the station's "
                        f"{entered!r}")
        return None
    if not (module.serial or entered):
        problems.append(f"{where}: the module reports no serial; enter it under units.serials")
    return module.serial or entered


def _check_unique(units: list[Unit], problems: list[str]) -> None:
    seen: dict[str, str] = {}
    for u in units:
        where = f"{u.device}:{u.port}" if u.port else u.device
        if u.serial in seen:
            problems.append(f"serial {u.serial!r} appears at {seen[u.serial]} and {where}")
        seen[u.serial] = where


def _optic_selected(station: Station, device: str, port: str) -> bool:
    optics = station.units.optics
    if optics == "all":
        return True
    if optics == "none":
        return False
    return f"{device}:{port}" in optics


def _modules(device: str, drv: Any, cabled: list[str]) -> dict[str, Transceiver]:
    """Each cabled port's module record (a host's ``module_dom`` per netdev)."""
    if isinstance(drv, Transceivers):
        found = drv.transceivers()
        return {p: m for p in cabled if (m := module_of(found, p, set(cabled))) is not None}
    if callable(getattr(drv, "module_dom", None)):
        return {p: drv.module_dom(p) for p in cabled}
    return {}


_SUFFIX = re.compile(r"^(?P<base>.*)/(?P<n>\d+)$")


def module_of(found: dict[str, Transceiver], port: str, cabled: set[str]) -> Transceiver | None:
    """The module in ``port``, lanes gathered where the CLI lists each lane as a port.

    EOS prints a 400G-DR4 in ``Ethernet1/1`` as four one-lane entries
    ``Ethernet1/1..1/4`` with the same serial; uncabled siblings with the same
    serial are that module's lanes 2..N (a cabled sibling is a breakout port).
    """
    module = found.get(port)
    match = _SUFFIX.match(port)
    if module is None or match is None or module.serial is None:
        return module
    siblings = []
    for name, other in found.items():
        m = _SUFFIX.match(name)
        same = m is not None and m["base"] == match["base"] and other.serial == module.serial
        if same and (name == port or name not in cabled):
            siblings.append((int(m["n"]), other))  # type: ignore[index]
    if len(siblings) <= 1:
        return module
    siblings.sort(key=lambda item: item[0])
    lanes = [replace(lane, lane=i + 1)
             for i, (_, other) in enumerate(siblings) for lane in other.lanes[:1]]
    return replace(module, lanes=lanes)


def _port_plan(
    lab: Lab, station: Station, module_serials: dict[PortKey, str]
) -> tuple[dict[PortKey, PortPlan], list[tuple[PortKey, PortKey]], list[str]]:
    tb = lab.testbed
    under = set(station.units.devices)
    prbs = isinstance(station.load, PrbsLoad)
    ports: dict[PortKey, PortPlan] = {}
    links: list[tuple[PortKey, PortKey]] = []
    notes: list[str] = []
    for lk in tb.links:
        a, b = lk.ends
        ends = [(e.device, e.port) for e in (a, b)]
        mode = "mission"
        if prbs:
            outside = sorted({d for d, _ in ends if d not in under})
            lacking = sorted(
                {d for d, _ in ends if d in under and not isinstance(lab.device(d), Prbs)}
            )
            if not outside and not lacking:
                mode = "prbs"
                links.append((ends[0], ends[1]))
            elif len(outside) < 2:
                why = f"no PRBS on {', '.join(lacking)}" if lacking else (
                    f"{', '.join(outside)} not under test")
                notes.append(f"{lk.name}: mission mode ({why}); judged on FEC")
        for here, there in ((ends[0], ends[1]), (ends[1], ends[0])):
            if here[0] in under:
                ports[here] = PortPlan(here[0], here[1], there, module_serials.get(here), mode)
    return ports, links, notes


def _facts_info(facts: Facts | None) -> dict[str, Any]:
    if facts is None:
        return {}
    record = to_jsonable(facts)
    return {k: record.get(k) for k in ("vendor", "model", "os_version", "hwsku", "hardware_rev")}


def _module_info(module: Transceiver | None) -> dict[str, Any]:
    if module is None:
        return {}
    info: dict[str, Any] = {
        "vendor": module.vendor,
        "part_number": module.part_number,
        "firmware": module.firmware,
        "media_type": module.media_type,
        "lanes": len(module.lanes),
    }
    info["thresholds"] = {k: to_jsonable(t) for k, t in module.thresholds.items()}
    return info
