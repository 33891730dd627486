"""``with`` for a connection: the one context-manager protocol the transports share."""

from __future__ import annotations

from typing import Protocol, Self


class _Closable(Protocol):
    def close(self) -> None: ...


class ClosedOnExit:
    """``with x:`` hands back ``x`` itself and closes it when the block ends, however it
    ends; the class supplies ``close``."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self: _Closable, *exc: object) -> None:
        self.close()
