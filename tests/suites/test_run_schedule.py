"""Rounds of disjoint traffic runs (fixtures/run_schedule.py): the interference rules."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from labtest.fixtures.cabling_plan import attachments, host_pairs, pair_id, uplinks
from labtest.fixtures.run_schedule import (
    TrafficRun,
    conflict,
    pair_run,
    rounds,
    run_in_rounds,
    shortest_path_links,
)
from labtest.testbed.loader import load_testbed

LEAFSPINE = Path(__file__).resolve().parents[2] / "testbeds" / "emulated" / "leafspine.yaml"
HOSTS = [f"host{i}" for i in range(1, 9)]
SWITCHES = ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"]


@pytest.fixture(scope="module")
def plan():
    tb = load_testbed(LEAFSPINE)
    return attachments(tb, HOSTS, SWITCHES), uplinks(tb, SWITCHES)


def _run(pair, plan):
    att, ups = plan
    return pair_run(pair_id(pair), pair, att, ups)


def test_a_cross_leaf_pair_may_cross_every_uplink_of_both_leaves_and_no_other(plan):
    run = _run(("host1", "host3"), plan)
    assert run.links == {
        "host1:eth0--leaf1:Ethernet16", "host3:eth0--leaf2:Ethernet16",
        "leaf1:Ethernet0--spine1:Ethernet0", "leaf1:Ethernet8--spine2:Ethernet1/1",
        "leaf2:Ethernet0--spine1:Ethernet8", "leaf2:Ethernet8--spine2:Ethernet2/1",
    }


def test_a_same_leaf_pair_crosses_no_uplink(plan):
    assert _run(("host1", "host2"), plan).links == {
        "host1:eth0--leaf1:Ethernet16", "host2:eth0--leaf1:Ethernet24"}


def test_pairs_sharing_a_host_or_a_possible_link_never_share_a_round(plan):
    a, b, c = (_run(p, plan) for p in (("host1", "host3"), ("host3", "host5"), ("host2", "host4")))
    assert conflict(a, b) == "both use host host3"
    assert conflict(a, c) is not None and "both may cross link leaf1:" in conflict(a, c)
    assert conflict(a, _run(("host5", "host7"), plan)) is None
    runs = [_run(p, plan) for p in host_pairs(HOSTS)]
    groups = rounds(runs)
    assert sorted(r.name for g in groups for r in g) == sorted(r.name for r in runs)
    for group in groups:
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                assert conflict(x, y) is None, (x.name, y.name)
    # the default lab: 28 pairs in 13 rounds (4 same-leaf pairs together, then 2 at a time)
    assert len(groups) == 13 and len(groups[0]) == 4
    assert len(rounds(runs, concurrent=False)) == 28


def test_an_exclusive_run_runs_alone():
    spine = TrafficRun("reboot spine1", frozenset(), frozenset(), exclusive=True)
    pair = TrafficRun("h1--h2", frozenset({"h1", "h2"}), frozenset({"l1"}))
    other = TrafficRun("h3--h4", frozenset({"h3", "h4"}), frozenset({"l2"}))
    assert conflict(spine, other) == "reboot spine1 runs alone"
    assert [[r.name for r in g] for g in rounds([pair, spine, other])] == [
        ["h1--h2", "h3--h4"], ["reboot spine1"]]


def test_shortest_paths_of_a_three_tier_fabric_include_the_super_spine_links():
    from labtest.fixtures.cabling_plan import Uplink

    def up(a, b):
        return [Uplink(a, "p", b, "p", f"{a}--{b}", 400), Uplink(b, "p", a, "p", f"{a}--{b}", 400)]

    ups: dict[str, list[Uplink]] = {}
    for a, b in (("l1", "s1"), ("l2", "s2"), ("s1", "ss"), ("s2", "ss"), ("l1", "s3")):
        for u in up(a, b):
            ups.setdefault(u.switch, []).append(u)
    assert shortest_path_links("l1", "l2", ups) == {"l1--s1", "s1--ss", "s2--ss", "l2--s2"}
    assert shortest_path_links("l1", "nowhere", ups) == set()


def test_runs_of_a_round_overlap_and_an_error_stays_with_its_run():
    runs = [TrafficRun(n, frozenset({n}), frozenset()) for n in ("a", "b", "c")]
    barrier = threading.Barrier(3, timeout=10)  # all three must be in fn at once

    def fn(run: TrafficRun) -> str:
        barrier.wait()
        if run.name == "b":
            raise RuntimeError("b broke")
        return run.name.upper()

    out = run_in_rounds(runs, fn)
    assert out["a"].get() == "A" and out["c"].get() == "C"
    assert out["a"].beside == ("b", "c")
    with pytest.raises(RuntimeError, match="b broke"):
        out["b"].get()
    serial = run_in_rounds(runs, lambda r: r.name, concurrent=False)
    assert [serial[n].round_index for n in "abc"] == [0, 1, 2]
