"""Root causes from synthetic results documents shaped like the emulated lab's.

Issue 14 cases 6 (``degraded_nic@host5``, PCIe narrowed) and 7 (``pfc_storm@host7``), a
flapping host link (issue 23 case 2), an unreachable device, and failures that must stay
apart. The testbed record is the default emulated lab's, as the reporting plugin writes it.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from labtest.measure.measurement import stored_value
from labtest.measure.rootcause import RootCause, explained_by, root_causes
from labtest.reports import results
from labtest.run import DEFAULT_TESTBED, culprit, format_table, verdict_table
from labtest.testbed import load_testbed

HOSTS = [f"host{i}" for i in range(1, 9)]
#: each host's leaf port in the default lab
LEAF_PORT = {
    "host1": ("leaf1", "Ethernet16"), "host2": ("leaf1", "Ethernet24"),
    "host3": ("leaf2", "Ethernet16"), "host4": ("leaf2", "Ethernet24"),
    "host5": ("leaf3", "Ethernet3/1"), "host6": ("leaf3", "Ethernet4/1"),
    "host7": ("leaf4", "Ethernet16"), "host8": ("leaf4", "Ethernet24"),
}
FRACTION = {"low": 0.9, "unit": "", "source": "acceptance"}
ZERO = {"high": 0.0, "unit": "frames", "source": "lossless"}


@pytest.fixture(scope="module")
def testbed_record() -> dict[str, Any]:
    return results.testbed_record(load_testbed(DEFAULT_TESTBED))


def m(key: str, value: float, verdict: str, limit: dict[str, Any] | None = None,
      **labels: str) -> dict[str, Any]:
    # as the results document stores it: a reroute that never converged reads "inf"
    return {"name": key, "value": stored_value(value), "unit": "", "verdict": verdict,
            "limit": limit, "limit_key": key, "labels": labels}


def t(suite: str, name: str, ms: list[dict[str, Any]], outcome: str | None = None,
      **extra: Any) -> dict[str, Any]:
    failed = any(x["verdict"] == "FAIL" for x in ms)
    return {"nodeid": f"suites/{suite}/test_{suite}.py::{name}", "name": name, "suite": suite,
            "outcome": outcome or ("failed" if failed else "passed"), "message": None,
            "device": None, "skip_reason": None, "measurements": ms, "not_proven": [], **extra}


def doc_of(testbed_record: dict[str, Any], tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"testbed": testbed_record, "tests": tests, "requirements": [], "limits": None}


def host_event(d: str, p: str, lk: str, ms: float, flow: str) -> dict[str, Any]:
    """A failover event at ``d:p`` (link ``lk``) carried by a host stream ``flow``."""
    return t("failover", f"test_failover[shut:{d}:{p}]", [
        m("failover.convergence_ms", ms, "FAIL" if ms > 1000 else "PASS",
          {"high": 1000, "source": "x"}, flow=flow, link=lk, device=d, port=p,
          carrier="hosts")])


def pair_tests(slow_host: str | None, fraction: float = 0.32) -> list[dict[str, Any]]:
    out = []
    for a, b in itertools.combinations(HOSTS, 2):
        value = fraction if slow_host in (a, b) else 0.97
        verdict = "FAIL" if value < 0.9 else "PASS"
        out.append(t("roce", f"test_pair_bandwidth[{a}--{b}]", [
            m("roce.bw_fraction_of_line", value, verdict, FRACTION, pair=f"{a}--{b}",
              bw_gbps=f"{value * 800:.1f}", line_gbps="800", client=a, server=b)]))
    return out


def pcie_tests(narrow: str | None) -> list[dict[str, Any]]:
    out = []
    for h in HOSTS:
        value = 0.5 if h == narrow else 1.0
        verdict = "FAIL" if value < 1.0 else "PASS"
        out.append(t("roce", f"test_nic_pcie_link[{h}]", [
            m("roce.nic_pcie_fraction_of_capability", value, verdict,
              {"low": 1.0, "unit": "", "source": "PCIe capability"}, device=h, netdev="eth0",
              trained="16 GT/s x8" if h == narrow else "16 GT/s x16", capable="16 GT/s x16")]))
    return out


def rings(link: str, device: str, port: str) -> list[dict[str, Any]]:
    order = " -> ".join(HOSTS)
    return [t("collective", f"test_allreduce[ring{i}]", [
        m("collective.busbw_fraction_of_ceiling", 0.62, "FAIL", FRACTION, ring=order,
          bottleneck_host="host1", link=link, device=device, port=port, evidence="util=0.62")])
        for i in range(4)]


def only(causes: list[RootCause]) -> RootCause:
    assert len(causes) == 1, [c.cause for c in causes]
    return causes[0]


# --- issue 14 case 6: degraded_nic@host5 ------------------------------------------------------


def test_degraded_nic_names_host5_with_its_pcie_link(testbed_record: dict[str, Any]) -> None:
    bisection = t("roce", "test_bisection_bandwidth", [
        m("roce.bw_fraction_of_line", 0.33, "FAIL", FRACTION, pair="host1--host5"),
        m("roce.bw_fraction_of_line", 0.96, "PASS", FRACTION, pair="host2--host6")])
    tests = pcie_tests("host5") + pair_tests("host5") + [bisection]
    cause = only(root_causes(doc_of(testbed_record, tests)))
    assert (cause.kind, cause.culprit) == ("fault", "host5")
    assert cause.cause == ("host5: roce.nic_pcie_fraction_of_capability 0.5 outside its limit "
                           "(trained=16 GT/s x8, capable=16 GT/s x16)")
    assert cause.tests == ["suites/roce/test_roce.py::test_nic_pcie_link[host5]"]
    assert "trained=16 GT/s x8" in cause.evidence[0]
    pairs = [x["nodeid"] for x in tests if "host5" in x["name"] and "pair_bandwidth" in x["name"]]
    assert len(pairs) == 7
    assert sorted(cause.consequences) == sorted([*pairs, bisection["nodeid"]])
    assert "RoCE bandwidth -544 Gb/s per pair on 7 pair(s) (worst 256 of 800 Gb/s)" in cause.impact


def test_without_a_pcie_reading_host5_is_the_common_member(
    testbed_record: dict[str, Any],
) -> None:
    cause = only(root_causes(doc_of(testbed_record, pair_tests("host5"))))
    link = "host5:eth0--leaf3:Ethernet3/1"
    assert cause.kind == "fault" and cause.culprit in ("host5", link)
    assert len(cause.consequences) == 7 and cause.tests == []
    # its NIC or its link: no measurement separates them, and the cause says so
    other = ({"host5", link} - {cause.culprit}).pop()
    assert cause.not_runner_up.startswith(f"or {other}: ")


def test_two_unrelated_failing_pairs_have_no_common_member(
    testbed_record: dict[str, Any],
) -> None:
    tests = pair_tests(None)
    for x in tests:
        if x["name"] in ("test_pair_bandwidth[host1--host2]", "test_pair_bandwidth[host3--host4]"):
            x["measurements"][0].update(value=0.5, verdict="FAIL")
            x["outcome"] = "failed"
    causes = root_causes(doc_of(testbed_record, tests))
    # every end, link and leaf of each pair carried other pairs at line rate: nothing
    # on their paths explains them, and no culprit is made up
    assert [(c.kind, c.culprit) for c in causes] == [("unexplained", "")] * 2
    assert all(not c.consequences for c in causes)


# --- issue 14 case 7: pfc_storm@host7 ---------------------------------------------------------


def storm_tests() -> list[dict[str, Any]]:
    storm = t("congestion", "test_no_pause_storm", [
        m("congestion.idle_pfc_rx_frames", 2.0e6, "FAIL", ZERO, device="leaf4", port="Ethernet16",
          peer="host7:eth0", priorities="3"),
        m("congestion.idle_pfc_rx_frames", 4.0e6, "FAIL", ZERO, device="spine1",
          port="Ethernet24", peer="leaf4:Ethernet0", priorities="3"),  # propagated upstream
        m("congestion.stormed_queues", 1, "FAIL", ZERO, device="leaf4", port="Ethernet16",
          peer="host7:eth0", queues="Ethernet16:3"),
        m("congestion.stormed_queues", 0, "PASS", ZERO, device="leaf1", port="", peer=""),
    ])
    incasts = []
    for h in HOSTS:
        leaf, port = LEAF_PORT[h]
        incasts.append(t("congestion", f"test_incast[{h}]", [
            m("congestion.lossless_drops", 0, "PASS", ZERO, receiver=h),
            m("congestion.ecn_marked_packets", 0, "FAIL", {"low": 1, "source": "x"},
              device=leaf, port=port, receiver=h),
            m("congestion.incast_goodput_fraction", 0.2, "FAIL", FRACTION, receiver=h,
              goodput_gbps="80.0"),
        ]))
    victim = t("congestion", "test_victim_flow", [
        m("congestion.victim_rate_fraction", 0.4, "FAIL", FRACTION, pair="host2--host5")])
    armed = [t("congestion", f"test_pfcwd_armed[{s}]", [
        m("congestion.pfcwd_unarmed_queues", 0, "PASS", ZERO, device=s)])
        for s in ("spine1", "leaf1", "leaf2", "leaf4")]
    return [*armed, storm, *incasts, victim]


def test_pfc_storm_names_the_storming_port_and_the_incasts_are_consequences(
    testbed_record: dict[str, Any],
) -> None:
    tests = storm_tests()
    doc = doc_of(testbed_record, tests)
    cause = only(root_causes(doc))
    assert cause.kind == "storm"
    assert cause.cause == "PFC storm at leaf4:Ethernet16 (from host7:eth0)"
    assert cause.culprit == "leaf4:Ethernet16"
    # the storm test, and the incast into host7 whose marks it names at the stormed port
    assert cause.tests == ["suites/congestion/test_congestion.py::test_no_pause_storm",
                           "suites/congestion/test_congestion.py::test_incast[host7]"]
    assert sorted(cause.consequences) == sorted(
        x["nodeid"] for x in tests if x["name"].startswith(("test_incast", "test_victim"))
        and x["name"] != "test_incast[host7]")
    assert any("spine1" in e for e in cause.evidence)  # the propagated pause is evidence
    # each incast still names its own port, but as a consequence of the storm
    table = verdict_table(tests, {"verdict": "FAIL", "reasons": [],
                                  "root_causes": [cause.as_dict()], "coverage": {}})
    text = format_table(table, 1.0)
    assert text.splitlines()[1] == "root causes (most likely first):"
    assert "  1. PFC storm at leaf4:Ethernet16 (from host7:eth0)" in text
    assert ("test_incast[host1]: leaf1:Ethernet16 (consequence of PFC storm at "
            "leaf4:Ethernet16 (from host7:eth0))") in text


# --- issue 23 case 2: a flapping host link ----------------------------------------------------


def test_a_flapping_host_link_explains_the_pairs_of_its_host(
    testbed_record: dict[str, Any],
) -> None:
    link = "host2:eth0--leaf1:Ethernet24"
    flaps = t("link", f"test_link_stability[{link}]", [
        m("link.flaps", 3, "FAIL", {"high": 0, "source": "x"}, device="leaf1", port="Ethernet24",
          link=link)])
    pairs = pair_tests("host2", fraction=0.0)
    cause = only(root_causes(doc_of(testbed_record, [flaps, *pairs])))
    assert (cause.kind, cause.culprit) == ("link_down", link)
    assert cause.cause == f"link {link} went down or flapped"
    assert len(cause.consequences) == 7
    assert all("host2" in n for n in cause.consequences)


def test_a_flapping_host_link_explains_what_its_traffic_spoilt_in_every_traffic_suite(
    testbed_record: dict[str, Any],
) -> None:
    """The full matrix's flapping_link@host5 row: an incast into host5 counted its drops at a
    leaf uplink, the bisection at host1's leaf port, a latency probe to host5 lost its QP.
    Each is the flap's consequence; a failure located at another host's own link is not."""
    link = "host5:eth0--leaf3:Ethernet3/1"
    flaps = t("link", f"test_link_stability[{link}]", [
        m("link.flaps", 8, "FAIL", {"high": 0, "source": "x"}, device="leaf3", port="Ethernet3/1",
          link=link)])
    incast = t("congestion", "test_incast[host5]", [
        m("congestion.lossless_drops", 2.7e6, "FAIL", ZERO, device="leaf2", port="Ethernet0",
          receiver="host5")])
    bisection = t("roce", "test_bisection_bandwidth", [
        m("roce.lossless_drops", 3e7, "FAIL", ZERO, device="leaf1", port="Ethernet16",
          scope="bisection")])
    latency = t("latency", "test_latency_under_incast[host7->host5]", [
        m("latency.idle_p99_us", float("nan"), "FAIL", {"high": 10, "source": "x"},
          pair="host5--host7", error="host7: Completion with error at client")])
    # errored beside an incast into host3: the queue it names is evidence, host5 its end
    errored = t("latency", "test_latency_under_incast[host5->host3]", [
        m("latency.loaded_p99_us", float("nan"), "FAIL", {"high": 40, "source": "x"},
          pair="host3--host5", error="host5: Completion with error at client", device="leaf2",
          port="Ethernet16", queue="leaf2:Ethernet16:3")])
    elsewhere = t("congestion", "test_incast[host1]", [
        m("congestion.lossless_drops", 9, "FAIL", ZERO, device="leaf1", port="Ethernet16",
          receiver="host1")])
    causes = root_causes(doc_of(testbed_record,
                                [flaps, incast, bisection, latency, errored, elsewhere]))
    by_culprit = {c.culprit: c for c in causes}
    assert set(by_culprit) == {link, "leaf1:Ethernet16"}
    assert by_culprit[link].kind == "link_down"
    assert sorted(by_culprit[link].consequences) == sorted(
        x["nodeid"] for x in (incast, latency, errored))
    # drops located at host1's leaf port, in two runs, are that port's own
    assert sorted(by_culprit["leaf1:Ethernet16"].tests) == sorted(
        [elsewhere["nodeid"], bisection["nodeid"]])


# --- an unreachable device, and failures that stay apart ---------------------------------------


def test_an_unreachable_leaf_explains_the_traffic_of_its_hosts(
    testbed_record: dict[str, Any],
) -> None:
    broken = t("cabling", "test_cable[leaf3:Ethernet1/1--spine1:Ethernet16]", [],
               outcome="broken", device="leaf3",
               message="labtest.errors.TransportTimeout: [leaf3] no SSH banner after 10.0 s",
               category="infrastructure")
    more = [t("link", f"test_fec_live[{port}]", [], outcome="broken", device="leaf3",
              message="labtest.errors.TransportTimeout: [leaf3] no SSH banner after 10.0 s")
            for port in ("Ethernet1/1", "Ethernet2/1")]
    pairs = [p for p in pair_tests("host6", fraction=0.0) if "host5" not in p["name"]]
    for p in pair_tests("host5", fraction=0.0):  # every pair into leaf3 fails: it forwards nothing
        if p["outcome"] == "failed" and "host6" not in p["name"]:
            pairs.append(p)
    causes = root_causes(doc_of(testbed_record, [broken, *more, *pairs]))
    cause = causes[0]
    assert cause.kind == "unreachable" and cause.culprit == "leaf3"
    assert cause.cause.startswith("leaf3 could not be asked: labtest.errors.TransportTimeout")
    assert len(cause.tests) == 3 and len(cause.consequences) == 12
    assert len(causes) == 1


def test_an_unreachable_leaf_that_still_forwards_is_not_blamed_for_a_host(
    testbed_record: dict[str, Any],
) -> None:
    """Management down, data plane up: host5's pairs through leaf3 pass, so host6's
    failing pairs are host6's, and leaf3 is named for what it is: not answering."""
    broken = t("cabling", "test_cable[leaf3:Ethernet1/1--spine1:Ethernet16]", [],
               outcome="broken", device="leaf3",
               message="labtest.errors.TransportTimeout: [leaf3] no SSH banner after 10.0 s",
               category="infrastructure")
    causes = root_causes(doc_of(testbed_record, [broken, *pair_tests("host6", fraction=0.0)]))
    assert {c.kind for c in causes} == {"fault", "unreachable"}
    assert {c.culprit for c in causes} & {"host6", "host6:eth0--leaf3:Ethernet4/1"}
    assert next(c for c in causes if c.kind == "unreachable").culprit == "leaf3"


