"""Fault inference over what each measurement crossed (binary network tomography).

A run's measurements are observations of the components they used: a pair's
bandwidth crossed two hosts, their links, two leaves and one of the spines; a
transceiver reading saw one port. A fault is a component (host, switch, link)
that spoils what crosses it. The question is which few components explain the
failing observations while the passing ones clear the rest.

The model (docs/rootcause.md states it for users):

* An observation *reaches* a component with probability 1 when every route of
  it crosses the component, the share of its ECMP routes that do when the member
  taken is unknown, combined over the segments it crosses (a ring's steps) as
  ``1 - prod(1 - share)``. A component the measurement names itself (a port's
  own counters, the link a collective located) is reached with certainty.
* Given the faulty set ``H``, an observation fails with probability
  ``1 - (1 - FALSE_ALARM) * prod_{c in H} (1 - reach(c) * (1 - MISS))``
  (noisy-OR).
* Where a suite located a failure is evidence too: the cause that failed it is
  a named component with probability 1, a second suspect of that place (the far
  end that may be pausing a named queue) ``LOCATED_NEARBY``, an unnamed one on
  its path ``LOCATED_ELSEWHERE`` (mixed over the causes by how likely each
  failed it). A located pass clears its place, and what else it crossed only
  weakly (``LOCATED_ELSEWHERE``): a fault may spoil one direction.
* An *intermittent* cause (a link seen coming and going) spoils what crossed it
  by the moment: P(pass | crossed) is ``INTERMITTENT_MISS``, except for a
  failure located at it (its own counters over the interval, named or a second
  suspect), and it also
  reaches an observation's ``transient`` segments (a failover flow's own path,
  which its baseline cleared of any steady fault).
* A measurement run beside a background *load* (a latency probe beside an incast) is
  also reached through the load's routes by a cause that spoils the load's own kind of
  traffic (``load_aspects``: bandwidth), at ``LOAD_EFFECT`` of the chance that some
  flow of the load crossed the component: a sender holed or collapsed shifts its share
  onto the queue the probe met, or does not. A switch slow to reconverge leaves the
  load as it was.
* A fault need not spoil traffic: a dirty connector fails its port's optics
  while every pair across it runs at line rate. Each cause takes the better of
  two modes, *local* (it explains only what names it) and *traffic*; and it
  spoils only the kinds of measurement (``aspect``) it is seen to fail, so a
  passing latency probe does not clear a link that halves bandwidth.
* A *spreading* component (a pause storm's source; a switch hashing unevenly)
  reaches every traffic observation of its scope, wherever its routes go;
  passing traffic does not clear it (a storm stalls what shared the paused
  queue at that moment, not all of it).
* Each observation's log-likelihood ratio against "no fault" is weighted by its
  ``strength`` (0..1): a pair at 59 % of line rate against a 90 % limit says
  more than one at 89 %, a pass at 99 % clears more than one at 91 %.
* A *count* observation (``sent`` probes, ``lost`` of them: a probe mesh's path)
  is judged on its counts, not pass/fail: a gray link losing 1 % fails nothing
  against a limit, yet 10 lost in 1,000 where the rest of the fabric loses 1 in
  100,000 is plain. Each probe is lost with ``1 - (1 - background) * prod_{c in
  H} (1 - hit_c * rate_c)`` (binomial). ``rate_c`` is the cause's own loss rate,
  the posterior mean (uniform prior) over the probes it reached, so a clean
  path clears it in proportion to its probes; ``background`` the
  Laplace-smoothed rate of the probes no cause reaches (a profile likelihood:
  "no fault" takes it over all probes), so a cause also gains by leaving the
  rest clean. A count observation with no route feeds the background only. A
  fitted rate fits the noise too (three chance losses where one was due), so a
  cause also pays its rate's Occam factor, ``0.5 log(n / (2 pi r (1 - r)))``
  nats over n probes (Laplace's approximation of the uniform prior's marginal
  likelihood: what a Bayes factor charges); one lost probe names nothing.
* Or a cause drops whole *flows* (mode ``flows``: an ECMP member blackholing the
  flows hashed to it, a link dark for a moment): each count observation is one
  flow, in the hole (every probe lost) with the cause's share of flows, else
  lost probe by probe. Read per probe, a holed flow's probes would count as
  independent losses, and every link whose few flows hashed into the hole would
  look like a second fault. The better fitting mode is taken.
* A count observation ``apart`` from every loss (sent at another moment: the
  doctor's traces that lost nothing) clears a steady rate, which would have
  shown in it, but not a hole or a dark moment: a share of flows is judged on
  the observations beside the losses, and pays ``log(flows crossing it / flows
  beside)``, the odds that a moment dark on any of its flows fell on those. A
  link dark while one host's traces ran is named; one whose other traces were
  clean loses to one that has no other traces (the far end of a one-way drop).
* Each cause pays ``log(1 / prior)``. The search adds the component that most
  raises the penalised likelihood while that gain is above ``MIN_GAIN``, then
  drops and swaps causes while that helps (greedy maximum likelihood with local search):
  every failure explained by the fewest causes, independent faults each named,
  and a failure whose path every passing measurement clears left unexplained.
* A failure no cause explains goes to the cause likeliest to have failed it, were that
  cause to spoil its kind too, when that beats a false alarm (``likely``): the search
  weighs a kind of traffic as a whole, and one sender's QP hashed into an ECMP hole
  fails alone among its kind's passes across the hole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

#: P(fail) of a measurement whose path holds no fault (noise, a limit set tight)
FALSE_ALARM = 0.01
#: P(pass) of a measurement that crossed a traffic-spoiling fault (a gray fault it missed)
MISS = 0.05
#: prior probability that a given component is faulty: the price of one more cause
PRIOR = 0.1
#: P(a suite names this place | the fault is elsewhere on the path): suites locate
#: (a collective names the link whose counters show the slowdown), and are seldom wrong
LOCATED_ELSEWHERE = 0.2
#: ... | the fault is a second suspect of the named place (the far end pausing a queue)
LOCATED_NEARBY = 0.5
#: P(pass) of a measurement that crossed an *intermittent* fault (a link that flaps, an ECMP
#: member holing some of the flows hashed to it): whether it fails depends on the moment or
#: the hash, so a pass across it clears it of little, a failure says a little less
INTERMITTENT_MISS = 0.5
#: what a cause must add, its price paid, to be one (nats): less is a tie between it and no
#: further fault that the evidence cannot break (``rootcause.TIE_NATS`` for two causes).
#: Seen below it: a switch finishing the explanation of what a flapping link beside it half
#: explains (0.24-0.28 nats, matrix seed 16663987). Kass & Raftery's "bare mention" (1 nat)
#: would also drop a one-way drop seen by one TG flow twice (0.81 nats, a unit test)
MIN_GAIN = 0.5
#: P(a fault on the routes of a measurement's background load spoils the measurement): it
#: reshapes the load, which may or may not land on the measured path
LOAD_EFFECT = 0.5
#: the modes a fault may take (the better fitting one is taken: the prior's price covers it)
MODES = ("local", "traffic", "intermittent")
#: the scope of a spreading fault that reaches every traffic observation
ANY_SCOPE = "*"

Route = frozenset[str]
Segment = tuple[Route, ...]  # ECMP alternatives, equally likely


@dataclass(frozen=True)
class Observation:
    """One measurement as evidence: what it crossed, whether it failed, how strongly."""

    id: str
    failed: bool
    segments: tuple[Segment, ...] = ()
    named: frozenset[str] = frozenset()
    strength: float = 1.0
    traffic: bool = True  # moved traffic (a pair, a ring, a stream), not a device's own reading
    aspect: str = ""  # what was measured (its limit key): a pass clears only that aspect
    scope: str = ""  # what traffic it was ("bisection": all hosts at once across the fabric)
    nearby: frozenset[str] = frozenset()  # second suspects of the named place (who pauses it)
    stalls: bool = False  # a device's reading that a pause storm anywhere stops (ECN marks)
    sent: int = 0  # a count observation: probes sent along it (failed should be lost > 0)
    lost: int = 0  # ... and lost; judged binomially (see the module docstring)
    apart: bool = False  # sent apart from every loss: clears a steady rate, not a hole
    #: independently hashed streams the traffic was spread over (a perftest pair's queue
    #: pairs times its directions): each picks its own ECMP alternative
    streams: int = 1
    #: an aggregate's parts (an incast's senders, each its own routes), each carrying an
    #: equal part of it: ``segments`` holds what all of it crossed (the receiver's side).
    #: A failure may be any part's doing; a pass clears a part only by its share
    parts: tuple[Segment, ...] = ()
    #: what the traffic also crossed where a steady fault would already have failed it (a
    #: failover flow's own path, proven by its before-event baseline): only a fault that
    #: comes and goes (the intermittent mode) reaches it there
    transient: tuple[Segment, ...] = ()
    #: the routes of the background load the measurement ran beside (an incast's flows),
    #: each flow one segment: a fault that spoils the load's own kind of traffic
    #: (``load_aspects``: its bandwidth) there reshapes the load (a sender holed or
    #: collapsed shifts its share onto the others), which may or may not land on the
    #: measured path: reached at ``LOAD_EFFECT``. A fault that spoils no such traffic (a
    #: switch slow to reconverge) leaves the load as it was
    load: tuple[Segment, ...] = ()
    load_aspects: frozenset[str] = frozenset()

    def reach(self, component: str, loaded: bool = False) -> float:
        """Probability that this observation's traffic crossed ``component`` (some stream
        of it, each stream on one alternative per segment, drawn alike; an aggregate's
        parts as segments: a sender's loss collapses the goodput of all); ``loaded``: or
        its load did (the fault spoils the load's kind of traffic)."""
        if component in self.named or component in self.nearby:
            return 1.0
        return 1.0 - self._missed(component, (*self.segments, *self.parts)) * self._unloaded(
            component, loaded)

    def cleared(self, component: str, loaded: bool = False) -> float:
        """How surely a pass of this observation tested ``component``: its reach, but on an
        aggregate's part only that part's share of it, since a sender's link at 70 % of its
        rate does not show in an incast of seven."""
        if not self.parts or component in self.named or component in self.nearby:
            return self.reach(component, loaded)
        part = sum(_share(component, p) for p in self.parts) / len(self.parts)
        return 1.0 - self._missed(component, self.segments) * (1.0 - part) * self._unloaded(
            component, loaded)

    def fleeting_reach(self, component: str, loaded: bool = False) -> float:
        """The reach of a fault that comes and goes: ``transient`` counts too."""
        if not self.transient:
            return self.reach(component, loaded)
        return 1.0 - self._missed(component, (*self.segments, *self.parts, *self.transient)
                                  ) * self._unloaded(component, loaded)

    def _unloaded(self, component: str, loaded: bool) -> float:
        """1 - P(a fault at ``component`` reached this measurement through its load):
        ``LOAD_EFFECT`` of the chance that some flow of the load crossed it."""
        if not (loaded and self.load):
            return 1.0
        return 1.0 - LOAD_EFFECT * (1.0 - self._missed(component, self.load, streams=1))

    def _missed(self, component: str, segments: Iterable[Segment],
                streams: int | None = None) -> float:
        """P(no stream crossed ``component``): each of ``streams`` (this observation's) picks
        one alternative per segment."""
        missed = 1.0
        for alternatives in segments:
            if alternatives:
                missed *= (1.0 - _share(component, alternatives)) ** max(
                    self.streams if streams is None else streams, 1)
        return missed

    @property
    def components(self) -> frozenset[str]:
        out = set(self.named | self.nearby)
        for alternatives in (*self.segments, *self.parts, *self.transient, *self.load):
            for r in alternatives:
                out |= r
        return frozenset(out)


def _share(component: str, alternatives: Segment) -> float:
    return sum(component in r for r in alternatives) / len(alternatives) if alternatives else 0.0


@dataclass(frozen=True)
class Cause:
    """One inferred fault: the component, its mode, and what it explains."""

    component: str
    mode: str  # traffic | intermittent | local | spreading | flows
    gain: float  # log-likelihood it added to the explanation (nats)
    explains: tuple[str, ...]  # ids of the failing observations it accounts for
    runner_up: str | None = None  # the best other component for the same failures
    runner_up_gain: float = 0.0
    cleared_by: tuple[str, ...] = ()  # passing observations that clear the runner-up
    #: P(it, rather than one of its rivals or nothing, explains its failures | the other
    #: causes): exp(gain) / (1 + exp(gain) + sum of the rivals' exp(gain)), gains priced
    posterior: float = 0.0
    #: failures that are more likely its doing than noise though it is not seen to spoil
    #: their kind (the rest of it passed across it: a QP hashed into an ECMP hole while
    #: the other senders' were not)
    likely: tuple[str, ...] = ()


@dataclass
class Inference:
    causes: list[Cause]
    unexplained: list[str]  # failing observations no cause accounts for
    scores: dict[str, float] = field(default_factory=dict)  # single-fault gain per component


@dataclass(frozen=True)
class Hypothesis:
    """Faulty components with their modes, and the aspects each is seen to spoil."""

    modes: Mapping[str, str]
    aspects: Mapping[str, frozenset[str]]
    scopes: Mapping[str, str] = field(default_factory=dict)  # spreading: the scope reached

    def with_(self, component: str, mode: str, aspects: frozenset[str], scope: str = ""
              ) -> Hypothesis:
        return Hypothesis({**self.modes, component: mode}, {**self.aspects, component: aspects},
                          {**self.scopes, component: scope})


NONE = Hypothesis({}, {})


def _spreads_to(o: Observation, scope: str) -> bool:
    return (o.traffic or o.stalls) and (scope == ANY_SCOPE or o.scope == scope)


def _hit(o: Observation, c: str, mode: str, aspects: frozenset[str], scope: str = ANY_SCOPE
         ) -> float:
    if o.traffic and o.aspect not in aspects and mode != "spreading":
        return 0.0  # a fault spoils the kinds of traffic it is seen to spoil, no other
    if mode == "spreading":
        if _spreads_to(o, scope):
            return 1.0 if o.failed else 0.0
        # beyond its scope, what names it, of the kinds it spoils: a switch hashing unevenly
        # is not cleared by the latency its queues showed or the CNPs its ports passed
        if c not in o.named or (o.traffic and o.aspect not in aspects):
            return 0.0
        return 1.0
    if not o.traffic:  # its own readings
        return 1.0 if c in o.named else 0.0
    if mode == "local":  # a fault of the component's own readings, not of its traffic
        return 0.0
    loaded = bool(o.load_aspects & aspects)  # it spoils the load's traffic: reshapes it
    if not o.failed and o.named and c not in o.named:
        # a located pass looked at its own place (a queue, a port): it clears that place,
        # and what else its traffic crossed only weakly (a fault may spoil one direction)
        return o.cleared(c, loaded) * LOCATED_ELSEWHERE
    if mode == "flows" and o.apart:  # a hole or a dark moment says nothing of other moments
        return 0.0
    if mode == "intermittent" and o.transient:
        return o.fleeting_reach(c, loaded)
    return o.reach(c, loaded) if o.failed else o.cleared(c, loaded)


def _miss(o: Observation, c: str, mode: str) -> float:
    """P(o passes | c's fault reached it). An intermittent fault spoils what crossed it only
    at its moments, but a failure located at it (its own port's counters over the interval,
    the link a collective named, the ECMP member found short of frames) saw it whatever the
    moment: that one is as certain as any."""
    if mode == "intermittent" and not (o.failed and (c in o.named or c in o.nearby)):
        return INTERMITTENT_MISS
    return MISS


def p_fail(o: Observation, hyp: Hypothesis) -> float:
    healthy = 1.0 - FALSE_ALARM
    for c, mode in hyp.modes.items():
        hit = _hit(o, c, mode, hyp.aspects.get(c, frozenset()), hyp.scopes.get(c, ANY_SCOPE))
        healthy *= 1.0 - hit * (1.0 - _miss(o, c, mode))
    return 1.0 - healthy


def _located(o: Observation, hyp: Hypothesis) -> float:
    """P(the suite names where it did | hyp): each cause in proportion to how likely it
    failed ``o``; one the measurement names (or a spreading storm, which stalls queues
    wherever the suite looked) at 1, one it only crossed at ``LOCATED_ELSEWHERE``."""
    total = weighted = 0.0
    for c, mode in hyp.modes.items():
        w = _hit(o, c, mode, hyp.aspects.get(c, frozenset()), hyp.scopes.get(c, ANY_SCOPE))
        total += w
        weighted += w * _place_weight(o, c, mode)
    return weighted / total if total > 0 else 1.0


def _place_weight(o: Observation, c: str, mode: str) -> float:
    if c in o.named or mode == "spreading":
        return 1.0
    return LOCATED_NEARBY if c in o.nearby else LOCATED_ELSEWHERE


def _llr(o: Observation, hyp: Hypothesis) -> float:
    """log P(o | hyp) - log P(o | no fault), weighted by what the observation says."""
    p = p_fail(o, hyp)
    if o.failed:
        ratio = math.log(max(p, 1e-12)) - math.log(FALSE_ALARM)
        if o.named:
            ratio += math.log(_located(o, hyp))
    else:
        ratio = math.log(max(1.0 - p, 1e-12)) - math.log(1.0 - FALSE_ALARM)
    return o.strength * ratio


def log_likelihood(obs: Iterable[Observation], hyp: Hypothesis) -> float:
    """Log-likelihood of ``obs`` under ``hyp``, relative to no fault at all (count
    observations: their background and rates from ``obs`` itself)."""
    obs = list(obs)
    counted = [o for o in obs if o.sent]
    binary = sum(_llr(o, hyp) for o in obs if not o.sent)
    return binary + sum(_count_llr(counted, _tally(counted), hyp,
                                   lambda c, a, m: _own_rate(counted, c, a, m)).values())


def _tally(obs: Iterable[Observation]) -> dict[str, tuple[float, float]]:
    """aspect -> (lost, sent) probes of the count observations, weighed by strength."""
    out: dict[str, tuple[float, float]] = {}
    for o in obs:
        if o.sent:
            lost, sent = out.get(o.aspect, (0.0, 0.0))
            out[o.aspect] = (lost + o.strength * o.lost, sent + o.strength * o.sent)
    return out


def _own_rate(obs: Iterable[Observation], component: str, aspect: str, mode: str) -> float:
    """The component's own loss rate: the posterior mean (uniform prior) over the probes of
    ``aspect`` that crossed it, each observation weighed by how surely it did; in ``flows``
    mode the share of the flows it holed (every probe lost)."""
    lost, sent = _crossing(obs, component, aspect, mode)
    return (lost + 1.0) / (sent + 2.0)


def _crossing(obs: Iterable[Observation], component: str, aspect: str, mode: str
              ) -> tuple[float, float]:
    """Probes (flows, in ``flows`` mode) of ``aspect`` that crossed ``component``: lost, sent."""
    lost = sent = 0.0
    for o in obs:
        if o.sent and o.aspect == aspect and not (mode == "flows" and o.apart):
            w = o.reach(component) * o.strength
            if mode == "flows":
                lost += w * (o.lost == o.sent)
                sent += w
            else:
                lost += w * o.lost
                sent += w * o.sent
    return lost, sent


def _occam(rate: float, sent: float) -> float:
    """What fitting a rate to ``sent`` probes costs (nats): Laplace's approximation of the
    uniform prior's marginal likelihood against the likelihood at the fitted rate."""
    if sent <= 0:
        return 0.0
    return max(0.0, 0.5 * math.log(sent / (2.0 * math.pi * rate * (1.0 - rate))))


def _count_llr(reached: Iterable[Observation], totals: Mapping[str, tuple[float, float]],
               hyp: Hypothesis, rate: Callable[[str, str, str], float]) -> dict[str, float]:
    """aspect -> log P(counts | hyp) - log P(counts | no fault) over every count observation
    of it: ``reached`` are those a cause of ``hyp`` may hit, ``totals`` (lost, sent) all of
    them; the rest only see the background fall to what no cause reaches. ``rate``:
    (component, aspect, mode) -> its loss rate, or share of flows in ``flows`` mode."""
    rows: dict[str, list[tuple[Observation, float, float]]] = {}
    # lost, sent: reached (by share); lost, sent: all; clean ones: sent, log(keep) part
    gone: dict[str, list[float]] = {}
    for o in reached:
        if not o.sent:
            continue
        keep = unholed = missed = 1.0
        for c, mode in hyp.modes.items():
            hit = _hit(o, c, mode, hyp.aspects.get(c, frozenset()), hyp.scopes.get(c, ANY_SCOPE))
            if hit > 0:
                if mode == "flows":
                    unholed *= 1.0 - hit * rate(c, o.aspect, mode)
                else:
                    keep *= 1.0 - hit * rate(c, o.aspect, mode)
                missed *= 1.0 - hit
        g = gone.setdefault(o.aspect, [0.0] * 6)
        g[0] += (1.0 - missed) * o.strength * o.lost
        g[1] += (1.0 - missed) * o.strength * o.sent
        g[2] += o.strength * o.lost
        g[3] += o.strength * o.sent
        if o.lost:
            rows.setdefault(o.aspect, []).append((o, keep, unholed))
        else:  # a clean one's term is linear in log(1 - background): summed apart
            g[4] += o.strength * o.sent
            g[5] += o.strength * (o.sent * math.log(max(keep, 1e-12)) + math.log(unholed))
    out: dict[str, float] = {}
    for aspect, g in gone.items():
        lost, sent = totals[aspect]
        b0 = (lost + 1.0) / (sent + 2.0)
        bh = (lost - g[0] + 1.0) / (sent - g[1] + 2.0)
        rest_lost = lost - g[2]
        rest_kept = sent - g[3] - rest_lost + g[4]
        llr = rest_lost * math.log(bh / b0) + rest_kept * (math.log1p(-bh) - math.log1p(-b0))
        llr += g[5]
        for o, keep, unholed in rows.get(aspect, ()):
            q = 1.0 - (1.0 - bh) * keep
            probes = (o.lost * math.log(q) + (o.sent - o.lost) * (
                math.log1p(-bh) + math.log(max(keep, 1e-12))))
            if unholed < 1.0:  # in a hole (all lost) or not, then probe by probe
                probes += math.log(unholed)
                if o.lost == o.sent:
                    holed = math.log(1.0 - unholed)
                    top = max(holed, probes)
                    probes = top + math.log(math.exp(holed - top) + math.exp(probes - top))
            llr += o.strength * (probes - o.lost * math.log(b0)
                                 - (o.sent - o.lost) * math.log1p(-b0))
        out[aspect] = llr
    return out


@dataclass
class _Search:
    """The candidates, what each touches, and the penalised score of a hypothesis."""

    observations: Sequence[Observation]
    pool: list[str]
    spread: dict[str, str]
    priors: Mapping[str, float]
    intermittent: frozenset[str] = frozenset()  # may take the intermittent mode
    touching: dict[str, list[Observation]] = field(default_factory=dict)
    totals: dict[str, tuple[float, float]] = field(default_factory=dict)  # count obs' probes
    _rates: dict[tuple[str, str, bool], float] = field(default_factory=dict)
    _fits: dict[tuple[str, str, bool], float] = field(default_factory=dict)
    _counts: dict[tuple[object, ...], dict[str, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        comps = [o.components for o in self.observations]
        for c in self.pool:
            scope = self.spread.get(c)
            self.touching[c] = [o for o, k in zip(self.observations, comps, strict=True)
                                if c in k or (scope is not None and _spreads_to(o, scope))]
        self.totals = _tally(self.observations)

    def cost(self, c: str) -> float:
        return math.log(1.0 / self.priors.get(c, PRIOR))

    def rate(self, c: str, aspect: str, mode: str) -> float:
        key = (c, aspect, mode == "flows")
        if key not in self._rates:
            self._rates[key] = _own_rate(self.touching.get(c, ()), c, aspect, mode)
        return self._rates[key]

    def fit(self, c: str, aspect: str, mode: str) -> float:
        """The Occam factor of ``c``'s own rate over the probes (flows) of ``aspect`` it
        crossed; in ``flows`` mode also the odds that its dark moment fell on the flows
        beside the losses rather than on any of those crossing it."""
        key = (c, aspect, mode == "flows")
        if key not in self._fits:
            touching = self.touching.get(c, ())
            sent = _crossing(touching, c, aspect, mode)[1]
            self._fits[key] = _occam(self.rate(c, aspect, mode), sent)
            if mode == "flows" and sent > 0:
                every = sum(o.reach(c) * o.strength for o in touching
                            if o.sent and o.aspect == aspect)
                self._fits[key] += math.log(every / sent)
        return self._fits[key]

    def fitted(self, hyp: Hypothesis, c: str) -> float:
        """What ``c``'s rates cost in ``hyp``: one per count aspect it spoils there."""
        mode = hyp.modes.get(c, "local")
        scope = hyp.scopes.get(c, ANY_SCOPE)
        # only what it reaches: a switch hashing unevenly spoils the bisection runs, and
        # pays no rate for the probe streams that merely crossed it
        aspects = {o.aspect for o in self.touching.get(c, ()) if o.sent and (
            (mode == "spreading" and (_spreads_to(o, scope) or c in o.named))
            or (mode in ("traffic", "flows", "intermittent")
                and o.aspect in hyp.aspects.get(c, ())))}
        return sum(self.fit(c, a, mode) for a in aspects)

    def counts(self, hyp: Hypothesis) -> dict[str, float]:
        """Per aspect, the count observations' log-likelihood ratio under ``hyp``."""
        key = (tuple(sorted(hyp.modes.items())), tuple(sorted(
            (k, tuple(sorted(v))) for k, v in hyp.aspects.items())),
            tuple(sorted(hyp.scopes.items())))
        if key not in self._counts:
            reached = {id(o): o for c in hyp.modes for o in self.touching[c] if o.sent}
            self._counts[key] = _count_llr(reached.values(), self.totals, hyp, self.rate)
        return self._counts[key]

    def add(self, hyp: Hypothesis, c: str) -> tuple[float, Hypothesis]:
        """``c`` beside ``hyp`` at its best: (penalised gain, the new hypothesis).

        In traffic mode the fault spoils exactly the kinds of traffic (aspects) whose own
        evidence, failing and passing, favours it: given the rest of ``hyp`` the likelihood
        splits by aspect, so taking each kind whose share gains is the maximum. Its own
        readings (what names it and moves no traffic) count whatever kinds it takes."""
        relevant = [o for o in self.touching[c] if not o.sent]
        base = {o.id: _llr(o, hyp) for o in relevant}
        every = frozenset(o.aspect for o in self.touching[c] if o.traffic and o.failed)
        modes = ("traffic", "intermittent") if c in self.intermittent else ("traffic",)
        binary = {mode: self._per_aspect(relevant, base, hyp.with_(c, mode, every))
                  for mode in modes}
        counted = self.counts(hyp)
        options = [(mode, own, by_aspect) for mode, (own, by_aspect) in binary.items()]
        if any(o.sent for o in self.touching[c]):  # counts split by aspect too (own background)
            options = []
            own, by_aspect = binary["traffic"]
            for mode in ("traffic", "flows"):  # lost probe by probe, or whole flows
                per = dict(by_aspect)
                for a, v in self.counts(hyp.with_(c, mode, every)).items():
                    # each aspect spoiled pays for its rate
                    per[a] = per.get(a, 0.0) + v - counted.get(a, 0.0) - self.fit(c, a, mode)
                options.append((mode, own, per))
        gain, best = -math.inf, hyp
        for mode, own, per in options:
            # a link down now and then spoils whatever crossed it then, of any kind: an
            # intermittent cause takes every kind its failures show, not the ones that gain
            spoils = frozenset(a for a, g in per.items()
                               if (a in every if mode == "intermittent" else g > 0))
            g = own + sum(per[a] for a in spoils)
            if g > gain + 1e-9:  # a tie keeps the steadier mode (listed first)
                gain, best = g, hyp.with_(c, mode if spoils else "local", spoils)
        if c in self.spread:
            spreading = hyp.with_(c, "spreading", every, self.spread[c])
            gain_s = sum(_llr(o, spreading) - base[o.id] for o in relevant) + sum(
                self.counts(spreading).values()) - sum(counted.values()) - self.fitted(
                spreading, c)
            if gain_s > gain:
                gain, best = gain_s, spreading
        return gain - self.cost(c), best

    @staticmethod
    def _per_aspect(relevant: Sequence[Observation], base: Mapping[str, float],
                    trial: Hypothesis) -> tuple[float, dict[str, float]]:
        """What ``trial`` adds over ``base``: on the component's own readings, and per kind
        of traffic (the likelihood splits by aspect given the rest of the hypothesis)."""
        by_aspect: dict[str, float] = {}
        own = 0.0
        for o in relevant:
            delta = _llr(o, trial) - base[o.id]
            if o.traffic:
                by_aspect[o.aspect] = by_aspect.get(o.aspect, 0.0) + delta
            else:
                own += delta
        return own, by_aspect

    def without(self, hyp: Hypothesis, c: str) -> Hypothesis:
        return Hypothesis({k: v for k, v in hyp.modes.items() if k != c},
                          {k: v for k, v in hyp.aspects.items() if k != c},
                          {k: v for k, v in hyp.scopes.items() if k != c})

    def marginal(self, hyp: Hypothesis, c: str) -> float:
        """What ``c`` adds to the rest of ``hyp``, its price paid."""
        rest = self.without(hyp, c)
        relevant = [o for o in self.touching[c] if not o.sent]
        counted = (sum(self.counts(hyp).values()) - sum(self.counts(rest).values())
                   - self.fitted(hyp, c))
        return (log_likelihood(relevant, hyp) - log_likelihood(relevant, rest) + counted
                - self.cost(c))

    def refine(self, hyp: Hypothesis, rounds: int = 4) -> Hypothesis:
        """Undo greedy's mistakes: drop a cause the others make redundant, swap one for a
        candidate that explains its failures better (a spine that covered two NICs'
        pairs half-well gives way to the NICs)."""
        for _ in range(rounds):
            changed = False
            for c in sorted(hyp.modes, key=lambda k: self.marginal(hyp, k)):
                if self.marginal(hyp, c) <= MIN_GAIN:
                    hyp, changed = self.without(hyp, c), True
            for c in list(hyp.modes):
                rest = self.without(hyp, c)
                keep = self.marginal(hyp, c)
                rivals = {r for o in self.touching[c] if o.failed for r in o.components}
                rivals |= {r for r in self.spread if r != c}
                best = max(((self.add(rest, r), r) for r in sorted(rivals)
                            if r in self.touching and r not in hyp.modes),
                           key=lambda x: x[0][0], default=None)
                if best is not None and best[0][0] > keep + 1e-6:
                    hyp, changed = best[0][1], True
            if not changed:
                break
        return hyp


def infer(
    observations: Sequence[Observation],
    candidates: Iterable[str] | None = None,
    spreading: Mapping[str, str] | None = None,
    priors: Mapping[str, float] | None = None,
    max_causes: int = 8,
    intermittent: Iterable[str] = (),
) -> Inference:
    """The fewest components that explain the failing observations (maximum likelihood,
    each cause paying ``log 1/prior``: greedy, then refined by dropping and swapping),
    what each explains, and what clears its runner-up.

    ``spreading``: component -> the scope of traffic it may spoil anywhere (``ANY_SCOPE``:
    all of it, as a pause storm does; "bisection": aggregate cross-fabric runs, as
    polarised hashing does), wherever its routes go. ``intermittent``: components seen to
    come and go themselves (a link that flapped, an ECMP member that lost part of its
    flows), which may take the intermittent mode: only such evidence earns the leniency,
    else any component crossed by passes would explain failures beside them."""
    spread = dict(spreading or {})
    pool = sorted(set(candidates) if candidates is not None else
                  {c for o in observations if o.failed for c in o.components} | set(spread))
    search = _Search(observations, pool, spread, priors or {}, frozenset(intermittent))
    failing = [o for o in observations if o.failed]
    hyp = NONE
    singles: dict[str, float] = {}
    while failing and len(hyp.modes) < max_causes:
        gains = sorted(((*search.add(hyp, c), c) for c in pool if c not in hyp.modes),
                       key=lambda g: (-g[0], g[2]))
        if not singles:
            singles = {c: g for g, _, c in gains}
        if not gains or gains[0][0] <= MIN_GAIN:
            break
        hyp = gains[0][1]
    hyp = search.refine(hyp)
    causes = [_cause(search, hyp, c, failing) for c in hyp.modes]
    causes.sort(key=lambda c: (-c.gain, c.component))
    explained = {i for c in causes for i in c.explains}
    likely = _likely(hyp, [o for o in failing if o.id not in explained])
    causes = [replace(c, likely=tuple(likely.get(c.component, ()))) for c in causes]
    explained |= {i for ids in likely.values() for i in ids}
    unexplained = [o.id for o in failing if o.id not in explained]
    return Inference(causes, unexplained, singles)


def _likely(hyp: Hypothesis, failures: Iterable[Observation]) -> dict[str, list[str]]:
    """Each failure no cause explains, given to the cause most likely to have failed it,
    when that is likelier than a false alarm: the search chose the causes and the kinds of
    traffic each spoils from all the evidence; a single failure of a kind the rest of which
    passed across a cause is still that cause's doing more likely than noise when it
    crossed it (one sender's QP hashed into an ECMP hole)."""
    out: dict[str, list[str]] = {}
    for o in failures:
        best, chance = None, FALSE_ALARM
        for c, mode in sorted(hyp.modes.items()):
            p = _consequence(o, c, mode, hyp.aspects.get(c, frozenset()),
                            hyp.scopes.get(c, ANY_SCOPE))
            if p > chance:
                best, chance = c, p
        if best is not None:
            out.setdefault(best, []).append(o.id)
    return out


def _consequence(o: Observation, c: str, mode: str, aspects: frozenset[str],
                scope: str = ANY_SCOPE) -> float:
    """P(``c`` failed ``o`` and the suite located it where it did), were ``c`` to spoil
    ``o``'s kind too."""
    hit = _hit(o, c, mode, aspects | {o.aspect}, scope)
    weight = _place_weight(o, c, mode) if o.named else 1.0
    return hit * (1.0 - _miss(o, c, mode)) * weight


def _cause(search: _Search, hyp: Hypothesis, c: str, failing: Sequence[Observation]) -> Cause:
    """``c`` as a cause: its marginal gain, the failures it explains best among the causes,
    and its runner-up (the candidate that would best take its place)."""

    def share(o: Observation, k: str) -> float:
        hit = _hit(o, k, hyp.modes[k], hyp.aspects.get(k, frozenset()),
                   hyp.scopes.get(k, ANY_SCOPE))
        return hit * (_place_weight(o, k, hyp.modes[k]) if o.named else 1.0)

    # a reach of 1 - (1/2)^32 is 1 to the question (a bisection's 32 streams surely crossed
    # the member): equal within rounding, both causes explain it
    explains = tuple(o.id for o in failing if share(o, c) > 0
                     and share(o, c) >= max(share(o, k) for k in hyp.modes) - 1e-6)
    rest = search.without(hyp, c)
    rivals = {r for o in search.touching[c] if o.failed for r in o.components} - set(hyp.modes)
    ranked = sorted(((search.add(rest, r)[0], r) for r in rivals if r in search.touching),
                    key=lambda x: (-x[0], x[1]))
    gain = search.marginal(hyp, c)
    runner_gain, runner = ranked[0] if ranked else (0.0, None)
    runner_aspects = search.add(rest, runner)[1].aspects.get(runner, frozenset()) if runner else (
        frozenset())
    cleared = (_clearing(search.observations, runner, runner_aspects | _failing_aspects(
        search, runner)) if runner is not None else ())
    # one more cause among c and its rivals, or none (gain 0): each at its priced gain
    top = max(0.0, gain, runner_gain)
    norm = math.exp(-top) + math.exp(gain - top) + sum(math.exp(g - top) for g, _ in ranked)
    posterior = math.exp(gain - top) / norm
    return Cause(c, hyp.modes[c], gain, explains, runner, runner_gain, cleared, posterior)


def _failing_aspects(search: _Search, c: str) -> frozenset[str]:
    return frozenset(o.aspect for o in search.touching[c] if o.failed and o.traffic)


def _clearing(observations: Sequence[Observation], component: str,
              aspects: frozenset[str]) -> tuple[str, ...]:
    """Passing traffic of the failing kinds that surely crossed ``component``, the
    strongest first."""
    passed = [o for o in observations if not o.failed and o.traffic and o.aspect in aspects
              and o.cleared(component) >= 0.999]
    passed.sort(key=lambda o: -o.strength)
    return tuple(o.id for o in passed)
