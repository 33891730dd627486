"""Does the emulator's latency under load follow the queue model?

    python3 bench/latency_under_load.py [--seeds 3]

A 5:1 RoCE incast into host1 of the 400G reference Clos (4 leaves, 2 spines, 2 hosts per
leaf); host3 (another leaf) measures ib_write_lat to host1 idle and beside it. leaf1's
lossless queues get ECN marking windows [0.9 Kmax, Kmax] for several Kmax, so DCQCN holds
the congested queue just under Kmax: the loaded p99 minus the idle median should be
Kmax / line rate. Then the two faults a latency suite must catch: ECN off at leaf1 and
ECN thresholds above PFC XOFF (PFC does the work). Then head-of-line blocking (the
suite's LAT-1.3): the incast goes to host2, host1's neighbour on leaf1, so host3 -> host1
shares no congested egress; healthy, it keeps its idle tail; with a shallow buffer or PFC
doing the work at leaf1, the spine hop leaf1 pauses holds it (worst p99 of 8 QPs, each
hashing its own spine). Prints one line per case.
"""

from __future__ import annotations

import argparse

import numpy as np

from labtest.emulation.model.traffic import TrafficModel
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed
from labtest.emulation.model.traffic.roce import LatencyResult

LINE_GBPS = 400.0


def fabric(seed: int) -> TrafficModel:
    tb = clos_testbed(spines=2, leaves=4, hosts_per_leaf=2, speed_gbps=LINE_GBPS)
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(seed))


def idle_then_incast(m: TrafficModel, into: str) -> LatencyResult:
    """host3 -> host1's idle latency, read before the 5:1 incast (host4..host8) into
    ``into`` starts; the incast has then run 10 ms, so the caller's next read is loaded.
    Both experiments measure this way: they differ only in where the incast goes."""
    idle = m.run_latency("host3", "host1", iterations=5000)
    for h in range(4, 9):
        m.start_roce(f"host{h}", into, qps=2)
    m.advance(0.01)
    return idle


def head_of_line(seed: int, setup: str) -> tuple[float, float]:
    """(idle p99, worst loaded p99 of 8 QPs) of host3 -> host1 beside a 5:1 incast into host2."""
    m = fabric(seed)
    if setup == "shallow_buffer":
        m.set_pg_xoff("leaf1", 200e3)
    if setup == "ecn_thresholds":
        m.set_ecn_thresholds("leaf1", 8e6, 32e6)
    idle = idle_then_incast(m, into="host2")
    worst = max(m.run_latency("host3", "host1", iterations=5000).p99_us for _ in range(8))
    return idle.p99_us, worst


def run(seed: int, setup: str, kmax_b: float | None) -> tuple[float, float, float, float]:
    m = fabric(seed)
    if kmax_b is not None:
        m.set_ecn_thresholds("leaf1", 0.9 * kmax_b, kmax_b)
    if setup == "ecn_disabled":
        m.set_ecn("leaf1", False)
    if setup == "ecn_thresholds":
        m.set_ecn_thresholds("leaf1", 8e6, 32e6)
    idle = idle_then_incast(m, into="host1")
    busy = m.run_latency("host3", "host1", iterations=5000)
    return idle.t_typical_us, busy.t_typical_us, busy.p99_us, busy.p99_9_us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    print(f"{'case':>22} {'seed':>4} {'idle p50':>9} {'p50':>7} {'p99':>7} {'p99.9':>7} "
          f"{'Kmax/rate':>9} {'(p99-idle)/(Kmax/rate)':>23}")  # fmt: skip
    cases: list[tuple[str, str, float | None]] = [
        (f"Kmax {k / 1e6:.1f} MB", "thresholds", k) for k in (1.6e6, 3.2e6, 6.4e6)
    ]
    cases += [("default (DCQCN)", "healthy", None), ("ecn_disabled@leaf1", "ecn_disabled", None)]
    cases += [("ecn_thresholds@leaf1", "ecn_thresholds", None)]
    for name, setup, kmax in cases:
        for seed in range(1, args.seeds + 1):
            idle, p50, p99, p999 = run(seed, setup, kmax)
            if kmax is not None:
                kmax_us = kmax * 8 / (LINE_GBPS * 1e9) * 1e6
                ratio = f"{kmax_us:9.1f} {(p99 - idle) / kmax_us:23.3f}"
            else:
                ratio = f"{'-':>9} {'-':>23}"
            print(f"{name:>22} {seed:>4} {idle:9.2f} {p50:7.1f} {p99:7.1f} {p999:7.1f} {ratio}")
    print(f"\nhead-of-line, incast into host2 {'case':>22} {'seed':>4} {'idle p99':>9} "
          f"{'worst p99 of 8':>15}")  # fmt: skip
    for setup in ("healthy", "shallow_buffer", "ecn_thresholds"):
        for seed in range(1, args.seeds + 1):
            idle_p99, worst = head_of_line(seed, setup)
            print(f"{'':>33} {setup + '@leaf1':>22} {seed:>4} {idle_p99:9.2f} {worst:15.1f}")


if __name__ == "__main__":
    main()
