"""Running matrix cases: each one ``labtest run`` in a child process with a timeout, and
its results read back per suite family (kept out of the parent so a hang can be killed).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labtest import stackdump
from labtest.matrix.cases import Case, faulted_testbed
from labtest.measure.rootcause import explained_by, root_causes
from labtest.reports import results
from labtest.run import DEFAULT_TESTBED, REPO, SUITES_DIR, culprit

CASE_TIMEOUT_S = 900.0
STOP_GRACE_S = 30.0  # after a timeout: time for pytest's teardown before the kill
#: the row's processes write every thread's stack to its folder on request (``stackdump``)
STACKS_PLUGIN = ("-p", "labtest.stackdump")
RUN_META = "run.json"  # per case directory: suites, exit status, error, wall time


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


def case_suites(
    result_tests: Iterable[dict[str, Any]], roots: Mapping[str, str] | None = None
) -> dict[str, SuiteResult]:
    """Per suite family: outcome counts and the red tests' messages (and, from ``roots``,
    nodeid -> the root cause a failure is a consequence of)."""
    suites = results.tally(result_tests, SuiteResult)
    for s in suites.values():
        s.red = [
            RedTest(
                t.get("name", t["nodeid"]),
                t["outcome"],
                t.get("message") or "",
                culprit(t),
                t.get("device"),
                (roots or {}).get(str(t.get("nodeid")), ""),
            )
            for t in s.red_tests
        ]
    return suites


def root_causes_of(doc: Mapping[str, Any]) -> dict[str, str]:
    """nodeid -> what the verdict's root-cause analysis (``labtest.measure.rootcause``)
    explains it by: "consequence of <culprit>: <cause>", or "evidence of <culprit>: <cause>"
    for a test whose own measurements name the culprit (an ECMP share that names the switch
    by its label, and the starved member's link through the analysis)."""
    causes = root_causes(doc)
    records = [c.as_dict() for c in causes]
    direct = {n: f"evidence of {c['culprit']}: {c['cause']}{results.upstream_note(c)}"
              for c in records if c["culprit"] for n in c["tests"]}
    texts = results.consequence_texts(records)
    return direct | {n: f"consequence of {c.culprit}: {texts[n]}"
                     for n, c in explained_by(causes).items()}


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
    return CaseRun(
        case,
        meta["suites"],
        found,
        meta["wall_s"],
        meta["returncode"],
        error,
        workdir / "run.log",
        pid,
        meta.get("cpu_s"),
    )


def _child_command(opts: dict[str, Any]) -> list[str]:
    code = (
        "import sys; from labtest.matrix.runner import child_main; "
        "sys.exit(child_main(sys.argv[1]))"
    )
    return [sys.executable, "-c", code, json.dumps(opts)]


def child_main(opts_json: str) -> int:
    """In the child: one ``labtest run`` (kept out of the parent so a hang can be killed)."""
    from labtest.run import RunOptions, run

    stackdump.arm()  # $LABTEST_STACKS_DIR: the row's folder (``Runner._run_child``)
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

    def start(self, case: Case, suites: Sequence[str] = (), timeout_s: float | None = None) -> None:
        """Queue ``case`` (once) over ``suites`` (empty: every suite)."""
        if case.name not in self._futures:
            self._futures[case.name] = self._pool.submit(
                self.run_case, case, list(suites), timeout_s
            )

    def result(self, name: str) -> CaseRun:
        return self._futures[name].result()

    def run_case(self, case: Case, suites: list[str], timeout_s: float | None = None) -> CaseRun:
        workdir = self.workdir / case.name
        workdir.mkdir(parents=True, exist_ok=True)
        base = Path(case.base) if case.base is not None else self.base
        testbed = faulted_testbed(base, case, workdir / "testbed.yaml")
        alluredir, log = workdir / "results", workdir / "run.log"
        opts = {
            "testbed": str(testbed),
            "emulate": self.emulate,
            "suites": suites,
            "alluredir": str(alluredir),
            "pytest_args": [*self.pytest_args, *STACKS_PLUGIN, *case.pytest_args],
            "suites_dir": str(self.suites_dir),
        }
        start = time.monotonic()
        pid, returncode, error, cpu_s = self._run_child(
            case.name, _child_command(opts), log, timeout_s or self.timeout_s
        )
        meta = {
            "suites": suites or _available(self.suites_dir),
            "returncode": returncode,
            "error": error,
            "wall_s": time.monotonic() - start,
            "cpu_s": cpu_s,
        }
        (workdir / RUN_META).write_text(json.dumps(meta), encoding="utf-8")
        return load_run(case, workdir, pid)

    def _run_child(
        self, name: str, cmd: list[str], log: Path, timeout_s: float
    ) -> tuple[int | None, int | None, str | None, float | None]:
        """(pid, exit status, error, CPU seconds) of one child in its own process group.
        At the timeout, its processes first write every thread's stack to the row's folder
        (``log``'s): where it hung, which the kill would otherwise erase."""
        env = {**os.environ, stackdump.ENV: str(log.parent)}
        with self._lock:
            if self._closed:
                return None, None, "runner closed before the case started", None
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    cmd,
                    cwd=REPO,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                )
            self._procs[name] = proc
        try:
            returncode, cpu_s = _wait(proc, timeout_s)
            if returncode is not None:
                return proc.pid, returncode, None, cpu_s
            stacks = stackdump.request(log.parent, pgid=proc.pid)
            stop(proc)
            error = f"timed out after {timeout_s:g} s"
            if stacks:
                error += f"; thread stacks in {', '.join(str(p) for p in stacks)}"
            return proc.pid, proc.returncode, error, None
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
