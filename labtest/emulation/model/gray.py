"""Gray failures: faults production sees and acceptance rarely does, and a fault schedule.

A gray failure drops traffic without tripping a counter or a link state: a link
that loses a fraction of frames, one direction that drops silently, one ECMP
member that blackholes some flows, a link that flaps once an hour. The model
has no per-frame forwarding, so these faults keep their state here and answer
one question, :func:`frame_loss`: with what probability is a frame of a given
flow lost crossing a link in a direction? A probe simulator (the doctor's
evaluation) asks it per hop; what no counter shows stays invisible to every
reading the device emulators serve, as on a real fabric.

The same faults are physics of the traffic model too
(``traffic/wireloss.py``): every flow crossing the link direction loses the
fraction on the wire after the sending port counted it, so the receiver's
``rx_packets`` falls short of the sender's ``tx_packets``, TG, iperf3 and probe
streams lose frames, RoCE QPs fall to go-back-N goodput and the NICs' transport
counters (``out_of_sequence``, ``packet_seq_err``, ``local_ack_timeout_err``)
move. A lossy link corrupts what it loses (the receiver counts FCS errors); a
silent drop and a blackhole leave no counter.

``lossy_link``, ``silent_drop`` and ``ecmp_blackhole`` belong to the acceptance
catalogue (``faults.FAULT_MODULES`` imports this module; the paths suite's
member loss catches them, docs/faults.md); ``intermittent_flap`` (an hourly
flap) stays the doctor's: :func:`register` adds it for a run that wants it.
"""

from __future__ import annotations

import weakref
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from labtest.emulation.model.faults import CATALOGUE, FaultParams, FaultType, PlacedFault
from labtest.emulation.model.traffic.wireloss import put

if TYPE_CHECKING:
    from labtest.emulation.model.fabric import Fabric

Direction = Literal["ab", "ba", "both"]


@dataclass
class _Blackhole:
    fraction: float  # of the flow-hash space this member drops
    salt: int


@dataclass
class GrayState:
    """Per (link index, "ab"|"ba"): frame loss probabilities and blackholes in force."""

    loss: dict[tuple[int, str], list[float]] = field(default_factory=dict)
    holes: dict[tuple[int, str], list[_Blackhole]] = field(default_factory=dict)


_STATE: weakref.WeakKeyDictionary[Any, GrayState] = weakref.WeakKeyDictionary()


def state(fabric: Fabric) -> GrayState:
    return _STATE.setdefault(fabric, GrayState())


def _dirs(direction: Direction) -> tuple[str, ...]:
    return ("ab", "ba") if direction == "both" else (direction,)


def frame_loss(fabric: Fabric, link: str, direction: str, flow_hash: int) -> float:
    """Probability that one frame of the flow with ``flow_hash`` is lost crossing ``link``
    from its a end to its b end (``"ab"``) or back (``"ba"``); a dark link loses all."""
    if not fabric.link_up(link):
        return 1.0
    st = _STATE.get(fabric)
    if st is None:
        return 0.0
    key = (fabric.resolve_link(link), direction)
    for hole in st.holes.get(key, []):
        if (zlib.crc32(f"{hole.salt}:{flow_hash}".encode()) % 10_000) / 10_000 < hole.fraction:
            return 1.0
    keep = 1.0
    for p in st.loss.get(key, []):
        keep *= 1.0 - p
    return 1.0 - keep


# --- the faults ------------------------------------------------------------------


class LossyLink(FaultParams):
    loss: float = Field(0.01, gt=0, le=1)
    direction: Direction = "both"


def _both(*undos: Any) -> Any:
    def undo() -> None:
        for u in undos:
            u()

    return undo


def _traffic(fabric: Fabric) -> Any:
    return getattr(fabric, "traffic", None)


def lossy_link(fabric: Fabric, target: str, p: LossyLink) -> Any:
    li = fabric.resolve_link(target)
    undo = put(state(fabric).loss, [(li, d) for d in _dirs(p.direction)], p.loss)
    traffic = _traffic(fabric)
    if traffic is None:
        return undo
    return _both(undo, traffic.add_wire_loss(fabric.link_names()[li], p.direction, p.loss, True))


class SilentDrop(FaultParams):
    loss: float = Field(1.0, gt=0, le=1)
    direction: Literal["ab", "ba"] = "ab"


def silent_drop(fabric: Fabric, target: str, p: SilentDrop) -> Any:
    li = fabric.resolve_link(target)
    undo = put(state(fabric).loss, [(li, p.direction)], p.loss)
    traffic = _traffic(fabric)
    if traffic is None:
        return undo
    return _both(undo, traffic.add_wire_loss(fabric.link_names()[li], p.direction, p.loss,
                                             False))


class EcmpBlackhole(FaultParams):
    flow_fraction: float = Field(0.5, gt=0, le=1)
    direction: Direction = "ab"
    salt: int = 0


