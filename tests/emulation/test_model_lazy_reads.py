"""Reads that skip the model's step see what a step would have left (issue 19).

The clock is moved with ``clock.advance`` (no step), then the model is read: a
read that needs no integration answers without stepping, a counters read
counts that port alone. Each test compares with a twin fabric brought up to
the same instant by whole-model steps (``Fabric.advance``).
"""

from __future__ import annotations

from pathlib import Path

from labtest.emulation.model import Fabric
from labtest.testbed.loader import load_testbed

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "testbeds" / "example-lab.yaml"
PORTS = [("leaf1", "Ethernet0"), ("leaf1", "Ethernet8"), ("spine2", "Ethernet1/1")]


def twins() -> tuple[Fabric, Fabric]:
    testbed = load_testbed(DEFAULT)
    return Fabric(testbed, seed=7), Fabric(testbed, seed=7)


def test_counters_read_in_small_pieces_equal_one_big_step_to_the_last_unit() -> None:
    lazy, stepped = twins()
    lazy.advance(0.5)  # one real step: the optics are found steady
    for _ in range(400):  # 200 s in 0.5 s pieces, every piece read, no step
        lazy.clock.advance(0.5)
        for device, port in PORTS:
            lazy.counters(device, port)
    assert lazy.model_time_s == 0.5  # no read stepped the model
    stepped.advance(200.5)
    for device, port in PORTS:
        a, b = lazy.counters(device, port), stepped.counters(device, port)
        assert a.time_s == b.time_s == 200.5
        # LLDP frames every 30 s of up time, link drops: deterministic, equal to the unit
        assert (a.rx_packets, a.tx_octets, a.oper_down_count) == (
            b.rx_packets, b.tx_octets, b.oper_down_count)
        assert a.rx_packets == 200.5 // 30
        # FEC: the same codewords counted (errors are draws: same distribution, not the same)
        fa, fb = lazy.fec(device, port), stepped.fec(device, port)
        assert fa.total_codewords == fb.total_codewords > 0


def test_a_flap_between_two_reads_is_counted_and_seen_in_the_history() -> None:
    lazy, stepped = twins()
    link = lazy.link_of("leaf1", "Ethernet8")
    assert link is not None
    for f in (lazy, stepped):
        f.inject("flapping_link", link, at_s=0.0, period_s=10.0, down_s=0.25)
        f.advance(1.0)
    before = lazy.counters("leaf1", "Ethernet8").oper_down_count
    lazy.clock.advance(9.5)  # the link drops at 10.0 for 250 ms; read at 10.5
    after = lazy.counters("leaf1", "Ethernet8")
    assert lazy.model_time_s == 1.0
    assert after.oper_down_count == before + 1
    assert lazy.interface("leaf1", "Ethernet8").oper_up
    assert lazy.link_transitions(link, 9.0, 10.5) == [(10.0, False), (10.25, True)]
    stepped.advance(9.5)
    assert stepped.counters("leaf1", "Ethernet8").oper_down_count == after.oper_down_count
    # a read inside the dark 250 ms sees the link down
    lazy.clock.advance(9.625)  # t = 20.125
    assert not lazy.link_up(link)
    assert not lazy.interface("leaf1", "Ethernet8").oper_up
    assert lazy.dom("spine2", "Ethernet1/1").lanes[0].rx_power_dbm < -30


def test_a_heating_module_steps_the_model_on_every_read() -> None:
    lazy, stepped = twins()
    m = lazy.module_index("leaf1", "Ethernet0")
    for f in (lazy, stepped):
        f.inject("hot_module", "leaf1:Ethernet0", delta_c=30.0)
        f.advance(1.0)
    lazy.clock.advance(60.0)
    lazy.dom("leaf1", "Ethernet0")  # temperatures move: this read must step
    assert lazy.model_time_s == 61.0
    stepped.advance(60.0)
    assert lazy.modules.temp_c[m] == stepped.modules.temp_c[m]


def test_an_unreachable_device_is_seen_at_its_start_and_end_without_other_reads() -> None:
    lazy, _ = twins()
    lazy.inject("unreachable_device", "leaf1", at_s=5.0, duration_s=10.0)
    lazy.advance(1.0)
    assert lazy.unreachable() == frozenset()
    lazy.clock.advance(3.0)
    assert lazy.unreachable() == frozenset()
    assert lazy.model_time_s == 1.0  # nothing due: no step
    lazy.clock.advance(2.0)
    assert lazy.unreachable() == {"leaf1"}
    lazy.clock.advance(10.0)
    assert lazy.unreachable() == frozenset()


def test_traffic_running_makes_every_read_step() -> None:
    lazy, _ = twins()
    lazy.advance(1.0)
    lazy.traffic.run_bandwidth([("host1", "host2")], duration_s=30.0)  # straight on the model
    port = ("leaf1", "Ethernet0")
    lazy.clock.advance(2.0)
    before = lazy.counters(*port)
    assert lazy.model_time_s == 3.0  # a flow is sending: the read stepped
    lazy.clock.advance(2.0)
    after = lazy.counters(*port)
    assert lazy.model_time_s == 5.0
    assert after.time_s - before.time_s == 2.0


def test_an_action_scheduled_now_runs_at_the_clock_not_at_the_last_step() -> None:
    lazy, _ = twins()
    lazy.advance(1.0)
    lazy.clock.advance(5.0)
    assert lazy.interface("leaf1", "Ethernet0").oper_up  # a read without a step
    ran_at: list[float] = []
    lazy.schedule(0.0, lambda: ran_at.append(lazy.model_time_s))  # how emulators act "now"
    assert ran_at == [6.0]
