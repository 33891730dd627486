"""Command-line words shared by the emulated tools that parse their own options."""

from __future__ import annotations

from collections.abc import Mapping


class MissingValue(ValueError):
    """An option that takes a value was the last word."""


def valued_option(word: str, rest: list[str], valued: Mapping[str, str]) -> tuple[str, str] | None:
    """``(key, value)`` when ``word`` names an option of ``valued`` (``--port=5``, or ``-p``
    with the value popped from ``rest``); None when it is not one of them. One reading of
    ``name=value`` and ``name value`` for iperf3 and traceroute, whose errors differ."""
    name, eq, value = word.partition("=")
    if name not in valued:
        return None
    if not eq:
        if not rest:
            raise MissingValue(word)
        value = rest.pop(0)
    return valued[name], value
