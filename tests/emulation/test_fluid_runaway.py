"""Issue 36 item 1, the runaway emulator: an incast into a host whose link flaps left PFC
pauses behind that no step ever cleared, the PFC watchdog detected and restored a storm on
them at every turn, and the traffic model stepped every microsecond slice while holding
its lock (the flapping_link.1 matrix row hit its 900 s limit). The model now releases
them, polls the watchdog on its period, bounds its work per virtual second, and an
advance that still outlives its wall budget writes every thread's stack and raises a
broken (not hung) error. Work is counted in fine slices stepped, never in wall time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labtest import stackdump
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.traffic import TrafficModel, fluid_run
from labtest.emulation.model.traffic.fluid import FluidNet
from labtest.emulation.model.traffic.lab import DictLinkView
from labtest.errors import ModelStalled
from labtest.outcome import BROKEN, error_record, outcome_of
from labtest.testbed import load_testbed
from labtest.testbed import model as tbm

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
HOST_LINK = "host6:eth0--leaf3:Ethernet4/1"  # the row's flapping host link
SENDERS = ["host1", "host2", "host3", "host4", "host8"]  # other leaves than host6's


class Runaway(Exception):
    """More fine slices stepped than a test allows (raised at once: no long hang)."""


@pytest.fixture(scope="module")
def leafspine() -> tbm.Testbed:
    return load_testbed(LEAFSPINE)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Fine slices stepped: [count, limit]; a step past the limit raises ``Runaway``."""
    state = [0, 10**12]
    step = FluidNet.step

    def counting(self: FluidNet, now_s: float) -> None:
        state[0] += 1
        if state[0] > state[1]:
            raise Runaway(f"{state[0]} fine slices stepped (bound {state[1]}) at {now_s:.6f} s")
        step(self, now_s)

    monkeypatch.setattr(FluidNet, "step", counting)
    return state


def incast_into_host6(
    tb: tbm.Testbed, duration_s: float = 20.0, seed: int = 1
) -> tuple[TrafficModel, DictLinkView]:
    """ib_write_bw -q 2 from every host of another leaf into host6, as the latency suite's
    head-of-line test does beside the pair host7->host5."""
    links = DictLinkView.of(tb)
    m = TrafficModel(tb, links, np.random.default_rng(seed))
    m.run_bandwidth([(s, "host6") for s in SENDERS], qps=2, duration_s=duration_s, start=True)
    return m, links


def flap_and_read(m: TrafficModel, links: DictLinkView, until_s: float, read_s: float) -> None:
    """Advance as the lab's readers do (a read every ``read_s``), host6's link dark for
    1.42 s of every 16.24 s from 0.5 s (the row's flap)."""
    while m.now_s < until_s - 1e-9:
        t = m.now_s + read_s
        m.advance_to(t)
        links.state[HOST_LINK].up = not 0.0 <= (t - 0.5) % 16.24 < 1.42


