"""``labtest run``: the suites, with sensible defaults, then a verdict table per suite.

pytest runs the selected ``suites/<family>`` folders in a child process with
the plugin's options (testbed, emulation, limits, results directory). Its own
output streams through; afterwards the table is built from the run's
``labtest-results.json`` (written by the reporting plugin), so the verdicts are
exactly the ones a sign-off will show. It leads with the root causes (the few
faults that explain the failures), then per suite passed / failed (a product
missed a limit) / broken (the lab could not be asked) / skipped and coverage
(required cells proven or waived / required), the failing items with their
culprit, and what was not proven. The run is PASS only when every required
cell is proven or waived; see ``labtest.measure.coverage``.

An interrupted run (Ctrl-C, SIGTERM, ``kill -INT``) is passed to pytest as SIGINT, so its
teardown restores the devices destructive tests touched before it exits; so is the death
of ``labtest run`` itself, even by SIGKILL (``labtest.interrupt``): no orphan runs on.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TextIO

import labtest.suites
import labtest.testbeds
from labtest import exits, interrupt
from labtest.outcome import culprit
from labtest.reports import RESULTS_FILE, results

#: the source checkout (only meaningful there: the matrix and tests use it)
REPO = Path(__file__).resolve().parent.parent
#: the built-in suites and testbeds ship inside the package (``suites/`` in the checkout)
SUITES_DIR = Path(labtest.suites.__file__).resolve().parent
DEFAULT_TESTBED = Path(labtest.testbeds.__file__).resolve().parent / "emulated" / "leafspine.yaml"
#: relative to where ``labtest run`` is started, like pytest's own outputs
DEFAULT_RESULTS = Path("reports") / "allure-results"
#: a lab project's own testbed and suites (``labtest init``), relative to where it runs
PROJECT_TESTBED = Path("testbed.yaml")
PROJECT_SUITES = Path("suites")
#: packages whose sub-folders are suite families (``labtest.suites`` ships the built-in ones)
SUITES_GROUP = "labtest.suites"
#: the order suites run in: the physical layer first, then traffic
#: every suite of the product, in run order (paths and routing last, as they always ran)
SUITE_ORDER = (
    "link", "transceiver", "cabling", "roce", "congestion", "latency", "failover", "collective",
    "paths", "routing",
)
INTERRUPT_GRACE_S = 300.0  # how long an interrupted pytest may take to restore devices

EXIT_OK, EXIT_VERDICT, EXIT_USAGE, EXIT_NO_RESULTS = (exits.PASS, exits.FAIL, exits.USAGE,
                                                     exits.NO_RESULTS)
EXIT_INCOMPLETE, EXIT_BROKEN = exits.INCOMPLETE, exits.BROKEN
#: interrupted (Ctrl-C, SIGTERM, kill -INT): pytest's own status for it
EXIT_INTERRUPTED = exits.USAGE
EXIT_BY_VERDICT = exits.BY_VERDICT


class RunError(Exception):
    """The run could not be started (unknown suite, missing testbed)."""


@dataclass
class RunOptions:
    testbed: Path = DEFAULT_TESTBED
    emulate: bool | None = None  # None: the testbed's emulation: section decides
    suites: list[str] = field(default_factory=list)  # empty: every suite
    limits: Path | None = None
    alluredir: Path = DEFAULT_RESULTS
    pytest_args: list[str] = field(default_factory=list)
    #: one folder of suite families; None: every installed suite package plus ./suites
    suites_dir: Path | None = None


def default_testbed() -> Path:
    """The lab project's ``testbed.yaml`` where there is one, else the emulated default lab."""
    return PROJECT_TESTBED if PROJECT_TESTBED.is_file() else DEFAULT_TESTBED


def suite_roots() -> list[Path]:
    """Folders whose sub-folders are suite families: installed suite packages, then ./suites."""
    roots: list[Path] = []
    for ep in entry_points(group=SUITES_GROUP):
        package = ep.load()
        roots.append(Path(package.__file__).resolve().parent)
    local = PROJECT_SUITES.resolve()
    if local.is_dir():
        roots.append(local)
    return list(dict.fromkeys(roots))


