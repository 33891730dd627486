"""The PRBS campaign and the link watch (suites/link), driven by fake switches."""

from __future__ import annotations

from typing import Any

import pytest
from link_prbs import Campaign, plan_links
from link_watch import FecWindow, PortWatch, switch_links

from labtest.capabilities.switch import FecHistogram, FecStats, PrbsResult
from labtest.errors import InfraError, TransportTimeout
from labtest.stats import SequentialBerTest
from labtest.testbed import model


class FakeSwitch:
    """A PRBS-capable switch: results at disable, fixed errors per lane, no bit count."""

    def __init__(self, name: str, errors: dict[int, int] | None = None, ber: float = 1e-6,
                 locked: bool = True, fail_on: str | None = None) -> None:
        self.name, self.errors, self.ber, self.locked = name, errors or {}, ber, locked
        self.fail_on = fail_on
        self.running: set[str] = set()
        self.calls: list[str] = []

    def _call(self, what: str) -> None:
        self.calls.append(what)
        if self.fail_on == what.split()[0]:
            raise TransportTimeout(self.name, f"{what}: no answer")

    def prbs_start(self, port: str, pattern: str, lanes: list[int] | None = None) -> None:
        self._call(f"start {port}")
        self.running.add(port)

    def prbs_stop(self, port: str) -> None:
        self._call(f"stop {port}")
        self.running.discard(port)

    def prbs_read(self, port: str) -> list[PrbsResult]:
        self._call(f"read {port}")
        return [
            PrbsResult(lane=i, pattern="PRBS31Q", locked=self.locked, bits=None,
                       errors=self.errors.get(i, 0), ber=self.ber if self.errors.get(i) else 0.0)
            for i in range(1, 5)
        ]


class FakeLab:
    def __init__(self, devices: dict[str, Any]) -> None:
        self.devices = devices

    def device(self, name: str) -> Any:
        return self.devices[name]

    def names(self, capability: Any = None, role: str | None = None) -> list[str]:
        return [n for n, d in self.devices.items()
                if capability is None or isinstance(d, capability)]


def _testbed(*links: tuple[str, str]) -> model.Testbed:
    names = {end.split(":")[0] for pair in links for end in pair}
    return model.Testbed(
        name="fake",
        devices={n: model.Device(role="leaf", driver="sonic") for n in sorted(names)},
        links=[model.Link(a=a, b=b, speed_gbps=400, optic="400G-DR4") for a, b in links],
    )


def _campaign(lab: FakeLab, *, read_at_stop: bool = True, fallback: bool = True,
              target: float = 5e-7, max_s: float = 2.0) -> tuple[Campaign, list[str]]:
    touched: list[str] = []
    campaign = Campaign(
        lab=lab, test=SequentialBerTest(target, 0.95), max_s=max_s, pattern="PRBS31Q",
        min_stage_s=0.01, bits_fallback=lambda d: fallback, read_at_stop=lambda d: read_at_stop,
        touch=touched.append,
    )
    return campaign, touched


def test_healthy_link_is_proven_both_ways_taking_turns() -> None:
    a, b = FakeSwitch("a"), FakeSwitch("b")
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, touched = _campaign(lab)
    plans = plan_links(lab, tb, tb.links, 1.0625)
    outcome = campaign.run(plans)["a:p1--b:p1"]
    assert outcome.error is None and outcome.stages == 2  # one clean read per direction
    assert touched == ["a", "b"]
    # stage 1 disables a first and reads it; stage 2 disables b first
    assert a.calls[:3] == ["start p1", "stop p1", "read p1"]
    assert b.calls[-3:] == ["start p1", "stop p1", "read p1"]
    statements = outcome.statements(campaign.test_for)
    assert len(statements) == 8 and all(s.decision.value == "proven" for _, _, s in statements)
    # bits from the run time at 106.25 Gb/s: a stage of >= 10 ms compares >= 1e9 bits
    assert all(lane.bits >= 0.01 * 106.25e9 for _, lane, _ in statements)
    assert not a.running and not b.running


def test_readable_while_running_needs_one_stage() -> None:
    a, b = FakeSwitch("a"), FakeSwitch("b")
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, _ = _campaign(lab, read_at_stop=False)
    outcome = campaign.run(plan_links(lab, tb, tb.links, 1.0625))["a:p1--b:p1"]
    assert outcome.stages == 1
    assert a.calls == ["start p1", "read p1", "stop p1"]


