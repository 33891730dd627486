"""Probe paths and how they vote: ECMP coverage, the probe budget, 007-style blame.

How many probes per host pair cover every ECMP path? With ``w`` equally likely
paths and ``n`` probes whose source ports are drawn at random, a given path is
missed with probability ``(1 - 1/w)**n``; by the union bound every path is hit
with probability at least ``1 - w (1 - 1/w)**n``. For coverage ``c``:

    n >= ln((1 - c) / w) / ln(1 - 1/w)

(w = 2: 8 probes; w = 8: 51; w = 64: 557 for c = 0.99). Source ports chosen
round-robin over a known hash would need only ``w``; the random bound holds
whatever hash the switches use.

Blame (after 007, NSDI'18, and NetBouncer, NSDI'19) is ``labtest run``'s inference
engine (``labtest.measure.inference``) on the probe counts: each path is one flow
observed on its links, each probe lost with the background rate or the own rate
of a faulty link it crossed (binomial), or the whole flow lost in a link's hole
(an ECMP blackhole, a dark moment); the fewest links that explain the losses are
found greedily and refined. One lost probe on a four-link path names nothing;
losses that meet on one link name it; two simultaneous faults are both named.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import bdtr, bdtrc

from labtest.measure.inference import Cause, Observation, infer
from labtest.stats import ber_upper_bound

#: what probe observations measure (a count observation's aspect)
ASPECT = "probe_loss"
#: a link component's direction: ``link>device`` it was crossed towards
WAY = ">"


def probes_per_pair(ecmp_width: int, coverage: float = 0.99) -> int:
    """Probes (random source ports) so that every one of ``ecmp_width`` paths is hit
    with probability >= ``coverage``."""
    if ecmp_width <= 1:
        return 1
    return math.ceil(math.log((1.0 - coverage) / ecmp_width) / math.log(1.0 - 1.0 / ecmp_width))


def overhead_fraction(probes_per_s: float, probe_bytes: int, link_gbps: float) -> float:
    """Share of one link's capacity the probes crossing it take."""
    return probes_per_s * probe_bytes * 8.0 / (link_gbps * 1e9)


@dataclass(frozen=True)
class Probe:
    """One 5-tuple to probe: a source port is one ECMP path choice."""

    src: str
    dst: str
    sport: int


@dataclass(frozen=True)
class MeshPlan:
    probes: list[Probe]
    ports_per_pair: int  # source ports per inter-leaf pair (ECMP coverage)
    busiest_host_probes_per_s: float  # sent + received by the busiest host's access link
    overhead: float  # that link's probe bits over its capacity

    def probes_by_pair(self) -> dict[tuple[str, str], list[int]]:
        out: dict[tuple[str, str], list[int]] = {}
        for p in self.probes:
            out.setdefault((p.src, p.dst), []).append(p.sport)
        return out


class OverBudget(ValueError):
    """The mesh would take more of a link than the probe budget allows."""