def test_a_command_that_failed_is_not_an_unreachable_device(
    testbed_record: dict[str, Any],
) -> None:
    broken = t("collective", "test_allreduce[ring0]", [], outcome="broken", device="host1",
               message="labtest.errors.CommandFailed: [host1] mpirun exited 1: NCCL WARN NET/IB",
               category="infrastructure")
    pairs = pair_tests("host1", fraction=0.0)
    causes = root_causes(doc_of(testbed_record, [broken, *pairs]))
    assert [c.kind for c in causes] == ["fault", "unexplained"]
    assert causes[0].culprit in ("host1", "host1:eth0--leaf1:Ethernet16")
    assert causes[1].evidence == ["labtest.errors.CommandFailed: [host1] mpirun exited 1: "
                                  "NCCL WARN NET/IB"]
    assert "CommandFailed" not in causes[1].culprit


def test_rings_that_name_one_link_are_one_cause_and_a_far_anomaly_does_not_absorb_them(
    testbed_record: dict[str, Any],
) -> None:
    fec = t("link", "test_fec_live[leaf1:Ethernet0--spine1:Ethernet0]", [
        m("link.fec_uncorrectable_cw", 12, "FAIL", {"high": 0, "source": "x"}, device="leaf1",
          port="Ethernet0", link="leaf1:Ethernet0--spine1:Ethernet0")])
    ring_tests = rings("host6:eth0--leaf3:Ethernet4/1", "leaf3", "Ethernet4/1")
    causes = root_causes(doc_of(testbed_record, [fec, *ring_tests]))
    assert [(c.kind, c.culprit) for c in causes] == [
        ("fault", "leaf3:Ethernet4/1"), ("fault", "leaf1:Ethernet0")]
    assert causes[1].consequences == [] and causes[1].tests == [fec["nodeid"]]
    assert causes[0].tests == [x["nodeid"] for x in ring_tests]
    assert explained_by(causes) == {}


