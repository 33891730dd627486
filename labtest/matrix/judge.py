"""Judging a matrix case (caught, culprit named, no false failure) and the markdown table."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from labtest.matrix.cases import Case, Expect
from labtest.matrix.runner import CaseRun, SuiteResult
from labtest.reports import results
from labtest.run import SUITE_ORDER

EVIDENCE_LINES = 4  # red tests quoted per row in the doc


PASS, CAUGHT, BROKEN_NAMED = "pass", "FAIL (culprit named)", "BROKEN (device named)"
#: a suite no fault of the row is meant to fail, failing only where the fault is: true
CONSEQUENCE = "FAIL (consequence, culprit named)"


# --- judging --------------------------------------------------------------------------------


@dataclass
class Cell:
    text: str  # what the matrix shows
    ok: bool
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FaultOutcome:
    """One injected fault's fate in its row: detected (a catching suite failed, or was
    broken naming the unreachable device) and named (its culprit named, no blind failure)."""

    kind: str
    target: str
    detected: bool
    named: bool
    problem: str = ""


@dataclass
class CaseVerdict:
    """One case judged: each suite's cell and each injected fault's outcome."""

    run: CaseRun
    cells: dict[str, Cell]
    faults: list[FaultOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.run.error is None
            and all(c.ok for c in self.cells.values())
            and all(f.detected and f.named for f in self.faults)
        )

    @property
    def problems(self) -> list[str]:
        head = [f"run: {self.run.error}"] if self.run.error else []
        tail = [f"{f.kind}@{f.target}: {f.problem}" for f in self.faults if f.problem]
        return head + [f"{s}: {p}" for s, c in self.cells.items() for p in c.problems] + tail


def names(text: str, who: str) -> bool:
    """Does ``text`` name ``who`` (``dev:port``, link ``a--b`` either way round, or a device)?

    A port matches as ``dev:port`` or as the measurement labels ``device=dev port=port``;
    names match whole (``leaf1`` is not ``leaf10``, ``Ethernet1`` is not ``Ethernet1/1``).
    """
    forms = [who]
    if "--" in who:
        a, _, b = who.partition("--")
        forms.append(f"{b}--{a}")
    elif ":" in who:
        device, _, port = who.partition(":")
        forms.append(f"device={device} port={port}")
    else:
        forms.append(f"device={who}")
    return any(re.search(rf"(?<![\w/]){re.escape(f)}(?![\w/])", text) for f in forms)


def judge(run: CaseRun) -> CaseVerdict:
    """Per suite a cell; per injected fault whether it was detected and its culprit named."""
    case = run.case
    cells: dict[str, Cell] = {}
    for suite in run.suites_run:
        if run.error is not None:
            cells[suite] = Cell("ERROR", False)
        elif suite not in run.suites:
            cells[suite] = Cell("no results", False, ["the suite reported no test"])
        elif case.unreachable:
            cells[suite] = _judge_unreachable(case, suite, run.suites[suite])
        else:
            s = run.suites[suite]
            seen_by = [e for e in case.expects if suite in e.catches or suite in e.also]
            must = [e for e in seen_by if suite in e.catches and not e.catch_any]
            if must or (seen_by and s.red):
                cells[suite] = _judge_catcher(seen_by, must, s)
            else:
                cells[suite] = _judge_bystander(s, [c for e in case.expects for c in e.culprits])
    return CaseVerdict(run, cells, [_outcome(run, cells, e) for e in case.expects])


def _outcome(run: CaseRun, cells: dict[str, Cell], e: Expect) -> FaultOutcome:
    if run.error is not None:
        return FaultOutcome(e.kind, e.target, False, False)
    ran = [s for s in e.catches if s in run.suites]
    if run.case.unreachable:
        hit = [s for s in ran if run.suites[s].broken]
        detected = bool(hit)
        named = detected and all(cells[s].ok for s in cells)
        return FaultOutcome(e.kind, e.target, detected, named)
    failing = [s for s in ran if any(t.outcome == results.FAILED for t in run.suites[s].red)]
    detected = bool(failing) and (e.catch_any or len(failing) == len(e.catches))
    mine = [s for s in (*e.catches, *e.also) if s in run.suites]
    naming = any(
        names(t.text, c)
        for s in mine
        for t in run.suites[s].red
        if t.outcome == results.FAILED
        for c in e.culprits
    )
    named = detected and naming and all(cells[s].ok for s in mine if s in cells)
    problem = ""
    if not ran:
        problem = f"not judged: none of {' / '.join(e.catches)} ran"
    elif not detected and e.catch_any:
        problem = f"not caught: none of {' / '.join(e.catches)} failed"
    elif detected and not naming:
        problem = f"no failure names {' / '.join(e.culprits)}"
    return FaultOutcome(e.kind, e.target, detected, named, problem)


def _judge_catcher(seen_by: Sequence[Expect], must: Sequence[Expect], s: SuiteResult) -> Cell:
    """A suite that some fault of the row is meant to (or may) fail: every failure must
    name a culprit of those faults; a suite meant to catch must fail naming each of its."""
    failed = [t for t in s.red if t.outcome == results.FAILED]
    problems = [f"{t.name} broken: {t.gist}" for t in s.red if t.outcome == results.BROKEN]
    if not failed:
        if must:
            return Cell("pass (missed)", False, ["did not fail: the fault was missed", *problems])
        return Cell(PASS if not problems else _red_counts(s).upper(), not problems, problems)
    culprits = [c for e in seen_by for c in e.culprits]
    blind = [t for t in failed if not any(names(t.text, c) for c in culprits)]
    problems += [f"{t.name} failed without naming {' / '.join(culprits)}: {t.gist}" for t in blind]
    if blind and len(blind) == len(failed):
        return Cell("FAIL (culprit not named)", False, problems)
    problems += [
        f"no failure names {e.kind}'s culprit ({' / '.join(e.culprits)})"
        for e in must
        if not any(names(t.text, c) for t in failed for c in e.culprits)
    ]
    text = CAUGHT if not problems else f"{CAUGHT}, also {_red_counts(s)}"
    return Cell(text, not problems, problems)


def _judge_bystander(s: SuiteResult, culprits: Sequence[str]) -> Cell:
    """A suite no fault of the row is meant to fail: quiet only if some test of it passed (one
    that skipped throughout could not have shown a false failure, so it proves nothing).

    A fault may still spoil its traffic (a flapping host link fails the incasts into that
    host): such a failure is true, not false, when it names a culprit of the row's faults,
    itself or through the run's root-cause analysis. Any other failure, and any broken test,
    is false."""
    if not s.red:
        if s.passed:
            return Cell(PASS, True)
        return Cell("all skipped", False, ["no test passed: a false failure could not show"])
    false = [
        t for t in s.red
        if t.outcome != results.FAILED or not any(names(t.text, c) for c in culprits)
    ]
    if not false:
        return Cell(CONSEQUENCE, True)
    problems = [f"{t.name} {t.outcome} (false {t.outcome}): {t.gist}" for t in false]
    return Cell(_red_counts(s).upper(), False, problems)


def _judge_unreachable(case: Case, suite: str, s: SuiteResult) -> Cell:
    device = case.unreachable or ""
    problems = [
        f"{t.name} {t.outcome}: "
        + (
            "must be broken, not failed"
            if t.outcome == results.FAILED
            else f"does not name {device}"
        )
        + f": {t.gist}"
        for t in s.red
        if t.outcome == results.FAILED or not (t.device == device or names(t.text, device))
    ]
    if suite in case.catches and not s.broken:
        problems.insert(0, f"no test was broken by unreachable {device}")
    if not s.red:
        return Cell(PASS, not problems, problems)
    text = BROKEN_NAMED.replace("device", device) if not problems else _red_counts(s).upper()
    return Cell(text, not problems, problems)


def _red_counts(s: SuiteResult) -> str:
    parts = [f"{n} {what}" for n, what in ((s.failed, "failed"), (s.broken, "broken")) if n]
    return ", ".join(parts)


# --- the markdown table ---------------------------------------------------------------------


@dataclass
class Rate:
    """Per fault kind over a run's draws: how many were detected, how many named."""

    draws: int = 0
    detected: int = 0
    named: int = 0
    targets: list[str] = field(default_factory=list)

    @staticmethod
    def pct(n: int, of: int) -> str:
        return f"{100 * n / of:.0f}%" if of else "—"


