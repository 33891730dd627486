"""Drivers and capabilities: which class drives a device, and what it can do.

Driver classes are found by name through the ``labtest.drivers`` entry-point
group (``sonic = "labtest.drivers.sonic:SonicSwitch"``), so a third-party driver is a
pip install away and there is no if/elif factory to grow. A driver's
capabilities are the capability Protocols its class satisfies.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from typing import Any, Protocol

import labtest.capabilities
from labtest.installed import DriverNotFound, driver_class, driver_names, register_driver
from labtest.testbed.model import Device, Testbed

__all__ = ["Driver", "DriverNotFound", "driver_class", "driver_names", "register_driver"]


class Driver(Protocol):
    """What every driver class offers besides its capabilities."""

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None: ...

    def close(self) -> None: ...


@cache
def capability_protocols() -> dict[str, type]:
    """Every Protocol class defined in ``labtest.capabilities.*``, by class name."""
    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(labtest.capabilities.__path__):
        module = importlib.import_module(f"labtest.capabilities.{info.name}")
        for name, obj in vars(module).items():
            is_protocol = inspect.isclass(obj) and getattr(obj, "_is_protocol", False)
            if is_protocol and obj.__module__ == module.__name__:
                found[name] = obj
    return found


def resolve_capability(cap: str | type) -> type:
    if isinstance(cap, type):
        return cap
    protocols = capability_protocols()
    if cap not in protocols:
        raise LookupError(f"unknown capability {cap!r}; known: {', '.join(sorted(protocols))}")
    return protocols[cap]


def provides(cls: type, protocol: type) -> bool:
    """True when ``cls`` has every member ``protocol`` declares (without instantiating)."""
    members = _protocol_members(protocol)
    return all(callable(getattr(cls, m, None)) or hasattr(cls, m) for m in members)


def _protocol_members(protocol: type) -> set[str]:
    members: set[str] = set()
    for base in protocol.__mro__:
        if base in (Protocol, object) or not getattr(base, "_is_protocol", False):
            continue
        members |= {n for n in vars(base) if not n.startswith("_") or n in ("__call__",)}
        members |= set(getattr(base, "__annotations__", {}))
    return members


def capabilities_of(cls: type) -> list[str]:
    return sorted(n for n, p in capability_protocols().items() if provides(cls, p))


def open_driver(name: str, testbed: Testbed) -> Any:
    device = testbed.devices[name]
    return driver_class(device.driver)(name, device, testbed)
