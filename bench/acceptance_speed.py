"""The default emulated lab's acceptance run, before and after the elastic clock (issue 19).

Runs ``labtest run`` twice in one go on the same checkout and machine: first with
``LABTEST_ELASTIC_CLOCK=0`` (the lab follows the wall clock at its ``time_scale``, as
before), then as shipped (the clock skips the time every party only waits). Prints per
suite the wall seconds (sum of its tests' setup/call/teardown from pytest's durations),
the whole run's wall and CPU seconds, both verdict lines, and the ratios. The verdicts
must be the same: the clock may only remove idle time.

    python bench/acceptance_speed.py                   # every suite, ~4 + ~1.5 min
    python bench/acceptance_speed.py --suite roce      # one suite
    python bench/acceptance_speed.py --only new        # just the shipped clock
    python bench/acceptance_speed.py --model --suite link --suite roce
        # both on the elastic clock: "old" = the fabric model steps on every read
        # (LABTEST_MODEL_STEP_EVERY_READ=1), "new" = it steps only when a read needs it

Where the time goes inside one run (cProfile of the suites' pytest process: its main
thread, i.e. suites, drivers and parsing, and the waits on the emulators)::

    LABTEST_PROFILE=1 python bench/acceptance_speed.py --only new --suite roce
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+\S*suites/(\w+)/")
VERDICT = re.compile(r"^verdict: .*$", re.M)
TALLY = re.compile(r"^=+ (.*(?:passed|failed).*) in [\d.]+s", re.M)


@dataclass
class Run:
    label: str
    wall_s: float
    cpu_s: float
    per_suite_s: Counter[str]
    verdict: str
    tally: str
    exit_code: int


def run(
    label: str,
    elastic: bool,
    suites: list[str],
    workdir: Path,
    profile: bool,
    step_every_read: bool = False,
) -> Run:
    env = dict(os.environ, LABTEST_ELASTIC_CLOCK="1" if elastic else "0")
    env["LABTEST_MODEL_STEP_EVERY_READ"] = "1" if step_every_read else "0"
    cmd = [sys.executable, "-m", "labtest.cli", "run", "--alluredir", str(workdir / label)]
    for suite in suites:
        cmd += ["--suite", suite]
    cmd += ["--", "--durations=0", "--durations-min=0"]
    if profile:  # the suites run in labtest run's pytest child: profile pytest itself
        from labtest.run import DEFAULT_TESTBED, SUITE_ORDER, SUITES_DIR

        dirs = [str(SUITES_DIR / s) for s in (suites or SUITE_ORDER)]
        cmd = [sys.executable, "-m", "cProfile", "-o", str(workdir / f"{label}.prof"),
               "-m", "pytest", *dirs, "--testbed", str(DEFAULT_TESTBED), "--emulate", "-q",
               "--alluredir", str(workdir / label), "--durations=0", "--durations-min=0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout
    per_suite: Counter[str] = Counter()
    for line in out.splitlines():
        m = DURATION.match(line)
        if m:
            per_suite[m.group(3)] += float(m.group(1))
    verdict = VERDICT.findall(out)
    tally = TALLY.findall(out)
    return Run(label, wall, cpu, per_suite, verdict[-1] if verdict else "(no verdict line)",
               tally[-1] if tally else "(no tally)", proc.returncode)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="append", default=[], help="only this suite (repeatable)")
    ap.add_argument("--only", choices=("old", "new"), help="run one clock only")
    ap.add_argument("--model", action="store_true",
                    help="compare the model stepping on every read (old) with as shipped (new)")
    args = ap.parse_args()
    profile = os.environ.get("LABTEST_PROFILE") == "1"
    with tempfile.TemporaryDirectory(prefix="acceptance-speed-") as tmp:
        workdir = Path(tmp)
        runs = []
        for label, elastic in (("old", False), ("new", True)):
            if args.only in (None, label):
                if args.model:  # same clock, the model's read path differs
                    what = "model stepping on every read" if label == "old" else "model as shipped"
                    print(f"running {label}: {what} ...", flush=True)
                    runs.append(run(label, True, args.suite, workdir, profile, label == "old"))
                    continue
                print(f"running {label} clock ({'elastic' if elastic else 'wall-paced'}) ...",
                      flush=True)
                runs.append(run(label, elastic, args.suite, workdir, profile))
        if profile:
            import pstats

            for r in runs:
                # cProfile sees pytest's main thread (suites, drivers, parsing); the
                # emulators' threads show only as the waits they cause there
                print(f"\n--- {r.label}: main thread, top 25 by own time ---")
                stats = pstats.Stats(str(workdir / f"{r.label}.prof"))
                stats.sort_stats("tottime").print_stats(25)
    load = os.getloadavg()
    print(f"\nmachine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} "
          "(1 / 5 min) at the end: wall times are inflated when others share the cores")
    suites = sorted({s for r in runs for s in r.per_suite_s},
                    key=lambda s: -max(r.per_suite_s.get(s, 0.0) for r in runs))
    header = "suite".ljust(12) + "".join(f"{r.label + ' wall s':>14}" for r in runs)
    print(header + ("   ratio" if len(runs) == 2 else ""))
    for suite in suites:
        cells = [r.per_suite_s.get(suite, 0.0) for r in runs]
        ratio = f"  {cells[0] / cells[1]:5.1f}x" if len(runs) == 2 and cells[1] else ""
        print(suite.ljust(12) + "".join(f"{c:14.1f}" for c in cells) + ratio)
    for what in ("wall_s", "cpu_s"):
        cells = [getattr(r, what) for r in runs]
        ratio = f"  {cells[0] / cells[1]:5.1f}x" if len(runs) == 2 and cells[1] else ""
        name = "run wall s" if what == "wall_s" else "run CPU s"
        print(name.ljust(12) + "".join(f"{c:14.1f}" for c in cells) + ratio)
    for r in runs:
        print(f"{r.label}: exit {r.exit_code}; {r.tally}; {r.verdict}")
    if len(runs) == 2 and (runs[0].verdict.split("(")[0] != runs[1].verdict.split("(")[0]
                           or runs[0].exit_code != runs[1].exit_code):
        what = "the model's read path" if args.model else "the elastic clock"
        print(f"VERDICTS DIFFER: {what} changed an outcome (a bug)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
