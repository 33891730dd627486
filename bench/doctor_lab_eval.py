"""The doctor evaluated as a user runs it (issue 34 item 3): the real ``labtest doctor --once``
process against the emulated default lab, through the drivers (SSH, the parsers, polling
skew, the live traceroute mesh), at placements and parameters drawn from a printed seed.

    python bench/doctor_lab_eval.py [--seed S] [--cases 40] [--healthy 6] [--out DIR]
                                    [--kinds K ...] [--load-all | --idle] [--noise]
                                    [--time-scale S] [--onset [--jobs N]]

Each case is one child ``labtest doctor --once --fault KIND@TARGET:k=v --json-lines F`` on
its own emulation seed (another hash, other module temperatures and margins); stragglers
run with ``--load`` (a straggler slows only what it carries); ``--load-all`` runs every
case, healthy ones too, beside that training-job load (production's background); ``--idle``
none (a straggler then is the bandwidth bursts' to find: docs/doctor.md). Kinds and
where they go are the detection matrix's domains (``tests/matrix/matrix_data.py``: every
vendor end, host and fabric links) for what the doctor claims, with the ranges the doctor
is sized for where they differ (stated in ``DOCTOR_DOMAINS``).

Judged, per case, from the last report: *detected* when a paged suspect names one of the
fault's blame names (``labtest.matrix.draws.blame``: the port, its far end, the link, a
host's own ports), or for an unreachable device when the report lists it as failed to
read; *top-1* when the first paged suspect does; a suspect that names none of them is a
false one (precision); a healthy case is right when nothing is paged. Time to detect: the
report's device seconds from the doctor's start (its baseline read included) to its
decision (``elapsed_s``). ``--onset`` measures as production and the published figures
do instead: the continuous doctor, the fault starting after its baseline, time to detect
from the fault's onset (``run_onset_case``). Written: ``DIR/cases.json`` (draws),
``DIR/NNN.jsonl`` (the doctor's events), ``DIR/summary.json``; a table on stdout.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from labtest.emulation.lab import ELASTIC_ENV
from labtest.matrix.cases import load_data
from labtest.matrix.draws import Domain, FloatRange, Placement, blame, draw_kind
from labtest.matrix.judge import names
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[1]
_DATA = load_data()  # tests/matrix/matrix_data.py, by path
DOMAINS: dict[str, Domain] = dict(_DATA.DOMAINS)
LINKS: tuple[str, ...] = _DATA.LINKS

TESTBED = REPO / "testbeds" / "emulated" / "leafspine.yaml"

#: the doctor's kinds: the matrix's domains, except where the doctor is sized otherwise
DOCTOR_DOMAINS: dict[str, Domain] = {
    k: DOMAINS[k] for k in ("dirty_connector", "marginal_lane", "flapping_link",
                            "ecmp_blackhole", "unreachable_device", "hot_module",
                            "failing_laser")
} | {
    "silent_drop": replace(DOMAINS["silent_drop"], catches=("doctor",), placements=tuple(
        replace(p, params={**p.params, "loss": FloatRange(
            0.01, 1.0, "the probe test is sized for 1 % (measure.probes.DETECT_LOSS), as "
            "for lossy_link: a thinner drop is paged as the probes add up (0.49 %: 211 s, "
            "ten intervals; docs/doctor.md)", digits=4)})
        for p in DOMAINS["silent_drop"].placements)),
    "lossy_link": Domain("lossy_link", (Placement(LINKS, {
        "loss": FloatRange(0.01, 0.05, "the probe test is sized for 1 % (measure.probes."
                           "DETECT_LOSS): a thinner loss needs more than --once's minute"),
    }, "any link, host or fabric, every vendor end"),), catches=("doctor",)),
    "straggler_link": Domain("straggler_link", (Placement(LINKS, {
        "rate_fraction": FloatRange(0.4, 0.7, "--load offers a host under 80 % of its link "
                                    "(docs/doctor.md): a link kept above that is no "
                                    "bottleneck and slows nothing"),
    }, "any link"),), catches=("doctor",)),
}
#: kinds that need the training-job load to show
LOADED = {"straggler_link"}
#: kinds whose physics takes minutes, so ``--once`` gets a longer bound (device s): a hot
#: module heats with a 120 s thermal lag (emulation.model.optics.THERMAL_TAU_S), a failing
#: laser's bias climbs 10 % (transceiver.bias_change_pct) in 150-300 s at the matrix's
#: 10-20 dB/h; both are judged on two reads 20 s or more apart (TRANSCEIVER-3.1)
SLOW_MAX_S = {"hot_module": 900.0, "failing_laser": 900.0}
#: ``--noise``, production's (the lab's ``emulation.noise``): a probe answer lost now and
#: then whatever its path (1e-3: a busy host or an ICMP rate limit, a tenth of the 1 % the
#: probe test is sized for); every device answers each command up to NOISE_ANSWER_S late
#: and one switch, drawn per case, up to NOISE_LATE_S (a control plane busy with churn);
#: polling skew and counter jitter come with the drivers
NOISE_PROBE_LOSS = 1e-3
#: ``--onset``: the continuous doctor's interval (its default, device s at time scale 1)
#: and when the fault starts: uniform over this span of the lab's device time, after the
#: doctor's baseline (the lab starts, ~15-25 s of baseline read) at a random phase of its
#: rounds
ONSET_INTERVAL_S = 10.0
ONSET_SPAN_S = (45.0, 75.0)
#: ``--onset``: wall seconds a case may take at the most (a hung child is stopped)
ONSET_WALL_CAP_S = 1500.0
NOISE_ANSWER_S = 0.5
NOISE_LATE_S = 10.0


@dataclass
class Outcome:
    case: int
    lab_seed: int  # the emulation seed of its lab (testbed-<seed>.yaml in the folder)
    kind: str
    target: str
    params: dict[str, Any]
    exit: int
    detected: bool
    top1: bool
    suspects: list[str]
    false_suspects: list[str]
    device_s: float
    wall_s: float
    decision: str


def blames(unit: str, blame_names: tuple[str, ...]) -> bool:
    """Whether a paged unit names the fault (either one names the other)."""
    return any(names(unit, b) or names(b, unit) for b in blame_names)


def spec(kind: str, target: str, params: dict[str, Any]) -> str:
    extra = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{kind}@{target}" + (f":{extra}" if extra else "")


def testbed_for(seed: int, folder: Path, noise: bool = False,
                time_scale: float | None = None,
                fault: tuple[str, str, dict[str, Any], float] | None = None) -> Path:
    """The default lab on its own emulation seed, paths made absolute, with ``--noise``'s
    and ``--time-scale``'s; ``fault``: (kind, target, params, onset in device s from the
    lab's start), scheduled in the lab (``--onset``)."""
    doc = yaml.safe_load(TESTBED.read_text())
    if fault is not None:
        kind, target, params, at_s = fault
        doc["emulation"]["faults"] = [*(doc["emulation"].get("faults") or []), {
            "kind": kind, "target": target, "params": params, "at_s": at_s}]
    for key in ("limits", "suite_settings"):
        if doc.get(key):
            doc[key] = str((TESTBED.parent / doc[key]).resolve())
    doc["emulation"]["seed"] = seed
    if time_scale is not None:
        doc["emulation"]["time_scale"] = time_scale
    if noise:
        switches = sorted(d for d, v in doc["devices"].items() if v["role"] in ("leaf", "spine"))
        late = random.Random(seed).choice(switches)
        doc["emulation"]["noise"] = {"probe_loss": NOISE_PROBE_LOSS, "answer_delay_s": {
            "*": NOISE_ANSWER_S, late: NOISE_LATE_S}}
    path = folder / f"testbed-{seed}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_case(n: int, kind: str | None, target: str, params: dict[str, Any], lab_seed: int,
             out: Path, max_s: float, blame_names: tuple[str, ...], load: bool = False,
             idle: bool = False, noise: bool = False, time_scale: float | None = None
             ) -> Outcome:
    events = out / f"{n:03d}.jsonl"
    events.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "labtest.cli", "doctor", "--once", "--max-s", f"{max_s:g}",
            "--testbed", str(testbed_for(lab_seed, out, noise, time_scale)),
            "--json-lines", str(events)]
    if kind is not None:
        argv += ["--fault", spec(kind, target, params)]
    if (kind in LOADED and not idle) or load:
        argv.append("--load")
    # a late answer must take time, as on a real lab: the elastic clock skips the time
    # every party only waits (a late answer's wait among them), so the doctor's wall-time
    # round could not leave a late switch behind while its device time ran on
    env = {**os.environ, ELASTIC_ENV: "0"} if noise else None
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False,
                          env=env)
    wall = time.monotonic() - t0
    (out / f"{n:03d}.log").write_text(done.stdout + done.stderr)
    reports = [e for e in map(json.loads, events.read_text().splitlines())
               if e.get("event") == "report"] if events.exists() else []
    last = reports[-1] if reports else {}
    units = [s["unit"] for s in last.get("suspects", [])]
    right = [u for u in units if blames(u, blame_names)]
    failed = " ".join(last.get("failed", {}))
    unreachable = kind == "unreachable_device" and names(failed, target)
    return Outcome(n, lab_seed, kind or "healthy", target, params, done.returncode,
                   bool(right) or unreachable, bool(units and units[0] in right) or (
                       unreachable and not units), units, [u for u in units if u not in right],
                   float(last.get("elapsed_s", last.get("device_s", 0.0))), round(wall, 1),
                   str(last.get("decision", "no report")))


