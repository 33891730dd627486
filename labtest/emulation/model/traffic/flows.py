"""A flow: one stream of frames from an end point to another, and what happened to it.

RoCE queue pairs and traffic-generator streams are both flows; they differ in
how their rate is set (DCQCN at the sender, or a fixed offered rate) and in
which result record reads them. Counters are in frames (floats: the model is a
fluid, the records round them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

#: preamble + start delimiter (8 B) and inter-frame gap (12 B) on the wire
L1_OVERHEAD_B = 20
#: RoCEv2 headers around the payload: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4
ROCE_HEADERS_B = 62
#: smallest Ethernet frame incl. FCS
MIN_FRAME_B = 64


@dataclass(frozen=True)
class FiveTuple:
    src_ip: int
    dst_ip: int
    proto: int
    sport: int
    dport: int
    dst_qp: int = 0

    def field(self, name: str) -> int:
        return int(getattr(self, name))


@dataclass
class Flow:
    id: int
    name: str
    kind: Literal["roce", "tg"]
    src: int  # port index of the sending NIC / TG port
    dst: int  # port index of the receiving NIC / TG port
    five_tuple: FiveTuple
    priority: int
    frame_bytes: int  # L2 frame incl. FCS
    payload_bytes: int  # application bytes carried per frame
    rate_bps: float  # offered wire (L1) rate; for DCQCN flows the ceiling
    ect: bool = False  # sent ECN-capable (ECT), so switches mark instead of dropping
    ecn_bits: int = 0  # the IP ECN field as sent (0..3)
    dcqcn: bool = False
    start_s: float = 0.0
    stop_s: float = math.inf
    max_frames: float = math.inf
    path: list[int] | None = None  # egress port indices, NIC first
    base_latency_s: float = 0.0  # one way with empty queues (set with the path)
    np_enabled: bool = True  # the receiver answers CE marks with CNPs
    # --- results (frames unless named otherwise) ---
    tx_frames: float = 0.0
    rx_frames: float = 0.0
    drop_frames: float = 0.0
    ce_frames: float = 0.0
    ooo_frames: float = 0.0
    lat_min_s: float = math.inf
    lat_max_s: float = 0.0
    lat_sum_s: float = 0.0  # latency x frames, for the frame-weighted average
    first_tx_s: float | None = None
    last_rx_s: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # the model's notes: fair_bps, cap_bps, ...

    @property
    def wire_bytes(self) -> int:
        return max(self.frame_bytes, MIN_FRAME_B) + L1_OVERHEAD_B

    @property
    def efficiency(self) -> float:
        """Goodput per wire byte."""
        return self.payload_bytes / self.wire_bytes

    @property
    def done(self) -> bool:
        return self.tx_frames >= self.max_frames - 1e-9

    def active(self, t_s: float) -> bool:
        return self.start_s <= t_s < self.stop_s and not self.done

    def record_latency(self, latency_s: float, frames: float) -> None:
        if frames <= 0:
            return
        self.lat_min_s = min(self.lat_min_s, latency_s)
        self.lat_max_s = max(self.lat_max_s, latency_s)
        self.lat_sum_s += latency_s * frames


@dataclass
class PauseSource:
    """Pause frames arriving at ``port`` from its peer, outside the switch's own PFC.

    A storming NIC or a traffic generator's PFC flow: ``fraction`` of the time the
    port's egress queues of ``priorities`` are paused (1.0 = continuously).
    """

    port: int
    priorities: tuple[int, ...]
    fraction: float
    frames_per_s: float
    start_s: float = 0.0
    stop_s: float = math.inf
    flow_id: int | None = None  # the TG flow that sends it, if any

    def active(self, t_s: float) -> bool:
        return self.start_s <= t_s < self.stop_s
