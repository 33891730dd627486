"""Traffic faults: each changes ``fabric.traffic`` and returns how to undo it.

Targets: a device name, a ``dev:port`` end point, a host, or a link
(``a--b`` or either end). The effects only touch the traffic model, so the
physics half of the fabric never sees them.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field, model_validator

from labtest.emulation.model.faults import FaultError, FaultParams, fault
from labtest.emulation.model.traffic.model import TrafficModel, Undo


class HasTraffic(Protocol):
    traffic: TrafficModel


def _need(target: str, what: str) -> str:
    if not target:
        raise FaultError(f"this fault needs a target: {what}")
    return target


class PriorityParams(FaultParams):
    """One traffic class (0-7; 3, RoCE's lossless default): PFC off or a storm on it."""

    priority: int = Field(3, ge=0, le=7)


@fault(
    "pfc_disabled",
    PriorityParams,
    "the device stops generating PFC on the priority: its lossless queue tail-drops under incast",
    "congestion",
)
def pfc_disabled(fabric: HasTraffic, target: str, params: PriorityParams) -> Undo:
    return fabric.traffic.set_pfc(_need(target, "a switch"), params.priority, False)


class NoParams(FaultParams):
    pass


@fault(
    "ecn_disabled",
    NoParams,
    "switch: no ECN marking on lossless queues; host: no DCQCN (no ECT, no CNPs); "
    "PFC does all the work",
    "congestion",
)
def ecn_disabled(fabric: HasTraffic, target: str, params: NoParams) -> Undo:
    return fabric.traffic.set_ecn(_need(target, "a switch or host"), False)


class EcnThresholdsParams(FaultParams):
    kmin_kb: float = Field(8000.0, gt=0)
    kmax_kb: float = Field(32000.0, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> EcnThresholdsParams:
        if self.kmin_kb > self.kmax_kb:
            raise ValueError("kmin_kb must not exceed kmax_kb")
        return self


@fault(
    "ecn_thresholds",
    EcnThresholdsParams,
    "the switch's lossless queues mark ECN only from kmin_kb to kmax_kb (default 10x the "
    "400G profile, above PFC XOFF): its queues stand deep, PFC does the work, tail latency "
    "under load rises",
    "latency",
)
def ecn_thresholds(fabric: HasTraffic, target: str, params: EcnThresholdsParams) -> Undo:
    return fabric.traffic.set_ecn_thresholds(
        _need(target, "a switch"), params.kmin_kb * 1e3, params.kmax_kb * 1e3
    )


class ShallowBufferParams(FaultParams):
    xoff_kb: float = Field(200.0, gt=0, le=3200)


@fault(
    "shallow_buffer",
    ShallowBufferParams,
    "the switch's lossless ingress PGs send XOFF at xoff_kb (a shallow buffer profile, default "
    "200 KB, below the 400G ECN Kmin of 800 KB): PFC pauses before ECN marks, so a congested "
    "port pauses its upstream hops and flows to other ports wait behind it (head-of-line)",
    "latency",
)
def shallow_buffer(fabric: HasTraffic, target: str, params: ShallowBufferParams) -> Undo:
    return fabric.traffic.set_pg_xoff(_need(target, "a switch"), params.xoff_kb * 1e3)


@fault(
    "pfc_storm",
    PriorityParams,
    "a host NIC sends pause frames on the priority without end; the PFC watchdog should drop",
    "congestion",
)
def pfc_storm(fabric: HasTraffic, target: str, params: PriorityParams) -> Undo:
    return fabric.traffic.start_pfc_storm(_need(target, "a host or host:port"), params.priority)


@fault(
    "pfcwd_disabled",
    NoParams,
    "the device's PFC watchdog is off: a storm is never broken and pauses spread upstream",
    "congestion",
)
def pfcwd_disabled(fabric: HasTraffic, target: str, params: NoParams) -> Undo:
    return fabric.traffic.set_pfcwd(_need(target, "a switch"), False)


class PolarisationParams(FaultParams):
    seed: int = 0
    fields: tuple[str, ...] = ("src_ip", "dst_ip")


@fault(
    "ecmp_polarisation",
    PolarisationParams,
    "switches (target, or all) hash with one seed on IPs only: QPs of a host pair share one "
    "uplink and successive tiers repeat the same choice",
    "roce",
)
def ecmp_polarisation(fabric: HasTraffic, target: str, params: PolarisationParams) -> Undo:
    devices = [target] if target else None
    return fabric.traffic.set_ecmp_hash(devices, params.seed, params.fields)


class SlowConvergenceParams(FaultParams):
    extra_ms: float = Field(2000.0, gt=0)


@fault(
    "slow_convergence",
    SlowConvergenceParams,
    "the device takes extra_ms longer to reroute after a link failure: a longer loss window",
    "failover",
)
def slow_convergence(fabric: HasTraffic, target: str, params: SlowConvergenceParams) -> Undo:
    return fabric.traffic.add_convergence_delay(_need(target, "a switch"), params.extra_ms)


class DegradedNicParams(FaultParams):
    speed_gbps: float | None = Field(None, gt=0)
    pcie_gbps: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _something(self) -> DegradedNicParams:
        if self.speed_gbps is None and self.pcie_gbps is None:
            raise ValueError("give speed_gbps and/or pcie_gbps")
        return self


@fault(
    "degraded_nic",
    DegradedNicParams,
    "a host NIC links at a lower speed and/or sits on a narrower PCIe link: "
    "its RoCE bandwidth drops",
    "roce",
)
def degraded_nic(fabric: HasTraffic, target: str, params: DegradedNicParams) -> Undo:
    return fabric.traffic.set_nic(_need(target, "a host"), params.speed_gbps, params.pcie_gbps)


class MtuMismatchParams(FaultParams):
    mtu: int = Field(1500, ge=68, le=16000)


@fault(
    "mtu_mismatch",
    MtuMismatchParams,
    "the port's MTU changes: a switch port drops bigger frames; a host NIC falls back to a "
    "smaller RoCE MTU (1500 -> 1024 B, lower wire efficiency)",
    "roce",
)
def mtu_mismatch(fabric: HasTraffic, target: str, params: MtuMismatchParams) -> Undo:
    endpoint = _need(target, "dev:port")
    undo_traffic = fabric.traffic.set_mtu(endpoint, params.mtu)
    set_port = getattr(fabric, "set_mtu", None)  # the port as the device CLIs show it
    if set_port is None:
        return undo_traffic
    device, port = fabric.resolve_port(endpoint)  # type: ignore[attr-defined]
    was = fabric.interface(device, port).mtu_bytes  # type: ignore[attr-defined]
    set_port(device, port, params.mtu)

    def undo() -> None:
        undo_traffic()
        set_port(device, port, was)

    return undo


class StragglerParams(FaultParams):
    rate_fraction: float = Field(0.5, gt=0, le=1)


@fault(
    "straggler_link",
    StragglerParams,
    "the link carries only rate_fraction of its speed: every ring collective over it slows to it",
    "collective",
)
def straggler_link(fabric: HasTraffic, target: str, params: StragglerParams) -> Undo:
    return fabric.traffic.set_straggler(_need(target, "a link or dev:port"), params.rate_fraction)