def test_a_healthy_run_has_no_root_cause(testbed_record: dict[str, Any]) -> None:
    assert root_causes(doc_of(testbed_record, pair_tests(None) + pcie_tests(None))) == []


def test_the_matrix_culprit_is_unchanged() -> None:
    test = t("link", "test_fec_live[x]", [
        m("link.fec_uncorrectable_cw", 12, "FAIL", None, device="leaf1", port="Ethernet0",
          lane="2")])
    assert culprit(test) == "leaf1:Ethernet0 lane 2"


def test_the_results_document_carries_the_root_causes(testbed_record: dict[str, Any]) -> None:
    doc = doc_of(testbed_record, storm_tests())
    record = results.verdict_record(doc)
    assert record["verdict"] == "FAIL"
    assert record["root_causes"][0]["kind"] == "storm"
    assert set(record["root_causes"][0]) == {
        "cause", "kind", "culprit", "evidence", "tests", "consequences", "not_runner_up",
        "impact", "waiting_hosts", "score", "downstream_of"}


# --- issue 23 case 3: a switch port's MTU -----------------------------------------------------


def test_a_port_mtu_explains_the_pairs_and_rings_of_the_host_behind_it(
    testbed_record: dict[str, Any],
) -> None:
    link = "host5:eth0--leaf3:Ethernet3/1"
    mtu = t("roce", f"test_link_mtu[{link}]", [
        m("roce.port_mtu_bytes", 1500, "FAIL", {"low": 4200, "source": "x"}, device="leaf3",
          port="Ethernet3/1", link=link),
        m("roce.port_mtu_bytes", 9100, "PASS", {"low": 4200, "source": "x"}, device="host5",
          port="eth0", link=link)])
    tests = [mtu, *pair_tests("host5", fraction=0.0), *rings(link, "leaf3", "Ethernet3/1")]
    cause = only(root_causes(doc_of(testbed_record, tests)))
    assert (cause.kind, cause.culprit) == ("fault", "leaf3:Ethernet3/1")
    assert cause.cause.startswith("leaf3:Ethernet3/1: roce.port_mtu_bytes, collective.busbw")
    # the pairs of host5 explained; the rings name the port themselves
    assert len(cause.consequences) == 7 and len(cause.tests) == 1 + 4


def test_uneven_ecmp_explains_the_bisection_shortfall_but_not_a_slow_pair(
    testbed_record: dict[str, Any],
) -> None:
    """Polarised hashing (every switch hashes alike): one leaf's uplink shares are 1.00/0.00
    and the bisection runs fall to half of line rate; a slow pair is left to its own rule."""
    ecmp = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", 1.0, "FAIL", device="leaf1", port="Ethernet0",
          shares="Ethernet0=1.00 Ethernet8=0.00")])
    bisection = t("roce", "test_bisection_bandwidth", [
        m("roce.bw_fraction_of_line", 0.49, "FAIL", FRACTION, pair=f"{a}--{b}", scope="bisection")
        for a, b in (("host3", "host7"), ("host4", "host8"))])
    causes = root_causes(doc_of(testbed_record, [ecmp, bisection, *pair_tests("host5")]))
    ecmp_cause = next(c for c in causes if c.kind == "ecmp")
    assert ecmp_cause.culprit == "leaf1"
    assert ecmp_cause.consequences == [bisection["nodeid"]]
    assert any(c.kind == "fault" and c.culprit in ("host5", "host5:eth0--leaf3:Ethernet3/1")
               for c in causes), causes


def _member_loss(link: str, device: str, port: str, ratio: float,
                 **labels: str) -> dict[str, Any]:
    verdict = "FAIL" if ratio > 1e-4 else "PASS"
    return t("paths", f"test_member_loss[{link}]", [
        m("paths.member_loss_ratio", ratio, verdict, {"high": 1e-4, "unit": "", "source": "x"},
          link=link, device=device, port=port, **labels)])


def leaf_pairs(leaf_hosts: tuple[str, ...], short: float) -> list[dict[str, Any]]:
    """Every pair (2 QPs both ways: 4 streams); those between ``leaf_hosts`` and the rest
    at ``short`` of line rate, the others at 0.98."""
    out = []
    for a, b in itertools.combinations(HOSTS, 2):
        value = short if (a in leaf_hosts) != (b in leaf_hosts) else 0.98
        out.append(t("roce", f"test_pair_bandwidth[{a}--{b}]", [
            m("roce.bw_fraction_of_line", value, "FAIL" if value < 0.9 else "PASS", FRACTION,
              pair=f"{a}--{b}", client=a, server=b, flows="4")]))
    return out


