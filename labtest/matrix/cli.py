"""``python -m labtest.matrix``: the detection matrix's command line.

It runs CI's draws (``--random --seed N --draws K`` others, ``--list`` prints them,
``--only ROW`` runs a few) and writes the markdown (``docs/detection-matrix.md``);
``tests/matrix`` runs CI's draws as a test. What a row is, where its faults go, how it
runs and how it is judged are the package's other modules (see ``labtest.matrix``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from labtest.matrix.cases import (
    DEFAULT_CASES,
    DEFAULT_SEEDS,
    Case,
    healthy_case,
    load_data,
    reduced_suites,
)
from labtest.matrix.judge import (
    CaseVerdict,
    judge,
    render,
)
from labtest.matrix.runner import (
    CASE_TIMEOUT_S,
    Runner,
    load_run,
)
from labtest.run import DEFAULT_TESTBED, REPO

DEFAULT_OUT = REPO / "docs" / "detection-matrix.md"
CI_NOTE = (
    "CI runs `tests/matrix/test_detection_matrix.py` (`LABTEST_MATRIX=1`) over the draws of "
    "`matrix_data.CI_PLAN` (a fixed seed, printed before the run), every suite on every row, "
    "three rows at a time. A suite no fault of the row is meant to fail may fail only where "
    "the fault is: a *consequence*, when every failure names a culprit of the row's faults, "
    "itself or through the run's root-cause analysis (a flapping host link spoils the "
    "incasts into that host). `LABTEST_MATRIX_REDUCED=1` (and `python -m labtest.matrix "
    "--reduced`) runs roce, congestion, latency and failover on a fault row only where they "
    "are meant to catch it. CI also runs `matrix_data.NXOS_PLAN` (rows `nxos-*`, not in this "
    "table): one draw per kind at the NX-OS ends of `testbeds/emulated/leafspine-nxos.yaml` "
    "and its healthy lab; by hand: `python -m labtest.matrix --random --vendor nxos --testbed "
    "testbeds/emulated/leafspine-nxos.yaml`."
)


# --- the command line -----------------------------------------------------------------------


def run_matrix(
    cases: Sequence[Case],
    workdir: Path,
    *,
    suites_for: Callable[[Case], Sequence[str]] = lambda case: (),
    jobs: int = 1,
    timeout_s: float = CASE_TIMEOUT_S,
    progress: Callable[[CaseVerdict], None] | None = None,
    **runner_kw: Any,
) -> list[CaseVerdict]:
    runner = Runner(workdir, jobs=jobs, timeout_s=timeout_s, **runner_kw)
    try:
        for case in cases:
            runner.start(case, suites_for(case))
        verdicts = []
        for case in cases:
            verdict = judge(runner.result(case.name))
            if progress is not None:
                progress(verdict)
            verdicts.append(verdict)
        return verdicts
    finally:
        runner.close()


def drawn_cases(data: Any, testbed: Path, plan: Any) -> list[Case]:
    from labtest.matrix.draws import draw_cases
    from labtest.testbed import load_testbed

    return draw_cases(plan, data.DOMAINS, load_testbed(testbed))


def domains_appendix(data: Any, testbed: Path) -> list[str]:
    """The doc's closing section: the domains every draw comes from, with the reasons."""
    from labtest.matrix.draws import describe_domains
    from labtest.testbed import load_testbed

    plan = data.CI_PLAN
    rows = len(drawn_cases(data, testbed, plan))
    how = [
        line.format(seed=plan.seed, combined=plan.combined, healthy=plan.healthy, rows=rows)
        for line in DRAWS_DOC
    ]
    return [
        *how,
        "## Domains the draws come from",
        "",
        "Per fault kind: the target classes (with their strata, `class/vendor`, and how",
        "many targets each has in the default lab) and the parameter ranges, each bound",
        "with its reason.",
        "",
        *describe_domains(data.DOMAINS, load_testbed(testbed)),
    ]


