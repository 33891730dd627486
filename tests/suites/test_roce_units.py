"""Pure parts of the roce suite and of the suite kit in fixtures/: topology views, pair selection,
ECMP share deviation, data-plane failures, settings and deviations."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.capabilities.host import PerftestBandwidth, PerftestBwRow
from labtest.errors import CommandFailed, DataplaneFailed, TransportTimeout
from labtest.fixtures import suite_data
from labtest.fixtures.cabling_plan import (
    attachments,
    bisection_pairs,
    host_pairs,
    hosts_by_switch,
    ring_orders,
    ring_pairs,
    uplinks,
)
from labtest.fixtures.criteria import share_deviation
from labtest.fixtures.perftest_pairs import PairOutcome, dataplane_failure
from labtest.fixtures.suite_data import load_deviations, load_settings
from labtest.testbed import load_testbed

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
HOSTS = [f"host{i}" for i in range(1, 9)]
SWITCHES = ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"]


@pytest.fixture(scope="module")
def leafspine():
    tb = load_testbed(LEAFSPINE)
    return tb, attachments(tb, HOSTS, SWITCHES), uplinks(tb, SWITCHES)


def test_attachments_follow_the_cabling_plan(leafspine):
    _, att, ups = leafspine
    assert (att["host3"].switch, att["host3"].switch_port) == ("leaf2", "Ethernet16")
    assert att["host5"].link == "host5:eth0--leaf3:Ethernet3/1"
    assert hosts_by_switch(att) == {
        "leaf1": ["host1", "host2"], "leaf2": ["host3", "host4"],
        "leaf3": ["host5", "host6"], "leaf4": ["host7", "host8"],
    }  # fmt: skip
    assert sorted(u.endpoint for u in ups["leaf3"]) == ["leaf3:Ethernet1/1", "leaf3:Ethernet2/1"]
    assert len(ups["spine1"]) == 4 and all(u.peer.startswith("leaf") for u in ups["spine1"])


def test_pair_selections(leafspine):
    _, att, _ = leafspine
    assert len(host_pairs(HOSTS)) == 28
    assert ring_pairs(HOSTS)[-1] == ("host8", "host1") and len(ring_pairs(HOSTS)) == 8
    cross = bisection_pairs(att)
    assert cross == [("host1", "host5"), ("host2", "host6"), ("host3", "host7"), ("host4", "host8")]
    assert all(att[a].switch != att[b].switch for a, b in cross)


def test_ring_orders_keep_each_leafs_hosts_together(leafspine):
    _, att, _ = leafspine
    orders = ring_orders(att)
    assert set(orders) == {"by-leaf", "by-leaf-reversed", "leaf-stride-2", "leaf-stride-2-reversed"}
    for order in orders.values():
        assert sorted(order) == HOSTS
        leaves = [att[h].switch for h in order]
        changes = sum(a != b for a, b in zip(leaves, leaves[1:] + leaves[:1], strict=True))
        assert changes == 4  # one inter-leaf hop out of every leaf


@pytest.mark.parametrize(
    ("loads", "expected"),
    [([100, 100], 0.0), ([150, 50], 0.5), ([100, 0], 1.0), ([0, 0], 0.0), ([90, 100, 110], 0.1)],
)
def test_share_deviation(loads, expected):
    assert share_deviation(loads) == pytest.approx(expected)


def test_share_deviation_needs_a_member():
    with pytest.raises(ValueError):
        share_deviation([])


def test_the_drivers_dataplane_error_is_a_pair_failure_and_other_errors_are_not():
    line = "Completion with error at client"
    failed = DataplaneFailed("host1", "exited 1", f" {line}\n", evidence=line)
    assert dataplane_failure(failed) == "host1: Completion with error at client"
    # the classification of perftest's text is the driver's (drivers/linux/perftest.py)
    untyped = CommandFailed("host1", "exited 1", raw=" Completion with error")
    assert dataplane_failure(untyped) is None
    assert dataplane_failure(TransportTimeout("host1", "no answer")) is None


def test_a_pair_is_one_unit_whichever_end_was_the_client():
    assert (
        PairOutcome("host5", "host2").unit == PairOutcome("host2", "host5").unit == "host2--host5"
    )
    assert PairOutcome("host5", "host2").pair == "host5--host2"  # who ran what, for the report


def _bw(gbps: float | None) -> PerftestBandwidth:
    row = PerftestBwRow(65536, 1000, 0.0, gbps or 0.0, 1.0, gbps, gbps, gbps or 0.0)
    return PerftestBandwidth("RDMA_Write BW Test", "mlx5_0", "Ethernet", 2, 4096, "Gb/sec", [row])


def test_pair_outcome_bandwidth():
    assert PairOutcome("a", "b", bandwidth=_bw(392.0)).bw_gbps == 392.0
    assert PairOutcome("a", "b", error="a: Completion with error").bw_gbps == 0.0
    assert PairOutcome("a", "b", bandwidth=_bw(None)).bw_gbps == 0.0
    assert PairOutcome("a", "b").pair == "a--b"


def test_settings_override_merges_key_by_key(tmp_path, monkeypatch):
    base = load_settings("roce")
    override = tmp_path / "smoke.yaml"
    override.write_text("roce:\n  pairs: ring\n  pair_bandwidth: {duration_s: 5}\n")
    monkeypatch.setenv(suite_data.SETTINGS_ENV, str(override))
    merged = load_settings("roce")
    assert merged["pairs"] == "ring" and merged["pair_bandwidth"]["duration_s"] == 5
    assert merged["pair_bandwidth"]["qps"] == base["pair_bandwidth"]["qps"] >= 2
    assert merged["pair_bandwidth"]["size_bytes"] >= 65536  # the method's floor


def test_deviations_match_by_testbed_fields(leafspine):
    tb, _, _ = leafspine
    devs = load_deviations("congestion")
    for d in devs.items:
        assert d.reason and d.replaces and d.id
    eos = [n for n, d in tb.devices.items() if d.driver == "eos"]
    sonic = [n for n, d in tb.devices.items() if d.driver == "sonic"]
    waived = {c for d in devs.items for c in d.replaces}
    for check in waived:
        assert any(devs.find(check, n, tb) for n in eos + sonic)
    assert devs.find("no.such.check", sonic[0], tb) is None