def test_a_lossy_member_its_leaf_stopped_using_is_the_link_not_the_leaf(
    testbed_record: dict[str, Any],
) -> None:
    """Campaign seed 3204 case 013: a 3 % lossy leaf4--spine2 link collapses the RoCE flows
    hashed onto it, so leaf4's uplink shares read 1.00/0.00 and every pair of leaf4's hosts
    falls short. The starved member's link explains the ECMP finding as well as the leaf
    does, and each pair's 4 streams (2 QPs, both ways) almost surely crossed it; the pair
    of leaf4's own hosts, which crosses no uplink, passed: that clears the leaf."""
    link = "leaf4:Ethernet8--spine2:Ethernet4/1"
    ecmp = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", 1.0, "FAIL", device="leaf4", port="Ethernet0",
          shares="Ethernet0=1.00 Ethernet8=0.00")])
    pairs = leaf_pairs(("host7", "host8"), 0.49)
    loss = _member_loss(link, "leaf4", "Ethernet8", 0.034)
    causes = root_causes(doc_of(testbed_record, [ecmp, loss, *pairs]))
    assert causes[0].culprit in (link, "leaf4:Ethernet8"), [c.culprit for c in causes]
    assert "not leaf4" in causes[0].not_runner_up, causes[0].not_runner_up
    # one stream a pair: each crossed the lossy member with odds 1/2, the leaf surely
    for p in pairs:
        for x in p["measurements"]:
            x["labels"].pop("flows")
    one = root_causes(doc_of(testbed_record, [ecmp, loss, *pairs]))
    assert one[0].culprit == "leaf4", [c.culprit for c in one]


def test_polarised_hashing_stays_the_switch_when_its_starved_member_carries_load(
    testbed_record: dict[str, Any],
) -> None:
    """The starved member's link is a rival only: every pair's streams crossed it (some
    of them surely) and passed, and the switch's uneven hash is what is left."""
    link = "leaf1:Ethernet0--spine1:Ethernet0"
    ecmp = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", 1.0, "FAIL", device="leaf1", port="Ethernet8",
          shares="Ethernet0=0.00 Ethernet8=1.00")])
    bisection = t("roce", "test_bisection_bandwidth", [
        m("roce.bw_fraction_of_line", 0.49, "FAIL", FRACTION, pair=f"{a}--{b}",
          scope="bisection", flows="32") for a, b in (("host1", "host7"), ("host2", "host8"))])
    pairs = pair_tests(None)
    for p in pairs:
        p["measurements"][0]["labels"]["flows"] = "4"
    causes = root_causes(doc_of(testbed_record, [
        ecmp, bisection, _member_loss(link, "leaf1", "Ethernet0", 0.0), *pairs]))
    assert causes[0].kind == "ecmp" and causes[0].culprit == "leaf1", causes
    assert f"not {link}" in causes[0].not_runner_up, causes[0].not_runner_up


# --- the CI matrix's red rows (seed 1423) --------------------------------------------------------


def test_every_leaf_hashing_unevenly_explains_the_bisection_beside_its_passing_queues(
    testbed_record: dict[str, Any],
) -> None:
    """ecmp_polarisation.1: the paths suite found all four leaves' spreads uneven and the
    bisection failed, claimed by none. A spreading switch was cleared by what passed at its
    own ports (CNPs, queue latency: kinds it was never seen to spoil) and paid a rate for
    every probe stream that merely crossed it."""
    spread = t("paths", "test_ecmp_spread", [
        m("paths.ecmp_spread_max_mean", 2.0, "FAIL", {"high": 1.25, "source": "x"},
          device=leaf, port=port, shares=f"{port}=256001 other=2")
        for leaf, port in (("leaf1", "Ethernet8"), ("leaf2", "Ethernet8"),
                           ("leaf3", "Ethernet2/1"), ("leaf4", "Ethernet0"))])
    bisection = t("roce", "test_bisection_bandwidth", [
        m("roce.bw_fraction_of_line", 0.74, "FAIL" if a in ("host1", "host2") else "PASS",
          FRACTION, pair=f"{a}--{b}", scope="bisection", flows="32")
        for a, b in (("host1", "host5"), ("host2", "host6"), ("host3", "host7"),
                     ("host4", "host8"))])
    cnps = [t("congestion", f"test_incast[{h}]", [
        m("congestion.cnp_handled", 1e6, "PASS", {"low": 1, "source": "x"}, host=s,
          role="sender", receiver=h, ecn_port=":".join(LEAF_PORT[h]))
        for s in HOSTS if s != h]) for h in HOSTS]
    pairs = pair_tests(None)  # every leaf's pairs ran at line rate: no leaf spoils traffic
    causes = root_causes(doc_of(testbed_record, [spread, bisection, *cnps, *pairs]))
    claimers = [c.culprit for c in causes if bisection["nodeid"] in (*c.tests, *c.consequences)]
    assert claimers and set(claimers) <= {"leaf1", "leaf2", "leaf3", "leaf4"}, causes
    assert {c.culprit for c in causes} <= {"leaf1", "leaf2", "leaf3", "leaf4"}, causes


def test_a_reroute_that_kept_losing_names_the_member_it_was_sent_onto(
    testbed_record: dict[str, Any],
) -> None:
    """ecmp_blackhole.1: with leaf2's spine1 uplink shut, host3's flow could only leave by
    leaf2--spine2, whose member holed it; the failover's evidence was the shut link's ends
    alone, so leaf2 out-explained the link. A host flow's measurement now crossed the
    routes that survived the shut too."""
    link = "leaf2:Ethernet8--spine2:Ethernet2/1"
    failover = t("failover", "test_failover[shut:leaf2:Ethernet0]", [
        m("failover.convergence_ms", float("inf"), "FAIL", {"high": 1000, "source": "x"},
          flow="host3>host1:47211", link="leaf2:Ethernet0--spine1:Ethernet8", device="leaf2",
          port="Ethernet0", carrier="hosts")])
    passed = [t("failover", f"test_failover[shut:{d}:{p}]", [
        m("failover.convergence_ms", 650.0, "PASS", {"high": 1000, "source": "x"},
          flow=f"{a}>{b}:40000", link=lk, device=d, port=p, carrier="hosts")])
        for d, p, lk, a, b in (("leaf1", "Ethernet0", "leaf1:Ethernet0--spine1:Ethernet0",
                                "host1", "host7"),
                               ("leaf4", "Ethernet8", "leaf4:Ethernet8--spine2:Ethernet4/1",
                                "host7", "host3"))]
    loss = t("paths", f"test_member_loss[{link}]", [
        m("paths.member_loss_ratio", 0.62, "FAIL", {"high": 1e-4, "source": "x"}, link=link,
          device="leaf2", port="Ethernet8", peer="spine2:Ethernet2/1")])
    pairs = pair_tests(None)
    for p in pairs:
        p["measurements"][0]["labels"]["flows"] = "4"
    causes = root_causes(doc_of(testbed_record, [failover, *passed, loss, *pairs]))
    assert causes[0].culprit in (link, "leaf2:Ethernet8"), [c.culprit for c in causes]
    assert failover["nodeid"] in (*causes[0].tests, *causes[0].consequences), causes[0]


