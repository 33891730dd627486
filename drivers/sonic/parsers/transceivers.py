"""SONiC transceivers: EEPROM with DOM and thresholds (units kept with values) and PM."""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtest.capabilities.switch import (
    PmParameter,
    TransceiverPm,
)
from labtest.capabilities.transceiver import Threshold, Transceiver
from labtest.drivers.common.cells import NA as _NA
from labtest.drivers.common.cells import cell_float as _float
from labtest.drivers.common.cells import cell_text as _text
from labtest.drivers.common.cells import in_field_unit, lane_doms
from labtest.drivers.sonic.parsers._common import _SEPARATOR, _sonic
from labtest.parsing import Garbled as _Garbled

# --- transceivers ------------------------------------------------------------

_PORT_HEADER = re.compile(r"^(?P<port>\S+): SFP (?P<rest>.*)$")
_INDENTED_KV = re.compile(r"^(?P<indent>\s+)(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_MEASURE = re.compile(
    r"^(?P<num>[-+]?(?:inf|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))\s*(?P<unit>dBm|mW|mA|C|Volts|V)?$"
)
_LANE_KEY = re.compile(r"^(RX|TX)(\d+)(Power|Bias)$")
_THRESHOLD_KEY = re.compile(r"^(RxPower|TxPower|TxBias|Temp|Vcc)(High|Low)(Alarm|Warning)$")
_THRESHOLD_QUANTITY = {
    "RxPower": "rx_power_dbm",
    "TxPower": "tx_power_dbm",
    "TxBias": "tx_bias_ma",
    "Temp": "temperature_c",
    "Vcc": "voltage_v",
}
_SECTIONS = {
    "ChannelMonitorValues",
    "ChannelThresholdValues",
    "ModuleMonitorValues",
    "ModuleThresholdValues",
}


def _measure(value: str, field: str) -> float | None:
    """``-1.1936dBm`` / ``3.2824Volts`` / ``-infdBm`` / ``N/A`` as ``field``'s value or None;
    a power printed in mW is converted to the dBm the field carries."""
    if value.strip() in _NA:
        return None
    m = _MEASURE.match(value.strip())
    if not m:
        raise _Garbled(f"unreadable DOM value {value!r}")
    return in_field_unit(float(m["num"]), m["unit"], field)


@dataclass
class _Module:
    present: bool
    info: dict[str, str]
    lanes: dict[int, dict[str, float | None]]
    thresholds: dict[str, dict[str, float | None]]
    temperature_c: float | None = None
    voltage_v: float | None = None


def _module_record(m: _Module) -> Transceiver:
    if not m.present:
        return Transceiver(present=False)
    info = m.info
    if not any(info.get(k) for k in ("Vendor Name", "Vendor PN", "Vendor SN")) and not m.lanes:
        raise _Garbled("module reported present but no inventory or DOM lines were read")
    media = next(
        (
            _text(info.get(k))
            for k in ("10/40G Ethernet Compliance Code", "Extended Specification Compliance")
            if _text(info.get(k)) and info.get(k) != "Extended"
        ),
        None,
    )
    thresholds = {
        quantity: Threshold(
            low_alarm=levels.get("LowAlarm"),
            low_warn=levels.get("LowWarning"),
            high_warn=levels.get("HighWarning"),
            high_alarm=levels.get("HighAlarm"),
        )
        for quantity, levels in m.thresholds.items()
    }
    lanes = lane_doms(m.lanes)
    return Transceiver(
        temperature_c=m.temperature_c,
        voltage_v=m.voltage_v,
        lanes=lanes,
        thresholds=thresholds,
        vendor=_text(info.get("Vendor Name")),
        part_number=_text(info.get("Vendor PN")),
        serial=_text(info.get("Vendor SN")),
        firmware=_text(info.get("Active Firmware")),
        media_type=media,
        identifier=_text(info.get("Identifier")),
    )


