"""What is installed beside labtest's core, found by entry point: drivers by the name a
testbed's ``driver:`` uses, and the emulation backends' fault declarations.

It imports nothing of labtest, so the testbed loader can check a testbed's driver names
and emulated faults without importing the registry or the emulation (which import the
testbed model: a loader importing them tied the testbed, the registry and the whole
emulation into one import circle).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.metadata import entry_points
from typing import Any

DRIVERS = "labtest.drivers"
#: ``backend = "module:function"``: the function returns the faults the backend can inject
#: (kind -> a declaration ``labtest.testbed.faultcheck`` checks a testbed's faults against)
FAULT_BACKENDS = "labtest.fault_backends"


class DriverNotFound(LookupError):
    pass


_local: dict[str, type] = {}


def driver_names() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=DRIVERS)} | set(_local))


def register_driver(name: str, cls: type) -> None:
    """Register a driver without packaging it (a lab's own conftest, a test)."""
    _local[name] = cls
    driver_class.cache_clear()


@cache
def driver_class(name: str) -> type:
    if name in _local:
        return _local[name]
    for ep in entry_points(group=DRIVERS):
        if ep.name == name:
            loaded: type = ep.load()
            return loaded
    raise DriverNotFound(
        f"no driver {name!r} is installed; installed drivers: {', '.join(driver_names()) or 'none'}"
    )


def fault_declarations(backend: str) -> Mapping[str, Any] | None:
    """The faults ``backend`` (``emulation.backend``) can inject; None for a backend no
    installed package declares."""
    for ep in entry_points(group=FAULT_BACKENDS):
        if ep.name == backend:
            declared: Mapping[str, Any] = ep.load()()
            return declared
    return None
