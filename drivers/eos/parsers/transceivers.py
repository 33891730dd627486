"""EOS transceivers: DOM and thresholds (JSON and text) and the slot inventory."""

from __future__ import annotations

import re
from typing import Any

from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.drivers.common.cells import DOM_TEXT_FIELD, in_field_unit
from labtest.drivers.eos.parsers._common import (
    _PROMPT,
    _TRANSCEIVER_KEYS,
    _as_json,
    _entries,
    _eos,
    _looks_like,
    _num,
    _object,
    _own_key,
    _str,
    long_name,
)
from labtest.drivers.eos.parsers.interfaces import _PORT
from labtest.parsing import Garbled as _Garbled

# --- transceivers ------------------------------------------------------------

_DETAIL_QUANTITY = {
    "temperature": "temperature_c",
    "voltage": "voltage_v",
    "txBias": "tx_bias_ma",
    "txPower": "tx_power_dbm",
    "rxPower": "rx_power_dbm",
}


@_eos("show interfaces transceiver", "show interfaces transceiver detail")
def parse_transceivers(text: str) -> dict[str, Transceiver]:
    """One record per EOS interface; EOS lists each lane of a breakout/multi-lane
    optic as its own interface (Ethernet1/1..1/4), so every record has lane 1."""
    doc = _as_json(text)
    if doc is None:
        return _transceiver_text(text)
    _own_key(doc, "show interfaces transceiver", "interfaces")
    looks = _looks_like(doc)
    if looks not in ("show interfaces transceiver", "another command"):
        raise _Garbled(
            f"this looks like '{looks} | json' output, not 'show interfaces transceiver | json'",
            expected="transceiver DOM entries",
        )
    out: dict[str, Transceiver] = {}
    for port, t in _entries(doc, "interfaces").items():
        if t and not _TRANSCEIVER_KEYS & set(t):
            raise _Garbled(
                f"interfaces.{port} carries no transceiver reading",
                expected="txPower/rxPower/temperature/vendorSn keys",
            )
        if not any(k in t for k in ("temperature", "txPower", "rxPower", "vendorSn")):
            out[port] = Transceiver(present=False)
            continue
        thresholds = {
            quantity: Threshold(
                low_alarm=_num(levels.get("lowAlarm")),
                low_warn=_num(levels.get("lowWarn")),
                high_warn=_num(levels.get("highWarn")),
                high_alarm=_num(levels.get("highAlarm")),
            )
            for key, quantity in _DETAIL_QUANTITY.items()
            if (levels := _object(t.get("details"), f"{port}.details").get(key))
        }
        out[port] = Transceiver(
            temperature_c=_num(t.get("temperature")),
            voltage_v=_num(t.get("voltage")),
            lanes=[
                LaneDom(
                    lane=1,
                    tx_bias_ma=_num(t.get("txBias")),
                    tx_power_dbm=_num(t.get("txPower")),
                    rx_power_dbm=_num(t.get("rxPower", t.get("totalRxPower"))),
                )
            ],
            thresholds=thresholds,
            vendor=_str(t.get("vendorName")),
            part_number=_str(t.get("vendorPn")),
            serial=_str(t.get("vendorSn")),
            media_type=_str(t.get("mediaType")),
        )
    return out


# --- transceivers as text ------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _cell(token: str, number: int) -> float | None:
    if token in ("N/A", "NA"):
        return None
    if not _NUMBER.fullmatch(token):
        raise _Garbled(f"{token!r} is not a number or N/A", line=number, expected="a reading")
    return float(token)


#: the columns of ``show interfaces transceiver`` text, by the record field they fill
_TEXT_FIELDS = ("temperature_c", "voltage_v", "tx_bias_ma", "tx_power_dbm", "rx_power_dbm")


def _in_unit(value: float | None, unit: str | None, field: str) -> float | None:
    """A reading in the unit its column header printed, as the unit ``field`` carries."""
    return None if value is None else in_field_unit(value, unit, field)