def test_errors_rule_the_target_out_and_name_the_lane() -> None:
    a, b = FakeSwitch("a", errors={2: 5000}, ber=1e-5), FakeSwitch("b")
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, _ = _campaign(lab)
    outcome = campaign.run(plan_links(lab, tb, tb.links, 1.0625))["a:p1--b:p1"]
    bad = [(c.end, lane.lane) for c, lane, s in outcome.statements(campaign.test_for)
           if s.decision.value == "impossible"]
    assert bad == [("a:p1", 2)]
    lane2 = next(lane for c, lane, _ in outcome.statements(campaign.test_for)
                 if c.end == "a:p1" and lane.lane == 2)
    assert lane2.bits == pytest.approx(5000 / 1e-5)  # errors / the device's own BER


def test_loss_of_lock_is_counted_and_decides() -> None:
    a, b = FakeSwitch("a", locked=False), FakeSwitch("b")
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, _ = _campaign(lab)
    outcome = campaign.run(plan_links(lab, tb, tb.links, 1.0625))["a:p1--b:p1"]
    lanes = [lane for c, lane, _ in outcome.statements(campaign.test_for) if c.end == "a:p1"]
    assert all(lane.loss_of_lock == 1 and lane.bits == 0 for lane in lanes)
    assert outcome.stages == 2


def test_no_bit_count_and_no_deviation_breaks_the_link() -> None:
    a, b = FakeSwitch("a"), FakeSwitch("b")
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, _ = _campaign(lab, fallback=False)
    outcome = campaign.run(plan_links(lab, tb, tb.links, 1.0625))["a:p1--b:p1"]
    assert isinstance(outcome.error, InfraError) and "prbs_bit_count" in str(outcome.error)


def test_a_broken_switch_breaks_only_its_links_and_leaves_no_generator_on() -> None:
    a, b = FakeSwitch("a"), FakeSwitch("b", fail_on="start")
    c, d = FakeSwitch("c"), FakeSwitch("d")
    lab = FakeLab({"a": a, "b": b, "c": c, "d": d})
    tb = _testbed(("a:p1", "b:p1"), ("c:p1", "d:p1"))
    campaign, _ = _campaign(lab)
    outcomes = campaign.run(plan_links(lab, tb, tb.links, 1.0625))
    assert isinstance(outcomes["a:p1--b:p1"].error, TransportTimeout)
    assert outcomes["c:p1--d:p1"].error is None and outcomes["c:p1--d:p1"].stages == 2
    assert not a.running and "stop p1" in a.calls


def test_budget_bounds_an_undecidable_run() -> None:
    # 1 error per stage at a target that needs far more bits than 0.1 s gives
    a, b = FakeSwitch("a", errors={1: 1}, ber=1e-12), FakeSwitch("b", errors={1: 1}, ber=1e-12)
    lab, tb = FakeLab({"a": a, "b": b}), _testbed(("a:p1", "b:p1"))
    campaign, _ = _campaign(lab, target=1e-12, max_s=0.1)
    outcome = campaign.run(plan_links(lab, tb, tb.links, 1.0625))["a:p1--b:p1"]
    assert outcome.run_time_s < 1.0
    assert any(s.decision.value != "proven" for _, _, s in outcome.statements(campaign.test_for))


def test_links_without_prbs_or_bert_are_not_planned() -> None:
    lab = FakeLab({"a": FakeSwitch("a"), "b": object()})
    tb = _testbed(("a:p1", "b:p1"))
    plan = plan_links(lab, tb, tb.links, 1.0625)["a:p1--b:p1"]
    assert plan.mode is None and "b" in plan.note and "Prbs" in plan.note
    assert switch_links(tb, ["a"]) == []
    assert switch_links(tb, ["a", "b"]) == tb.links


# --- the watch -----------------------------------------------------------------------------


def test_port_watch_counts_down_events() -> None:
    pw = PortWatch()
    for up in (True, True, False, False, True, False, True):
        pw.add(up)
    assert (pw.samples, pw.down_samples, pw.down_events) == (7, 3, 2)
    down_first = PortWatch()
    down_first.add(False)
    assert down_first.down_events == 1


