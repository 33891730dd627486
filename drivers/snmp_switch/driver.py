"""Generic SNMP switch: what any vendor's agent offers through the standard MIBs.

- facts: SNMPv2-MIB system group, plus the chassis row of ENTITY-MIB
  (entPhysicalClass ``chassis``) for model, serial, vendor and software;
- interfaces and counters: IF-MIB ifTable/ifXTable, 64-bit (HC) counters only,
  because 32-bit packet counters wrap within seconds at 100G and above;
- LLDP neighbours: LLDP-MIB (IEEE 802.1AB-2005) lldpRemTable, with the local
  port named through lldpLocPortTable or ifName; the newest row per port wins
  (largest lldpRemTimeMark), older ones are named;
- transceivers: ENTITY-SENSOR-MIB sensors found under each optic in
  ENTITY-MIB. The MIB has no thresholds, so ``thresholds`` stays empty.

Sensors name their port in free text (``DOM RX Power Sensor for Ethernet0/1``
on SONiC, ``... for Ethernet1`` under ``Lane 0 for Xcvr for Ethernet1`` on EOS),
so a sensor belongs to the interface whose ifName appears in its description
or in one of its containers'. A ``/N`` after a port name is lane N; a ``Lane N``
container counting from 0 is renumbered from 1, like every lane in labtest.
Power in watts becomes dBm (``-inf`` for 0 W), bias in amperes becomes mA.

Only ``get`` and ``walk`` are used, so a recording replays the whole driver.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from labtest import connect
from labtest.capabilities.switch import Facts, InterfaceCounters, InterfaceStatus, LldpNeighbor
from labtest.capabilities.transceiver import Transceiver, mw_to_dbm
from labtest.drivers.common.cells import lane_doms
from labtest.drivers.common.lldp import newest_per_port
from labtest.errors import ParseError
from labtest.testbed.model import Device, Testbed
from labtest.transports import mibs

#: IANA enterprise numbers (sysObjectID 1.3.6.1.4.1.N) of common switch vendors
ENTERPRISES = {
    9: "Cisco",
    674: "Dell",
    2636: "Juniper",
    6027: "Dell (Force10)",
    8072: "net-snmp",
    11863: "TP-Link",
    25506: "HPE",
    30065: "Arista",
    33049: "Mellanox",
    40310: "Cumulus",
}
_ENTERPRISE = re.compile(r"^1\.3\.6\.1\.4\.1\.(\d+)")
_VERSION = re.compile(r"[Vv]ersion[:\s]+([\w.()\-]+)")
_TOKEN = re.compile(r"[A-Za-z][\w./:-]*\d")
_LANE_WORD = re.compile(r"\b[Ll]ane\s*(\d+)")
MAX_REPETITIONS = 50
_CLASS_CHASSIS = 3
_STATUS_OK = 1
_SENSOR_CELSIUS, _SENSOR_VOLTS_DC, _SENSOR_AMPERES, _SENSOR_WATTS, _SENSOR_OTHER = 8, 4, 5, 6, 1


class SnmpSwitch:
    """A switch known only through its SNMP agent (v2c or v3, from the testbed)."""

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        self.name = name
        self.device = device
        self.testbed = testbed
        self._snmp: Any = None

    def __repr__(self) -> str:
        return f"SnmpSwitch({self.name!r})"

    @property
    def snmp(self) -> Any:
        if self._snmp is None:
            self._snmp = connect.snmp(self.name, self.device)
        return self._snmp

    def close(self) -> None:
        if self._snmp is not None:
            self._snmp.close()
            self._snmp = None

    # --- reading ---------------------------------------------------------------

    def _column(self, column: str, rows: int | None = None) -> dict[str, Any]:
        """``{row index: value}`` of one table column (an absent column is empty).

        ``rows`` (how many rows the table probably has) sizes each GETBULK: the
        agent then answers a small table in one PDU without padding it with up
        to 50 objects from beyond the column, which costs time on both sides.
        """
        prefix = mibs.oid(column)
        repetitions = MAX_REPETITIONS if rows is None else max(4, min(MAX_REPETITIONS, rows + 1))
        found = self.snmp.walk(prefix, repetitions)
        return {oid[len(prefix) + 1 :]: value for oid, value in found}

    def _columns(self, *columns: str, rows: int | None = None) -> dict[str, dict[str, Any]]:
        return {column: self._column(column, rows) for column in columns}

    def _if_names(self) -> dict[str, str]:
        """ifIndex -> ifName (ifDescr where ifName is empty)."""
        names = {i: str(v) for i, v in self._column("ifName").items() if v}
        for index, descr in self._column("ifDescr", len(names)).items():
            names.setdefault(index, str(descr))
        return names

    # --- facts -------------------------------------------------------------------

    def facts(self) -> Facts:
        wanted = [mibs.oid(f"{n}.0") for n in ("sysDescr", "sysObjectID", "sysUpTime", "sysName")]
        system = self.snmp.get(*wanted, missing_ok=True)
        descr, object_id, uptime, sys_name = (system.get(o) for o in wanted)
        if descr is None and sys_name is None:
            raise ParseError(self.name, "no SNMPv2-MIB system group", raw=repr(system))
        chassis = self._chassis()
        vendor = chassis.get("entPhysicalMfgName")
        if not vendor and object_id and (m := _ENTERPRISE.match(str(object_id))):
            vendor = ENTERPRISES.get(int(m.group(1)))
        version = chassis.get("entPhysicalSoftwareRev")
        if not version and descr and (m := _VERSION.search(str(descr))):
            version = m.group(1)
        return Facts(
            vendor=_str(vendor),
            model=_str(chassis.get("entPhysicalModelName")),
            os_version=_str(version),
            serial=_str(chassis.get("entPhysicalSerialNum")),
            hostname=_str(sys_name),
            uptime_s=uptime / 100.0 if isinstance(uptime, int) else None,
            hardware_rev=_str(chassis.get("entPhysicalHardwareRev")),
        )

    def _chassis(self) -> dict[str, Any]:
        """The ENTITY-MIB row of the (first) chassis, by column name; {} without ENTITY-MIB."""
        classes = self._column("entPhysicalClass")
        chassis = sorted((int(i) for i, c in classes.items() if c == _CLASS_CHASSIS))
        if not chassis:
            return {}
        columns = [
            "entPhysicalMfgName",
            "entPhysicalModelName",
            "entPhysicalSerialNum",
            "entPhysicalSoftwareRev",
            "entPhysicalHardwareRev",
        ]
        oids = [mibs.oid(f"{c}.{chassis[0]}") for c in columns]
        row = self.snmp.get(*oids, missing_ok=True)
        return {c: row.get(o) for c, o in zip(columns, oids, strict=True)}

    # --- interfaces and counters -------------------------------------------------

    def interfaces(self) -> dict[str, InterfaceStatus]:
        names = self._if_names()
        if not names:
            raise ParseError(self.name, "IF-MIB has no interfaces (ifName/ifDescr empty)")
        t = self._columns(
            "ifAdminStatus", "ifOperStatus", "ifHighSpeed", "ifMtu", "ifAlias", rows=len(names)
        )
        out: dict[str, InterfaceStatus] = {}
        for index, name in names.items():
            admin = _enum(mibs.IF_ADMIN_STATUS, t["ifAdminStatus"].get(index))
            oper = _enum(mibs.IF_OPER_STATUS, t["ifOperStatus"].get(index))
            speed_mbps = t["ifHighSpeed"].get(index)
            out[name] = InterfaceStatus(
                name=name,
                admin_up=None if admin is None else admin == "up",
                oper_up=None if oper is None else oper == "up",
                speed_gbps=speed_mbps / 1000.0 if isinstance(speed_mbps, int) else None,
                mtu_bytes=t["ifMtu"].get(index),
                alias=_str(t["ifAlias"].get(index)),
                state=oper,
            )
        return out

    def counters(self) -> dict[str, InterfaceCounters]:
        names = self._if_names()
        if not names:
            raise ParseError(self.name, "IF-MIB has no interfaces (ifName/ifDescr empty)")
        t = self._columns(*_COUNTER_COLUMNS.values(), rows=len(names))
        out: dict[str, InterfaceCounters] = {}
        for index, name in names.items():
            values = {f: t[c].get(index) for f, c in _COUNTER_COLUMNS.items()}
            for direction, columns in _PACKET_COLUMNS.items():
                parts = [t[c].get(index) for c in columns]
                total = None if None in parts else sum(v for v in parts if v is not None)
                values[f"{direction}_packets"] = total
            out[name] = InterfaceCounters(**values)
        return out

    # --- LLDP ----------------------------------------------------------------------

    def lldp_neighbors(self) -> dict[str, LldpNeighbor]:
        """Remote rows are indexed ``timeMark.localPortNum.remIndex``; per port the row with
        the largest lldpRemTimeMark (sysUpTime when it was learnt: the newest) wins, and
        the other neighbours still in the table are named (``older_neighbours``)."""
        port_ids = self._column("lldpRemPortId")
        t = self._columns(
            "lldpRemSysName",
            "lldpRemPortIdSubtype",
            "lldpRemPortDesc",
            "lldpRemChassisId",
            rows=len(port_ids),
        )
        t["lldpRemPortId"] = port_ids
        local = self._local_ports()
        rows = []
        for index in sorted(t["lldpRemPortId"], key=_index_key):
            parts = index.split(".")
            if len(parts) != 3 or not all(p.isdigit() for p in parts):
                raise ParseError(self.name, f"lldpRemTable index {index!r} is not 3 numbers")
            port = local.get(parts[1], parts[1])
            subtype = _enum(mibs.LLDP_PORT_ID_SUBTYPE, t["lldpRemPortIdSubtype"].get(index))
            port_id = _str(t["lldpRemPortId"][index])
            descr = _str(t["lldpRemPortDesc"].get(index))
            neighbour = LldpNeighbor(
                remote_system=_str(t["lldpRemSysName"].get(index)),
                remote_port=descr if subtype == "macAddress" and descr else port_id,
                remote_port_description=descr,
                remote_chassis_id=_mac(t["lldpRemChassisId"].get(index)),
            )
            rows.append((port, neighbour, (int(parts[0]), int(parts[2]))))
        return newest_per_port(rows)

    def _local_ports(self) -> dict[str, str]:
        """lldpLocPortNum -> interface name: the first of lldpLocPortId, lldpLocPortDesc
        and ifName[num] that is a known interface, else the first non-empty one."""
        names = self._if_names()
        known = set(names.values())
        ids = self._column("lldpLocPortId", len(names))
        descrs = self._column("lldpLocPortDesc", len(names))
        out: dict[str, str] = {}
        for num in set(ids) | set(descrs) | set(names):
            candidates = [_str(ids.get(num)), _str(descrs.get(num)), names.get(num)]
            present = [c for c in candidates if c]
            if present:
                out[num] = next((c for c in present if c in known), present[0])
        return out

    # --- transceivers ------------------------------------------------------------------

    def transceivers(self) -> dict[str, Transceiver]:
        kinds = self._column("entPhySensorType")
        sensors = self._columns(
            "entPhySensorScale",
            "entPhySensorPrecision",
            "entPhySensorValue",
            "entPhySensorOperStatus",
            "entPhySensorUnitsDisplay",
            rows=len(kinds),
        )
        contained_in = self._column("entPhysicalContainedIn")
        entity = self._columns(
            "entPhysicalDescr",
            "entPhysicalName",
            "entPhysicalMfgName",
            "entPhysicalModelName",
            "entPhysicalSerialNum",
            rows=len(contained_in),
        )
        entity["entPhysicalContainedIn"] = contained_in
        known = set(self._if_names().values())
        modules: dict[str, _Module] = {}
        for index, kind in kinds.items():
            value = sensors["entPhySensorValue"].get(index)
            if sensors["entPhySensorOperStatus"].get(index, _STATUS_OK) != _STATUS_OK:
                continue
            chain = _ancestry(index, entity["entPhysicalContainedIn"])
            found = _port_and_lane(chain, entity, known)
            if found is None or not isinstance(value, int):
                continue  # a chassis sensor, or no reading
            port, lane, lane_from_word = found
            reading = mibs.sensor_reading(
                value,
                sensors["entPhySensorScale"].get(index, 9),
                sensors["entPhySensorPrecision"].get(index, 0),
            )
            text = " ".join(_texts(index, entity)).lower()
            units = str(sensors["entPhySensorUnitsDisplay"].get(index) or "").lower()
            module = modules.setdefault(port, _Module(_inventory(chain, entity)))
            module.add(kind, text, units, reading, lane, lane_from_word)
        return {port: m.record() for port, m in sorted(modules.items())}


# --- helpers ---------------------------------------------------------------------------

_COUNTER_COLUMNS = {
    "rx_octets": "ifHCInOctets",
    "tx_octets": "ifHCOutOctets",
    "rx_errors": "ifInErrors",
    "rx_discards": "ifInDiscards",
    "tx_errors": "ifOutErrors",
    "tx_discards": "ifOutDiscards",
    "rx_unicast_packets": "ifHCInUcastPkts",
    "rx_multicast_packets": "ifHCInMulticastPkts",
    "rx_broadcast_packets": "ifHCInBroadcastPkts",
    "tx_unicast_packets": "ifHCOutUcastPkts",
    "tx_multicast_packets": "ifHCOutMulticastPkts",
    "tx_broadcast_packets": "ifHCOutBroadcastPkts",
}
_PACKET_COLUMNS = {
    "rx": ("ifHCInUcastPkts", "ifHCInMulticastPkts", "ifHCInBroadcastPkts"),
    "tx": ("ifHCOutUcastPkts", "ifHCOutMulticastPkts", "ifHCOutBroadcastPkts"),
}


def _str(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None


def _mac(value: Any) -> str | None:
    """A 6-byte chassis id given as ``0x...`` hex becomes ``aa:bb:cc:dd:ee:ff``."""
    text = _str(value)
    if text and re.fullmatch(r"0x[0-9a-fA-F]{12}", text):
        return ":".join(text[i : i + 2] for i in range(2, 14, 2)).lower()
    return text


def _enum(names: Mapping[Any, str], value: Any) -> str | None:
    """A MIB enumeration's name for ``value`` (None: the agent gave no or an unknown value)."""
    return names.get(value)


