"""UDP path probes: where a probe with a chosen source port went, and whether it arrived.

A silent drop or an ECMP member that blackholes some flows leaves every counter
clean; only traffic that crosses it can tell. A probe's source port picks its
ECMP path, so probing a peer on several source ports covers its paths, and a
traceroute-style probe (the same 5-tuple at growing TTLs, Paris-traceroute
style) also says which routers the path crossed: each answers from the
interface the probe came in on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class TraceHop:
    """One TTL: who answered (in order, usually one address) and how many of the probes."""

    ttl: int
    addresses: tuple[str, ...]
    sent: int
    answered: int
    rtt_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class UdpTrace:
    """Probes of one 5-tuple (target, source port, destination port) at TTL 1, 2, ..."""

    target: str
    sport: int
    dport: int
    hops: tuple[TraceHop, ...]

    @property
    def reached(self) -> bool:
        return any(self.target in h.addresses for h in self.hops)

    @property
    def sent(self) -> int:
        """Probes that could have reached the target (those at its TTL, else at the last)."""
        return self._last().sent if self.hops else 0

    @property
    def arrived(self) -> int:
        """Probes the target answered (at its TTL)."""
        last = self._last() if self.hops else None
        return last.answered if last is not None and self.target in last.addresses else 0

    def _last(self) -> TraceHop:
        return next((h for h in self.hops if self.target in h.addresses), self.hops[-1])


@runtime_checkable
class UdpProbes(Protocol):
    def probe_address(self) -> str:
        """The data-plane address peers probe this host at."""
        ...

    def udp_traces(self, target: str, sports: Sequence[int], *, dport: int = 33434,
                   probes: int = 3, wait_s: float = 0.5, max_hops: int = 8) -> list[UdpTrace]:
        """One trace per source port to ``target`` (``probes`` per TTL, each waited for
        ``wait_s`` at most), in the order of ``sports``."""
        ...