def plan_mesh(
    leaf_of: dict[str, str],
    ecmp_width: int,
    rng: np.random.Generator,
    *,
    peers_per_host: int = 4,
    coverage: float = 0.99,
    ports_factor: int = 1,
    probes_per_path: int = 4,
    interval_s: float = 10.0,
    probe_bytes: int = 64,
    link_gbps: float = 400.0,
    budget: float = 1e-3,
) -> MeshPlan:
    """One interval's probes: each host probes one host on its own leaf (the ToR mesh)
    and ``peers_per_host - 1`` on other leaves, each inter-leaf pair on enough random
    source ports to cover every ECMP path with ``coverage`` (times ``ports_factor``: more
    flows, when flows, not probes, are the evidence wanted). Peers are drawn afresh each
    interval, so over a few intervals every pair of leaves is probed. Raises
    ``OverBudget`` when the busiest access link would carry more than ``budget`` of its
    capacity in probes (R-Pingmesh's and issue 20's 0.1 %)."""
    ports = probes_per_pair(ecmp_width, coverage) * max(ports_factor, 1)
    hosts = sorted(leaf_of)
    probes: list[Probe] = []
    load: dict[str, int] = dict.fromkeys(hosts, 0)
    for src in hosts:
        same = [h for h in hosts if h != src and leaf_of[h] == leaf_of[src]]
        other = [h for h in hosts if leaf_of[h] != leaf_of[src]]
        peers = [str(h) for h in rng.choice(same, 1)] if same else []
        want = min(peers_per_host - len(peers), len(other))
        peers += [str(h) for h in rng.choice(other, want, replace=False)] if want else []
        for dst in peers:
            n = ports if leaf_of[dst] != leaf_of[src] else 1
            for sport in rng.integers(1024, 65536, n):
                probes.append(Probe(src, dst, int(sport)))
                load[src] += probes_per_path
                load[dst] += probes_per_path
    busiest = max(load.values(), default=0) / interval_s
    overhead = overhead_fraction(busiest, probe_bytes, link_gbps)
    if overhead > budget:
        raise OverBudget(f"probe mesh needs {overhead:.2e} of a {link_gbps:g}G link, budget "
                         f"{budget:.2e}: fewer peers or probes per path, or a longer interval")
    return MeshPlan(probes, ports, busiest, overhead)


@dataclass(frozen=True)
class ProbePath:
    """Probes of one 5-tuple: the links they crossed (in order) and how many came back."""

    src: str
    dst: str
    links: tuple[str, ...]
    sent: int
    lost: int
    #: where a flow lost whole may have vanished: the links of the step past its last
    #: answering hop (Paris-style, the hop that answered at TTL t was reached by the flow's
    #: probe, whatever way its answer came back). Empty: anywhere on ``links`` (the
    #: doctor's mesh, which does not read its middle hops)
    suspects: tuple[str, ...] = ()
    #: answered by a switch on the way, back over ``links`` (``TraceReader.switch_answers``):
    #: it tells twin links apart (``SwitchAnswers``), never votes with the end-to-end paths
    via_switch: bool = False


@dataclass(frozen=True)
class Blame:
    link: str
    confidence: float  # posterior probability that this link explains the lost probes
    lost: int
    sent: int  # probes through the link in the traces that lost any (see blame)
    bad_paths: int
    paths: int
    window: int = 0  # intervals of evidence judged together (0: this interval's traces)
    #: a link whose probes were exactly this one's (every route through one crossed the
    #: other): the probes cannot separate them, ``confidence`` is that one of them is it
    twin: str | None = None
    #: the twin the switches' answers cleared, and why (``SwitchAnswers.louder``)
    told_apart: str = ""

    def text(self) -> str:
        rivals = (f"it or {self.twin}: every probe through one crossed the other, so the "
                  "probes cannot tell them apart" if self.twin else
                  self.told_apart or "no other link explains them as well")
        if self.window:
            return (f"probes over the last {self.window} interval(s): {self.lost} of "
                    f"{self.sent} lost through {self.link} ({self.bad_paths} of its "
                    f"{self.paths} routes lossy); posterior {self.confidence:.4f}, {rivals}")
        return (f"probes: {self.lost} of {self.sent} lost on the {self.paths} probe paths "
                f"through {self.link} traced beside a loss ({self.bad_paths} of them lossy); "
                f"{rivals}")


def blame(paths: Sequence[ProbePath], min_confidence: float = 0.5) -> list[Blame]:
    """Links that explain the lost probes, best first: ``labtest.measure.inference``, the
    engine ``labtest run`` ranks root causes with, over the probe paths as count
    observations (route: the path's links, as traced, each in the direction crossed; one
    path is one flow).

    A flap is dark for a moment, an ECMP hole drops whole flows: only the paths of
    (src, dst) traces that lost anything (sent together) say whether a link did that, so
    the other traces are ``apart`` observations: they clear a link of a steady loss rate,
    which would have shown in them, not of a dark moment. Traces that crossed no link of
    a lossy path count toward the background only (one observation with no route). Each
    direction of a link is a component (a silent drop is one-way: the clean traces out of
    the prober clear its own link, none clear the target's way in), with the prior ``1/N``
    of the N probed (even odds that one is faulty); both directions blamed are one link.

    ``confidence`` is the engine's posterior of each cause: exp(gain) against its rivals
    (the other links of the paths it explains, each in its place) and against no further
    cause, gains net of the prior's and the fitted rate's price; a cause below
    ``min_confidence`` is left out."""
    live = [p for p in paths if p.sent > 0]
    lossy = {(p.src, p.dst) for p in live if p.lost}
    if not lossy:
        return []
    rows = [(_suspected(p), p.sent, p.lost, (p.src, p.dst) not in lossy) for p in live]
    beside = [p for p in live if (p.src, p.dst) in lossy]
    return _blame(rows, beside, min_confidence)


