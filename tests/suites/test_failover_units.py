"""Pure parts behind the failover suite: RFC 6412 loss-derived convergence, the
binary-weighted path mapping, loss accounting while traffic runs."""

from __future__ import annotations

import itertools

import pytest

from labtest.capabilities.traffic import FlowMetrics
from labtest.fixtures.criteria import convergence_ms, delayed_onset_convergence_ms
from labtest.fixtures.polling import poll_until
from labtest.fixtures.tg_probes import (
    binary_weighted_packets,
    decode_binary_weights,
    frames_lost,
    frames_missing,
    wait_loss_settled,
)


def test_loss_derived_convergence_is_loss_over_offered_load():
    # RFC 6412 eq. 6: 6,500 frames lost at 10,000 frames/s is 650 ms
    assert convergence_ms(6500, 10_000) == pytest.approx(650.0)
    assert convergence_ms(0, 10_000) == 0.0
    assert convergence_ms(-3, 10_000) == 0.0  # more received than sent is not negative loss
    with pytest.raises(ValueError):
        convergence_ms(1, 0)


def test_delayed_onset_subtracts_the_time_before_the_event():
    # RFC 6412 eq. 7: loss counted from traffic start 2 s before the event
    assert delayed_onset_convergence_ms(26_500, 10_000, event_s=12.0, traffic_start_s=10.0) == (
        pytest.approx(650.0)
    )


def test_binary_weights_name_every_set_of_flows():
    unit, flows = 1000, 4
    sizes = [binary_weighted_packets(i, unit) for i in range(flows)]
    assert sizes == [1000, 2000, 4000, 8000]
    for split in itertools.product((0, 1), repeat=flows):  # every way 2 ports share 4 flows
        moved = {
            "Ethernet0": sum(s for s, p in zip(sizes, split, strict=True) if p == 0) + 7,  # LLDP
            "Ethernet8": sum(s for s, p in zip(sizes, split, strict=True) if p == 1),
        }
        decoded = decode_binary_weights(moved, unit, flows)
        assert decoded == {
            "Ethernet0": [i for i in range(flows) if split[i] == 0],
            "Ethernet8": [i for i in range(flows) if split[i] == 1],
        }


@pytest.mark.parametrize(
    "moved",
    [
        {"Ethernet0": 3000, "Ethernet8": 3000},  # flow 1 claimed twice, flow 2 by no one
        {"Ethernet0": 3000, "Ethernet8": 12_400},  # 400 frames of noise: ambiguous
        {"Ethernet0": 7000, "Ethernet8": 0},  # flow 3 seen nowhere (lost)
    ],
)
def test_ambiguous_counts_do_not_decode(moved):
    assert decode_binary_weights(moved, 1000, 4) is None


def _m(name: str, tx: int, rx: int) -> FlowMetrics:
    return FlowMetrics(name=name, transmit="started", frames_tx=tx, bytes_tx=tx * 512,
                       frames_tx_rate_pps=10_000.0, frames_rx=rx)  # fmt: skip


def test_frames_lost_while_running():
    assert frames_lost([_m("a", 100, 90), _m("b", 100, 100), _m("c", 5, 7)]) == {
        "a": 10, "b": 0, "c": 0,
    }  # fmt: skip


class _FakeTg:
    """Replays metrics: an outage on flow a, then steady traffic."""

    def __init__(self, script: list[list[FlowMetrics]]) -> None:
        self.script = script
        self.reads = 0

    def metrics(self, flows=None):
        self.reads += 1
        return self.script[min(self.reads - 1, len(self.script) - 1)]


def test_loss_settles_only_once_no_flow_loses_more():
    script = [
        [_m("a", 1000, 1000), _m("b", 1000, 1000)],
        [_m("a", 2000, 1500), _m("b", 2000, 2000)],  # a loses 500
        [_m("a", 3000, 1900), _m("b", 3000, 3000)],  # and 600 more
        [_m("a", 4000, 2900), _m("b", 4000, 4000)],  # converged: 1,100 lost in all
        [_m("a", 5000, 3900), _m("b", 5000, 5000)],
    ]
    tg = _FakeTg(script)
    assert wait_loss_settled(tg, timeout_s=5.0, poll_s=0.0) == {"a": 1100, "b": 0}
    assert tg.reads == 4  # stopped at the first interval without new loss


