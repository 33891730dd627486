"""Probe paths and how they vote: ECMP coverage, the probe budget, 007-style blame.

How many probes per host pair cover every ECMP path? With ``w`` equally likely
paths and ``n`` probes whose source ports are drawn at random, a given path is
missed with probability ``(1 - 1/w)**n``; by the union bound every path is hit
with probability at least ``1 - w (1 - 1/w)**n``. For coverage ``c``:

    n >= ln((1 - c) / w) / ln(1 - 1/w)

(w = 2: 8 probes; w = 8: 50; w = 64: 605 for c = 0.99). Source ports chosen
round-robin over a known hash would need only ``w``; the random bound holds
whatever hash the switches use.

Blame (007, NSDI'18; NetBouncer, NSDI'19): every path that lost probes votes for
its links; a link explains the loss when the loss on its paths is improbable at
the loss rate seen everywhere else (a one-sided binomial test). The best link
is taken, the paths it explains are removed, and the rest is voted again, so
two simultaneous faults are both named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binom


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
    confidence: float  # 1 - p-value of its loss at the background loss rate
    lost: int
    sent: int
    bad_paths: int
    paths: int

    def text(self) -> str:
        return (f"probes: {self.lost} of {self.sent} lost on the {self.paths} probe paths "
                f"through {self.link} ({self.bad_paths} of them lossy); elsewhere loss is "
                "at the background rate")


def blame(paths: Sequence[ProbePath], min_confidence: float = 0.5) -> list[Blame]:
    """Links that explain the lost probes, best first (greedy, removing explained paths)."""
    left = [p for p in paths if p.sent > 0]
    out: list[Blame] = []
    while any(p.lost for p in left):
        best: Blame | None = None
        total_sent = sum(p.sent for p in left)
        total_lost = sum(p.lost for p in left)
        links = {lk for p in left if p.lost for lk in p.links}
        for lk in links:
            mine = [p for p in left if lk in p.links]
            sent = sum(p.sent for p in mine)
            lost = sum(p.lost for p in mine)
            rest = (total_lost - lost + 1) / (total_sent - sent + 2)  # Laplace: never zero
            conf = float(1.0 - binom.sf(lost - 1, sent, rest))  # P(X >= lost) at rest's rate
            cand = Blame(lk, conf, lost, sent, sum(1 for p in mine if p.lost), len(mine))
            if best is None or (cand.confidence, cand.lost / cand.sent) > (
                    best.confidence, best.lost / best.sent):
                best = cand
        if best is None or best.confidence < min_confidence:
            break
        out.append(best)
        left = [p for p in left if best.link not in p.links]
    return out