Row = tuple[tuple[str, ...], int, int, bool]  # directed route, sent, lost, apart


def _blame(rows: Sequence[Row], beside: Sequence[ProbePath], min_confidence: float
           ) -> list[Blame]:
    """The engine over ``rows``; each cause's probes counted over ``beside``."""
    suspects = {w for route, _, lost, _ in rows if lost for w in route}
    obs, elsewhere = [], 0
    for i, (route, sent, lost, apart) in enumerate(rows):
        if apart and suspects.isdisjoint(route):
            elsewhere += sent
            continue
        obs.append(Observation(str(i), lost > 0, ((frozenset(route),),), aspect=ASPECT,
                               sent=sent, lost=lost, apart=apart))
    if elsewhere:
        obs.append(Observation("elsewhere", False, aspect=ASPECT, sent=elsewhere, apart=True))
    probed = {w for route, *_ in rows for w in route}
    priors = dict.fromkeys(probed, 1.0 / len(probed))
    out: dict[str, Blame] = {}
    for cause in infer(obs, priors=priors).causes:
        link = cause.component.rsplit(WAY, 1)[0]
        twin, confidence = _twin(cause)
        if confidence < min_confidence:
            continue
        for lk, other in ((link, twin), (twin, link)):
            if lk is None or lk in out:
                continue
            mine = [p for p in beside if lk in p.links]
            out[lk] = Blame(lk, confidence, sum(p.lost for p in mine), sum(p.sent for p in mine),
                            sum(1 for p in mine if p.lost), len(mine), twin=other)
    return list(out.values())


#: gains this close (nats) are the same explanation: the engine then picks by name alone
TIE_NATS = 1e-6


def _twin(cause: Cause) -> tuple[str | None, float]:
    """The link that explains the cause's probes exactly as well (its runner-up at the same
    gain: every probe through one crossed the other, as a two-leaf fabric's probes cross
    both fabric links of their spine), and the posterior that one of the two is the cause.
    The engine breaks such a tie by name; each link alone then sits below an even chance,
    and a 30 % loss would go unnamed. Both are blamed, the other evidence ranks them."""
    if cause.runner_up is None or cause.runner_up_gain < cause.gain - TIE_NATS:
        return None, cause.posterior
    twin = cause.runner_up.rsplit(WAY, 1)[0]
    if twin == cause.component.rsplit(WAY, 1)[0]:
        return None, cause.posterior
    return twin, cause.posterior * (1.0 + math.exp(cause.runner_up_gain - cause.gain))


#: the false-alarm rate of the probe test: a page at posterior >= 1 - ALPHA, a clear at 1 - ALPHA
ALPHA = 0.01
#: the smallest steady loss rate the probe test is sized for: a clean run clears a link of it
#: (a design choice like the CUSUM's k, not a limit: the paths suite's member-loss limit,
#: 1e-4, would need 46,000 clean probes per link, hours of this mesh)
DETECT_LOSS = 0.01


