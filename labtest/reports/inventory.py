"""Device inventory for the sign-off: facts and optics, from drivers that offer them.

Duck-typed on purpose: a driver with ``facts()`` (a record with ``vendor``,
``model``, ``serial``, ``os_version`` …) and/or ``transceivers()`` (``{port:
Transceiver}``) contributes; other devices are listed with role and driver
only. A device that cannot be read is recorded with its error and never stops
the run: tests decide verdicts, the inventory only documents what was tested.
"""

from __future__ import annotations

from typing import Any

from labtest.lab import Lab
from labtest.parsing import to_jsonable
from labtest.registry import DriverNotFound, driver_class
from labtest.secrets import redact

INVENTORY_METHODS = ("facts", "transceivers")
OPTIC_FIELDS = ("vendor", "part_number", "serial", "firmware", "media_type", "present")
OS_KEYS = ("os_version", "software_version", "os", "version", "firmware")
SERIAL_KEYS = ("serial", "serial_number")

Inventory = dict[str, dict[str, Any]]


def collect(lab: Lab) -> Inventory:
    """``{device: {role, driver, facts?, optics?, error?}}`` for every testbed device."""
    return {name: _device_entry(lab, name) for name in lab.names()}


def _device_entry(lab: Lab, name: str) -> dict[str, Any]:
    dev = lab.testbed.devices[name]
    entry: dict[str, Any] = {"role": dev.role, "driver": dev.driver}
    try:
        cls = driver_class(dev.driver)
    except DriverNotFound as exc:
        entry["error"] = str(exc)
        return entry
    offered = [m for m in INVENTORY_METHODS if callable(getattr(cls, m, None))]
    if not offered:
        return entry
    try:
        drv = lab.device(name)
        if "facts" in offered:
            entry["facts"] = to_jsonable(drv.facts())
        if "transceivers" in offered:
            entry["optics"] = optics(drv.transceivers())
    except Exception as exc:  # recorded in the report, see the module docstring
        entry["error"] = redact(f"{type(exc).__name__}: {exc}")
    return entry


def optics(transceivers: Any) -> dict[str, dict[str, Any]]:
    """Inventory fields of each port's module (DOM readings belong to the tests)."""
    out: dict[str, dict[str, Any]] = {}
    for port, xcvr in dict(transceivers).items():
        record = to_jsonable(xcvr)
        if isinstance(record, dict):
            out[str(port)] = {k: record.get(k) for k in OPTIC_FIELDS if k in record}
    return out


def first_of(record: dict[str, Any] | None, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = (record or {}).get(key)
        if value not in (None, ""):
            return str(value)
    return None


def os_version(entry: dict[str, Any]) -> str | None:
    return first_of(entry.get("facts"), OS_KEYS)


def serial(entry: dict[str, Any]) -> str | None:
    return first_of(entry.get("facts"), SERIAL_KEYS)


def optic_part_number(inventory: Inventory, device: str, port: str) -> str | None:
    optic = inventory.get(device, {}).get("optics", {}).get(port)
    return first_of(optic, ("part_number",))
