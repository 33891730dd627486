"""Bandwidth bursts: a link below its rate that nothing loads is named from short bursts
between hosts, at any placement, and a healthy or busy fabric names nothing.

The lab is a stand-in whose hosts answer ``ib_write_bw`` as a fabric would: one queue pair
takes one of its ECMP routes (drawn), runs at the slowest link of it, and its bytes show on
the ports of that route. (40 drawn placements, 0.4-0.85 of the rate, host and fabric links:
40 paged first, median 3 intervals, at most 7; 40 healthy fabrics: no evidence.)"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from labtest.doctor.bursts import BURST_B, BUSY, Bursts
from labtest.doctor.judge import Plan
from labtest.doctor.pager import PAGE_POSTERIOR
from labtest.errors import CapabilityAbsent, DataplaneFailed
from labtest.measure import load_limits
from labtest.run import DEFAULT_TESTBED
from labtest.testbed import load_testbed

LINE = 400.0


class Host:
    def __init__(self, lab: FakeLab, name: str) -> None:
        self.lab, self.name = lab, name

    def perftest_bandwidth(self, server: Host, address: str | None, spec: Any, *,
                           timeout_s: float) -> Any:
        routes = self.lab.bursts.fabric.routes(self.name, server.name)
        route = routes[self.lab.rng.randrange(len(routes))]
        if self.lab.dark & route:
            raise DataplaneFailed(self.name, "ib_write_bw failed",
                                  evidence="transport retry counter exceeded")
        rate = min([LINE * 0.97, *(LINE * f for lk, f in self.lab.slow.items() if lk in route)])
        self.lab.runs += 1
        links = [lk for lk in self.lab.plan.testbed.links if lk.name in route]
        at = self.name  # its bytes leave the near end of each link, walking from the source
        while links:
            lk = next(lk for lk in links if at in {e.device for e in lk.ends})
            links.remove(lk)
            near = next(e for e in lk.ends if e.device == at)
            self.lab.tx[str(near)] = self.lab.tx.get(str(near), 0) + BURST_B
            at = next(e.device for e in lk.ends if e.device != at)
        return SimpleNamespace(client=SimpleNamespace(best_average_gbps=rate))

    def perftest_latency(self, *a: Any, **k: Any) -> Any:
        raise NotImplementedError


class FakeLab:
    def __init__(self, bursts: Bursts, seed: int, slow: dict[str, float],
                 dark: frozenset[str] = frozenset()) -> None:
        self.bursts, self.rng, self.slow, self.dark, self.runs = (
            bursts, random.Random(seed), slow, dark, 0)
        self.plan = bursts.plan
        self.tx: dict[str, int] = {}  # each port's byte counter

    def ports(self) -> dict[str, Any]:
        """A snapshot's readings: each port's byte counter (probes' trickle included)."""
        return {str(e): SimpleNamespace(counters={"tx_bytes": self.tx.get(str(e), 0) + 10_000})
                for lk in self.plan.testbed.links for e in lk.ends}

    def device(self, name: str) -> Host:
        return Host(self, name)


@pytest.fixture(scope="module")
def setup() -> tuple[Plan, Any, list[str], dict[str, float]]:
    tb = load_testbed(DEFAULT_TESTBED)
    plan = Plan.of(tb)
    speeds = {str(e): LINE for lk in tb.links for e in lk.ends}
    # host and fabric links: a TG port's link carries no host's burst
    links = [lk.name for lk in tb.links if not any(e.device.startswith("tg") for e in lk.ends)]
    return plan, load_limits(tb.limits), links, speeds  # type: ignore[arg-type]


def _intervals(bursts: Bursts, lab: FakeLab, rates: dict[str, dict[str, float]],
               speeds: dict[str, float], n: int) -> list[Any]:
    evidence: list[Any] = []
    for _ in range(n):
        before = lab.ports()
        bursts.run(lab, rates, speeds)
        bursts.settle(before, lab.ports())
        evidence = bursts.evidence()
    return evidence


@pytest.mark.parametrize("seed", range(10))
def test_an_idle_straggler_anywhere_is_named_first_and_paged(
    setup: tuple[Plan, Any, list[str], dict[str, float]], seed: int,
) -> None:
    plan, profile, links, speeds = setup
    rng = np.random.default_rng(seed)
    slow = str(rng.choice(links))
    fraction = float(rng.uniform(0.4, 0.75))
    bursts = Bursts(plan, profile, per_interval=4)
    idle = {p: {"tx_bytes": 1e3} for p in speeds}
    lab = FakeLab(bursts, seed, {slow: fraction})
    evidence = _intervals(bursts, lab, idle, speeds, 10)
    # a fabric member is told from its ECMP sibling only by the route each burst took
    # (the counters of its leaf's uplinks): without that the two are twins
    assert evidence and evidence[0].unit == slow, (slow, [(e.unit, e.weight) for e in evidence])
    assert evidence[0].weight >= PAGE_POSTERIOR, evidence[0].text
    assert all(e.weight < PAGE_POSTERIOR for e in evidence[1:]), evidence[1:]
    assert bursts.covered()


@pytest.mark.parametrize("seed", range(3))
def test_a_healthy_idle_fabric_names_nothing_and_is_covered(
    setup: tuple[Plan, Any, list[str], dict[str, float]], seed: int,
) -> None:
    plan, profile, _, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    lab = FakeLab(bursts, seed, {})
    idle = {p: {"tx_bytes": 1e3} for p in speeds}
    assert not bursts.covered()
    assert _intervals(bursts, lab, idle, speeds, 6) == []
    assert bursts.covered()


def test_a_busy_path_is_not_judged_and_says_why(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    plan, profile, links, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    lab = FakeLab(bursts, 0, {links[0]: 0.5})
    busy = {p: {"tx_bytes": 0.3 * LINE * 1e9 / 8} for p in speeds}  # 30 % of line
    assert _intervals(bursts, lab, busy, speeds, 2) == []
    assert lab.runs == 0  # a share is not a rate: none was run
    assert BUSY in bursts.not_observed and bursts.covered()
    assert bursts.budget_fraction(10.0) < 1e-3  # under the probe mesh's budget
    # the first interval (no rates yet) runs nothing either
    fresh = Bursts(plan, profile)
    assert fresh.run(lab, {}, speeds) == [] and lab.runs == 0


def test_a_burst_that_dies_on_the_data_plane_fails_at_zero(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    plan, profile, links, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    host_link = next(lk for lk in links if lk.startswith("host3:"))
    lab = FakeLab(bursts, 1, {}, dark=frozenset({host_link}))
    idle = {p: {"tx_bytes": 0.0} for p in speeds}
    evidence = _intervals(bursts, lab, idle, speeds, 8)
    assert evidence and evidence[0].unit == host_link and evidence[0].value == 0.0


def test_hosts_without_perftest_are_left_out_once_and_said(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """The kernel lab's hosts run no ib_write_bw: each is named once as not observed, no
    burst is judged, and the bursts stop holding back a healthy decision."""
    plan, profile, _, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)

    class NoTool(Host):
        def perftest_bandwidth(self, *a: Any, **k: Any) -> Any:
            raise CapabilityAbsent(self.name, "ib_write_bw: command not found")

    lab = FakeLab(bursts, 0, {})
    lab.device = lambda name: NoTool(lab, name)  # type: ignore[method-assign]
    idle = {p: {"tx_bytes": 0.0} for p in speeds}
    assert _intervals(bursts, lab, idle, speeds, 4) == []
    assert bursts.covered() and not bursts.window
    assert all("command not found" in why for why in bursts.not_observed.values())


def test_a_port_without_a_rate_over_the_last_interval_is_not_taken_for_idle(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """``--once``'s first round follows its baseline read: the ports have no rates yet
    (the baseline had nothing before it), and a loaded fabric must not be burst on as idle."""
    plan, profile, links, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    lab = FakeLab(bursts, 0, {links[0]: 0.5})
    unread = {p: {} for p in speeds}
    unread[next(iter(speeds))] = {"tx_bytes": 0.0}
    assert all(b.gbps is None and "no traffic rate" in b.why
               for b in bursts.run(lab, unread, speeds))
    assert lab.runs == 0


def test_a_host_whose_counters_are_never_read_is_left_out_and_said(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """The kernel lab: its hosts' veths carry none of the NIC counters the Linux driver
    reads, so their ports never have a rate; every burst was 'not judged' without a word,
    the bursts never covered the fabric, and a healthy kernel lab never decided healthy."""
    plan, profile, _, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    lab = FakeLab(bursts, 0, {})
    hosts = set(bursts.fabric_hosts)
    rates = {p: ({} if p.split(":")[0] in hosts else {"tx_bytes": 0.0}) for p in speeds}
    assert all(b.gbps is None for b in bursts.run(lab, rates, speeds))
    assert lab.runs == 0 and not bursts.window
    left = {k.removesuffix(f" {BUSY}") for k in bursts.not_observed}
    assert left and left <= hosts, bursts.not_observed
    assert all("no traffic counters read" in why for why in bursts.not_observed.values())
    for _ in range(len(hosts)):
        bursts.run(lab, rates, speeds)
    assert bursts.covered()  # nothing left to judge with: no longer holds a decision back
    fresh = Bursts(plan, profile, per_interval=4)  # the first round: no rate anywhere yet
    fresh.run(lab, {p: {} for p in speeds}, speeds)
    assert fresh.not_observed == {}


def test_without_the_bandwidth_limit_the_bursts_say_so_and_judge_nothing(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    plan, profile, links, speeds = setup
    bare = profile.model_copy(update={"limits": {
        k: v for k, v in profile.limits.items() if k != "roce.bw_fraction_of_line"}})
    bursts = Bursts(plan, bare, per_interval=4)
    lab = FakeLab(bursts, 0, {links[0]: 0.5})
    assert bursts.run(lab, {p: {"tx_bytes": 0.0} for p in speeds}, speeds) == []
    assert lab.runs == 0 and "no roce.bw_fraction_of_line" in bursts.not_observed[BUSY]
    assert bursts.covered()  # it cannot hold back a healthy decision it could never make


def test_the_first_interval_after_the_baseline_runs_and_judges_by_its_own_counters(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """A healthy ``--once`` waited a whole round for the bursts: the first interval after
    the baseline has no rates (nothing known idle), so its bursts were not run and their
    pairs went to the back of the rotation. Now they run, and are judged only where that
    interval's own counters show the path idle; on a busy path they are dropped."""
    plan, profile, links, speeds = setup
    bursts = Bursts(plan, profile, per_interval=4)
    lab = FakeLab(bursts, 0, {})
    first = _provisional(bursts, lab, speeds, busy_b=0)
    assert len(first) == 4 and all(b.provisional for b in first) and lab.runs == 4
    assert [(b.src, b.dst) for b in first] == [(b.src, b.dst) for _, b in bursts.window]
    # pairs across the fabric first: every host link crossed in that interval
    hosts = {lk for lk in links if lk.startswith("host")}
    assert not hosts & bursts._uncovered(), sorted(bursts._uncovered())
    busy = Bursts(plan, profile, per_interval=4)
    assert _provisional(busy, FakeLab(busy, 0, {}), speeds, busy_b=10**12) and not busy.window


def _provisional(bursts: Bursts, lab: FakeLab, speeds: dict[str, float], busy_b: int) -> list[Any]:
    """One first interval: no rates known, readings with a clock, ``busy_b`` other bytes."""
    def read(t: float, extra: int) -> dict[str, Any]:
        return {p: SimpleNamespace(counters={"tx_bytes": r.counters["tx_bytes"] + extra},
                                   time_s=t, speed_gbps=LINE) for p, r in lab.ports().items()}
    before = read(0.0, 0)
    out = bursts.run(lab, {p: {} for p in speeds}, speeds)
    bursts.settle(before, read(10.0, busy_b))
    return out


def test_a_sonic_leaf_tells_which_member_a_burst_took_by_its_queue_bytes(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """SONiC counts bytes per queue only (``queue_tx_bytes``); the member a burst took was
    read from the port's ``tx_bytes`` alone, so no burst from a SONiC leaf was placed on its
    member: the two uplinks stayed twins, and coverage counted both as crossed. The same
    bursts read through either counter are placed alike."""
    plan, profile, _, speeds = setup
    idle = {p: {"tx_bytes": 1e3} for p in speeds}

    def placed(key: str) -> list[tuple[frozenset[str], ...]]:
        bursts = Bursts(plan, profile, per_interval=4)
        lab = FakeLab(bursts, 3, {})

        def read() -> dict[str, Any]:
            return {p: SimpleNamespace(counters={key: r.counters["tx_bytes"]})
                    for p, r in lab.ports().items()}
        for _ in range(3):
            before = read()
            bursts.run(lab, idle, speeds)
            bursts.settle(before, read())
        return [b.routes for _, b in bursts.window]
    port, queues = placed("tx_bytes"), placed("queue_tx_bytes")
    assert queues == port and sum(len(r) == 1 for r in port) >= 6, port


def test_a_burst_not_placed_on_its_member_crossed_neither_member_for_coverage(
    setup: tuple[Plan, Any, list[str], dict[str, float]],
) -> None:
    """A burst still on two ECMP routes (its member not told) crossed one of the two, not
    both: coverage counts what every route left to it crosses (its host links)."""
    from labtest.doctor.bursts import Burst

    plan, profile, _, _ = setup
    bursts = Bursts(plan, profile, per_interval=4)
    routes = bursts.fabric.routes("host1", "host3")
    assert len(routes) == 2
    bursts.window.append((1, Burst("host1", "host3", 390.0, LINE, routes)))
    members = (routes[0] | routes[1]) - (routes[0] & routes[1])
    uncovered = bursts._uncovered()
    assert {c for c in members if c in {lk.name for lk in plan.testbed.links}} <= uncovered
    assert not {c for c in routes[0] & routes[1] if c.startswith("host")} & uncovered
