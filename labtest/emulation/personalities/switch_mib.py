"""The SNMP view of one emulated switch: system group, IF-MIB, LLDP-MIB, ENTITY MIBs.

Values are read from the fabric model when a request asks for them; only the
*shape* of the MIB (which OIDs exist) is precomputed, as a sorted list that
``next()`` bisects. The shape depends on the port set and on which ports hold a
module, so it is rebuilt when either changes. Rows that come and go with the
link state (LLDP neighbours) stay in the list and are skipped while absent.

Like the real agents, the view caches what it read for a short while
(``cache_s``): sonic-snmpagent refreshes its counters every few seconds and
xcvrd its DOM once a minute, so a manager never saw instant values anyway, and
one GETBULK then costs one fabric read per port instead of one per cell.

Numbering and encodings follow what real switches publish:

- ifIndex comes from the personality's rule (SONiC ``EthernetN`` -> N+1);
- entPhysicalIndex of a transceiver is ``1000000000 + ifIndex*100`` and its DOM
  sensors add 10 (temperature), 20+lane (Tx power), 30+lane (Rx power), 40+lane
  (Tx bias), 50 (voltage): the scheme of sonic-snmpagent's ``physical_entity_sub_oid_generator``;
- sensor encodings are those of sonic-snmpagent's rfc3433 (SFF-8472 steps):
  temperature celsius/units/precision 6, voltage voltsDC/units/4, bias
  amperes/milli/3, optical power watts/milli/4 (mW, converted from dBm).
  Arista reports optical power in watts too (LibreNMS issue #4130 shows
  ``DOM RX Power Sensor for Ethernet52`` read as W); names follow the
  "DOM RX Power Sensor for PORT/LANE" pattern both vendors use.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labtest.emulation.personalities import PortView, SwitchState
from labtest.emulation.snmpagent import (
    Counter32,
    Counter64,
    Gauge32,
    Integer32,
    ObjectIdentifier,
    OctetString,
    TimeTicks,
)
from labtest.transports.mibs import (
    ENT_PHY_SENSOR_ENTRY,
    ENT_PHYSICAL_ENTRY,
    IF_ENTRY,
    IFX_ENTRY,
    LLDP_LOC_PORT_ENTRY,
    LLDP_LOCAL,
    LLDP_REM_ENTRY,
    MIB_2,
    SYSTEM,
    Oid,
)

Getter = Callable[[], Any]

CHASSIS_INDEX = 1
SHAPE_CHECK_S = 1.0  # how often the port set and module presence are re-checked
XCVR_BASE = 1_000_000_000
XCVR_STEP = 100
SENSOR_TEMP, SENSOR_TX, SENSOR_RX, SENSOR_BIAS, SENSOR_VCC = 10, 20, 30, 40, 50
SENSOR_VALUE_LIMIT = 1_000_000_000  # EntitySensorValue range (RFC 3433)
COUNTER32 = 2**32
GAUGE32_MAX = 2**32 - 1
IF_TYPE_ETHERNET = 6  # ethernetCsmacd (IANAifType)
LLDP_CHASSIS_MAC, LLDP_PORT_IFNAME = 4, 5  # LldpChassisIdSubtype / LldpPortIdSubtype
CLASS_CHASSIS, CLASS_SENSOR, CLASS_MODULE = 3, 8, 9
TRUE, FALSE = 1, 2  # TruthValue


@dataclass(frozen=True)
class SensorKind:
    label: str  # as in "DOM RX Power Sensor for Ethernet0/1"
    type: int  # EntitySensorDataType
    scale: int  # EntitySensorDataScale
    precision: int
    units: str


SENSORS = {
    SENSOR_TEMP: SensorKind("Temperature", 8, 9, 6, "C"),
    SENSOR_VCC: SensorKind("Voltage", 4, 9, 4, "V"),
    SENSOR_BIAS: SensorKind("TX Bias", 5, 8, 3, "mA"),
    SENSOR_TX: SensorKind("TX Power", 6, 8, 4, "mW"),
    SENSOR_RX: SensorKind("RX Power", 6, 8, 4, "mW"),
}


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _sensor_int(value: float, precision: int) -> int:
    raw = round(value * 10**precision)
    return max(-SENSOR_VALUE_LIMIT, min(SENSOR_VALUE_LIMIT, raw))


def dbm_to_mw(dbm: float) -> float:
    return 10.0 ** (dbm / 10.0)


class _Cache:
    """Values kept for ``ttl_s`` of wall time (0 disables it)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._data: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        if self.ttl_s <= 0:
            return make()
        now = time.monotonic()
        with self._lock:
            hit = self._data.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        value = make()
        with self._lock:
            self._data[key] = (now, value)
        return value


