"""A kernel-lab fault campaign (issue 39): real faults at random places, the run's answer judged.

    sudo python bench/kernel_campaign.py [--seed S] [--cases 40] [--healthy 4] [--out DIR]
    python bench/kernel_campaign.py --list [--seed S] [--cases N]

From a seed (printed) it draws faults of every kind the kernel lab places with real tools
(``labtest.emulation.kernel.faults.FAULTS``: nft drops of a fraction, one direction or one
protocol; an HTB rate limit; BFD timers raised; a link down; sshd and snmpd stopped; two
cables swapped; bgpd or bfdd killed; one end's MTU lowered; the last two since 2026-12-05,
so a seed drawn before then draws other cases now) at random fabric links, ends and
devices of ``testbeds/kernel/leafspine.yaml``, with random parameters, plus healthy labs.
Each case is one ``labtest run`` of cabling, failover, paths and routing on a fresh kernel
lab whose testbed places the fault at start, one case at a time (software forwarding must
not share its cores).

Judged is only the run's own answer, as in ``bench/rootcause_campaign.py``: a faulty case
must FAIL (an unreachable device too, since 2026-12-06: ``measure.management``) with the
first root cause naming the placed element (the link, either end, or the device); a
healthy one must PASS. Linux replaces a route when BGP withdraws a path and drops a few
frames of flows that never used the failed link (docs/kernel-lab.md): a healthy run that
fails only ``failover.unaffected_flow_loss_frames`` is counted apart, as that truth.

With ``--doctor`` each case also runs ``labtest doctor --once`` on a fresh kernel lab with the
same fault (after the suites, never beside them), judged the same way on its report: rank-1
names the placed element; an unreachable device is right when listed as unread; a healthy
lab is right when nothing is paged. ``--doctor-only`` runs just that for the chosen cases and
keeps their stored suite rows.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from labtest.emulation.kernel import why_not
from labtest.emulation.kernel.faults import FAULTS
from labtest.matrix.judge import names
from labtest.measure.rootcause import root_causes
from labtest.reports import results

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "testbeds" / "kernel" / "leafspine.yaml"
SUITES = ("cabling", "failover", "paths", "routing")
#: a kind these four do not judge, and the suite that does: an MTU is checked by ROCE-0.1
#: (both ends of every link carry the IP MTU the data needs); its RDMA tests are not proven
#: on this lab, which leaves a faulty run FAIL and would leave a healthy one INCOMPLETE
MORE_SUITES = {"mtu_mismatch": ("roce",)}
TIMEOUT_S = 900.0  # a gray fault makes every failover event wait its bounds out (9-10 min a run)
FIB_UPDATE_LOSS = "failover.unaffected_flow_loss_frames"
NOT_RUN = "not run"  # the verdict of a row whose suites did not run (--doctor-only)
DOCTOR_MAX_S = 120.0  # device seconds of --once rounds before "undecided" (time scale 1 here)


def _links(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    roles = {d: v["role"] for d, v in data["devices"].items()}
    return [(lk["a"], lk["b"]) for lk in data["links"]
            if {roles[lk["a"].split(":")[0]], roles[lk["b"].split(":")[0]]} <= {"leaf", "spine"}]


def draw(seed: int, cases: int, healthy: int, kinds: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``cases`` faulty draws, every kind in turn, and ``healthy`` healthy labs."""
    data = yaml.safe_load(TESTBED.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    links = _links(data)
    switches = [d for d, v in data["devices"].items() if v["role"] in ("leaf", "spine")]
    hosts = [d for d, v in data["devices"].items() if v["role"] == "host"]
    kinds = sorted(kinds or FAULTS)
    out: list[dict[str, Any]] = []
    for i in range(cases):
        kind = kinds[i % len(kinds)]
        a, b = rng.choice(links)
        end = rng.choice((a, b))
        params: dict[str, Any] = {}
        blame = [f"{a}--{b}", a, b]
        if kind == "lossy_link":
            proto = rng.choice(("any", "udp"))
            params = {"loss": round(rng.uniform(0.02, 0.3), 3),
                      "direction": rng.choice(("ab", "ba", "both")), "proto": proto,
                      "spare_bfd": proto == "udp" and rng.random() < 0.5}
        elif kind == "straggler_link":  # under the paths suite's 8.2 Mbit/s per path
            params = {"rate_mbit": round(rng.uniform(1.0, 4.0), 2)}
        elif kind == "slow_convergence":  # detection 1.5-6 s against 1 s
            params = {"detect_multiplier": rng.randint(5, 10),
                      "interval_ms": rng.choice((300, 400, 500, 600))}
            blame += [a.split(":")[0], b.split(":")[0]]
        elif kind == "miswired":
            c, d = rng.choice([lk for lk in links if lk != (a, b)])
            params = {"other": f"{c}--{d}"}
            blame += [f"{c}--{d}", c, d]
        elif kind == "unreachable_device":
            end = rng.choice(switches + hosts)
            blame = [end]
        elif kind == "daemon_down":  # a crashed routing daemon: its switch
            end = rng.choice(switches)
            params = {"daemon": rng.choice(("bgpd", "bfdd"))}
            blame = [end]
        elif kind == "mtu_mismatch":  # one end below what the hosts send (1500)
            params = {"mtu": rng.choice((1280, 1400, 1450))}
        out.append({"name": f"{i + 1:03d}-{kind}", "kind": kind, "target": end,
                    "params": params, "blame": blame})
    out += [{"name": f"{cases + j + 1:03d}-healthy", "kind": "", "target": "", "params": {},
             "blame": []} for j in range(healthy)]
    return out


def testbed_for(case: Mapping[str, Any], folder: Path) -> Path:
    data = yaml.safe_load(TESTBED.read_text(encoding="utf-8"))
    for key in ("limits", "suite_settings"):  # relative to the original file
        data[key] = str((TESTBED.parent / data[key]).resolve())
    data["emulation"]["faults"] = [{"kind": case["kind"], "target": case["target"],
                                    "params": case["params"]}] if case["kind"] else []
    path = folder / "kernel-lab.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run_case(case: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed",
            str(testbed_for(case, folder)), "--alluredir", str(folder / "results")]
    for suite in (*SUITES, *MORE_SUITES.get(case["kind"], ())):
        argv += ["--suite", suite]
    t0 = time.monotonic()
    code = _run(argv, folder / "run.log")
    return judge(case, folder, time.monotonic() - t0, code)


