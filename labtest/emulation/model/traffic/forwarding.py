"""Shortest-path ECMP over the cabling plan, and the timing of failover.

Routing sees a link only when the control plane does: a link that dies keeps
attracting traffic (which is lost) until its end devices have *detected* the
failure (BFD: multiplier x interval) and *converged* (FIB update); then flows
on it are rehashed onto the survivors. A returning link is used again after the
convergence time; traffic moves back without loss.

ECMP picks a member by a per-device hash of chosen header fields (the 5-tuple,
optionally the RoCE destination QP). Member choice is resilient: index = hash
mod the size of the *full* group, and only flows whose member is gone are
rehashed over the survivors, so a failure moves no healthy flow. Using the
same seed and ``mod n`` at every tier is what makes polarisation possible.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from labtest.emulation.model.traffic.flows import FiveTuple
from labtest.emulation.model.traffic.topology import Topology

HASH_FIELDS = frozenset({"src_ip", "dst_ip", "proto", "sport", "dport", "dst_qp"})
_MASK = (1 << 64) - 1
MAX_HOPS = 16


def _mix(h: int) -> int:
    """splitmix64 finaliser: every input bit affects every output bit."""
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
    h = (h ^ (h >> 27)) * 0x94D049BB133111EB & _MASK
    return h ^ (h >> 31)


def ecmp_hash(seed: int, fields: tuple[str, ...], t: FiveTuple) -> int:
    h = _mix(seed & _MASK)
    for name in fields:
        h = _mix(h ^ t.field(name))
    return h


@dataclass
class HashConfig:
    seed: int
    fields: tuple[str, ...]


class Routing:
    """Next-hop groups from the routed links, and the path a flow takes."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        n = len(topo.links)
        self.routed = np.ones(n, dtype=bool)
        self.hash: dict[str, HashConfig] = {
            d: HashConfig(int(topo.settings[d].hash_seed or 0), tuple(topo.settings[d].hash_fields))
            for d in topo.switches()
        }
        self._groups: dict[tuple[str, bool], dict[str, list[int]]] = {}

    def set_routed(self, routed: np.ndarray) -> None:
        if not np.array_equal(routed, self.routed):
            self.routed = routed.copy()
            self._groups = {k: v for k, v in self._groups.items() if k[1]}  # keep full-topology

    def invalidate(self) -> None:
        self._groups.clear()

    # --- next-hop groups ---------------------------------------------------

    def groups(self, target: str, full: bool = False) -> dict[str, list[int]]:
        """For each switch, its egress ports on shortest paths to switch ``target``."""
        key = (target, full)
        if key not in self._groups:
            self._groups[key] = self._bfs(target, full)
        return self._groups[key]

    def _bfs(self, target: str, full: bool) -> dict[str, list[int]]:
        topo = self.topo
        dist = {target: 0}
        queue = deque([target])
        while queue:
            d = queue.popleft()
            for p in topo.device_ports[d]:
                if not (full or self.routed[topo.ports[p].link]):
                    continue
                nb = topo.peer_device(p)
                if nb not in dist and topo.is_switch(nb):
                    dist[nb] = dist[d] + 1
                    queue.append(nb)
        groups: dict[str, list[int]] = {}
        for d, k in dist.items():
            if k == 0:
                continue
            members = [
                p
                for p in topo.device_ports[d]
                if (full or self.routed[topo.ports[p].link])
                and dist.get(topo.peer_device(p)) == k - 1
            ]
            groups[d] = sorted(members, key=lambda p: topo.ports[p].endpoint)
        return groups

    # --- paths -------------------------------------------------------------

    def choose(self, device: str, target: str, t: FiveTuple) -> int | None:
        current = self.groups(target).get(device, [])
        if not current:
            return None
        cfg = self.hash[device]
        h = ecmp_hash(cfg.seed, cfg.fields, t)
        full = self.groups(target, full=True).get(device, [])
        if full and set(current) <= set(full):
            member = full[h % len(full)]
            if member in current:
                return member
            return current[_mix(h) % len(current)]
        return current[h % len(current)]

    def path_when_routed(
        self, src: int, dst: int, t: FiveTuple, returning: np.ndarray
    ) -> list[int] | None:
        """The path once the ``returning`` links are routed again: where a flow goes back
        to when a flapping link comes back, whatever the link's state now."""
        if not (returning & ~self.routed).any():  # nothing to bring back: the cached groups
            return self.path(src, dst, t)
        saved_routed, saved_groups = self.routed, self._groups
        self.routed = saved_routed | returning
        self._groups = {k: v for k, v in saved_groups.items() if k[1]}
        try:
            return self.path(src, dst, t)
        finally:
            self.routed, self._groups = saved_routed, saved_groups

    def path(self, src: int, dst: int, t: FiveTuple) -> list[int] | None:
        """Egress ports from NIC ``src`` to NIC ``dst``, or None when there is no route."""
        topo = self.topo
        if not (self.routed[topo.ports[src].link] and self.routed[topo.ports[dst].link]):
            return None
        last = topo.ports[dst].peer  # the switch port facing the receiver
        target = topo.ports[last].device
        hops = [src]
        device = topo.peer_device(src)
        for _ in range(MAX_HOPS):
            if device == target:
                hops.append(last)
                return hops
            if not topo.is_switch(device):
                return None
            port = self.choose(device, target, t)
            if port is None:
                return None
            hops.append(port)
            device = topo.peer_device(port)
        return None


@dataclass
class LinkEvent:
    at_s: float
    link: int
    up: bool


class Convergence:
    """Turns physical link changes into routing changes after detection + convergence."""

    def __init__(self, topo: Topology, physical_up: np.ndarray) -> None:
        self.topo = topo
        self.physical = physical_up.copy()
        self.routed = physical_up.copy()
        self.pending: dict[int, LinkEvent] = {}
        self.extra_ms: dict[str, float] = {}  # slow_convergence fault

    def delay_s(self, link: int, up: bool) -> float:
        """The later of the two ends; a returning link needs no detection."""
        worst = 0.0
        for p in self.topo.links[link].ports:
            dev = self.topo.ports[p].device
            s = self.topo.settings[dev]
            conv = (s.convergence_ms + self.extra_ms.get(dev, 0.0)) / 1000.0
            worst = max(worst, conv if up else s.detection_s + conv)
        return worst

    def observe(self, now_s: float, physical_up: np.ndarray) -> None:
        for li in np.flatnonzero(physical_up != self.physical):
            up = bool(physical_up[li])
            self.physical[li] = up
            if up == self.routed[li]:
                self.pending.pop(int(li), None)  # flapped back before anyone noticed
            else:
                self.pending[int(li)] = LinkEvent(now_s + self.delay_s(int(li), up), int(li), up)

    def next_event_s(self) -> float:
        return min((e.at_s for e in self.pending.values()), default=float("inf"))

    def fire(self, now_s: float) -> bool:
        """Apply due events; True when the routed topology changed."""
        due = [e for e in self.pending.values() if e.at_s <= now_s + 1e-12]
        for e in due:
            self.routed[e.link] = e.up
            del self.pending[e.link]
        return bool(due)