def _fec(unc: int, ber: float) -> FecStats:
    return FecStats(corrected_cw=0, uncorrectable_cw=unc, pre_fec_ber=ber)


def test_fec_window_judges_what_happened_during_the_watch() -> None:
    before = FecHistogram([1000, 50, 3, 0, 0, 0, 0, 0, 0, 1])  # an old bin-9 codeword
    after = FecHistogram([2000, 90, 5, 1, 0, 0, 0, 0, 0, 1])
    w = FecWindow(_fec(2, 1e-9), _fec(2, 3e-9), before, after)
    assert w.tail_bin == 3 and w.uncorrectable_cw == 0 and w.pre_fec_ber == 3e-9
    cleared = FecWindow(_fec(5, 1e-9), _fec(1, 1e-9), after, FecHistogram([10, 1]))
    assert cleared.uncorrectable_cw == 1 and cleared.tail_bin == 1


def test_one_sided_prbs_is_a_stated_hole_and_a_bert_leaves_the_other_receiver_open() -> None:
    """Issue 14 case 2: a SONiC port whose far end cannot generate PRBS: the plan says
    which device lacks what; with a BERT on one end the other receiver stays unmeasured."""
    lab = FakeLab({"sonic1": FakeSwitch("sonic1"), "eos1": object()})
    tb = _testbed(("sonic1:Ethernet0", "eos1:Ethernet1/1"))
    plan = plan_links(lab, tb, tb.links, 1.0625)["sonic1:Ethernet0--eos1:Ethernet1/1"]
    assert plan.mode is None and "eos1" in plan.note and "sonic1:Ethernet0 alone" in plan.note
    assert [str(e) for e in plan.unmeasured] == ["sonic1:Ethernet0", "eos1:Ethernet1/1"]

    class Bert:  # what the Bert capability asks for
        def set_pattern(self, pattern: str, lanes: list[int] | None = None) -> None: ...
        def start(self, lanes: list[int] | None = None) -> None: ...
        def stop(self, lanes: list[int] | None = None) -> None: ...
        def results(self, lanes: list[int] | None = None) -> list[PrbsResult]: return []

    bert = Bert()
    devices = dict(tb.devices)
    devices["bert1"] = model.Device(role="bert", driver="bert",
                                    vars={"port": "sonic1:Ethernet0"})
    tb2 = tb.model_copy(update={"devices": devices})
    lab2 = FakeLab({"sonic1": object(), "eos1": object(), "bert1": bert})
    plan2 = plan_links(lab2, tb2, tb2.links, 1.0625)["sonic1:Ethernet0--eos1:Ethernet1/1"]
    assert plan2.mode == "bert" and [c.end for c in plan2.checkers] == ["sonic1:Ethernet0"]
    assert [str(e) for e in plan2.unmeasured] == ["eos1:Ethernet1/1"]


class LinkStateSwitch:
    """Reports oper state (Interfaces) from a script of samples; the last one repeats."""

    def __init__(self, script: list[bool], port: str) -> None:
        self.script, self.port, self.reads = list(script), port, 0

    def interfaces(self) -> dict[str, Any]:
        from labtest.capabilities.switch import InterfaceStatus

        up = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        return {self.port: InterfaceStatus(name=self.port, admin_up=True, oper_up=up)}

    def counters(self) -> dict[str, Any]:
        return {}


def test_host_link_is_watched_through_its_switch_end() -> None:
    """Issue 23 case 2: a flapping host link is seen (and named) at the switch port."""
    from link_watch import watch_links

    leaf = LinkStateSwitch([True, False, True, False, True], "Ethernet24")
    lab = FakeLab({"leaf1": leaf, "host2": object()})
    tb = _testbed(("host2:eth0", "leaf1:Ethernet24"))
    watch = watch_links(lab, tb.links, duration_s=0.05, poll_s=0.005, fec_capable=set(),
                        watchable={"leaf1"})
    assert set(watch.ports) == {"leaf1:Ethernet24"}  # the host reports no link state
    assert watch.ports["leaf1:Ethernet24"].down_events == 2
    quiet = watch_links(lab, tb.links, duration_s=0.0, poll_s=0.005, fec_capable=set(),
                        watchable=set())
    assert quiet.ports == {}  # nothing to watch it through: the test says not proven


