"""Command-line words shared by the emulated tools that parse their own options."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class MissingValue(ValueError):
    """An option that takes a value was the last word."""

    def __init__(self, word: str) -> None:
        super().__init__(word)
        self.word = word


def option_words(words: list[str], valued: Mapping[str, str]) -> Iterator[tuple[str | None, str]]:
    """Walk ``words``: ``(key, value)`` for an option of ``valued`` (``--port=5``, or ``-p``
    and the next word), ``(None, word)`` for any other word, left to the tool. One reading of
    ``name=value`` and ``name value`` for iperf3 and traceroute, whose errors differ."""
    rest = list(words)
    while rest:
        word = rest.pop(0)
        name, eq, value = word.partition("=")
        if name not in valued:
            yield None, word
            continue
        if not eq:
            if not rest:
                raise MissingValue(word)
            value = rest.pop(0)
        yield valued[name], value