def rates(verdicts: Sequence[CaseVerdict]) -> dict[str, Rate]:
    """Per fault kind (combined rows count for each of their faults)."""
    out: dict[str, Rate] = {}
    for v in verdicts:
        for f in v.faults:
            r = out.setdefault(f.kind, Rate())
            r.draws += 1
            r.detected += f.detected
            r.named += f.detected and f.named
            r.targets.append(f.target or "(every switch)")
    return out


def render_rates(verdicts: Sequence[CaseVerdict]) -> list[str]:
    lines = [
        "| fault kind | draws | detected | culprit named | detection rate | "
        "culprit-naming rate | targets drawn |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, r in sorted(rates(verdicts).items()):
        lines.append(
            f"| `{kind}` | {r.draws} | {r.detected} | {r.named} | "
            f"{Rate.pct(r.detected, r.draws)} | {Rate.pct(r.named, r.draws)} | "
            + ", ".join(f"`{t}`" for t in r.targets)
            + " |"
        )
    healthy = [v for v in verdicts if v.run.case.healthy]
    if healthy:
        false = sum(not v.ok for v in healthy)
        seeds = ", ".join(str(v.run.case.seed) for v in healthy)
        lines.append(
            f"| healthy lab | {len(healthy)} | — | — | — | — | seeds {seeds}: "
            f"{false} with a false failure |"
        )
    combined = [v for v in verdicts if len(v.faults) > 1]
    if combined:
        both = sum(all(f.detected and f.named for f in v.faults) for v in combined)
        lines.append(
            f"| combined rows | {len(combined)} | — | — | — | — | "
            f"both faults caught and named in {both} of {len(combined)} |"
        )
    return lines


def render(
    verdicts: Sequence[CaseVerdict], *, title_note: str = "", appendix: Sequence[str] = ()
) -> str:
    """The matrix: the per-kind rates, a row per case and a column per suite family, the
    evidence, then ``appendix`` (the domains the draws came from)."""
    suites = _columns(verdicts)
    lines = [
        "# Fault-detection matrix",
        "",
        "Generated by `python -m labtest.matrix` (the engine is `labtest/matrix/`, the",
        "draws `labtest/matrix/draws.py`, the fault domains `tests/matrix/matrix_data.py`);",
        "do not edit by hand. Each row is a copy of the default emulated lab",
        "(`testbeds/emulated/leafspine.yaml`) with faults from the catalogue (`docs/faults.md`)",
        "injected at targets and with parameters drawn at random from each fault's domain",
        "(seeded: the seed is below), run through `labtest run`. A suite meant to catch a fault",
        "must fail and every one of its failures must name a culprit derived from the drawn",
        "target (the port, its link, the far end); every other suite must pass, or fail only",
        "where the fault is (*consequence*: each failure names a culprit, itself or through",
        "the run's root-cause analysis); *broken* is allowed only for an unreachable device,",
        "and must name it.",
        "",
    ]
    if title_note:
        lines += [title_note, ""]
    lines += ["## Per fault kind", "", *render_rates(verdicts), "", "## Rows", ""]
    head = ["row", "injected", "meant to catch", *suites, "verdict", "wall / CPU s"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in verdicts:
        case = v.run.case
        label = case.name if not case.healthy else f"healthy lab (seed {case.seed})"
        catch = (" or " if case.catch_any else ", ").join(case.catches) or "—"
        row = [
            f"`{label}`" if not case.healthy else label,
            case.describe(),
            catch,
            *(_cell(v.cells.get(s)) for s in suites),
            "ok" if v.ok else "**WRONG**",
            f"{v.run.wall_s:.0f} / " + (f"{v.run.cpu_s:.0f}" if v.run.cpu_s is not None else "?"),
        ]
        lines.append("| " + " | ".join(row) + " |")
    wall_s = sum(v.run.wall_s for v in verdicts)
    cpu_s = sum(v.run.cpu_s or 0.0 for v in verdicts)
    good = sum(v.ok for v in verdicts)
    lines += [
        "",
        f"{good} of {len(verdicts)} rows as designed. The runs took {wall_s:.0f} s "
        f"of wall time and {cpu_s:.0f} CPU-seconds (CPU time does not depend on what "
        "else shares the machine; wall time does).",
        "",
    ]
    lines += _evidence(verdicts)
    wrong = [v for v in verdicts if not v.ok]
    if wrong:
        lines += ["## What went wrong", ""]
        for v in wrong:
            lines += [f"- `{v.run.case.name}`: " + "; ".join(v.problems)]
        lines.append("")
    if appendix:
        lines += [*appendix, ""]
    return "\n".join(lines)


def _columns(verdicts: Sequence[CaseVerdict]) -> list[str]:
    seen = {s for v in verdicts for s in v.run.suites_run}
    rank = {name: i for i, name in enumerate(SUITE_ORDER)}
    return sorted(seen, key=lambda n: (rank.get(n, len(rank)), n))


def _cell(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    text = cell.text.replace("|", "/")
    return f"**{text}**" if text.startswith(("FAIL", "BROKEN", "ERROR")) else text


def _evidence(verdicts: Sequence[CaseVerdict]) -> list[str]:
    """The failure text behind every red cell: what an operator would read."""
    lines = [
        "## Evidence",
        "",
        "What the red cells' tests said (first failing line; the",
        "culprit `labtest run` derives from the failing measurements).",
        "",
    ]
    for v in verdicts:
        red = [(s, t) for s, r in v.run.suites.items() for t in r.red]
        if not red:
            continue
        lines.append(f"**{v.run.case.name}** — {v.run.case.note or v.run.case.describe()}")
        lines.append("")
        for suite, t in red[:EVIDENCE_LINES]:
            # the culprit `labtest run` derives from measurement labels, when it adds something
            derived = "labtest.errors." not in t.culprit and t.culprit not in t.gist
            named = f" — culprit: {t.culprit}" if t.culprit and derived else ""
            named += f" — {t.root}" if t.root else ""
            lines.append(f"- {suite} `{t.name}` {t.outcome}: {t.gist}{named}")
        if len(red) > EVIDENCE_LINES:
            lines.append(f"- … and {len(red) - EVIDENCE_LINES} more")
        lines.append("")
    return lines
