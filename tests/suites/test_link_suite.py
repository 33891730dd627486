"""The link suite end to end on the emulated lab: healthy passes, each link fault is
caught with its culprit named, other families' faults do not fail it, and an
unreachable switch is broken, not failed."""

from __future__ import annotations

import pytest
from suite_runs import LabRuns, outcomes

RUNS = ("healthy", "link_faults", "optic_faults")
SONIC_LINKS = ("leaf1:Ethernet0--spine1:Ethernet0", "leaf2:Ethernet0--spine1:Ethernet8",
               "leaf4:Ethernet0--spine1:Ethernet24")
BERT_LINK = "leaf4:Ethernet8--spine2:Ethernet4/1"
HOST_LINKS = ("host2:eth0--leaf1:Ethernet24", "host5:eth0--leaf3:Ethernet3/1",
              "tg1:p1--leaf1:Ethernet32")


@pytest.fixture(scope="module", autouse=True)
def _start(lab_runs: LabRuns) -> None:
    lab_runs.start(*RUNS)  # all at once: their watch windows overlap


def test_healthy_lab_passes_every_link_test(lab_runs: LabRuns) -> None:
    run = lab_runs.result("healthy")
    got = outcomes(run.select("link"))
    # 8 fabric links x (PRBS, FEC, stability) + 8 host links x (FEC at the switch's
    # receiver, stability) + stability of 2 TG links
    assert len(got) == 42, run.output[-3000:]
    bad = {n: o for n, o in got.items() if o not in ("passed", "skipped")}
    assert not bad, run.output[-4000:]
    for link in (*SONIC_LINKS, BERT_LINK):  # PRBS really ran: switch PRBS, and the BERT
        assert got[f"test_prbs_ber[{link}]"] == "passed"
    for name in (f"test_link_stability[{lk}]" for lk in (*SONIC_LINKS, *HOST_LINKS)):
        assert got[name] == "passed"  # host and TG links watched through their switch end
    mixed = run.one("test_prbs_ber[leaf3:Ethernet1/1--spine1:Ethernet16]")  # SONiC-EOS
    # no PRBS partner (EOS): each receiver proven from its FEC counters, the method named
    assert mixed["outcome"] == "passed", run.output[-3000:]
    bounds = [m for m in mixed["measurements"] if m["name"] == "fec_ber_upper_bound"]
    assert {(m["labels"]["device"], m["labels"]["method"]) for m in bounds} == {
        ("leaf3", "fec_counters"), ("spine1", "fec_counters")}
    assert all(m["verdict"] == "PASS" and m["value"] <= 5e-7 for m in bounds)
    eos_fec = run.one("test_fec_live[leaf3:Ethernet1/1--spine1:Ethernet16]")
    assert [(n["requirement"], n["labels"]["device"]) for n in eos_fec["not_proven"]] == [
        ("link.fec_tail_bin", "leaf3")]  # EOS: counters judged, no histogram to judge


def test_prbs_result_states_bits_errors_confidence_and_bound(lab_runs: LabRuns) -> None:
    test = lab_runs.result("healthy").one(f"test_prbs_ber[{SONIC_LINKS[0]}]")
    names = {m["name"] for m in test["measurements"]}
    assert {"prbs_bits", "prbs_errors", "prbs_confidence", "prbs_ber_upper_bound",
            "prbs_loss_of_lock"} <= names
    bounds = [m for m in test["measurements"] if m["name"] == "prbs_ber_upper_bound"]
    assert len(bounds) == 8  # 4 lanes x 2 directions, each its own statement
    assert all(m["verdict"] == "PASS" and m["value"] <= 5e-7 for m in bounds)
    assert {m["labels"]["device"] for m in bounds} == {"leaf1", "spine1"}


