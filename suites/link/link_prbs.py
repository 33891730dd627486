"""LINK-1: PRBS per lane on every switch-switch link, run sequentially until decided.

A *campaign* runs PRBS on every selected link at once (as a lab does: FBOSS
PrbsTest enables every port, then checks), so a miswired pair still locks on
the generator it is really cabled to, and the fabric is out of service once,
not once per link. Each receiving end is a *checker*:

- ``switch``: both ends offer the ``Prbs`` capability: generator and checker
  at both ends, both directions measured;
- ``bert``: otherwise, a BERT whose testbed ``vars.port`` is one end measures
  that end's receiver while the link stays in service (the other receiver is
  then recorded *not proven*);
- neither: the link's PRBS requirement is recorded *not proven* with the
  reason (which device lacks the capability), never skipped silently.

The run is a series of stages (enable, wait, disable, read), because some
switches (SONiC) report results only once PRBS is disabled. Counts add up
across stages; each stage lasts as long as the undecided lanes still need
(``SequentialBerTest.remaining_bits`` / lane rate, at least ``min_stage_s``),
so a healthy link stops after about the statistical minimum and a bad lane
stops as soon as its errors rule the target out. ``max_s`` bounds the whole run.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from labtest import labtime
from labtest.capabilities.instruments import Bert
from labtest.capabilities.switch import Interfaces, Prbs, PrbsResult
from labtest.errors import InfraError
from labtest.lab import Lab
from labtest.stats import BerStatement, Decision, SequentialBerTest
from labtest.testbed.model import Endpoint, Link, Testbed


@dataclass
class LaneCount:
    lane: int
    bits: float = 0.0
    errors: int = 0
    loss_of_lock: int = 0
    history: list[tuple[float, int]] = field(default_factory=list)  # cumulative, per stage


@dataclass
class Checker:
    """One receiver under test: ``device:port``, read through a switch or a BERT."""

    link: str
    device: str
    port: str
    source: str  # "switch", or the BERT's device name
    lane_rate_bps: float
    lanes: dict[int, LaneCount] = field(default_factory=dict)

    @property
    def end(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass
class LinkPlan:
    link: Link
    mode: str | None  # "switch", "bert" or None (nothing can measure it)
    checkers: list[Checker]
    note: str  # what is covered, or why nothing is

    @property
    def name(self) -> str:
        return self.link.name

    @property
    def unmeasured(self) -> list[Endpoint]:
        """Receivers of the link that no checker reads (the coverage holes of this plan)."""
        read = {c.end for c in self.checkers}
        return [e for e in self.link.ends if str(e) not in read]


@dataclass
class LinkOutcome:
    plan: LinkPlan
    stages: int = 0
    run_time_s: float = 0.0
    error: InfraError | None = None
    up_again_s: float | None = None  # seconds until both ends were oper up after PRBS

    def statements(
        self, test_for: Callable[[Checker], SequentialBerTest]
    ) -> list[tuple[Checker, LaneCount, BerStatement]]:
        out = []
        for checker in self.plan.checkers:
            test = test_for(checker)
            for lane in sorted(checker.lanes.values(), key=lambda c: c.lane):
                out.append((checker, lane, test.statement(lane.bits, lane.errors)))
        return out


def plan_links(lab: Lab, testbed: Testbed, links: list[Link], lane_rate_factor: float) -> dict:
    """How each link can be measured (see the module docstring)."""
    prbs = set(lab.names(capability=Prbs))
    berts = {
        str(testbed.devices[name].vars.get("port")): name
        for name in lab.names(capability=Bert)
        if testbed.devices[name].vars.get("port")
    }
    plans: dict[str, LinkPlan] = {}
    for lk in links:
        a, b = lk.ends
        lanes = lanes_of(lk)
        rate = (lk.speed_gbps or 400.0) * 1e9 * lane_rate_factor / lanes
        if a.device in prbs and b.device in prbs:
            checkers = [Checker(lk.name, e.device, e.port, "switch", rate) for e in (a, b)]
            plans[lk.name] = LinkPlan(lk, "switch", checkers, "switch PRBS at both ends")
            continue
        bert_ends = [(e, berts[str(e)]) for e in (a, b) if str(e) in berts]
        if bert_ends:
            e, bert = bert_ends[0]
            checkers = [Checker(lk.name, e.device, e.port, bert, rate)]
            note = f"BERT {bert} on {e} (the other direction is not measured)"
            plans[lk.name] = LinkPlan(lk, "bert", checkers, note)
            continue
        missing = [e.device for e in (a, b) if e.device not in prbs]
        able = [str(e) for e in (a, b) if e.device in prbs]
        note = (
            f"PRBS not proven: {', '.join(sorted(set(missing)))} offer(s) no Prbs capability "
            "(generator and checker), no BERT sits on either end"
            + (f", and {able[0]} alone has no PRBS partner (no loopback or checker-only "
               "mode is offered by any driver)" if able else "")
        )
        plans[lk.name] = LinkPlan(lk, None, [], note)
    return plans


def lanes_of(link: Link) -> int:
    """Lanes of the link's optic from its name (``400G-DR4`` -> 4, ``800G-DR8`` -> 8)."""
    optic = (link.optic or "").upper()
    digits = "".join(ch for ch in optic.rsplit("-", 1)[-1] if ch.isdigit())
    return int(digits) if digits else 4


