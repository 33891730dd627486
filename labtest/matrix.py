"""The fault-detection matrix: each catalogued fault injected into the emulated lab, the
suites run, and a judgement on whether the suite meant to catch it did, for the right reason.

A case is one faulted copy of a testbed (or a healthy one with another seed).
It runs through ``labtest run`` in a child process bounded by a timeout, and
its ``labtest-results.json`` is judged per suite family:

- a suite meant to catch the fault must fail, and every failure must name the
  culprit (a ``device:port``, a link, a device) — a red suite that blames the
  wrong port would pass an operator's eye but not this check;
- every other suite must pass: a failure there is a false failure;
- *broken* is allowed only where the fault makes a device unreachable, and
  then every broken result must name that device; such a case expects no
  failure at all (the lab could not be asked, so nothing was judged).

Faults are placed by seeded random draws from each fault kind's domain
(``labtest.matrix_draws``; the domains are ``tests/matrix/matrix_data.py``), so the
suites cannot be tuned to fixed placements; a row may carry two faults at once, and
each is judged on its own (caught, culprit named). Per fault kind the run reports the
detection and culprit-naming rates.

``python -m labtest.matrix`` runs CI's draws (``--random --seed N --draws K`` others,
``--list`` prints them, ``--only ROW`` runs a few) and writes the markdown
(``docs/detection-matrix.md``); ``tests/matrix`` runs CI's draws as a test.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from labtest.reports import results
from labtest.run import DEFAULT_TESTBED, REPO, SUITE_ORDER, SUITES_DIR, culprit

DEFAULT_CASES = REPO / "tests" / "matrix" / "matrix_data.py"
DEFAULT_OUT = REPO / "docs" / "detection-matrix.md"
DEFAULT_SEEDS = (1, 2, 3, 4, 5)
CASE_TIMEOUT_S = 900.0
STOP_GRACE_S = 30.0  # after a timeout: time for pytest's teardown before the kill

CI_NOTE = (
    "CI runs `tests/matrix/test_detection_matrix.py` (`LABTEST_MATRIX=1`) over the draws of "
    "`matrix_data.CI_PLAN` (a fixed seed, printed before the run): the healthy rows run every "
    "suite, and each fault row the suite(s) meant to catch it plus every cheap other suite "
    "(link, transceiver, cabling, collective) to see a false failure; roce, congestion and "
    "failover run on a fault row only where they are meant to catch it "
    "(`python -m labtest.matrix --reduced` does the same)."
)
EVIDENCE_LINES = 4  # red tests quoted per row in the doc
RUN_META = "run.json"  # per case directory: suites, exit status, error, wall time

PASS, CAUGHT, BROKEN_NAMED = "pass", "FAIL (culprit named)", "BROKEN (device named)"


# --- cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What one injected fault must cause: a failure in ``catches`` naming a culprit."""

    kind: str
    target: str = ""
    catches: tuple[str, ...] = ()
    culprits: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    catch_any: bool = False  # the catchers are alternatives: one failing is a catch


@dataclass(frozen=True)
class Case:
    """One run of the matrix: a testbed with these faults (none: the healthy lab)."""

    name: str
    faults: tuple[dict[str, Any], ...] = ()
    catches: tuple[str, ...] = ()  # suite families meant to fail on it
    culprits: tuple[str, ...] = ()  # device:port, a-b link or device; a failure names one
    #: other suites the fault may rightly fail too (a dead link fails traffic as well);
    #: when they fail, they must name the culprit as a catcher does
    also: tuple[str, ...] = ()
    #: cheap suites a reduced run leaves out on this row, for a reason the note gives
    not_run: tuple[str, ...] = ()
    unreachable: str | None = None  # a device whose management plane is dead
    seed: int | None = None  # emulation.seed (None: the testbed's)
    time_scale: float | None = None  # emulation.time_scale (None: the testbed's)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-device overrides
    pytest_args: tuple[str, ...] = ()
    note: str = ""  # why this target and these parameters
    #: the catchers are alternatives: one failing naming the culprit is a catch, the
    #: others may pass or fail naming it (a host link's dirty connector: link or transceiver)
    catch_any: bool = False
    #: per fault, what it must cause (a combined row has two); empty: one, from the fields above
    parts: tuple[Expect, ...] = ()

    @property
    def healthy(self) -> bool:
        return not self.faults

    @property
    def expects(self) -> tuple[Expect, ...]:
        if self.parts or self.healthy:
            return self.parts
        f = self.faults[0]
        return (Expect(f["kind"], f.get("target", ""), self.catches, self.culprits, self.also,
                       self.catch_any),)

    def describe(self) -> str:
        """``kind@target k=v`` per fault, as a table cell."""
        if self.healthy:
            return f"no fault, seed {self.seed}" if self.seed is not None else "no fault"
        parts = []
        for f in self.faults:
            params = " ".join(f"{k}={v}" for k, v in (f.get("params") or {}).items())
            parts.append(f"`{f['kind']}@{f.get('target', '')}`" + (f" {params}" if params else ""))
        if self.time_scale is not None:
            parts.append(f"time_scale {self.time_scale:g}")
        return ", ".join(parts)