@dataclass
class Ledger:
    """Probe evidence kept across intervals: a steady loss too thin to name in one interval
    (a 2 % link loses 3 of the 150 probes an access link carried per interval on the
    default lab, while the interval's own background estimate takes them in) adds up.

    Each interval's paths are tallied per directed route (sent, lost: the sufficient
    statistics of a steady rate, so merging intervals loses nothing of it); the last
    ``window`` intervals are judged together by the same engine, as observations sent
    together (a hole or a dark moment is the interval's own blame's to name). A link's
    *clean run* is its probes since its last lost one; once it rules out a loss rate of
    ``DETECT_LOSS`` at ``1 - ALPHA`` (``ber_upper_bound``: 459 clean probes) the link is
    *cleared*. A link the window blamed that is then cleared has its routes from before its
    clean run dropped from the window: a fault that ended is not judged on what it did while
    it lasted. (Only a blamed link's: a healthy link beside a lossy one carries some of its
    losses, and its clean runs are long enough to clear it now and then.)"""

    window: int = 12
    intervals: deque[tuple[int, dict[tuple[str, ...], tuple[int, int]]]] = field(
        default_factory=deque)
    #: link -> probes through it since its last lost probe (its clean run)
    clean: dict[str, int] = field(default_factory=dict)
    last_loss: dict[str, int] = field(default_factory=dict)  # link -> interval of its last loss
    added: int = 0
    blamed: set[str] = field(default_factory=set)  # what the last blame() named

    def add(self, paths: Sequence[ProbePath], named: Collection[str] = ()) -> None:
        """This interval's paths; those through a link the interval's own blame ``named``
        stay out of the window (a hole or a one-way drop is not a steady rate, and merged
        with the clean intervals before it would smear onto the links beside it), and so do
        flows lost whole where they vanished is known (``lost_whole``: a hole's, which
        ``FlowShares`` judges as flows; as probes they would charge every candidate link
        of their silent hops with a loss rate)."""
        self.added += 1
        tally: dict[tuple[str, ...], tuple[int, int]] = {}
        for p in paths:
            if p.sent <= 0:
                continue
            if named and not set(named).isdisjoint(p.links):
                continue
            if not lost_whole(p):
                route = _directed(p)
                sent, lost = tally.get(route, (0, 0))
                tally[route] = (sent + p.sent, lost + p.lost)
            for lk in p.links:  # a silent hop's candidates: each may have carried it
                if p.lost:
                    self.clean[lk], self.last_loss[lk] = 0, self.added
                else:
                    self.clean[lk] = self.clean.get(lk, 0) + p.sent
        self.intervals.append((self.added, tally))
        while len(self.intervals) > self.window:
            self.intervals.popleft()

    def blame(self, min_confidence: float = 0.5) -> list[Blame]:
        """The engine over the window's tallies (``Blame.paths``: routes through the link,
        ``sent``/``lost`` its probes over the window)."""
        stale = {lk: self.last_loss.get(lk, 0) for lk in self.blamed if self.cleared(lk)}
        merged: dict[tuple[str, ...], tuple[int, int]] = {}
        for n, tally in self.intervals:
            for route, (sent, lost) in tally.items():
                if any(n <= stale.get(w.rsplit(WAY, 1)[0], 0) for w in route):
                    continue
                s, k = merged.get(route, (0, 0))
                merged[route] = (s + sent, k + lost)
        if not any(lost for _, lost in merged.values()):
            self.blamed = set()
            return []
        rows = [(route, sent, lost, False) for route, (sent, lost) in merged.items()]
        as_paths = [ProbePath("", "", tuple(w.rsplit(WAY, 1)[0] for w in route), sent, lost)
                    for route, sent, lost, _ in rows]
        found = _blame(rows, as_paths, min_confidence)
        self.blamed = {b.link for b in found}
        return [dataclasses.replace(b, window=len(self.intervals)) for b in found]

    def cleared(self, link: str) -> bool:
        """Its clean run rules out a loss rate of DETECT_LOSS at confidence 1 - ALPHA."""
        run = self.clean.get(link, 0)
        return run > 0 and ber_upper_bound(run, 0, 1.0 - ALPHA) < DETECT_LOSS

    def ruled_out(self) -> set[str]:
        """The links whose probes in the window, losses counted, rule out a loss rate of
        DETECT_LOSS at 1 - ALPHA: what a healthy decision needs. Unlike the clean run (a
        page's clearing, which a lost probe restarts), a stray loss of the background (a
        busy host, an ICMP rate limit: one answer in a thousand) does not start it over."""
        counts: dict[str, tuple[int, int]] = {}
        for _, tally in self.intervals:
            for route, (sent, lost) in tally.items():
                for link in {w.rsplit(WAY, 1)[0] for w in route}:
                    s, k = counts.get(link, (0, 0))
                    counts[link] = (s + sent, k + lost)
        return {lk for lk, (sent, lost) in counts.items()
                if sent and ber_upper_bound(sent, lost, 1.0 - ALPHA) < DETECT_LOSS}