DRAWS_DOC = [
    "## How rows are drawn and judged",
    "",
    "- **Domains.** Every fault kind of the catalogue has a domain in",
    "  `tests/matrix/matrix_data.py` (`DOMAINS`): the target classes it may sit on, read",
    "  from the testbed (leaf-spine links and their switch ports on every vendor pairing,",
    "  host links and both their ends, switches, leaves, hosts, a vendor group of two),",
    "  and per parameter a range or a choice whose bounds are what the catching suite's",
    "  limit can see, with the reason written beside each bound (table below).",
    "- **Draws.** A run draws per fault kind `K` placements with one `random.Random` per",
    "  (seed, kind): the domain's strata (`class/vendor`, e.g. `host_link/eos`,",
    "  `fabric_link/eos+sonic`) in a seeded order, cycled, a random target inside the",
    "  stratum and random parameters; so `K` >= the number of strata covers every vendor",
    "  and link kind. Forced extras draw from a named stratum. The same seed gives the same",
    "  draws; adding a kind does not move the others'.",
    "- **Combined rows** carry two faults of different kinds at once, with no device in",
    "  common and seen by different suites (kinds that hit every suite or every device,",
    "  `unreachable_device`, `ecmp_polarisation`, `pfc_storm`, `miswired`, `flapping_link`,",
    "  are not combined: they would mask the other fault). Each must be caught and named.",
    "- **Culprits** a correct failure may name are derived from the drawn target by",
    "  `draws.blame`: a port, its far end and its link (plus the host, for a host's",
    "  own port); a link's two ends and the link; a host with its ports, their far ends",
    "  and links; a switch (which names its ports); every switch for the fabric-wide fault.",
    "- **Judging** per fault: *detected* when its catching suite fails (for a fault with",
    "  alternative catchers, `or` in the table, any one of them; for an unreachable device,",
    "  its tests are broken naming it); *culprit named* when a failure names one of its",
    "  culprits and no failure in its suites names none. Other suites must pass. The",
    "  per-kind table gives both rates over the run's draws; healthy rows count false",
    "  failures.",
    "- **CI** runs `matrix_data.CI_PLAN`: the fixed seed {seed}, one draw per kind, forced",
    "  extras for the placements issues 14 and 23 name (a host-link flap, a device",
    "  firmware fault in a vendor group of two, an MTU fault on a switch port, a dirty",
    "  connector on an EOS link, a marginal lane on an EOS port, a straggler on a host",
    "  link), {combined} combined rows and {healthy} healthy rows with drawn seeds: {rows} rows,",
    "  about 30 min at two rows at a time on two cores (cheap rows ~70-80 s, RoCE rows ~170 s,",
    "  healthy rows ~300 s). With ~1 draw per kind, CI's >= 95% per",
    "  kind means every draw. More: `python -m labtest.matrix --random --seed N --draws K",
    "  --reduced` (`--list` prints the rows without running, `--only ROW ...` runs a few).",
    "",
]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m labtest.matrix",
        description="Inject catalogued faults, drawn at random from each fault's domain, into "
        "the emulated lab, run the suites, judge who caught them, and write the "
        "matrix as markdown. Without --random or --fixed: CI's draws (CI_PLAN).",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="markdown file to write")
    ap.add_argument(
        "--random", action="store_true", help="draw --draws placements per fault kind from --seed"
    )
    ap.add_argument(
        "--seed", type=int, help="seed of the draws (default with --random: a fresh one, printed)"
    )
    ap.add_argument("--draws", type=int, default=3, help="draws per fault kind (--random)")
    ap.add_argument(
        "--combined", type=int, default=2, help="rows with two faults at once (--random; default 2)"
    )
    ap.add_argument(
        "--healthy", type=int, default=2, help="healthy-lab rows, seeds drawn (--random; default 2)"
    )
    ap.add_argument(
        "--vendor",
        metavar="DRIVER",
        help="--random: draw only at targets with this driver's device (e.g. nxos), "
        "leaving out kinds that have none",
    )
    ap.add_argument(
        "--only",
        nargs="*",
        metavar="ROW",
        help="run only these drawn rows (names as --list prints them)",
    )
    ap.add_argument("--list", action="store_true", help="print the rows and exit")
    ap.add_argument(
        "--fixed",
        action="store_true",
        help="the previous fixed placements (CASES) instead of draws",
    )
    ap.add_argument(
        "--faults",
        nargs="*",
        metavar="KIND",
        help="only these fault kinds (default: every kind; none with --faults alone)",
    )
    ap.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        default=list(DEFAULT_SEEDS),
        help="healthy-lab seeds with --fixed (default: 1 2 3 4 5)",
    )
    ap.add_argument(
        "--suite",
        action="append",
        default=[],
        dest="suites",
        metavar="NAME",
        help="run only these suite families (default: all)",
    )
    ap.add_argument(
        "--reduced",
        action="store_true",
        help="per fault the catching suite(s) and the cheap others (as CI does)",
    )
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="matrix data module")
    ap.add_argument("--testbed", type=Path, default=DEFAULT_TESTBED, help="base testbed")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("--timeout-s", type=float, default=CASE_TIMEOUT_S, help="per case")
    ap.add_argument("--workdir", type=Path, help="where runs go (default: a temp dir)")
    ap.add_argument(
        "--rejudge",
        action="store_true",
        help="do not run: judge the finished runs in --workdir again",
    )
    args = ap.parse_args(argv)
    if args.reduced and args.suites:
        ap.error("--reduced chooses the suites itself; drop --suite")
    if args.rejudge and args.workdir is None:
        ap.error("--rejudge needs the --workdir of a finished matrix")
    if args.random and args.fixed:
        ap.error("--random and --fixed exclude each other")
    if args.vendor is not None and not args.random:
        ap.error("--vendor draws with --random (CI's rows and --fixed are fixed placements)")

    data = load_data(args.cases)
    appendix: list[str] = []
    if args.fixed:
        table = dict(data.CASES)
        kinds = list(table) if args.faults is None else args.faults
        unknown = [k for k in kinds if k not in table]
        if unknown:
            ap.error(f"no case for {', '.join(unknown)}; known: {', '.join(table)}")
        cases = [table[k] for k in kinds] + [healthy_case(s) for s in args.seeds]
        drawn = "the fixed placements of tests/matrix/matrix_data.py (CASES)"
    else:
        from labtest.matrix.draws import Plan

        if args.random:
            seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
            plan = Plan(
                seed=seed,
                draws=args.draws,
                combined=args.combined,
                healthy=args.healthy,
                kinds=tuple(args.faults) if args.faults is not None else None,
                vendor=args.vendor,
            )
        else:
            plan = data.CI_PLAN
            if args.faults is not None:
                plan = replace(
                    plan,
                    kinds=tuple(args.faults),
                    extra=tuple(x for x in plan.extra if x[0] in args.faults),
                )
        unknown = [k for k in plan.kinds or () if k not in data.DOMAINS]
        if unknown:
            ap.error(f"no domain for {', '.join(unknown)}; known: {', '.join(data.DOMAINS)}")
        cases = drawn_cases(data, args.testbed, plan)
        if plan.vendor is not None and not any(len(c.faults) == 1 for c in cases):
            ap.error(f"--vendor {plan.vendor}: {args.testbed} has no target of that driver "
                     "(e.g. testbeds/emulated/leafspine-nxos.yaml for nxos)")
        drawn = (
            f"seed {plan.seed}: {plan.draws} draw(s) per fault kind, "
            f"{len(plan.extra)} forced extra(s), {plan.combined} combined row(s), "
            f"{plan.healthy} healthy row(s)"
        )
        appendix = domains_appendix(data, args.testbed)
    if args.only is not None:
        missing = [n for n in args.only if n not in {c.name for c in cases}]
        if missing:
            ap.error(f"no row {', '.join(missing)}; rows: {', '.join(c.name for c in cases)}")
        cases = [c for c in cases if c.name in args.only]
    print(f"matrix: draws of {drawn}", flush=True)
    for c in cases:
        print(f"matrix: row {c.name:<22} {c.describe()}  [{c.note or 'healthy'}]", flush=True)
    if args.list:
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="labtest-matrix-"))

    def progress(v: CaseVerdict) -> None:
        state = "ok" if v.ok else "WRONG: " + "; ".join(v.problems)[:300]
        print(f"matrix: {v.run.case.name:<22} {v.run.wall_s:6.0f} s  {state}", flush=True)

    def suites_for(case: Case) -> list[str]:
        return reduced_suites(case) if args.reduced else args.suites

    if args.rejudge:
        verdicts = [judge(load_run(c, workdir / c.name)) for c in cases]
        saved = workdir / "note.md"
        note = saved.read_text(encoding="utf-8") if saved.is_file() else ""
    else:
        started = time.monotonic()
        verdicts = run_matrix(
            cases,
            workdir,
            suites_for=suites_for,
            jobs=args.jobs,
            timeout_s=args.timeout_s,
            progress=progress,
            base=args.testbed,
        )
        note = f"Draws: {drawn}.\n\n" + _run_note(args, time.monotonic() - started)
        (workdir / "note.md").write_text(note, encoding="utf-8")
    args.out.write_text(render(verdicts, title_note=note, appendix=appendix), encoding="utf-8")
    (workdir / "verdicts.json").write_text(
        json.dumps([_record(v) for v in verdicts], indent=2, default=str), encoding="utf-8"
    )
    print(
        f"matrix: wrote {args.out} ({sum(v.ok for v in verdicts)}/{len(verdicts)} ok); "
        f"runs and logs in {workdir}"
    )
    return 0 if all(v.ok for v in verdicts) else 1


def _run_note(args: argparse.Namespace, elapsed_s: float) -> str:
    """When, which suites, how long, and how busy the machine was."""
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    suites = ", ".join(args.suites) or "every suite"
    if args.reduced:
        suites = "the catching suite(s) and the cheap others (reduced, as CI)"
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Run {when}: {suites} on each row, {args.jobs} rows at a time, "
        f"{elapsed_s / 60:.1f} min wall in all on a {os.cpu_count()}-core machine "
        f"(load average {load} at the end: other jobs shared it).\n\n{CI_NOTE}"
    )


def _record(v: CaseVerdict) -> dict[str, Any]:
    return {
        "case": asdict(v.run.case),
        "ok": v.ok,
        "problems": v.problems,
        "cells": {s: c.text for s, c in v.cells.items()},
        "wall_s": v.run.wall_s,
        "faults": [asdict(f) for f in v.faults],
    }


if __name__ == "__main__":
    sys.exit(main())
