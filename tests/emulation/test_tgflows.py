"""Traffic-generator flows: OTG-shaped specs and per-flow metrics."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from labtest.emulation.model.faults import FaultError
from labtest.emulation.model.traffic import TgFlowSpec, TrafficModel
from labtest.emulation.model.traffic.congestion import pause_time_s
from labtest.emulation.model.traffic.lab import DictLinkView, clos_testbed

LINE = 400.0


def fabric() -> TrafficModel:
    tb = clos_testbed(
        spines=2, leaves=4, hosts_per_leaf=2, tg_ports=3
    )  # p1 leaf1, p2 leaf2, p3 leaf3
    return TrafficModel(tb, DictLinkView.of(tb), np.random.default_rng(2))


def spec(name: str, tx: str = "tg1:p1", rx: str | None = "tg1:p2", **kw: object) -> TgFlowSpec:
    return TgFlowSpec.model_validate({"name": name, "tx_port": tx, "rx_port": rx, **kw})


def test_rates_convert_like_otg() -> None:
    # percent of line counts the 20 B of preamble and IFG: 50 % of 400G at 1518 B
    half = spec("p", frame_size_b=1518, rate={"percentage": 50})
    assert half.frames_per_s(LINE) == pytest.approx(0.5 * 400e9 / ((1518 + 20) * 8))
    assert spec("b", frame_size_b=1000, rate={"bps": 8e9}).frames_per_s(LINE) == pytest.approx(1e6)
    assert spec("q", rate={"pps": 12345}).frames_per_s(LINE) == 12345
    assert spec("d", dscp=3).traffic_class == 3 and spec("e", dscp=10).traffic_class == 0
    with pytest.raises(ValidationError):
        spec("x", rate={"pps": 1, "bps": 1})
    with pytest.raises(ValidationError):
        spec("y", rx=None)  # only pause frames may go without a receiver


def test_fixed_packet_flow_is_delivered_whole_and_stops() -> None:
    m = fabric()
    m.start_tg_flow(
        spec("f", frame_size_b=512, rate={"pps": 1e6}, duration={"fixed_packets": 250_000})
    )
    m.advance(0.1)
    mid = m.tg_metrics("f")
    assert mid.transmit == "started" and mid.frames_tx == 100_000
    m.advance(1.0)
    r = m.tg_metrics("f")
    assert r.transmit == "stopped"
    assert r.frames_tx == r.frames_rx == 250_000 and r.loss_pct == 0.0
    assert r.bytes_rx == 250_000 * 512 and r.out_of_order == 0
    # leaf-spine-leaf: 0.85 us base + 3 x 0.6 us + serialisation + 66 m of fibre
    assert 2.5e3 < r.latency_min_ns <= r.latency_avg_ns <= r.latency_max_ns < 4e3


def test_lossless_congestion_marks_ce_and_pauses_the_generators() -> None:
    m = fabric()
    for name, tx in (("a", "tg1:p1"), ("b", "tg1:p3")):  # 2 x 60 % into one 400G port
        m.start_tg_flow(
            spec(
                name,
                tx,
                frame_size_b=1024,
                rate={"percentage": 60},
                dscp=3,
                ecn=1,
                duration={"fixed_seconds": 0.2},
            )
        )
    m.start_tg_flow(
        spec(
            "not-ect",
            frame_size_b=1024,
            rate={"percentage": 1},
            dscp=3,
            ecn=0,
            duration={"fixed_seconds": 0.2},
        )
    )
    m.advance(0.5)
    a, b, plain = m.tg_metrics("a"), m.tg_metrics("b"), m.tg_metrics("not-ect")
    for r in (a, b, plain):
        assert r.loss_pct == 0.0 and r.frames_rx == r.frames_tx
    assert a.ecn_ce_rx > 0.5 * a.frames_rx and plain.ecn_ce_rx == 0
    assert m.port_counters("tg1:p1").pfc_rx_frames[3] > 0
    # PFC held the generators back: together they delivered one line rate, not 120 %
    delivered_gbps = (a.frames_rx + b.frames_rx) * (1024 + 20) * 8 / 0.2 / 1e9
    assert delivered_gbps == pytest.approx(LINE * 0.99, rel=0.02)
    assert a.latency_avg_ns > 10 * 3e3  # a standing queue


def test_lossy_congestion_drops_and_reports_the_loss() -> None:
    m = fabric()
    for name, tx in (("a", "tg1:p1"), ("b", "tg1:p3")):
        m.start_tg_flow(
            spec(
                name,
                tx,
                frame_size_b=1024,
                rate={"percentage": 60},
                dscp=0,
                duration={"fixed_seconds": 0.2},
            )
        )
    m.advance(0.5)
    lost = [m.tg_metrics(n).loss_pct for n in "ab"]
    # 120 % offered into 100 %: a sixth of the frames cannot leave the port
    assert sum(lost) / 2 == pytest.approx(100 / 6, rel=0.05)
    assert all(m.tg_metrics(n).frames_rx < m.tg_metrics(n).frames_tx for n in "ab")


def test_pfc_pause_frames_from_the_generator_slow_the_port_towards_it() -> None:
    m = fabric()
    m.start_tg_flow(spec("load", frame_size_b=4096, rate={"percentage": 100}, dscp=3))
    fps = 2000.0
    m.start_tg_flow(
        spec(
            "pause",
            tx="tg1:p2",
            rx=None,
            rate={"pps": fps},
            pfc_pause={"priorities": [3], "quanta": 65535},
        )
    )
    m.advance(0.1)
    start_rx = m.tg_metrics("load").frames_rx
    m.advance(0.2)
    paused = fps * pause_time_s(LINE)  # share of time the DUT port may not send class 3
    got = (m.tg_metrics("load").frames_rx - start_rx) * (4096 + 20) * 8 / 0.2 / 1e9
    assert got == pytest.approx(LINE * (1 - paused), rel=0.01)
    assert m.port_counters("leaf2:Ethernet216").pfc_rx_frames[3] == pytest.approx(
        fps * 0.3, rel=0.01
    )
    assert m.tg_metrics("pause").frames_tx == pytest.approx(fps * 0.3, rel=0.01)
    assert m.tg_metrics("load").loss_pct == 0.0


def test_a_stopped_flow_can_run_again_under_its_name() -> None:
    m = fabric()
    m.start_tg_flow(spec("again", rate={"pps": 1e5}, duration={"fixed_packets": 1000}))
    with pytest.raises(FaultError, match="still running"):
        m.start_tg_flow(spec("again", rate={"pps": 1e5}))
    m.advance(0.1)
    m.start_tg_flow(spec("again", rate={"pps": 1e5}, duration={"fixed_packets": 500}))
    m.advance(0.1)
    assert m.tg_metrics("again").frames_rx == 500  # the new run's results, not the sum


def test_flows_started_together_run_as_flows_started_one_by_one() -> None:
    """A batch start reroutes once (an iperf3 -P 8 beside many flows rerouted all of them
    per stream): the same routes, rates and counts as the flows started one at a time."""
    specs = [spec(f"s{i}", tx=tx, rx=rx, frame_size_b=1024, rate={"percentage": 30},
                  src_port=40000 + i) for i, (tx, rx) in enumerate(
                      [("tg1:p1", "tg1:p2"), ("tg1:p3", "tg1:p2"), ("tg1:p2", "tg1:p1")] * 3)]
    one, batch = fabric(), fabric()
    for s in specs:
        one.start_tg_flow(s)
    ids = batch.start_tg_flows(specs)
    assert len(ids) == len(specs) and len(set(ids)) == len(ids)
    for m in (one, batch):
        m.advance(0.2)
    names = [s.name for s in specs]
    assert batch.tg_metrics_of(names) == one.tg_metrics_of(names)
    assert [batch.flow(i).path for i in ids] == [
        one.flow(f.id).path for f in sorted(one.flows.values(), key=lambda f: f.id)]
    batch.remove_flows(ids[:3])
    with pytest.raises(FaultError, match="no TG flow"):
        batch.tg_metrics_of(names[:1])
    with pytest.raises(FaultError, match="named twice"):
        fabric().start_tg_flows([specs[0], specs[0]])
    with pytest.raises(FaultError, match="still running"):
        batch.start_tg_flows([specs[5]])
