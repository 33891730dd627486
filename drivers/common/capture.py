"""Checks every switch text parser runs before it reads a capture.

A capture that went through a bad serial line or a mangled paste carries bytes
no CLI prints (NUL, BEL, ESC, U+FFFD where undecodable bytes were); a value read
around one is a guess, so the capture is refused with the line. A capture cut
mid-line has a last line without a line end; that line may hold a number cut
short (``762946`` read as ``762``), so it must not contribute to the record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from labtest.errors import ParseError
from labtest.parsing import to_jsonable

#: characters no switch CLI prints in a show command's answer
_DAMAGED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")


class Garbled(ValueError):
    """Raised inside a switch parser; its registration wrapper turns it into a ParseError."""

    def __init__(self, message: str, line: int | None = None, expected: str | None = None):
        super().__init__(message)
        self.line = line
        self.expected = expected


def located_parse_error(
    device: str, command: str, message: str, raw: str, line: int | None, expected: str | None
) -> ParseError:
    """The ParseError a switch parser raises: the command, the line and what was expected."""
    where = f" (line {line})" if line is not None else ""
    return ParseError(device, f"{command}{where}: {message}", raw=raw, command=command,
                      line=line, expected=expected)


class DamagedCapture(ValueError):
    """The capture cannot be read as it is; ``line`` is 1-based."""

    def __init__(self, message: str, line: int, expected: str) -> None:
        super().__init__(message)
        self.line = line
        self.expected = expected


def check_bytes(text: str) -> None:
    """Refuse control characters and U+FFFD, naming the first one's line."""
    m = _DAMAGED.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise DamagedCapture(
            f"character U+{ord(m.group()):04X} is not CLI output (damaged capture)",
            line,
            "printable text",
        )


def check_last_line(text: str, record: Any, parse: Callable[[str], Any]) -> None:
    """A last line without a line end may be cut mid-token: refuse the capture unless
    the record is the same without that line (the line held nothing that was read)."""
    if not text or text.endswith(("\n", "\r")):
        return
    start = max(text.rfind("\n"), text.rfind("\r")) + 1
    if not text[start:].strip():
        return
    try:
        same = to_jsonable(parse(text[:start])) == to_jsonable(record)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        same = False  # the rest alone is not a capture: the last line was needed
    if not same:
        raise DamagedCapture(
            f"the last line {text[start:].strip()[:60]!r} has no line end: the capture "
            "looks cut mid-line",
            text.count("\n") + 1,
            "a complete last line",
        )
