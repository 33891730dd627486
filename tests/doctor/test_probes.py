"""ECMP coverage arithmetic, and blame: probe paths read through the inference engine (the
engine's own tests of count observations are in tests/core/test_inference.py)."""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np
import pytest

from labtest.measure.probes import (
    OverBudget,
    ProbePath,
    blame,
    overhead_fraction,
    plan_mesh,
    probes_per_pair,
)


@pytest.mark.parametrize("width", [2, 4, 8, 16, 64])
def test_probes_per_pair_is_the_smallest_count_meeting_the_union_bound(width: int) -> None:
    n = probes_per_pair(width)
    miss = lambda k: width * (1 - 1 / width) ** k  # noqa: E731 - the bound itself
    assert miss(n) <= 0.01 < miss(n - 1)


def test_probes_per_pair_covers_every_path_in_simulation() -> None:
    rng = np.random.default_rng(7)
    width = 8
    n = probes_per_pair(width)
    trials = 4000
    covered = sum(len(set(rng.integers(0, width, n).tolist())) == width for _ in range(trials))
    assert covered / trials >= 0.985  # 0.99 by the bound, less 3 sigma of 4,000 trials
    assert probes_per_pair(1) == 1


def test_overhead_fraction() -> None:
    # 100 probes/s of 64 B on a 400G link: 51.2 kb/s of 400 Gb/s
    assert math.isclose(overhead_fraction(100, 64, 400), 1.28e-7)


def _mesh(bad: set[str], loss: float, rng: np.random.Generator) -> list[ProbePath]:
    """4 leaves x 4 spines, one host per leaf, one path per (pair, spine)."""
    paths = []
    for a in range(4):
        for b in range(4):
            if a == b:
                continue
            for s in range(4):
                links = (f"h{a}--l{a}", f"l{a}--s{s}", f"s{s}--l{b}", f"l{b}--h{b}")
                p = loss if set(links) & bad else 0.0
                lost = int(rng.binomial(50, p))
                paths.append(ProbePath(f"h{a}", f"h{b}", links, 50, lost))
    return paths


def test_blame_reads_the_engines_causes_back_as_links_and_their_probes() -> None:
    found = blame(_mesh({"l1--s2"}, 1.0, np.random.default_rng(1)))
    assert [b.link for b in found] == ["l1--s2"]
    b = found[0]
    assert b.confidence > 0.99
    assert (b.lost, b.sent, b.bad_paths, b.paths) == (150, 150, 3, 3)
    assert b.text().startswith("probes: 150 of 150 lost on the 3 probe paths through l1--s2")
    rng = np.random.default_rng(2)
    found = blame(_mesh({"l0--s1", "s3--l2"}, 0.05, rng))
    assert {b.link for b in found} == {"l0--s1", "s3--l2"}


def test_one_lost_probe_names_no_link_and_a_healthy_mesh_nothing() -> None:
    rng = np.random.default_rng(3)
    assert blame(_mesh(set(), 0.0, rng)) == []
    paths = _mesh(set(), 0.0, rng)
    paths[5] = dataclasses.replace(paths[5], lost=1)  # four links, each as likely
    assert blame(paths, min_confidence=0.0) == []  # none is worth its price


def test_plan_mesh_probes_the_tor_and_covers_the_ecmp_width() -> None:
    leaf_of = {f"h{i}": f"l{i // 2}" for i in range(8)}  # 4 leaves, 2 hosts each
    rng = np.random.default_rng(3)
    plan = plan_mesh(leaf_of, 8, rng)
    by_pair = plan.probes_by_pair()
    for (src, dst), sports in by_pair.items():
        same = leaf_of[src] == leaf_of[dst]
        assert len(sports) == (1 if same else 51)
    assert plan.ports_per_pair == 51
    for h in leaf_of:  # one ToR peer and three on other leaves
        peers = [d for s, d in by_pair if s == h]
        assert len(peers) == 4 and sum(leaf_of[d] == leaf_of[h] for d in peers) == 1
    # every inter-leaf pair reaches all 8 members (a hash of the source port picks one)
    uncovered = 0
    for _ in range(50):
        for (src, dst), sports in plan_mesh(leaf_of, 8, rng).probes_by_pair().items():
            if leaf_of[src] != leaf_of[dst]:
                members = {zlib.crc32(f'{src}>{dst}:{s}'.encode()) % 8 for s in sports}
                uncovered += len(members) < 8
    assert uncovered <= 0.02 * 50 * 24  # the bound promises <= 1 %; 2 % leaves room for chance
    assert plan.overhead < 1e-3


def test_plan_mesh_refuses_a_mesh_over_budget() -> None:
    leaf_of = {f"h{i}": f"l{i // 2}" for i in range(8)}
    with pytest.raises(OverBudget, match="budget"):
        plan_mesh(leaf_of, 8, np.random.default_rng(1), interval_s=0.001, budget=1e-6)


def test_a_flap_seen_only_by_one_hosts_traces_is_blamed_on_the_link_not_the_host() -> None:
    # leaf l1 has five hosts; l1--s2 was dark only while h1's traces ran (the CI run where
    # the doctor named host4's link for a flapping leaf-spine link): the other hosts' probes
    # through it, sent at other moments, came back, and so did h1's through s1
    paths = []
    for h in ("h1", "h2", "h3", "h4", "h5"):
        for d, leaf in (("d1", "l7"), ("d2", "l8"), ("d3", "l9")):
            for s in ("s1", "s2"):
                links = (f"{h}--l1", f"l1--{s}", f"{s}--{leaf}", f"{leaf}--{d}")
                dark = h == "h1" and s == "s2"
                paths.append(ProbePath(h, d, links, 50, 50 if dark else 0))
    found = blame(paths)
    assert [b.link for b in found][:1] == ["l1--s2"], found
    assert found[0].lost == 150 and found[0].bad_paths == 3