def _run(argv: Sequence[str], log: Path) -> int:
    """One child within TIMEOUT_S, its output to ``log``; its exit status (-1: timed out)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False)
        text, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = f"timed out after {TIMEOUT_S:g} s\n{exc.stdout or ''}", -1
    log.write_text(str(text), encoding="utf-8")
    return code


def run_doctor(case: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """``labtest doctor --once`` on a fresh lab with the case's fault; its last report judged."""
    folder.mkdir(parents=True, exist_ok=True)
    events = folder / "doctor.jsonl"
    events.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "labtest.cli", "doctor", "--once", "--max-s",
            f"{DOCTOR_MAX_S:g}", "--testbed", str(testbed_for(case, folder)),
            "--json-lines", str(events)]
    t0 = time.monotonic()
    _run(argv, folder / "doctor.log")
    reports = [e for e in map(json.loads, events.read_text(encoding="utf-8").splitlines())
               if e.get("event") == "report"] if events.exists() else []
    return judge_doctor(case, reports[-1] if reports else None, time.monotonic() - t0)


def judge_doctor(case: Mapping[str, Any], last: Mapping[str, Any] | None, wall_s: float
                 ) -> dict[str, Any]:
    if last is None:
        return {"doctor": "no report", "doctor_first": "—", "doctor_right": False,
                "doctor_wall_s": round(wall_s, 1)}
    units = [str(s["unit"]) for s in last.get("suspects") or []]
    unread = " ".join(last.get("failed") or {})
    if not case["kind"]:
        right = not units
    elif case["kind"] == "unreachable_device":
        right = names(unread, case["target"]) and (
            not units or any(_names(units[0], who) for who in case["blame"]))
    else:
        right = bool(units) and any(_names(units[0], who) for who in case["blame"])
    return {"doctor": str(last.get("decision", "")), "doctor_first": units[0] if units else "—",
            "doctor_right": right,
            "doctor_device_s": float(last.get("elapsed_s", last.get("device_s", 0.0))),
            "doctor_wall_s": round(wall_s, 1)}


