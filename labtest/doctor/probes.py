"""Probe paths and how they vote: ECMP coverage, the probe budget, 007-style blame.

How many probes per host pair cover every ECMP path? With ``w`` equally likely
paths and ``n`` probes whose source ports are drawn at random, a given path is
missed with probability ``(1 - 1/w)**n``; by the union bound every path is hit
with probability at least ``1 - w (1 - 1/w)**n``. For coverage ``c``:

    n >= ln((1 - c) / w) / ln(1 - 1/w)

(w = 2: 8 probes; w = 8: 51; w = 64: 557 for c = 0.99). Source ports chosen
round-robin over a known hash would need only ``w``; the random bound holds
whatever hash the switches use.

Blame (007, NSDI'18; NetBouncer, NSDI'19): every path that lost probes votes for
its links; a link explains the loss when its paths' loss is far more likely under
"this link loses at its own rate" than at the rate seen everywhere else (a Bayes
factor, uniform prior on the rate), weighed against every other candidate and
against "none of them". One lost probe on a four-link path leaves four equally
good explanations and names none; losses that meet on one link name it. The
best link is taken, the paths it explains are removed, and the rest is voted
again, so two simultaneous faults are both named.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaln


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
    probes_per_path: int = 4,
    interval_s: float = 10.0,
    probe_bytes: int = 64,
    link_gbps: float = 400.0,
    budget: float = 1e-3,
) -> MeshPlan:
    """One interval's probes: each host probes one host on its own leaf (the ToR mesh)
    and ``peers_per_host - 1`` on other leaves, each inter-leaf pair on enough random
    source ports to cover every ECMP path with ``coverage``. Peers are drawn afresh each
    interval, so over a few intervals every pair of leaves is probed. Raises
    ``OverBudget`` when the busiest access link would carry more than ``budget`` of its
    capacity in probes (R-Pingmesh's and issue 20's 0.1 %)."""
    ports = probes_per_pair(ecmp_width, coverage)
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


@dataclass(frozen=True)
class Blame:
    link: str
    confidence: float  # posterior probability that this link explains the lost probes
    lost: int
    sent: int  # probes through the link in the traces that lost any (see blame)
    bad_paths: int
    paths: int

    def text(self) -> str:
        return (f"probes: {self.lost} of {self.sent} lost on the {self.paths} probe paths "
                f"through {self.link} traced beside a loss ({self.bad_paths} of them lossy); "
                "no other link explains them as well")


def blame(paths: Sequence[ProbePath], min_confidence: float = 0.5) -> list[Blame]:
    """Links that explain the lost probes, best first (greedy, removing explained paths)."""
    left = {i: p for i, p in enumerate(paths) if p.sent > 0}
    through: dict[str, set[int]] = defaultdict(set)
    for i, p in left.items():
        for lk in p.links:
            through[lk].add(i)
    total_sent = sum(p.sent for p in left.values())
    total_lost = sum(p.lost for p in left.values())
    out: list[Blame] = []
    while total_lost > 0:
        log_bf: dict[str, float] = {}
        stats: dict[str, tuple[int, int, int, int]] = {}
        # a link is judged on the probes sent beside a loss: a flap or a burst is dark for a
        # moment, so a link's clean probes sent at another moment say nothing, while clean
        # probes through it sent at the same moment (the same trace) clear it
        lossy = {(p.src, p.dst) for p in left.values() if p.lost}
        for lk in {lk for p in left.values() if p.lost for lk in p.links}:
            mine = [left[i] for i in through[lk]]
            beside = [p for p in mine if (p.src, p.dst) in lossy]
            sent = sum(p.sent for p in beside)
            lost = sum(p.lost for p in beside)
            rest = (total_lost - lost + 1) / (
                total_sent - sum(p.sent for p in mine) + 2)  # Laplace: never zero
            # Bayes factor of "this link loses frames at its own rate" (uniform prior on the
            # rate) against "it loses at the rate seen everywhere else"
            log_bf[lk] = float(betaln(1 + lost, 1 + sent - lost)
                               - lost * math.log(rest) - (sent - lost) * math.log1p(-rest))
            stats[lk] = (lost, sent, sum(1 for p in beside if p.lost), len(beside))
        if not log_bf:
            break
        # posterior of "this link is (one more) lossy link": a priori even odds that one of
        # the N probed links is, each equally likely (prior 1/N each against N/N for none)
        top = max(log_bf.values())
        scale = sum(math.exp(v - top) for v in log_bf.values()) + math.exp(
            math.log(len(through)) - top)
        lk, v = max(log_bf.items(), key=lambda kv: (kv[1], kv[0]))
        best = Blame(lk, math.exp(v - top) / scale, *stats[lk])
        if best.confidence < min_confidence:
            break
        out.append(best)
        for i in list(through[best.link]):  # its paths are explained: vote again without them
            p = left.pop(i)
            total_sent -= p.sent
            total_lost -= p.lost
            for lk in p.links:
                through[lk].discard(i)
    return out
