"""The sequential BER test on a healthy emulated 400G link, timed in virtual time.

PRBS31Q runs both ways on a leaf-spine link of the default emulated lab (the
fabric model, stepped clock: no wall-clock waiting). The checkers are polled
every ``1/steps`` of the statistical minimum, the counts go to the link suite's
``SequentialBerTest`` (labtest.stats), and the run stops when every lane is
decided. Printed: the virtual run time, the minimum -ln(1-CL)/(BER x lane rate)
and their ratio. Target (issue 8): the ratio within 10 % of 1 at the profile's
target BER. A sweep of tighter targets shows where the errors of a healthy
lane (1e-13..1e-10 in the model) start to cost time, and where the target is
out of reach.

    python bench/ber_sequential.py [--limits suites/limits/acceptance-400g.yaml]
        [--link leaf1:Ethernet0--spine1:Ethernet0] [--steps 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from labtest.emulation.model import Fabric
from labtest.measure import load_limits
from labtest.stats import Decision, SequentialBerTest, min_test_time_s
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parent.parent
LANE_RATE_BPS = 400e9 * 1.0625 / 4  # 106.25 Gb/s per 400G-DR4 lane (IEEE 802.3bs)
SWEEP = (1e-8, 1e-9, 1e-10, 1e-12)
SWEEP_BUDGET = 20  # sweep rows may run up to 20 x their minimum (the profile's budget at least)


def run(fabric: Fabric, ends: list[tuple[str, str]], test: SequentialBerTest,
        minimum_s: float, step_s: float, max_s: float) -> tuple[float, Decision, int]:
    """Virtual seconds until every lane is decided; the worst decision; errors seen."""
    for device, port in ends:
        fabric.prbs_start(device, port, "PRBS31Q")
    t0 = fabric.now_s()
    try:
        while True:  # fine steps up to the minimum, then relative steps of the same size
            fabric.advance(max(step_s, (fabric.now_s() - t0) * step_s / minimum_s))
            lanes = [lane for d, p in ends for lane in fabric.prbs_read(d, p)]
            decisions = [test.decide(lane.bits, lane.errors) for lane in lanes]
            errors = sum(lane.errors for lane in lanes)
            elapsed = fabric.now_s() - t0
            if Decision.CONTINUE not in decisions or elapsed >= max_s:
                worst = (Decision.IMPOSSIBLE if Decision.IMPOSSIBLE in decisions
                         else Decision.CONTINUE if Decision.CONTINUE in decisions
                         else Decision.PROVEN)
                return elapsed, worst, errors
    finally:
        for device, port in ends:
            fabric.prbs_stop(device, port)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", default=str(ROOT / "testbeds/emulated/leafspine.yaml"))
    ap.add_argument("--limits", default=str(ROOT / "suites/limits/acceptance-400g.yaml"))
    ap.add_argument("--link", default="leaf1:Ethernet0--spine1:Ethernet0")
    ap.add_argument("--steps", type=int, default=200, help="polls per statistical minimum")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    profile = load_limits(args.limits)
    target = float(profile.get("link.prbs_target_ber").high or 0.0)
    confidence = float(profile.get("link.prbs_confidence").low or 0.0)
    max_s = float(profile.get("link.prbs_max_s").high or 0.0)
    fabric = Fabric(load_testbed(args.testbed), seed=args.seed)
    link = next(lk for lk in fabric.testbed.links if lk.name == args.link)
    ends = [(e.device, e.port) for e in link.ends]
    true_ber = max(b for d, p in ends for b in fabric.ber(d, p))
    print(f"link {link.name}: 2 x 4 lanes at {LANE_RATE_BPS / 1e9:.2f} Gb/s, "
          f"worst true lane BER {true_ber:.2e}, CL {confidence:.0%}, budget {max_s:g} s")
    print(f"{'target':>8} {'decision':>10} {'errors':>6} {'run s':>11} {'minimum s':>11} "
          f"{'ratio':>6}")
    ratio_at_target = math.nan
    for i, ber in enumerate((target, *[b for b in SWEEP if b < target])):
        minimum = min_test_time_s(ber, LANE_RATE_BPS, confidence)
        budget_s = max_s if i == 0 else max(max_s, SWEEP_BUDGET * minimum)
        test = SequentialBerTest(ber, confidence, max_bits=budget_s * LANE_RATE_BPS)
        elapsed, decision, errors = run(fabric, ends, test, minimum, minimum / args.steps,
                                        budget_s)
        ratio = elapsed / minimum
        print(f"{ber:8.0e} {decision.value:>10} {errors:6d} {elapsed:11.4g} {minimum:11.4g} "
              f"{ratio:6.3f}{'  <- profile target' if i == 0 else ''}")
        if i == 0:
            ratio_at_target = ratio
    ok = abs(ratio_at_target - 1.0) <= 0.10
    print(f"ratio at the profile target: {ratio_at_target:.3f} "
          f"({'within' if ok else 'NOT within'} 10 % of the statistical minimum)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
