"""Frames lost on the wire: gray failures as physics of the traffic model.

A link direction can lose a fraction of the frames that cross it: randomly, with the
frames corrupted on the way (a lossy link: the receiver's MAC drops each one with an
FCS error and counts it), or silently (a one-way silent drop: no counter anywhere); and
one ECMP member can blackhole every frame of the flows whose hash falls in a fraction of
the hash space (silent too; other flows pass). The fluid engine applies the loss per
segment (a flow's hop) after the sending port counted the frame: the sender's
``tx_pkts`` includes it, the receiver's ``rx_packets`` does not, the flow's downstream
rate and delivered frames shrink, and the flow's own loss (a TG stream, an iperf3
stream) counts it. ``Counters`` keep, per egress port, the frames lost after it
(``wire_lost``) and the corrupted part (``wire_fcs``, the receiver's FCS errors).

RoCE over a lossy path: the NIC's go-back-N transport retransmits everything after a
lost packet, so goodput falls far faster than the loss rate (:func:`go_back_n_goodput`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:
    from labtest.emulation.model.traffic.flows import Flow
    from labtest.emulation.model.traffic.topology import Topology

#: packets a 400G RoCE QP keeps in flight and resends after a loss: the bandwidth-delay
#: product of a two-tier fabric (RTT ~10 us x 400 Gb/s = 500 KB) in 4 KB packets
GBN_WINDOW_PACKETS = 122

K = TypeVar("K")
T = TypeVar("T")


def go_back_n_goodput(loss: float, window: int = GBN_WINDOW_PACKETS) -> float:
    """Goodput of a go-back-N RoCE QP, as a fraction of its loss-free rate, at packet loss
    probability ``loss`` on its path.

    Each lost packet costs the window in flight resent (the receiver NAKs the first
    out-of-sequence packet and drops the rest), and the resent window is itself exposed to
    loss: goodput = (1 - p)^W / (1 + p W). With W = 122 (400G, 10 us RTT) it keeps 0.98 at
    1e-4, 0.79 at 0.1 %, 0.34 at 0.5 % and 0.13 at 1 %: the published curve's shape, where
    go-back-N RoCE
    falls to "nearly zero" relative throughput once the loss rate exceeds 1 % (Wang et al.,
    "Error Recovery of RDMA Packets in Data Center Networks", ICCCN 2019, 40G testbed) and
    IRN's RoCE baseline (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018,
    section 2) loses most of its throughput at 0.1-1 % loss without PFC.
    """
    p = min(max(float(loss), 0.0), 1.0)
    if p <= 0.0:
        return 1.0
    return float((1.0 - p) ** window / (1.0 + p * window))


def put(table: dict[K, list[T]], keys: Sequence[K], item: T) -> Callable[[], None]:
    """Add ``item`` to the list of every key (a fault in force on each link direction);
    returns what takes it out again. Faults of equal value stack, each undone once: here,
    and in the probe model's own table (``labtest.emulation.model.gray``)."""
    for k in keys:
        table.setdefault(k, []).append(item)

    def take_out() -> None:
        for k in keys:
            table[k].remove(item)

    return take_out


@dataclass
class _Hole:
    fraction: float
    salt: int


@dataclass
class WireTable:
    """Wire loss in force, per (link index, direction): 0 = a end to b end, 1 = back."""

    loss: dict[tuple[int, int], list[tuple[float, bool]]] = field(default_factory=dict)
    holes: dict[tuple[int, int], list[_Hole]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not any(self.loss.values()) and not any(self.holes.values())

    def add_loss(self, link: int, directions: tuple[int, ...], loss: float,
                 corrupt: bool) -> Callable[[], None]:
        """Lose ``loss`` of the frames on the link's directions; returns what takes it out."""
        return put(self.loss, [(link, d) for d in directions], (float(loss), bool(corrupt)))

    def add_hole(self, link: int, directions: tuple[int, ...], fraction: float,
                 salt: int) -> Callable[[], None]:
        """Blackhole ``fraction`` of the flows on the link's directions; returns what takes
        it out."""
        return put(self.holes, [(link, d) for d in directions], _Hole(float(fraction), int(salt)))

    def hop(self, link: int, direction: int, flow_key: str) -> tuple[float, float]:
        """(loss, corrupted share of it) for one flow crossing one link direction."""
        for hole in self.holes.get((link, direction), []):
            h = zlib.crc32(f"{hole.salt}:{flow_key}".encode()) % 10_000
            if h / 10_000 < hole.fraction:
                return 1.0, 0.0
        keep, keep_clean = 1.0, 1.0
        for p, corrupt in self.loss.get((link, direction), []):
            keep *= 1.0 - p
            if corrupt:
                keep_clean *= 1.0 - p
        lost = 1.0 - keep
        return lost, ((1.0 - keep_clean) / lost if lost > 0 else 0.0)


def flow_key(f: Flow) -> str:
    """What an ECMP member's hash sees of a flow: its 5-tuple (and RoCE destination QP)."""
    t = f.five_tuple
    return f"{t.src_ip}:{t.dst_ip}:{t.proto}:{t.sport}:{t.dport}:{t.dst_qp}"


def direction_of(topo: Topology, port: int) -> tuple[int, int]:
    """(link index, direction) of frames leaving ``port`` onto its link."""
    li = topo.ports[port].link
    return li, 0 if topo.links[li].ports[0] == port else 1


def segments(topo: Topology, table: WireTable, flows: list[Flow],
             seg_flow: np.ndarray, seg_port: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per segment: the share of the frames leaving its port that the wire loses, and the
    corrupted part of that share."""
    n = len(seg_flow)
    loss, fcs = np.zeros(n), np.zeros(n)
    if table.empty():
        return loss, fcs
    keys = [flow_key(f) for f in flows]
    for s in range(n):
        li, d = direction_of(topo, int(seg_port[s]))
        if (li, d) in table.loss or (li, d) in table.holes:
            loss[s], fcs[s] = table.hop(li, d, keys[int(seg_flow[s])])
    return loss, fcs


def path_loss(topo: Topology, table: WireTable, f: Flow) -> float:
    """Loss probability of a frame of ``f`` over its whole path."""
    if table.empty() or not f.path:
        return 0.0
    keep, key = 1.0, flow_key(f)
    for p in f.path:
        li, d = direction_of(topo, p)
        keep *= 1.0 - table.hop(li, d, key)[0]
    return 1.0 - keep