@pytest.mark.parametrize("seen_by", ["flaps", "ring_nic_down"])
def test_a_flapping_link_is_not_cleared_by_what_crossed_it_while_up(
    testbed_record: dict[str, Any], seen_by: str,
) -> None:
    """flapping_link.2: the latency runs into host5 that met its link down failed, the ones
    that met it up passed; the passes cleared the link, and its failures went to the
    switches. A link seen flapping spoils what crosses it by the moment: the failures are
    its consequences, the passes clear it of little. failing_laser.1 (CI): a laser that died
    mid-run; the collective saw host5's NIC down, not the link suite: the same."""
    link = "host5:eth0--leaf3:Ethernet3/1"
    flaps = t("link", f"test_link_stability[{link}]", [
        m("link.flaps", 3, "FAIL", {"high": 0, "source": "x"}, device="leaf3", port="Ethernet3/1",
          link=link)]) if seen_by == "flaps" else t("collective", "test_allreduce[by-leaf]", [
        m("collective.ring_nics_down", 1, "FAIL", {"high": 0, "source": "x"},
          ring=" -> ".join(HOSTS), hosts="host5", device="host5", port="eth0", link=link)])
    idle = {"high": 10, "unit": "us", "source": "x"}
    runs = []
    others = ["host1", "host2", "host3", "host4", "host6", "host7", "host8"]
    for i, (a, b) in enumerate([*(("host5", o) for o in others), *((o, "host5") for o in others)]):
        pair = "--".join(sorted((a, b)))
        if i in (1, 9, 12):  # met the link down: no latency at all (the run's QP errored)
            ms = [m("latency.idle_p99_us", None, "FAIL", idle, pair=pair,  # type: ignore[arg-type]
                    error=f"{a}: Completion with error at client")]
            if i == 1:  # after the failover's shut link came back: that link is the stimulus
                ms[0]["labels"].update(link="leaf2:Ethernet0--spine1:Ethernet8", phase="restored")
        else:
            ms = [m("latency.idle_p99_us", 3.2, "PASS", idle, pair=pair)]
        runs.append(t("latency", f"test_latency_during_failover[{a}->{b}]", ms))
    causes = root_causes(doc_of(testbed_record, [flaps, *runs, *pair_tests(None)]))
    # the ring names host5's end of the link (its NIC's port)
    assert [c.culprit for c in causes] in ([link], ["host5:eth0"]), causes
    failed = {r["nodeid"] for r in runs if r["outcome"] == "failed"}
    assert failed <= set(causes[0].tests) | set(causes[0].consequences), causes[0]


def test_what_a_flapping_link_spoilt_at_its_own_port_and_in_a_reroute_is_its_alone(
    testbed_record: dict[str, Any],
) -> None:
    """CI's flapping_link.2 (seed 1423): host5's link flapped; drops counted at its leaf port
    and a collective's errors there were explained by the link only half (a link that comes
    and goes spoils by the moment), so leaf3, whose port it is, was added to explain them
    fully and took a failover at leaf3 whose flow into host5 lost 9.6 s while the link was
    dark. A failure located at the flapping link saw it whatever the moment; a failover flow's
    own path (proven by its baseline) can spoil its reroute only by coming and going."""
    link = "host5:eth0--leaf3:Ethernet3/1"
    at_port = {"device": "leaf3", "port": "Ethernet3/1"}
    flaps = t("link", f"test_link_stability[{link}]", [
        m("link.flaps", 12, "FAIL", {"high": 0, "source": "x"}, link=link, **at_port)])
    drops = [t("roce", "test_bisection_bandwidth", [
                 m("roce.lossless_drops", 2.4e7, "FAIL", ZERO, scope="bisection", **at_port)]),
             t("congestion", "test_incast[host5]", [
                 m("congestion.lossless_drops", 2.3e7, "FAIL", ZERO, receiver="host5",
                   **at_port)]),
             *(t("collective", f"test_allreduce[ring{i}]", [
                 m("collective.network_errors", 1, "FAIL", {"high": 0, "source": "x"},
                   ring=" -> ".join(HOSTS), **at_port)]) for i in range(2))]
    # incasts into host5's neighbour and the others cross leaf3 and pass
    incasts = [t("congestion", f"test_incast[{h}]", [
        m("congestion.lossless_drops", 0, "PASS", ZERO, receiver=h,
          senders=" ".join(x for x in HOSTS if x != h))]) for h in HOSTS if h != "host5"]

    late = host_event("leaf3", "Ethernet1/1", "leaf3:Ethernet1/1--spine1:Ethernet16", 9590.0,
                 "host1>host5:46359")
    events = [late,
              host_event("leaf2", "Ethernet0", "leaf2:Ethernet0--spine1:Ethernet8", 650.0,
                    "host3>host1:44564"),
              host_event("leaf3", "Ethernet2/1", "leaf3:Ethernet2/1--spine2:Ethernet3/1", 650.0,
                    "host6>host1:40002")]
    causes = root_causes(doc_of(testbed_record,
                                [flaps, *drops, *incasts, *events, *pair_tests(None)]))
    assert [c.culprit for c in causes] == [link], causes
    assert late["nodeid"] in causes[0].consequences, causes[0]


def test_a_flapping_uplink_explains_the_reroute_onto_it_and_the_spread_it_left(
    testbed_record: dict[str, Any],
) -> None:
    """Matrix seed 2208532, flapping_link.2: leaf3's spine2 uplink flapped. Shutting leaf3's
    other uplink left the flapping one as the only way out (host5's flow lost 19 s), and the
    paths suite found leaf3's frames spread 1.5:1 over its members, the flapping one short.
    Both were leaf3's doing until the reroute's surviving routes and the short member were
    weighed: the flapping link explains both."""
    link = "leaf3:Ethernet2/1--spine2:Ethernet3/1"
    ends = (("leaf3", "Ethernet2/1"), ("spine2", "Ethernet3/1"))
    flaps = t("link", f"test_link_stability[{link}]", [  # counted at both ends, as the suite does
        m("link.flaps", 7, "FAIL", {"high": 0, "source": "x"}, device=d, port=p, link=link)
        for d, p in ends])
    spread = {"high": 1.25, "source": "x"}
    spreads = t("paths", "test_ecmp_spread", [
        m("paths.ecmp_spread_max_mean", v, "FAIL" if v > 1.25 else "PASS", spread, device=d,
          port=p, shares=shares) for d, p, v, shares in (
            ("leaf1", "Ethernet8", 1.10, "Ethernet0=460002 Ethernet8=564003"),
            ("leaf3", "Ethernet1/1", 1.51, "Ethernet1/1=718679 Ethernet2/1=235814"),
            ("leaf4", "Ethernet0", 1.02, "Ethernet0=524002 Ethernet8=500003"))])

    late = host_event("leaf3", "Ethernet1/1", "leaf3:Ethernet1/1--spine1:Ethernet16", 18970.0,
                 "host5>host1:51257")
    events = [late, host_event("leaf2", "Ethernet0", "leaf2:Ethernet0--spine1:Ethernet8", 650.0,
                          "host3>host1:44564")]
    causes = root_causes(doc_of(testbed_record, [flaps, spreads, *events, *pair_tests(None)]))
    assert [c.culprit for c in causes] == [link], causes
    assert {late["nodeid"], spreads["nodeid"]} <= set(causes[0].consequences), causes[0]


