"""Latency under load: which pairs, which hops they cross, which queue holds the delay.

Pure functions over the cabling plan and counter deltas (unit-tested in
tests/suites/test_latency_units.py); the suite module runs the traffic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from labtest.fixtures.cabling_plan import hosts_by_switch
from labtest.fixtures.run_counters import PortDelta
from labtest.fixtures.traffic import FabricView
from labtest.measure import Limit, Verdict


def pick_pairs(view: FabricView, setting: object, max_pairs: int) -> list[tuple[str, str]]:
    """(client, server) pairs whose latency is measured under an incast into the server.

    ``auto``: for each leaf with hosts, in testbed order, its first host is the server and
    the first host of the next leaf the client: every leaf's host-facing egress (where an
    N:1 incast queues) is judged once, and each latency flow crosses the fabric (uplink,
    spine, downlink) as an inference request from another rack does. An explicit list of
    ``[client, server]`` names is taken as given (unknown hosts raise ValueError).
    """
    if setting != "auto":
        if not isinstance(setting, list):
            why = f"latency pairs: 'auto' or a list of [client, server], got {setting!r}"
            raise ValueError(why)
        pairs = []
        for item in setting:
            client, server = (str(x) for x in item)
            for h in (client, server):
                if h not in view.attachment:
                    raise ValueError(f"latency pairs: {h!r} is not a RoCE host with a link")
            pairs.append((client, server))
        return pairs[:max_pairs]
    groups = list(hosts_by_switch(view.attachment).values())
    if len(groups) == 1:
        group = groups[0]
        return [(group[1], group[0])] if len(group) > 1 else []
    pairs = [(groups[(i + 1) % len(groups)][0], g[0]) for i, g in enumerate(groups)]
    return pairs[:max_pairs]


def incast_senders(view: FabricView, pair: tuple[str, str], max_senders: int) -> list[str]:
    """Every other host writes to the server: the incast shares the latency flow's last
    egress (the server's leaf port), the queue the issue's inference fabric must keep short."""
    client, server = pair
    return [h for h in view.hosts if h not in (client, server)][:max_senders]


@dataclass(frozen=True)
class Hop:
    """A switch egress port the latency flow may cross, client side first."""

    device: str
    port: str
    peer: str | None = None  # the device this egress sends to (None: not known)

    @property
    def endpoint(self) -> str:
        return f"{self.device}:{self.port}"


def path_hops(view: FabricView, client: str, server: str) -> list[Hop]:
    """Every switch egress the flow can take (all ECMP members), in path order: the client
    leaf's uplinks, the spines' ports down to the server's leaf, the server's leaf port."""
    c, s = view.attachment[client], view.attachment[server]
    hops: list[Hop] = []
    if c.switch != s.switch:
        for up in view.uplinks.get(c.switch, []):
            hops.append(Hop(up.switch, up.port, up.peer))
        for up in view.uplinks.get(c.switch, []):
            for down in view.uplinks.get(up.peer, []):
                if down.peer == s.switch:
                    hops.append(Hop(down.switch, down.port, down.peer))
    hops.append(Hop(s.switch, s.switch_port, server))
    return list(dict.fromkeys(hops))


@dataclass(frozen=True)
class HopEvidence:
    """What one egress queue showed while the latency flow ran beside the incast."""

    hop: Hop
    priority: int
    ecn_marked: int | None  # marks on that queue; None where the switch does not count them
    paused: int  # pause frames the port received on the priority: held by its peer
    xoff_sent: int  # pause frames its switch sent on the priority: its buffers hit XOFF
    #: whether its PFC or queue counters were read (a driver without PfcQueues reads none:
    #: then its zeros above say nothing)
    counted: bool = True

    @property
    def queue(self) -> str:
        return f"{self.hop.endpoint}:{self.priority}"

    @property
    def busy(self) -> bool:
        return bool(self.ecn_marked) or self.paused > 0 or self.xoff_sent > 0

    def summary(self) -> str:
        if not self.counted:
            return "PFC and queue counters not read"
        marks = "n/a" if self.ecn_marked is None else str(self.ecn_marked)
        return f"ecn_marked={marks} pfc_rx={self.paused} switch_pfc_tx={self.xoff_sent}"


def hop_evidence(
    hops: Sequence[Hop], deltas: Mapping[str, PortDelta], priority: int
) -> list[HopEvidence]:
    xoff: dict[str, int] = {}
    for delta in deltas.values():
        if delta.pfc_tx:
            xoff[delta.device] = xoff.get(delta.device, 0) + delta.pfc_tx_on([priority])
    out = []
    for hop in hops:
        d = deltas.get(hop.endpoint)
        marks = None
        if d is not None and d.queue_ecn_marked:
            marks = d.queue_ecn_marked.get(priority, 0)
        paused = d.pfc_rx_on([priority]) if d is not None else 0
        counted = d is not None and (any(v is not None for v in d.pfc_rx)
                                     or bool(d.queue_ecn_marked))
        out.append(HopEvidence(hop, priority, marks, paused, xoff.get(hop.device, 0), counted))
    return out


def congested_queue(evidence: Sequence[HopEvidence]) -> tuple[HopEvidence, str]:
    """The queue that holds the delay, and why it is named.

    PFC spreads a queue upstream: a port its peer pauses holds bytes because the hop after
    it is full. So the hop furthest down the path that shows congestion (ECN marks: the
    queue passed Kmin; its switch sent pause frames: an ingress hit XOFF; or it was paused)
    is the origin. A paused hop whose peer's egress on the path has no counters read points
    past itself: that egress is named (an NX-OS leaf reads no queues; naming the spine port
    it paused blamed an innocent device). With no evidence anywhere (no counters), the last
    hop is named: the incast's egress, where an N:1 incast queues by construction.
    """
    if not evidence:
        raise ValueError("a path has at least the server's leaf port")
    for i in range(len(evidence) - 1, -1, -1):
        ev = evidence[i]
        if not ev.busy:
            continue
        past = [e for e in evidence[i + 1:] if not e.counted and e.hop.device == ev.hop.peer]
        if ev.paused > 0 and past:
            return past[-1], (f"{ev.queue} was paused by {ev.hop.peer} ({ev.summary()}); "
                              f"{past[-1].queue} is past it, its counters not read")
        return ev, ev.summary()
    last = evidence[-1]
    return last, f"no congestion counters moved ({last.summary()}): the incast's egress"


def shifted_permutations(hosts: Sequence[str], shifts: int) -> list[tuple[str, str]]:
    """An all-to-all schedule bounded to ``shifts`` rounds run at once: in round k every host
    writes to the host k places after it (hosts in testbed order, wrapping), so every host
    sends and receives ``shifts`` flows; ``shifts >= len(hosts) - 1`` is the full all-to-all."""
    n = len(hosts)
    rounds = range(1, min(max(shifts, 1), n - 1) + 1)
    return [(hosts[i], hosts[(i + k) % n]) for k in rounds for i in range(n)]


def neighbour(view: FabricView, pair: tuple[str, str]) -> str | None:
    """Another host on the server's leaf: an incast into it congests an egress the latency
    flow does not take, on the switch its packets enter last."""
    client, server = pair
    leaf = view.attachment[server].switch
    return next((h for h, a in view.attachment.items()
                 if a.switch == leaf and h not in (client, server)), None)  # fmt: skip


def upstream_senders(view: FabricView, pair: tuple[str, str], max_senders: int) -> list[str]:
    """Hosts on other leaves than the server's (not the client): their writes to the
    server's neighbour enter the server's leaf from the spines, the ingress the latency
    flow shares, so a pause that leaf sends lands on the latency flow's spine hop."""
    client, server = pair
    leaf = view.attachment[server].switch
    return [h for h in view.hosts
            if h != client and view.attachment[h].switch != leaf][:max_senders]  # fmt: skip


def pause_origin(
    path: Sequence[HopEvidence], origin: HopEvidence
) -> tuple[HopEvidence | None, str, list[HopEvidence]]:
    """The queue a PFC pause episode started at, why, and the paused hops on the path.

    A hop of the latency flow's path that received pause frames holds bytes because the
    switch after it ran out of ingress room; when that switch is the one whose egress the
    incast congests (it sent pause frames, or its queue marked), the congested egress is the
    origin and the paused hops are its consequence. Otherwise the path's own busiest queue
    (``congested_queue``) is named: the delay did not come from the episode. With neither,
    no queue is named (None): the episode's egress did not delay the flow, and whatever did
    is for the flow's path to tell.
    """
    paused = [e for e in path if e.paused > 0]
    if paused or origin.xoff_sent > 0:
        hops = ", ".join(f"{e.queue} pfc_rx={e.paused}" for e in paused) or "none"
        why = f"origin {origin.summary()}; paused on the path (consequence): {hops}"
        return origin, why, paused
    if any(e.busy for e in path):
        top, why = congested_queue(path)
        return top, why, []
    return None, f"no pause reached the path (origin {origin.queue}: {origin.summary()})", []


def beyond_limits(
    values: Iterable[tuple[str, float | None]], limit_of: Callable[[str], Limit]
) -> list[str]:
    """Keys whose value already fails its limit. For latency runs that outlived their load,
    each value is a lower bound of the loaded one (the samples after the load met no queue),
    so only a failure is proven by them; a pass is not."""
    return [k for k, v in values if v is not None and limit_of(k).judge(v) is Verdict.FAIL]
