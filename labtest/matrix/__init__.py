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
(``labtest.matrix.draws``; the domains are ``tests/matrix/matrix_data.py``), so the
suites cannot be tuned to fixed placements; a row may carry two faults at once, and
each is judged on its own (caught, culprit named). Per fault kind the run reports the
detection and culprit-naming rates.

``python -m labtest.matrix`` runs CI's draws (``--random --seed N --draws K`` others,
``--list`` prints them, ``--only ROW`` runs a few) and writes the markdown
(``docs/detection-matrix.md``); ``tests/matrix`` runs CI's draws as a test.

The parts: ``cases`` (what a row is), ``draws`` (where its faults go), ``runner``
(running a row in a child), ``judge`` (the verdict and the markdown), ``cli`` (the
command line, ``python -m labtest.matrix``); this package names the library's parts for
callers.
"""

from labtest.matrix.cases import (
    BYSTANDERS,
    DEFAULT_CASES,
    DEFAULT_SEEDS,
    Case,
    Expect,
    faulted_testbed,
    healthy_case,
    load_cases,
    load_data,
    reduced_suites,
)
from labtest.matrix.judge import (
    BROKEN_NAMED,
    CAUGHT,
    CONSEQUENCE,
    EVIDENCE_LINES,
    PASS,
    CaseVerdict,
    Cell,
    FaultOutcome,
    Rate,
    judge,
    names,
    rates,
    render,
    render_rates,
)
from labtest.matrix.runner import (
    CASE_TIMEOUT_S,
    RUN_META,
    STOP_GRACE_S,
    CaseRun,
    RedTest,
    Runner,
    SuiteResult,
    case_suites,
    child_main,
    load_run,
    root_causes_of,
    stop,
)

__all__ = [
    "BROKEN_NAMED",
    "BYSTANDERS",
    "CASE_TIMEOUT_S",
    "CAUGHT",
    "CONSEQUENCE",
    "DEFAULT_CASES",
    "DEFAULT_SEEDS",
    "EVIDENCE_LINES",
    "PASS",
    "RUN_META",
    "STOP_GRACE_S",
    "Case",
    "CaseRun",
    "CaseVerdict",
    "Cell",
    "Expect",
    "FaultOutcome",
    "Rate",
    "RedTest",
    "Runner",
    "SuiteResult",
    "case_suites",
    "child_main",
    "faulted_testbed",
    "healthy_case",
    "judge",
    "load_cases",
    "load_data",
    "load_run",
    "names",
    "rates",
    "reduced_suites",
    "render",
    "render_rates",
    "root_causes_of",
    "stop",
]
