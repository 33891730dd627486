"""Congestion numbers: PFC thresholds and headroom, ECN marking, DCQCN, per-device QoS.

The engine that uses them is ``fluid.FluidNet``. Defaults
(reference/domain-methodology.md section 4 unless marked):
- pause quanta of 512 bit times; XOFF refreshed at half of 65535 quanta;
- headroom = 2 max frames + pause frame + 2 interface delays + peer response
  (bit times from Cisco Press ch. 7) + 2 cable delays at 5 ns/m;
- PG XOFF at the port's ECN Kmax, so ECN marks fully before PFC pauses (the
  DCQCN deployment rule); XON two jumbo frames (18 KiB) lower: our assumption;
- ECN Kmin/Kmax: 25G 100/400 KB, 100G 400/1600 KB, 400G+ 800/3200 KB,
  Pmax 0.2 (HPCC-derived ns-3 configs);
- lossy queue tail-drop limit 1 MiB: our assumption;
- DCQCN: ``DcqcnParams``; PFC watchdog timers: ``TrafficSettings``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labtest.emulation.model.traffic.topology import PRIORITIES

PAUSE_QUANTUM_BITS = 512
MAX_QUANTA = 65535
# headroom components in bit times at 100G (Cisco Press ch. 7 via the reference)
_MAX_FRAME_BT, _PAUSE_BT, _INTF_BT = 73_888, 672, 122_880
_RESPONSE_BT = {100: 201_728, 400: 463_360}
CABLE_S_PER_M = 5e-9

XON_OFFSET_BYTES = 2 * 9216
LOSSY_LIMIT_BYTES = 1024 * 1024


def ecn_thresholds(speed_gbps: float) -> tuple[float, float, float]:
    """(Kmin bytes, Kmax bytes, Pmax) by port speed: HPCC-derived ns-3 configs."""
    if speed_gbps <= 25:
        return 100e3, 400e3, 0.2
    if speed_gbps <= 100:
        return 400e3, 1600e3, 0.2
    return 800e3, 3200e3, 0.2


def ecn_mark_probability(
    queue_b: np.ndarray, kmin_b: np.ndarray, kmax_b: np.ndarray, pmax: np.ndarray
) -> np.ndarray:
    """RED-style ECN: 0 below Kmin, linear to Pmax at Kmax, every packet above Kmax."""
    span = np.maximum(kmax_b - kmin_b, 1.0)
    p = np.clip((queue_b - kmin_b) / span, 0.0, 1.0) * pmax
    return np.where(queue_b >= kmax_b, (pmax > 0).astype(float), p)


def xoff_bytes(speed_gbps: float) -> float:
    """Where an ingress PG sends XOFF: at Kmax, so ECN acts before PFC does."""
    return ecn_thresholds(speed_gbps)[1]


def headroom_bytes(speed_gbps: float, cable_m: float) -> float:
    """PFC headroom: what still arrives after XOFF is sent (reference section 4)."""
    response = _RESPONSE_BT[400] if speed_gbps > 100 else _RESPONSE_BT[100]
    bits: float = 2 * _MAX_FRAME_BT + _PAUSE_BT + 2 * _INTF_BT + response
    bits += 2 * cable_m * CABLE_S_PER_M * speed_gbps * 1e9
    return bits / 8


def pause_time_s(speed_gbps: float, quanta: int = MAX_QUANTA) -> float:
    return quanta * PAUSE_QUANTUM_BITS / (speed_gbps * 1e9)


@dataclass(frozen=True)
class DcqcnParams:
    """NVIDIA ConnectX DCQCN defaults (DOCA "DCQCN CC parameters", via the reference).

    The rate-increase knobs are not in the reference: ``time_reset_s``,
    ``byte_reset_b``, the target-rate clamping (``clamp_tgt_rate`` 0,
    ``clamp_tgt_rate_after_time_inc`` 1) are NVIDIA's documented defaults as we
    know them, AI/HAI are Spirent's defaults from the reference, and the NP's
    CNP spacing is assumed equal to the RP's rate-reduce period.

    QPs start from their max-min share of the fabric rather than from line
    rate: with these timers a fluid DCQCN started at line rate under a 7:1
    incast either collapses (clamped target) or stays PFC-bound for far longer
    than a test runs, while real NICs settle within milliseconds. Modelling
    the settled state keeps what suites measure (shares, marks, CNPs, pauses).
    """

    g: float = 5 / 1024  # dce_tcp_g = 1019/1024 -> weight of a new sample
    alpha_period_s: float = 1e-6  # dce_tcp_rtt
    initial_alpha: float = 1023 / 1024
    min_dec_fac: float = 0.5  # rpg_min_dec_fac 50 %: largest single cut
    min_rate_bps: float = 1e6  # rpg_min_rate 1 Mb/s
    reduce_period_s: float = 4e-6  # rate_reduce_monitor_period
    time_reset_s: float = 300e-6  # rpg_time_reset
    byte_reset_b: float = 32767  # rpg_byte_reset
    threshold: int = 1  # rpg_threshold: fast-recovery stages
    clamp_target: bool = False  # clamp_tgt_rate: every cut also lowers the target rate
    ai_bps: float = 5e6
    hai_bps: float = 40e6
    cnp_interval_s: float = 4e-6
    feedback_s: float = 2e-6  # CNP travel time back to the sender


class Counters:
    """Every rate-like counter in one vector, so a steady state can be extrapolated."""

    PORT = (
        "tx_pkts",
        "tx_octets",
        "tx_drops",
        "rx_discards",
        "np_cnp_sent",
        "rp_cnp_handled",
        "np_ecn_marked",
        "wire_lost",  # frames lost on the wire after leaving the port (wireloss.py)
        "wire_fcs",  # ... of them corrupted: the receiver's FCS errors
    )
    QUEUE = (
        "q_tx_pkts",
        "q_tx_octets",
        "q_drops",
        "q_ecn_marked",
        "pfc_tx",
        "pfc_rx",
        "wd_tx_ok",
        "wd_tx_drop",
        "wd_rx_ok",
        "wd_rx_drop",
    )

    def __init__(self, n_ports: int, vec: np.ndarray | None = None) -> None:
        n_queues = n_ports * PRIORITIES
        sizes = [n_ports] * len(self.PORT) + [n_queues] * len(self.QUEUE)
        self.vec = np.zeros(sum(sizes)) if vec is None else vec
        self.views: dict[str, np.ndarray] = {}
        at = 0
        for name, n in zip(self.PORT + self.QUEUE, sizes, strict=True):
            self.views[name] = self.vec[at : at + n]
            at += n

    def __getitem__(self, name: str) -> np.ndarray:
        return self.views[name]


@dataclass
class DeviceQos:
    """Mutable QoS state of one device (faults change it; ``configure`` applies it)."""

    pfc: set[int]
    ecn: bool
    ecn_priorities: set[int]
    pfcwd: bool
    wd_detect_s: float
    wd_restore_s: float
    wd_poll_s: float
    wd_action: str
    honor_pfc: bool
    ecn_kmin_b: float | None = None  # WRED/ECN profile of the lossless queues; None: by speed
    ecn_kmax_b: float | None = None
    pg_xoff_b: float | None = None  # lossless ingress PG XOFF (buffer profile); None: by speed