#: the cheap "other" suites (under a minute together on the default lab) a reduced run
#: adds to a fault's catchers; roce, congestion and failover (minutes each) are left out
BYSTANDERS = ("link", "transceiver", "cabling", "collective")


def reduced_suites(case: Case) -> list[str]:
    """A reduced run's suites: every suite for the healthy lab (empty list); for a fault,
    the suites meant to catch it plus every cheap other one, to see a false failure."""
    if case.healthy:
        return []
    wanted = {*case.catches, *case.also, *BYSTANDERS} - set(case.not_run)
    return [s for s in SUITE_ORDER if s in wanted]


def healthy_case(seed: int) -> Case:
    return Case(name=f"healthy-seed{seed}", seed=seed)


def load_data(path: Path = DEFAULT_CASES) -> Any:
    """The matrix data module (``CASES``, ``DOMAINS``, ``CI_PLAN``), imported by path."""
    spec = importlib.util.spec_from_file_location("labtest_matrix_data", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_cases(path: Path = DEFAULT_CASES) -> dict[str, Case]:
    """``CASES`` (fault kind -> Case, the fixed placements) from a matrix data module."""
    return dict(load_data(path).CASES)


def faulted_testbed(base: Path, case: Case, path: Path) -> Path:
    """Write a copy of ``base`` carrying the case's faults, seed and overrides to ``path``.

    The copy lives elsewhere, so its ``limits:`` is made absolute.
    """
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    if doc.get("limits"):
        doc["limits"] = str((base.parent / doc["limits"]).resolve())
    emulation = doc["emulation"] = doc.get("emulation") or {}
    emulation["faults"] = [dict(f) for f in case.faults]
    if case.seed is not None:
        emulation["seed"] = case.seed
    if case.time_scale is not None:
        emulation["time_scale"] = case.time_scale
    for name, override in case.devices.items():
        doc["devices"][name].update(override)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


# --- running --------------------------------------------------------------------------------


_HEADER = re.compile(r"\d+ measurement\(s\) outside limits:$")  # LimitFailure's first line


@dataclass
class RedTest:
    name: str
    outcome: str
    message: str  # the failure message
    culprit: str = ""  # what ``labtest run`` derives from the failing measurements
    device: str | None = None  # the device an InfraError names
    #: the root cause the run's analysis explains this failure by ("consequence of ..."):
    #: a RoCE pair failing of a switch port's MTU names the port through it
    root: str = ""

    @property
    def text(self) -> str:
        return f"{self.message}\n{self.culprit}\n{self.root}"

    @property
    def gist(self) -> str:
        """The first informative line: a failing measurement, or the error itself."""
        for line in self.message.splitlines():
            line = line.strip().removeprefix("labtest.errors.")
            line = re.sub(r" \(source: .*$", "", line)  # the limit's source: in the report
            if line and not _HEADER.search(line):
                return line if len(line) <= 220 else line[:217] + "..."
        return self.culprit


@dataclass
class SuiteResult(results.SuiteTally):
    red: list[RedTest] = field(default_factory=list)  # failed and broken tests, as judged here


@dataclass
class CaseRun:
    case: Case
    suites_run: list[str]
    suites: dict[str, SuiteResult]
    wall_s: float
    returncode: int | None
    error: str | None = None  # timeout, no results: the run itself went wrong
    log: Path | None = None
    pid: int | None = None  # the child's, also its process group's id
    cpu_s: float | None = None  # CPU time of the run (pytest included)


def case_suites(result_tests: Iterable[dict[str, Any]],
                roots: Mapping[str, str] | None = None) -> dict[str, SuiteResult]:
    """Per suite family: outcome counts and the red tests' messages (and, from ``roots``,
    nodeid -> the root cause a failure is a consequence of)."""
    suites = results.tally(result_tests, SuiteResult)
    for s in suites.values():
        s.red = [RedTest(t.get("name", t["nodeid"]), t["outcome"], t.get("message") or "",
                         culprit(t), t.get("device"), (roots or {}).get(str(t.get("nodeid")), ""))
                 for t in s.red_tests]
    return suites


def root_causes_of(doc: Mapping[str, Any]) -> dict[str, str]:
    """nodeid -> "consequence of <culprit>: <cause>", from the verdict's root-cause analysis
    (``labtest.measure.rootcause``); empty where that analysis is not installed."""
    try:
        from labtest.measure.rootcause import explained_by, root_causes
    except ImportError:
        return {}
    return {nodeid: f"consequence of {c.culprit}: {c.cause}"
            for nodeid, c in explained_by(root_causes(doc)).items()}


def load_run(case: Case, workdir: Path, pid: int | None = None) -> CaseRun:
    """A finished case from its directory (``RUN_META`` and the results), to judge again."""
    meta = json.loads((workdir / RUN_META).read_text(encoding="utf-8"))
    error, found = meta["error"], {}
    if error is None:
        try:
            doc = results.load(workdir / "results")
            found = case_suites(doc.get("tests", []), root_causes_of(doc))
        except results.ResultsError as exc:
            error = f"no results (exit {meta['returncode']}): {exc}"
    return CaseRun(case, meta["suites"], found, meta["wall_s"], meta["returncode"], error,
                   workdir / "run.log", pid, meta.get("cpu_s"))


def _child_command(opts: dict[str, Any]) -> list[str]:
    code = "import sys; from labtest.matrix import child_main; sys.exit(child_main(sys.argv[1]))"
    return [sys.executable, "-c", code, json.dumps(opts)]


def child_main(opts_json: str) -> int:
    """In the child: one ``labtest run`` (kept out of the parent so a hang can be killed)."""
    from labtest.run import RunOptions, run

    raw = json.loads(opts_json)
    opts = RunOptions(
        testbed=Path(raw["testbed"]),
        emulate=raw["emulate"],
        suites=raw["suites"],
        alluredir=Path(raw["alluredir"]),
        pytest_args=raw["pytest_args"],
        suites_dir=Path(raw["suites_dir"]),
    )
    return run(opts)


class Runner:
    """Runs cases in child processes, ``jobs`` at a time (each lab has its own ports)."""

    def __init__(
        self,
        workdir: Path,
        *,
        base: Path = DEFAULT_TESTBED,
        suites_dir: Path = SUITES_DIR,
        jobs: int = 1,
        timeout_s: float = CASE_TIMEOUT_S,
        emulate: bool = True,
        pytest_args: Sequence[str] = ("-q", "-p", "no:randomly"),
    ) -> None:
        self.workdir, self.base, self.suites_dir = workdir, base, suites_dir
        self.timeout_s, self.emulate, self.pytest_args = timeout_s, emulate, list(pytest_args)
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="matrix")
        self._futures: dict[str, Future[CaseRun]] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def start(
        self, case: Case, suites: Sequence[str] = (), timeout_s: float | None = None
    ) -> None:
        """Queue ``case`` (once) over ``suites`` (empty: every suite)."""
        if case.name not in self._futures:
            self._futures[case.name] = self._pool.submit(
                self.run_case, case, list(suites), timeout_s
            )

    def result(self, name: str) -> CaseRun:
        return self._futures[name].result()

    def run_case(
        self, case: Case, suites: list[str], timeout_s: float | None = None
    ) -> CaseRun:
        workdir = self.workdir / case.name
        workdir.mkdir(parents=True, exist_ok=True)
        testbed = faulted_testbed(self.base, case, workdir / "testbed.yaml")
        alluredir, log = workdir / "results", workdir / "run.log"
        opts = {
            "testbed": str(testbed),
            "emulate": self.emulate,
            "suites": suites,
            "alluredir": str(alluredir),
            "pytest_args": [*self.pytest_args, *case.pytest_args],
            "suites_dir": str(self.suites_dir),
        }
        start = time.monotonic()
        pid, returncode, error, cpu_s = self._run_child(
            case.name, _child_command(opts), log, timeout_s or self.timeout_s
        )
        meta = {"suites": suites or _available(self.suites_dir), "returncode": returncode,
                "error": error, "wall_s": time.monotonic() - start, "cpu_s": cpu_s}
        (workdir / RUN_META).write_text(json.dumps(meta), encoding="utf-8")
        return load_run(case, workdir, pid)

    def _run_child(
        self, name: str, cmd: list[str], log: Path, timeout_s: float
    ) -> tuple[int | None, int | None, str | None, float | None]:
        """(pid, exit status, error, CPU seconds) of one child in its own process group."""
        with self._lock:
            if self._closed:
                return None, None, "runner closed before the case started", None
            with log.open("wb") as out:
                proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            self._procs[name] = proc
        try:
            returncode, cpu_s = _wait(proc, timeout_s)
            if returncode is not None:
                return proc.pid, returncode, None, cpu_s
            stop(proc)
            return proc.pid, proc.returncode, f"timed out after {timeout_s:g} s", None
        finally:
            with self._lock:
                self._procs.pop(name, None)

    def close(self) -> None:
        """Cancel queued cases and stop running ones (their teardown restores devices)."""
        with self._lock:
            self._closed = True
            running = list(self._procs.values())
        for fut in self._futures.values():
            fut.cancel()
        for proc in running:
            stop(proc)
        self._pool.shutdown(wait=True)


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[int | None, float | None]:
    """(exit status, CPU seconds of the child and the pytest it waited for), or (None, None)
    at the timeout. CPU time does not depend on how busy the machine is; wall time does."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (close() stopping it)
            return proc.wait(), None
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() >= deadline:
            return None, None
        time.sleep(0.2)


def stop(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """SIGINT to the child's process group (pytest tears down), then SIGKILL after grace_s."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, grace_s)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue


def _available(suites_dir: Path) -> list[str]:
    from labtest.run import available_suites

    return available_suites(suites_dir)


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
        return (self.run.error is None and all(c.ok for c in self.cells.values())
                and all(f.detected and f.named for f in self.faults))

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
                cells[suite] = _judge_bystander(s)
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
    naming = any(names(t.text, c) for s in mine for t in run.suites[s].red
                 if t.outcome == results.FAILED for c in e.culprits)
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
    problems += [
        f"{t.name} failed without naming {' / '.join(culprits)}: {t.gist}"
        for t in blind
    ]
    if blind and len(blind) == len(failed):
        return Cell("FAIL (culprit not named)", False, problems)
    problems += [
        f"no failure names {e.kind}'s culprit ({' / '.join(e.culprits)})"
        for e in must if not any(names(t.text, c) for t in failed for c in e.culprits)
    ]
    text = CAUGHT if not problems else f"{CAUGHT}, also {_red_counts(s)}"
    return Cell(text, not problems, problems)


def _judge_bystander(s: SuiteResult) -> Cell:
    if not s.red:
        return Cell(PASS if s.passed else "skipped", True)
    problems = [f"{t.name} {t.outcome} (false {t.outcome}): {t.gist}" for t in s.red]
    return Cell(_red_counts(s).upper(), False, problems)