class BlinkingSwitch(LinkStateSwitch):
    """Every sample sees the port up, but the switch counts it going down and up twice
    (LinkFlapCounts); its counters() carry no count, as SONiC's do not."""

    def __init__(self, port: str) -> None:
        super().__init__([True], port)
        self.counted = 0

    def link_status_changes(self) -> dict[str, int]:
        changes = 10 + 4 * self.counted  # 4 changes (2 drops) between the watch's two reads
        self.counted += 1
        return {self.port: changes}


def test_a_flap_between_two_samples_is_counted_from_the_switch_own_counter() -> None:
    from link_watch import watch_links

    leaf = BlinkingSwitch("Ethernet24")
    lab = FakeLab({"leaf1": leaf, "host2": object()})
    tb = _testbed(("host2:eth0", "leaf1:Ethernet24"))
    watch = watch_links(lab, tb.links, duration_s=0.02, poll_s=0.005, fec_capable=set(),
                        watchable={"leaf1"})
    pw = watch.ports["leaf1:Ethernet24"]
    assert (pw.down_events, pw.down_samples, pw.status_changes, pw.flaps) == (0, 0, 4, 2)
    # a switch that keeps no such count: the samples alone, and the count stays unknown
    plain = watch_links(FakeLab({"leaf1": LinkStateSwitch([True], "Ethernet24"),
                                 "host2": object()}), tb.links, duration_s=0.02, poll_s=0.005,
                        fec_capable=set(), watchable={"leaf1"})
    assert plain.ports["leaf1:Ethernet24"].status_changes is None
    assert plain.ports["leaf1:Ethernet24"].flaps == 0
    # a switch that counts its changes is sampled at the slower counted pace; one that
    # does not stays at the fast one
    slow = watch_links(FakeLab({"leaf1": BlinkingSwitch("Ethernet24"), "host2": object()}),
                       tb.links, duration_s=0.05, poll_s=0.005, fec_capable=set(),
                       watchable={"leaf1"}, counted_poll_s=10.0)
    fast = watch_links(FakeLab({"leaf1": LinkStateSwitch([True], "Ethernet24"),
                                "host2": object()}), tb.links, duration_s=0.05, poll_s=0.005,
                       fec_capable=set(), watchable={"leaf1"}, counted_poll_s=10.0)
    assert slow.ports["leaf1:Ethernet24"].samples == 2  # at the start and at the deadline
    assert fast.ports["leaf1:Ethernet24"].samples > 2
    assert slow.ports["leaf1:Ethernet24"].flaps == 2


class OldReleaseSwitch(LinkStateSwitch):
    """Offers LinkFlapCounts, but its release lacks the command (SONiC before 2025)."""

    def link_status_changes(self) -> dict[str, int]:
        from labtest.errors import CommandNotSupported

        raise CommandNotSupported("leaf1", "'show interfaces flap' is not supported")


class UnreadableCountSwitch(LinkStateSwitch):
    def link_status_changes(self) -> dict[str, int]:
        from labtest.errors import ParseError

        raise ParseError("leaf1", "show interfaces flap: Ethernet24: no flap count")


def test_a_switch_without_the_flap_command_is_still_watched_by_its_samples() -> None:
    from link_watch import watch_links

    lab = FakeLab({"leaf1": OldReleaseSwitch([True, False, True], "Ethernet24"),
                   "host2": object()})
    tb = _testbed(("host2:eth0", "leaf1:Ethernet24"))
    watch = watch_links(lab, tb.links, duration_s=0.05, poll_s=0.005, fec_capable=set(),
                        watchable={"leaf1"}, counted_poll_s=10.0)
    pw = watch.ports["leaf1:Ethernet24"]
    assert not watch.errors and pw.status_changes is None
    assert pw.samples > 2 and pw.flaps == 1  # the fast pace, and the drop it sampled
    # a count the switch answers but the parser cannot read breaks the device, as before
    broken = watch_links(FakeLab({"leaf1": UnreadableCountSwitch([True], "Ethernet24"),
                                  "host2": object()}), tb.links, duration_s=0.02,
                         poll_s=0.005, fec_capable=set(), watchable={"leaf1"})
    assert "no flap count" in str(broken.errors["leaf1"])