def test_an_uplink_whose_laser_died_mid_run_explains_the_reroutes_and_spreads_it_starved(
    testbed_record: dict[str, Any],
) -> None:
    """Matrix seed 2208532, failing_laser.3: spine2:Ethernet2/1's laser died mid-run. The
    link suite had passed it; then shutting leaf2's other uplink left no way out (40 s of
    loss in two events), leaf2 and leaf1 found their spine2 members empty (spine2 had lost
    its route to leaf2), and the link's BGP and BFD sessions were down at both ends. A
    session down is the link down at that moment; the empty member's onward route is the
    dead link's: one cause, not leaf2 and leaf1 beside it."""
    link = "leaf2:Ethernet8--spine2:Ethernet2/1"
    ends = (("leaf2", "Ethernet8", "spine2:Ethernet2/1"), ("spine2", "Ethernet2/1",
                                                           "leaf2:Ethernet8"))
    one = {"high": 0, "source": "x"}
    bias = t("transceiver", "test_dom_stable[spine2:Ethernet2/1]", [
        m("transceiver.tx_bias_change", 21.0, "FAIL", {"high": 10, "source": "x"},
          device="spine2", port="Ethernet2/1", lane=str(lane)) for lane in range(1, 5)])
    sessions = [t("routing", f"test_{kind}_session[{link}]", [
        m(f"routing.{kind}_session_down", 1, "FAIL", one, link=link, device=d, port=p, peer=peer)
        for d, p, peer in ends]) for kind in ("bgp", "bfd")]
    spread = {"high": 1.25, "source": "x"}
    spreads = t("paths", "test_ecmp_spread", [
        m("paths.ecmp_spread_max_mean", v, "FAIL" if v > 1.25 else "PASS", spread, device=d,
          port=p, shares=shares, source=src, towards=dst) for d, p, v, shares, src, dst in (
            ("leaf1", "Ethernet0", 2.0, "Ethernet0=1024002 Ethernet8=3", "host1", "host3"),
            ("leaf2", "Ethernet0", 2.0, "Ethernet0=1024002 Ethernet8=0", "host3", "host5"),
            ("leaf3", "Ethernet1/1", 1.02, "Ethernet1/1=507000 Ethernet2/1=517000", "host5",
             "host7"),
            ("leaf4", "Ethernet0", 1.05, "Ethernet0=525000 Ethernet8=499000", "host7",
             "host1"))])

    def event(name: str, d: str, p: str, ms: float, flow: str) -> dict[str, Any]:
        return t("failover", f"test_failover[{name}]", [
            m("failover.convergence_ms", ms, "FAIL" if ms > 1000 else "PASS",
              {"high": 1000, "source": "x"}, flow=flow,
              link="leaf2:Ethernet0--spine1:Ethernet8", device=d, port=p, carrier="hosts")])

    events = [event("pull:osw1:1", "osw1", "", 40028.2, "host1>host3:40359"),
              event("shut:leaf2:Ethernet0", "leaf2", "Ethernet0", 39252.1, "host1>host3:34339")]
    causes = root_causes(doc_of(testbed_record,
                                [bias, *sessions, spreads, *events, *pair_tests(None)]))
    assert [c.culprit for c in causes] == [link], causes
    assert {spreads["nodeid"], *(e["nodeid"] for e in events)} <= {
        *causes[0].tests, *causes[0].consequences}, causes[0]


def test_flows_losing_before_any_failover_event_name_the_link_they_share(
    testbed_record: dict[str, Any],
) -> None:
    """silent_drop.1: a fabric link dropping 64 % one way; the failover suite's probe flows
    never settled loss-free, and each event waited out 120 s to be called broken. Now each
    flow's loss before the event is recorded with its mapped path: the dropping link is what
    the losing flows share and the clean ones clear."""
    bad = "leaf4:Ethernet0--spine1:Ethernet24"
    paths = {
        "p1-to-p2-0": ["tg1:p1--leaf1:Ethernet32", "leaf1:Ethernet0--spine1:Ethernet0", bad,
                       "tg1:p2--leaf4:Ethernet32"],
        "p1-to-p2-1": ["tg1:p1--leaf1:Ethernet32", "leaf1:Ethernet8--spine2:Ethernet1/1",
                       "leaf4:Ethernet8--spine2:Ethernet4/1", "tg1:p2--leaf4:Ethernet32"],
        "p2-to-p1-0": ["tg1:p2--leaf4:Ethernet32", bad, "leaf1:Ethernet0--spine1:Ethernet0",
                       "tg1:p1--leaf1:Ethernet32"],
        "p2-to-p1-1": ["tg1:p2--leaf4:Ethernet32", "leaf4:Ethernet8--spine2:Ethernet4/1",
                       "leaf1:Ethernet8--spine2:Ethernet1/1", "tg1:p1--leaf1:Ethernet32"],
    }
    losing = {"p1-to-p2-0": 6400, "p2-to-p1-0": 0, "p1-to-p2-1": 0, "p2-to-p1-1": 0}
    tests = [t("failover", f"test_failover[shut:{d}]", [
        m("failover.unaffected_flow_loss_frames", losing[f], "FAIL" if losing[f] else "PASS",
          {"high": 0, "source": "x"}, flow=f, links=",".join(paths[f]),
          phase="before the event") for f in paths])
        for d in ("leaf1:Ethernet0", "leaf4:Ethernet8")]
    causes = root_causes(doc_of(testbed_record, tests))
    # one direction lost, the other came back clean: the clean flows clear the spine2 side,
    # and the two links of the spine1 path are a tie the TG's two ports cannot break
    # (the paths suite's member loss names the link itself)
    assert causes[0].culprit in (bad, "leaf1:Ethernet0--spine1:Ethernet0"), causes
    assert causes[0].kind != "unexplained" and len(causes) == 1, causes
    member = t("paths", f"test_member_loss[{bad}]", [
        m("paths.member_loss_ratio", 0.64, "FAIL", {"high": 1e-4, "source": "x"}, link=bad,
          device="leaf4", port="Ethernet0", peer="spine1:Ethernet24")])
    causes = root_causes(doc_of(testbed_record, [*tests, member]))
    assert causes[0].culprit in (bad, "leaf4:Ethernet0"), causes
    assert {n for c in causes[1:] for n in c.tests} == set(), causes


def test_flows_off_the_failed_path_that_lost_name_the_lossy_link_they_crossed(
    testbed_record: dict[str, Any],
) -> None:
    """Issue 39 item 3 (kernel lab, 2 % loss on a spine2 link): while leaf1's links were
    shut in turn, the flows over spine2 (off the failed path) lost frames, and each event's
    'unaffected flow loss' read as a fault of the shut link's ends, listed as if
    independent. The losing flows' own path (``links``) holds the lossy member."""
    lossy = "leaf4:Ethernet8--spine2:Ethernet4/1"
    via_spine2 = ["leaf1:Ethernet8--spine2:Ethernet1/1", lossy]
    shut = "leaf1:Ethernet0--spine1:Ethernet0"
    events = [t("failover", f"test_failover[shut:{d}:Ethernet0]", [
        m("failover.convergence_ms", 600, "PASS", {"high": 1000, "source": "x"},
          link=shut, device=d, port="Ethernet0"),
        m("failover.unaffected_flow_loss_frames", 180, "FAIL", {"high": 0, "source": "x"},
          link=shut, device=d, port="Ethernet0", flows="p1-to-p2-1 p2-to-p1-1",
          links=",".join(via_spine2))])
        for d in ("leaf1", "spine1")]
    member = t("paths", f"test_member_loss[{lossy}]", [
        m("paths.member_loss_ratio", 0.02, "FAIL", {"high": 1e-4, "source": "x"}, link=lossy,
          device="spine2", port="Ethernet4/1", peer="leaf4:Ethernet8")])
    causes = root_causes(doc_of(testbed_record, [*events, member]))
    assert [c.culprit for c in causes] in ([lossy], ["spine2:Ethernet4/1"]), causes
    assert {e["nodeid"] for e in events} <= set(causes[0].consequences), causes[0]


def test_a_member_short_because_its_flows_collapse_further_on_names_the_lossy_link(
    testbed_record: dict[str, Any],
) -> None:
    """silent_drop.1: leaf1's spine1 member carried 37 % of its bytes because host1's RoCE
    flows to host7 that hashed onto it collapsed on spine1 -> leaf4 (64 % dropped). The share
    finding named leaf1 and its member link only, and left a second cause. What the short
    member's flows crossed after it (source host1 towards host3 and host7) are its second
    suspects now, and the lossy link explains the imbalance with its other failures."""
    bad = "leaf4:Ethernet0--spine1:Ethernet24"
    ecmp = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", 0.26, "FAIL", {"high": 0.25, "source": "x"},
          device="leaf1", port="Ethernet0", source="host1", towards="host3 host7",
          shares="Ethernet0=0.37 Ethernet8=0.63")])
    loss = t("paths", f"test_member_loss[{bad}]", [
        m("paths.member_loss_ratio", 0.64, "FAIL", {"high": 1e-4, "source": "x"}, link=bad,
          device="leaf4", port="Ethernet0", peer="spine1:Ethernet24")])
    pairs = []
    for a, b in itertools.combinations(HOSTS, 2):
        crosses = (a in ("host7", "host8")) != (b in ("host7", "host8"))  # into leaf4
        value = 0.74 if crosses else 0.97
        pairs.append(t("roce", f"test_pair_bandwidth[{a}--{b}]", [
            m("roce.bw_fraction_of_line", value, "FAIL" if value < 0.9 else "PASS", FRACTION,
              pair=f"{a}--{b}", client=a, server=b, flows="4")]))
    causes = root_causes(doc_of(testbed_record, [ecmp, loss, *pairs]))
    assert causes[0].culprit in (bad, "leaf4:Ethernet0", "spine1:Ethernet24"), causes
    assert ecmp["nodeid"] in (*causes[0].tests, *causes[0].consequences), causes[0]
    assert len(causes) == 1, causes