def run_onset_case(n: int, kind: str | None, target: str, params: dict[str, Any],
                   lab_seed: int, out: Path, bound_s: float, blame_names: tuple[str, ...],
                   onset_s: float, load: bool = False, noise: bool = False,
                   time_scale: float | None = None) -> Outcome:
    """``--onset``: the continuous doctor (``--interval ONSET_INTERVAL_S``, as production
    runs it) on a lab whose fault starts at ``onset_s`` device seconds, after the doctor's
    baseline; stopped (SIGTERM) at the first report that pages the fault, or at
    ``onset_s + bound_s``. Time to detect: that report's lab time (``lab_s``) minus the
    onset, as the published figures count it (Holmes: from the anomaly to its
    localisation). A suspect paged before the onset, or naming none of the fault's blame
    names, is a false one; a healthy case runs to ``onset_s + bound_s`` and any page is."""
    events, log = out / f"{n:03d}.jsonl", out / f"{n:03d}.log"
    events.unlink(missing_ok=True)
    fault = (kind, target, params, onset_s) if kind is not None else None
    argv = [sys.executable, "-m", "labtest.cli", "doctor", "--interval",
            f"{ONSET_INTERVAL_S:g}", "--testbed",
            str(testbed_for(lab_seed, out, noise, time_scale, fault)),
            "--json-lines", str(events)]
    if (kind in LOADED) or load:
        argv.append("--load")
    env = {**os.environ, ELASTIC_ENV: "0"} if noise else None
    t0 = time.monotonic()
    named: list[str] = []
    false: list[str] = []
    hit: dict[str, Any] | None = None
    last: dict[str, Any] = {}
    with log.open("w") as sink:
        child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, text=True,
                                 env=env)
        seen = 0
        try:
            while hit is None and time.monotonic() - t0 < ONSET_WALL_CAP_S:
                done = child.poll() is not None
                lines = events.read_text().splitlines() if events.exists() else []
                for line in lines[seen:]:
                    e = json.loads(line)
                    if e.get("event") != "report":
                        continue
                    last = e
                    after = e["lab_s"] >= onset_s
                    for u in (s["unit"] for s in e["suspects"]):
                        right = kind is not None and after and blames(u, blame_names)
                        (named if right else false).append(u)
                    failed = " ".join(e.get("failed", {}))
                    if kind is not None and after and (
                            named or (kind == "unreachable_device" and names(failed, target))):
                        hit = e
                        break
                    if e["lab_s"] >= onset_s + bound_s:
                        hit = {}
                        break
                seen = len(lines)
                if done:
                    break
                time.sleep(0.5)
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
    wall = time.monotonic() - t0
    deciding = hit or last
    detected = bool(hit)
    units = [s["unit"] for s in deciding.get("suspects", [])]
    top1 = detected and (not units or blames(units[0], blame_names))
    ttd = float(deciding["lab_s"]) - onset_s if deciding else 0.0
    decision = (f"paged at lab {deciding['lab_s']:.0f} s, {ttd:.0f} s after the onset "
                f"(interval {deciding['interval']})" if detected else
                f"not paged by lab {last.get('lab_s', 0):.0f} s (onset {onset_s:.0f} s)")
    return Outcome(n, lab_seed, kind or "healthy", target, params, child.returncode or 0,
                   detected, bool(top1), sorted(set(named + false)), sorted(set(false)),
                   round(ttd, 1), round(wall, 1), decision)


