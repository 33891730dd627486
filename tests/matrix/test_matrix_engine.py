"""The matrix engine on its own: culprit matching, faulted testbed copies, the judgement,
the markdown, and real ``labtest run`` children over a tiny fake suite folder (no lab:
two fake families read the testbed's fault list and fail, break or hang on purpose)."""

from __future__ import annotations

import os
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from matrix_data import CASES

from labtest import matrix
from labtest.emulation.model import Fabric, load_catalogue
from labtest.matrix import Case, CaseRun, RedTest, SuiteResult, judge, names
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"


# --- culprit matching ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "who", "expected"),
    [
        ("fec device=spine1 port=Ethernet0 lane=2: 3 is FAIL", "spine1:Ethernet0", True),
        ("fec device=spine1 port=Ethernet0: 3 is FAIL", "spine1:Ethernet8", False),
        ("spine1:Ethernet0 lanes 1,2", "spine1:Ethernet0", True),
        ("leaf3:Ethernet1/1", "leaf3:Ethernet1", False),  # a port is matched whole
        ("leaf10:Ethernet0", "leaf1:Ethernet0", False),
        ("link=spine1:Ethernet0--leaf1:Ethernet0 busbw", "leaf1:Ethernet0--spine1:Ethernet0", True),
        ("pair=host1--host3 bw_gbps=180", "host3", True),
        ("pair=host1--host31", "host3", False),
        ("test_x[leaf2] device=leaf2 armed=0", "leaf2", True),
    ],
)
def test_names_matches_ports_links_and_devices_whole(text: str, who: str, expected: bool) -> None:
    assert names(text, who) is expected


# --- the data: every catalogue fault, each injectable on the default lab -------------------------


def test_matrix_data_covers_the_catalogue_and_every_fault_injects() -> None:
    catalogue = load_catalogue()
    assert set(CASES) == set(catalogue)
    testbed = load_testbed(LEAFSPINE)
    for kind, case in CASES.items():
        assert case.catches == (catalogue[kind].caught_by,) and case.culprits, kind
        fabric = Fabric(testbed)  # a typo in a target or a parameter fails here, not in CI
        for fault in case.faults:
            fabric.inject(fault["kind"], fault["target"], **fault["params"])


def test_faulted_testbed_is_a_loadable_copy(tmp_path: Path) -> None:
    case = CASES["unreachable_device"]
    path = matrix.faulted_testbed(LEAFSPINE, replace(case, seed=7), tmp_path / "tb.yaml")
    doc = yaml.safe_load(path.read_text())
    assert Path(doc["limits"]).is_absolute() and Path(doc["limits"]) == LIMITS.resolve()
    testbed = load_testbed(path)
    assert testbed.emulation is not None
    assert testbed.emulation.seed == 7
    assert [(f.kind, f.target) for f in testbed.emulation.faults] == [("unreachable_device",
                                                                       "leaf3")]
    assert testbed.devices["leaf3"].ssh is not None
    assert testbed.devices["leaf3"].ssh.timeout_s == 2


# --- the judgement, on made-up results ------------------------------------------------------


def _run(case: Case, **suites: list[tuple[str, str, str | None]]) -> CaseRun:
    """suites: family -> [(outcome, text, device)] (passes padded in)."""
    found = {}
    for suite, tests in suites.items():
        s = SuiteResult(passed=3)
        for i, (outcome, text, device) in enumerate(tests):
            setattr(s, outcome, getattr(s, outcome) + 1)
            s.red.append(RedTest(f"test_{i}", outcome, text, device=device))
        found[suite] = s
    return CaseRun(case, list(suites), found, wall_s=1.0, returncode=1)


DIRTY = Case("dirty", ({"kind": "dirty_connector", "target": "leaf1:Ethernet0"},),
             catches=("link",), culprits=("spine1:Ethernet0", "leaf1:Ethernet0"))


def test_judge_caught_with_culprit_and_quiet_bystanders() -> None:
    v = judge(_run(DIRTY, link=[("failed", "ber device=spine1 port=Ethernet0: FAIL", None)],
                   roce=[]))
    assert v.ok, v.problems
    assert v.cells["link"].text == matrix.CAUGHT and v.cells["roce"].text == "pass"


@pytest.mark.parametrize(
    ("suites", "cell", "problem"),
    [
        ({"link": [], "roce": []}, "link", "missed"),
        ({"link": [("failed", "ber device=leaf4 port=Ethernet8: FAIL", None)], "roce": []},
         "link", "without naming"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None),
                   ("failed", "device=leaf4 port=Ethernet8", None)], "roce": []},
         "link", "without naming"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None)],
          "roce": [("failed", "bw pair=host1--host2: FAIL", None)]}, "roce", "false failed"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None)],
          "roce": [("broken", "host2: ssh timed out", "host2")]}, "roce", "false broken"),
        ({"link": [("failed", "device=spine1 port=Ethernet0", None),
                   ("broken", "spine1: timeout", "spine1")], "roce": []}, "link", "broken"),
    ],
    ids=["missed", "wrong-culprit", "one-blind-failure", "false-failure", "false-broken",
         "catcher-broken"],
)
def test_judge_flags_what_is_wrong(
    suites: dict[str, list[tuple[str, str, str | None]]], cell: str, problem: str
) -> None:
    v = judge(_run(DIRTY, **suites))
    assert not v.ok
    assert not v.cells[cell].ok and any(problem in p for p in v.cells[cell].problems), v.problems