def _index_key(index: str) -> tuple[int, ...]:
    return tuple(int(x) for x in index.split(".") if x.isdigit())


def _ancestry(index: str, contained_in: dict[str, Any], depth: int = 6) -> list[str]:
    """``index`` and the entities containing it, innermost first (bounded against loops)."""
    chain = [index]
    while len(chain) < depth:
        parent = contained_in.get(chain[-1])
        if not parent or str(parent) in chain:
            break
        chain.append(str(parent))
    return chain


def _texts(index: str, entity: dict[str, dict[str, Any]]) -> list[str]:
    return [str(entity[c].get(index) or "") for c in ("entPhysicalDescr", "entPhysicalName")]


def _port_and_lane(
    chain: list[str], entity: dict[str, dict[str, Any]], known: set[str]
) -> tuple[str, int | None, bool] | None:
    """(port, lane, whether the lane came from a "Lane N" word) for a sensor, from the
    innermost text of its ancestry that names a known interface."""
    texts = [text for index in chain for text in _texts(index, entity)]
    lane_word = next((int(m.group(1)) for t in texts if (m := _LANE_WORD.search(t))), None)
    for text in texts:
        for token in _TOKEN.findall(text):
            if token in known:
                return token, lane_word, lane_word is not None
            base, slash, lane = token.rpartition("/")
            if slash and base in known and lane.isdigit():
                return base, int(lane), False
    return None