def unused_pauses(m: TrafficModel) -> list[str]:
    """PGs at XOFF that no flow crosses (nothing can ever release them)."""
    eng = m.engine
    stale = eng.xoff_state.copy()
    stale[eng.gs] = False
    return [m.topo.ports[q // 8].endpoint for q in np.flatnonzero(stale)]


def test_flows_leaving_a_paused_pg_release_it(leafspine: tbm.Testbed) -> None:
    """The incast pauses the spines' queues into leaf3; the host link goes dark and, once
    routing converged, the flows have no route: their queued bytes are stranded (on the old
    model two PGs stayed at XOFF for good). The PGs they filled hold nothing any more: at
    XON, their peers free, and every pause frame sent is one received (the XON included)."""
    m, links = incast_into_host6(leafspine)
    m.advance(0.5)
    links.state[HOST_LINK].up = False
    for _ in range(100):  # detection and convergence, read as a lab reads: often
        m.advance(0.01)
    assert all(f.meta.get("noroute") for f in m.flows.values())
    assert unused_pauses(m) == []
    eng = m.engine
    assert not (eng.raw_pause() > 0).any()  # no queue is paused by a PG that holds nothing
    assert eng.ctr["pfc_tx"].sum() == pytest.approx(eng.ctr["pfc_rx"].sum())
    assert eng.ctr["pfc_tx"].sum() > 0


def test_a_flapping_host_link_under_incast_advances_with_bounded_work(
    leafspine: tbm.Testbed, counted: list[int]
) -> None:
    """The runaway itself. The incast ends while host6's link is dark: its flows left the
    spines' queues into leaf3 with a PG at XOFF. On the old model that pause stayed for
    good; the watchdog's compact view saw the stormed queue free and restored it, the full
    one saw it paused and detected it again, at every poll, and it polled at every "now":
    at the next flap edge (33 s) it stepped every slice (50,000 in 0.25 virtual seconds,
    166 detect/restore pairs; the lab's run never finished). Now 4,600 slices in 40 s."""
    m, links = incast_into_host6(leafspine, duration_s=17.5)
    counted[1] = 20_000  # whole run: two flaps, an incast, 400 reads
    flap_and_read(m, links, until_s=40.0, read_s=0.1)
    eng = m.engine
    assert unused_pauses(m) == [] and not eng.wd_storm.any()
    assert eng.wd_detected.sum() == eng.wd_restored.sum() <= 4  # no detect/restore churn
    assert m.steps == counted[0]  # the model's own count is the work done


def test_a_model_unsettled_at_every_turn_costs_bounded_work(
    leafspine: tbm.Testbed, counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The class of the bug, whatever unsettles the model: a watchdog that changes
    something at every poll and is due at every instant. The step budget holds the work to
    its burst plus its rate per virtual second; the counters still move (along the last
    settling run's rates) and bytes are conserved."""

    def always(net: FluidNet, t: float) -> bool:
        net.refresh()
        return True

    monkeypatch.setattr(fluid_run, "watchdog_poll", always)
    monkeypatch.setattr(fluid_run, "next_watchdog_event_s", lambda net, now_s: now_s)
    monkeypatch.setattr(fluid_run, "cached_rates", lambda net: None)
    monkeypatch.setattr(TrafficModel, "STEP_BURST", 4_000)  # a smaller budget: a quick test
    m, _ = incast_into_host6(leafspine)
    span_s = 2.0
    counted[1] = int(m.STEP_BURST + m.STEP_BUDGET_PER_S * span_s) + 1_600
    m.advance(span_s / 2)
    half = m.port_counters("leaf3:Ethernet4/1").tx_bytes
    m.advance(span_s / 2)
    assert m.coarse > 0 and m.port_counters("leaf3:Ethernet4/1").tx_bytes > 1.5 * half
    eng = m.engine
    assert (eng.content >= 0).all()
    queued = np.bincount(eng.seg_flow, eng.content + eng.arriving, minlength=len(eng.flows))
    for f, q in zip(eng.flows, queued, strict=True):  # sent = delivered + dropped + queued
        assert f.tx_frames == pytest.approx(f.rx_frames + f.drop_frames + q / f.wire_bytes)


def test_an_advance_over_its_wall_budget_raises_broken_with_the_stacks(
    leafspine: tbm.Testbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of wall time an advance writes every thread's stack to the run's folder, skips
    to its end with the counters standing still, and raises a broken (InfraError) error
    naming the file; the next advance runs normally."""
    monkeypatch.setenv(stackdump.ENV, str(tmp_path))
    m, _ = incast_into_host6(leafspine)
    m.advance(0.01)
    before = m.port_counters("leaf3:Ethernet4/1").tx_bytes
    monkeypatch.setattr(m, "wall_budget_s", 0.0)
    with pytest.raises(ModelStalled) as caught:
        m.advance(0.5)
    assert m.now_s == pytest.approx(0.51)
    assert m.port_counters("leaf3:Ethernet4/1").tx_bytes == before  # frozen, not made up
    record = error_record(caught.value, f"ModelStalled: {caught.value}")
    assert outcome_of(record)[0] == BROKEN
    (dump,) = tmp_path.glob("stacks-*.txt")
    assert str(dump) in str(caught.value) and "advance to 0.510000 s" in str(caught.value)
    text = dump.read_text()
    assert "Thread MainThread" in text and "in advance_to" in text
    monkeypatch.undo()
    m.advance(0.01)
    assert m.port_counters("leaf3:Ethernet4/1").tx_bytes > before


def test_the_fabric_finishes_its_step_before_the_stall_reaches_the_reader(
    leafspine: tbm.Testbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the fabric (the lab's path: a read brings the model to now) the error is
    raised once the whole step is done, so the fabric is consistent at now when it does."""
    monkeypatch.setenv(stackdump.ENV, str(tmp_path))
    assert Fabric(leafspine).traffic.wall_budget_s == float("inf")  # a model alone: no limit
    lab = Fabric(leafspine, realtime=True)  # a lab's: its readers wait on it
    assert lab.traffic.wall_budget_s == lab.traffic.ADVANCE_WALL_BUDGET_S < 30.0
    fabric = Fabric(leafspine)
    fabric.traffic.run_bandwidth([(s, "host6") for s in SENDERS], qps=2, duration_s=5.0)
    monkeypatch.setattr(fabric.traffic, "wall_budget_s", 0.0)
    with pytest.raises(ModelStalled):
        fabric.advance(0.2)
    assert fabric.model_time_s == pytest.approx(0.2) and fabric.traffic.now_s == pytest.approx(0.2)
    monkeypatch.undo()
    assert fabric.advance(0.1) == pytest.approx(0.3)  # nothing pending: no second raise