def _transceiver_text(text: str) -> dict[str, Transceiver]:
    """``show interfaces transceiver`` (one DOM row per port) or ``... detail`` (one
    table per quantity with its four thresholds), as EOS prints them as text."""
    lines = text.splitlines()
    if any(re.match(r"^\s+High Alarm\s+High Warn", ln) for ln in lines):
        return _transceiver_detail_text(lines)
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+\(Celsius\)", ln)), None)
    if header is None:
        raise _Garbled(
            "no 'Port (Celsius) (Volts) (mA) (dBm) (dBm) Last Update' header",
            expected="'show interfaces transceiver' text or JSON",
        )
    units = re.findall(r"\(([^)]+)\)", lines[header])
    if len(units) != len(_TEXT_FIELDS):
        raise _Garbled(
            f"header names {len(units)} units, not {len(_TEXT_FIELDS)}",
            line=header + 1,
            expected="(Celsius) (Volts) (mA) (dBm) (dBm)",
        )
    out: dict[str, Transceiver] = {}
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if _PROMPT.match(row) or not row.strip():
            break
        if set(row.strip()) <= {"-", " "}:
            continue
        tokens = row.split()
        updated = " ".join(tokens[6:])
        if (
            len(tokens) < 7
            or not _PORT.fullmatch(tokens[0])
            or not (updated in ("N/A", "never") or updated.endswith(" ago"))
        ):
            raise _Garbled(
                f"row {row.strip()!r} is not a complete DOM row",
                line=number,
                expected="PORT TEMP VOLTAGE BIAS TX-POWER RX-POWER LAST-UPDATE",
            )
        port = long_name(tokens[0])
        if port in out:
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        temp, volt, bias, tx, rx = (
            _in_unit(_cell(t, number), unit, field)
            for t, unit, field in zip(tokens[1:6], units, _TEXT_FIELDS, strict=True)
        )
        if all(v is None for v in (temp, volt, bias, tx, rx)):
            out[port] = Transceiver(lanes=[LaneDom(lane=1)])  # no DOM readout on this port
            continue
        out[port] = Transceiver(
            temperature_c=temp,
            voltage_v=volt,
            lanes=[LaneDom(lane=1, tx_bias_ma=bias, tx_power_dbm=tx, rx_power_dbm=rx)],
        )
    if not out:
        raise _Garbled("transceiver table has no rows", expected="one row per port")
    return out


def _transceiver_detail_text(lines: list[str]) -> dict[str, Transceiver]:
    """One table per quantity: ``PORT VALUE HIGH-ALARM HIGH-WARN LOW-ALARM LOW-WARN``."""
    readings: dict[str, dict[str, float | None]] = {}
    limits: dict[str, dict[str, Threshold]] = {}
    quantity: str | None = None
    unit: str | None = None  # the unit the table's "Port (unit) ..." row prints
    in_rows = False
    for number, line in enumerate(lines, start=1):
        if _PROMPT.match(line):
            break
        if m := re.match(r"^\s+(Temperature|Voltage|Current|Tx Power|Rx Power)\s+Threshold", line):
            quantity, unit, in_rows = DOM_TEXT_FIELD[m.group(1)], None, False
            continue
        if quantity is not None and re.match(r"^Port\s", line):
            printed = set(re.findall(r"\(([^)]+)\)", line))
            if len(printed) > 1:
                raise _Garbled(
                    f"one table in units {sorted(printed)}",
                    line=number,
                    expected="one unit per quantity",
                )
            unit = printed.pop() if printed else None
            continue
        if quantity is None or re.match(r"^\s", line) or not line.strip():
            continue
        if set(line.strip()) <= {"-", " "}:
            in_rows = True
            continue
        tokens = line.split()
        flag = tokens.pop(2) if len(tokens) == 7 and tokens[2] in ("++", "+", "-", "--") else None
        if not in_rows or len(tokens) != 6 or not _PORT.fullmatch(tokens[0]):
            raise _Garbled(
                f"row {line.strip()!r} is not a complete threshold row",
                line=number,
                expected="PORT VALUE HIGH-ALARM HIGH-WARN LOW-ALARM LOW-WARN",
            )
        del flag  # the level is recomputed from the thresholds by Threshold.state
        port = long_name(tokens[0])
        value, hi_alarm, hi_warn, lo_alarm, lo_warn = (
            _in_unit(_cell(t, number), unit, quantity) for t in tokens[1:]
        )
        if quantity in readings.setdefault(port, {}):
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        readings[port][quantity] = value
        limits.setdefault(port, {})[quantity] = Threshold(lo_alarm, lo_warn, hi_warn, hi_alarm)
    if not readings:
        raise _Garbled("no threshold table rows", expected="'show interfaces transceiver detail'")
    return {
        port: Transceiver(
            temperature_c=r.get("temperature_c"),
            voltage_v=r.get("voltage_v"),
            lanes=[
                LaneDom(
                    lane=1,
                    tx_bias_ma=r.get("tx_bias_ma"),
                    tx_power_dbm=r.get("tx_power_dbm"),
                    rx_power_dbm=r.get("rx_power_dbm"),
                )
            ],
            thresholds=limits[port],
        )
        for port, r in readings.items()
    }


