"""The paths suite end to end on the emulated (model) lab: the healthy default lab passes
with every fabric link proven (the TG loads the links of its paths, pinned host streams the
others), and a straggler on a random fabric link, at a random rate fraction, fails that link
only, named with both ends that send into it.

Two ``labtest run --suite paths`` (about 20 s each). The placement is drawn per run and
printed in every assertion message, so a miss can be replayed.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"

#: the fabric links the TG's paths cross (its ports are on leaf1 and leaf4), and the others
ON_TG_PATHS = [
    "leaf1:Ethernet0--spine1:Ethernet0",
    "leaf1:Ethernet8--spine2:Ethernet1/1",
    "leaf4:Ethernet0--spine1:Ethernet24",
    "leaf4:Ethernet8--spine2:Ethernet4/1",
]
OFF_TG_PATHS = [
    "leaf2:Ethernet0--spine1:Ethernet8",
    "leaf2:Ethernet8--spine2:Ethernet2/1",
    "leaf3:Ethernet1/1--spine1:Ethernet16",
    "leaf3:Ethernet2/1--spine2:Ethernet3/1",
]
#: a straggler the suite's load (90% of line per path) must find: below 0.89 of the speed
RATE_FRACTIONS = (0.2, 0.85)


def _run(tmp: Path, faults: list[dict]) -> tuple[int, str]:
    if os.environ.get("LABTEST_SUITE_E2E", "1") == "0":
        pytest.skip("suite runs on the emulated lab skipped: LABTEST_SUITE_E2E=0")
    doc = yaml.safe_load(LEAFSPINE.read_text())
    doc["limits"] = str(LIMITS)
    doc["emulation"]["faults"] = faults
    testbed = tmp / "paths.yaml"
    testbed.write_text(yaml.safe_dump(doc, sort_keys=False))
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(testbed),
            "--suite", "paths", "--alluredir", str(tmp / "allure")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def _failed(out: str) -> set[str]:
    return {ln.split("::")[-1].split(" - ")[0].strip()
            for ln in out.splitlines() if ln.startswith("FAILED ")}


def test_the_healthy_lab_passes_with_every_fabric_link_loaded(tmp_path: Path) -> None:
    code, out = _run(tmp_path, [])
    assert code == 0 and "verdict: PASS" in out, out[-3000:]
    row = next(ln.split() for ln in out.splitlines() if ln.startswith("paths "))
    # delivery: 8 links (4 by the TG, 4 by pinned host streams); member loss: 8; one spread
    assert row[1:5] == ["17", "0", "0", "0"], out[-3000:]
    assert "17/17" in row and "waived" not in out, out[-3000:]


def test_a_straggler_at_a_random_placement_is_named(tmp_path: Path) -> None:
    rng = random.Random()
    link = rng.choice(ON_TG_PATHS + OFF_TG_PATHS)
    fraction = round(rng.uniform(*RATE_FRACTIONS), 2)
    target = rng.choice(link.split("--"))  # either end names the link
    placed = f"straggler_link at {target} ({link}), rate_fraction {fraction}"
    fault = {"kind": "straggler_link", "target": target, "params": {"rate_fraction": fraction}}
    code, out = _run(tmp_path, [fault])
    assert code == 1 and "verdict: FAIL" in out, f"{placed}\n{out[-3000:]}"
    assert _failed(out) == {f"test_path_delivery[{link}]"}, f"{placed}\n{out[-3000:]}"
    a, b = link.split("--")
    for near, far in ((a, b), (b, a)):
        device, port = near.split(":")
        named = f"link={link} device={device} port={port} peer={far} "
        hits = [ln for ln in out.splitlines() if named in ln and "is FAIL" in ln]
        assert hits, f"{placed}: the hop from {near} is not named\n{out[-3000:]}"
        ratio = float(re.findall(r": ([0-9.]+) ratio is FAIL", hits[0])[0])
        # the hop carries about the straggler's rate over the load offered to it
        assert ratio < 0.99 and ratio == pytest.approx(fraction / 0.9, abs=0.05), (
            f"{placed}: {hits[0]}")


def test_an_ecmp_blackhole_at_a_random_placement_is_named(tmp_path: Path) -> None:
    """A member that drops the flows hashed into a share of the hash space: the host pairs'
    iperf3 dies at setup as the real one does (a stream's first datagram fell in the hole),
    so no counter sees the hole; the traces of the dead pairs' flows name the link, and the
    pairs' deaths are its consequences, never a host's."""
    rng = random.Random()
    link = rng.choice(ON_TG_PATHS + OFF_TG_PATHS)
    params = {"flow_fraction": round(rng.uniform(0.05, 0.6), 2),
              "direction": rng.choice(["ab", "ba", "both"]), "salt": rng.randrange(65536)}
    placed = f"ecmp_blackhole at {link}, {params}"
    code, out = _run(tmp_path, [{"kind": "ecmp_blackhole", "target": link, "params": params}])
    assert code == 1 and "verdict: FAIL" in out, f"{placed}\n{out[-3000:]}"
    causes = out.split("root causes", 1)[1].split("\nsuite ", 1)[0]
    first = causes.splitlines()[1]
    a, b = link.split("--")
    assert link in first or f"{b}--{a}" in first or any(
        f"  1. {end}:" in first for end in (a, b)), f"{placed}: first {first!r}\n{out[-4000:]}"
    assert "  2. " not in causes, f"{placed}\n{out[-4000:]}"
    # a leaf whose pair's streams died carried BFD and BGP alone (or the rounds before):
    # its uplinks' shares prove no spread, so the spread cell is not proven, never passed
    dead = re.findall(r"streams of (\S+) .*died|(\w+)->\w+ streams died under way", out)
    results = json.loads((tmp_path / "allure" / "labtest-results.json").read_text())
    spread = next(c for r in results["verdict"]["coverage"]["requirements"] for c in r["cells"]
                  if c["requirement"] == "paths.ecmp_spread_max_mean")
    if dead:
        assert spread["status"] == "not proven", f"{placed}: {spread}"
        assert "streams died in round" in spread["reason"], f"{placed}: {spread}"
