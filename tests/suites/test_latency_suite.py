"""The latency suite against the emulated lab: healthy passes; ECN thresholds set high on
one leaf and ECN off on another fail the pairs served there, naming the congested queue."""

from __future__ import annotations

import pytest
from suite_runs import LABS, LabRuns, outcomes

LABS["latency_healthy"] = {"faults": [], "time_scale": 10, "suites": ["latency"]}
LABS["latency_faults"] = {
    "time_scale": 10,
    "faults": [
        {"kind": "ecn_thresholds", "target": "leaf1"},
        {"kind": "ecn_disabled", "target": "leaf4"},
    ],
    "suites": ["latency"],
}


@pytest.fixture(scope="module")
def runs(lab_runs: LabRuns) -> LabRuns:
    lab_runs.start("latency_healthy", "latency_faults")
    return lab_runs


def test_the_healthy_lab_keeps_its_tail_latency_under_incast(runs):
    run = runs.result("latency_healthy")
    tests = run.select("latency")
    assert len(tests) == 4, run.output[-3000:]
    assert set(outcomes(tests).values()) == {"passed"}, run.output[-3000:]


def test_high_ecn_thresholds_and_ecn_off_fail_naming_the_congested_queue(runs):
    run = runs.result("latency_faults")
    got = {t["name"]: t for t in run.select("latency")}
    failed = {n for n, t in got.items() if t["outcome"] == "failed"}
    assert failed == {
        "test_latency_under_incast[host3->host1]",
        "test_latency_under_incast[host1->host7]",
    }, run.output[-3000:]
    assert "queue=leaf1:Ethernet16:3" in got["test_latency_under_incast[host3->host1]"]["message"]
    assert "queue=leaf4:Ethernet16:3" in got["test_latency_under_incast[host1->host7]"]["message"]
    assert "latency.loaded_p99_us" in got["test_latency_under_incast[host1->host7]"]["message"]
