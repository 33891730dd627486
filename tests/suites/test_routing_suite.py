"""The routing suite end to end on the emulated (model) lab: a fabric link held down and a
miswired pair fail their BGP and BFD sessions naming the link and both ends; a switch with
slow BFD timers fails the detection-time check naming it and its peer, though the peer
(spine2) cannot be asked; nothing else fails (spine2's links are broken, not failed).

One ``labtest run --suite routing`` (about 15 s). The healthy default lab passes routing as
part of ``labtest run`` (CI); its EOS cells are waived in the testbed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"

HELD_DOWN = "leaf1:Ethernet0--spine1:Ethernet0"
SWAPPED = ("leaf2:Ethernet0--spine1:Ethernet8", "leaf4:Ethernet0--spine1:Ethernet24")
SLOW = "leaf1:Ethernet8--spine2:Ethernet1/1"  # leaf1 runs BFD 500 ms x 3; spine2 is EOS
#: down 0.5 s every 6 s: Established at almost any one read, never through the 20 s window
FLAPPING = "leaf3:Ethernet1/1--spine1:Ethernet16"  # EOS leaf, SONiC spine


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> str:
    if os.environ.get("LABTEST_SUITE_E2E", "1") == "0":
        pytest.skip("suite runs on the emulated lab skipped: LABTEST_SUITE_E2E=0")
    tmp = tmp_path_factory.mktemp("routing")
    doc = yaml.safe_load(LEAFSPINE.read_text())
    doc["limits"] = str(LIMITS)
    doc["devices"]["leaf1"]["vars"]["bfd_interval_ms"] = 500
    doc["emulation"]["faults"] = [
        {"kind": "flapping_link", "target": HELD_DOWN,
         "params": {"period_s": 1_000_000, "down_s": 999_999}},
        {"kind": "miswired", "target": SWAPPED[0], "params": {"other": SWAPPED[1]}},
        {"kind": "flapping_link", "target": FLAPPING, "params": {"period_s": 6, "down_s": 0.5}},
        # SLOW's far end cannot be asked: leaf1's own slow detection must stand regardless
        {"kind": "unreachable_device", "target": "spine2"},
    ]
    testbed = tmp / "routing-faults.yaml"
    testbed.write_text(yaml.safe_dump(doc, sort_keys=False))
    settings = tmp / "settings.yaml"
    settings.write_text("routing: {settle: {timeout_s: 1.0, poll_s: 0.5}}\n")
    env = {**os.environ, "LABTEST_SUITE_SETTINGS": str(settings)}
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(testbed),
            "--suite", "routing", "--alluredir", str(tmp / "allure")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                          check=False)
    return done.stdout + done.stderr


def test_only_the_faulty_links_fail(run: str) -> None:
    failed = {ln.split("::")[-1].split(" - ")[0].strip()
              for ln in run.splitlines() if ln.startswith("FAILED ")}
    down = {f"test_{t}_session[{lk}]" for t in ("bgp", "bfd") for lk in (HELD_DOWN, *SWAPPED)}
    flapping = {f"test_bgp_session[{FLAPPING}]"}  # its BFD fails only if read while down
    expected = down | flapping | {f"test_bfd_detection_time[{SLOW}]"}
    assert expected <= failed <= expected | {f"test_bfd_session[{FLAPPING}]"}, run[-4000:]
    assert "verdict: FAIL" in run


def test_a_flapping_session_fails_stability_at_both_ends(run: str) -> None:
    # issue 39 item 1: a session that drops and comes back is Established at any one read
    a, b = FLAPPING.split("--")
    for near, far in ((a, b), (b, a)):
        device, port = near.split(":")
        where = f"link={FLAPPING} device={device} port={port} peer={far}: 1 sessions is FAIL"
        hits = [ln for ln in run.splitlines()
                if ln.lstrip("E ").startswith("bgp_session_flaps") and where in ln]
        assert hits, f"bgp_session_flaps at {near} not named:\n{run[-4000:]}"


@pytest.mark.parametrize("link", [HELD_DOWN, *SWAPPED])
def test_a_dead_session_names_the_link_and_both_ends(run: str, link: str) -> None:
    a, b = link.split("--")
    for near, far in ((a, b), (b, a)):
        device, port = near.split(":")
        for key in ("bgp_session_down", "bfd_session_down"):
            where = f"link={link} device={device} port={port} peer={far}: 1 sessions is FAIL"
            hits = [ln for ln in run.splitlines() if ln.lstrip("E ").startswith(key)
                    and where in ln]
            assert hits, f"{key} at {near} not named:\n{run[-4000:]}"


def test_slow_bfd_names_the_switch_and_its_peer(run: str) -> None:
    # spine2 (the far end) is unreachable: the answering end is judged before the test
    # raises for the other, so the failure stands (it had been reported broken, unmeasured)
    assert (f"link={SLOW} device=leaf1 port=Ethernet8 peer=spine2:Ethernet1/1: 1500 ms is FAIL"
            in run), run[-4000:]