def judge(case: Mapping[str, Any], folder: Path, wall_s: float, code: int) -> dict[str, Any]:
    row: dict[str, Any] = {"name": case["name"], "kind": case["kind"] or "healthy",
                           "target": case["target"], "params": case["params"],
                           "wall_s": round(wall_s, 1), "exit": code, "verdict": "NO RESULTS",
                           "first": "—", "right": False}
    try:
        doc = results.load(folder / "results")
    except results.ResultsError as exc:
        row["problem"] = str(exc)
        return row
    row["verdict"] = str(results.verdict_record(doc)["verdict"])  # today's engine (--rejudge)
    causes = root_causes(doc)
    first = causes[0] if causes else None
    row["first"] = f"{first.culprit} [{first.kind}]" if first else "—"
    if not case["kind"]:
        failing = {str(m.get("limit_key")) for t in doc.get("tests") or []
                   for m in t.get("measurements") or [] if m.get("verdict") == "FAIL"}
        row["right"] = row["verdict"] == "PASS"
        row["fib_update_loss"] = row["verdict"] == "FAIL" and failing == {FIB_UPDATE_LOSS}
        return row
    want = ("FAIL",)  # a dead management plane too (measure.management), since 2026-12-06
    text = "" if first is None or first.kind == "unexplained" else (
        f"{first.culprit}\n{first.cause}" if first.kind == "unreachable" else first.culprit)
    row["verdict_ok"] = row["verdict"] in want
    row["right"] = row["verdict_ok"] and any(_names(text, who) for who in case["blame"])
    return row


def _names(text: str, who: str) -> bool:
    """A device is named by itself or one of its ports, not by a link it ends (as in
    bench/rootcause_campaign.py); a port or a link as ``labtest.matrix.judge.names``."""
    if ":" in who or "--" in who or "\n" in text:  # an unreachable cause quotes its device
        return names(text, who)
    return text == who or ("--" not in text and text.startswith(f"{who}:"))


