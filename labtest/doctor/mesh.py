"""The probe mesh on a live lab: UDP traceroutes between hosts, through their drivers.

Each interval :func:`labtest.doctor.probes.plan_mesh` picks the pairs and source
ports (the ToR mesh plus inter-leaf peers, enough source ports to cover every
ECMP path); every host that offers ``UdpProbes`` runs its traces (one command
line per host, all hosts at once through :func:`labtest.sweep.sweep`). A trace
becomes a :class:`ProbePath` the blame stage votes on: its links are read from
the hops that answered (a router answers from the interface the probe came in
on, and the switches' BGP sessions say which link holds that address); a hop
nobody answered (or one whose address no switch knows) stands for every link
that could have been crossed there on a shortest path of the cabling plan, so
the vote, not a guess, decides among them. Probes count as lost when the target
did not answer them.

What it cannot see: the answer's own return path (a reply lost on a link the
probe never crossed is charged to the probe's path), and RDMA-level trouble
(these are UDP probes, not RDMA ones).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labtest.doctor.evidence import Snapshot
from labtest.doctor.judge import Plan
from labtest.doctor.probes import OverBudget, ProbePath, plan_mesh
from labtest.lab import Lab
from labtest.sweep import sweep
from labtest.testbed.model import Link

#: roles that end a path and never forward (hosts, traffic generators, instruments); the
#: traffic model's ENDPOINT_ROLES are only the ends traffic flows between (host, tg)
NON_FORWARDING_ROLES = frozenset({"host", "tg", "bert", "opm", "voa", "optical-switch",
                                  "chamber", "pdu", "power-meter", "attenuator"})


@dataclass
class LiveMesh:
    plan: Plan
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(20))
    peers_per_host: int = 4
    #: per TTL (traceroute -q): 10, not the default 3, so an access link carries ~500 probes an
    #: interval on the default lab: a 1 % loss shows within a minute, a clean link is cleared
    #: of it (pager.DETECT_LOSS at 99 %: 459 clean probes) in one interval
    probes: int = 10
    wait_s: float = 0.2  # per unanswered probe (traceroute -w)
    timeout_s: float = 120.0
    addresses: dict[str, str] = field(default_factory=dict)  # host -> its probe address
    _dists: dict[str, dict[str, int]] = field(default_factory=dict)  # the plan does not change

    def run(self, lab: Lab, snap: Snapshot) -> list[ProbePath]:
        """One interval's probe paths; what could not be probed goes in ``snap.not_observed``."""
        tb = self.plan.testbed
        hosts = [n for n in tb.devices if tb.devices[n].role == "host"]
        probing = set(lab.names(capability="UdpProbes"))
        for h in hosts:
            if h not in probing:
                snap.not_observed[f"{h} probes"] = "driver offers no UdpProbes"
        need = [h for h in hosts if h in probing and h not in self.addresses]
        res = sweep(lab, need, lambda drv: drv.probe_address(), timeout_s=self.timeout_s)
        self.addresses.update(res.ok)
        for h, err in res.failed.items():
            snap.not_observed[f"{h} probes"] = f"no probe address: {type(err).__name__}: {err}"
        leaves = {h: self._leaf(h) for h in self.addresses}
        leaf_of = {h: lf for h, lf in leaves.items() if lf is not None}
        if len(leaf_of) < 2:
            snap.not_observed["probe mesh"] = (
                f"{len(leaf_of)} host(s) can probe (UdpProbes with an address): no pair")
            return []
        try:
            mesh = plan_mesh(leaf_of, self._ecmp_width(), self.rng,
                             peers_per_host=self.peers_per_host, probes_per_path=self.probes)
        except OverBudget as exc:
            snap.not_observed["probe mesh"] = str(exc)
            return []
        by_src: dict[str, dict[str, list[int]]] = {}
        for (src, dst), sports in mesh.probes_by_pair().items():
            by_src.setdefault(src, {})[dst] = sports
        hops = self.max_hops()

        def trace(drv: Any) -> list[ProbePath]:
            out = []
            for dst, sports in by_src[drv.name].items():
                for t in drv.udp_traces(self.addresses[dst], sports, probes=self.probes,
                                        wait_s=self.wait_s, max_hops=hops):
                    out.append(ProbePath(drv.name, dst, self.links(drv.name, dst, t, snap),
                                         t.sent, t.sent - t.arrived))
            return out

        done = sweep(lab, list(by_src), trace, timeout_s=self.timeout_s)
        for h, err in done.failed.items():
            snap.not_observed[f"{h} probes"] = f"{type(err).__name__}: {err}"
        return [p for paths in done.ok.values() for p in paths]

    def links(self, src: str, dst: str, trace: Any, snap: Snapshot) -> tuple[str, ...]:
        """The links a trace crossed: pinned where a hop's address names one, else every
        link a shortest path could have taken there."""
        dist = self._dist(dst)
        at = {src}
        out: list[str] = []
        for hop in trace.hops:
            if dst in at:
                break
            cands = [(lk, far) for d in at for lk in self.plan.testbed.links_of(d)
                     for far in [self._far(lk, d)] if dist.get(far, -1) == dist[d] - 1
                     and (far == dst or self._forwards(far))]
            known = self._link_of(hop.addresses, dst, snap)
            pinned = [(lk, far) for lk, far in cands if lk.name == known]
            step = pinned or cands
            if not step:
                break
            out += [lk.name for lk, _ in step]
            at = {far for _, far in step}
        return tuple(dict.fromkeys(out))

    def _link_of(self, addresses: tuple[str, ...], dst: str, snap: Snapshot) -> str | None:
        for a in addresses:
            if a == self.addresses.get(dst):
                return self._access(dst).name
            near = snap.addresses.get(a)
            if near is not None and near in self.plan.link_of:
                return self.plan.link_of[near].name
        return None

    def _forwards(self, device: str) -> bool:
        """A probe passes through it (a traffic generator cabled to two leaves does not)."""
        return self.plan.testbed.devices[device].role not in NON_FORWARDING_ROLES

    def _access(self, host: str) -> Link:
        return self.plan.testbed.links_of(host)[0]

    def _leaf(self, host: str) -> str | None:
        links = self.plan.testbed.links_of(host)
        return self._far(links[0], host) if links else None

    @staticmethod
    def _far(lk: Link, device: str) -> str:
        a, b = lk.ends
        return b.device if a.device == device else a.device

    def _dist(self, target: str) -> dict[str, int]:
        """Hops from every device to ``target`` over the cabling plan (hosts are ends only)."""
        if target in self._dists:
            return self._dists[target]
        tb = self.plan.testbed
        dist = self._dists[target] = {target: 0}
        queue = deque([target])
        while queue:
            d = queue.popleft()
            if d != target and tb.devices[d].role in NON_FORWARDING_ROLES:
                continue  # no transit through a host or an instrument
            for lk in tb.links_of(d):
                far = self._far(lk, d)
                if far not in dist:
                    dist[far] = dist[d] + 1
                    queue.append(far)
        return dist

    def _ecmp_width(self) -> int:
        """Equal-cost paths between leaves: the most uplinks (links to switches) of a leaf."""
        tb = self.plan.testbed
        leaves = {self._leaf(h) for h in self.addresses} - {None}
        return max((sum(1 for lk in tb.links_of(lf) if tb.devices[self._far(lk, lf)].role
                        not in NON_FORWARDING_ROLES) for lf in leaves if lf is not None), default=1)

    def max_hops(self) -> int:
        """TTLs a trace needs to reach any probing host (the longest host-to-host path)."""
        return self._diameter() + 1

    def _diameter(self) -> int:
        hosts = list(self.addresses)
        return max((self._dist(h).get(o, 0) for h in hosts for o in hosts), default=1)
