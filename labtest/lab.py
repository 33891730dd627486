"""The lab a test session drives: the testbed plus one open driver per device."""

from __future__ import annotations

import threading
from typing import Any, TypeVar, overload

from labtest.errors import CapabilityAbsent
from labtest.registry import DriverNotFound, driver_class, open_driver, provides, resolve_capability
from labtest.testbed.model import Testbed

C = TypeVar("C")


class Lab:
    """Opens each device's driver on first use, keeps it for the session, closes all."""

    def __init__(self, testbed: Testbed) -> None:
        self.testbed = testbed
        self._open: dict[str, Any] = {}
        self._lock = threading.Lock()

    @overload
    def device(self, name: str) -> Any: ...
    @overload
    def device(self, name: str, capability: type[C]) -> C: ...
    def device(self, name: str, capability: type[Any] | None = None) -> Any:
        """The device's open driver; with ``capability`` (a Protocol) it is typed as that,
        and a driver that does not offer it is refused with CapabilityAbsent (the check
        is not proven on that device) before anything is opened."""
        if name not in self.testbed.devices:
            known = ", ".join(sorted(self.testbed.devices))
            raise KeyError(f"testbed {self.testbed.name!r} has no device {name!r}; known: {known}")
        if capability is not None:
            driver = self.testbed.devices[name].driver
            if not provides(driver_class(driver), capability):
                raise CapabilityAbsent(
                    name, f"driver {driver!r} does not offer {capability.__name__}"
                )
        with self._lock:
            if name not in self._open:
                self._open[name] = open_driver(name, self.testbed)
            return self._open[name]

    def names(self, role: str | None = None, capability: str | type | None = None) -> list[str]:
        """Device names, optionally with a role and/or a capability, in testbed order."""
        proto = resolve_capability(capability) if capability is not None else None
        out = []
        for name, dev in self.testbed.devices.items():
            if role is not None and dev.role != role:
                continue
            if proto is not None:
                try:
                    cls = driver_class(dev.driver)
                except DriverNotFound:
                    continue
                if not provides(cls, proto):
                    continue
            out.append(name)
        return out

    def by_role(self, role: str) -> dict[str, Any]:
        return {n: self.device(n) for n in self.names(role=role)}

    def close(self) -> None:
        with self._lock:
            drivers, self._open = list(self._open.values()), {}
        for drv in drivers:
            close = getattr(drv, "close", None)
            if close is not None:
                close()
