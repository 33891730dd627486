"""Mutations of a real capture and the property every parser must keep.

The property (issue 15): on a mutated capture a parser raises ``ParseError``,
or every value it returns equals the value at the same key in the parse of
the intact capture. ``None`` (marked missing) and an empty container are
allowed where the intact parse has a value; a key the intact parse does not
have is not (an invented port ``Ethern`` is a wrong value). ``warnings`` are
remarks about the text itself (how many CPU-frequency notices it held), not
values read from the device, and are not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from labtest.errors import ParseError
from labtest.parsing import to_jsonable

#: bytes a damaged capture carries: invalid UTF-8, NUL, control characters
BAD_BYTES = (b"\x00", b"\x07", b"\x1b", b"\x80", b"\xc3", b"\xff", b"\xfe")

_MISSING = object()


def leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) pairs of a JSON value; empty containers are leaves."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path, value


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        in_dict = isinstance(value, dict) and step in value
        if in_dict or (isinstance(value, list) and isinstance(step, int) and step < len(value)):
            value = value[step]
        else:
            return _MISSING
    return value


def violations(full: Any, mutated: Any) -> list[str]:
    """Values of ``mutated`` that the intact parse ``full`` does not back."""
    bad = []
    for path, value in leaves(mutated):
        if "warnings" in path:
            continue
        if value is None or value == [] or value == {}:
            continue
        expected = _at(full, path)
        if expected is _MISSING:
            bad.append(f"{'/'.join(map(str, path))}={value!r} (no such key in the intact parse)")
        elif expected != value:
            bad.append(f"{'/'.join(map(str, path))}={value!r} (intact: {expected!r})")
    return bad


def check(parse: Callable[[Any], Any], full: Any, data: str | bytes) -> list[str]:
    """[] when the property holds for ``data``; else what went wrong."""
    try:
        record = parse(data)
    except ParseError:
        return []
    except Exception as exc:
        return [f"{type(exc).__name__}: {exc}"]
    return violations(full, to_jsonable(record))


# --- mutations -------------------------------------------------------------------


def line_cuts(text: str) -> Iterator[str]:
    """The capture cut after every line, and in the middle of every line's last token."""
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        stripped = body.rstrip()
        if stripped:
            last = stripped.split()[-1]
            cut = pos + len(stripped) - len(last) + max(1, len(last) // 2)
            yield text[:cut]
        pos += len(line)
        yield text[:pos]


def duplicate_line(text: str, index: int) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    i = index % len(lines)
    return "".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])


def flip(data: bytes, index: int) -> bytes:
    """The high bit of one byte flipped (what a bad serial line or a mangled paste does)."""
    if not data:
        return data
    i = index % len(data)
    return data[:i] + bytes([data[i] ^ 0x80]) + data[i + 1 :]


def insert(data: bytes, index: int, byte: bytes) -> bytes:
    i = index % (len(data) + 1)
    return data[:i] + byte + data[i:]