def test_a_suite_the_fault_may_also_fail_passes_or_fails_naming_the_culprit() -> None:
    flap = replace(DIRTY, also=("roce",))
    quiet = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)], roce=[]))
    named = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)],
                       roce=[("failed", "bw pair=host1--host2 via spine1:Ethernet0", None)]))
    blind = judge(_run(flap, link=[("failed", "device=spine1 port=Ethernet0", None)],
                       roce=[("failed", "bw pair=host1--host2: FAIL", None)]))
    assert quiet.ok and named.ok, (quiet.problems, named.problems)
    assert not blind.ok and "without naming" in blind.cells["roce"].problems[0]


def test_reduced_runs_add_every_cheap_suite_in_run_order() -> None:
    assert matrix.reduced_suites(CASES["pfc_disabled"]) == [
        "link", "transceiver", "cabling", "congestion", "collective"]
    assert matrix.reduced_suites(CASES["miswired"]) == [
        "link", "transceiver", "cabling", "collective"]
    assert matrix.reduced_suites(matrix.healthy_case(1)) == []  # every suite
    assert "collective" not in matrix.reduced_suites(CASES["flapping_link"])  # its note says why


UNREACHABLE = Case("unreachable", ({"kind": "unreachable_device", "target": "leaf3"},),
                   catches=("link",), culprits=("leaf3",), unreachable="leaf3")


def test_judge_unreachable_device_must_be_broken_naming_it() -> None:
    good = judge(_run(UNREACHABLE, link=[("broken", "leaf3: SSH timed out", "leaf3")],
                      roce=[("broken", "pfc read failed", "leaf3")], cabling=[]))
    assert good.ok, good.problems
    assert good.cells["link"].text == "BROKEN (leaf3 named)"
    failed = judge(_run(UNREACHABLE, link=[("failed", "ber device=leaf3 port=Ethernet1/1", None)]))
    assert not failed.ok and "must be broken" in failed.problems[-1]
    elsewhere = judge(_run(UNREACHABLE, link=[("broken", "leaf2: SSH refused", "leaf2")]))
    assert not elsewhere.ok and "does not name leaf3" in elsewhere.problems[-1]
    silent = judge(_run(UNREACHABLE, link=[]))
    assert not silent.ok and "no test was broken" in silent.problems[0]


def test_render_has_a_row_per_case_and_a_column_per_suite() -> None:
    verdicts = [
        judge(_run(DIRTY, link=[("failed", "device=spine1 port=Ethernet0", None)], roce=[])),
        judge(_run(Case("healthy-seed3", seed=3), link=[], roce=[])),
        judge(_run(DIRTY, link=[], roce=[])),
    ]
    text = matrix.render(verdicts, title_note="note")
    rows = _rows(text)
    assert rows[0].startswith("| row | injected | meant to catch | link | roce | verdict")
    assert "| **FAIL (culprit named)** | pass | ok |" in rows[1]
    assert rows[2].startswith("| healthy lab (seed 3) | no fault, seed 3 |")
    assert "| pass (missed) | pass | **WRONG** |" in rows[3]
    assert "did not fail" in text.split("## What went wrong")[1]


def _rows(text: str) -> list[str]:
    """The lines of the markdown's row table (header first)."""
    part = text.split("## Rows", 1)[1].split("## ", 1)[0]
    return [ln for ln in part.splitlines() if ln.startswith("| ")]


# --- real labtest run children over fake suites ----------------------------------------------

ALPHA = '''
import time
from labtest.errors import InfraError

def _faults(testbed):
    return {f.kind: f.target for f in testbed.emulation.faults}

def test_port(testbed, measure):
    faults = _faults(testbed)
    if "hang" in faults:
        time.sleep(120)
    if "unreachable" in faults:
        raise InfraError(faults["unreachable"], "management plane does not answer")
    port = faults.get("dirty", "leaf1:Ethernet8")
    device, _, name = port.partition(":")
    bad = 3 if "dirty" in faults else 0
    measure("fec.uncorrectable_codewords", bad, key="fec.uncorrectable_codewords",
            device=device, port=name)
'''

BETA = '''
def test_pair(testbed, measure):
    faults = {f.kind: f.target for f in testbed.emulation.faults}
    if "unreachable" in faults:
        from labtest.errors import InfraError
        raise InfraError("leaf9", "not the unreachable device")
    errors = 5 if "noisy" in faults else 0
    measure("fec.uncorrectable_codewords", errors, key="fec.uncorrectable_codewords",
            pair="host1--host2")
'''


