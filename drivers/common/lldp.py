"""One LLDP neighbour per local port when a port's table holds several.

A port's remote table keeps a neighbour until its hold time runs out (IEEE 802.1AB
rxInfoTTL, 120 s by default), so right after a re-cabling it lists the old and the new
neighbour. Every driver keeps the *newest* row (the largest freshness the device gives:
lldpRemTimeMark, the remaining TTL, the last contact time) and names the others in
``older_neighbours``, so the cabling suite judges the cable as it is now and knows the
table was still changing. Where a device prints no freshness at all, the first row in
the device's own order is kept, and the others are still named.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from labtest.capabilities.switch import LldpNeighbor


def _who(n: LldpNeighbor) -> str:
    return f"{n.remote_system or '?'}:{n.remote_port or '?'}"


def newest_per_port(rows: Iterable[tuple[str, LldpNeighbor, Any]]) -> dict[str, LldpNeighbor]:
    """``rows``: (local port, neighbour, freshness or None), in the device's order; a larger
    freshness is newer (comparable values: numbers or tuples of numbers)."""
    by_port: dict[str, list[tuple[int, LldpNeighbor, Any]]] = {}
    for order, (port, neighbour, fresh) in enumerate(rows):
        by_port.setdefault(port, []).append((order, neighbour, fresh))
    out: dict[str, LldpNeighbor] = {}
    for port, found in by_port.items():
        if all(f is not None for _, _, f in found):
            found.sort(key=lambda row: (row[2], -row[0]), reverse=True)
        best = found[0][1]
        older = tuple(dict.fromkeys(_who(n) for _, n, _ in found[1:] if _who(n) != _who(best)))
        out[port] = replace(best, older_neighbours=older) if older else best
    return out
