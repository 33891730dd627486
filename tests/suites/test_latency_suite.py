"""The latency suite against the emulated lab: healthy passes; ECN thresholds set high on
one leaf and ECN off on another fail the pairs served there, naming the congested queue
(the incast's, LAT-1.1; the pause episode's origin, LAT-1.3) and the shut link (LAT-1.4)."""

from __future__ import annotations

import pytest
from suite_runs import LABS, LabRuns, outcomes

# time_scale 2: the elastic clock skips the waits as fast as at 10, and a runner starved of
# CPU (CI under xdist) lets five times less device time pass while a command is on its way
LABS["latency_healthy"] = {"faults": [], "time_scale": 2, "suites": ["latency"]}
LABS["latency_faults"] = {
    "time_scale": 2,
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


def test_the_healthy_lab_keeps_its_tail_latency_under_load(runs):
    run = runs.result("latency_healthy")
    tests = run.select("latency")
    # 4 pairs x (incast, upstream pause, failover) + one all-to-all for all pairs
    assert len(tests) == 13, run.output[-3000:]
    assert set(outcomes(tests).values()) == {"passed"}, run.output[-3000:]


def test_high_ecn_thresholds_and_ecn_off_fail_naming_the_congested_queue(runs):
    run = runs.result("latency_faults")
    got = {t["name"]: t for t in run.select("latency")}
    failed = {n for n, t in got.items() if t["outcome"] == "failed"}
    assert failed == {
        "test_latency_under_incast[host3->host1]",
        "test_latency_under_incast[host1->host7]",
        "test_latency_beside_upstream_pause[host3->host1]",
        "test_latency_beside_upstream_pause[host1->host7]",
        "test_latency_during_failover[host3->host1]",
        "test_latency_during_failover[host1->host7]",
    }, run.output[-3000:]
    assert "queue=leaf1:Ethernet16:3" in got["test_latency_under_incast[host3->host1]"]["message"]
    assert "queue=leaf4:Ethernet16:3" in got["test_latency_under_incast[host1->host7]"]["message"]
    assert "latency.loaded_p99_us" in got["test_latency_under_incast[host1->host7]"]["message"]
    # a pause episode is named at its origin (the neighbour's port, whose switch sent the
    # pause frames), not at the paused spine hop (8 runs: some QP hashes through it)
    for name, origin in (("host3->host1", "leaf1:Ethernet24:3"),
                         ("host1->host7", "leaf4:Ethernet24:3")):  # fmt: skip
        hol = got[f"test_latency_beside_upstream_pause[{name}]"]["message"]
        assert f"queue={origin}" in hol, hol
        assert "latency.hol_p99_us" in hol and "evidence=origin " in hol, hol
    for name, link in (("host3->host1", "leaf1:Ethernet0--spine1:Ethernet0"),
                       ("host1->host7", "leaf4:Ethernet0--spine1:Ethernet24")):  # fmt: skip
        message = got[f"test_latency_during_failover[{name}]"]["message"]
        assert f"link={link}" in message and "latency.failover_p99_us" in message
