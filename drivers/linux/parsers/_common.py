"""Shared helpers for the Linux parsers."""

from __future__ import annotations

from functools import partial

from labtest.errors import ParseError

# Parsers see text, not a device; the driver re-raises with the host's name.
SOURCE = "linux"


#: ``parse_error(message, text, command=, line=, expected=)``: a ParseError from SOURCE that
#: keeps the whole raw output (``text``) for the report; ParseError's own keywords, not a copy
parse_error = partial(ParseError, SOURCE)


def to_int(token: str) -> int:
    """An integer that some tools print in %g notation (``1.04858e+06``)."""
    try:
        return int(token)
    except ValueError:
        return round(float(token))