# --- inventory -----------------------------------------------------------------------


def _module(vendor: Any, model: Any, serial: Any) -> Transceiver:
    vendor, model = _str(vendor), _str(model)
    if vendor is None or vendor == "Not Present" or model is None:
        return Transceiver(present=False)
    return Transceiver(vendor=vendor, part_number=model, serial=_str(serial))


def _inventory_text(text: str) -> dict[str, Transceiver]:
    """The ``System has N transceiver slots`` table: PORT MANUFACTURER... MODEL SERIAL REV
    (the manufacturer may hold spaces, so the row is read from both ends)."""
    lines = text.splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if re.match(r"^System has \d+ transceiver slots", ln)),
        None,
    )
    if start is None:
        raise _Garbled("no 'System has N transceiver slots' table", expected="'show inventory'")
    out: dict[str, Transceiver] = {}
    for number, row in enumerate(lines[start + 1 :], start=start + 2):
        tokens = row.split()
        if not tokens or row.startswith("System has") or _PROMPT.match(row):
            break
        if tokens[0] == "Port" or set(row.strip()) <= {"-", " "}:
            continue
        if not re.fullmatch(r"\d+(?:/\d+)*", tokens[0]):
            raise _Garbled(
                f"slot row {row.strip()!r}",
                line=number,
                expected="SLOT MANUFACTURER MODEL SERIAL REV",
            )
        if tokens[0] in out:
            raise _Garbled(
                f"slot {tokens[0]} listed twice", line=number, expected="one row per slot"
            )
        if len(tokens) == 1 or tokens[1:] == ["Not", "Present"]:
            out[tokens[0]] = Transceiver(present=False)
            continue
        if len(tokens) < 5:
            raise _Garbled(
                f"slot row {row.strip()!r} stops early",
                line=number,
                expected="SLOT MANUFACTURER MODEL SERIAL REV",
            )
        out[tokens[0]] = _module(" ".join(tokens[1:-3]), tokens[-3], tokens[-2])
    return out


@_eos("show inventory")
def parse_inventory(text: str) -> dict[str, Transceiver]:
    """Transceiver slots (vendor, part number, serial) keyed by slot as EOS numbers them
    (``"3"``, ``"2/1"`` on a modular chassis); :func:`slot_of` maps a port to its slot."""
    doc = _as_json(text)
    if doc is None:
        return _inventory_text(text)
    _own_key(doc, "show inventory", "xcvrSlots")
    return {
        slot: _module(x.get("mfgName"), x.get("modelName"), x.get("serialNum"))
        for slot, x in _entries(doc, "xcvrSlots").items()
    }


def slot_of(port: str, slots: dict[str, Any]) -> str | None:
    """The transceiver slot of ``port``: ``Ethernet3/1/1`` -> ``"3/1"`` when a modular
    chassis has it, ``Ethernet3/1`` (lane 1 of slot 3) -> ``"3"``, ``Ethernet52`` -> ``"52"``."""
    m = re.fullmatch(r"Ethernet(\d+(?:/\d+)*)", port)
    if not m:
        return None
    numbers = m.group(1).split("/")
    for cut in (len(numbers), len(numbers) - 1):
        slot = "/".join(numbers[:cut])
        if cut and slot in slots:
            return slot
    return None