def test_a_one_way_drop_seen_by_one_trace_is_blamed_on_the_targets_way_in() -> None:
    # only h1 probed h2 this interval, and lost everything: both end links carried every
    # lost probe; h1's clean traces to others left through its own link the same way, h2's
    # clean traces left through h2's link the other way (a silent drop is one-way)
    paths = []
    for d, lost in (("h2", 4), ("h3", 0), ("h4", 0)):
        for s in ("s1", "s2"):
            leaf = {"h2": "l2", "h3": "l3", "h4": "l4"}[d]
            links = ("h1--l1", f"l1--{s}", f"{leaf}--{s}", f"{d}--{leaf}")
            paths.append(ProbePath("h1", d, links, 4, lost))
    for d, leaf in (("h3", "l3"), ("h4", "l4")):
        for s in ("s1", "s2"):
            paths.append(ProbePath("h2", d, ("h2--l2", f"l2--{s}", f"{leaf}--{s}",
                                             f"{d}--{leaf}"), 4, 0))
    found = blame(paths)
    assert [b.link for b in found] == ["h2--l2"], found


def _two_leaves(bad: str, loss: float, rng: np.random.Generator) -> list[ProbePath]:
    """2 leaves x 2 spines, two hosts a leaf: every probe through l1--s1 crosses s1--l2."""
    paths = []
    for a, b in (("l1", "l2"), ("l2", "l1")):
        for h in (1, 2):
            for d in (1, 2):
                for s in ("s1", "s2"):
                    links = (f"{a}h{h}--{a}", f"{a}--{s}", f"{b}--{s}", f"{b}h{d}--{b}")
                    lost = int(rng.binomial(10, loss)) if bad in links else 0
                    paths.append(ProbePath(f"{a}h{h}", f"{b}h{d}", links, 10, lost))
    return paths


@pytest.mark.parametrize("bad", ["l1--s1", "l2--s1", "l1--s2"])
def test_two_links_every_probe_crosses_together_are_blamed_as_twins(bad: str) -> None:
    # the kernel lab's two leaves (CI: a 30 % loss on leaf1--spine1 paged nothing): the
    # engine's posterior split evenly between the link and its spine's other fabric link,
    # each below an even chance; both are blamed, each naming the other, at the pair's odds
    found = blame(_two_leaves(bad, 0.3, np.random.default_rng(5)))
    spine = bad.split("--")[1]
    twins = {f"l1--{spine}", f"l2--{spine}"}
    assert {b.link for b in found} == twins, found
    for b in found:
        assert b.twin == (twins - {b.link}).pop()
        assert b.confidence > 0.99
        assert "cannot tell them apart" in b.text()
    assert blame(_two_leaves(bad, 0.0, np.random.default_rng(5))) == []


def test_at_the_same_confidence_the_suspect_with_more_evidence_ranks_first() -> None:
    from labtest.doctor.judge import Evidence
    from labtest.doctor.localise import rank

    probe = [Evidence(lk, lk, "probe_loss", 0.3, "PROBE", "", None, 1.0)
             for lk in ("a:1--s:1", "b:1--s:2")]
    counter = Evidence("b:1--s:2", "s:2", "rx_discards", 22, "ANOMALY", "", None, 0.3)
    ranked = rank([*probe, counter])
    assert [s.unit for s in ranked] == ["b:1--s:2", "a:1--s:1"]
    assert ranked[0].confidence == ranked[1].confidence == 1.0


@pytest.mark.parametrize("hole", ["l2--s1", "l1--s1", "l1--s2"])
def test_a_flow_lost_whole_is_suspected_only_past_its_last_answered_hop(hole: str) -> None:
    """Two leaves, two spines, flows h1 -> h2 (the kernel campaign's ECMP blackhole). A flow
    lost in a hole on s1 -> l2 was answered by s1: l1 -> s1 carried it, so the twin the
    bare paths cannot split (every flow over s1 crosses both) is cleared; a flow lost on
    l1's way up was answered by l1 only, so it may have vanished on either uplink, and the
    clean flows over the other spine clear that one."""
    rng = np.random.default_rng(7)
    paths = []
    for _ in range(64):
        spine = "s1" if rng.random() < 0.5 else "s2"
        links = ("h1--l1", f"l1--{spine}", f"l2--{spine}", "h2--l2")
        if not (hole in links and rng.random() < 0.4):
            paths.append(ProbePath("h1", "h2", links, 3, 0))
            continue
        # the hop past the last answer: an uplink lost its probes before any spine answered
        up = hole.startswith("l1")
        seen = ("h1--l1", "l1--s1", "l1--s2", "l2--s1", "l2--s2", "h2--l2") if up else links
        suspects = ("l1--s1", "l1--s2") if up else (hole,)
        paths.append(ProbePath("h1", "h2", seen, 3, 3, suspects))
    found = blame(paths)
    assert [b.link for b in found] == [hole] and found[0].twin is None, found
    # without the answered hops, a hole past the spine has a twin the flows cannot split
    bare = blame([dataclasses.replace(p, suspects=()) for p in paths])
    if hole == "l2--s1":
        assert {b.link for b in bare} == {"l1--s1", "l2--s1"}, bare
