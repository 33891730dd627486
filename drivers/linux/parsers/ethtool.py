"""ethtool: NIC statistics (``-S``) and module EEPROM/DOM (``-m``).

``ethtool -S`` is ``name: value`` per line; names are driver-defined (mlx5:
``rx_prio3_pause``, ``tx_pause_ctrl_phy``, ``rx_discards_phy``, ...), so the
record is a plain dict and suites pick names per NIC flavour.

``ethtool -m`` decodes SFF-8472 (SFP), SFF-8636 (QSFP+/QSFP28) and CMIS
(QSFP-DD/OSFP) into ``Label : value`` lines. Labels differ between the layouts
(``Rcvr signal avg optical power(Channel 1)`` vs ``... (Channel 1)``, ``Receiver
signal OMA``; ``(Chan 1)`` vs ``(Channel 1)`` in flag lines), so the mapping below
matches them loosely and returns the shared Transceiver record.
"""

from __future__ import annotations

import re

from labtest.capabilities.transceiver import NEG_INF_DBM, LaneDom, Threshold, Transceiver
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import complete_line, fingerprint, parser

# --- ethtool -S --------------------------------------------------------------

# ethtool indents every counter; a quote or brace means JSON, not ethtool
_STAT = re.compile(r"^\s+([^\s\"{}][^\"{}]*?):\s+(-?\d+)\s*$")


@parser("linux", "ethtool -S", "ethtool --statistics")
def parse_ethtool_stats(text: str) -> dict[str, int]:
    """Counters as ints; headers, prompts and non-numeric lines are skipped."""
    counters: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        match = _STAT.match(line)
        if match and not line.lstrip().startswith("#"):
            name = match.group(1).strip()
            if name in counters:
                raise parse_error(
                    f"counter {name!r} twice (the later value would win silently)",
                    text,
                    command="ethtool -S",
                    line=n,
                    expected="each counter once",
                )
            counters[name] = int(match.group(2))
    if not counters:
        raise parse_error("no 'name: value' counters in ethtool -S output", text)
    return counters


# --- ethtool -m ----------------------------------------------------------------

_FIELD = re.compile(r"^\s*(\S.*?)\s+:\s?(.*)$")
_LANE = re.compile(r"\s*\((?:channel|chan)\s+(\d+)\)\s*", re.IGNORECASE)
_LEVEL = re.compile(r"\b(high|low) (alarm|warning)\b")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|inf)")

# (label prefix, record quantity); the label is matched after lane and level are cut out
_LANE_VALUES = (
    ("laser tx bias current", "tx_bias_ma"),
    ("laser bias current", "tx_bias_ma"),
    ("transmit avg optical power", "tx_power_dbm"),
    ("laser output power", "tx_power_dbm"),
    ("rcvr signal avg optical power", "rx_power_dbm"),
    ("receiver signal average optical power", "rx_power_dbm"),
    ("receiver signal oma", "rx_power_dbm"),
)
_QUANTITIES = (
    ("module temperature", "temperature_c"),
    ("module voltage", "voltage_v"),
    ("laser bias current", "tx_bias_ma"),
    ("laser tx bias current", "tx_bias_ma"),
    ("laser output power", "tx_power_dbm"),
    ("laser tx power", "tx_power_dbm"),
    ("laser rx power", "rx_power_dbm"),
)
_LEVEL_FIELD = {
    ("low", "alarm"): "low_alarm",
    ("low", "warning"): "low_warn",
    ("high", "warning"): "high_warn",
    ("high", "alarm"): "high_alarm",
}
_LOS_LOL = {
    "rx loss of signal": "rx_los",
    "tx loss of signal": "tx_los",
    "rx loss of lock": "rx_lol",
    "tx loss of lock": "tx_lol",
    "tx fault": "tx_fault",
}


def _fields(text: str) -> list[tuple[str, str]]:
    """``Label : value`` pairs; a line without a label continues the previous value
    (mail clients and narrow terminals wrap long ethtool lines)."""
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.strip() == "...":
            continue
        match = _FIELD.match(line)
        if match:
            pairs.append((match.group(1).strip(), match.group(2).strip()))
        elif pairs:
            label, value = pairs[-1]
            pairs[-1] = (label, f"{value} {line.strip()}".strip())
    return pairs


def _reading(value: str, quantity: str) -> float | None:
    """The number in the record's unit: dBm for power (``1.59 mW / 2.03 dBm``)."""
    numbers = _NUMBER.findall(value)
    if not numbers:
        return None
    if quantity.endswith("_dbm"):
        if "dBm" not in value:
            return None
        dbm = value.split("/")[-1].split("dBm")[0].strip()
        return NEG_INF_DBM if dbm == "-inf" else float(dbm)
    return float(numbers[0])


def _quantity(label: str, table: tuple[tuple[str, str], ...]) -> str | None:
    for prefix, quantity in table:
        if label.startswith(prefix):
            return quantity
    return None


def _threshold_set(levels: dict[str, float]) -> Threshold | None:
    """None when the module does not implement thresholds (ethtool prints all four
    as the same value, typically 0 or -inf)."""
    if len(set(levels.values())) <= 1:
        return None
    return Threshold(**levels)


