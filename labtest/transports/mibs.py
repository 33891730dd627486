"""The few MIB objects labtest reads, as numeric OIDs with their names.

pysnmp 7 does not bundle IF-MIB, LLDP-MIB or the ENTITY MIBs, and compiling
ASN.1 at run time would add pysmi and a MIB download to every lab. The handful
of objects the drivers need are therefore written here, numbers taken from the
defining documents:

- SNMPv2-MIB system group: RFC 3418 section 2 (``mib-2.1``);
- IF-MIB ifTable (``mib-2.2.2``) and ifXTable (``ifMIBObjects.1``): RFC 2863;
- LLDP-MIB (``iso.0.8802.1.1.2``): IEEE 802.1AB-2005, lldpLocPortTable and
  lldpRemTable;
- ENTITY-MIB entPhysicalTable (``mib-2.47.1.1.1``): RFC 4133 / RFC 6933;
- ENTITY-SENSOR-MIB entPhySensorTable (``mib-2.99.1.1``): RFC 3433.

PDU outlet objects live with the PDU driver, not here.

Names resolve both ways: ``oid("IF-MIB::ifHCInOctets.5")`` gives
``"1.3.6.1.2.1.31.1.1.1.6.5"`` and ``name()`` of that gives the name back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Oid = tuple[int, ...]

MIB_2: Oid = (1, 3, 6, 1, 2, 1)
SYSTEM: Oid = (*MIB_2, 1)
IF_TABLE: Oid = (*MIB_2, 2, 2)
IF_ENTRY: Oid = (*IF_TABLE, 1)
IFX_TABLE: Oid = (*MIB_2, 31, 1, 1)
IFX_ENTRY: Oid = (*IFX_TABLE, 1)
LLDP_MIB: Oid = (1, 0, 8802, 1, 1, 2)
LLDP_LOCAL: Oid = (*LLDP_MIB, 1, 3)
LLDP_LOC_PORT_ENTRY: Oid = (*LLDP_LOCAL, 7, 1)
LLDP_REM_TABLE: Oid = (*LLDP_MIB, 1, 4, 1)
LLDP_REM_ENTRY: Oid = (*LLDP_REM_TABLE, 1)
ENT_PHYSICAL_TABLE: Oid = (*MIB_2, 47, 1, 1, 1)
ENT_PHYSICAL_ENTRY: Oid = (*ENT_PHYSICAL_TABLE, 1)
ENT_PHY_SENSOR_TABLE: Oid = (*MIB_2, 99, 1, 1)
ENT_PHY_SENSOR_ENTRY: Oid = (*ENT_PHY_SENSOR_TABLE, 1)


def _columns(entry: Oid, columns: Mapping[str, int]) -> dict[str, Oid]:
    return {column: (*entry, number) for column, number in columns.items()}


#: module -> object name -> OID (tables, entries and columns; scalars without ``.0``)
MODULES: dict[str, dict[str, Oid]] = {
    "SNMPv2-MIB": {
        "system": SYSTEM,
        **_columns(
            SYSTEM,
            {
                "sysDescr": 1,
                "sysObjectID": 2,
                "sysUpTime": 3,
                "sysContact": 4,
                "sysName": 5,
                "sysLocation": 6,
                "sysServices": 7,
            },
        ),
    },
    "IF-MIB": {
        "interfaces": (*MIB_2, 2),
        "ifNumber": (*MIB_2, 2, 1),
        "ifTable": IF_TABLE,
        "ifEntry": IF_ENTRY,
        **_columns(
            IF_ENTRY,
            {
                "ifIndex": 1,
                "ifDescr": 2,
                "ifType": 3,
                "ifMtu": 4,
                "ifSpeed": 5,
                "ifPhysAddress": 6,
                "ifAdminStatus": 7,
                "ifOperStatus": 8,
                "ifLastChange": 9,
                "ifInOctets": 10,
                "ifInUcastPkts": 11,
                "ifInDiscards": 13,
                "ifInErrors": 14,
                "ifInUnknownProtos": 15,
                "ifOutOctets": 16,
                "ifOutUcastPkts": 17,
                "ifOutDiscards": 19,
                "ifOutErrors": 20,
            },
        ),
        "ifMIB": (*MIB_2, 31),
        "ifXTable": IFX_TABLE,
        "ifXEntry": IFX_ENTRY,
        **_columns(
            IFX_ENTRY,
            {
                "ifName": 1,
                "ifInMulticastPkts": 2,
                "ifInBroadcastPkts": 3,
                "ifOutMulticastPkts": 4,
                "ifOutBroadcastPkts": 5,
                "ifHCInOctets": 6,
                "ifHCInUcastPkts": 7,
                "ifHCInMulticastPkts": 8,
                "ifHCInBroadcastPkts": 9,
                "ifHCOutOctets": 10,
                "ifHCOutUcastPkts": 11,
                "ifHCOutMulticastPkts": 12,
                "ifHCOutBroadcastPkts": 13,
                "ifLinkUpDownTrapEnable": 14,
                "ifHighSpeed": 15,
                "ifPromiscuousMode": 16,
                "ifConnectorPresent": 17,
                "ifAlias": 18,
                "ifCounterDiscontinuityTime": 19,
            },
        ),
    },
    "LLDP-MIB": {
        "lldpMIB": LLDP_MIB,
        "lldpLocalSystemData": LLDP_LOCAL,
        **_columns(
            LLDP_LOCAL,
            {"lldpLocChassisIdSubtype": 1, "lldpLocChassisId": 2, "lldpLocSysName": 3},
        ),
        "lldpLocPortTable": (*LLDP_LOCAL, 7),
        "lldpLocPortEntry": LLDP_LOC_PORT_ENTRY,
        **_columns(
            LLDP_LOC_PORT_ENTRY,
            {"lldpLocPortNum": 1, "lldpLocPortIdSubtype": 2, "lldpLocPortId": 3,
             "lldpLocPortDesc": 4},
        ),
        "lldpRemTable": LLDP_REM_TABLE,
        "lldpRemEntry": LLDP_REM_ENTRY,
        **_columns(
            LLDP_REM_ENTRY,
            {
                "lldpRemTimeMark": 1,
                "lldpRemLocalPortNum": 2,
                "lldpRemIndex": 3,
                "lldpRemChassisIdSubtype": 4,
                "lldpRemChassisId": 5,
                "lldpRemPortIdSubtype": 6,
                "lldpRemPortId": 7,
                "lldpRemPortDesc": 8,
                "lldpRemSysName": 9,
                "lldpRemSysDesc": 10,
            },
        ),
    },
    "ENTITY-MIB": {
        "entPhysicalTable": ENT_PHYSICAL_TABLE,
        "entPhysicalEntry": ENT_PHYSICAL_ENTRY,
        **_columns(
            ENT_PHYSICAL_ENTRY,
            {
                "entPhysicalIndex": 1,
                "entPhysicalDescr": 2,
                "entPhysicalVendorType": 3,
                "entPhysicalContainedIn": 4,
                "entPhysicalClass": 5,
                "entPhysicalParentRelPos": 6,
                "entPhysicalName": 7,
                "entPhysicalHardwareRev": 8,
                "entPhysicalFirmwareRev": 9,
                "entPhysicalSoftwareRev": 10,
                "entPhysicalSerialNum": 11,
                "entPhysicalMfgName": 12,
                "entPhysicalModelName": 13,
                "entPhysicalAlias": 14,
                "entPhysicalAssetID": 15,
                "entPhysicalIsFRU": 16,
            },
        ),
    },
    "ENTITY-SENSOR-MIB": {
        "entPhySensorTable": ENT_PHY_SENSOR_TABLE,
        "entPhySensorEntry": ENT_PHY_SENSOR_ENTRY,
        **_columns(
            ENT_PHY_SENSOR_ENTRY,
            {
                "entPhySensorType": 1,
                "entPhySensorScale": 2,
                "entPhySensorPrecision": 3,
                "entPhySensorValue": 4,
                "entPhySensorOperStatus": 5,
                "entPhySensorUnitsDisplay": 6,
                "entPhySensorValueTimeStamp": 7,
                "entPhySensorValueUpdateRate": 8,
            },
        ),
    },
}

# --- enumerations the drivers decode -----------------------------------------

IF_ADMIN_STATUS = {1: "up", 2: "down", 3: "testing"}
IF_OPER_STATUS = {
    1: "up", 2: "down", 3: "testing", 4: "unknown", 5: "dormant", 6: "notPresent",
    7: "lowerLayerDown",
}
#: LldpChassisIdSubtype and LldpPortIdSubtype (IEEE 802.1AB-2005 LLDP-MIB)
LLDP_CHASSIS_ID_SUBTYPE = {
    1: "chassisComponent", 2: "interfaceAlias", 3: "portComponent", 4: "macAddress",
    5: "networkAddress", 6: "interfaceName", 7: "local",
}
LLDP_PORT_ID_SUBTYPE = {
    1: "interfaceAlias", 2: "portComponent", 3: "macAddress", 4: "networkAddress",
    5: "interfaceName", 6: "agentCircuitId", 7: "local",
}
ENT_PHYSICAL_CLASS = {
    1: "other", 2: "unknown", 3: "chassis", 4: "backplane", 5: "container", 6: "powerSupply",
    7: "fan", 8: "sensor", 9: "module", 10: "port", 11: "stack", 12: "cpu",
}
#: EntitySensorDataType (RFC 3433)
ENT_SENSOR_TYPE = {
    1: "other", 2: "unknown", 3: "voltsAC", 4: "voltsDC", 5: "amperes", 6: "watts",
    7: "hertz", 8: "celsius", 9: "percentRH", 10: "rpm", 11: "cmm", 12: "truthvalue",
}
#: EntitySensorDataScale (RFC 3433): value v means 10^(3*(v-9)); names as the RFC spells them
ENT_SENSOR_SCALE = {
    1: "yocto", 2: "zepto", 3: "atto", 4: "femto", 5: "pico", 6: "nano", 7: "micro",
    8: "milli", 9: "units", 10: "kilo", 11: "mega", 12: "giga", 13: "tera", 14: "exa",
    15: "peta", 16: "zetta", 17: "yotta",
}
ENT_SENSOR_STATUS = {1: "ok", 2: "unavailable", 3: "nonoperational"}


def sensor_reading(value: int, scale: int, precision: int) -> float:
    """An entPhySensorValue in base units (RFC 3433 fixed point).

    A precision 1..9 is the number of decimal places folded into the integer;
    -8..0 only says how many digits are accurate, so it does not scale. Values
    outside the MIB's ranges are rejected rather than multiplied out.
    """
    if scale not in ENT_SENSOR_SCALE or not -8 <= precision <= 9:
        raise ValueError(f"scale {scale} / precision {precision} outside RFC 3433 ranges")
    decimals = max(precision, 0)
    return value * 10.0 ** (3 * (scale - 9) - decimals)


# --- name <-> OID ------------------------------------------------------------

_BY_NAME: dict[str, tuple[str, Oid]] = {}
_BY_OID: dict[Oid, str] = {}
for _module, _objects in MODULES.items():
    for _name, _oid in _objects.items():
        _BY_NAME[f"{_module}::{_name}"] = (_name, _oid)
        _BY_NAME[_name] = (_name, _oid)  # bare names are unique across these modules
        _BY_OID[_oid] = f"{_module}::{_name}"
_LONGEST = max(len(o) for o in _BY_OID)


def _parse_numeric(text: str) -> Oid:
    parts = text.strip().lstrip(".").split(".")
    try:
        numbers = tuple(int(p) for p in parts)
    except ValueError:
        raise KeyError(f"not a numeric OID or known MIB name: {text!r}") from None
    if not numbers or any(n < 0 for n in numbers):
        raise KeyError(f"not a numeric OID: {text!r}")
    return numbers


def oid_tuple(text: str | Iterable[int]) -> Oid:
    """``"IF-MIB::ifHCInOctets.5"``, ``"ifHCInOctets.5"`` or ``"1.3.6..."`` as a tuple.

    Raises ``KeyError`` for a name not in :data:`MODULES`.
    """
    if not isinstance(text, str):
        return tuple(int(n) for n in text)
    text = text.strip()
    if text.lstrip(".")[:1].isdigit():
        return _parse_numeric(text)
    base, _, suffix = text.partition(".")
    if "::" in text:
        module, _, rest = text.partition("::")
        base, _, suffix = rest.partition(".")
        base = f"{module}::{base}"
    if base not in _BY_NAME:
        raise KeyError(f"unknown MIB object {text!r} (see labtest.transports.mibs.MODULES)")
    return _BY_NAME[base][1] + (_parse_numeric(suffix) if suffix else ())


def oid(text: str | Iterable[int]) -> str:
    """Dotted numeric OID (no leading dot) for a name, numeric text or tuple."""
    return ".".join(str(n) for n in oid_tuple(text))


def name(numeric: str | Iterable[int]) -> str:
    """``"IF-MIB::ifHCInOctets.5"`` for ``"1.3.6.1.2.1.31.1.1.1.6.5"``.

    The longest known prefix wins; an OID outside the known objects comes back
    numeric, so the result is always printable.
    """
    numbers = oid_tuple(numeric)
    for length in range(min(len(numbers), _LONGEST), 0, -1):
        known = _BY_OID.get(numbers[:length])
        if known is not None:
            suffix = numbers[length:]
            return known + "".join(f".{n}" for n in suffix)
    return ".".join(str(n) for n in numbers)


def index_of(numeric: str | Iterable[int], column: str | Iterable[int]) -> Oid:
    """The instance part of ``numeric`` under ``column`` (the table row index)."""
    numbers, prefix = oid_tuple(numeric), oid_tuple(column)
    if numbers[: len(prefix)] != prefix:
        raise ValueError(f"{oid(numbers)} is not under {oid(prefix)}")
    return numbers[len(prefix):]