def test_an_incasts_goodput_crossed_every_senders_routes(testbed_record: dict[str, Any]) -> None:
    """lossy_link.1: every incast with a leaf2 sender fell short of its goodput; read as the
    receiver's link alone, each named its own host link (seven causes). The aggregate crossed
    every sender's routes: the lossy link they share explains them."""
    bad = "leaf2:Ethernet0--spine1:Ethernet8"
    incasts = []
    for r in HOSTS:
        senders = [h for h in HOSTS if h != r]
        short = r not in ("host3", "host4")  # leaf2's own hosts receive without its uplinks
        incasts.append(t("congestion", f"test_incast[{r}]", [
            m("congestion.incast_goodput_fraction", 0.71 if short else 0.95,
              "FAIL" if short else "PASS", {"low": 0.9, "source": "x"}, receiver=r,
              senders=" ".join(senders))]))
    loss = _member_loss(bad, "leaf2", "Ethernet0", 0.02, peer="spine1:Ethernet8")
    causes = root_causes(doc_of(testbed_record, [*incasts, loss, *pair_tests(None)]))
    # the counts alone cannot split leaf2 from its lossy member (every leaf2 sender crossed
    # the leaf, half its streams the member): one cause there, no receiver's link
    assert len(causes) == 1 and causes[0].culprit in (bad, "leaf2:Ethernet0", "leaf2"), causes
    claimed = set(causes[0].tests) | set(causes[0].consequences)
    assert {i["nodeid"] for i in incasts if i["outcome"] == "failed"} <= claimed, causes[0]


@pytest.mark.parametrize("fairness_at", ["host5", "host8"])
def test_a_victim_slowed_beside_an_incast_over_a_lossy_link_is_that_links_consequence(
    testbed_record: dict[str, Any], fairness_at: str,
) -> None:
    """lossy_link.1 (CI, stop 45): the victim host2->host5 ran at 0.67 of its rate beside
    the incast into host3, whose leaf1 senders cross the lossy leaf2 uplink, and the
    incast into host5 was unfair to host3. Read as the victim's own pair and the counting
    port, host5's access link explained seven tests, a second, innocent cause. The victim
    ran beside that incast (its background): the lossy link explains it."""
    bad = "leaf2:Ethernet0--spine1:Ethernet8"
    incasts = []
    for r in HOSTS:
        senders = [h for h in HOSTS if h != r]
        short = r not in ("host2", "host6")
        ms = [m("congestion.incast_goodput_fraction", 0.78 if short else 0.95,
                "FAIL" if short else "PASS", {"low": 0.85, "source": "x"}, receiver=r,
                senders=" ".join(senders))]
        if r == fairness_at:
            ms.append(m("congestion.jain_fairness_index", 0.83, "FAIL",
                        {"low": 0.9, "source": "x"}, receiver=r, host="host3"))
        incasts.append(t("congestion", f"test_incast[{r}]", ms))
    incast_senders = [h for h in HOSTS if h not in ("host3", "host2", "host5")]
    victim = t("congestion", "test_victim_flow", [
        m("congestion.victim_rate_fraction", 0.67, "FAIL", {"low": 0.7, "source": "x"},
          pair="host2--host5", host="host2", counted_at="leaf1:Ethernet24",
          incast_receiver="host3", background=" ".join(f"{s}>host3" for s in incast_senders))])
    loss = _member_loss(bad, "leaf2", "Ethernet0", 0.02, peer="spine1:Ethernet8")
    pairs = pair_tests(None)
    for p in pairs:
        x = p["measurements"][0]
        if (x["labels"]["client"] in ("host3", "host4")) != (x["labels"]["server"] in ("host3",
                                                                                      "host4")):
            x["value"], x["verdict"], p["outcome"] = 0.5, "FAIL", "failed"
    causes = root_causes(doc_of(testbed_record, [*incasts, victim, loss, *pairs]))
    # the counts cannot split leaf2 from its lossy member (as above): one cause there
    assert len(causes) == 1 and causes[0].culprit in (bad, "leaf2:Ethernet0", "leaf2"), causes
    assert victim["nodeid"] in causes[0].consequences + causes[0].tests, causes[0]


@pytest.mark.parametrize("slow", ["host1", "host3", "host6"])
def test_a_slow_host_link_explains_the_incast_into_it_not_cleared_by_those_it_sent_to(
    testbed_record: dict[str, Any], slow: str,
) -> None:
    """straggler_link.1 (CI): a host link at 71 % of its rate slowed every pair and ring of
    its host and the incast into it; the incasts it sent into (one of seven senders) ran at
    line rate. Read as a whole sender's route, each of those seven passes cleared the link
    of incasts, leaving the one into it unexplained."""
    leaf, port = LEAF_PORT[slow]
    link = f"{slow}:eth0--{leaf}:{port}"
    incasts = [t("congestion", f"test_incast[{r}]", [
        m("congestion.incast_goodput_fraction", 0.70 if r == slow else 0.98,
          "FAIL" if r == slow else "PASS", {"low": 0.85, "source": "x"}, receiver=r,
          senders=" ".join(h for h in HOSTS if h != r))]) for r in HOSTS]
    tests = [*pair_tests(slow, 0.7), *rings(link, leaf, port), *incasts]
    cause = only(root_causes(doc_of(testbed_record, tests)))
    assert cause.culprit in (link, f"{leaf}:{port}", f"{slow}:eth0"), cause
    claimed = set(cause.tests) | set(cause.consequences)
    assert f"suites/congestion/test_congestion.py::test_incast[{slow}]" in claimed, cause


@pytest.mark.parametrize("towards", ["leaf", "spine"])
def test_a_queue_on_the_member_beside_a_lossy_one_is_the_lossy_ones_consequence(
    testbed_record: dict[str, Any], towards: str,
) -> None:
    """lossy_link.1: with leaf2--spine1 losing, the RoCE flows over it collapsed and their
    load went to spine2's downlink into leaf2, where a queue raised the latency beside the
    incast; the queue named spine2:Ethernet2/1 and made it a second cause. A fabric link's
    ECMP siblings are second suspects of a queue on it: toward a leaf, the other spines'
    links into that leaf; toward a spine, the near leaf's other uplinks (the members it
    chose among), not the other leaves' links into that spine."""
    bad = "leaf2:Ethernet0--spine1:Ethernet8"
    device, port = ("spine2", "Ethernet2/1") if towards == "leaf" else ("leaf2", "Ethernet8")
    queue = t("latency", "test_latency_beside_upstream_pause[host5->host3]", [
        m("latency.hol_p99_us", 29.4, "FAIL", {"high": 26, "source": "x"}, pair="host3--host5",
          device=device, port=port, priority="3", queue=f"{device}:{port}:3")])
    loss = _member_loss(bad, "leaf2", "Ethernet0", 0.02, peer="spine1:Ethernet8")
    pairs = pair_tests(None)
    for p in pairs:
        x = p["measurements"][0]
        x["labels"]["flows"] = "4"
        if (x["labels"]["client"] in ("host3", "host4")) != (x["labels"]["server"] in ("host3",
                                                                                      "host4")):
            x["value"], x["verdict"], p["outcome"] = 0.74, "FAIL", "failed"
    causes = root_causes(doc_of(testbed_record, [queue, loss, *pairs]))
    assert len(causes) == 1 and causes[0].culprit in (bad, "leaf2:Ethernet0"), causes
    assert queue["nodeid"] in causes[0].consequences + causes[0].tests, causes[0]


