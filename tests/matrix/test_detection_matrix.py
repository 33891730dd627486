"""The fault-detection matrix (issues 8, 14, 19, 23) as CI runs it: faults drawn at random
from each fault kind's domain with a FIXED seed (``matrix_data.CI_PLAN``: one draw per kind,
forced extras for host links, EOS and the issues' placements, two combined rows), injected
into the emulated lab; every suite runs on every row. The suite meant to catch each fault
must fail naming a culprit derived from the drawn target; any other suite passes, or fails
only where the fault is (a flapping host link spoils the incasts into that host: a
consequence, shown as such, and it must name the culprit itself or through the run's
root-cause analysis); healthy rows (seeds drawn too) fail nothing. The seed and every draw
are printed in pytest's header (``conftest.py``). Rows ``nxos-*`` run on the lab with an
NX-OS leaf (``matrix_data.NXOS_PLAN``), each kind drawn at an NX-OS end.

Every case is a real ``labtest run`` (see ``labtest.matrix``), ``JOBS`` at a time, each its
own lab: a run waits on its emulated clock part of the time, so three share two cores
better than two. A fault row runs the suites meant to catch it, those it may fail or spoil,
and the cheap others (``suites_for``); ``LABTEST_MATRIX_FULL=1`` runs every suite on
every row. Other seeds and more draws:
``python -m labtest.matrix --random --seed N --draws K``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from matrix_data import CI_PLAN, DOMAINS, NXOS_PLAN, NXOS_TESTBED

from labtest import matrix
from labtest.matrix import Case, Runner, cli
from labtest.matrix.draws import draw_cases
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
JOBS = int(os.environ.get("LABTEST_MATRIX_JOBS", "3"))
FULL = os.environ.get("LABTEST_MATRIX_FULL") == "1"
#: per case: it only bounds a hang (a full row takes ~2-4 min on a busy 2-core machine)
CASE_TIMEOUT_S = 900.0

NXOS = REPO / NXOS_TESTBED
#: CI's rows: fixed seed CI_PLAN.seed (printed in the header), drawn from the domains; then
#: NXOS_PLAN's on the lab with an NX-OS leaf, at its NX-OS ends (rows named nxos-...)
CASE_LIST: list[Case] = draw_cases(CI_PLAN, DOMAINS, load_testbed(LEAFSPINE)) + [
    dataclasses.replace(c, name=f"nxos-{c.name}", base=str(NXOS))
    for c in draw_cases(NXOS_PLAN, DOMAINS, load_testbed(NXOS))]
#: rough wall seconds of each suite on this lab (measured on a busy 2-core machine): the
#: longest runs are queued first, so the two job slots finish together
SUITE_COST_S = {"roce": 100, "congestion": 90, "failover": 60, "transceiver": 25,
                "collective": 15, "paths": 10, "link": 10, "cabling": 5, "routing": 5}

# CI sets LABTEST_MATRIX=1 (see docs/detection-matrix.md)
pytestmark = [pytest.mark.slow,
              pytest.mark.matrix_stage("the fault-detection matrix", "30-40 min")]


def suites_for(case: Case) -> list[str]:
    """The suites of a row. The healthy labs run every suite (each suite's false-alarm
    proof, three seeds and the NX-OS lab). A fault row runs its catchers, the suites it may
    fail (``also``), the traffic suites it spoils (``spoils``: consequences that must name
    it) and the cheap bystanders; the expensive traffic suites (roce, congestion, latency,
    failover) a fault cannot reach are left out (a hot module or a firmware string moves
    no frame). The NX-OS fault rows prove each kind's catchers at an NX-OS end (vendor
    parity); their consequences are proven on the main plan's rows. A full row costs
    ~110-160 CPU s, the four traffic suites 77 % of it; CI's stop 52 matrix took 50.5 min
    and the whole run would have passed 88 of the 90 minutes.
    ``LABTEST_MATRIX_FULL=1`` runs every suite on every row."""
    if FULL:
        return []
    return matrix.reduced_suites(case, consequences=case.base is None)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    runs = Runner(tmp_path_factory.mktemp("matrix"), jobs=JOBS)
    for case in sorted(CASE_LIST, key=lambda c: -_cost_s(suites_for(c))):
        suites = suites_for(case)  # all queued at once: JOBS labs run side by side
        runs.start(case, suites, CASE_TIMEOUT_S)
    yield runs
    out = os.environ.get("LABTEST_MATRIX_OUT")
    if out:  # the table of this run, e.g. to refresh docs/detection-matrix.md from CI's rows
        verdicts = [matrix.judge(runs.result(c.name)) for c in CASE_LIST if c.base is None]
        note = (f"Draws of CI_PLAN, seed {CI_PLAN.seed}; rows as CI runs them "
                f"({'every suite' if FULL else 'reduced'}), {JOBS} at a time.\n\n"
                f"{cli.CI_NOTE}")
        appendix = cli.domains_appendix(matrix.load_data(), LEAFSPINE)
        Path(out).write_text(matrix.render(verdicts, title_note=note, appendix=appendix),
                             encoding="utf-8")
    runs.close()


@pytest.mark.parametrize("case", CASE_LIST, ids=[c.name for c in CASE_LIST])
def test_detection_matrix(case: Case, runner: Runner) -> None:
    run = runner.result(case.name)
    verdict = matrix.judge(run)
    cells = {s: c.text for s, c in verdict.cells.items()}
    log = _tail(run.log)
    assert verdict.ok, f"{case.name}: {cells}\n" + "\n".join(verdict.problems) + f"\n{log}"
    # the judgement is about the suites it was asked to run: none may be missing
    assert set(cells) == set(run.suites_run) and cells, f"{case.name}: {cells}\n{log}"
    if case.healthy:  # 0 false failures
        assert all(c in (matrix.PASS, "skipped") for c in cells.values()), cells
    elif case.unreachable:
        assert cells[case.catches[0]] == f"BROKEN ({case.unreachable} named)", cells
    else:  # every drawn fault caught with its culprit named (>= 95% per kind, ~1 draw each)
        missed = [f for f in verdict.faults if not (f.detected and f.named)]
        assert len(verdict.faults) == len(case.faults) and not missed, (missed, cells)
        assert all(cells[s] == matrix.CAUGHT for e in case.expects for s in e.catches
                   if not e.catch_any), cells


def _cost_s(suites: list[str]) -> float:
    return sum(SUITE_COST_S.get(s, 60) for s in suites or SUITE_COST_S)


def _tail(log: Path | None, chars: int = 3000) -> str:
    if log is None or not log.is_file():
        return ""
    return log.read_text(errors="replace")[-chars:]