def test_link_faults_fail_and_name_the_culprit(lab_runs: LabRuns) -> None:
    run = lab_runs.result("link_faults")
    got = outcomes(run.select("link"))
    failed = {n for n, o in got.items() if o == "failed"}
    expected = {
        f"test_prbs_ber[{SONIC_LINKS[0]}]",  # dirty connector: 3 dB at leaf1's connector
        f"test_fec_live[{SONIC_LINKS[0]}]",
        f"test_prbs_ber[{SONIC_LINKS[1]}]",  # marginal lane 1 at leaf2:Ethernet0
        f"test_link_stability[{SONIC_LINKS[2]}]",  # flapping
    }
    # a PRBS stage that overlaps a flap may also lose lock on the flapping link: also right
    assert expected <= failed <= expected | {f"test_prbs_ber[{SONIC_LINKS[2]}]"}, run.output[-4000:]
    assert not [n for n, o in got.items() if o == "broken" and "leaf3" not in n]
    culprits = {
        f"test_prbs_ber[{SONIC_LINKS[0]}]": "device=spine1 port=Ethernet0",  # the receiver
        f"test_fec_live[{SONIC_LINKS[0]}]": "device=spine1 port=Ethernet0",
        f"test_prbs_ber[{SONIC_LINKS[1]}]": "device=leaf2 port=Ethernet0 lane=1",
        f"test_link_stability[{SONIC_LINKS[2]}]": "device=leaf4 port=Ethernet0",
    }
    for name, where in culprits.items():
        message = run.one(name)["message"]
        assert where in message and "is FAIL" in message, message
        assert where in run.output  # the terminal output names it too
    marginal = run.one(f"test_prbs_ber[{SONIC_LINKS[1]}]")["message"]
    assert "lane=2" not in marginal  # only the marginal lane is blamed


def test_other_families_faults_do_not_fail_the_link_suite(lab_runs: LabRuns) -> None:
    run = lab_runs.result("optic_faults")
    got = outcomes(run.select("link"))
    assert got and all(o in ("passed", "skipped") for o in got.values()), run.output[-4000:]


def test_unreachable_switch_is_broken_not_failed(lab_runs: LabRuns) -> None:
    run = lab_runs.result("link_faults")  # leaf3's management plane is dead there
    tests = run.select("link", "leaf3")
    assert tests, run.output[-3000:]
    assert not [t for t in tests if t["outcome"] == "failed"]
    broken = [t for t in tests if t["outcome"] == "broken"]
    assert broken and all("leaf3" in (t["message"] or "") for t in broken)
    assert all(t["outcome"] in ("broken", "skipped") for t in tests)


def test_faults_placed_off_the_matrix_are_caught_and_named(lab_runs: LabRuns) -> None:
    """Issue 23 case 2 (flapping host link, named at both ends) and issue 14 case 1 (a
    2.5 dB dirty connector between two EOS switches: the link budget names the receiver)."""
    run = lab_runs.result("placed_faults")
    flap = run.one("test_link_stability[host2:eth0--leaf1:Ethernet24]")
    assert flap["outcome"] == "failed", run.output[-4000:]
    assert "link_flaps device=leaf1 port=Ethernet24 link=host2:eth0--leaf1:Ethernet24" in (
        flap["message"])
    dirty = run.one("test_link_loss[leaf3:Ethernet2/1--spine2:Ethernet3/1]")
    assert dirty["outcome"] == "failed", run.output[-4000:]
    assert "link_loss device=spine2 port=Ethernet3/1 lane=1" in dirty["message"]
    assert "device=leaf3 port=Ethernet2/1" not in dirty["message"]  # leaf3 receives clean
    # nothing else in the link suite fails but what the EOS link's FEC or PRBS may show
    # (where the EOS driver offers them)
    eos_link = "leaf3:Ethernet2/1--spine2:Ethernet3/1"
    link_failed = {n for n, o in outcomes(run.select("link")).items() if o == "failed"}
    assert link_failed - {f"test_fec_live[{eos_link}]", f"test_prbs_ber[{eos_link}]"} == {
        "test_link_stability[host2:eth0--leaf1:Ethernet24]"}, link_failed
