"""Pure parts behind the congestion suite: Jain's index and counter deltas."""

from __future__ import annotations

import pytest

from labtest.capabilities.switch import (
    InterfaceCounters,
    PfcCounters,
    QueueCounter,
    QueueCounters,
)
from labtest.fixtures.criteria import jain_index
from labtest.fixtures.run_counters import SwitchSample, fabric_deltas, port_deltas


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ([10, 10, 10, 10], 1.0),
        ([1, 0, 0, 0], 0.25),  # one takes all: 1/n
        ([2, 1], 0.9),  # (3)^2 / (2 * 5)
        ([0.5, 1, 1, 1, 1, 1, 1], 6.5**2 / (7 * 6.25)),  # one of 7 at half its share
        ([0, 0], 1.0),
    ],
)
def test_jain_index(rates, expected):
    assert jain_index(rates) == pytest.approx(expected)


def test_jain_index_flags_a_starved_sender_below_the_limit():
    assert jain_index([0.2, 1, 1, 1, 1, 1, 1]) < 0.95
    assert jain_index([0.0, 1, 1, 1, 1, 1, 1]) < 0.9  # starved outright: fails 0.9


def test_jain_index_rejects_nonsense():
    with pytest.raises(ValueError):
        jain_index([])
    with pytest.raises(ValueError):
        jain_index([1, -1])


def _sample(t: float, tx: int, drops: int, ecn: int, pfc_rx3: int, discards: int = 0):
    q = [
        QueueCounter("UC3", "unicast", 3, tx_packets=tx, tx_bytes=tx * 4000, drop_packets=drops,
                     ecn_marked_packets=ecn),
        QueueCounter("MC3", "multicast", 3, tx_packets=0, drop_packets=99),
    ]  # fmt: skip
    return SwitchSample(
        at_s=t,
        interfaces={"Ethernet0": InterfaceCounters(tx_packets=tx, rx_packets=tx // 2,
                                                   tx_discards=discards)},
        pfc={"Ethernet0": PfcCounters(rx=[0, 0, 0, pfc_rx3, 0, 0, 0, 0], tx=[0] * 8)},
        queues={"Ethernet0": QueueCounters(q)},
    )  # fmt: skip


def test_port_deltas_count_unicast_queue_drops_marks_and_pauses():
    before, after = _sample(10.0, 1000, 5, 7, 1), _sample(12.0, 3000, 9, 17, 4, discards=3)
    d = port_deltas("leaf1", before, after)["Ethernet0"]
    assert d.endpoint == "leaf1:Ethernet0" and d.seconds == 2.0
    assert d.queue_drops == {3: 4} and d.queue_ecn_marked == {3: 10}  # multicast ignored
    assert d.pfc_rx_on([3]) == 3 and d.pfc_rx_on([0, 1, 2]) == 0
    assert d.tx_packets == 2000 and d.rx_amount() == 1000
    assert d.tx_octets == 2000 * 4000  # no interface octets: the queues' bytes
    assert d.tx_gbps() == pytest.approx(2000 * 4000 * 8 / 2 / 1e9)
    assert d.drops() == 4  # queue drops take precedence over interface discards


def test_a_counter_cleared_between_samples_reads_as_no_activity():
    before, after = _sample(0.0, 5000, 9, 9, 9), _sample(1.0, 10, 0, 0, 0)
    d = fabric_deltas({"leaf1": before}, {"leaf1": after})["leaf1:Ethernet0"]
    assert d.tx_packets == 0 and d.queue_drops == {3: 0} and d.pfc_rx_on(range(8)) == 0


def test_without_queue_counters_interface_discards_are_the_drops():
    before = SwitchSample(0.0, {"Et1": InterfaceCounters(tx_discards=1, rx_discards=2)})
    after = SwitchSample(1.0, {"Et1": InterfaceCounters(tx_discards=4, rx_discards=2)})
    d = port_deltas("leaf3", before, after)["Et1"]
    assert d.drops() == 3 and d.pfc_tx == [] and d.tx_gbps() is None
