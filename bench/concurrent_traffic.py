"""Traffic tests one at a time vs in rounds of disjoint runs (issue 19, fixtures/run_schedule.py).

Two parts, in one run:

1. *The schedule a lab gets*: from the testbed's cabling plan and the suites' settings,
   the RoCE pairs (ROCE-1.1 bandwidth, ROCE-1.2 latency) and the congestion incasts
   (CONG-1.1) put into rounds by the interference rules, printed round by round with
   the traffic time a real lab spends (each bandwidth run its ``duration_s``; latency
   runs are iteration-bound and left out of the time), serial vs concurrent.
2. *Measured on the emulated lab*: ``labtest run --suite roce -k "pair_bandwidth or
   pair_latency"`` with ``concurrent_pairs: false``, then as shipped, back to back;
   prints both wall times, the ratio, and exits 1 if any test's outcome differs.

    python bench/concurrent_traffic.py                     # the default emulated lab
    python bench/concurrent_traffic.py --testbed lab.yaml --no-run   # a real lab's schedule
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labtest.fixtures.cabling_plan import attachments, host_pairs, pair_id, ring_pairs, uplinks
from labtest.fixtures.run_schedule import TrafficRun, conflict, pair_run, rounds, schedule_text
from labtest.fixtures.suite_data import load_settings
from labtest.run import DEFAULT_TESTBED
from labtest.testbed.loader import load_testbed

PERFTEST_HOST_DRIVERS = {"linux"}
DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+\S*::test_pair_(bandwidth|latency)")


def plan(testbed_path: Path) -> None:
    tb = load_testbed(testbed_path)
    hosts = [n for n, d in tb.devices.items() if d.role == "host" and d.driver in
             PERFTEST_HOST_DRIVERS]
    switches = [n for n, d in tb.devices.items() if d.role in ("leaf", "spine", "switch",
                                                                "super-spine")]
    att, ups = attachments(tb, hosts, switches), uplinks(tb, switches)
    hosts = [h for h in hosts if h in att]
    roce = load_settings("roce")
    pairs = host_pairs(hosts) if roce["pairs"] == "all" else ring_pairs(hosts)
    runs = [pair_run(pair_id(p), p, att, ups) for p in pairs]
    run_s = float(roce["pair_bandwidth"]["duration_s"])
    serial, concurrent = rounds(runs, False), rounds(runs)
    print(f"{tb.name}: {len(hosts)} hosts, {len(switches)} switches")
    print(f"\nROCE-1.1 pair bandwidth ({roce['pairs']} pairs, {run_s:g} s each):")
    print(schedule_text(runs, run_s))
    print(f"  serial: {len(serial)} runs, {len(serial) * run_s / 60:.1f} min of traffic; "
          f"concurrent: {len(concurrent)} rounds, {len(concurrent) * run_s / 60:.1f} min "
          f"({len(serial) / len(concurrent):.1f}x)")
    print(f"ROCE-1.2 pair latency: the same pairs, the same {len(concurrent)} rounds "
          "(iteration-bound: time not modelled)")
    cong = load_settings("congestion")["incast"]
    incasts = [TrafficRun(f"incast into {r}", frozenset(hosts),
                          pair_run("", hosts, att, ups).links) for r in hosts]
    why = conflict(incasts[0], incasts[1]) if len(incasts) > 1 else None
    print(f"\nCONG-1.1 incasts ({len(incasts)}, {cong['duration_s']} s each): "
          f"{len(rounds(incasts))} rounds: one at a time ({why}: every other host sends)")


def measure(workdir: Path, label: str, concurrent: bool) -> tuple[float, float, dict[str, str],
                                                                  str]:
    override = workdir / f"{label}.yaml"
    override.write_text(f"roce:\n  concurrent_pairs: {'true' if concurrent else 'false'}\n")
    results = workdir / label
    cmd = [sys.executable, "-m", "labtest.cli", "run", "--suite", "roce", "--alluredir",
           str(results), "--", "-k", "pair_bandwidth or pair_latency", "--durations=0",
           "--durations-min=0"]
    env = dict(os.environ, LABTEST_SUITE_SETTINGS=str(override))
    began = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - began
    tests_s = sum(float(m.group(1)) for line in proc.stdout.splitlines()
                  if (m := DURATION.match(line)))
    doc_path = results / "labtest-results.json"
    outcomes = {}
    if doc_path.is_file():
        outcomes = {t["name"]: t["outcome"] for t in json.loads(doc_path.read_text())["tests"]}
    verdict = next((ln for ln in reversed(proc.stdout.splitlines())
                    if ln.startswith("verdict:")), f"(no verdict, exit {proc.returncode})")
    return wall, tests_s, outcomes, verdict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", type=Path, default=DEFAULT_TESTBED)
    ap.add_argument("--no-run", action="store_true", help="print the schedule only")
    args = ap.parse_args()
    plan(args.testbed)
    if args.no_run:
        return 0
    print("\nmeasured on the emulated lab (labtest run --suite roce, the pair tests):")
    with tempfile.TemporaryDirectory(prefix="concurrent-traffic-") as tmp:
        serial = measure(Path(tmp), "serial", False)
        concurrent = measure(Path(tmp), "concurrent", True)
    load = os.getloadavg()
    for label, (wall, tests_s, outcomes, verdict) in (("serial", serial),
                                                      ("concurrent", concurrent)):
        print(f"  {label:<10} run {wall:6.1f} s wall, pair tests {tests_s:6.1f} s, "
              f"{len(outcomes)} tests; {verdict.split(';')[0]}")
    if concurrent[1]:
        print(f"  pair tests: {serial[1] / concurrent[1]:.1f}x; whole run "
              f"{serial[0] / concurrent[0]:.1f}x (load average {load[0]:.1f} on "
              f"{os.cpu_count()} cores)")
    differ = sorted(n for n in serial[2].keys() | concurrent[2].keys()
                    if serial[2].get(n) != concurrent[2].get(n))
    if differ or not serial[2]:
        print(f"OUTCOMES DIFFER (a bug): {differ or 'no results'}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