def _read_dom_line(module: _Module, section: str, key: str, value: str) -> None:
    if section == "ChannelMonitorValues":
        m = _LANE_KEY.match(key)
        if not m:
            raise _Garbled(f"unexpected channel value {key!r}")
        field = {"RXPower": "rx_power_dbm", "TXPower": "tx_power_dbm", "TXBias": "tx_bias_ma"}[
            m.group(1) + m.group(3)
        ]
        module.lanes.setdefault(int(m.group(2)), {})[field] = _measure(value, field)
    elif section == "ModuleMonitorValues":
        if key == "Temperature":
            module.temperature_c = _measure(value, "temperature_c")
        elif key == "Vcc":
            module.voltage_v = _measure(value, "voltage_v")
    else:  # a threshold section
        m = _THRESHOLD_KEY.match(key)
        if not m:
            raise _Garbled(f"unexpected threshold {key!r}")
        quantity = _THRESHOLD_QUANTITY[m.group(1)]
        module.thresholds.setdefault(quantity, {})[m.group(2) + m.group(3)] = _measure(
            value, quantity
        )


EEPROM_COMMANDS = (
    "show interfaces transceiver eeprom --dom",
    "show interfaces transceiver eeprom -d",
    "show interfaces transceiver eeprom",
    "sfputil show eeprom -d",
    "sfputil show eeprom",
)


@_sonic(*EEPROM_COMMANDS)
def parse_transceiver_eeprom(text: str) -> dict[str, Transceiver]:
    """Inventory and DOM per port, from both the SFF-8636 and the CMIS layouts."""
    modules: dict[str, _Module] = {}
    current: _Module | None = None
    section: str | None = None
    section_indent = 0
    for line in text.splitlines():
        header = _PORT_HEADER.match(line)
        if header:
            rest = header["rest"].lower()
            present = "detected" in rest and "not" not in rest
            current = _Module(present, {}, {}, {})
            if header["port"] in modules:
                raise _Garbled(f"port {header['port']!r} twice", expected="one block per port")
            modules[header["port"]] = current
            section = None
            continue
        kv = _INDENTED_KV.match(line)
        if current is None or not kv:
            continue
        indent, key, value = len(kv["indent"]), kv["key"], kv["value"]
        if key in _SECTIONS:
            section, section_indent = key, indent
        elif section and indent > section_indent:
            _read_dom_line(current, section, key, value)
        else:
            section = None
            current.info.setdefault(key, value)
    if not modules:
        raise _Garbled("no 'PORT: SFP ...' header")
    return {port: _module_record(m) for port, m in modules.items()}


def _alert(cell: str | None) -> bool | None:
    return {"True": True, "False": False}.get((cell or "").strip())


def _pm_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


@_sonic("show interfaces transceiver pm")
def parse_transceiver_pm(text: str) -> dict[str, TransceiverPm]:
    """Coherent-module PM (min/avg/max with thresholds), one table per port.

    A module without PM (anything but C-CMIS) is one line, ``Ethernet0: Transceiver
    performance monitoring not applicable`` (sonic-utilities sfpshow): an empty record.
    """
    out: dict[str, TransceiverPm] = {}
    without_pm: set[str] = set()
    port: str | None = None
    in_rows = False
    for n, line in enumerate(text.splitlines(), start=1):
        if m := re.match(r"^\s*(\S+):\s*Transceiver performance monitoring not applicable", line):
            out[m.group(1)], port = TransceiverPm(params={}), None
            without_pm.add(m.group(1))
            continue
        if m := re.match(r"^\s*(\S+):\s*$", line):
            port, in_rows = m.group(1), False
            if port in out:
                raise _Garbled(f"port {port!r} twice", line=n, expected="one PM block per port")
            out[port] = TransceiverPm(params={})
            continue
        if port is None:
            continue
        if _SEPARATOR.match(line):
            in_rows = True
            continue
        if not line.strip():
            in_rows = False  # a blank line ends the table, as in every tabulate output
            continue
        if not in_rows:
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != 11:
            raise _Garbled(
                f"PM row with {len(cells)} cells: {line.strip()!r}", line=n, expected="11 cells"
            )
        if _pm_key(cells[0]) in out[port].params:
            raise _Garbled(f"{port}: PM parameter {cells[0]!r} twice", line=n)
        out[port].params[_pm_key(cells[0])] = PmParameter(
            unit=_text(cells[1]),
            min=_float(cells[2]),
            avg=_float(cells[3]),
            max=_float(cells[4]),
            high_alarm=_float(cells[5]),
            high_warn=_float(cells[6]),
            high_alert=_alert(cells[7]),
            low_alarm=_float(cells[8]),
            low_warn=_float(cells[9]),
            low_alert=_alert(cells[10]),
        )
    if not out or not all(pm.params for p, pm in out.items() if p not in without_pm):
        raise _Garbled("no PM table under a 'PORT:' line")
    return out
