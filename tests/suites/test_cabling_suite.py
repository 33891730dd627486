"""The cabling suite end to end on the emulated lab: healthy passes, a miswired pair
fails naming both ends, other families' faults (a flapping link included) do not
fail it, and an unreachable switch is broken, not failed."""

from __future__ import annotations

import pytest
from suite_runs import LabRuns, outcomes

RUNS = ("healthy", "link_faults", "optic_faults")


@pytest.fixture(scope="module", autouse=True)
def _start(lab_runs: LabRuns) -> None:
    lab_runs.start(*RUNS)


def test_healthy_lab_passes_every_cabling_test(lab_runs: LabRuns) -> None:
    run = lab_runs.result("healthy")
    got = outcomes(run.select("cabling"))
    assert len(got) == 18 + 6 + 18, run.output[-3000:]  # links, LLDP devices, links
    assert all(o == "passed" for o in got.values()), run.output[-4000:]


def test_miswired_pair_fails_naming_both_ends(lab_runs: LabRuns) -> None:
    run = lab_runs.result("optic_faults")
    got = outcomes(run.select("cabling"))
    failed = {n for n, o in got.items() if o == "failed"}
    assert failed == {"test_cable[host3:eth0--leaf2:Ethernet16]",
                      "test_cable[host4:eth0--leaf2:Ethernet24]"}, run.output[-4000:]
    message = run.one("test_cable[host3:eth0--leaf2:Ethernet16]")["message"]
    for part in ("device=leaf2 port=Ethernet16", "status=swapped", "expected=host3:eth0",
                 "seen=host4:eth0", "host4:eth0--leaf2:Ethernet24"):
        assert part in message, message


def test_other_families_faults_do_not_fail_the_cabling_suite(lab_runs: LabRuns) -> None:
    run = lab_runs.result("link_faults")  # the flapping link drops out of LLDP for a moment
    got = {n: o for n, o in outcomes(run.select("cabling")).items() if "leaf3" not in n}
    assert got and all(o == "passed" for o in got.values()), run.output[-4000:]


def test_unreachable_switch_is_broken_not_failed(lab_runs: LabRuns) -> None:
    run = lab_runs.result("link_faults")  # leaf3's management plane is dead there
    tests = run.select("cabling", "leaf3")
    assert tests and not [t for t in tests if t["outcome"] == "failed"], run.output[-3000:]
    broken = [t for t in tests if t["outcome"] == "broken"]
    assert broken and all("leaf3" in (t["message"] or "") for t in broken)