def suite_folders(suites_dir: Path | None = None) -> dict[str, Path]:
    """Suite family -> its folder (one holding ``test_*.py``), physical layer first."""
    found: dict[str, Path] = {}
    for root in [suites_dir] if suites_dir is not None else suite_roots():
        for folder in sorted({p.parent for p in root.glob("*/test_*.py")}):
            other = found.setdefault(folder.name, folder)
            if other != folder:
                raise RunError(f"suite {folder.name!r} is defined twice: {other} and {folder}")
    rank = {name: i for i, name in enumerate(SUITE_ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def available_suites(suites_dir: Path | None = None) -> list[str]:
    """Suite family names, physical layer first."""
    return list(suite_folders(suites_dir))


def pytest_command(opts: RunOptions) -> list[str]:
    folders = suite_folders(opts.suites_dir)
    known = list(folders)
    wanted = opts.suites or known
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise RunError(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if not opts.testbed.is_file():
        raise RunError(f"testbed {opts.testbed} does not exist")
    ordered = [s for s in known if s in wanted]
    cmd = [sys.executable, "-m", "pytest", *(str(folders[s]) for s in ordered)]
    cmd += ["--testbed", str(opts.testbed), "--alluredir", str(opts.alluredir)]
    cmd.append("--clean-alluredir")  # one run per results directory
    if opts.emulate is not None:  # else the plugin applies the one rule to the testbed
        cmd.append("--emulate" if opts.emulate else "--no-emulate")
    if opts.limits is not None:
        cmd += ["--limits", str(opts.limits)]
    return cmd + opts.pytest_args


def run(opts: RunOptions, out: TextIO = sys.stdout) -> int:
    """Run pytest, print the verdict table; 0 only for PASS (1 FAIL, 6 INCOMPLETE, 7 BROKEN:
    the testbed was refused or the lab did not start)."""
    cmd = pytest_command(opts)
    refused = testbed_problems(opts.testbed)
    if refused:  # before any lab starts: a fault it cannot inject is not a test's failure
        for problem in refused:
            print(f"labtest run: BROKEN: {problem}", file=out)
        return EXIT_BROKEN
    print(f"labtest run: {' '.join(cmd[3:])}", file=out, flush=True)
    start = time.monotonic()
    written = _stamp(opts.alluredir / RESULTS_FILE)  # a previous run's, if any
    status, interrupted = _run_child(cmd, cwd=Path.cwd())
    elapsed_s = time.monotonic() - start
    if status < 0:  # pytest died of a signal, as a shell says it
        status = 128 - status
    if status in (0, 1):  # pytest ran to its end: an interrupt came after it
        interrupted = False
    if status == EXIT_BROKEN:  # the child said why, located, in one line
        print("labtest run: BROKEN: the lab did not start; nothing was judged", file=out)
        return EXIT_BROKEN
    stale = _stamp(opts.alluredir / RESULTS_FILE) in (None, written)
    if interrupted and stale:
        print(f"labtest run: interrupted after {elapsed_s:.0f} s, before any result; "
              "nothing was judged", file=out)
        return EXIT_INTERRUPTED
    try:
        if stale:  # never a verdict from the results a previous run left in the folder
            raise results.ResultsError(f"{opts.alluredir}: this run wrote no {RESULTS_FILE}")
        doc = results.load(opts.alluredir)
    except results.ResultsError as exc:
        print(f"labtest run: no results ({exc}); pytest exited with {status}", file=out)
        return EXIT_NO_RESULTS if status in (0, 1) else status
    table = verdict_table(doc.get("tests", []), results.verdict_of(doc))
    print(format_table(table, elapsed_s, color=_isatty(out)), file=out)
    if interrupted:
        print("labtest run: interrupted: the table judges only the tests that ran", file=out)
        return EXIT_INTERRUPTED
    if status not in (0, 1):
        return status
    if not any(s.total for s in table.suites.values()):
        return EXIT_NO_RESULTS
    return EXIT_BY_VERDICT[table.verdict]


def _stamp(path: Path) -> tuple[int, int] | None:
    """Which file is there (inode, mtime): results are written whole, to a new inode."""
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def testbed_problems(path: Path) -> list[str]:
    """The testbed's located problems, faults included (``labtest.testbed.faultcheck``).
    Drivers are left to the pytest session: a lab's conftest may register its own."""
    from labtest.errors import ConfigError
    from labtest.testbed import load_testbed

    try:
        load_testbed(path, check_drivers=False)
    except ConfigError as exc:
        return list(exc.problems)
    return []


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _run_child(cmd: list[str], cwd: Path) -> tuple[int, bool]:
    """The pytest child; SIGTERM/SIGINT reach it as SIGINT so its teardown restores devices.

    Every interrupt is passed on (``kill -INT`` of this process alone must stop the run;
    on Ctrl-C the child takes the terminal's and ours as one, see ``labtest.interrupt``),
    and the child gets SIGTERM, taken as Ctrl-C, when this process dies, even by SIGKILL:
    no orphan runs on. Returns pytest's status and whether the run was interrupted.
    """
    me = os.getpid()
    child = subprocess.Popen(
        cmd, cwd=cwd, env=interrupt.child_env(me),
        preexec_fn=functools.partial(interrupt.die_with_parent, me),
    )
    previous = signal.getsignal(signal.SIGTERM)

    interrupted = False

    def forward(signum: int, frame: Any) -> None:
        nonlocal interrupted
        interrupted = True
        if child.poll() is None:
            child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, forward)
    deadline: float | None = None  # set by the first interrupt: the child's grace
    try:
        while True:
            try:
                if deadline is None:
                    return child.wait(), interrupted
                return child.wait(max(0.0, deadline - time.monotonic())), interrupted
            except KeyboardInterrupt:
                forward(signal.SIGINT, None)
                if deadline is None:
                    deadline = time.monotonic() + INTERRUPT_GRACE_S
            except subprocess.TimeoutExpired:
                child.kill()
                return child.wait(), interrupted
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- the verdict table ---------------------------------------------------------------------


@dataclass
class SuiteVerdict(results.SuiteTally):
    attention: list[tuple[str, str, str]] = field(default_factory=list)  # name, outcome, culprit
    proven: int = 0  # required cells proven or waived
    required: int = 0


@dataclass
class VerdictTable:
    suites: dict[str, SuiteVerdict]
    verdict: str = "PASS"  # PASS | INCOMPLETE | FAIL (labtest.measure.coverage.run_verdict)
    reasons: list[str] = field(default_factory=list)
    headline: str = ""  # e.g. "87/102 required cells proven; not proven: ..."
    #: per requirement with holes: its head line and one line per unproven cell
    holes: list[tuple[str, list[str]]] = field(default_factory=list)
    root_causes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def bad(self) -> bool:
        return any(s.failed or s.broken for s in self.suites.values())


def verdict_table(
    tests: Iterable[dict[str, Any]], verdict: dict[str, Any] | None = None
) -> VerdictTable:
    """Per suite counts and coverage; ``verdict`` is the results document's verdict record
    (without one, only the test outcomes decide: FAIL if any failed or broke)."""
    suites = results.tally(tests, SuiteVerdict)
    causes = (verdict or {}).get("root_causes") or []
    because = results.consequence_texts(causes)
    upstream = results.upstream_of_evidence(causes)
    for suite in suites.values():
        for t in suite.red_tests:
            who = culprit(t)
            if t.get("nodeid") in because:
                who = f"{who} (consequence of {because[t['nodeid']]})"
            elif t.get("nodeid") in upstream:
                who = f"{who} (perhaps a consequence of {upstream[t['nodeid']]})"
            suite.attention.append((t.get("name", t.get("nodeid", "?")), t["outcome"], who))
    by_suite = ((verdict or {}).get("coverage") or {}).get("by_suite") or {}
    for name, cov in by_suite.items():
        suite = suites.setdefault(name, SuiteVerdict())
        suite.proven, suite.required = int(cov["proven"]), int(cov["required"])
    rank = {name: i for i, name in enumerate(SUITE_ORDER)}
    ordered = sorted(suites, key=lambda n: (rank.get(n, len(rank)), n))
    table = VerdictTable({name: suites[name] for name in ordered}, root_causes=list(causes))
    if verdict is not None:
        table.verdict, table.reasons = verdict["verdict"], list(verdict.get("reasons") or [])
        table.headline = str(verdict.get("headline") or "")
        for req in (verdict.get("coverage") or {}).get("requirements", []):
            cells = [c for c in req["cells"] if c["status"] in ("not proven", "broken")]
            if cells:
                head = (f"{req['id']}: proven on {req['proven']}/{req['required']} "
                        f"{req['unit']}(s)")
                table.holes.append((head, [
                    f"{c['unit']}: " + ("BROKEN: " if c["status"] == "broken" else "")
                    + c["reason"] for c in cells]))
            if req["broken"] or req["not_proven"]:
                table.reasons = [r for r in table.reasons
                                 if not r.removeprefix("also ").startswith(req["id"] + ":")]
    elif table.bad:
        table.verdict = "FAIL"
    return table


#: ANSI colours of the verdict banner (amber for INCOMPLETE)
BANNER_COLOR = {"PASS": "\033[1;32m", "INCOMPLETE": "\033[1;33m", "FAIL": "\033[1;31m"}
MAX_LISTED = 12


def format_table(table: VerdictTable, elapsed_s: float, color: bool = False) -> str:
    lines = [""]
    if table.root_causes:
        lines.append("root causes (most likely first):")
        for i, c in enumerate(table.root_causes, 1):
            lines.append(f"  {i}. {c['cause']}")
            for ev in c.get("evidence", [])[:3]:
                lines.append(f"       evidence: {ev}")
            if c.get("not_runner_up"):
                lines.append(f"       {c['not_runner_up']}")
            if c.get("downstream_of"):
                lines.append(f"       perhaps a consequence of {c['downstream_of']}: every "
                             "traffic failure it explains crossed it")
            for cost in c.get("impact", []):
                lines.append(f"       costs: {cost}")
            if c.get("consequences"):
                names = [n.rsplit("::", 1)[-1] for n in c["consequences"]]
                more = f" (+{len(names) - 4} more)" if len(names) > 4 else ""
                lines.append(f"       explains {len(names)} other failure(s): "
                             + ", ".join(names[:4]) + more)
        lines.append("")
    lines.append(f"{'suite':<14}{'passed':>8}{'failed':>8}{'broken':>8}{'skipped':>9}"
                 f"{'coverage':>11}")
    for name, s in table.suites.items():
        cov = f"{s.proven}/{s.required}" if s.required else "-"
        lines.append(f"{name:<14}{s.passed:>8}{s.failed:>8}{s.broken:>8}{s.skipped:>9}{cov:>11}")
    for name, s in table.suites.items():
        for test, outcome, who in s.attention:
            lines.append(f"  {outcome.upper():<7} {name}: {test}: {who}")
    if table.verdict != "PASS" and (table.reasons or table.holes):
        lines.append("not proven:" if table.verdict == "INCOMPLETE" else "why:")
        for reason in table.reasons[:MAX_LISTED]:
            lines.append(f"  {reason}")
        if len(table.reasons) > MAX_LISTED:
            lines.append(f"  (+{len(table.reasons) - MAX_LISTED} more in the sign-off)")
        if table.holes and table.verdict == "FAIL":
            lines.append("also not proven:")
        for head, cells in table.holes:
            lines.append(f"  {head}; not proven on:")
            lines += [f"    {c}" for c in cells[:MAX_LISTED]]
            if len(cells) > MAX_LISTED:
                lines.append(f"    (+{len(cells) - MAX_LISTED} more in the sign-off)")
    banner = f"verdict: {table.verdict} ({elapsed_s:.0f} s)"
    if table.headline:
        banner += f": {table.headline}"
    if color:
        banner = f"{BANNER_COLOR.get(table.verdict, '')}{banner}\033[0m"
    lines.append(banner)
    return "\n".join(lines)
