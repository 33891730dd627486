"""Marks a host received that no queue read on their way made: placed on the one unread.

Issue 34's onset evaluation missed straggler host links whose only witness, the leaf's
egress queue, sat on the late switch. The hosts' NICs count the RoCE packets they received
ECN-marked; what the read queues on their way can have marked is bounded, and a host
far above that bound places the rest on the one queue not read."""

from __future__ import annotations

import random

import pytest

from labtest.doctor.evidence import PortReading, Snapshot
from labtest.doctor.judge import UNPLACED_MARGIN, Judge, Plan
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed
from labtest.testbed.model import SWITCH_ROLES

SEEDS = range(8)
DT_S = 10.0
SPEED = 400.0
PACKET_B = 4096


@pytest.fixture(scope="module")
def judge() -> Judge:
    tb = load_testbed(default_testbed())
    return Judge(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]


def _hosts(judge: Judge) -> list[str]:
    tb = judge.plan.testbed
    return sorted(str(e) for lk in tb.links for e in lk.ends
                  if tb.devices[e.device].role == "host")


def test_the_ways_into_a_host_port_are_every_switch_egress_nearer_its_leaf(judge: Judge) -> None:
    tb = judge.plan.testbed
    for port in _hosts(judge):
        ways = judge.plan.into(port)
        near = judge.plan.peer(port)
        assert near is not None and ways[0] == (near, port, 0)
        leaf = near.split(":")[0]
        for egress, far, hop in ways[1:]:
            mine, theirs = egress.split(":")[0], far.split(":")[0]
            assert {tb.devices[mine].role, tb.devices[theirs].role} <= SWITCH_ROLES
            assert mine != leaf and judge.plan.peer(egress) == far
            assert hop == (1 if theirs == leaf else 2)  # a spine, or another leaf's uplink
        # every spine's port towards the leaf, every other leaf's every uplink
        spines = {e for e, _, hop in ways if hop == 1}
        assert len(spines) == len([lk for lk in tb.links if leaf in (lk.ends[0].device,
                                                                     lk.ends[1].device)
                                   and {tb.devices[x.device].role for x in lk.ends}
                                   == {"leaf", "spine"}])
    assert judge.plan.into("spine1:Ethernet0") == ()  # no host's


def _reading(port: str, t: float, counters: dict[str, int]) -> PortReading:
    device, name = port.split(":")
    return PortReading(device, name, t, oper_up=True, speed_gbps=SPEED, counters=counters)


def _interval(judge: Judge, host: str, rng: random.Random, host_share: float,
              rx_fraction: float, late: set[str]) -> tuple[Snapshot, Snapshot, float]:
    """Two snapshots DT_S apart: each read queue on the ways into ``host`` marked a drawn
    share of what it sent; ``host`` received ``host_share`` marked at ``rx_fraction`` of
    its speed; the devices in ``late`` are unread. Returns them and the read queues' bound."""
    before, after = Snapshot(), Snapshot()
    worst: dict[int, float] = {}
    for egress, _, hop in judge.plan.into(host):
        if egress.split(":")[0] in late:
            continue
        sent = rng.randrange(10**8, 10**9)
        share = rng.choice([0.0, rng.uniform(0.0, 0.04)])
        worst[hop] = max(worst.get(hop, 0.0), share)
        before.ports[egress] = _reading(egress, 0.0, {"tx_packets": 0, "queue_ecn_marked": 0})
        after.ports[egress] = _reading(egress, DT_S, {"tx_packets": sent,
                                                      "queue_ecn_marked": int(share * sent)})
    bound = 1.0
    for w in worst.values():
        bound *= 1.0 - w
    bound = 1.0 - bound
    got_b = int(rx_fraction * SPEED * 1e9 / 8 * DT_S)
    got = got_b // PACKET_B
    before.ports[host] = _reading(host, 0.0, {"rx_rdma_packets": 0, "np_ecn_marked": 0,
                                              "rx_bytes": 0})
    after.ports[host] = _reading(host, DT_S, {
        "rx_rdma_packets": got, "np_ecn_marked": int(host_share * got), "rx_bytes": got_b})
    return after, before, bound


@pytest.mark.parametrize("seed", SEEDS)
def test_marks_beyond_what_the_read_queues_made_fail_the_late_leafs_link(
        judge: Judge, seed: int) -> None:
    rng = random.Random(seed)
    host = rng.choice(_hosts(judge))
    leaf, link = judge.plan.peer(host).split(":")[0], judge.plan.unit(host)  # type: ignore[union-attr]
    fraction = rng.uniform(0.3, 0.8)
    rng_state = rng.getstate()
    _, _, bound = _interval(judge, host, rng, 0.0, fraction, {leaf})
    share = max(bound * rng.uniform(UNPLACED_MARGIN + 0.1, 4.0), 0.01)
    rng.setstate(rng_state)
    after, before, _ = _interval(judge, host, rng, share, fraction, {leaf})
    (e,) = judge.judge(after, before)
    assert (e.unit, e.where, e.metric, e.verdict) == (link, host, "bottleneck_rate", "FAIL")
    assert e.value == pytest.approx(fraction, rel=1e-3)
    assert f"from the unread {judge.plan.peer(host)}" in e.text
    # a healthy bottleneck drains at its speed: the marks placed, nothing failed
    rng.setstate(rng_state)
    assert judge.judge(*_interval(judge, host, rng, share, 0.97, {leaf})[:2]) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_marks_the_read_queues_can_explain_place_nothing(judge: Judge, seed: int) -> None:
    rng = random.Random(100 + seed)
    host = rng.choice(_hosts(judge))
    leaf = judge.plan.peer(host).split(":")[0]  # type: ignore[union-attr]
    state = rng.getstate()
    _, _, bound = _interval(judge, host, rng, 0.0, 0.5, {leaf})
    rng.setstate(state)
    # within the margin of the bound (the reads are seconds apart): not placed
    after, before, _ = _interval(judge, host, rng, bound * rng.uniform(0.0, UNPLACED_MARGIN - 0.1),
                                 0.5, {leaf})
    assert judge.judge(after, before) == []


def test_two_unread_queues_or_an_unknown_one_place_nothing(judge: Judge) -> None:
    rng = random.Random(7)
    host = "host6:eth0"  # behind leaf3; leaf1's two uplinks are both on its way
    assert judge.judge(*_interval(judge, host, rng, 0.2, 0.5, {"leaf3", "leaf1"})[:2]) == []
    after, before, _ = _interval(judge, host, random.Random(7), 0.2, 0.5, {"leaf3"})
    spine = next(e for e, _, hop in judge.plan.into(host) if hop == 1)
    del after.ports[spine].counters["queue_ecn_marked"]  # its marks are not known
    assert judge.judge(after, before) == []
    # the leaf read: its own queue's rule judges the link, not the host's marks
    after, before, _ = _interval(judge, host, random.Random(7), 0.2, 0.5, set())
    assert judge.judge(after, before) == []
