"""A UDP trace read against the cabling plan: the links each of its hops crossed.

A router answers a probe from the interface the probe came in on, and a switch's BGP
session on that link knows the address as its peer's, so an answered hop pins the link it
came over. A hop nobody answered (or whose address no switch knows) stands for every link
a shortest path of the plan could have taken there: the vote over many traces, not a
guess, decides among them. Hosts and instruments are path ends, never transit (a traffic
generator cabled to two leaves is two hops from a host, as the spines are, and forwards
nothing). Both the doctor's probe mesh and the paths suite read traces here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from labtest.capabilities.probes import UdpTrace
from labtest.testbed.model import Link, Testbed

#: roles that end a path and never forward (hosts, traffic generators, instruments); the
#: traffic model's ENDPOINT_ROLES are only the ends traffic flows between (host, tg)
NON_FORWARDING_ROLES = frozenset({"host", "tg", "bert", "opm", "voa", "optical-switch",
                                  "chamber", "pdu", "power-meter", "attenuator"})


@dataclass
class TraceReader:
    testbed: Testbed
    hosts: dict[str, str] = field(default_factory=dict)  # host -> its probe address
    _dists: dict[str, dict[str, int]] = field(default_factory=dict)  # the plan does not change
    _link_of: dict[str, Link] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._link_of = {str(e): lk for lk in self.testbed.links for e in lk.ends}

    def links(self, src: str, dst: str, trace: UdpTrace, peers: Mapping[str, str]
              ) -> tuple[str, ...]:
        """The links a trace crossed, in order: pinned where a hop's address names one (a
        BGP peer address in ``peers``, -> the "device:port" facing it), else every link a
        shortest path could have taken there."""
        at = {src}
        out: list[str] = []
        for hop in trace.hops:
            if dst in at:
                break
            cands = self._next_steps(at, dst)
            known = self._named(hop.addresses, dst, peers)
            pinned = [(lk, far) for lk, far in cands if lk.name == known]
            step = pinned or cands
            if not step:
                break
            out += [lk.name for lk, _ in step]
            at = {far for _, far in step}
        return tuple(dict.fromkeys(out))

    def learned(self, traces: Iterable[tuple[str, str, UdpTrace]], peers: Mapping[str, str]
                ) -> dict[str, str]:
        """``peers`` and the hop addresses the traces themselves pin: a hop that answered
        from an address no BGP session names, followed by a hop that pins its link (whose
        near end is then the unnamed hop's device), answered from that device's port
        toward the hop before (one link between the two). So a switch whose own read is
        late (its sessions name its neighbours' addresses) does not leave every hop past it
        unpinned (issue 34: a late leaf3 made twins of its two uplinks). An address pinned
        to two links (a router answering from one address whatever the ingress) is left
        out."""
        found: dict[str, set[str]] = {}
        for src, dst, trace in traces:
            at = {src}
            for hop, nxt in zip(trace.hops, trace.hops[1:], strict=False):
                if dst in at:
                    break
                cands = self._next_steps(at, dst)
                known = self._named(hop.addresses, dst, peers)
                then = self._named_link(nxt.addresses, dst, peers)
                if known is None and then is not None and len(hop.addresses) == 1:
                    ends = {e.device for e in then.ends}
                    mine = [(lk, far) for lk, far in cands if far in ends]
                    if len(mine) == 1:
                        lk, far = mine[0]
                        found.setdefault(hop.addresses[0], set()).add(
                            next(str(e) for e in lk.ends if e.device == far))
                        known = lk.name
                step = [(lk, far) for lk, far in cands if lk.name == known] or cands
                if not step:
                    break
                at = {far for _, far in step}
        out = dict(peers)
        for address, where in found.items():
            if len(where) == 1 and address not in out:
                out[address] = where.pop()
        return out

    def _next_steps(self, at: set[str], dst: str) -> list[tuple[Link, str]]:
        """(link, far device) one hop on from ``at`` along a shortest path to ``dst``."""
        dist = self.dist(dst)
        return [(lk, far) for d in at for lk in self.testbed.links_of(d)
                for far in [self.far(lk, d)] if dist.get(far, -1) == dist[d] - 1
                and (far == dst or self.forwards(far))]


    def answerers(self, src: str, dst: str, trace: UdpTrace, peers: Mapping[str, str]
                  ) -> set[str]:
        """The devices known to have answered one of the trace's hops: a hop pinned to one
        link (or with one candidate) that answered was answered from its far end. A device
        that answers nobody (a switch whose time-exceeded answers are off) is then told from
        one whose answers a hole swallowed."""
        at, out = {src}, set()
        for hop in trace.hops:
            if dst in at:
                break
            cands = self._next_steps(at, dst)
            known = self._named(hop.addresses, dst, peers)
            step = [(lk, far) for lk, far in cands if lk.name == known] or cands
            if not step:
                break
            if len(step) == 1 and hop.answered:
                out.add(step[0][1])
            at = {far for _, far in step}
        return out

    def vanished_on(self, src: str, dst: str, trace: UdpTrace, peers: Mapping[str, str]
                    ) -> tuple[str, ...]:
        """Where a flow whose probes all went unanswered at the target was lost: the links of
        the step past its last answering hop. Paris-style, every TTL of a trace is the same
        5-tuple, so a hop that answered was reached by the flow, whatever way its answer
        came back; an unanswered one may be its answer's loss, so nothing past the next step
        is suspected."""
        last = max((i for i, h in enumerate(trace.hops) if h.answered), default=-1)
        reached = self.links(src, dst, _first(trace, last + 1), peers)
        past = self.links(src, dst, _first(trace, last + 2), peers)
        return tuple(lk for lk in past if lk not in reached)

    def switch_answers(self, src: str, dst: str, trace: UdpTrace, peers: Mapping[str, str]
                       ) -> list[tuple[str, tuple[str, ...], int, int]]:
        """The trace's hops that are probes of their own, as (switch, links, sent, lost): a
        switch's answer whose only way back to ``src`` is the links its probe crossed (the
        source's leaf, a spine of a two-tier fabric). They tell apart two links every
        end-to-end probe crosses together (a spine's links to the only two leaves). A hop
        whose answerer is not pinned stands for each candidate with all its probes lost (a
        hole leaves no answer to pin, and must not make the link that swallowed it look
        clean). A switch with more than one way back (the far leaf, whose answer may return
        over another ECMP member) is left out: that is why the middle hops are no paths of
        the end-to-end vote (``doctor.md``)."""
        dist = self.dist(dst)
        prefix: tuple[str, ...] = ()
        at = src
        out: list[tuple[str, tuple[str, ...], int, int]] = []
        for hop in trace.hops:
            cands = [(lk, far) for lk in self.testbed.links_of(at)
                     for far in [self.far(lk, at)] if dist.get(far, -1) == dist[at] - 1
                     and far != dst and self.forwards(far)]
            known = self._named(hop.addresses, dst, peers)
            step = [(lk, far) for lk, far in cands if lk.name == known] or cands
            for lk, far in step:
                links = (*prefix, lk.name)
                if set(self.way_back(far, src) or ()) == set(links):
                    lost = hop.sent - hop.answered if len(step) == 1 else hop.sent
                    out.append((far, links, hop.sent, lost))
            if len(step) != 1:
                break
            prefix, at = (*prefix, step[0][0].name), step[0][1]
        return out

    def way_back(self, device: str, src: str) -> tuple[str, ...] | None:
        """The links of the one shortest path from ``device`` to ``src`` (None: several)."""
        dist = self.dist(src)
        if device not in dist:
            return None
        out, at = [], device
        while at != src:
            step = [lk for lk in self.testbed.links_of(at) for far in [self.far(lk, at)]
                    if dist.get(far, -1) == dist[at] - 1 and (far == src or self.forwards(far))]
            if len(step) != 1:
                return None
            out.append(step[0].name)
            at = self.far(step[0], at)
        return tuple(reversed(out))

    def max_hops(self) -> int:
        """TTLs a trace needs to reach any probing host (the longest host-to-host path)."""
        hosts = list(self.hosts)
        return max((self.dist(h).get(o, 0) for h in hosts for o in hosts), default=1) + 1

    def forwards(self, device: str) -> bool:
        return self.testbed.devices[device].role not in NON_FORWARDING_ROLES

    @staticmethod
    def far(lk: Link, device: str) -> str:
        a, b = lk.ends
        return b.device if a.device == device else a.device

    def dist(self, target: str) -> dict[str, int]:
        """Hops from every device to ``target`` over the cabling plan (hosts are ends only)."""
        if target in self._dists:
            return self._dists[target]
        dist = self._dists[target] = {target: 0}
        queue = deque([target])
        while queue:
            d = queue.popleft()
            if d != target and not self.forwards(d):
                continue  # no transit through a host or an instrument
            for lk in self.testbed.links_of(d):
                far = self.far(lk, d)
                if far not in dist:
                    dist[far] = dist[d] + 1
                    queue.append(far)
        return dist

    def _named(self, addresses: tuple[str, ...], dst: str, peers: Mapping[str, str]
               ) -> str | None:
        link = self._named_link(addresses, dst, peers)
        return link.name if link is not None else None

    def _named_link(self, addresses: tuple[str, ...], dst: str, peers: Mapping[str, str]
                    ) -> Link | None:
        for a in addresses:
            if a == self.hosts.get(dst):
                return self.testbed.links_of(dst)[0]
            near = peers.get(a)
            if near is not None and near in self._link_of:
                return self._link_of[near]
        return None


def _first(trace: UdpTrace, hops: int) -> UdpTrace:
    return UdpTrace(trace.target, trace.sport, trace.dport, trace.hops[:max(hops, 0)])
