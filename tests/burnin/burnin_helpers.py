"""Shared by the burn-in tests: the mini lab's station and variants of it."""

from __future__ import annotations

from pathlib import Path

import yaml

DATA = Path(__file__).parent / "data"
MINI_STATION = DATA / "mini-station.yaml"
MINI_TESTBED = DATA / "mini-testbed.yaml"
LIMITS = Path(__file__).parents[2] / "suites" / "limits" / "burnin.yaml"


def station_variant(tmp_path: Path, name: str = "station.yaml", **changes: object) -> Path:
    """The mini station with top-level keys replaced, written next to absolute paths."""
    doc = yaml.safe_load(MINI_STATION.read_text())
    doc["testbed"] = str(MINI_TESTBED)
    doc["limits"] = str(LIMITS)
    doc.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