@pytest.fixture
def fake_lab(tmp_path: Path) -> tuple[Path, Path]:
    suites = tmp_path / "suites"
    for family, source in (("alpha", ALPHA), ("beta", BETA)):
        (suites / family).mkdir(parents=True)
        (suites / family / f"test_{family}.py").write_text(textwrap.dedent(source))
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({
        "name": "fake",
        "limits": str(LIMITS),
        "devices": {"leaf1": {"role": "leaf", "driver": "sonic"},
                    "host1": {"role": "host", "driver": "linux"}},
        "emulation": {"seed": 1, "faults": []},
    }))
    return suites, base


def _fault(kind: str, target: str = "") -> tuple[dict[str, str], ...]:
    return ({"kind": kind, "target": target},)


def test_engine_runs_labtest_run_children_and_judges_them(
    tmp_path: Path, fake_lab: tuple[Path, Path]
) -> None:
    suites, base = fake_lab
    cases = [
        Case("caught", _fault("dirty", "leaf1:Ethernet0"), ("alpha",), ("leaf1:Ethernet0",)),
        Case("blamed-wrong", _fault("dirty", "leaf1:Ethernet16"), ("alpha",),
             ("leaf1:Ethernet0",)),
        Case("false-failure", _fault("dirty", "leaf1:Ethernet0") + _fault("noisy"), ("alpha",),
             ("leaf1:Ethernet0",)),
        Case("unreachable", _fault("unreachable", "leaf1"), ("alpha",), ("leaf1",),
             unreachable="leaf1"),
        matrix.healthy_case(2),
    ]
    verdicts = {v.run.case.name: v for v in matrix.run_matrix(
        cases, tmp_path / "runs", jobs=3, timeout_s=120, base=base, suites_dir=suites,
        emulate=False, pytest_args=("-q", "-p", "no:randomly", "--no-inventory"))}
    caught = verdicts["caught"]
    assert caught.ok, caught.problems
    assert caught.run.cpu_s is not None and caught.run.cpu_s > 0.2  # pytest's CPU counted
    assert {s: c.text for s, c in caught.cells.items()} == {"alpha": matrix.CAUGHT, "beta": "pass"}
    assert "without naming leaf1:Ethernet0" in " ".join(verdicts["blamed-wrong"].problems)
    assert verdicts["false-failure"].cells["beta"].text == "1 FAILED"
    assert verdicts["false-failure"].cells["alpha"].ok
    unreachable = verdicts["unreachable"]
    assert unreachable.cells["alpha"].text == "BROKEN (leaf1 named)"
    assert not unreachable.cells["beta"].ok  # broken, but it blames leaf9
    healthy = verdicts["healthy-seed2"]
    assert healthy.ok and healthy.run.returncode == 0, healthy.problems
    seed = yaml.safe_load((tmp_path / "runs" / "healthy-seed2" / "testbed.yaml").read_text())
    assert seed["emulation"]["seed"] == 2
    # the command line judges the finished runs again and writes the markdown
    module = tmp_path / "cases.py"
    module.write_text("from labtest.matrix import Case\n"
                      f"CASES = {{'caught': Case(**{_fields(cases[0])!r})}}\n")
    out = tmp_path / "matrix.md"
    status = matrix.main(["--rejudge", "--fixed", "--workdir", str(tmp_path / "runs"),
                          "--cases", str(module), "--seeds", "2", "--out", str(out)])
    assert status == 0
    rows = _rows(out.read_text())
    assert len(rows) == 3 and "| **FAIL (culprit named)** | pass | ok |" in rows[1]
    assert "fec.uncorrectable_codewords device=leaf1 port=Ethernet0: 3 codewords is FAIL" in (
        out.read_text())


def _fields(case: Case) -> dict[str, object]:
    return {k: v for k, v in case.__dict__.items() if k in ("name", "faults", "catches",
                                                            "culprits")}


def test_engine_kills_a_hung_run_at_its_timeout(
    tmp_path: Path, fake_lab: tuple[Path, Path]
) -> None:
    suites, base = fake_lab
    runner = matrix.Runner(tmp_path / "runs", base=base, suites_dir=suites, timeout_s=6,
                           emulate=False, pytest_args=("-q", "--no-inventory"))
    hang = Case("hang", _fault("hang"), ("alpha",), ("leaf1",))
    began = time.monotonic()
    try:
        runner.start(hang, ["alpha"])
        run = runner.result("hang")
    finally:
        runner.close()
    assert time.monotonic() - began < 6 + 2 * matrix.STOP_GRACE_S
    assert run.error is not None and "timed out after 6 s" in run.error and run.cpu_s is None
    verdict = judge(run)
    assert not verdict.ok and verdict.cells == {"alpha": matrix.Cell("ERROR", False)}
    assert run.pid is not None
    assert _group_gone(run.pid), "the hung run's process group survived its kill"


def _group_gone(pgid: int, bound_s: float = 10.0) -> bool:
    """True once no process of the group is left; killed members become zombies until
    init reaps them, so wait for that (bounded) instead of checking once."""
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False
