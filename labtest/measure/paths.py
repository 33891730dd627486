"""The fabric as a graph of components, and the routes traffic may take through it.

Root-cause inference needs, for each measurement, what its traffic crossed. Between
two hosts that is every shortest path through switches (the ECMP set: which member a
flow hashed onto is unknown unless the measurement says); each route is the set of
devices and links it crosses. Components are named as the testbed names them: a
device by its name, a link as ``a--b`` (its two ``device:port`` ends).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

from labtest.measure.coverage import Units

#: more equal-cost routes than this between two hosts are sampled evenly (a route's
#: share of the set is what inference uses, so a large fabric keeps its proportions)
MAX_ROUTES = 256


@dataclass(frozen=True, eq=False)
class Fabric:
    """Devices, links and who is cabled to whom, from a testbed's units."""

    units: Units

    @property
    def kind(self) -> Mapping[str, str]:
        return self.units.device_kind

    def is_host(self, name: str) -> bool:
        return self.kind.get(name) == "host"

    def is_switch(self, name: str) -> bool:
        return self.kind.get(name) == "switch"

    @property
    def adjacency(self) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
        return _adjacency(self)

    def link_of(self, device: str, port: str) -> str | None:
        return self.units.endpoint_link.get(f"{device}:{port}")

    def link_ends(self, link: str) -> tuple[str, str] | None:
        return self.units.link_devices.get(link)

    def host_links(self, host: str) -> tuple[str, ...]:
        return tuple(lk for nbrs in self.adjacency.get(host, {}).values() for lk in nbrs)

    def neighbours(self, device: str) -> tuple[str, ...]:
        return tuple(sorted(self.adjacency.get(device, {})))

    def routes(self, src: str, dst: str) -> tuple[frozenset[str], ...]:
        """Every shortest route from ``src`` to ``dst`` through switches (devices and links
        crossed, ends included); () when they are not connected."""
        return _routes(self, src, dst)


@cache
def _adjacency(fabric: Fabric) -> dict[str, dict[str, tuple[str, ...]]]:
    adj: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for link, (a, b) in fabric.units.link_devices.items():
        if a != b and {fabric.kind.get(a), fabric.kind.get(b)} <= {"switch", "host"}:
            adj[a][b].append(link)
            adj[b][a].append(link)
    return {d: {n: tuple(sorted(ls)) for n, ls in nbrs.items()} for d, nbrs in adj.items()}


@cache
def _routes(fabric: Fabric, src: str, dst: str) -> tuple[frozenset[str], ...]:
    adj = fabric.adjacency
    if src not in adj or dst not in adj:
        return ()
    if src == dst:
        return (frozenset({src}),)
    # breadth-first distances from src, through switches only (hosts do not forward)
    dist = {src: 0}
    queue = deque([src])
    while queue:
        here = queue.popleft()
        if here != src and not fabric.is_switch(here):
            continue
        for nxt in adj[here]:
            if nxt not in dist:
                dist[nxt] = dist[here] + 1
                queue.append(nxt)
    if dst not in dist:
        return ()
    out: list[frozenset[str]] = []

    def walk(node: str, crossed: list[str]) -> None:
        if len(out) >= MAX_ROUTES * 4:
            return
        if node == src:
            out.append(frozenset([*crossed, src]))
            return
        for prev, links in adj[node].items():
            if dist.get(prev) == dist[node] - 1 and (prev == src or fabric.is_switch(prev)):
                for link in links:
                    walk(prev, [*crossed, node, link])

    walk(dst, [])
    if len(out) > MAX_ROUTES:
        step = len(out) / MAX_ROUTES
        out = [out[int(i * step)] for i in range(MAX_ROUTES)]
    return tuple(out)


def hosts_of(route_sets: Iterable[Iterable[frozenset[str]]], fabric: Fabric) -> set[str]:
    return {c for routes in route_sets for r in routes for c in r if fabric.is_host(c)}
