"""Traffic-generator flows in the shape of Open Traffic Generator (OTG) flows.

A spec names a Tx and an Rx TG port, a frame size, a rate (pps, bps or percent
of line), a duration (fixed packets, fixed seconds or continuous) and the
headers that matter to the fabric: DSCP (which picks the priority), the ECN
field, a RoCEv2 BTH (UDP 4791 and a destination QP), or a PFC pause frame.
Metrics follow OTG's ``Flow.Metric``: frames and bytes Tx/Rx, loss %,
``packet_loss_duration`` in ms (lost frames / frame rate), latency in ns,
ECN-CE frames received and out-of-order frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labtest.emulation.model.traffic.flows import L1_OVERHEAD_B, Flow

#: DSCP -> traffic class, the SONiC default map for the classes a RoCE fabric uses
DSCP_TO_PRIORITY = {3: 3, 4: 4, 46: 5, 48: 6}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TgRate(_Spec):
    pps: float | None = Field(None, gt=0)
    bps: float | None = Field(None, gt=0, description="L2 frame bits per second")
    percentage: float | None = Field(None, gt=0, le=100, description="of the Tx port line rate")

    @model_validator(mode="after")
    def _one(self) -> TgRate:
        if sum(v is not None for v in (self.pps, self.bps, self.percentage)) != 1:
            raise ValueError("give exactly one of pps, bps, percentage")
        return self


class TgDuration(_Spec):
    fixed_packets: int | None = Field(None, gt=0)
    fixed_seconds: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _at_most_one(self) -> TgDuration:
        if self.fixed_packets is not None and self.fixed_seconds is not None:
            raise ValueError("give fixed_packets or fixed_seconds, not both")
        return self


class TgRocev2(_Spec):
    dst_qp: int = Field(0x11, ge=0, lt=1 << 24)
    opcode: str = "RC_RDMA_WRITE_ONLY"


class TgPfcPause(_Spec):
    """An 802.1Qbb pause frame: which classes, for how many 512-bit quanta."""

    priorities: tuple[int, ...] = (3,)
    quanta: int = Field(65535, ge=0, le=65535)


class TgFlowSpec(_Spec):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    tx_port: str
    rx_port: str | None = None  # None only for pause frames
    frame_size_b: int = Field(1518, ge=64, le=16000)
    rate: TgRate = TgRate(percentage=10.0)
    duration: TgDuration = TgDuration()
    dscp: int = Field(0, ge=0, le=63)
    ecn: int = Field(0, ge=0, le=3, description="IP ECN field: 1/2 ECT, 3 CE")
    priority: int | None = Field(None, ge=0, le=7, description="default: from DSCP")
    src_port: int = Field(49152, ge=0, le=65535)
    dst_port: int = Field(5000, ge=0, le=65535)
    rocev2: TgRocev2 | None = None
    pfc_pause: TgPfcPause | None = None

    @model_validator(mode="after")
    def _endpoints(self) -> TgFlowSpec:
        if self.pfc_pause is None and self.rx_port is None:
            raise ValueError("rx_port is required unless the flow sends PFC pause frames")
        return self

    @property
    def traffic_class(self) -> int:
        if self.priority is not None:
            return self.priority
        return DSCP_TO_PRIORITY.get(self.dscp, 0)

    def frames_per_s(self, line_gbps: float) -> float:
        """Frame rate for this spec on a port of ``line_gbps``."""
        if self.rate.pps is not None:
            return self.rate.pps
        if self.rate.bps is not None:
            return self.rate.bps / (self.frame_size_b * 8)
        assert self.rate.percentage is not None
        return (
            self.rate.percentage / 100 * line_gbps * 1e9 / ((self.frame_size_b + L1_OVERHEAD_B) * 8)
        )


@dataclass(frozen=True)
class TgFlowMetrics:
    name: str
    transmit: Literal["started", "stopped"]
    frames_tx: int
    frames_rx: int
    bytes_tx: int
    bytes_rx: int
    frames_tx_rate_fps: float
    loss_pct: float
    loss_duration_ms: float
    latency_min_ns: float
    latency_avg_ns: float
    latency_max_ns: float
    ecn_ce_rx: int
    out_of_order: int


def metrics(flow: Flow, now_s: float, pause_frames_tx: float | None = None) -> TgFlowMetrics:
    """OTG-shaped metrics of a TG flow (a pause flow reports only what it sent)."""
    running = flow.start_s <= now_s < flow.stop_s and not flow.done
    fps = flow.rate_bps / (flow.wire_bytes * 8)
    tx = pause_frames_tx if pause_frames_tx is not None else flow.tx_frames
    rx = 0.0 if pause_frames_tx is not None else flow.rx_frames
    lost = 0.0 if pause_frames_tx is not None else flow.drop_frames
    ce = flow.rx_frames if flow.ecn_bits == 3 else flow.ce_frames
    have_lat = flow.rx_frames > 0 and pause_frames_tx is None
    return TgFlowMetrics(
        name=flow.name,
        transmit="started" if running else "stopped",
        frames_tx=round(tx),
        frames_rx=round(rx),
        bytes_tx=round(tx) * flow.frame_bytes,
        bytes_rx=round(rx) * flow.frame_bytes,
        frames_tx_rate_fps=float(fps) if running else 0.0,
        loss_pct=float(100.0 * lost / tx) if tx > 0 else 0.0,
        loss_duration_ms=float(1000.0 * lost / fps) if fps > 0 else 0.0,
        latency_min_ns=float(flow.lat_min_s * 1e9) if have_lat else 0.0,
        latency_avg_ns=float(flow.lat_sum_s / flow.rx_frames * 1e9) if have_lat else 0.0,
        latency_max_ns=float(flow.lat_max_s * 1e9) if have_lat else 0.0,
        ecn_ce_rx=round(ce) if pause_frames_tx is None else 0,
        out_of_order=round(flow.ooo_frames),
    )
