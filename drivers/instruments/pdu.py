"""PDU over SNMP: APC Switched / Metered-by-Outlet Rack PDUs (PowerNet-MIB).

Objects (APC PowerNet-MIB; numbers as used by Network UPS Tools,
https://github.com/networkupstools/nut ``drivers/apc-pdu-mib.c``, and other
public pollers):

- ``rPDUIdentDeviceNumOutlets.0`` = ``1.3.6.1.4.1.318.1.1.12.1.8.0``;
- ``rPDUOutletControlOutletCommand.N`` = ``...318.1.1.12.3.3.1.1.4.N``, written
  1 immediateOn, 2 immediateOff, 3 immediateReboot (off, then on after the
  outlet's reboot duration);
- ``rPDUOutletStatusOutletName.N`` / ``...OutletState.N`` (1 on, 2 off) /
  ``rPDUOutletStatusLoad.N`` (tenths of amps; only some models) =
  ``...318.1.1.12.3.5.1.1.{2,4,7}.N``;
- ``rPDU2OutletMeteredStatusPower.N`` = ``...318.1.1.26.9.4.3.1.7.N`` in watts
  (metered-by-outlet rPDU2 models only; absent elsewhere -> ``None``).

Writes need a read-write community (APC's default is ``private``) or a v3 user
with write access. An outlet number outside the PDU's range is refused before
any SET is sent. Testbed: ``address`` + ``snmp``; ``vars.outlets`` skips the
outlet-count query.
"""

from __future__ import annotations

from typing import Any

from labtest import connect
from labtest.capabilities.instruments import OutletStatus
from labtest.drivers.instruments.scpi import SettingRefused
from labtest.errors import ConfigError, ProtocolError
from labtest.testbed.model import Device, Testbed
from labtest.transports.snmp import SnmpTransport

NUM_OUTLETS = "1.3.6.1.4.1.318.1.1.12.1.8.0"
OUTLET_COMMAND = "1.3.6.1.4.1.318.1.1.12.3.3.1.1.4"
STATUS_NAME = "1.3.6.1.4.1.318.1.1.12.3.5.1.1.2"
STATUS_STATE = "1.3.6.1.4.1.318.1.1.12.3.5.1.1.4"
STATUS_LOAD = "1.3.6.1.4.1.318.1.1.12.3.5.1.1.7"
METERED_POWER = "1.3.6.1.4.1.318.1.1.26.9.4.3.1.7"

IMMEDIATE_ON, IMMEDIATE_OFF, IMMEDIATE_REBOOT = 1, 2, 3
OUTLET_STATUS_ON = 1


class Pdu:
    family = "APC Switched Rack PDU (PowerNet-MIB rPDU / rPDU2)"

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: SnmpTransport | None = None) -> None:
        self.name = name
        self.device = device
        if transport is None:
            if device.snmp is None or device.address is None:
                problem = "address and snmp: required by the PDU driver"
                raise ConfigError(f"device {name!r}", [problem])
            transport = connect.snmp(name, device)  # --record and replay: apply here too
        self.transport = transport
        configured = device.vars.get("outlets")
        self._outlet_count: int | None = int(configured) if configured is not None else None

    def outlet_count(self) -> int:
        if self._outlet_count is None:
            value = self.transport.get(NUM_OUTLETS)[NUM_OUTLETS]
            if not isinstance(value, int):
                raise ProtocolError(self.name, f"rPDUIdentDeviceNumOutlets is {value!r}")
            self._outlet_count = value
        return self._outlet_count

    def outlets(self) -> dict[int, OutletStatus]:
        rows = self.transport.table([STATUS_NAME, STATUS_STATE, STATUS_LOAD])
        power = {int(index): value for index, value in _column(self.transport, METERED_POWER)}
        out: dict[int, OutletStatus] = {}
        for index, row in sorted(rows.items(), key=lambda item: int(item[0])):
            number = int(index)
            load = row.get(STATUS_LOAD)
            out[number] = OutletStatus(
                outlet=number,
                on=row.get(STATUS_STATE) == OUTLET_STATUS_ON,
                name=row.get(STATUS_NAME),
                load_a=load / 10.0 if isinstance(load, int) else None,
                power_w=float(power[number]) if number in power else None,
            )
        return out

    def outlet_power_w(self, outlet: int) -> float | None:
        self._check(outlet)
        oid = f"{METERED_POWER}.{outlet}"
        value = self.transport.get(oid, missing_ok=True)[oid]
        return float(value) if isinstance(value, int) else None

    def set_outlet(self, outlet: int, on: bool) -> None:
        self._command(outlet, IMMEDIATE_ON if on else IMMEDIATE_OFF)

    def cycle_outlet(self, outlet: int) -> None:
        self._command(outlet, IMMEDIATE_REBOOT)

    def close(self) -> None:
        self.transport.close()

    def _check(self, outlet: int) -> None:
        count = self.outlet_count()
        if isinstance(outlet, bool) or not isinstance(outlet, int) or not 1 <= outlet <= count:
            raise SettingRefused(self.name, "outlet", outlet, f"1..{count}")

    def _command(self, outlet: int, command: int) -> None:
        self._check(outlet)
        self.transport.set(f"{OUTLET_COMMAND}.{outlet}", command)


def _column(transport: SnmpTransport, column: str) -> list[tuple[str, Any]]:
    """(index, value) of one column; empty when the PDU does not implement it."""
    prefix = len(column) + 1
    return [(oid[prefix:], value) for oid, value in transport.walk(column)]