def test_a_knock_on_finding_of_one_fault_does_not_push_a_second_faults_reading_down(
    testbed_record: dict[str, Any],
) -> None:
    """Campaign seed 3204 case 089: a lossy leaf3--spine2 link and an unapproved optic at
    leaf1:Ethernet24. leaf2's flows to leaf3 collapse on the lossy link, so leaf2's uplink
    shares read uneven: a finding the engine may take as a cause of its own, and it ranked
    above the optic. Every failure it explains crossed the lossy link: it is listed after
    the independent causes, as perhaps that link's consequence."""
    lossy = "leaf3:Ethernet2/1--spine2:Ethernet3/1"
    pairs = leaf_pairs(("host5", "host6"), 0.3)
    ecmp = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", 0.9, "FAIL", {"high": 0.25, "source": "x"},
          device="leaf2", port="Ethernet0", source="host3", towards="host5 host6",
          shares="Ethernet0=0.95 Ethernet8=0.05")] * 3)
    # a queue standing at spine2's port towards leaf4 while host5's flows retransmit across
    # the lossy link: named at a place the lossy link is not, on a path it is
    queue = [t("latency", f"test_latency_under_incast[{a}->{b}]", [
        m(key, value, "FAIL", {"high": 1.0, "source": "x"}, pair=f"{a}--{b}",
          device="spine2", port="Ethernet4/1", queue="spine2:Ethernet4/1:3")
        for key, value in (("latency.hol_p99_us", 40.0), ("latency.hol_p99_inflation", 9.0))])
        for a, b in itertools.product(("host5", "host6"), ("host7", "host8"))]
    optic = t("transceiver", "test_optic_approved[leaf1:Ethernet24]", [
        m("transceiver.approved", 0, "FAIL", {"low": 1, "source": "x"}, device="leaf1",
          port="Ethernet24")])
    causes = root_causes(doc_of(testbed_record, [
        *pairs, ecmp, *queue, optic, _member_loss(lossy, "leaf3", "Ethernet2/1", 0.014)]))
    culprits = [c.culprit for c in causes]
    assert culprits[0] in (lossy, "leaf3:Ethernet2/1"), culprits
    assert culprits[1] == "leaf1:Ethernet24", culprits
    for later in causes[2:]:
        assert later.downstream_of in (lossy, "leaf3:Ethernet2/1"), later


def test_a_short_members_onward_suspects_are_not_the_leaves_at_the_hosts_ends(
    testbed_record: dict[str, Any],
) -> None:
    """Campaign seed 16068975 case 178: an unqualified optic firmware at leaf2:Ethernet8 and
    spine1's link into leaf4 losing 2.7 %. leaf1's and leaf3's flows towards host3 and host7
    collapsed over spine1, so their spine1 members read short; leaf2 (host3's leaf) was
    taken as their onward suspect, and the device then explained the firmware reading too,
    named as 'leaf2' over its port. A leaf carries what every member brings it alike."""
    lossy = "leaf4:Ethernet0--spine1:Ethernet24"
    shares = t("roce", "test_ecmp_balance", [
        m("roce.ecmp_share_deviation", dev, "FAIL", {"high": 0.25, "source": "x"},
          device=leaf, port=port, source=src, towards="host7 host3", shares=shares)
        for leaf, port, src, dev, shares in (
            ("leaf1", "Ethernet0", "host1", 0.30, "Ethernet0=0.35 Ethernet8=0.65"),
            ("leaf3", "Ethernet1/1", "host5", 0.40, "Ethernet1/1=0.30 Ethernet2/1=0.70"))])
    firmware = t("transceiver", "test_optic_firmware[leaf2:Ethernet8]", [
        m("transceiver.optic_firmware_unqualified", 1, "FAIL", {"high": 0, "source": "x"},
          device="leaf2", port="Ethernet8", firmware="3.2.0", qualified="3.2.1")])
    causes = root_causes(doc_of(testbed_record, [
        *leaf_pairs(("host7", "host8"), 0.74), shares, firmware,
        _member_loss(lossy, "spine1", "Ethernet24", 0.027)]))
    culprits = [c.culprit for c in causes]
    assert culprits[0] in (lossy, "spine1:Ethernet24"), culprits
    assert culprits[1] == "leaf2:Ethernet8", culprits


def test_a_slow_reroute_carried_by_hosts_names_the_switch_not_the_surviving_member(
    testbed_record: dict[str, Any],
) -> None:
    """Campaign seed 16068975 case 191: leaf3 (no TG port) rerouted 1.7 s late; its one
    event is carried by host5's and host1's streams. The routes that survived the shut were
    taken as crossed, and leaf3's other uplink (or host5's own link) tied with leaf3 and
    won. A reroute that ended late is the event's ends' doing; only one that never stopped
    losing counts the surviving members."""
    tests = [host_event("leaf3", "Ethernet1/1", "leaf3:Ethernet1/1--spine1:Ethernet16", 2304.0,
                   "host5>host1:38561"),
             host_event("leaf2", "Ethernet0", "leaf2:Ethernet0--spine1:Ethernet8", 650.0,
                   "host3>host1:44564"),
             host_event("leaf1", "Ethernet0", "leaf1:Ethernet0--spine1:Ethernet0", 650.0,
                   "host1>host7:40000"),
             host_event("spine2", "Ethernet1/1", "leaf1:Ethernet8--spine2:Ethernet1/1", 650.0,
                   "host1>host7:40001")]
    causes = root_causes(doc_of(testbed_record, tests))
    assert [c.culprit for c in causes] == ["leaf3"], causes


def test_a_failover_with_no_member_left_names_the_member_already_down(
    testbed_record: dict[str, Any],
) -> None:
    """Kernel-lab campaign (seed 87970119, link_down at spine1:Ethernet0): leaf1--spine1 was
    down, so shutting either spine2 link of the TG's path left no route, and both events
    never converged; their evidence was the shut links' ends, and spine2 (common to both)
    was named first, the down link second. A TG-carried event names the TG ports' switches
    (``between``): the routes left between them hold the member already down."""
    down = "leaf1:Ethernet0--spine1:Ethernet0"
    cable = t("cabling", f"test_cable[{down}]", [
        m("cabling.neighbour_mismatch", 1, "FAIL", {"high": 0, "source": "x"}, device=d,
          port="Ethernet0", link=down, status="missing", seen="nobody")
        for d in ("leaf1", "spine1")])
    def event(d: str, p: str, lk: str, ms: float) -> dict[str, Any]:
        labels = {"why": "never converged"} if ms == float("inf") else {"flow": "p1-to-p2-0"}
        return t("failover", f"test_failover[shut:{d}:{p}]", [
            m("failover.convergence_ms", ms, "FAIL" if ms > 1000 else "PASS",
              {"high": 1000, "source": "x"}, link=lk, device=d, between="leaf1 leaf4",
              **labels)])
    tests = [cable,
             event("leaf1", "Ethernet8", "leaf1:Ethernet8--spine2:Ethernet1/1", float("inf")),
             event("leaf4", "Ethernet8", "leaf4:Ethernet8--spine2:Ethernet4/1", float("inf")),
             event("leaf4", "Ethernet0", "leaf4:Ethernet0--spine1:Ethernet24", 650.0),
             event("spine2", "Ethernet1/1", "leaf1:Ethernet8--spine2:Ethernet1/1", float("inf"))]
    causes = root_causes(doc_of(testbed_record, tests))
    assert [c.culprit for c in causes] in ([down], ["leaf1:Ethernet0"], ["spine1:Ethernet0"]), (
        causes)
    assert {x["nodeid"] for x in tests[1:] if x["outcome"] == "failed"} <= set(
        causes[0].consequences), causes[0]
