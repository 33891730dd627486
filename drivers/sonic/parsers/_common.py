"""The SONiC parsers' common ground: registration, and the tabulate table reader
(the dash line fixes the columns; a row must fill what its header promises).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from labtest.drivers.common.cells import cell_text as _text
from labtest.parsing import F, checked
from labtest.parsing import Garbled as _Garbled

DRIVER = "sonic"
UNKNOWN_PORT = "unknown"  # key used when the output itself does not name the port


def _sonic(*commands: str) -> Callable[[F], F]:
    """Register a parser for ``commands`` with the ParseError contract. The byte and
    cut-line checks are ``labtest parse``'s here (:func:`labtest.parsing.guarded`)."""
    return checked(DRIVER, *commands, damage=False, cut=False)


def _updown(cell: str | None) -> bool | None:
    value = (cell or "").strip().lower()
    return {"up": True, "down": False}.get(value)


# --- tabulate tables ---------------------------------------------------------

_CELL = re.compile(r"\S+(?: \S+)*")  # a cell: words joined by single spaces
_SEPARATOR = re.compile(r"^\s*-+(?: +-+)+\s*$")  # two or more dash groups
_RULE = re.compile(r"^\s*-+\s*$")  # a single long rule ends a table
_PROMPT = re.compile(r"^\S+@\S*?[#$]")  # "admin@sonic:~$" / "root@sonic:~#" after a capture


@dataclass
class _Table:
    headers: list[str]
    rows: list[dict[str, str | None]]
    title: str | None  # the non-blank line just above the header, if any
    lines: list[int]  # 1-based line number of each row in the text

    def __post_init__(self) -> None:
        self._lower = {h.lower(): h for h in self.headers}
        self._found: dict[tuple[str, ...], str | None] = {}

    def column(self, *names: str) -> str | None:
        """The first of ``names`` present (case-insensitive), else None."""
        if names in self._found:
            return self._found[names]
        found = next((self._lower[n.lower()] for n in names if n.lower() in self._lower), None)
        self._found[names] = found
        return found

    def cell(self, row: dict[str, str | None], *names: str) -> str | None:
        """``row``'s value in the first of ``names`` present; None if no such column."""
        column = self.column(*names)
        return row[column] if column else None


def _columns(line: str, spans: list[tuple[int, int]]) -> list[str | None]:
    """Cells of ``line`` assigned to the columns whose dash spans they overlap."""
    words = _CELL.findall(line)
    if len(words) == len(spans):  # the common case; also survives hand-aligned docs
        return words
    cells = [(m.start(), m.end(), m.group()) for m in _CELL.finditer(line)]
    out: list[str | None] = [None] * len(spans)
    for start, end, value in cells:

        def score(i: int, start: int = start, end: int = end) -> tuple[int, float]:
            s, e = spans[i]
            overlap = min(end, e) - max(start, s)
            return overlap, -abs((start + end) / 2 - (s + e) / 2)

        best = max(range(len(spans)), key=score)
        out[best] = value if out[best] is None else f"{out[best]} {value}"
    return out


def _tables(text: str) -> list[_Table]:
    """Every tabulate table, in one pass over the lines (O(n): no list copies)."""
    lines = text.splitlines()
    tables: list[_Table] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if i == 0 or "-" not in line or not _SEPARATOR.match(line):
            i += 1
            continue
        if i >= 2 and lines[i - 2].strip() and lines[i - 2].strip() == lines[i - 1].strip():
            raise _Garbled("table header repeated", line=i, expected="one header line")
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", line)]
        headers = [h or "" for h in _columns(lines[i - 1], spans)]
        rows: list[dict[str, str | None]] = []
        numbers: list[int] = []
        j = i + 1
        while j < len(lines):
            row = lines[j]
            if not row.strip() or _RULE.match(row) or _SEPARATOR.match(row) or _PROMPT.match(row):
                break
            rows.append(dict(zip(headers, _columns(row, spans), strict=True)))
            numbers.append(j + 1)
            j += 1
        tables.append(_Table(headers, rows, _title_above(lines, i - 1), numbers))
        i = max(j, i + 1)
    return tables


def _title_above(lines: list[str], header: int, reach: int = 64) -> str | None:
    """The nearest non-blank line above ``header`` (bounded look-back keeps _tables linear)."""
    for k in range(header - 1, max(-1, header - 1 - reach), -1):
        if lines[k].strip():
            return lines[k].strip()
    return None


def _unique(seen: dict[Any, Any], key: Any, table: _Table, index: int) -> None:
    """Refuse a row whose key an earlier row already gave (the last one would win)."""
    if key in seen:
        raise _Garbled(
            f"duplicated row for {key!r}",
            line=table.lines[index],
            expected="one row per key",
        )


def _keyed(
    table: _Table, column: str, seen: dict[Any, Any] | None
) -> Iterator[tuple[str, dict[str, str | None]]]:
    """``table``'s rows with their key (the ``column`` cell): a row without one is refused
    at its line, and so is a key ``seen`` already holds (None: keys may repeat)."""
    for i, row in enumerate(table.rows):
        key = _text(row[column])
        if not key:
            raise _Garbled(f"row without a {column}", line=table.lines[i])
        if seen is not None:
            _unique(seen, key, table, i)
        yield key, row


def _tables_named(text: str, first_header: str, *must_have: str) -> list[_Table]:
    """Tables whose first column is ``first_header`` and that have ``must_have``."""
    found = [
        t
        for t in _tables(text)
        if t.headers
        and t.headers[0].lower() == first_header.lower()
        and all(t.column(m) for m in must_have)
    ]
    if not found:
        need = ", ".join((first_header, *must_have))
        raise _Garbled(f"no table with columns {need}")
    return found


# --- key: value blocks -------------------------------------------------------

#: sonic-utilities prints "Key: value" (or "Key:" with nothing): a colon glued to a value is
#: no such line (a damaged capture must not turn "Model Number:C MSN2700" into a model)
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][\w ./()&-]*?)\s*:(?:\s(?P<value>.*))?$")


def _key_values(text: str) -> dict[str, str]:
    """``Key: value`` lines at the left margin (show version, platform summary)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("Docker images"):
            break
        m = _KEY_VALUE.match(line)
        if m and not line.startswith(" "):
            out.setdefault(m["key"].strip(), (m["value"] or "").strip())
    return out