class SwitchMib:
    """A :class:`~labtest.emulation.snmpagent.MibProvider` for one switch."""

    def __init__(
        self,
        state: SwitchState,
        *,
        sys_descr: Callable[[], str],
        sys_object_id: Oid,
        cache_s: float = 0.5,
    ) -> None:
        self.state = state
        self._sys_descr = sys_descr
        self._sys_object_id = sys_object_id
        self._cache = _Cache(cache_s)
        self._lock = threading.Lock()
        self._shape: tuple[Any, ...] = ()
        self._keys: list[Oid] = []
        self._getters: dict[Oid, Getter] = {}
        self._checked = 0.0

    # --- MibProvider -----------------------------------------------------------------

    def get(self, oid: Oid) -> Any | None:
        getter = self._index()[1].get(tuple(oid))
        return None if getter is None else getter()

    def next(self, oid: Oid) -> tuple[Oid, Any] | None:
        keys, getters = self._index()
        position = bisect.bisect_right(keys, tuple(oid))
        while position < len(keys):
            key = keys[position]
            value = getters[key]()
            if value is not None:  # a row that is absent right now (no LLDP neighbour)
                return key, value
            position += 1
        return None

    # --- shape -----------------------------------------------------------------------

    def _index(self) -> tuple[list[Oid], dict[Oid, Getter]]:
        """The sorted OIDs and their getters; the shape is re-checked once a second."""
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= SHAPE_CHECK_S or not self._keys:
                self._checked = now
                state = self.state
                shape = (tuple(state.ports), tuple(self._lanes(p) for p in state.ports))
                if shape != self._shape:
                    self._getters = self._build()
                    self._keys = sorted(self._getters)
                    self._shape = shape
            return self._keys, self._getters

    def _lanes(self, port: str) -> int:
        return self.state.fabric.interface(self.state.name, port).lanes

    def _build(self) -> dict[Oid, Getter]:
        out: dict[Oid, Getter] = {}
        self._system(out)
        out[(*MIB_2, 2, 1, 0)] = lambda: Integer32(len(self.state.ports))  # ifNumber
        for port in self.state.ports:
            self._if_rows(out, port)
            self._lldp_rows(out, port)
            lanes = self._lanes(port)
            if lanes:
                self._entity_rows(out, port, lanes)
        self._lldp_local(out)
        self._chassis(out)
        return out

    # --- system group (RFC 3418) -------------------------------------------------------

    def _system(self, out: dict[Oid, Getter]) -> None:
        state = self.state
        out[(*SYSTEM, 1, 0)] = lambda: OctetString(self._sys_descr().encode())
        out[(*SYSTEM, 2, 0)] = lambda: ObjectIdentifier(self._sys_object_id)
        out[(*SYSTEM, 3, 0)] = self._ticks
        out[(*SYSTEM, 4, 0)] = lambda: OctetString(state.var("snmp_contact", "lab@example.net"))
        out[(*SYSTEM, 5, 0)] = lambda: OctetString(state.name)
        out[(*SYSTEM, 6, 0)] = lambda: OctetString(state.var("snmp_location", "labtest"))
        out[(*SYSTEM, 7, 0)] = lambda: Integer32(72)  # application + end-to-end layers

    def _ticks(self) -> TimeTicks:
        return TimeTicks(int(self.state.uptime_s() * 100) % COUNTER32)

    # --- IF-MIB (RFC 2863) -------------------------------------------------------------

    def _view(self, port: str) -> PortView:
        return self._cache.get(("view", port), lambda: self.state.port_view(port))

    def _if_rows(self, out: dict[Oid, Getter], port: str) -> None:
        index = self.state.if_index[port]

        def col(fn: Callable[[PortView], Any]) -> Getter:
            return lambda: fn(self._view(port))

        def c32(attr: str) -> Getter:
            return col(lambda v: Counter32(getattr(v, attr) % COUNTER32))

        def c64(attr: str) -> Getter:
            return col(lambda v: Counter64(getattr(v, attr)))

        zero32, zero64 = (lambda: Counter32(0)), (lambda: Counter64(0))
        if_table: dict[int, Getter] = {
            1: lambda: Integer32(index),
            2: lambda: OctetString(port.encode()),
            3: lambda: Integer32(IF_TYPE_ETHERNET),
            4: col(lambda v: Integer32(v.mtu_bytes)),
            5: col(lambda v: Gauge32(min(int(v.speed_gbps * 1e9), GAUGE32_MAX))),
            6: col(lambda v: OctetString(_mac_bytes(v.mac))),
            7: col(lambda v: Integer32(1 if v.admin_up else 2)),
            8: col(lambda v: Integer32(1 if v.oper_up else 2)),
            9: lambda: TimeTicks(0),
            10: c32("rx_octets"),
            11: c32("rx_packets"),
            13: c32("rx_discards"),
            14: c32("rx_errors"),
            15: zero32,
            16: c32("tx_octets"),
            17: c32("tx_packets"),
            19: c32("tx_discards"),
            20: c32("tx_errors"),
        }
        ifx_table: dict[int, Getter] = {
            1: lambda: OctetString(port.encode()),
            2: zero32,
            3: zero32,
            4: zero32,
            5: zero32,
            6: c64("rx_octets"),
            7: c64("rx_packets"),
            8: zero64,
            9: zero64,
            10: c64("tx_octets"),
            11: c64("tx_packets"),
            12: zero64,
            13: zero64,
            14: lambda: Integer32(TRUE),
            15: col(lambda v: Gauge32(int(v.speed_gbps * 1000))),
            16: lambda: Integer32(FALSE),
            17: col(lambda v: Integer32(TRUE if v.cabled else FALSE)),
            18: lambda: OctetString(self._alias(port).encode()),
            19: lambda: TimeTicks(0),
        }
        for column, getter in if_table.items():
            out[(*IF_ENTRY, column, index)] = getter
        for column, getter in ifx_table.items():
            out[(*IFX_ENTRY, column, index)] = getter

    def _alias(self, port: str) -> str:
        return self.state.descriptions.get(port, "")

    # --- LLDP-MIB (IEEE 802.1AB-2005) ----------------------------------------------------

    def _lldp_local(self, out: dict[Oid, Getter]) -> None:
        facts = self.state.fabric.device_facts(self.state.name)
        out[(*LLDP_LOCAL, 1, 0)] = lambda: Integer32(LLDP_CHASSIS_MAC)
        out[(*LLDP_LOCAL, 2, 0)] = lambda: OctetString(_mac_bytes(facts.base_mac))
        out[(*LLDP_LOCAL, 3, 0)] = lambda: OctetString(self.state.name.encode())

    def _neighbour(self, port: str) -> Any | None:
        """The LLDP neighbour on ``port``, from one cached read of the whole table."""
        table = self._cache.get(
            "lldp",
            lambda: {n.local_port: n for n in self.state.fabric.lldp_neighbours(self.state.name)},
        )
        return table.get(port)

    def _lldp_rows(self, out: dict[Oid, Getter], port: str) -> None:
        num = self.state.if_index[port]
        out[(*LLDP_LOC_PORT_ENTRY, 2, num)] = lambda: Integer32(LLDP_PORT_IFNAME)
        out[(*LLDP_LOC_PORT_ENTRY, 3, num)] = lambda: OctetString(port.encode())
        out[(*LLDP_LOC_PORT_ENTRY, 4, num)] = lambda: OctetString(port.encode())
        row = (0, num, 1)  # lldpRemTimeMark, lldpRemLocalPortNum, lldpRemIndex

        def rem(fn: Callable[[Any], Any]) -> Getter:
            def getter() -> Any:
                n = self._neighbour(port)
                return None if n is None else fn(n)

            return getter

        columns: dict[int, Getter] = {
            4: rem(lambda n: Integer32(LLDP_CHASSIS_MAC)),
            5: rem(lambda n: OctetString(_mac_bytes(n.chassis_id))),
            6: rem(lambda n: Integer32(LLDP_PORT_IFNAME)),
            7: rem(lambda n: OctetString(n.port_id.encode())),
            8: rem(lambda n: OctetString(n.port_description.encode())),
            9: rem(lambda n: OctetString(n.system_name.encode())),
            10: rem(lambda n: OctetString(self.state.peer_description(n.system_name).encode())),
        }
        for column, getter in columns.items():
            out[(*LLDP_REM_ENTRY, column, *row)] = getter

    # --- ENTITY-MIB (RFC 6933) and ENTITY-SENSOR-MIB (RFC 3433) -------------------------

    def _chassis(self, out: dict[Oid, Getter]) -> None:
        state = self.state
        facts = state.fabric.device_facts(state.name)
        values = {
            2: state.var("model", "Emulated switch"),
            3: ObjectIdentifier((0, 0)),
            4: Integer32(0),
            5: Integer32(CLASS_CHASSIS),
            6: Integer32(-1),
            7: "Chassis",
            8: state.var("hardware_rev", "A1"),
            9: "",
            10: facts.firmware_version or "",
            11: facts.serial,
            12: state.var("vendor", "LabTest"),
            13: state.var("model", "Emulated switch"),
            14: "",
            15: "",
            16: Integer32(FALSE),
        }
        for column, value in values.items():
            smi = OctetString(value.encode()) if isinstance(value, str) else value
            out[(*ENT_PHYSICAL_ENTRY, column, CHASSIS_INDEX)] = _constant(smi)

    def _entity_rows(self, out: dict[Oid, Getter], port: str, lanes: int) -> None:
        if_index = self.state.if_index[port]
        xcvr = XCVR_BASE + if_index * XCVR_STEP

        def inv(fn: Callable[[Any], str]) -> Getter:
            return lambda: OctetString(fn(self.state.fabric.transceiver(self.state.name, port)))

        module: dict[int, Getter] = {
            2: inv(lambda t: f"{t.form_factor} {t.standard} for {port}"),
            3: lambda: ObjectIdentifier((0, 0)),
            4: lambda: Integer32(CHASSIS_INDEX),
            5: lambda: Integer32(CLASS_MODULE),
            6: lambda: Integer32(if_index),
            7: lambda: OctetString(port.encode()),
            8: inv(lambda t: t.hardware_rev),
            9: inv(lambda t: t.firmware_version),
            10: lambda: OctetString(b""),
            11: inv(lambda t: t.serial),
            12: inv(lambda t: t.vendor),
            13: inv(lambda t: t.part_number),
            14: lambda: OctetString(b""),
            15: lambda: OctetString(b""),
            16: lambda: Integer32(TRUE),
        }
        for column, getter in module.items():
            out[(*ENT_PHYSICAL_ENTRY, column, xcvr)] = getter
        parts: list[tuple[int, int | None]] = [(SENSOR_TEMP, None), (SENSOR_VCC, None)]
        for n in range(1, lanes + 1):
            parts += [(SENSOR_TX, n), (SENSOR_RX, n), (SENSOR_BIAS, n)]
        for kind, lane in parts:
            self._sensor_rows(out, port, xcvr, kind, lane)

    def _sensor_rows(
        self, out: dict[Oid, Getter], port: str, xcvr: int, kind: int, lane: int | None
    ) -> None:
        sensor = SENSORS[kind]
        index = xcvr + kind + (lane or 0)
        where = f"{port}/{lane}" if lane is not None else port
        name = f"DOM {sensor.label} Sensor for {where}".encode()
        entity: dict[int, Getter] = {
            2: lambda: OctetString(name),
            3: lambda: ObjectIdentifier((0, 0)),
            4: lambda: Integer32(xcvr),
            5: lambda: Integer32(CLASS_SENSOR),
            6: lambda: Integer32(kind + (lane or 0)),
            7: lambda: OctetString(name),
            16: lambda: Integer32(FALSE),
        }
        for column in (8, 9, 10, 11, 12, 13, 14, 15):
            entity[column] = lambda: OctetString(b"")
        for column, getter in entity.items():
            out[(*ENT_PHYSICAL_ENTRY, column, index)] = getter
        values: dict[int, Getter] = {
            1: lambda: Integer32(sensor.type),
            2: lambda: Integer32(sensor.scale),
            3: lambda: Integer32(sensor.precision),
            4: lambda: Integer32(self._reading(port, kind, lane)),
            5: lambda: Integer32(1),  # ok
            6: lambda: OctetString(sensor.units.encode()),
            7: self._ticks,
            8: lambda: Gauge32(0),  # updated on request
        }
        for column, getter in values.items():
            out[(*ENT_PHY_SENSOR_ENTRY, column, index)] = getter

    def _reading(self, port: str, kind: int, lane: int | None) -> int:
        dom = self._cache.get(("dom", port), lambda: self.state.fabric.dom(self.state.name, port))
        precision = SENSORS[kind].precision
        if kind == SENSOR_TEMP:
            return _sensor_int(dom.temperature_c, precision)
        if kind == SENSOR_VCC:
            return _sensor_int(dom.voltage_v, precision)
        assert lane is not None
        reading = dom.lanes[lane - 1]
        if kind == SENSOR_BIAS:
            return _sensor_int(reading.bias_ma, precision)  # milli-amperes
        dbm = reading.tx_power_dbm if kind == SENSOR_TX else reading.rx_power_dbm
        return _sensor_int(dbm_to_mw(dbm), precision)  # milli-watts


def _constant(value: Any) -> Getter:
    """A getter of a value fixed when the MIB is built."""
    return lambda: value
