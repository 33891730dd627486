"""RoCE arithmetic: wire efficiency, max-min fair shares, perftest-shaped results.

Numbers (reference/domain-methodology.md section 3):
- 82 B of overhead per RoCEv2 packet on the wire (preamble 8 + IFG 12 + Eth 14
  + FCS 4 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4): 98.0 % at MTU 4096, 92.6 % at 1024;
- the RoCE MTU is the largest IB MTU that fits the netdev MTU with the 58 B of
  L3-L4 headers and ICRC (9000 -> 4096, 1500 -> 1024);
- small messages are message-rate bound: 2.64 Mpps per QP, the published
  2-byte ib_write_bw sample (perftest#132); our per-QP ceiling;
- latency: 0.85 us NIC-to-NIC base (the raw-Ethernet 64 B public sample), plus
  per switch its port-to-port latency, per link serialisation and 5 ns/m, plus
  queueing; 1.5 % exponential jitter, a 1-in-1000 slow path (+1..4 us) and a
  cold first iteration (+2 us: "the first sample is usually the maximum").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ROCE_OVERHEAD_B = 82
IB_MTUS = (256, 512, 1024, 2048, 4096)
ROCE_L3_HEADERS_B = 44  # IPv4 20 + UDP 8 + BTH 12 + ICRC 4 inside the netdev MTU
QP_MSG_RATE_PPS = 2.64e6
NIC_BASE_LATENCY_S = 0.85e-6
JITTER_FRACTION = 0.015
SLOW_PATH_P = 1e-3
COLD_START_S = 2e-6


def roce_mtu(netdev_mtu: float) -> int:
    """The active RoCE (IB) MTU for a netdev MTU."""
    fits = [m for m in IB_MTUS if m + ROCE_L3_HEADERS_B <= netdev_mtu]
    return fits[-1] if fits else IB_MTUS[0]


def packet_payload_b(msg_size_b: int, mtu_b: int) -> float:
    """Average payload per packet when messages of ``msg_size_b`` are cut at ``mtu_b``."""
    packets = max(1, math.ceil(msg_size_b / mtu_b))
    return msg_size_b / packets


def wire_efficiency(payload_b: float) -> float:
    """Goodput share of the wire for packets carrying ``payload_b`` bytes."""
    frame = max(payload_b + ROCE_OVERHEAD_B - 20, 64)
    return payload_b / (frame + 20)


def max_min(coeff: np.ndarray, capacity: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Max-min fair rates by progressive filling.

    ``coeff[c, f]`` is how much of constraint ``c`` one unit of flow ``f`` uses
    (e.g. 1/efficiency for a link counted in wire bits); ``upper`` caps each flow.
    """
    n = coeff.shape[1]
    rate = np.zeros(n)
    frozen = upper <= 0
    for _ in range(n + coeff.shape[0] + 1):
        if frozen.all():
            break
        live = ~frozen
        slack = capacity - coeff @ rate
        demand = coeff[:, live].sum(axis=1)
        binding = demand > 0
        steps = [float(np.min(upper[live] - rate[live]))]
        if binding.any():
            steps.append(float(np.min(np.maximum(slack[binding], 0.0) / demand[binding])))
        step = min(steps)
        if not math.isfinite(step):
            break
        rate[live] += step
        tight = binding & (capacity - coeff @ rate <= 1e-9 * np.maximum(capacity, 1.0))
        frozen |= (coeff[tight] > 0).any(axis=0)
        frozen |= np.isfinite(upper) & (rate >= upper * (1 - 1e-9) - 1e-9)
    return rate


@dataclass(frozen=True)
class BandwidthResult:
    """One ib_write_bw-like run between a client and a server."""

    client: str
    server: str
    msg_size_b: int
    qps: int
    duration_s: float
    bidirectional: bool
    bw_avg_gbps: float  # goodput, both directions summed when bidirectional
    bw_peak_gbps: float
    msg_rate_mpps: float
    iterations: int
    mtu_b: int
    error: str | None = None


@dataclass(frozen=True)
class LatencyResult:
    """One ib_write_lat-like run: half round trips, in microseconds."""

    client: str
    server: str
    size_b: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float  # the median, as perftest prints it
    t_avg_us: float
    t_stdev_us: float
    p99_us: float
    p99_9_us: float
    error: str | None = None


def latency_samples(base_s: float, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """One-way latencies around ``base_s``: jitter, a rare slow path, a cold first sample."""
    t = base_s + rng.exponential(JITTER_FRACTION * base_s, iterations)
    slow = rng.random(iterations) < SLOW_PATH_P
    t[slow] += rng.uniform(1e-6, 4e-6, int(slow.sum()))
    t[0] += COLD_START_S
    return t


def latency_result(client: str, server: str, size_b: int, samples_s: np.ndarray) -> LatencyResult:
    us = samples_s * 1e6
    return LatencyResult(
        client=client,
        server=server,
        size_b=size_b,
        iterations=len(us),
        t_min_us=float(us.min()),
        t_max_us=float(us.max()),
        t_typical_us=float(np.median(us)),
        t_avg_us=float(us.mean()),
        t_stdev_us=float(us.std()),
        p99_us=float(np.percentile(us, 99)),
        p99_9_us=float(np.percentile(us, 99.9)),
    )
