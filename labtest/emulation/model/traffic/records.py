"""Counter records the device emulators print (switch CLI, ethtool, RDMA hw_counters)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueueTraffic:
    """One egress priority queue of a port in the traffic model."""

    priority: int
    tx_packets: int
    tx_bytes: int
    drop_packets: int
    ecn_marked_packets: int


@dataclass(frozen=True)
class EndpointTraffic:
    """One port's traffic view in the traffic model: packets, PFC per priority, queues."""

    endpoint: str
    oper_up: bool
    speed_gbps: float
    mtu: int
    tx_packets: int
    tx_bytes: int
    rx_packets: int
    rx_bytes: int
    tx_drops: int
    rx_discards: int
    pfc_tx_frames: tuple[int, ...]  # per priority 0..7
    pfc_rx_frames: tuple[int, ...]
    queues: tuple[QueueTraffic, ...]
    rx_fcs_errors: int = 0  # frames corrupted on the wire into this port (wireloss.py)


@dataclass(frozen=True)
class RoceCounters:
    """A host NIC port: the RDMA hw_counters and ``ethtool -S`` values labs read."""

    endpoint: str
    np_ecn_marked_roce_packets: int
    np_cnp_sent: int
    rp_cnp_handled: int
    rx_prio_pause: tuple[int, ...]
    tx_prio_pause: tuple[int, ...]
    rx_discards_phy: int
    tx_packets: int
    rx_packets: int


@dataclass(frozen=True)
class PfcwdQueueStats:
    """One lossless queue in ``show pfcwd stats`` (SONiC) terms."""

    endpoint: str
    priority: int
    status: str  # "operational" or "stormed"
    storm_detected: int
    storm_restored: int
    tx_ok: int
    tx_drop: int
    rx_ok: int
    rx_drop: int