def draw(seed: int, cases: int, healthy: int, only: list[str] | None = None
         ) -> list[tuple[str | None, str, dict[str, Any]]]:
    tb = load_testbed(TESTBED)
    rng = random.Random(seed)
    kinds = sorted(only or DOCTOR_DOMAINS)
    per = {k: cases // len(kinds) + (1 if i < cases % len(kinds) else 0)
           for i, k in enumerate(rng.sample(kinds, len(kinds)))}
    out: list[tuple[str | None, str, dict[str, Any]]] = []
    for kind in kinds:
        for d in draw_kind(DOCTOR_DOMAINS[kind], tb, rng, per[kind]) if per[kind] else []:
            out.append((kind, d.target, dict(d.params)))
    out += [(None, "", {}) for _ in range(healthy)]
    rng.shuffle(out)
    return out


def table(outcomes: list[Outcome], since: str = "the doctor's start") -> str:
    faulty = [o for o in outcomes if o.kind != "healthy"]
    healthy = [o for o in outcomes if o.kind == "healthy"]
    named = sum(len(o.suspects) for o in outcomes)
    wrong = sum(len(o.false_suspects) for o in outcomes)
    ttd = sorted(o.device_s for o in faulty if o.detected)
    lines = ["| kind | cases | detected | top-1 | TTD median (device s) |", "|---|---|---|---|---|"]
    for kind in sorted({o.kind for o in faulty}):
        mine = [o for o in faulty if o.kind == kind]
        t = [o.device_s for o in mine if o.detected]
        lines.append(f"| {kind} | {len(mine)} | {sum(o.detected for o in mine)} | "
                     f"{sum(o.top1 for o in mine)} | "
                     f"{statistics.median(t):.0f} |" if t else
                     f"| {kind} | {len(mine)} | 0 | 0 | - |")
    lines.append(f"| healthy | {len(healthy)} | paged: {sum(1 for o in healthy if o.suspects)} "
                 f"| - | decided healthy: {sum(1 for o in healthy if o.exit == 0)} |")
    precision = (named - wrong) / named if named else 1.0
    recall = sum(o.detected for o in faulty) / len(faulty) if faulty else 1.0
    top1 = sum(o.top1 for o in faulty) / len(faulty) if faulty else 1.0
    p95 = ttd[min(len(ttd) - 1, int(0.95 * len(ttd)))] if ttd else float("nan")
    lines.append("")
    lines.append(f"precision {precision:.3f} ({named - wrong}/{named} suspects), recall "
                 f"{recall:.3f}, top-1 {top1:.3f}, TTD median "
                 f"{statistics.median(ttd) if ttd else float('nan'):.0f} s / p95 {p95:.0f} s "
                 f"of device time from {since} (published: SkeletonHunter 98.2 / 99.3 / "
                 "95.7 %; Holmes 30.3 s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--cases", type=int, default=40, help="faulty cases (default 40)")
    ap.add_argument("--healthy", type=int, default=6, help="healthy cases (default 6)")
    ap.add_argument("--max-s", type=float, default=60.0, help="--once's bound (device s)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--load-all", action="store_true",
                    help="every case (healthy too) beside the training-job load (--load)")
    ap.add_argument("--idle", action="store_true",
                    help="no case under the load, stragglers neither (the bursts find them)")
    ap.add_argument("--noise", action="store_true",
                    help="production's noise on every case's lab: probe answers lost at "
                         "random, late answers (one switch much later); see NOISE_*")
    ap.add_argument("--time-scale", type=float, default=None, metavar="S",
                    help="the labs' emulation.time_scale (default: the testbed's, 10): at 1 "
                         "device time is wall time, as on a real lab, and the doctor's and "
                         "the emulator's CPU count once, not ten times")
    ap.add_argument("--kinds", nargs="+", choices=sorted(DOCTOR_DOMAINS),
                    help="draw only these kinds (default: every kind)")
    ap.add_argument("--onset", action="store_true",
                    help="the continuous doctor, each fault starting after its baseline; "
                         "time to detect from the fault's onset (run_onset_case)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="--onset: cases at once (each mostly waits on its lab's answers)")
    ap.add_argument("--from-case", type=int, default=1, metavar="N",
                    help="--onset: run the seed's cases from N on (another process may run "
                         "the ones before into the same --out)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**8)
    out = args.out or REPO / "bench" / "out" / f"doctor-lab-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    print(f"seed {seed}: {args.cases} faulty + {args.healthy} healthy cases -> {out}",
          flush=True)
    cases = draw(seed, args.cases, args.healthy, args.kinds)
    (out / "cases.json").write_text(json.dumps(
        [{"kind": k, "target": t, "params": p} for k, t, p in cases], indent=1))
    tb = load_testbed(TESTBED)
    rng = random.Random(seed + 1)
    if args.onset:
        outcomes = _onset_run(args, cases, out, tb, rng)
        (out / "summary.json").write_text(json.dumps([o.__dict__ for o in outcomes],
                                                     indent=1))
        print(table(outcomes, since="the fault's onset"))
        return 0
    outcomes = []
    for n, (kind, target, params) in enumerate(cases, 1):
        bound = max(args.max_s, SLOW_MAX_S.get(kind or "", 0.0))
        o = run_case(n, kind, target, params, rng.randrange(1, 10**6), out, bound,
                     blame(tb, target) if kind else (), load=args.load_all, idle=args.idle,
                     noise=args.noise, time_scale=args.time_scale)
        outcomes.append(o)
        mark = ("ok" if (o.top1 if kind else not o.suspects) else
                "named (not first)" if o.detected else "MISS" if kind else "FALSE PAGE")
        print(f"{n:3d} {o.kind:18s} {spec(o.kind, target, params) if kind else '':58s} "
              f"{mark:17s} {o.device_s:5.0f} s  {o.wall_s:5.1f} s wall  "
              f"{', '.join(o.suspects[:2])}", flush=True)
    (out / "summary.json").write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    print(table(outcomes))
    return 0


def _onset_run(args: argparse.Namespace, cases: list[tuple[str | None, str, dict[str, Any]]],
               out: Path, tb: Any, rng: random.Random) -> list[Outcome]:
    draws = [(n, kind, target, params, rng.randrange(1, 10**6), rng.uniform(*ONSET_SPAN_S))
             for n, (kind, target, params) in enumerate(cases, 1)]

    draws = [d for d in draws if d[0] >= args.from_case]

    def one(d: tuple[int, str | None, str, dict[str, Any], int, float]) -> Outcome:
        n, kind, target, params, lab_seed, onset = d
        bound = max(args.max_s, SLOW_MAX_S.get(kind or "", 0.0))
        o = run_onset_case(n, kind, target, params, lab_seed, out, bound,
                           blame(tb, target) if kind else (), onset, load=args.load_all,
                           noise=args.noise, time_scale=args.time_scale)
        mark = ("ok" if (o.top1 if kind else not o.suspects) else
                "named (not first)" if o.detected else "MISS" if kind else "FALSE PAGE")
        print(f"{n:3d} {o.kind:18s} {spec(o.kind, target, params) if kind else '':58s} "
              f"{mark:17s} {o.device_s:5.0f} s  {o.wall_s:5.1f} s wall  onset {onset:4.0f} s  "
              f"{', '.join(o.suspects[:2])}", flush=True)
        return o

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        return sorted(pool.map(one, draws), key=lambda o: o.case)


if __name__ == "__main__":
    sys.exit(main())
