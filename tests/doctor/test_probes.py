"""ECMP coverage arithmetic and 007-style blame over probe paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labtest.doctor.probes import ProbePath, blame, overhead_fraction, probes_per_pair


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


def test_blame_names_a_blackholed_member_first() -> None:
    found = blame(_mesh({"l1--s2"}, 1.0, np.random.default_rng(1)))
    assert [b.link for b in found] == ["l1--s2"]
    assert found[0].confidence > 0.99


def test_blame_finds_two_lossy_links_and_nothing_on_a_healthy_mesh() -> None:
    rng = np.random.default_rng(2)
    found = blame(_mesh({"l0--s1", "s3--l2"}, 0.05, rng))
    assert {b.link for b in found[:2]} == {"l0--s1", "s3--l2"}
    assert blame(_mesh(set(), 0.0, rng)) == []
