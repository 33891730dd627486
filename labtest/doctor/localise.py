"""Suspects: per-link evidence and probe blame combined into a ranked list.

Evidence is grouped by unit (a cabled link, or a port with no link); per unit and
metric only the strongest item counts (eight lanes of one bad receiver are one
fact, not eight), and independent facts combine as ``1 - prod(1 - w)``. A unit
whose every fact was read at a host's port and is about the NIC itself (speed)
is reported as the NIC; one whose facts are all about one module's own
transmitter or temperature as that port; everything else as the link.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from labtest.doctor.judge import Evidence

#: a suspect at or above this confidence is reported as one (below: watched, not paged)
REPORT_CONFIDENCE = 0.5
NIC_METRICS = {"speed_mismatch"}
DEVICE_METRICS = {"unreachable", "service_down"}
MODULE_METRICS = {"tx_power_dbm", "temperature_c", "temperature_change_c", "tx_bias_change_pct",
                  "tx_power_change_db"}


@dataclass
class Suspect:
    unit: str
    kind: str  # link | port | nic | device
    confidence: float
    evidence: list[Evidence] = field(default_factory=list)
    paged_interval: int | None = None  # the interval it was first paged in (pager.Pager)
    ttd_s: float | None = None  # device seconds from its first evidence to its page
    held: int = 0  # > 0: paged earlier, clean for this many intervals, not yet cleared

    @property
    def seen_at(self) -> list[str]:
        return sorted({e.where for e in self.evidence})

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "kind": self.kind, "confidence": round(self.confidence, 4),
                "seen_at": self.seen_at, "paged_interval": self.paged_interval,
                "ttd_s": None if self.ttd_s is None else round(self.ttd_s, 1),
                "held": self.held, "evidence": [e.as_dict() for e in self.evidence]}


def rank(evidence: Iterable[Evidence], hosts: Collection[str] = ()) -> list[Suspect]:
    by_unit: dict[str, dict[str, Evidence]] = defaultdict(dict)
    for e in evidence:
        # drifts of one unit are one fact; so are its anomalies (counters grown without a
        # limit: FCS errors at one end and rx errors at the other are one corrupting link,
        # watched, and two of them must not add up to a page)
        fact = {"CHANGE": "drift", "ANOMALY": "anomaly"}.get(e.verdict, e.metric)
        best = by_unit[e.unit].get(fact)
        if best is None or e.weight > best.weight:
            by_unit[e.unit][fact] = e
    out = []
    for unit, facts in by_unit.items():
        evs = sorted(facts.values(), key=lambda e: -e.weight)
        miss = 1.0
        for e in evs:
            miss *= 1.0 - e.weight
        out.append(Suspect(_unit_of(unit, evs, hosts), _kind(evs, hosts), 1.0 - miss, evs))
    return sorted(out, key=order)


def order(s: Suspect) -> tuple[float, float, float, str]:
    """Most confident first; at the same confidence (two links the probes cannot tell
    apart, both near 1) the one with more evidence beside it, then the one whose probes
    lost more of what they sent (the link a heavy drop sits on loses most of its traces; a
    link paged beside it on a few borrowed losses, a smaller share: issue 34's evaluation
    ranked such ties by name), then by name."""
    lost = max((e.value for e in s.evidence if e.verdict == "PROBE"), default=0.0)
    return -s.confidence, -sum(e.weight for e in s.evidence), -lost, s.unit


def _kind(evs: list[Evidence], hosts: Collection[str]) -> str:
    wheres = {e.where for e in evs}
    metrics = {e.metric for e in evs}
    if metrics & DEVICE_METRICS:  # the device's own fact, and what it explains
        return "device"
    if metrics <= NIC_METRICS and all(w.split(":")[0] in hosts for w in wheres):
        return "nic"
    if metrics <= MODULE_METRICS and len(wheres) == 1:
        return "port"
    return "link"


def _unit_of(unit: str, evs: list[Evidence], hosts: Collection[str]) -> str:
    kind = _kind(evs, hosts)
    return evs[0].where if kind in ("nic", "port") else unit
