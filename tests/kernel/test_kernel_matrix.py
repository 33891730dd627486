"""The kernel-lab matrix: real faults in real software, each caught by its suite with the
culprit named; and the healthy lab passes cabling, failover, paths and routing.

It runs in the matrix stage (``LABTEST_MATRIX=1``, as CI does), not in the README's test
command. Each case is one ``labtest run`` on a fresh kernel lab whose testbed injects the fault at
start (``emulation.faults``), the way a user would run it. About 20 s per cabling or
routing case (35 s for the silent drop: its sessions are read again until the settle time
runs out), 60 s for the straggler's paths run, 90-100 s for the ECMP blackhole's (one
round of dead streams, 30 s, and the traces that locate the hole, about 55 s) and about
140 s for the healthy cabling + failover + paths + routing run on 2 shared cores.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB

from labtest.matrix.judge import names

#: like the emulated detection matrix, a stage of its own: most of its wall time runs alone
#: on the machine (software forwarding must not share its cores), so in the README's test
#: command it would hold the other workers idle for minutes; CI runs it after the matrix
pytestmark = [pytest.mark.netns, NEEDS_KERNEL_LAB,
              pytest.mark.matrix_stage("the kernel-lab detection matrix", "about 11 min")]

RUN_TIMEOUT_S = 300  # the bound on a healthy cabling + failover run


def _testbed(tmp_path: Path, faults: list[dict[str, Any]]) -> Path:
    data = yaml.safe_load(KERNEL_TESTBED.read_text())
    for key in ("limits", "suite_settings"):  # relative to the original file
        data[key] = str((KERNEL_TESTBED.parent / data[key]).resolve())
    data["emulation"]["faults"] = faults
    path = tmp_path / "kernel-lab.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _run(testbed: Path, tmp_path: Path, *suites: str) -> tuple[int, str]:
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(testbed)]
    for suite in suites:
        argv += ["--suite", suite]
    argv += ["--alluredir", str(tmp_path / "allure")]
    # the testbed's suite_settings carry the software-forwarding run settings
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          check=False)
    return done.returncode, done.stdout + done.stderr


#: what a healthy kernel lab may rightly fail: Linux replaces the route when BGP withdraws a
#: path, and frames of flows that never used the failed link are dropped during the
#: replacement (3 frames in 4 of 10 runs here): the truth about software forwarding
#: without resilient hashing, reported as a failure naming the shut uplink
FIB_UPDATE_LOSS = "failover.unaffected_flow_loss_frames"


@pytest.mark.wall_clock
def test_healthy_lab_passes_cabling_failover_paths_and_routing(tmp_path: Path) -> None:
    code, out = _run(_testbed(tmp_path, []), tmp_path, "cabling", "failover", "paths", "routing")
    rows = {line.split()[0]: line.split()[1:5] for line in out.splitlines()
            if line.split()[:1] in (["cabling"], ["failover"], ["paths"], ["routing"])}
    assert rows["cabling"][1:] == ["0", "0", "0"], out[-3000:]  # nothing failed/broken/skipped
    # every fabric link loaded on the TG's paths (both spines carry flows) and carried it:
    # 4 links x (delivery, member loss) + the ECMP spread
    assert rows["paths"] == ["9", "0", "0", "0"], out[-3000:]
    # every session re-established after failover's link events, every BFD detect in time
    assert rows["routing"] == ["12", "0", "0", "0"], out[-3000:]
    assert rows["failover"][2] == "0", out[-3000:]  # never broken: the lab could be asked
    if code == 0:
        assert "verdict: PASS" in out
        return
    # the only failure a healthy kernel lab may show is the FIB-update loss, naming its link
    failing = [ln for ln in out.splitlines() if "is FAIL" in ln]
    assert code == 1 and failing, out[-3000:]
    assert all(FIB_UPDATE_LOSS in ln and "link=leaf" in ln for ln in failing), out[-3000:]


CASES = [
    # (fault, where LLDP/the suite must point)
    pytest.param(
        {"kind": "link_down", "target": "leaf1:Ethernet0"},
        [
            "leaf1:Ethernet0 (expected spine1:Ethernet0, hears nobody)",
            "spine1:Ethernet0 (expected leaf1:Ethernet0, hears nobody)",
        ],
        id="link_down",
    ),
    pytest.param(
        {"kind": "miswired", "target": "leaf1:Ethernet0", "params": {"other": "leaf2:Ethernet0"}},
        ["leaf1:Ethernet0 hears spine1:Ethernet4", "leaf2:Ethernet0 hears spine1:Ethernet0"],
        id="miswired",
    ),
]


@pytest.mark.parametrize(("fault", "named"), CASES)
def test_cabling_names_the_faulty_cable(
    fault: dict[str, Any], named: list[str], tmp_path: Path
) -> None:
    code, out = _run(_testbed(tmp_path, [fault]), tmp_path, "cabling")
    assert code != 0 and "verdict: FAIL" in out, out[-3000:]
    for text in named:
        assert text in out, f"{text!r} not in the report:\n{out[-3000:]}"


# A silent drop (nft netdev ingress) passes cabling: packet sockets see a frame before the
# ingress hook drops it, so lldpd still hears its neighbour, as a switch's CPU does while
# its forwarding path blackholes. The routing suite catches it (below).

ROUTING_CASES = [
    # (fault, the failing tests, what each failure must name)
    pytest.param(
        {"kind": "silent_drop", "target": "leaf1:Ethernet0"},
        {"test_bgp_session[leaf1:Ethernet0--spine1:Ethernet0]",
         "test_bfd_session[leaf1:Ethernet0--spine1:Ethernet0]"},
        ["link=leaf1:Ethernet0--spine1:Ethernet0 device=leaf1 port=Ethernet0 "
         "peer=spine1:Ethernet0",
         "link=leaf1:Ethernet0--spine1:Ethernet0 device=spine1 port=Ethernet0 "
         "peer=leaf1:Ethernet0"],
        id="silent_drop",
    ),
    # BFD 10 x 300 ms on the link's sessions only (a slow profile its BGP neighbours take at
    # both ends): that link detects in 3 s at both ends, every other session stays fast
    pytest.param(
        {"kind": "slow_convergence", "target": "leaf2:Ethernet4"},
        {"test_bfd_detection_time[leaf2:Ethernet4--spine2:Ethernet4]"},
        ["bfd_detection_time_ms peer_detect_multiplier=10",
         "device=leaf2 port=Ethernet4 peer=spine2:Ethernet4: 3000 ms is FAIL",
         "device=spine2 port=Ethernet4 peer=leaf2:Ethernet4: 3000 ms is FAIL"],
        id="slow_convergence",
    ),
]


@pytest.mark.parametrize(("fault", "failing", "named"), ROUTING_CASES)
def test_routing_names_the_link_and_both_ends(
    fault: dict[str, Any], failing: set[str], named: list[str], tmp_path: Path
) -> None:
    code, out = _run(_testbed(tmp_path, [fault]), tmp_path, "routing")
    assert code == 1 and "verdict: FAIL" in out, out[-3000:]
    failed = {ln.split("::")[-1].split(" - ")[0].strip()
              for ln in out.splitlines() if ln.startswith("FAILED ")}
    assert failed == failing, out[-3000:]
    for text in named:
        assert text in out, f"{text!r} not in the report:\n{out[-3000:]}"


def test_routing_fails_a_session_a_lossy_link_keeps_flapping(tmp_path: Path) -> None:
    """Issue 39 item 1: 30 % of the link's frames dropped (nft numgen) takes BFD down every
    few seconds and the session with it; it is back up at any one read, so the suite
    passed 3 times of 3 while FRR counted 11 drops. Its uptime over the observation window
    fails it, at both ends; no other link fails."""
    link = "leaf1:Ethernet0--spine1:Ethernet0"
    fault = {"kind": "lossy_link", "target": "leaf1:Ethernet0", "params": {"loss": 0.3}}
    code, out = _run(_testbed(tmp_path, [fault]), tmp_path, "routing")
    assert code == 1 and "verdict: FAIL" in out, out[-3000:]
    failed = {ln.split("::")[-1].split(" - ")[0].strip()
              for ln in out.splitlines() if ln.startswith("FAILED ")}
    assert f"test_bgp_session[{link}]" in failed, out[-3000:]
    assert {f.split("[")[1].rstrip("]") for f in failed} == {link}, out[-3000:]
    for near, far in (("leaf1:Ethernet0", "spine1:Ethernet0"),
                      ("spine1:Ethernet0", "leaf1:Ethernet0")):  # fmt: skip
        device, port = near.split(":")
        where = f"link={link} device={device} port={port} peer={far}: 1 sessions is FAIL"
        assert any(ln.lstrip("E ").startswith(("bgp_session_flaps", "bgp_session_down"))
                   and where in ln for ln in out.splitlines()), f"{near}:\n{out[-3000:]}"


def test_unreachable_switch_fails_the_run_its_checks_broken_and_named(tmp_path: Path) -> None:
    """sshd and snmpd stopped on a random switch: its checks are broken (never failed: it
    was not asked), and the run FAILs naming it, since the lab reached the others."""
    switch = random.choice(("spine1", "spine2", "leaf1", "leaf2"))
    fault = {"kind": "unreachable_device", "target": switch}
    code, out = _run(_testbed(tmp_path, [fault]), tmp_path, "cabling")
    assert code == 1 and "verdict: FAIL" in out, f"{switch}\n{out[-3000:]}"
    assert f"{switch}'s management did not answer" in out, out[-3000:]
    causes = out[out.index("root causes") :]
    assert causes.splitlines()[1].lstrip().startswith(f"1. {switch}"), causes[:1500]
    assert "BROKEN" in out and "FAILED  cabling" not in out


#: the kernel lab's fabric links (two leaves, two spines: the TG's paths cross all four)
FABRIC_LINKS = [
    "leaf1:Ethernet0--spine1:Ethernet0",
    "leaf1:Ethernet4--spine2:Ethernet0",
    "leaf2:Ethernet0--spine1:Ethernet4",
    "leaf2:Ethernet4--spine2:Ethernet4",
]


@pytest.mark.wall_clock  # software forwarding: the healthy links' frames must not be lost
def test_paths_names_a_straggler_at_a_random_placement(tmp_path: Path) -> None:
    """A rate-limited link (the fault's default 2 Mbit/s, under the suite's 8.2 Mbit/s per
    path) fails that link, each direction named by the end sending into it; a spread it
    starved is its consequence."""
    link = random.choice(FABRIC_LINKS)
    target = random.choice(link.split("--"))  # either end names the link
    placed = f"straggler_link at {target} ({link})"
    code, out = _run(_testbed(tmp_path, [{"kind": "straggler_link", "target": target}]),
                     tmp_path, "paths")
    assert code == 1 and "verdict: FAIL" in out, f"{placed}\n{out[-3000:]}"
    failed = {ln.split("::")[-1].split(" - ")[0].strip()
              for ln in out.splitlines() if ln.startswith("FAILED ")}
    assert f"test_path_delivery[{link}]" in failed, f"{placed}\n{out[-3000:]}"
    # other tests may fail too (the leaf's spread: host streams hashed onto the slow member
    # got through at its rate only; the member's own loss test: its streams stalled behind
    # the rate limit), but only as the straggler's consequences, never causes of their own
    for test in failed - {f"test_path_delivery[{link}]"}:
        rows = [ln for ln in out.splitlines() if f"FAILED  paths: {test}:" in ln]
        assert rows and f"(consequence of {link}" in rows[0], f"{placed}: {test}\n{out[-3000:]}"
    a, b = link.split("--")
    for near, far in ((a, b), (b, a)):
        device, port = near.split(":")
        named = f"link={link} device={device} port={port} peer={far} "
        ratios = [float(r) for ln in out.splitlines() if named in ln
                  for r in re.findall(r"path_pps=\d+: ([0-9.]+) ratio is FAIL", ln)]
        # 2 Mbit/s of 8.2 offered: about a quarter (plus the queue's and control's frames)
        assert ratios and max(ratios) < 0.5, f"{placed}: {near} not named\n{out[-3000:]}"


@pytest.mark.wall_clock
def test_paths_names_an_ecmp_member_blackholing_some_flows(tmp_path: Path) -> None:
    """Issue 33 item 4: one fabric link, as an ECMP member, drops the UDP flows whose 5-tuple
    hashes into a random share (nft jhash, a random salt, one random way), BFD and BGP
    untouched so routing keeps the member: the paths suite fails and its first root cause
    is that link or one of its ends. The host pairs' iperf3 often dies at setup (a stream's
    first datagram fell in the hole): their links, loaded by BFD and BGP alone, must not
    pass and clear the member (the false proof this test caught)."""
    rng = random.Random()
    link = rng.choice(FABRIC_LINKS)
    target = rng.choice(link.split("--"))
    params = {"flow_fraction": round(rng.uniform(0.2, 0.6), 2),
              "direction": rng.choice(["ab", "ba"]), "salt": rng.randrange(65536)}
    placed = f"ecmp_blackhole at {target} ({link}), {params}"
    print(placed)
    fault = {"kind": "ecmp_blackhole", "target": target, "params": params}
    code, out = _run(_testbed(tmp_path, [fault]), tmp_path, "paths")
    assert code == 1 and "verdict: FAIL" in out, f"{placed}\n{out[-3000:]}"
    lines = out.splitlines()
    first = next((lines[i + 1] for i, ln in enumerate(lines)
                  if ln.startswith("root causes")), "")
    a, b = link.split("--")
    assert any(names(first, who) for who in (link, a, b)), f"{placed}: first {first!r}\n{out}"
    # no second cause beside it: the dead pairs' failures are its consequences
    assert "  2. " not in out.split("root causes", 1)[1].split("suite ", 1)[0], f"{placed}\n{out}"


@pytest.mark.wall_clock  # software forwarding: no frame of the paths' load may be lost
def test_routing_and_paths_pass_on_an_unnumbered_lab(tmp_path: Path) -> None:
    """``emulation.bgp: unnumbered``: eBGP on each fabric interface over IPv6 link-local,
    IPv4 routes via IPv6 next hops (RFC 5549). The routing suite finds every session by its
    port (the peer is the interface) and the TG's paths carry their load over both spines."""
    path = _testbed(tmp_path, [])
    data = yaml.safe_load(path.read_text())
    data["emulation"]["bgp"] = "unnumbered"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out = _run(path, tmp_path, "paths", "routing")
    rows = {line.split()[0]: line.split()[1:5] for line in out.splitlines()
            if line.split()[:1] in (["paths"], ["routing"])}
    assert rows.get("routing") == ["12", "0", "0", "0"], out[-3000:]
    assert rows.get("paths") == ["9", "0", "0", "0"], out[-3000:]  # as on the numbered lab
    assert code == 0 and "verdict: PASS" in out, out[-3000:]