@dataclass
class SwitchAnswers:
    """The switches' answers on the way (``ProbePath.via_switch``) per link over the last
    ``window`` intervals: what tells apart two links every end-to-end probe crosses together.

    A spine's answers to leaf1's hosts cross only leaf1's link to it, those to leaf2's hosts
    only leaf2's; ``tell_apart`` reads them twice. First by direction: the probe reached the
    switch over the prefix's links in the direction the end-to-end probes crossed them, in
    their protocol (the answer comes back as ICMP), so a twin whose every lossy direction
    carried answers that rule out the lossy probes' rate is cleared (a UDP drop on the
    spine's way down to leaf2 spares the answers up leaf1's link). Then, if that decides
    nothing, by comparison: the faulty twin loses more of its answers than the other (a hole
    on leaf1's way up: its unanswered hops are counted lost on every candidate, so either
    twin's answers may carry losses not its own, and a switch that rate-limits its answers
    loses them over both alike)."""

    window: int = 12
    #: per interval: link -> (sent, lost), and "link>device" -> (sent, lost) the way the
    #: probes went (towards the switch)
    intervals: deque[tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]] = field(
        default_factory=deque)

    def add(self, paths: Sequence[ProbePath]) -> None:
        links: dict[str, tuple[int, int]] = {}
        ways: dict[str, tuple[int, int]] = {}
        for p in paths:
            for table, keys in ((links, p.links), (ways, _directed(p))):
                for key in keys:
                    sent, lost = table.get(key, (0, 0))
                    table[key] = (sent + p.sent, lost + p.lost)
        self.intervals.append((links, ways))
        while len(self.intervals) > self.window:
            self.intervals.popleft()

    def counts(self, link: str) -> tuple[int, int]:
        """(sent, lost) of the answers back over ``link`` in the window."""
        return self._summed(link, 0)

    def way_counts(self, way: str) -> tuple[int, int]:
        """(sent, lost) of the answers whose probes crossed ``way`` ("link>device")."""
        return self._summed(way, 1)

    def _summed(self, key: str, table: int) -> tuple[int, int]:
        rows = [tables[table].get(key, (0, 0)) for tables in self.intervals]
        return sum(r[0] for r in rows), sum(r[1] for r in rows)

    def tell_apart(self, b: Blame, lossy: Mapping[str, Mapping[str, tuple[int, int]]]
                   ) -> tuple[str, str] | None:
        """Which of ``b.link`` and ``b.twin`` the answers name, and why; None if they cannot.
        ``lossy``: per link, the ways the lossy end-to-end probes crossed it, each with the
        end-to-end probes' (sent, lost) that way (``lossy_ways``)."""
        if b.twin is None:
            return None
        why = {lk: self.cleared(lk, lossy.get(lk, {})) for lk in (b.link, b.twin)}
        if (why[b.link] is None) != (why[b.twin] is None):
            named, other = (b.twin, b.link) if why[b.link] else (b.link, b.twin)
            return named, f"{other}, crossed by every probe that crossed it, is {why[other]}"
        return self.louder(b.link, b.twin)

    def cleared(self, link: str, ways: Mapping[str, tuple[int, int]]) -> str | None:
        """Why ``link`` is not where the probes were lost: each way the lossy ones crossed it
        carried answers whose loss rules out the end-to-end probes' loss rate that way (all
        of them, not only the lossy pairs': a hole loses its flows whole, and a link's rate
        is the share of flows it swallows); None if not so."""
        said = []
        for way, (sent, lost) in sorted(ways.items()):
            rate = lost / sent if sent else 0.0
            n, k = self.way_counts(way)
            if rate <= 0 or not n or float(bdtr(k, n, rate)) >= ALPHA:
                return None
            said.append(f"{k} of {n} answers lost towards {way.rsplit(WAY, 1)[1]}, where "
                        f"the probes crossing it so lost {rate:.1%}")
        if not said:
            return None
        return (f"cleared by the switches' answers, whose probes crossed it the lossy way: "
                f"{'; '.join(said)} (p < {ALPHA:g})")

    def louder(self, a: str, b: str) -> tuple[str, str] | None:
        """The one of ``a`` and ``b`` whose answers lost significantly more (at ``ALPHA``,
        one-sided, exact: given the losses of both, a's share is binomial under equal rates),
        and the reason in words; None when they do not differ that much."""
        (na, ka), (nb, kb) = self.counts(a), self.counts(b)
        if not na or not nb or not ka + kb:
            return None
        share = na / (na + nb)
        for (hi, nh, kh), (lo, nl, kl), q in (((a, na, ka), (b, nb, kb), share),
                                              ((b, nb, kb), (a, na, ka), 1.0 - share)):
            if kh and float(bdtrc(kh - 1, ka + kb, q)) < ALPHA:
                return hi, (f"{lo}, crossed by every probe that crossed it, is cleared by "
                            f"the switches' answers: {kl} of {nl} lost back over it, {kh} of "
                            f"{nh} over this one (p < {ALPHA:g})")
        return None