@dataclass
class Campaign:
    """Runs the stages; ``bits_fallback(device)`` says whether run time may stand in for bits."""

    lab: Lab
    test: SequentialBerTest
    max_s: float
    pattern: str
    min_stage_s: float
    bits_fallback: Callable[[str], bool]
    read_at_stop: Callable[[str], bool]  # results only when PRBS is disabled (a deviation)
    touch: Callable[[str], None]  # snapshot a device before changing it
    log: list[str] = field(default_factory=list)

    def run(self, plans: dict[str, LinkPlan]) -> dict[str, LinkOutcome]:
        outcomes = {name: LinkOutcome(plan) for name, plan in plans.items()}
        active = [o for o in outcomes.values() if o.plan.mode is not None]
        for outcome in active:
            if outcome.plan.mode == "switch":
                for end in outcome.plan.link.ends:
                    self._guarded(outcome, functools.partial(self.touch, end.device))
        start = labtime.monotonic()
        while True:
            now_s = labtime.monotonic() - start
            for outcome in active:
                if outcome.error is None and self._decided(outcome):
                    outcome.run_time_s = now_s
            active = [o for o in active if o.error is None and not self._decided(o)]
            left_s = self.max_s - now_s
            if not active or left_s <= 0:
                break
            self._stage(active, min(max(self._need_s(active), self.min_stage_s), left_s))
        for outcome in active:  # undecided when the budget ran out
            outcome.run_time_s = labtime.monotonic() - start
        self._wait_up([o for o in outcomes.values() if o.plan.mode == "switch"])
        return outcomes

    # --- one stage ------------------------------------------------------------------

    def _stage(self, active: list[LinkOutcome], stage_s: float) -> None:
        """Enable every link, wait ``stage_s``, then disable and read each one.

        A link's run time is counted from the moment both its ends were enabled to
        the moment its first end is disabled: never longer than its checkers ran.
        """
        started: dict[int, float] = {}
        run_s: dict[int, float] = {}
        found: dict[int, Any] = {}
        try:
            for outcome in active:
                started[id(outcome)] = math.inf
                if self._guarded(outcome, functools.partial(self._start, outcome)):
                    started[id(outcome)] = labtime.monotonic()
            labtime.sleep(stage_s)
        finally:
            for outcome in active:
                if id(outcome) not in started:
                    continue
                if outcome.error is not None:
                    self._stop_quietly(outcome)
                    continue
                run_s[id(outcome)] = max(labtime.monotonic() - started[id(outcome)], 0.0)
                found[id(outcome)] = self._guarded(outcome,
                                                   functools.partial(self._stop_read, outcome))
        for outcome in active:
            if outcome.error is None and found.get(id(outcome)):
                self._guarded(outcome, functools.partial(
                    self._add, outcome, found[id(outcome)], run_s[id(outcome)]))
                outcome.stages += 1
        self.log.append(f"stage {len(self.log) + 1}: {len(found)} link(s), >= {stage_s:.3f} s")

    def _start(self, outcome: LinkOutcome) -> bool:
        plan = outcome.plan
        if plan.mode == "switch":
            for end in plan.link.ends:
                self.lab.device(end.device).prbs_start(end.port, self.pattern)
        else:
            bert = self.lab.device(plan.checkers[0].source)
            bert.set_pattern(self.pattern)
            bert.start()
        return True

    def _stop_read(self, outcome: LinkOutcome) -> dict[str, list[PrbsResult]]:
        plan = outcome.plan
        if plan.mode == "bert":
            checker = plan.checkers[0]
            bert = self.lab.device(checker.source)
            try:
                return {checker.end: bert.results()}
            finally:
                bert.stop()
        ends = list(plan.link.ends)
        if not any(self.read_at_stop(e.device) for e in ends):
            try:  # both checkers readable while both generators still run
                return {str(e): self.lab.device(e.device).prbs_read(e.port) for e in ends}
            finally:
                self._stop_ends(ends)
        # results at disable: the end disabled first reads clean, the other lost its
        # far generator a moment earlier; take turns from stage to stage
        first, other = ends if outcome.stages % 2 == 0 else ends[::-1]
        try:
            self.lab.device(first.device).prbs_stop(first.port)
            return {str(first): self.lab.device(first.device).prbs_read(first.port)}
        finally:
            self._stop_ends([other])

    def _stop_ends(self, ends: list[Any]) -> None:
        """Disable PRBS on every end, even when one refuses; raise the first error after."""
        errors = []
        for end in ends:
            try:
                self.lab.device(end.device).prbs_stop(end.port)
            except InfraError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _stop_quietly(self, outcome: LinkOutcome) -> None:
        """Best effort after an error: leave no generator running (the guard restores next)."""
        plan = outcome.plan
        targets = [(e.device, e.port) for e in plan.link.ends] if plan.mode == "switch" else []
        for device, port in targets:
            with contextlib.suppress(InfraError):
                self.lab.device(device).prbs_stop(port)
        if plan.mode == "bert":
            with contextlib.suppress(InfraError):
                self.lab.device(plan.checkers[0].source).stop()

    def _add(self, outcome: LinkOutcome, found: dict[str, list[PrbsResult]], run_s: float) -> None:
        for checker in outcome.plan.checkers:
            for r in found.get(checker.end, []):
                lane = checker.lanes.setdefault(r.lane, LaneCount(r.lane))
                if not r.locked:
                    lane.loss_of_lock += 1
                    continue
                lane.bits += self._bits(checker, r, run_s)
                lane.errors += int(r.errors or 0)
                lane.history.append((lane.bits, lane.errors))

    def _bits(self, checker: Checker, r: PrbsResult, run_s: float) -> float:
        """The bits compared: as reported; else errors / the device's own BER; else, where a
        deviation allows it, the run time at the lane rate (a lower bound: conservative)."""
        if r.bits is not None:
            return float(r.bits)
        if r.errors and r.ber:
            return r.errors / r.ber
        device = checker.device if checker.source == "switch" else checker.source
        if not self.bits_fallback(device):
            raise InfraError(
                device,
                f"PRBS checker on {checker.end} reports no bit count and no deviation "
                "declares a fallback (prbs_bit_count)",
            )
        return run_s * checker.lane_rate_bps

    # --- decisions ------------------------------------------------------------------

    def test_for(self, checker: Checker) -> SequentialBerTest:
        """The sequential test of one checker: its budget is ``max_s`` at its lane rate."""
        return replace(self.test, max_bits=self.max_s * checker.lane_rate_bps)

    def _decided(self, outcome: LinkOutcome) -> bool:
        """Every lane proven, ruled out, or out of lock (nothing more to learn)."""
        for checker in outcome.plan.checkers:
            if not checker.lanes:
                return False  # this direction has not been read yet
            test = self.test_for(checker)
            for lane in checker.lanes.values():
                open_ = test.decide(lane.bits, lane.errors) is Decision.CONTINUE
                if open_ and not lane.loss_of_lock:
                    return False
        return True

    def _need_s(self, active: list[LinkOutcome]) -> float:
        """Seconds the slowest undecided lane still needs (0 before the first stage)."""
        need = 0.0
        for outcome in active:
            for checker in outcome.plan.checkers:
                test = self.test_for(checker)
                for lane in checker.lanes.values():
                    bits = test.remaining_bits(lane.bits, lane.errors)
                    need = max(need, bits / checker.lane_rate_bps)
        return need

    # --- errors and the way back into service ------------------------------------------

    def _guarded(self, outcome: LinkOutcome, call: Callable[[], Any]) -> Any:
        """Run ``call``; an InfraError breaks only this link, the others go on."""
        if outcome.error is not None:
            return None
        try:
            return call()
        except InfraError as exc:
            outcome.error = exc
            return None

    def _wait_up(self, outcomes: list[LinkOutcome], timeout_s: float = 30.0) -> None:
        """Poll (bounded) until both ends of each link are oper up again after PRBS."""
        start = labtime.monotonic()
        pending = {o.plan.name: o for o in outcomes if o.error is None}
        while pending and labtime.monotonic() - start < timeout_s:
            for name, outcome in list(pending.items()):
                ends = outcome.plan.link.ends
                try:
                    up = all(_oper_up(self.lab, e.device, e.port) for e in ends)
                except InfraError:
                    up = False
                if up:
                    outcome.up_again_s = labtime.monotonic() - start
                    del pending[name]
            if pending:
                labtime.sleep(0.2)
        for outcome in pending.values():
            outcome.up_again_s = math.inf


def _oper_up(lab: Lab, device: str, port: str) -> bool:
    driver = lab.device(device)
    if not isinstance(driver, Interfaces):
        return True
    status = driver.interfaces().get(port)
    return bool(status and status.oper_up)
