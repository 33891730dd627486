"""The probe mesh on a live lab: UDP traceroutes between hosts, through their drivers.

Each interval :func:`labtest.measure.probes.plan_mesh` picks the pairs and source
ports (the ToR mesh plus inter-leaf peers, enough source ports to cover every
ECMP path); every host that offers ``UdpProbes`` runs its traces (one command
line per host, all hosts at once through :func:`labtest.sweep.sweep`). A trace
becomes a :class:`ProbePath` the blame stage votes on: its links are read from
the hops that answered (a router answers from the interface the probe came in
on, and the switches' BGP sessions say which link holds that address); a hop
nobody answered (or one whose address no switch knows) stands for every link
that could have been crossed there on a shortest path of the cabling plan, so
the vote, not a guess, decides among them. Probes count as lost when the target
did not answer them. A switch on the way whose answer can only have come back over
the links its probe crossed (a spine, the source's leaf) makes a path of its own,
``via_switch``: such paths tell twin links apart and never vote with the others.

What it cannot see: the answer's own return path (a reply lost on a link the
probe never crossed is charged to the probe's path), and RDMA-level trouble
(these are UDP probes, not RDMA ones).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labtest.capabilities.probes import UdpTrace
from labtest.doctor.evidence import Snapshot
from labtest.doctor.judge import Plan
from labtest.lab import Lab
from labtest.measure.probes import OverBudget, ProbePath, plan_mesh
from labtest.measure.traces import TraceReader
from labtest.sweep import sweep


@dataclass
class Traced:
    """One interval's raw traces (source host -> (target host, trace)) and what could not
    be probed."""

    traces: dict[str, list[tuple[str, UdpTrace]]] = field(default_factory=dict)
    not_observed: dict[str, str] = field(default_factory=dict)


#: source ports per inter-leaf pair (times the coverage's 8 for two paths) while twins wait
#: on the flows' shares: at 8 flows a pair a round, a leaf's holed uplink took 3 to 12 rounds
#: to tell in the model of tests/doctor/test_twins.py, or more than 16
SIBLING_PORTS_FACTOR = 4


#: probes per TTL of each flow while the ports are raised: enough that a flow lost whole is
#: a hole, not a rate (a 30 % lossy link loses 8 of 8 once in 15,000 flows), and the round
#: no longer than before (kernel campaign 009: 4x ports at 30 probes took a 152 s round)
HOLE_PROBES = 8


def hole_mesh(probes: int, undecided: bool) -> tuple[int, int]:
    """(ports factor, probes per TTL) of the next mesh: while a hole's uplinks are undecided,
    more flows of fewer probes each (as many probes in all, at least ``HOLE_PROBES`` a TTL)."""
    if not undecided:
        return 1, probes
    return SIBLING_PORTS_FACTOR, max(math.ceil(probes / SIBLING_PORTS_FACTOR), HOLE_PROBES)


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
    #: the doctor sets it while a hole's uplinks are undecided (``FlowShares``: their flows'
    #: shares tell them apart): more flows of fewer probes each (``hole_mesh``)
    for_holes: bool = False
    timeout_s: float = 120.0
    addresses: dict[str, str] = field(default_factory=dict)  # host -> its probe address
    reader: TraceReader = field(init=False)

    def __post_init__(self) -> None:
        self.reader = TraceReader(self.plan.testbed, self.addresses)  # shares the addresses

    def run(self, lab: Lab, snap: Snapshot) -> list[ProbePath]:
        """One interval's probe paths; what could not be probed goes in ``snap.not_observed``."""
        return self.read(self.trace(lab), snap)

    def trace(self, lab: Lab) -> Traced:
        """Run this interval's traces (all hosts at once); ``read`` makes them paths with
        the switches' BGP peers. ``Doctor.interval`` runs them after the watch: traced
        during it, a flow lost while routing reconverged after a drop paged an innocent
        link (docs/doctor.md)."""
        tb = self.plan.testbed
        out = Traced()
        hosts = [n for n in tb.devices if tb.devices[n].role == "host"]
        probing = set(lab.names(capability="UdpProbes"))
        for h in hosts:
            if h not in probing:
                out.not_observed[f"{h} probes"] = "driver offers no UdpProbes"
        need = [h for h in hosts if h in probing and h not in self.addresses]
        res = sweep(lab, need, lambda drv: drv.probe_address(), timeout_s=self.timeout_s)
        self.addresses.update(res.ok)
        for h, err in res.failed.items():
            out.not_observed[f"{h} probes"] = f"no probe address: {type(err).__name__}: {err}"
        leaves = {h: self._leaf(h) for h in self.addresses}
        leaf_of = {h: lf for h, lf in leaves.items() if lf is not None}
        if len(leaf_of) < 2:
            out.not_observed["probe mesh"] = (
                f"{len(leaf_of)} host(s) can probe (UdpProbes with an address): no pair")
            return out
        factor, probes = hole_mesh(self.probes, self.for_holes)
        try:
            mesh = plan_mesh(leaf_of, self._ecmp_width(), self.rng,
                             peers_per_host=self.peers_per_host, probes_per_path=probes,
                             ports_factor=factor)
        except OverBudget as exc:
            out.not_observed["probe mesh"] = str(exc)
            return out
        by_src: dict[str, dict[str, list[int]]] = {}
        for (src, dst), sports in mesh.probes_by_pair().items():
            by_src.setdefault(src, {})[dst] = sports
        hops = self.max_hops()

        def run(drv: Any) -> list[tuple[str, UdpTrace]]:
            return [(dst, t) for dst, sports in by_src[drv.name].items()
                    for t in drv.udp_traces(self.addresses[dst], sports, probes=probes,
                                            wait_s=self.wait_s, max_hops=hops)]

        done = sweep(lab, list(by_src), run, timeout_s=self.timeout_s)
        for h, err in done.failed.items():
            out.not_observed[f"{h} probes"] = f"{type(err).__name__}: {err}"
        out.traces = done.ok
        return out

    def read(self, traced: Traced, snap: Snapshot) -> list[ProbePath]:
        """The traces as probe paths, pinned by this interval's BGP peers (``snap``), and
        the switches' answers on the way as paths of their own (``via_switch``)."""
        snap.not_observed.update(traced.not_observed)
        every = [(src, dst, t) for src, traces in traced.traces.items() for dst, t in traces]
        peers = self.reader.learned(every, snap.addresses)  # hops past a late switch too
        return probe_paths(self.reader, every, peers)

    def links(self, src: str, dst: str, trace: Any, snap: Snapshot) -> tuple[str, ...]:
        """The links a trace crossed (``labtest.measure.traces``), the switches' BGP peers
        from this interval's snapshot pinning its answered hops."""
        return self.reader.links(src, dst, trace, snap.addresses)

    def _leaf(self, host: str) -> str | None:
        links = self.plan.testbed.links_of(host)
        return self.reader.far(links[0], host) if links else None

    def _ecmp_width(self) -> int:
        """Equal-cost paths between leaves: the most uplinks (links to switches) of a leaf."""
        tb = self.plan.testbed
        leaves = {self._leaf(h) for h in self.addresses} - {None}
        far, forwards = self.reader.far, self.reader.forwards
        return max((sum(1 for lk in tb.links_of(lf) if forwards(far(lk, lf)))
                    for lf in leaves if lf is not None), default=1)

    def max_hops(self) -> int:
        return self.reader.max_hops()


