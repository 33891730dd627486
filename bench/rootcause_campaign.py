"""A random root-cause campaign (issue 32): does a run's own answer name the fault?

    python bench/rootcause_campaign.py [--seed S] [--cases 200] [--jobs 2]
                                       [--all-suites | --extra-suites roce,collective]
                                       [--out DIR] [--log FILE] [--markdown FILE] [--resume]
    python bench/rootcause_campaign.py --rejudge DIR [--markdown FILE]
    python bench/rootcause_campaign.py --list [--seed S] [--cases N]

From a seed (printed) it draws ``--cases`` cases from the fault-detection matrix's
domains (``tests/matrix/matrix_data.py``, ``labtest/matrix/draws.py``):

- single faults, every kind of the domains in turn (as even as the count allows); per
  kind the domain's strata (``class/vendor``: host and fabric links, every vendor at
  either end, switches, hosts) cycled in a seeded order by ``draw_kind``, and inside a
  stratum a finer facet cycled too (a leaf with or without a TG port, a leaf or a spine,
  a port on a leaf, a spine or a host, a host behind a SONiC or an EOS leaf), so the
  draws spread over placements; parameters from the domain's ranges (just past the limit
  to gross);
- ``--combined-share`` of two-faults-at-once cases (``draw_combined``/``combine``: two
  combinable kinds, no device in common, seen by different suites);
- ``--healthy-share`` of healthy labs, each on its own emulation seed (at least one).

Each case runs as a child ``labtest run`` on its own emulated lab
(``labtest.matrix.runner.Runner``), ``--jobs`` at a time, over the suites that catch its
kind(s) plus ``--extra-suites`` (default ``roce,collective``: traffic that crosses the
fabric, which gives the path inference its evidence), or every suite with
``--all-suites``. A healthy case runs the suite set of a (seeded) random kind, as a faulty
case would.

The campaign folder (default ``bench/out/rootcause-<seed>``, ignored by git) keeps per
case its ``results/labtest-results.json``, ``run.json`` (wall, exit status) and ``run.log``
(the allure files are pruned unless ``--keep-allure``), ``cases.json`` (every case's
faults, strata, suites and the names a correct answer may give per fault:
``labtest.matrix.draws.blame``) and ``campaign.json``. ``--rejudge DIR`` recomputes
``root_causes(doc)`` from every stored document with the current code and prints the
table again, without running a lab.

Judged is only the run's own answer:

- the verdict of the document's verdict record: a faulty case must be FAIL (PASS is a
  *false PASS*, INCOMPLETE a miss; a lone ``unreachable_device`` too, since 2026-12-06: a
  dead management plane while the lab reaches the others fails, ``measure.management``),
  a healthy one PASS (anything else a *false FAIL*);
- the FIRST root causes: one fault is *top-1 right* when the first cause's culprit (for an
  ``unreachable`` cause, also its one-line cause, which quotes the device) names one of
  the fault's blame names (``labtest.matrix.judge.names``); two faults are right when the first
  two causes name one fault each. An ``unexplained`` cause names nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any

from labtest.matrix.cases import DEFAULT_CASES, Case, load_data
from labtest.matrix.draws import (
    SWITCH_ROLES,
    Domain,
    Draw,
    combine,
    draw_combined,
    draw_kind,
    expect,
    in_domain,
    strata,
    targets,
    to_case,
)
from labtest.matrix.judge import names
from labtest.matrix.runner import RUN_META, Runner
from labtest.measure.rootcause import RootCause, root_causes
from labtest.reports import RESULTS_FILE, results
from labtest.run import DEFAULT_TESTBED, SUITE_ORDER
from labtest.testbed import load_testbed
from labtest.testbed.model import Testbed

ROOT = Path(__file__).resolve().parents[1]
OUT_ROOT = ROOT / "bench" / "out"
CASES_FILE, CAMPAIGN_FILE, TABLE_FILE = "cases.json", "campaign.json", "table.md"
DEFAULT_EXTRA = ("roce", "collective")
TIMEOUT_S = 600.0
#: what the domains say about placements left out because no suite can see a fault there
UNSEEN = re.compile(r"known gap|cannot be seen|not proven|Not EOS|Not host-facing", re.I)


# --- drawing ---------------------------------------------------------------------------------


def facet(tb: Testbed, target: str, tg_leaves: set[str]) -> str:
    """A finer placement inside a stratum: what a vendor stratum does not tell apart."""
    if target == "":
        return "every-switch"
    if "--" in target:
        return ""  # a link: its class/vendor stratum says it all
    device = target.partition(":")[0]
    if device not in tb.devices:
        return ""
    role = tb.devices[device].role
    if role in SWITCH_ROLES:
        return role + ("+tg" if device in tg_leaves else "")
    if role == "host":  # a host behind a SONiC or an EOS leaf
        leaf = next((e.device for lk in tb.links for e in lk.ends
                     if device in (lk.ends[0].device, lk.ends[1].device) and e.device != device
                     and e.device in tb.devices), "")
        return f"behind-{tb.devices[leaf].driver}" if leaf else "host"
    return role


def draw_spread(domain: Domain, tb: Testbed, rng: random.Random, n: int) -> list[Draw]:
    """``n`` draws of ``domain`` (``draw_kind``: strata cycled), each moved to a target of
    the next facet of its stratum (facets cycled in a seeded order, per stratum)."""
    draws = draw_kind(domain, tb, rng, n)
    if domain.peer:  # the peer (``other``) was drawn for the target: keep both
        return draws
    tg_leaves = {t for ts in targets(tb, "tg_leaf").values() for t in ts}
    pool: dict[str, list[str]] = {}
    for _, key, found in strata(domain, tb):
        pool.setdefault(key, [])
        pool[key] += [t for t in found if t not in pool[key]]
    order: dict[str, list[str]] = {}
    out = []
    for d in draws:
        groups: dict[str, list[str]] = {}
        for t in pool.get(d.stratum, [d.target]):
            groups.setdefault(facet(tb, t, tg_leaves), []).append(t)
        if len(groups) < 2:
            f = facet(tb, d.target, tg_leaves)
            out.append(replace(d, stratum=f"{d.stratum}/{f}" if f else d.stratum))
            continue
        todo = order.setdefault(d.stratum, [])
        if not todo:
            todo += sorted(groups)
            rng.shuffle(todo)
        f = todo.pop()
        out.append(replace(d, target=rng.choice(groups[f]), stratum=f"{d.stratum}/{f}"))
    for d in out:
        wrong = in_domain(domain, tb, d.fault())
        if wrong:  # a facet move must stay inside the domain
            raise AssertionError(f"{d}: {wrong}")
    return out


def split(total: int, healthy_share: float, combined_share: float) -> tuple[int, int, int]:
    """(single, combined, healthy) counts of a campaign of ``total`` cases."""
    healthy = max(1, math.ceil(total * healthy_share)) if total > 1 else 0
    combined = round(total * combined_share) if total > 2 else 0
    return total - healthy - combined, combined, healthy


def suites_of(kinds: Iterable[str], domains: Mapping[str, Domain], extra: Sequence[str],
              all_suites: bool) -> list[str]:
    """The suites a case runs (empty: every suite)."""
    if all_suites:
        return []
    wanted = {s for k in kinds for s in domains[k].catches} | set(extra)
    return [s for s in SUITE_ORDER if s in wanted]


def draw_campaign(seed: int, total: int, domains: Mapping[str, Domain], tb: Testbed, *,
                  healthy_share: float, combined_share: float, extra: Sequence[str],
                  all_suites: bool) -> tuple[list[Case], list[dict[str, Any]]]:
    """The campaign's cases (shuffled, numbered) and their records for ``cases.json``."""
    singles, combined, healthy = split(total, healthy_share, combined_share)
    kinds = list(domains)
    per_kind = dict.fromkeys(kinds, singles // len(kinds))
    for k in random.Random(f"{seed}/spread").sample(kinds, singles % len(kinds)):
        per_kind[k] += 1
    drawn: list[tuple[list[Draw], Case | None]] = []  # (draws, case) ; healthy: ([], case)
    for kind in kinds:
        if per_kind[kind]:
            rng = random.Random(f"{seed}/{kind}")
            drawn += [([d], None) for d in draw_spread(domains[kind], tb, rng, per_kind[kind])]
    rng = random.Random(f"{seed}/combined")
    used: list[str] = []
    for _ in range(combined):
        pair = draw_combined(domains, tb, rng, used)
        used += [d.kind for d in pair]
        drawn.append((list(pair), None))
    rng = random.Random(f"{seed}/healthy")
    seeds: list[int] = []
    while len(seeds) < healthy:
        s = rng.randint(1, 999_999)
        if s not in seeds:
            seeds.append(s)
    drawn += [([], Case(name=f"healthy-seed{s}", seed=s)) for s in seeds]
    random.Random(f"{seed}/order").shuffle(drawn)
    like = random.Random(f"{seed}/healthy-suites")
    cases, records = [], []
    for i, (draws, healthy_case) in enumerate(drawn, 1):
        if healthy_case is not None:
            name = f"{i:03d}-{healthy_case.name}"
            case = replace(healthy_case, name=name)
            suites = suites_of([like.choice(kinds)], domains, extra, all_suites)
        elif len(draws) == 1:
            (d,) = draws
            name = f"{i:03d}-{d.kind}"
            case = to_case(name, domains[d.kind], tb, d, seed)
            suites = suites_of([d.kind], domains, extra, all_suites)
        else:
            name = f"{i:03d}-combined-{draws[0].kind}+{draws[1].kind}"
            case = combine(name, domains, tb, draws, seed)
            suites = suites_of([d.kind for d in draws], domains, extra, all_suites)
        cases.append(case)
        records.append({
            "name": name,
            "healthy": case.healthy,
            "seed": case.seed,
            "time_scale": case.time_scale,
            "unreachable": case.unreachable,
            "suites": suites,
            "faults": [{**d.fault(), "stratum": d.stratum,
                        "blame": list(expect(domains[d.kind], tb, d).culprits)}
                       for d in draws],
        })
    return cases, records


# --- judging -----------------------------------------------------------------------------------


def _text(c: RootCause) -> str:
    """What a cause names: its culprit; an unreachable cause also quotes the device."""
    return f"{c.culprit}\n{c.cause}" if c.kind == "unreachable" else c.culprit


def _names_fault(c: RootCause, fault: Mapping[str, Any]) -> bool:
    """A device is named by itself or one of its ports, not by a link it ends (a host's
    link at a leaf names the host's NIC as much as the leaf)."""
    if c.kind == "unexplained" or not c.culprit:
        return False
    return any(names(_text(c), who) if (":" in who or "--" in who or c.kind == "unreachable")
               else c.culprit == who or (
                   "--" not in c.culprit and c.culprit.startswith(f"{who}:"))
               for who in fault["blame"])


def _short(c: RootCause | None) -> str:
    if c is None:
        return "—"
    if c.kind == "unexplained":
        return f"unexplained ({c.cause[len('unexplained: '):][:60]})"
    return f"{c.culprit} [{c.kind}]"


def load_doc(case_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    """(results document or None, run.json, why there is no document)."""
    meta: dict[str, Any] = {}
    meta_path = case_dir / RUN_META
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    try:
        return results.load(case_dir / "results"), meta, ""
    except results.ResultsError as exc:
        why = meta.get("error") or (f"exit {meta.get('returncode')}: {exc}" if meta else
                                    "not run (yet)")
        return None, meta, str(why)


def judge(rec: Mapping[str, Any], case_dir: Path) -> dict[str, Any]:
    """One case's row: the verdict, the first causes (recomputed), right or wrong."""
    doc, meta, why = load_doc(case_dir)
    row: dict[str, Any] = {
        "name": rec["name"], "healthy": rec["healthy"], "faults": rec["faults"],
        "seed": rec.get("seed"), "wall_s": meta.get("wall_s"), "ran": bool(meta),
        "verdict": "NO RESULTS", "first": "—", "second": "—", "right": False,
        "verdict_ok": False, "problem": why, "causes": [],
    }
    if doc is None:
        return row
    row["verdict"] = str(results.verdict_record(doc)["verdict"])  # today's engine (rejudge)
    try:
        causes = root_causes(doc)
    except Exception as exc:  # the engine under work: a crash is a wrong answer, not the end
        row["problem"] = f"root_causes raised {type(exc).__name__}: {exc}"
        causes = []
    row["causes"] = [{"kind": c.kind, "culprit": c.culprit, "cause": c.cause,
                      "not_runner_up": c.not_runner_up} for c in causes[:4]]
    row["first"] = _short(causes[0] if causes else None)
    row["second"] = _short(causes[1] if len(causes) > 1 else None)
    faults = rec["faults"]
    if rec["healthy"]:
        row["verdict_ok"] = row["right"] = row["verdict"] == "PASS"
        return row
    row["verdict_ok"] = row["verdict"] == "FAIL"  # a dead management plane too
    top = causes[:len(faults)]
    if len(faults) == 1:
        row["right"] = bool(top) and _names_fault(top[0], faults[0])
    else:  # each fault named by one of the first two causes, not both by the same one
        row["right"] = len(top) == 2 and (
            (_names_fault(top[0], faults[0]) and _names_fault(top[1], faults[1]))
            or (_names_fault(top[0], faults[1]) and _names_fault(top[1], faults[0])))
    return row


# --- the table ---------------------------------------------------------------------------------


def _pct(n: int, of: int) -> str:
    return f"{100 * n / of:.0f}%" if of else "—"


def _label(row: Mapping[str, Any]) -> str:
    if row["healthy"]:
        return "healthy"
    return " + ".join(f["kind"] for f in row["faults"])


def _where(row: Mapping[str, Any]) -> str:
    if row["healthy"]:
        return f"seed {row['seed']}"
    return " + ".join(f"`{f['target'] or '(every switch)'}` ({f['stratum']})"
                      for f in row["faults"])


def _params(row: Mapping[str, Any]) -> str:
    return " + ".join(" ".join(f"{k}={v}" for k, v in (f.get("params") or {}).items()) or "—"
                      for f in row["faults"]) or "—"


def unseen_lines(domains: Mapping[str, Domain]) -> list[str]:
    """Placements the domains leave out because no suite sees the fault there."""
    out = []
    for kind, d in domains.items():
        out += [f"- `{kind}` not on {stratum}: {why}"
                for p in d.placements for stratum, why in p.unseen.items()]
        texts = [p.why for p in d.placements] + [d.note]
        for text in texts:
            for sentence in re.split(r"(?<=[.:;])\s+(?=[A-Z(])", text):
                if UNSEEN.search(sentence):
                    out.append(f"- `{kind}`: {sentence.strip()}")
    return out


def render(rows: Sequence[Mapping[str, Any]], domains: Mapping[str, Domain],
           head: Sequence[str]) -> list[str]:
    done = [r for r in rows if r["ran"]]
    faulty = [r for r in done if not r["healthy"]]
    healthy = [r for r in done if r["healthy"]]
    lines = [*head, "", "## Top-1 root cause per fault kind", "",
             "Top-1 right: the first root cause names the fault (two faults: the first two "
             "name one each), whatever the verdict. Verdict right: FAIL (an unreachable device "
             "too: its dead management fails it); false PASS: the faulty lab "
             "passed; other: INCOMPLETE or no results where FAIL was due.", "",
             "| fault kind | cases | top-1 right | top-1 % | verdict right | false PASS | "
             "other |", "|---|---|---|---|---|---|---|"]

    def line(label: str, group: Sequence[Mapping[str, Any]]) -> str:
        right = sum(r["right"] for r in group)
        fails = sum(r["verdict_ok"] for r in group)
        passes = sum(r["verdict"] == "PASS" for r in group)
        other = len(group) - fails - passes
        return (f"| {label} | {len(group)} | {right} | {_pct(right, len(group))} | {fails} | "
                f"{passes} | {other} |")

    for kind in domains:
        group = [r for r in faulty if len(r["faults"]) == 1 and r["faults"][0]["kind"] == kind]
        if group:
            lines.append(line(f"`{kind}`", group))
    two = [r for r in faulty if len(r["faults"]) > 1]
    if two:
        lines.append(line("two faults at once", two))
    lines.append(line("**every faulty case**", faulty))
    false_fail = [r for r in healthy if r["verdict"] != "PASS"]
    lines += ["", f"Healthy labs: {len(healthy)}, PASS {len(healthy) - len(false_fail)}, "
              f"**false FAIL {len(false_fail)}**"
              + (f" ({', '.join(r['name'] + ': ' + r['verdict'] for r in false_fail)})"
                 if false_fail else "") + "."]
    walls = [float(r["wall_s"]) for r in done if r["wall_s"] is not None]
    if walls:
        lines += ["", f"Wall per case: median {statistics.median(walls):.0f} s, max "
                  f"{max(walls):.0f} s; {sum(walls) / 60:.1f} min of case wall time in all."]
    missing = [r for r in rows if not r["ran"]]
    if missing:
        lines += ["", f"Not run (yet): {len(missing)} of {len(rows)} cases."]
    wrong = [r for r in faulty if not r["right"]]
    lines += ["", "## Wrong first root causes", ""]
    lines += [f"- `{r['name']}` ({_label(r)} at {_where(r)}; {_params(r)}; verdict "
              f"{r['verdict']}): first **{r['first']}**, second {r['second']}; expected one of "
              + " / ".join(f"[{', '.join(f['blame'][:6])}]" for f in r["faults"])
              + (f"; {r['problem']}" if r["problem"] else "")
              for r in wrong] or ["none"]
    false_pass = [r for r in faulty if r["verdict"] == "PASS"]
    lines += ["", "## False PASS: faults the suites run did not see", ""]
    lines += [f"- `{r['name']}`: {_label(r)} at {_where(r)} ({_params(r)}): the run passed, "
              "so the fault changed nothing its suites measure" for r in false_pass] or ["none"]
    lines += ["", "## Placements the domains leave out (no suite sees the fault there)", "",
              *unseen_lines(domains)]
    lines += ["", "## Cases", "", "| case | fault(s) | target(s) | params | verdict | "
              "first cause | second cause | top-1 | wall s |", "|---" * 9 + "|"]
    for r in rows:
        ok = ("right" if r["right"] else "**wrong**") if r["ran"] else "not run"
        if r["healthy"] and r["ran"]:
            ok = "PASS" if r["right"] else "**false FAIL**"
        wall = f"{r['wall_s']:.0f}" if r["wall_s"] is not None else "—"
        lines.append(f"| `{r['name']}` | {_label(r)} | {_where(r)} | {_params(r)} | "
                     f"{r['verdict']} | {r['first']} | {r['second']} | {ok} | {wall} |")
    return [s.replace("\n", " ") for s in lines]


# --- running ---------------------------------------------------------------------------------


class Log:
    """Progress lines to stdout and to the campaign's log file."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.lock = path, threading.Lock()

    def __call__(self, text: str) -> None:
        stamp = datetime.datetime.now().strftime("%H:%M:%S")
        with self.lock:
            print(f"{stamp} {text}", flush=True)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(f"{stamp} {text}\n")


def prune(case_dir: Path) -> None:
    """Keep the results document (and run.json, run.log, testbed.yaml); drop allure files."""
    res = case_dir / "results"
    if not res.is_dir():
        return
    for p in res.iterdir():
        if p.name == RESULTS_FILE:
            continue
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=False).stdout.strip()
    except OSError:
        return "?"


def run_campaign(cases: Sequence[Case], records: Sequence[Mapping[str, Any]], out: Path, *,
                 jobs: int, timeout_s: float, keep_allure: bool, resume: bool, log: Log
                 ) -> list[dict[str, Any]]:
    by_name = {r["name"]: r for r in records}
    runner = Runner(out, jobs=1, timeout_s=timeout_s)
    todo = [c for c in cases
            if not (resume and (out / c.name / RUN_META).is_file()
                    and (out / c.name / "results" / RESULTS_FILE).is_file())]
    if len(todo) < len(cases):
        log(f"resume: {len(cases) - len(todo)} case(s) already run, {len(todo)} to go")
    started, walls = time.monotonic(), []
    rows: dict[str, dict[str, Any]] = {}

    def one(case: Case) -> None:
        runner.run_case(case, list(by_name[case.name]["suites"]), timeout_s)
        if not keep_allure:
            prune(out / case.name)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="campaign")
    try:
        futures = {pool.submit(one, c): c for c in todo}
        for n, fut in enumerate(as_completed(futures), 1):
            case = futures[fut]
            try:
                fut.result()
            except Exception as exc:  # a case that could not even start: say so, go on
                log(f"{case.name}: could not run: {type(exc).__name__}: {exc}")
            row = judge(by_name[case.name], out / case.name)
            rows[case.name] = row
            if row["wall_s"] is not None:
                walls.append(float(row["wall_s"]))
            elapsed = time.monotonic() - started
            left = (len(todo) - n) * elapsed / n
            eta = datetime.datetime.now() + datetime.timedelta(seconds=left)
            state = ("PASS" if row["right"] else "FALSE FAIL") if row["healthy"] else (
                "right" if row["right"] else "WRONG")
            first = row["first"] + (f" + {row['second']}" if len(row["faults"]) > 1 else "")
            log(f"[{n:3d}/{len(todo)}] {case.name:<48} {row['verdict']:<10} first "
                f"{first:<40} {state:<10} {row['wall_s'] or 0:5.0f} s  "
                f"(elapsed {elapsed / 60:.1f} min, ETA {eta:%H:%M})"
                + (f"  [{row['problem']}]" if row["problem"] and not row["healthy"]
                   and row["verdict"] == "NO RESULTS" else ""))
    except KeyboardInterrupt:
        log("interrupted: stopping the running cases (their teardown restores the lab)")
        for f in futures:
            f.cancel()
        runner.close()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    runner.close()
    return [rows.get(r["name"]) or judge(r, out / r["name"]) for r in records]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="seed of the draws (default: a fresh one, printed)")
    ap.add_argument("--cases", type=int, default=200, help="cases to draw (default 200)")
    ap.add_argument("--healthy-share", type=float, default=0.1,
                    help="share of healthy labs (default 0.1, at least one)")
    ap.add_argument("--combined-share", type=float, default=0.15,
                    help="share of two-faults-at-once cases (default 0.15)")
    ap.add_argument("--extra-suites", default=",".join(DEFAULT_EXTRA),
                    help="suites every case runs besides its kind's catchers "
                         f"(comma-separated; default {','.join(DEFAULT_EXTRA)}; '' for none)")
    ap.add_argument("--all-suites", action="store_true", help="every suite on every case")
    ap.add_argument("--jobs", type=int, default=2, help="cases at once (default 2)")
    ap.add_argument("--timeout-s", type=float, default=TIMEOUT_S, help="per case (default 600)")
    ap.add_argument("--out", type=Path, help="campaign folder (default bench/out/rootcause-SEED)")
    ap.add_argument("--log", type=Path, help="progress log (default OUT/campaign.log)")
    ap.add_argument("--markdown", type=Path, help="also write the table to this file")
    ap.add_argument("--keep-allure", action="store_true", help="keep every allure file")
    ap.add_argument("--resume", action="store_true",
                    help="in an existing --out: run only the cases without results")
    ap.add_argument("--rejudge", type=Path, metavar="DIR",
                    help="do not run: judge a stored campaign again with the current engine")
    ap.add_argument("--list", action="store_true", help="print the draws and exit")
    ap.add_argument("--matrix-data", type=Path, default=DEFAULT_CASES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    domains: dict[str, Domain] = dict(load_data(args.matrix_data).DOMAINS)

    if args.rejudge is not None:
        out = args.rejudge
        records = json.loads((out / CASES_FILE).read_text(encoding="utf-8"))
        meta_path = out / CAMPAIGN_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
        rows = [judge(r, out / r["name"]) for r in records]
        head = _head(meta, rejudged=True)
    else:
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
        extra = [s for s in args.extra_suites.split(",") if s]
        unknown = sorted(set(extra) - set(SUITE_ORDER))
        if unknown:
            ap.error(f"no suite {unknown}; known: {', '.join(SUITE_ORDER)}")
        tb = load_testbed(DEFAULT_TESTBED)
        cases, records = draw_campaign(seed, args.cases, domains, tb,
                                       healthy_share=args.healthy_share,
                                       combined_share=args.combined_share, extra=extra,
                                       all_suites=args.all_suites)
        out = args.out or OUT_ROOT / f"rootcause-{seed}"
        singles, combined, healthy = split(args.cases, args.healthy_share, args.combined_share)
        print(f"rootcause campaign: seed {seed}, {len(cases)} cases ({singles} single, "
              f"{combined} two-fault, {healthy} healthy), suites: "
              + ("every suite" if args.all_suites else
                 f"the kind's catchers + {','.join(extra) or 'nothing'}"), flush=True)
        for r in records:
            print(f"  {r['name']:<48} " + (f"seed {r['seed']}" if r["healthy"] else " + ".join(
                f"{f['target'] or '(all)'} [{f['stratum']}] {f['params']}" for f in r["faults"]))
                  + f"  suites {','.join(r['suites']) or 'all'}")
        if args.list:
            return 0
        if out.exists() and not args.resume and any(out.iterdir()):
            ap.error(f"{out} exists: --resume to go on with it, or another --out")
        out.mkdir(parents=True, exist_ok=True)
        if out.resolve().is_relative_to(OUT_ROOT.resolve()):
            ignore = OUT_ROOT / ".gitignore"
            if not ignore.is_file():
                ignore.write_text("*\n", encoding="utf-8")
        (out / CASES_FILE).write_text(json.dumps(records, indent=1), encoding="utf-8")
        meta = {"seed": seed, "cases": len(cases), "single": singles, "combined": combined,
                "healthy": healthy, "jobs": args.jobs,
                "suites": "all" if args.all_suites else f"catchers+{','.join(extra)}",
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "commit": _git_commit(), "cpus": os.cpu_count(),
                "started": datetime.datetime.now().isoformat(timespec="seconds")}
        (out / CAMPAIGN_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        log = Log(args.log or out / "campaign.log")
        log(f"campaign seed {seed}: {len(cases)} cases in {out}, {args.jobs} at a time")
        started = time.monotonic()
        rows = run_campaign(cases, records, out, jobs=args.jobs, timeout_s=args.timeout_s,
                            keep_allure=args.keep_allure, resume=args.resume, log=log)
        meta.update(finished=datetime.datetime.now().isoformat(timespec="seconds"),
                    elapsed_s=round(time.monotonic() - started),
                    load_avg=[round(x, 1) for x in os.getloadavg()])
        (out / CAMPAIGN_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        head = _head(meta, rejudged=False)
        log("campaign finished; table below and in " + str(out / TABLE_FILE))
    lines = render(rows, domains, head)
    text = "\n".join(lines) + "\n"
    print(text)
    (out / TABLE_FILE if args.rejudge is None else out / "table-rejudged.md").write_text(
        text, encoding="utf-8")
    (out / ("judged.json" if args.rejudge is None else "rejudged.json")).write_text(
        json.dumps(rows, indent=1, default=str), encoding="utf-8")
    if args.markdown is not None:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


def _head(meta: Mapping[str, Any], *, rejudged: bool) -> list[str]:
    lines = ["# Root-cause campaign" + (f" (seed {meta['seed']})" if "seed" in meta else ""), ""]
    if meta:
        lines.append(
            f"`{meta.get('command', '?')}` at commit {meta.get('commit', '?')}: "
            f"{meta.get('cases')} cases ({meta.get('single')} single, {meta.get('combined')} "
            f"two-fault, {meta.get('healthy')} healthy), suites {meta.get('suites')}, "
            f"{meta.get('jobs')} at a time on {meta.get('cpus')} cores; started "
            f"{meta.get('started')}" + (f", {meta['elapsed_s'] / 60:.1f} min wall in all "
                                        f"(load average {meta.get('load_avg')} at the end)"
                                        if "elapsed_s" in meta else "") + ".")
    if rejudged:
        lines.append(f"Root causes recomputed from the stored documents with the engine at "
                     f"commit {_git_commit()} (plus uncommitted changes), "
                     f"{datetime.datetime.now():%Y-%m-%d %H:%M}.")
    return lines


if __name__ == "__main__":
    sys.exit(main())