def _seq(name: str, tx: int, rx: int, missing: int) -> FlowMetrics:
    """A flow from a TG that numbers its frames (the Scapy generator)."""
    return FlowMetrics(name=name, transmit="started", frames_tx=tx, bytes_tx=tx * 512,
                       frames_tx_rate_pps=4_000.0, frames_rx=rx, missing_frames=missing)


def test_frames_in_flight_are_not_lost():
    """Kernel campaign 20261206 case 014: a healthy unaffected flow read 1 frame lost in one
    failover event and -2 in another, the frames in flight at each read (sent minus received
    came and went by a few). Settled, every flow delivers, so its sequence says what is
    lost: nothing here, although sent minus received was 3, then 4."""
    before = _FakeTg([[_seq("u", 4_000, 3_997, 0)], [_seq("u", 4_400, 4_397, 0)]])
    after = _FakeTg([[_seq("u", 9_000, 8_996, 0)], [_seq("u", 9_400, 9_396, 0)]])
    loss0 = wait_loss_settled(before, timeout_s=5.0, poll_s=0.0)
    loss1 = wait_loss_settled(after, timeout_s=5.0, poll_s=0.0)
    assert loss0 == loss1 == {"u": 0}
    # a real loss is a gap: counted, whatever is in flight
    assert frames_missing([_seq("u", 9_400, 9_380, 17)]) == {"u": 17}
    # a TG that does not number frames: sent minus received, as before
    assert frames_missing([_m("a", 100, 90)]) == {"a": 10}


def test_loss_never_settles_while_a_flow_stops_sending():
    frozen = [_m("a", 1000, 900)]
    assert wait_loss_settled(_FakeTg([frozen]), timeout_s=0.05, poll_s=0.01) is None


def test_poll_until_reports_when_and_gives_up():
    calls = iter([0, 0, 3])
    value, took = poll_until(lambda: next(calls), timeout_s=5.0, interval_s=0.0)
    assert value == 3 and took < 5.0
    value, took = poll_until(lambda: 0, timeout_s=0.05, interval_s=0.01)
    assert value == 0 and took == float("inf")


def test_streams_that_die_at_setup_are_a_failure_on_the_dead_runs_routes() -> None:
    """The matrix's ecmp_blackhole.1: host3's iperf3 to host1 died at setup (a stream hashed
    into the hole) and failover was BROKEN twice. It is the fabric's doing: a failure (no
    value was read) whose flow label gives root-cause inference the dead run's routes."""
    from types import SimpleNamespace

    from labtest.errors import DataplaneFailed
    from labtest.suites.failover import test_failover as suite

    rows: list[tuple[str, float, dict]] = []

    def measure(name: str, value: float, **labels: object) -> None:
        rows.append((name, value, labels))

    runs = [(None, SimpleNamespace(client="host1", server="host3")),
            (None, SimpleNamespace(client="host3", server="host1"))]
    died = DataplaneFailed("host3", "iperf3 to host1: ...", evidence="unable to read from "
                           "stream socket: Resource temporarily unavailable")
    suite._streams_died(measure, runs, died, {"streams": 8}, "before the event")
    ((name, value, labels),) = rows
    assert name == "failover.unaffected_flow_loss_frames" and value != value  # NaN
    assert labels["flow"] == "host3>host1" and labels["flows"] == "8"
    assert "stream socket" in str(labels["error"])


def test_an_end_still_up_after_the_event_is_attached(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait for the failed links' ends used to run out in silence (a wired kernel-lab
    link kept its far end up for the whole 60 s bound); the ends still up are evidence."""
    import importlib

    suite = importlib.import_module("labtest.suites.failover.test_failover")
    states = {"leaf1:Ethernet0": False, "spine1:Ethernet0": True}
    attached: list[tuple[str, object]] = []
    monkeypatch.setattr(suite, "_oper", lambda lab, ends: dict(states))
    monkeypatch.setattr(suite, "attach_json", lambda name, data: attached.append((name, data)))
    suite._wait_ends_down(None, [], timeout_s=0.2)
    assert attached == [("ends still oper up after the event",
                         {"ends": ["spine1:Ethernet0"], "waited_s": 0.2})]
    attached.clear()
    states["spine1:Ethernet0"] = False
    suite._wait_ends_down(None, [], timeout_s=0.2)
    assert attached == []