def render(all_rows: Sequence[Mapping[str, Any]], seed: int) -> str:
    rows = [r for r in all_rows if r["verdict"] != NOT_RUN]  # --doctor-only's bare rows
    lines = [f"Kernel-lab campaign, seed {seed}: {len(rows)} case(s), suites "
             f"{', '.join(SUITES)}, one at a time.", "",
             "| fault kind | cases | verdict right | first root cause right | wall s (median) |",
             "|---|---|---|---|---|"]
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        walls = sorted(r["wall_s"] for r in mine)
        ok = sum(bool(r.get("verdict_ok", r["right"])) for r in mine)
        lines.append(f"| `{kind}` | {len(mine)} | {ok} | {sum(r['right'] for r in mine)} | "
                     f"{walls[len(walls) // 2]:.0f} |")
    faulty = [r for r in rows if r["kind"] != "healthy"]
    lines += ["", f"Faulty: {sum(r['right'] for r in faulty)}/{len(faulty)} named first."]
    healthy = [r for r in rows if r["kind"] == "healthy"]
    if healthy:
        fib = sum(bool(r.get("fib_update_loss")) for r in healthy)
        lines.append(f"Healthy: {sum(r['right'] for r in healthy)}/{len(healthy)} PASS"
                     + (f", {fib} failing only on Linux's FIB-update loss" if fib else "") + ".")
    doc_rows = [r for r in all_rows if "doctor_right" in r]
    if doc_rows:
        lines += ["", f"Doctor (`labtest doctor --once`, at most {DOCTOR_MAX_S:g} s of device "
                  "time):", "", "| fault kind | cases | rank-1 right | decided (page / healthy "
                  "/ undecided) |", "|---|---|---|---|"]
        for kind in sorted({r["kind"] for r in doc_rows}):
            mine = [r for r in doc_rows if r["kind"] == kind]
            how = " / ".join(str(sum(str(r.get("doctor")).startswith(d) for r in mine))
                             for d in ("decided: paged", "decided: healthy", "undecided"))
            lines.append(f"| `{kind}` | {len(mine)} | {sum(r['doctor_right'] for r in mine)} | "
                         f"{how} |")
        lines += [f"- `{r['name']}` {r['kind']} at `{r['target']}`: doctor {r['doctor']}, "
                  f"first {r['doctor_first']}" for r in doc_rows if not r["doctor_right"]]
    wrong = [r for r in rows if not r["right"] and not r.get("fib_update_loss")]
    if wrong:
        lines += ["", "Wrong:"] + [
            f"- `{r['name']}` {r['kind']} at `{r['target']}` {r['params']}: verdict "
            f"{r['verdict']}, first {r['first']}" for r in wrong]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--cases", type=int, default=40, help="faulty cases (default 40)")
    ap.add_argument("--healthy", type=int, default=4, help="healthy labs (default 4)")
    ap.add_argument("--out", type=Path, default=None, help="default bench/out/kernel-SEED")
    ap.add_argument("--list", action="store_true", help="print the draws and exit")
    ap.add_argument("--kinds", default="", metavar="K1,K2,...",
                    help="draw only these fault kinds (default: all; a seed drawn before "
                         "2026-12-05 had the eight kinds other than daemon_down, mtu_mismatch)")
    ap.add_argument("--only", nargs="*", default=None, metavar="NAME",
                    help="run (or rejudge) only these cases of the draw, by name; their rows "
                         "replace the same rows in --out's rows.json")
    ap.add_argument("--rejudge", action="store_true",
                    help="judge the runs already in --out again (the same --seed, --cases and "
                         "--healthy) with today's root-cause engine; nothing is run")
    ap.add_argument("--doctor", action="store_true",
                    help="after each case's run, `labtest doctor --once` on a fresh lab with "
                         "the same fault, judged on its rank-1")
    ap.add_argument("--doctor-only", action="store_true",
                    help="run only the doctor for the chosen cases; their stored suite rows stay")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**8)
    cases = draw(seed, args.cases, args.healthy, args.kinds.split(",") if args.kinds else ())
    print(f"kernel campaign: seed {seed}, {len(cases)} case(s)", flush=True)
    if args.list:
        for c in cases:
            print(f"  {c['name']:<26} {c['target'] or '-':<20} {c['params']}")
        return 0
    out = args.out or ROOT / "bench" / "out" / f"kernel-{seed}"
    reason = why_not()
    if reason is not None and not args.rejudge:
        print(f"kernel campaign: the kernel lab cannot run here: {reason}", file=sys.stderr)
        return 2
    stored = out / "rows.json"
    previous = ({r["name"]: r for r in json.loads(stored.read_text(encoding="utf-8"))}
                if (args.rejudge or args.only is not None or args.doctor_only)
                and stored.exists() else {})
    done: dict[str, dict[str, Any]] = {}

    def merged() -> list[dict[str, Any]]:  # in draw order: this pass's rows, else the stored
        return [r for c in cases if (r := done.get(c["name"]) or previous.get(c["name"]))]

    for n, case in enumerate(cases, 1):
        name = case["name"]
        if (args.only is not None and name not in args.only) or (args.rejudge and (
                name not in previous or previous[name]["verdict"] == NOT_RUN)):
            continue
        if args.doctor_only:
            row = {**previous.get(name, {"name": name, "kind": case["kind"] or "healthy",
                                         "target": case["target"], "params": case["params"],
                                         "verdict": NOT_RUN, "first": "—", "right": False,
                                         "wall_s": 0.0}), **run_doctor(case, out / name)}
        elif args.rejudge:  # the suites' row anew; the doctor's, if any, as it was
            row = {**judge(case, out / name, previous[name]["wall_s"], previous[name]["exit"]),
                   **{k: v for k, v in previous[name].items() if k.startswith("doctor")}}
        else:
            row = run_case(case, out / name)
            if args.doctor:
                row |= run_doctor(case, out / name)
        done[name] = row
        state = ("—" if row["verdict"] == NOT_RUN else "right" if row["right"]
                 else "FIB loss" if row.get("fib_update_loss") else "WRONG")
        doctor = (f"  doctor {row['doctor_first']} "
                  f"{'right' if row['doctor_right'] else 'WRONG'} ({row['doctor']})"
                  if "doctor_right" in row else "")
        print(f"[{n:3d}/{len(cases)}] {name:<26} {case['target'] or '-':<20} "
              f"{row['verdict']:<10} first {row['first']:<44} {state:<8} {row['wall_s']:5.0f} s"
              + doctor, flush=True)
        stored.write_text(json.dumps(merged(), indent=1), encoding="utf-8")  # every case kept
    rows = merged()
    table = render(rows, seed)
    (out / "table.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
