"""Issue 39 item 3 on the kernel lab's own testbed: bgpd killed on spine2.

The kernel lab's run (2 leaves, 2 spines, the TG on leaf1 and leaf2) listed as root causes 1
and 2 "failover never converged" on spine1's links, and spine2 third: shutting a spine1
link left the TG's flows no route, because every route left between leaf1 and leaf2 went
through spine2, whose bgpd was dead. Those events are consequences of the spine2 side,
never causes of their own on spine1's side. The routing evidence is what the suite records
since the fix of the same item: the leaf ends' sessions Active (failed), spine2's end not
asked (its vtysh: "bgpd is not running").
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from labtest.measure.rootcause import root_causes
from labtest.reports import results
from labtest.testbed import load_testbed
from tests.core.test_rootcause import doc_of, m, t

KERNEL_TESTBED = Path(__file__).resolve().parents[2] / "testbeds" / "kernel" / "leafspine.yaml"
DATA = Path(__file__).resolve().parent / "data"
ONE = {"high": 0, "source": "x"}
#: (leaf, port, spine, port) of each fabric link
SPINE1 = [("leaf1", "Ethernet0", "spine1", "Ethernet0"),
          ("leaf2", "Ethernet0", "spine1", "Ethernet4")]
SPINE2 = [("leaf1", "Ethernet4", "spine2", "Ethernet0"),
          ("leaf2", "Ethernet4", "spine2", "Ethernet4")]
DEAD = ("labtest.errors.CommandFailed: [spine2] \"vtysh -c 'show bgp summary json'\" exited "
        "with status 1: % Can't open configuration file /etc/frr/vtysh.conf due to 'No such "
        "file or directory'. / bgpd is not running")


def _link(leaf: str, lp: str, spine: str, sp: str) -> str:
    return f"{leaf}:{lp}--{spine}:{sp}"


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return results.testbed_record(load_testbed(KERNEL_TESTBED, check_drivers=False))


def _routing() -> list[dict[str, Any]]:
    out = []
    for leaf, lp, spine, sp in SPINE2:  # the leaf end answered (Active); spine2 could not be
        link = _link(leaf, lp, spine, sp)
        where = {"link": link, "device": leaf, "port": lp, "peer": f"{spine}:{sp}"}
        out.append(t("routing", f"test_bgp_session[{link}]", [
            m("routing.bgp_session_down", 1, "FAIL", ONE, state="Active", **where),
            m("routing.bgp_session_flaps", 1, "FAIL", ONE,
              seen="Active at the start of the 20.0 s window, Active at its end", **where)],
            message=f"bgp_session_down ... is FAIL\n(then the lab could not go on: {DEAD})"))
    for leaf, lp, spine, sp in SPINE1:  # spine1's sessions are Established at both ends
        link = _link(leaf, lp, spine, sp)
        out.append(t("routing", f"test_bgp_session[{link}]", [
            m("routing.bgp_session_down", 0, "PASS", ONE, state="Established", link=link,
              device=d, port=p, peer=peer)
            for d, p, peer in ((leaf, lp, f"{spine}:{sp}"), (spine, sp, f"{leaf}:{lp}"))]))
    return out


def _event(device: str, port: str, link: str, ms: float) -> dict[str, Any]:
    """A TG-carried failover event (the TG's ports on leaf1 and leaf2: ``between``), labelled
    as suites/failover records it."""
    labels = ({"why": "never converged"} if ms == float("inf")
              else {"port": port, "flow": "p1-to-p2-0", "flows_on_path": "4"})
    return t("failover", f"test_failover[shut:{device}:{port}]", [
        m("failover.convergence_ms", ms, "FAIL" if ms > 1000 else "PASS",
          {"high": 1000, "source": "x"}, link=link, device=device, between="leaf1 leaf2",
          **labels)])


def _idle_event(device: str, port: str, link: str) -> dict[str, Any]:
    """A shut link no probe flow crossed (the dead spine's: it routes nothing), recorded as
    the suite does (kernel campaign 20261212/011): no convergence to judge."""
    return t("failover", f"test_failover[shut:{device}:{port}]", [
        m("failover.flows_on_failed_path", 0, "PASS", None, link=link)])


def _events() -> list[dict[str, Any]]:
    out = []
    for leaf, lp, spine, sp in SPINE1:  # shut a spine1 link: no route is left
        link = _link(leaf, lp, spine, sp)
        out += [_event(leaf, lp, link, float("inf")), _event(spine, sp, link, float("inf"))]
    for leaf, lp, spine, sp in SPINE2:  # spine2 carried no flow: nothing to reroute
        link = _link(leaf, lp, spine, sp)
        out += [_idle_event(leaf, lp, link), _idle_event(spine, sp, link)]
    return out


def _spine1_side() -> set[str]:
    side = {"spine1"}
    for leaf, lp, spine, sp in SPINE1:
        side |= {_link(leaf, lp, spine, sp), f"{leaf}:{lp}", f"{spine}:{sp}"}
    return side


def _spine2_side() -> set[str]:
    side = {"spine2"}
    for leaf, lp, spine, sp in SPINE2:
        side |= {_link(leaf, lp, spine, sp), f"{leaf}:{lp}", f"{spine}:{sp}"}
    return side


def test_reroutes_that_never_converged_are_consequences_of_the_spine2_side(
        record: dict[str, Any]) -> None:
    events = _events()
    causes = root_causes(doc_of(record, [*_routing(), *events]))
    assert causes and causes[0].culprit in _spine2_side(), [c.cause for c in causes]
    never = {e["nodeid"] for e in events if e["outcome"] == "failed"}
    assert len(never) == 4
    # not one cause of their own: each is explained by a cause on the spine2 side
    assert not [c for c in causes if set(c.tests) & never], [c.cause for c in causes]
    explained = {n for c in causes if c.culprit in _spine2_side() for n in c.consequences}
    assert never <= explained, [(c.culprit, c.consequences) for c in causes]
    # spine1, whose links were shut, is no culprit at all
    assert not [c.culprit for c in causes if c.culprit in _spine1_side()], causes


def test_bgpd_dead_on_spine2_names_spine2_first(record: dict[str, Any]) -> None:
    """With only the leaf ends' sessions Active (spine2's end could not be asked), spine2 is
    the one element both sessions name (a session's far end is named by its reading) and
    every route the shut spine1 links left crosses. (Its first version recorded passing
    reroutes of 4 flows at spine2's links; the real run, 20261212/011, shows a dead spine's
    links carry no flow, ``flows_on_failed_path`` 0.)"""
    causes = root_causes(doc_of(record, [*_routing(), *_events()]))
    assert [c.culprit for c in causes] == ["spine2"], [c.cause for c in causes]


@pytest.mark.parametrize(("spine", "daemon"), [("spine1", "bfdd"), ("spine2", "bgpd")])
def test_a_switch_that_says_its_daemon_is_dead_is_the_cause_of_its_sessions_failing(
        record: dict[str, Any], spine: str, daemon: str) -> None:
    """Kernel campaign 20261211 case 001 (bfdd killed on spine1): the leaf ends saw their
    sessions to the spine down, and the spine's own reads said "bfdd is not running". Those
    were *broken* tests, unexplained, and the leaf ports came first as two causes. Now the
    device's word is a failure located at it (``ServiceDown``) and a session's reading
    names its far end too: one cause, the spine, with every failure its own."""
    links = SPINE1 if spine == "spine1" else SPINE2
    key = f"routing.{daemon[:3]}_session_down"
    tests = []
    for leaf, lp, sp, spp in links:
        link = _link(leaf, lp, sp, spp)
        tests.append(t("routing", f"test_session[{link}]", [
            m(key, 1, "FAIL", ONE, link=link, device=leaf, port=lp, peer=f"{sp}:{spp}")]))
        tests.append(t("routing", f"test_detection_time[{link}]", [], outcome="failed",
                       device=spine, message=f"labtest.errors.ServiceDown: [{spine}] \"vtysh -c "
                       f"'show {daemon[:3]} peers json'\": {daemon} is not running"))
    other = SPINE2 if spine == "spine1" else SPINE1
    for leaf, lp, sp, spp in other:  # the other spine's sessions are up at both ends
        link = _link(leaf, lp, sp, spp)
        tests.append(t("routing", f"test_session[{link}]", [
            m(key, 0, "PASS", ONE, link=link, device=d, port=p, peer=peer)
            for d, p, peer in ((leaf, lp, f"{sp}:{spp}"), (sp, spp, f"{leaf}:{lp}"))]))
    causes = root_causes(doc_of(record, tests))
    assert [c.culprit for c in causes] == [spine], [c.cause for c in causes]
    failed = {x["nodeid"] for x in tests if x["outcome"] == "failed"}
    assert set(causes[0].tests) | set(causes[0].consequences) == failed, causes[0]


def _shut(device: str, port: str, link: str, converged_ms: float | None,
          restored_ms: float) -> dict[str, Any]:
    """A TG-carried failover event as suites/failover records it: a reroute (``None``: no
    flow crossed the shut link) and the restoration after the link came back."""
    limit = {"high": 1000, "source": "x"}
    ms = []
    if converged_ms is None:
        ms.append(m("failover.flows_on_failed_path", 0, "PASS", None, link=link))
    else:
        why = {"why": "never converged"} if converged_ms == float("inf") else {"port": port}
        ms.append(m("failover.convergence_ms", converged_ms,
                    "FAIL" if converged_ms > 1000 else "PASS", limit, link=link,
                    device=device, between="leaf1 leaf2", **why))
    ms.append(m("failover.restoration_convergence_ms", restored_ms,
                "FAIL" if restored_ms > 1000 else "PASS", limit, link=link, device=device))
    return t("failover", f"test_failover[shut:{device}:{port}]", ms)


def test_a_down_link_explains_the_restorations_of_the_reroutes_it_stranded(
        record: dict[str, Any]) -> None:
    """Kernel campaign 20261215/013, leaf1--spine1 down: shutting either of spine2's links
    left leaf1 and leaf2 no route (never converged), and when each came back the flows had
    waited for their only route's sessions (restorations of 1.1 and 2.5 s). The restorations
    were charged to the shut links' ends alone, so spine2 (both events' end, three failures)
    came first and the down link second. A restoration after a reroute that never converged
    is the missing routes' doing too: the down link first, spine2 no cause."""
    down = "leaf1:Ethernet0--spine1:Ethernet0"
    lldp = t("cabling", f"test_cable[{down}]", [
        m("cabling.neighbour_mismatch", 1, "FAIL", ONE, device=d, port=p, link=down,
          status="missing", expected=e, seen="nobody")
        for d, p, e in (("leaf1", "Ethernet0", "spine1:Ethernet0"),
                        ("spine1", "Ethernet0", "leaf1:Ethernet0"))])
    s2a, s2b = _link(*SPINE2[0]), _link(*SPINE2[1])
    s1b = _link(*SPINE1[1])
    events = [_shut("leaf1", "Ethernet0", down, None, 0),
              _shut("spine1", "Ethernet0", down, None, 0),
              _shut("leaf1", "Ethernet4", s2a, float("inf"), 1120),
              _shut("leaf2", "Ethernet4", s2b, float("inf"), 2528),
              _shut("leaf2", "Ethernet0", s1b, None, 0),
              _shut("spine2", "Ethernet0", s2a, 144, 0)]
    causes = root_causes(doc_of(record, [lldp, *events]))
    assert [c.culprit for c in causes] == [down], [c.cause for c in causes]
    stranded = {e["nodeid"] for e in events if e["outcome"] == "failed"}
    assert stranded <= set(causes[0].consequences) | set(causes[0].tests), causes[0]


def _hop(leaf: str, lp: str, spine: str, sp: str, sender: str, ratio: float,
         moved: str = "") -> dict[str, Any]:
    """One direction of a fabric link as the paths suite's delivery records it."""
    link = _link(leaf, lp, spine, sp)
    device, port, peer = ((leaf, lp, f"{spine}:{sp}") if sender == leaf
                          else (spine, sp, f"{leaf}:{lp}"))
    labels = {"moved": moved} if moved else {}
    return m("paths.delivered_ratio", ratio, "PASS" if ratio >= 0.99 else "FAIL",
             {"low": 0.99, "source": "x"}, link=link, device=device, port=port, peer=peer,
             entered_frames="4000", carried_frames=str(int(4000 * ratio)), **labels)


def _flapping_lossy_link(moved: bool) -> list[dict[str, Any]]:
    """Kernel campaign 20261215/014: 20 % loss both ways on leaf2--spine2. Its BGP session
    dropped and came back every few seconds; the flows the paths suite had mapped onto
    spine1's members rehashed while they were loaded, so both spine1 links came up 12 %
    short at the leaf ends as well."""
    lossy = _link(*SPINE2[1])
    s1a, s1b = SPINE1
    tag = lossy if moved else ""
    tests = [
        t("paths", f"test_path_delivery[{_link(*s1a)}]",
          [_hop(*s1a, "leaf1", 0.8795, tag), _hop(*s1a, "spine1", 1.0, tag)]),
        t("paths", f"test_path_delivery[{_link(*s1b)}]",
          [_hop(*s1b, "leaf2", 0.8752, tag), _hop(*s1b, "spine1", 1.0, tag)]),
        t("paths", f"test_path_delivery[{_link(*SPINE2[0])}]",
          [_hop(*SPINE2[0], "leaf1", 1.0), _hop(*SPINE2[0], "spine2", 1.0)]),
        t("paths", f"test_path_delivery[{lossy}]",
          [_hop(*SPINE2[1], "leaf2", 0.8082), _hop(*SPINE2[1], "spine2", 0.7856)]),
        t("paths", f"test_member_loss[{lossy}]", [
            m("paths.member_loss_ratio", 0.1996, "FAIL", {"high": 0.0001, "source": "x"},
              link=lossy, device="spine2", port="Ethernet4", peer="leaf2:Ethernet4",
              sent_frames="11772", received_frames="9368")]),
        t("routing", f"test_bgp_session[{lossy}]", [
            m("routing.bgp_session_flaps", 1, "FAIL", ONE, link=lossy, device="leaf2",
              port="Ethernet4", peer="spine2:Ethernet4",
              seen="up 1.0 s at the end of the 20.0 s window: it dropped and came back")]),
    ]
    for leaf, lp, spine, sp in (*SPINE1, SPINE2[0]):
        link = _link(leaf, lp, spine, sp)
        tests.append(t("routing", f"test_bgp_session[{link}]", [
            m("routing.bgp_session_flaps", 0, "PASS", ONE, link=link, device=d, port=p,
              peer=peer, seen="up 300 s, the whole 20.0 s window")
            for d, p, peer in ((leaf, lp, f"{spine}:{sp}"), (spine, sp, f"{leaf}:{lp}"))]))
    return tests


def test_failures_measured_while_routes_moved_are_the_flapping_links_consequences(
        record: dict[str, Any]) -> None:
    """The spine1 members' shortfall was measured while the lossy link's session moved the
    routes (the paths suite reads the sessions around each load: ``moved``). Without the
    label the shortfalls needed causes of their own at innocent places (on the campaign's
    run, with its failover evidence, the leaf common to most failures, leaf2, came first);
    with it the link explains them all: the one cause."""
    lossy = _link(*SPINE2[1])
    causes = root_causes(doc_of(record, _flapping_lossy_link(moved=True)))
    assert [c.culprit for c in causes] == [lossy], [c.cause for c in causes]
    shortfalls = {f"suites/paths/test_paths.py::test_path_delivery[{_link(*lk)}]"
                  for lk in SPINE1}
    assert shortfalls <= set(causes[0].consequences) | set(causes[0].tests), causes[0]
    blind = root_causes(doc_of(record, _flapping_lossy_link(moved=False)))
    assert len(blind) > 1 and blind[0].culprit == lossy, [c.cause for c in blind]


def test_a_device_whose_own_failures_are_all_at_one_port_is_shown_as_that_port(
        record: dict[str, Any]) -> None:
    """Kernel campaign 20261216/016: spine2:Ethernet0's MTU lowered to 1400. The link's
    deliveries passed at small frames, clearing the link; spine2 explained the MTU reading
    and the large-frame losses beside it, and was shown as "spine2" though every reading
    that named it was at Ethernet0. The port is the culprit."""
    link = _link(*SPINE2[0])
    mtu = t("roce", f"test_link_mtu[{link}]", [
        m("roce.port_mtu_bytes", 1400, "FAIL", {"low": 4140, "source": "x"}, device="spine2",
          port="Ethernet0", link=link),
        m("roce.port_mtu_bytes", 9100, "PASS", {"low": 4140, "source": "x"}, device="leaf1",
          port="Ethernet4", link=link)])
    passes = [t("paths", f"test_path_delivery[{_link(*lk)}]", [
        _hop(*lk, lk[0], 1.0), _hop(*lk, lk[2], 1.0)]) for lk in (*SPINE1, *SPINE2)]
    # large frames through spine2 toward leaf1 lost while a spine1 link was shut
    lost = t("failover", "test_failover[shut:leaf1:Ethernet0]", [
        m("failover.unaffected_flow_loss_frames", 74, "FAIL", {"high": 0, "source": "x"},
          link=_link(*SPINE1[0]), device="leaf1", port="Ethernet0",
          flows="p2-to-p1-0 p2-to-p1-1", links=_link(*SPINE2[1]))])
    causes = root_causes(doc_of(record, [mtu, *passes, lost]))
    assert causes and causes[0].culprit == "spine2:Ethernet0", [c.cause for c in causes]



def test_a_link_whose_session_dropped_and_came_back_comes_before_its_leaf() -> None:
    """Kernel campaign 20261217/034, replayed from its results (testbed and tests, the
    attachments left out): 17 % loss toward leaf2 on leaf2--spine2. The link's session
    dropped and came back, its deliveries and member came up short, and while the failover
    suite shut spine1's links, flows through leaf2 lost a few frames (its routes churned).
    leaf2 was on all of those routes and came first, the link second. A session that drops
    and comes back is its link coming and going (the intermittent mode, as a session found
    down): the link first."""
    doc = json.loads(gzip.decompress((DATA / "kernel-20261217-034-lossy_link.json.gz")
                                     .read_bytes()))
    causes = root_causes(doc)
    assert causes and causes[0].culprit == "leaf2:Ethernet4--spine2:Ethernet4", [
        (c.culprit, c.cause) for c in causes]


def test_unaffected_flows_losing_frames_suspect_only_the_rerouting_ends_they_crossed() -> None:
    """Kernel campaign 20261217/032, replayed: an ECMP hole on leaf2--spine1 (leaf2's way
    up), whose member-loss readings were all NaN (iperf3's control connection hashed into
    it). Shutting spine1's links made flows on spine2's links lose a few frames; the event's
    ends (leaf1 and spine1) were both suspects of those losses, so spine1 gathered them
    besides the reroutes that never converged, and came first. An end's reroute spoils only
    the flows through it: spine1 is no suspect of flows that never crossed it, and the hole
    comes first."""
    doc = json.loads(gzip.decompress((DATA / "kernel-20261217-032-ecmp_blackhole.json.gz")
                                     .read_bytes()))
    causes = root_causes(doc)
    assert causes and causes[0].culprit == "leaf2:Ethernet0--spine1:Ethernet4", [
        (c.culprit, c.cause) for c in causes]