def ecmp_blackhole(fabric: Fabric, target: str, p: EcmpBlackhole) -> Any:
    li = fabric.resolve_link(target)
    hole = _Blackhole(p.flow_fraction, p.salt)
    undo = put(state(fabric).holes, [(li, d) for d in _dirs(p.direction)], hole)
    traffic = _traffic(fabric)
    if traffic is None:
        return undo
    return _both(undo, traffic.add_wire_hole(fabric.link_names()[li], p.direction,
                                             p.flow_fraction, p.salt))


class IntermittentFlap(FaultParams):
    period_s: float = Field(3600.0, gt=0)
    down_s: float = Field(2.0, gt=0)


def intermittent_flap(fabric: Fabric, target: str, p: IntermittentFlap) -> Any:
    return fabric.flap_link(target, p.period_s, p.down_s)


#: in the acceptance catalogue (imported by ``faults.load_catalogue``): the paths suite's
#: member loss (PATHS-2.1) catches them at their link and sending port
ACCEPTANCE = (
    FaultType("lossy_link", LossyLink, lossy_link,
              "frames crossing the link are lost with probability `loss` (both directions by "
              "default), corrupted: the receiver counts FCS errors, its rx_packets fall short of "
              "the sender's tx_packets, streams lose frames, RoCE falls to go-back-N goodput "
              "and the NICs' out_of_sequence/packet_seq_err/local_ack_timeout_err move",
              "paths", ("link",)),
    FaultType("silent_drop", SilentDrop, silent_drop,
              "one direction of the link (`ab`: a end to b end) drops `loss` of its frames "
              "silently: link up, no error counter; the receiver's rx_packets fall short of the "
              "sender's tx_packets and the streams crossing it lose frames",
              "paths", ("link",)),
    FaultType("ecmp_blackhole", EcmpBlackhole, ecmp_blackhole,
              "the link, as one ECMP member, drops every frame of the flows whose hash falls "
              "in `flow_fraction` of the hash space, silently; other flows pass", "paths",
              ("link",)),
)
#: the doctor's only (an hourly flap: no acceptance run lasts long enough)
OPT_IN = (
    FaultType("intermittent_flap", IntermittentFlap, intermittent_flap,
              "the link goes dark for down_s once every period_s (an hourly flap by default), "
              "starting now", "doctor", ("link",)),
)
GRAY = ACCEPTANCE + OPT_IN

for _ft in ACCEPTANCE:
    if _ft.kind in CATALOGUE:
        raise RuntimeError(f"fault {_ft.kind!r} registered twice")
    CATALOGUE[_ft.kind] = _ft


def register() -> list[str]:
    """Add the opt-in gray faults to the catalogue (idempotent); returns every gray kind."""
    for ft in OPT_IN:
        CATALOGUE.setdefault(ft.kind, ft)
    return [ft.kind for ft in GRAY]


def unregister() -> None:
    """Remove the opt-in gray faults again (the acceptance ones stay)."""
    for ft in OPT_IN:
        if CATALOGUE.get(ft.kind) is ft:
            del CATALOGUE[ft.kind]


# --- a schedule ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledFault(PlacedFault):
    at_s: float
    duration_s: float


def random_schedule(
    rng: np.random.Generator,
    links: Sequence[str],
    kinds: Sequence[tuple[str, dict[str, Any]]],
    *,
    count: int,
    horizon_s: float,
    duration_s: tuple[float, float],
    gap_s: float = 0.0,
) -> list[ScheduledFault]:
    """``count`` faults at random times, places and durations within ``horizon_s``.

    Faults do not overlap in time when ``gap_s`` >= 0 (each starts ``gap_s`` after the
    previous one ended), so healthy periods separate them and every fault is one
    localisation question; times are drawn as gaps, not slots, so none is regular.
    """
    lo, hi = duration_s
    durations = rng.uniform(lo, hi, count)
    free = horizon_s - float(durations.sum()) - gap_s * count
    if free <= 0:
        raise ValueError("the faults do not fit in the horizon with these durations and gaps")
    gaps = rng.dirichlet(np.ones(count + 1)) * free
    out, t = [], 0.0
    for i in range(count):
        t += float(gaps[i]) + gap_s
        kind, params = kinds[int(rng.integers(len(kinds)))]
        target = links[int(rng.integers(len(links)))]
        out.append(ScheduledFault(kind, target, dict(params), t, float(durations[i])))
        t += float(durations[i])
    return out


def apply_schedule(fabric: Fabric, schedule: Sequence[ScheduledFault]) -> list[str]:
    """Inject every scheduled fault at its virtual time; returns the fault ids."""
    return [fabric.inject(f.kind, f.target, at_s=f.at_s, duration_s=f.duration_s, **f.params)
            for f in schedule]