def _judge_unreachable(case: Case, suite: str, s: SuiteResult) -> Cell:
    device = case.unreachable or ""
    problems = [
        f"{t.name} {t.outcome}: " + ("must be broken, not failed" if t.outcome == results.FAILED
                                    else f"does not name {device}") + f": {t.gist}"
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
    lines = ["| fault kind | draws | detected | culprit named | detection rate | "
             "culprit-naming rate | targets drawn |", "|---|---|---|---|---|---|---|"]
    for kind, r in sorted(rates(verdicts).items()):
        lines.append(f"| `{kind}` | {r.draws} | {r.detected} | {r.named} | "
                     f"{Rate.pct(r.detected, r.draws)} | {Rate.pct(r.named, r.draws)} | "
                     + ", ".join(f"`{t}`" for t in r.targets) + " |")
    healthy = [v for v in verdicts if v.run.case.healthy]
    if healthy:
        false = sum(not v.ok for v in healthy)
        seeds = ", ".join(str(v.run.case.seed) for v in healthy)
        lines.append(f"| healthy lab | {len(healthy)} | — | — | — | — | seeds {seeds}: "
                     f"{false} with a false failure |")
    combined = [v for v in verdicts if len(v.faults) > 1]
    if combined:
        both = sum(all(f.detected and f.named for f in v.faults) for v in combined)
        lines.append(f"| combined rows | {len(combined)} | — | — | — | — | "
                     f"both faults caught and named in {both} of {len(combined)} |")
    return lines


def render(verdicts: Sequence[CaseVerdict], *, title_note: str = "",
           appendix: Sequence[str] = ()) -> str:
    """The matrix: the per-kind rates, a row per case and a column per suite family, the
    evidence, then ``appendix`` (the domains the draws came from)."""
    suites = _columns(verdicts)
    lines = [
        "# Fault-detection matrix",
        "",
        "Generated by `python -m labtest.matrix` (the engine is `labtest/matrix.py`, the",
        "draws `labtest/matrix_draws.py`, the fault domains `tests/matrix/matrix_data.py`);",
        "do not edit by hand. Each row is a copy of the default emulated lab",
        "(`testbeds/emulated/leafspine.yaml`) with faults from the catalogue (`docs/faults.md`)",
        "injected at targets and with parameters drawn at random from each fault's domain",
        "(seeded: the seed is below), run through `labtest run`. A suite meant to catch a fault",
        "must fail and every one of its failures must name a culprit derived from the drawn",
        "target (the port, its link, the far end); every other suite must pass; *broken* is",
        "allowed only for an unreachable device, and must name it.",
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
    lines += ["", f"{good} of {len(verdicts)} rows as designed. The runs took {wall_s:.0f} s "
              f"of wall time and {cpu_s:.0f} CPU-seconds (CPU time does not depend on what "
              "else shares the machine; wall time does).", ""]
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
    lines = ["## Evidence", "", "What the red cells' tests said (first failing line; the",
             "culprit `labtest run` derives from the failing measurements).", ""]
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
    from labtest.matrix_draws import draw_cases
    from labtest.testbed import load_testbed

    return draw_cases(plan, data.DOMAINS, load_testbed(testbed))


def domains_appendix(data: Any, testbed: Path) -> list[str]:
    """The doc's closing section: the domains every draw comes from, with the reasons."""
    from labtest.matrix_draws import describe_domains
    from labtest.testbed import load_testbed

    plan = data.CI_PLAN
    rows = len(drawn_cases(data, testbed, plan))
    how = [line.format(seed=plan.seed, combined=plan.combined, healthy=plan.healthy, rows=rows)
           for line in DRAWS_DOC]
    return [*how, "## Domains the draws come from", "",
            "Per fault kind: the target classes (with their strata, `class/vendor`, and how",
            "many targets each has in the default lab) and the parameter ranges, each bound",
            "with its reason.", "",
            *describe_domains(data.DOMAINS, load_testbed(testbed))]


DRAWS_DOC = [
    "## How rows are drawn and judged", "",
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
    "  `matrix_draws.blame`: a port, its far end and its link (plus the host, for a host's",
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
    ap.add_argument("--random", action="store_true",
                    help="draw --draws placements per fault kind from --seed")
    ap.add_argument("--seed", type=int, help="seed of the draws (default with --random: a "
                    "fresh one, printed)")
    ap.add_argument("--draws", type=int, default=3, help="draws per fault kind (--random)")
    ap.add_argument("--combined", type=int, default=2,
                    help="rows with two faults at once (--random; default 2)")
    ap.add_argument("--healthy", type=int, default=2,
                    help="healthy-lab rows, seeds drawn (--random; default 2)")
    ap.add_argument("--only", nargs="*", metavar="ROW",
                    help="run only these drawn rows (names as --list prints them)")
    ap.add_argument("--list", action="store_true", help="print the rows and exit")
    ap.add_argument("--fixed", action="store_true",
                    help="the previous fixed placements (CASES) instead of draws")
    ap.add_argument("--faults", nargs="*", metavar="KIND",
                    help="only these fault kinds (default: every kind; none with --faults alone)")
    ap.add_argument("--seeds", nargs="*", type=int, default=list(DEFAULT_SEEDS),
                    help="healthy-lab seeds with --fixed (default: 1 2 3 4 5)")
    ap.add_argument("--suite", action="append", default=[], dest="suites", metavar="NAME",
                    help="run only these suite families (default: all)")
    ap.add_argument("--reduced", action="store_true",
                    help="per fault the catching suite(s) and the cheap others (as CI does)")
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="matrix data module")
    ap.add_argument("--testbed", type=Path, default=DEFAULT_TESTBED, help="base testbed")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("--timeout-s", type=float, default=CASE_TIMEOUT_S, help="per case")
    ap.add_argument("--workdir", type=Path, help="where runs go (default: a temp dir)")
    ap.add_argument("--rejudge", action="store_true",
                    help="do not run: judge the finished runs in --workdir again")
    args = ap.parse_args(argv)
    if args.reduced and args.suites:
        ap.error("--reduced chooses the suites itself; drop --suite")
    if args.rejudge and args.workdir is None:
        ap.error("--rejudge needs the --workdir of a finished matrix")
    if args.random and args.fixed:
        ap.error("--random and --fixed exclude each other")

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
        from labtest.matrix_draws import Plan

        if args.random:
            seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
            plan = Plan(seed=seed, draws=args.draws, combined=args.combined,
                        healthy=args.healthy,
                        kinds=tuple(args.faults) if args.faults is not None else None)
        else:
            plan = data.CI_PLAN
            if args.faults is not None:
                plan = replace(plan, kinds=tuple(args.faults), extra=tuple(
                    x for x in plan.extra if x[0] in args.faults))
        unknown = [k for k in plan.kinds or () if k not in data.DOMAINS]
        if unknown:
            ap.error(f"no domain for {', '.join(unknown)}; known: {', '.join(data.DOMAINS)}")
        cases = drawn_cases(data, args.testbed, plan)
        drawn = (f"seed {plan.seed}: {plan.draws} draw(s) per fault kind, "
                 f"{len(plan.extra)} forced extra(s), {plan.combined} combined row(s), "
                 f"{plan.healthy} healthy row(s)")
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
        verdicts = run_matrix(cases, workdir, suites_for=suites_for, jobs=args.jobs,
                              timeout_s=args.timeout_s, progress=progress, base=args.testbed)
        note = f"Draws: {drawn}.\n\n" + _run_note(args, time.monotonic() - started)
        (workdir / "note.md").write_text(note, encoding="utf-8")
    args.out.write_text(render(verdicts, title_note=note, appendix=appendix), encoding="utf-8")
    (workdir / "verdicts.json").write_text(
        json.dumps([_record(v) for v in verdicts], indent=2, default=str), encoding="utf-8")
    print(f"matrix: wrote {args.out} ({sum(v.ok for v in verdicts)}/{len(verdicts)} ok); "
          f"runs and logs in {workdir}")
    return 0 if all(v.ok for v in verdicts) else 1


def _run_note(args: argparse.Namespace, elapsed_s: float) -> str:
    """When, which suites, how long, and how busy the machine was."""
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    suites = ", ".join(args.suites) or "every suite"
    if args.reduced:
        suites = "the catching suite(s) and the cheap others (reduced, as CI)"
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"Run {when}: {suites} on each row, {args.jobs} rows at a time, "
            f"{elapsed_s / 60:.1f} min wall in all on a {os.cpu_count()}-core machine "
            f"(load average {load} at the end: other jobs shared it).\n\n{CI_NOTE}")


def _record(v: CaseVerdict) -> dict[str, Any]:
    return {"case": asdict(v.run.case), "ok": v.ok, "problems": v.problems,
            "cells": {s: c.text for s, c in v.cells.items()}, "wall_s": v.run.wall_s,
            "faults": [asdict(f) for f in v.faults]}


if __name__ == "__main__":
    sys.exit(main())
