"""Shared helpers for the Linux parsers."""

from __future__ import annotations

from labtest.errors import ParseError

# Parsers see text, not a device; the driver re-raises with the host's name.
SOURCE = "linux"


def parse_error(
    message: str,
    text: str,
    *,
    command: str | None = None,
    line: int | None = None,
    expected: str | None = None,
) -> ParseError:
    """A ParseError that keeps the whole raw output for the report."""
    return ParseError(SOURCE, message, raw=text, command=command, line=line, expected=expected)


def to_int(token: str) -> int:
    """An integer that some tools print in %g notation (``1.04858e+06``)."""
    try:
        return int(token)
    except ValueError:
        return round(float(token))