def probe_paths(reader: TraceReader, traces: Sequence[tuple[str, str, UdpTrace]],
                peers: Mapping[str, str]) -> list[ProbePath]:
    """One interval's traces (source, target, trace) as probe paths, and the switches'
    answers on the way as paths of their own (``via_switch``).

    A flow lost whole (a hole, a dark moment) is suspected only on the step past its last
    answering hop (``TraceReader.vanished_on``: Paris-style, the hops that answered were
    reached by the flow), when every device at that step's ends answered some trace of the
    interval: a switch that answers nobody says nothing about where a flow died, and the
    whole path stays suspect. A hole on a leaf's way up then narrows to the leaf's uplinks,
    which the flows' shares over them tell apart across intervals (``Doctor``)."""
    answering: set[str] = set()
    for src, dst, t in traces:
        answering |= reader.answerers(src, dst, t, peers) | {src}
        if t.arrived:
            answering.add(dst)
    out = []
    for src, dst, t in traces:
        links = reader.links(src, dst, t, peers)
        suspects: tuple[str, ...] = ()
        if t.sent and not t.arrived:
            past = reader.vanished_on(src, dst, t, peers)
            ends = {e.device for lk in reader.testbed.links if lk.name in past for e in lk.ends}
            if past and ends <= answering:
                suspects = past
        out.append(ProbePath(src, dst, links, t.sent, t.sent - t.arrived, suspects))
        out += [ProbePath(src, sw, sl, sent, lost, via_switch=True)
                for sw, sl, sent, lost in reader.switch_answers(src, dst, t, peers)]
    return out