def _flag_lanes(value: str) -> list[bool] | None:
    """``None`` -> no lane flagged; ``[ Yes, No, ... ]`` -> per lane."""
    if value.startswith("["):
        return [v.strip().lower() == "yes" for v in value.strip("[] ").split(",")]
    return None


@parser("linux", "ethtool -m", "ethtool --module-info", "ethtool --dump-module-eeprom")
def parse_ethtool_module(text: str) -> Transceiver:
    """Inventory, DOM per lane, thresholds and alarm/warning flags of one module."""
    pairs = _fields(text)
    info: dict[str, str] = {}
    lanes: dict[int, dict[str, float | None]] = {}
    module: dict[str, float | None] = {}
    thresholds: dict[str, dict[str, float]] = {}
    flags: dict[str, bool] = {}
    media: list[str] = []
    if len(set(pairs)) != len(pairs):
        twice = next(p for i, p in enumerate(pairs) if p in pairs[:i])
        raise parse_error(f"line '{twice[0]} : {twice[1]}' twice", text, expected="each field once")
    for label, value in pairs:
        if value.count("(") != value.count(")"):
            raise parse_error(
                f"'{label}' value {value!r} has unbalanced parentheses: cut or repeated",
                text,
                expected="a complete value",
            )
    for label, value in pairs:
        lower = label.lower()
        lane_match = _LANE.search(lower)
        lane = int(lane_match.group(1)) if lane_match else None
        bare = _LANE.sub(" ", lower).strip()
        bare = re.sub(r"\s+", " ", bare)
        level = _LEVEL.search(bare)
        if bare == "transceiver type":
            media.append(value.split(": ", 1)[-1])
        elif level and bare.endswith("threshold"):
            quantity = _quantity(bare, _QUANTITIES)
            reading = _reading(value, quantity) if quantity else None
            if quantity and reading is not None:
                field = _LEVEL_FIELD[(level.group(1), level.group(2))]
                thresholds.setdefault(quantity, {})[field] = reading
        elif level and value in ("On", "Off"):
            quantity = _quantity(bare, _QUANTITIES)
            if quantity:
                name = f"{quantity}_{_LEVEL_FIELD[(level.group(1), level.group(2))]}"
                flags[f"{name}_lane{lane}" if lane else name] = value == "On"
        elif bare in _LOS_LOL:
            per_lane = _flag_lanes(value)
            if per_lane is None:
                flags[_LOS_LOL[bare]] = value.lower() == "yes"
            else:
                for n, state in enumerate(per_lane, start=1):
                    flags[f"{_LOS_LOL[bare]}_lane{n}"] = state
        elif bare == "module temperature":
            module["temperature_c"] = _reading(value, "temperature_c")
        elif bare == "module voltage":
            module["voltage_v"] = _reading(value, "voltage_v")
        elif (quantity := _quantity(bare, _LANE_VALUES)) is not None:
            lanes.setdefault(lane or 1, {})[quantity] = _reading(value, quantity)
        else:
            info.setdefault(lower, value)
    if "identifier" not in info and not lanes and not module:
        hint = " (a hex dump: ethtool could not decode this module)" if "0x0000:" in text else ""
        raise parse_error("no module fields (Identifier, DOM) in ethtool -m output" + hint, text)
    if pairs and pairs[-1][0].lower() == "transceiver type":
        media = []  # the capture ends inside the list of types: the list may be cut
    firmware = info.get("active firmware version")
    identifier = info.get("identifier")
    if identifier and (named := re.match(r"0x[0-9a-f]+\s*\((.*)\)\s*$", identifier, re.I)):
        identifier = named.group(1)
    return Transceiver(
        temperature_c=module.get("temperature_c"),
        voltage_v=module.get("voltage_v"),
        lanes=[LaneDom(lane=n, **values) for n, values in sorted(lanes.items())],
        thresholds={
            q: t for q, levels in thresholds.items() if (t := _threshold_set(levels)) is not None
        },
        vendor=info.get("vendor name"),
        part_number=info.get("vendor pn"),
        serial=info.get("vendor sn"),
        firmware=firmware,
        media_type="; ".join(media) or None,
        flags=flags,
        identifier=identifier,
    )


fingerprint(
    "linux",
    "ethtool -m",
    r"^\s*Identifier\s+:\s+0x[0-9a-fA-F]{2}\b",
    "ethtool -m",
    "ethtool --module-info",
    "ethtool --dump-module-eeprom",
)
fingerprint(
    "linux",
    "ethtool -S",
    r"^\s*NIC statistics:\s*$|^\S*[#$>]\s*(?:sudo\s+)?ethtool\s+(?:-S|--statistics)\b",
    "ethtool -S",
    "ethtool --statistics",
)
#: a last line that ends in its unit is whole, newline or not (a capture saved by a tool)
complete_line("linux", r"\d\s*(?:dBm|mW|mA|V|degrees [CF]|dB|nm|m|km|[GM]Bd)\s*$", "ethtool -m",
              "ethtool --module-info", "ethtool --dump-module-eeprom")