def lost_whole(p: ProbePath) -> bool:
    """Every probe of the flow lost, and the step it vanished on known (``suspects``)."""
    return bool(p.suspects) and p.sent > 0 and p.lost == p.sent


@dataclass
class FlowShares:
    """The end-to-end flows of the last ``window`` intervals: what tells apart the twins of
    a hole on a leaf's way up. Such a hole takes its flows before any switch past the leaf
    answers them, so each lost flow is suspected on every uplink alike (``ProbePath
    .suspects``) and one interval's few flows tie the uplinks. But ECMP spreads flows evenly:
    the holed uplink carried its lost flows besides the ones that came back over it, so it
    is the one that seems to carry too few; over enough intervals the engine's hole model
    (a link's rate is the share of its flows it swallows) tells them apart. A steady rate
    that every flow through one twin also met on the other (a spine's links to the only two
    leaves) stays tied: their flows are the same."""

    window: int = 12
    intervals: deque[list[ProbePath]] = field(default_factory=deque)
    _judged: dict[frozenset[str], list[Blame]] = field(default_factory=dict)

    def add(self, paths: Sequence[ProbePath]) -> None:
        self.intervals.append([p for p in paths if not p.via_switch and p.sent > 0])
        while len(self.intervals) > self.window:
            self.intervals.popleft()
        self._judged.clear()

    def siblings(self, link: str) -> frozenset[str]:
        """The links a flow of the window may have vanished on alike with ``link`` (a
        leaf's uplinks, when its hole took the flow), ``link`` among them; empty when no
        flow was lost so. Their blame is this window's to judge, not one interval's: a
        few flows that happened to hash away from one uplink make it look holed."""
        out: set[str] = set()
        for ps in self.intervals:
            for p in ps:
                if lost_whole(p) and len(p.suspects) > 1 and link in p.suspects:
                    out |= set(p.suspects)
        return frozenset(out)

    def undecided(self) -> bool:
        """Some flow of the window vanished where several links could have taken it, and
        the window does not name one of them alone yet: more flows would tell."""
        groups = {frozenset(p.suspects) for ps in self.intervals for p in ps
                  if lost_whole(p) and len(p.suspects) > 1}
        return any(not self._alone(self.siblings(next(iter(g)))) for g in groups)

    def _judged_group(self, group: frozenset[str]) -> list[Blame]:
        if group not in self._judged:
            paths = [p for ps in self.intervals for p in ps if not group.isdisjoint(p.links)]
            self._judged[group] = blame(paths)
        return self._judged[group]

    def _alone(self, group: frozenset[str]) -> list[Blame]:
        return [f for f in self._judged_group(group)
                if f.link in group and f.twin is None and f.confidence >= 1.0 - ALPHA]

    def judge(self, b: Blame) -> tuple[Blame | None, str]:
        """``b`` as the window's flows judge it, when its link has ``siblings``: (the
        window's blame of it, with why its siblings are not it when it is named alone; or
        None: a sibling is, and why). A link named with a twin, or below the posterior the
        interval gave it, keeps the window's (lower) confidence."""
        group = self.siblings(b.link)
        found = {f.link: f for f in self._judged_group(group)}
        alone = self._alone(group)
        if alone and alone[0].link != b.link:
            return None, self._why(alone[0], group - {alone[0].link})
        mine = found.get(b.link)
        if mine is None:
            return replace(b, confidence=0.0), ""
        if alone:
            return replace(b, confidence=mine.confidence, twin=None), self._why(
                mine, group - {b.link})
        return replace(b, confidence=min(b.confidence, mine.confidence), twin=mine.twin), ""

    def _why(self, named: Blame, others: Collection[str]) -> str:
        paths = [p for ps in self.intervals for p in ps]
        whole = sum(1 for p in paths if lost_whole(p) and named.link in p.suspects)
        came = {lk: sum(1 for p in paths if p.lost < p.sent and lk in p.links)
                for lk in (named.link, *sorted(others))}
        over = ", ".join(f"{n} over {lk}" for lk, n in came.items())
        return (f"{', '.join(sorted(others))} cleared by the flows' shares over the last "
                f"{len(self.intervals)} interval(s): {whole} flow(s) lost whole where either "
                f"could have taken them, and of those that came back {over}; ECMP spreads "
                f"flows evenly, so the lost ones were {named.link}'s (posterior "
                f"{named.confidence:.4f})")


