"""Cells, units and lanes: what every switch text parser reads the same way.

A table cell is text; ``N/A`` (and the family's other spellings of "not applicable")
becomes None, a number loses its thousands separators, anything else is refused
(:class:`~labtest.parsing.Garbled`), never guessed. A reading printed with a unit keeps
that unit until it is converted into the unit the record's field name carries
(``rx_power_dbm``): a power printed in mW is converted to dBm, a unit that does not
belong to the field is refused. Lane readings collected per lane number become
``LaneDom`` records in one place.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Mapping, Sequence

from labtest.capabilities.switch import InterfaceStatus
from labtest.capabilities.transceiver import LaneDom, mw_to_dbm
from labtest.parsing import Garbled

#: "not applicable" as SONiC (python-tabulate) prints it
NA = frozenset({"", "N/A", "n/a", "NA", "-", "--", "None"})
#: "not applicable" as NX-OS prints it (a lone "-" is not one)
NA_NXOS = frozenset({"--", "N/A", "n/a", ""})

_SIGNED = re.compile(r"[-+]?\d+")
_UNSIGNED = re.compile(r"\d+")


def cell_int(cell: str | None, na: frozenset[str] = NA, signed: bool = True) -> int | None:
    """An integer cell (``1,234`` reads 1234); None for a not-applicable cell."""
    if cell is None:
        return None
    value = cell.strip()
    if value.isascii() and value.isdigit():  # the common case, without a regex
        return int(value)
    if value in na:
        return None
    value = value.replace(",", "")
    if not (_SIGNED if signed else _UNSIGNED).fullmatch(value):
        raise Garbled(f"expected an integer, got {cell!r}")
    return int(value)


def cell_float(cell: str | None, na: frozenset[str] = NA) -> float | None:
    """A number cell; None for a not-applicable cell or NaN."""
    if cell is None or cell.strip() in na:
        return None
    try:
        number = float(cell.strip().replace(",", ""))
    except ValueError:
        raise Garbled(f"expected a number, got {cell!r}") from None
    return None if math.isnan(number) else number


def cell_text(cell: str | None, na: frozenset[str] = NA) -> str | None:
    """A text cell, stripped; None for a not-applicable cell."""
    if cell is None:
        return None
    cell = cell.strip()
    return None if cell in na else cell


def is_address(token: str) -> bool:
    """``token`` is an IPv4 or IPv6 address: where a row may start with a peer or a hop
    address, this tells an address from a name or a note."""
    try:
        ipaddress.ip_address(token)
    except ValueError:
        return False
    return True


# --- units -----------------------------------------------------------------------------


def power_dbm(mw: float) -> float:
    """Optical power printed in mW as dBm (10·log10(mW)); 0 mW is -inf dBm (no light),
    as the transceiver records carry it. A negative or non-finite power is refused."""
    if not math.isfinite(mw) or mw < 0:
        raise Garbled(f"{mw} mW is not an optical power", expected="a power >= 0 mW")
    return mw_to_dbm(mw)


def _same(value: float) -> float:
    return value


#: the unit a record field carries (its name's suffix) -> the units a CLI prints it in
_UNITS: dict[str, dict[str, Callable[[float], float]]] = {
    "_dbm": {"dBm": _same, "mW": power_dbm},
    "_ma": {"mA": _same},
    "_c": {"C": _same, "Celsius": _same},
    "_v": {"V": _same, "Volts": _same},
}

#: a DOM quantity as the EOS and NX-OS ``transceiver detail(s)`` text names it -> the
#: record field (and so the unit) its readings go into
DOM_TEXT_FIELD = {
    "Temperature": "temperature_c",
    "Voltage": "voltage_v",
    "Current": "tx_bias_ma",
    "Tx Power": "tx_power_dbm",
    "Rx Power": "rx_power_dbm",
}


def in_field_unit(value: float, unit: str | None, field: str) -> float:
    """``value`` printed in ``unit`` (None: printed bare, in the field's own unit) as the
    unit ``field``'s name carries; a unit that does not belong to the field is refused."""
    if unit is None:
        return value
    suffix = next((s for s in _UNITS if field.endswith(s)), None)
    if suffix is None:
        raise Garbled(f"{field} carries no unit to convert {unit!r} into")
    convert = _UNITS[suffix].get(unit)
    if convert is None:
        wanted = " or ".join(_UNITS[suffix])
        raise Garbled(f"{value} {unit} is not a {field} reading", expected=f"a value in {wanted}")
    return convert(value)


# --- fixed-width text tables -------------------------------------------------------------


def header_columns(header: str) -> list[tuple[str, int]]:
    """Each word of a header line that names a column, with the column where it starts
    (``Port Name Status Vlan ...`` of ``show interface(s) status``)."""
    return [(m.group(), m.start()) for m in re.finditer(r"\S+", header)]


def row_cells(row: str, columns: list[tuple[str, int]]) -> dict[str, str]:
    """``row`` cut at the header's column starts: a cell runs from its header word to the
    next one (the last to the end of the line), stripped; a row that stops early leaves ""."""
    cells = {}
    for i, (name, start) in enumerate(columns):
        stop = columns[i + 1][1] if i + 1 < len(columns) else None
        cells[name] = row[start:stop].strip()
    return cells


def status_header(lines: Sequence[str]) -> int:
    """The index of the ``Port  Name  Status ...`` header of ``show interface(s) status``
    (EOS and NX-OS print the same one); a capture without it is refused."""
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+Name\s+Status", ln)), None)
    if header is None:
        raise Garbled("no 'Port Name Status ...' header")
    return header


def status_table(
    lines: Sequence[str],
    header: int,
    row: Callable[[int, str, dict[str, str]], InterfaceStatus],
    *,
    prompt: re.Pattern[str],
    rule: Callable[[str], object],
) -> dict[str, InterfaceStatus]:
    """The rows under ``lines[header]`` as one status record a port, the walk EOS and NX-OS
    share: the table ends at a blank line or the next ``prompt``, a ``rule`` line (the
    family's dashes) is skipped, and a port listed twice or a table without rows is
    refused. ``row`` reads and checks one row from its line number, its text and its cells
    cut at the header's columns; what a row must hold is the family's own."""
    columns = header_columns(lines[header])
    out: dict[str, InterfaceStatus] = {}
    for number, line in enumerate(lines[header + 1 :], start=header + 2):
        if not line.strip() or prompt.match(line):
            break
        if rule(line):
            continue
        status = row(number, line, row_cells(line, columns))
        if status.name in out:
            raise Garbled(
                f"port {status.name} listed twice", line=number, expected="one row per port"
            )
        out[status.name] = status
    if not out:
        raise Garbled("status table has no rows")
    return out


# --- lanes ----------------------------------------------------------------------------


def lane_doms(lanes: Mapping[int, Mapping[str, float | None]]) -> list[LaneDom]:
    """Readings collected per lane number (``{1: {"rx_power_dbm": -2.1}}``) as LaneDom
    records in lane order; a quantity a lane did not print stays None."""
    return [
        LaneDom(
            lane=n,
            tx_bias_ma=v.get("tx_bias_ma"),
            tx_power_dbm=v.get("tx_power_dbm"),
            rx_power_dbm=v.get("rx_power_dbm"),
        )
        for n, v in sorted(lanes.items())
    ]
