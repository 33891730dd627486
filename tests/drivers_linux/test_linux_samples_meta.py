"""Every sample names its source, and every parser has at least three real outputs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

SAMPLES = Path(__file__).parent / "samples"


def test_every_sample_starts_with_its_source():
    files = sorted(p for p in SAMPLES.rglob("*") if p.is_file())
    assert len(files) >= 40
    for path in files:
        first = path.read_text().splitlines()[0]
        assert first.startswith("# source: ") and len(first) > 30, path


def test_at_least_three_samples_per_parser():
    per_tool = Counter(p.parent.name for p in SAMPLES.rglob("*.txt"))
    for tool in (
        "perftest_bw",
        "perftest_lat",
        "nccl",
        "ethtool_stats",
        "ethtool_module",
        "ip_link",
    ):
        assert per_tool[tool] >= 3, tool
    rdma = Counter("_".join(p.name.split("_")[:2]) for p in (SAMPLES / "rdma").iterdir())
    for kind in ("rdma_link", "rdma_stat", "show_gids", "ibv_devinfo"):
        assert rdma[kind] >= 3, kind