def lossy_ways(paths: Sequence[ProbePath], ledger: Ledger | None = None
               ) -> dict[str, dict[str, tuple[int, int]]]:
    """Per link, the ways ("link>device") the end-to-end probes that lost any crossed it,
    each with (sent, lost) of every end-to-end probe that crossed it that way: ``paths``
    (those the ledger left out) and the ``ledger``'s window."""
    routes = [(_directed(p), p.sent, p.lost) for p in paths if not p.via_switch]
    if ledger is not None:
        routes += [(r, sent, lost) for _, tally in ledger.intervals
                   for r, (sent, lost) in tally.items()]
    totals: dict[str, tuple[int, int]] = {}
    lossy: set[str] = set()
    for route, sent, lost in routes:
        for way in route:
            s, k = totals.get(way, (0, 0))
            totals[way] = (s + sent, k + lost)
            if lost:
                lossy.add(way)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for way in lossy:
        link, sep, _ = way.rpartition(WAY)
        if sep:
            out.setdefault(link, {})[way] = totals[way]
    return out


def _suspected(p: ProbePath) -> tuple[str, ...]:
    """The directed links that may have lost the path's probes: its suspects when the whole
    flow was lost (a hole), every link when some probes came back (a rate)."""
    route = _directed(p)
    if not p.suspects or p.lost < p.sent:
        return route
    return tuple(w for w in route if w.rsplit(WAY, 1)[0] in p.suspects)


def _directed(p: ProbePath) -> tuple[str, ...]:
    """The path's links as ``link>device``, the end each was crossed towards: a link leaves
    the end reached first (a silent hop lists every candidate link, hop by hop); a link
    neither end of which was reached keeps its bare name."""
    order = {p.src: 0}
    out = []
    for lk in p.links:
        a, _, b = lk.partition("--")
        ends = (a.split(":")[0], b.split(":")[0])
        first = [order.get(e, math.inf) for e in ends]
        if min(first) == math.inf:
            out.append(lk)
            continue
        to = ends[1] if first[0] <= first[1] else ends[0]
        order.setdefault(to, len(order))
        out.append(f"{lk}{WAY}{to}")
    return tuple(out)
