"""Text helpers the switch personalities print with: tables, numbers, uptimes.

SONiC's show commands print python-tabulate "simple" tables: a header line, one
dash group per column and the rows, columns two spaces apart, each column as
wide as its widest cell or its header plus two, whichever is wider. ``table``
reproduces that layout; alignment is per column because sonic-utilities passes
``stralign='right'`` to most commands but not to all (``show lldp table`` is
left-aligned).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

Align = str  # "left" | "right"
MIN_PADDING = 2  # tabulate makes every column two wider than its header


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    align: Align | Sequence[Align] = "right",
    sep: str = "  ",
) -> str:
    """A tabulate-"simple" table: header, dash line, rows (no trailing blanks)."""
    aligns = [align] * len(headers) if isinstance(align, str) else list(align)
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) + MIN_PADDING for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if a == "right" else v.ljust(w)
            for v, w, a in zip(values, widths, aligns, strict=True)
        ]
        return sep.join(parts).rstrip()

    out = [line(list(headers)), sep.join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    return "\n".join(out)


def fixed_columns(headers: Sequence[str], rows: Sequence[Sequence[object]], gap: int = 1) -> str:
    """EOS-style text table: left-aligned columns, headers at the column starts."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    pad = " " * gap

    def line(values: Sequence[str]) -> str:
        return pad.join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in cells)])


def commas(value: int | None) -> str:
    """``1,234,567`` as sonic-utilities prints counters; ``N/A`` for a missing value."""
    return "N/A" if value is None else f"{int(value):,}"


def natural_key(name: str) -> tuple[object, ...]:
    """Sort ``Ethernet8`` before ``Ethernet16`` and ``Ethernet2/1`` after ``Ethernet1/1``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def first_number(name: str) -> int | None:
    """The first integer in a port name (``Ethernet16`` -> 16), None when it has none."""
    m = re.search(r"\d+", name)
    return int(m.group()) if m else None


def procps_uptime(uptime_s: float) -> str:
    """The ``up ...`` part of uptime(1): ``3 min``, ``2:05``, ``19 days,  3:33``."""
    minutes = int(uptime_s // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    text = f"{days} day{'s' if days != 1 else ''}, " if days else ""
    return text + (f"{hours:2d}:{mins:02d}" if hours else f"{mins} min")


def eos_uptime(uptime_s: float) -> str:
    """EOS ``show version`` wording: ``1 day, 16 hours and 45 minutes``."""
    minutes = int(uptime_s // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = [
        f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in ((days, "day"), (hours, "hour")) if n
    ]
    last = f"{mins} minute{'s' if mins != 1 else ''}"
    return f"{', '.join(parts)} and {last}" if parts else last


def hms(seconds: float) -> str:
    """``00:03:45`` (hours may exceed 24), as SONiC prints PRBS durations."""
    s = int(max(seconds, 0.0))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


_SUPERSCRIPT = str.maketrans(
    "0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b"
)


def sci_superscript(value: float) -> str:
    """``1.18 x 10^-8`` with the multiplication sign and superscript digits the SONiC
    PRBS CLI prints (``show interfaces prbs status -i PORT``); ``0`` for zero."""
    if value <= 0 or not math.isfinite(value):
        return "0"
    exponent = math.floor(math.log10(value))
    mantissa = value / 10.0**exponent
    if round(mantissa, 2) >= 10.0:
        mantissa, exponent = mantissa / 10.0, exponent + 1
    return f"{mantissa:.2f} \u00d7 10{str(exponent).translate(_SUPERSCRIPT)}"


#: the config-mode keywords both vendor CLIs (EOS, NX-OS) take: interface, its admin state,
#: MTU and description, and the ways out
INTERFACE_CONFIG_TREE: dict[str, Any] = {
    "interface": {},
    "shutdown": {},
    "no": {"shutdown": {}, "description": {}},
    "mtu": {},
    "description": {},
    "exit": {},
    "end": {},
}


def expand(
    words: Sequence[str], tree: Mapping[str, Any], aliases: Mapping[str, str] | None = None
) -> tuple[list[str], int, str | None]:
    """Canonical command words for possibly abbreviated ones (a unique prefix is enough).

    Returns the canonical words, how many input words they consumed, and the
    first word that matched no keyword (None when the walk ended on a leaf, an
    option or an argument).
    """
    out: list[str] = []
    children: Mapping[str, Any] = tree
    for word in words:
        if word.startswith("-") or not children:
            break
        key = word.lower()
        canonical = key if key in children else (aliases or {}).get(key)
        if canonical not in children:
            hits = [c for c in children if c.startswith(key)]
            if len(hits) != 1:
                return out, len(out), word
            canonical = hits[0]
        assert canonical is not None
        out.append(canonical)
        children = children[canonical]
    return out, len(out), None
