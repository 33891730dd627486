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

# loads far shorter than the runs beside them (2 device seconds: 0.2 s of wall at the
# matrix's time_scale 10): the first attempt outlives its load, the reruns' loads last as
# long as the runs need (CI's matrix, 3 labs on 2 cores, outlived 20 s loads twice)
LABS["latency_short_loads"] = {
    "faults": [],
    "time_scale": 10,
    "suites": ["latency"],
    "args": ["-k", "under_incast or upstream_pause"],
    # from 2 s the lengths go 2, 16, 32+, 64+: a busy xdist worker outlived 1, 8 and 26 s
    "settings": {"latency": {"max_pairs": 2, "incast": {"duration_s": 2, "attempts": 4},
                             "upstream_pause": {"duration_s": 2, "runs": 4}}},
}


@pytest.fixture(scope="module")
def runs(lab_runs: LabRuns) -> LabRuns:
    lab_runs.start("latency_healthy", "latency_faults", "latency_short_loads")
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


def test_latency_runs_that_outlive_their_load_run_again_beside_a_longer_one(runs):
    """A run's pace is the lab's (a busy runner), not a setting: a load too short for the
    runs beside it is not a hole in the proof but the next attempt's measure."""
    run = runs.result("latency_short_loads")
    tests = run.select("latency")
    assert len(tests) == 4, run.output[-3000:]
    assert set(outcomes(tests).values()) == {"passed"}, run.output[-3000:]
    # each ran beside a longer load than the first (else this proves nothing)
    results = runs.workdir / "latency_short_loads-results"
    steps = [p.read_text() for p in results.glob("*-result.json")]
    stretched = [t for t in steps if "lengths tried" in t]
    assert len(stretched) == 4, f"{len(stretched)} of 4 ran again beside a longer load"
