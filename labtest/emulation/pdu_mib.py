"""An emulated APC Switched Rack PDU: the PowerNet-MIB outlets ``SnmpAgent`` serves.

Outlets switch and meter as on the real card; a cycled outlet comes back after
its reboot duration, evaluated when the MIB is read (nothing runs in the
background). Like the SCPI instruments, it calls back into the lab through
``InstrumentHooks.on_outlet``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from labtest.emulation.scpi_instruments import Clock, InstrumentHooks
from labtest.emulation.snmpagent import DictMib, Gauge32, ObjectIdentifier, TimeTicks
from labtest.transports.mibs import Oid

APC = (1, 3, 6, 1, 4, 1, 318)
#: rPDU2 generation sysObjectID (NUT apc-pdu-mib.c: APC_PDU_MIB_SYSOID_RPDU2)
APC_RPDU2_SYSOID = (*APC, 1, 3, 4, 5)
R_PDU_NUM_OUTLETS = (*APC, 1, 1, 12, 1, 8, 0)  # rPDUIdentDeviceNumOutlets.0
R_PDU_CONTROL_ENTRY = (*APC, 1, 1, 12, 3, 3, 1, 1)  # rPDUOutletControlEntry
R_PDU_STATUS_ENTRY = (*APC, 1, 1, 12, 3, 5, 1, 1)  # rPDUOutletStatusEntry
R_PDU2_METERED_POWER = (*APC, 1, 1, 26, 9, 4, 3, 1, 7)  # rPDU2OutletMeteredStatusPower (W)
OUTLET_COMMAND = (*R_PDU_CONTROL_ENTRY, 4)  # rPDUOutletControlOutletCommand
IMMEDIATE_ON, IMMEDIATE_OFF, IMMEDIATE_REBOOT = 1, 2, 3
STATUS_ON, STATUS_OFF = 1, 2
_SYSTEM = (1, 3, 6, 1, 2, 1, 1)


class PduMib:
    """An APC rack PDU's MIB for ``SnmpAgent``: outlets you can switch and meter.

    Serves rPDUOutletControlTable (``...12.3.3.1.1``; command 1 = immediateOn,
    2 = immediateOff, 3 = immediateReboot), rPDUOutletStatusTable
    (``...12.3.5.1.1``; state 1 on / 2 off, load in tenths of amps) and
    rPDU2OutletMeteredStatusPower (``...26.9.4.3.1.7``, watts). A reboot turns
    the outlet off and back on after ``reboot_duration_s``; transitions are
    applied when the MIB is next read (or on ``poll()``), and each calls
    ``hooks.on_outlet(n, on)``. ``writes`` lists every SET received.
    """

    def __init__(self, outlets: int = 8, *, load_w: Mapping[int, float] | None = None,
                 default_load_w: float = 120.0, voltage_v: float = 230.0,
                 reboot_duration_s: float = 5.0, names: Mapping[int, str] | None = None,
                 clock: Clock = time.monotonic, hooks: InstrumentHooks | None = None) -> None:
        self.clock = clock
        self.hooks = hooks or InstrumentHooks()
        self.voltage_v = voltage_v
        self.reboot_duration_s = reboot_duration_s
        self.outlet_count = outlets
        numbers = range(1, outlets + 1)
        self.on = dict.fromkeys(numbers, True)
        self.load_w = {n: (load_w or {}).get(n, default_load_w) for n in numbers}
        self.names = {n: (names or {}).get(n, f"Outlet {n}") for n in numbers}
        self.writes: list[tuple[str, Any]] = []
        self._back_on_at: dict[int, float] = {}
        self._lock = threading.RLock()
        self._started_s = clock()
        self._mib = DictMib(self._objects())

    def _objects(self) -> dict[str | Oid, Any]:
        objects: dict[str | Oid, Any] = {
            (*_SYSTEM, 1, 0): "APC Web/SNMP Management Card (emulated rack PDU)",
            (*_SYSTEM, 2, 0): ObjectIdentifier(APC_RPDU2_SYSOID),
            (*_SYSTEM, 3, 0): lambda: TimeTicks(int((self.clock() - self._started_s) * 100)),
            (*_SYSTEM, 5, 0): "pdu-emulated",
            R_PDU_NUM_OUTLETS: self.outlet_count,
        }
        for n in self.on:
            objects.update({
                (*R_PDU_CONTROL_ENTRY, 1, n): n,
                (*R_PDU_CONTROL_ENTRY, 2, n): self.names[n],
                (*OUTLET_COMMAND, n): lambda n=n: IMMEDIATE_ON if self.on[n] else IMMEDIATE_OFF,
                (*R_PDU_STATUS_ENTRY, 1, n): n,
                (*R_PDU_STATUS_ENTRY, 2, n): self.names[n],
                (*R_PDU_STATUS_ENTRY, 4, n): lambda n=n: STATUS_ON if self.on[n] else STATUS_OFF,
                (*R_PDU_STATUS_ENTRY, 7, n): lambda n=n: Gauge32(round(self.power_w(n)
                                                                       / self.voltage_v * 10)),
                (*R_PDU2_METERED_POWER, n): lambda n=n: Gauge32(round(self.power_w(n))),
            })
        return objects

    # --- lab-side API -------------------------------------------------------------

    def power_w(self, outlet: int) -> float:
        with self._lock:
            return self.load_w[outlet] if self.on[outlet] else 0.0

    def set_load_w(self, outlet: int, load_w: float) -> None:
        with self._lock:
            self.load_w[outlet] = load_w

    def poll(self) -> None:
        """Apply due transitions (a rebooting outlet coming back on)."""
        with self._lock:
            now = self.clock()
            for n, at_s in list(self._back_on_at.items()):
                if now >= at_s:
                    del self._back_on_at[n]
                    self._switch(n, True)

    # --- MibProvider ------------------------------------------------------------------

    def get(self, oid: Oid) -> Any | None:
        self.poll()
        return self._mib.get(oid)

    def next(self, oid: Oid) -> tuple[Oid, Any] | None:
        self.poll()
        return self._mib.next(oid)

    def write(self, oid: Oid, value: Any) -> None:
        self.poll()
        if oid[:-1] != OUTLET_COMMAND or oid[-1] not in self.on:
            raise KeyError(oid)
        if value not in (IMMEDIATE_ON, IMMEDIATE_OFF, IMMEDIATE_REBOOT):
            raise ValueError(f"outlet command {value!r} not supported")
        with self._lock:
            outlet = oid[-1]
            self.writes.append((".".join(map(str, oid)), value))
            self._back_on_at.pop(outlet, None)
            if value == IMMEDIATE_REBOOT:
                self._switch(outlet, False)
                self._back_on_at[outlet] = self.clock() + self.reboot_duration_s
            else:
                self._switch(outlet, value == IMMEDIATE_ON)

    def _switch(self, outlet: int, on: bool) -> None:
        changed = self.on[outlet] != on
        self.on[outlet] = on
        if changed and self.hooks.on_outlet:
            self.hooks.on_outlet(outlet, on)