def _inventory(chain: list[str], entity: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """Vendor, part number and serial of the first container that carries them (the optic)."""
    for index in chain[1:]:
        serial = _str(entity["entPhysicalSerialNum"].get(index))
        model = _str(entity["entPhysicalModelName"].get(index))
        if serial or model:
            return {
                "vendor": _str(entity["entPhysicalMfgName"].get(index)),
                "part_number": model,
                "serial": serial,
            }
    return {"vendor": None, "part_number": None, "serial": None}


class _Module:
    """Readings of one optic as they are found, sensor by sensor."""

    def __init__(self, inventory: dict[str, str | None]) -> None:
        self.inventory = inventory
        self.temperature_c: float | None = None
        self.voltage_v: float | None = None
        self.lanes: dict[tuple[int | None, bool], dict[str, float]] = {}

    def add(
        self, kind: int, text: str, units: str, value: float, lane: int | None, word: bool
    ) -> None:
        if kind == _SENSOR_CELSIUS:
            self.temperature_c = value
            return
        if kind == _SENSOR_VOLTS_DC:
            self.voltage_v = value
            return
        if kind == _SENSOR_AMPERES:
            field, reading = "tx_bias_ma", value * 1000.0
        elif kind == _SENSOR_WATTS or (kind == _SENSOR_OTHER and units == "dbm"):
            direction = _direction(text)
            if direction is None:
                return
            field = f"{direction}_power_dbm"
            reading = mw_to_dbm(value * 1000.0) if kind == _SENSOR_WATTS else value
        else:
            return
        self.lanes.setdefault((lane, word), {})[field] = reading

    def record(self) -> Transceiver:
        from_zero = any(word and lane == 0 for lane, word in self.lanes)
        lanes: dict[int, dict[str, float]] = {}
        for (lane, word), values in self.lanes.items():
            number = 1 if lane is None else lane + 1 if word and from_zero else lane
            lanes.setdefault(number, {}).update(values)
        return Transceiver(
            temperature_c=self.temperature_c,
            voltage_v=self.voltage_v,
            lanes=lane_doms(lanes),
            vendor=self.inventory["vendor"],
            part_number=self.inventory["part_number"],
            serial=self.inventory["serial"],
        )


def _direction(text: str) -> str | None:
    if re.search(r"\b(?:rx|receive[rd]?)\b", text):
        return "rx"
    if re.search(r"\b(?:tx|transmit(?:ted|ter)?)\b", text):
        return "tx"
    return None
