"""Gray failures as traffic-model physics (traffic/wireloss.py): frames lost on the wire.

A lossy link loses its fraction of every flow after the sending port counted it and the
receiver counts FCS errors; a silent drop loses one direction with no counter; a blackhole
drops the flows whose hash falls in its fraction; RoCE through a lossy path falls to
go-back-N goodput and the NICs' transport counters move.
"""

from __future__ import annotations

import json

import pytest

from labtest.drivers.linux.parsers.iperf import iperf3_failure, parse_iperf3_udp
from labtest.emulation.model.traffic.tgflows import TgDuration, TgFlowSpec, TgRate
from labtest.emulation.model.traffic.wireloss import go_back_n_goodput
from tests.emulation.test_personality_iperf import hosts  # noqa: F401  (fixture)
from tests.emulation.test_personality_linux import Hosts

UPLINK = "leaf1:Ethernet0--spine1:Ethernet0"


def _streams(h: Hosts, port: int, n: int = 32) -> list:
    h.out("host5", f"iperf3 -s -1 -p {port} > /dev/null 2>&1 &")
    return parse_iperf3_udp(h.out(
        "host1", f"iperf3 -c 10.0.0.5 -u -p {port} -b 4096000 -l 512 -t 2 -P {n} -J"))


def test_go_back_n_curve() -> None:
    assert go_back_n_goodput(0.0) == 1.0
    assert go_back_n_goodput(1e-4) == pytest.approx(0.976, abs=0.01)
    assert go_back_n_goodput(0.005) == pytest.approx(0.34, abs=0.03)
    assert go_back_n_goodput(0.01) < 0.15


def test_lossy_link_loses_frames_counts_fcs_and_slows_roce(hosts: Hosts) -> None:  # noqa: F811
    f, t = hosts.fabric, hosts.fabric.traffic
    healthy = t.run_bandwidth([("host1", "host5")], qps=8, duration_s=1.0, start=False)[0]
    f.inject("lossy_link", UPLINK, loss=0.005)
    streams = _streams(hosts, 5401)
    hit = [s for s in streams if s.lost_packets]
    assert 0 < len(hit) < len(streams)
    assert sum(s.lost_packets for s in hit) / sum(s.packets for s in hit) == pytest.approx(
        0.005, rel=0.1)
    tx = t.port_counters("leaf1:Ethernet0").tx_packets
    rx = t.port_counters("spine1:Ethernet0")
    assert rx.rx_packets < tx and rx.rx_fcs_errors == pytest.approx(tx - rx.rx_packets, abs=2)
    slow = t.run_bandwidth([("host1", "host5")], qps=8, duration_s=1.0, start=True)[0]
    assert slow.bw_avg_gbps < healthy.bw_avg_gbps * 0.9
    f.advance(1.0)
    assert t.roce_retransmissions("host1:eth0")["packet_seq_err"] > 0
    assert t.roce_retransmissions("host5:eth0")["out_of_sequence"] > 0


def test_silent_drop_one_way_no_counter(hosts: Hosts) -> None:  # noqa: F811
    t = hosts.fabric.traffic
    hosts.fabric.inject("silent_drop", UPLINK, loss=0.2, direction="ab")
    streams = _streams(hosts, 5402)
    assert any(s.lost_packets for s in streams)
    back = t.port_counters("leaf1:Ethernet0")
    assert back.rx_fcs_errors == 0 and t.port_counters("spine1:Ethernet0").rx_fcs_errors == 0


def test_blackhole_drops_whole_flows(hosts: Hosts) -> None:  # noqa: F811
    """The model drops every frame of a holed flow; iperf3, which opens each stream with a
    datagram of its own 5-tuple and waits for the answer, never starts such a run (the
    kernel lab's iperf 3.12 did the same), and a single stream beside the hole runs whole."""
    hosts.fabric.inject("ecmp_blackhole", UPLINK, flow_fraction=0.5, direction="ab")
    t = hosts.fabric.traffic
    flows = [t.start_tg_flow(TgFlowSpec(
        name=f"probe{i}", tx_port="host1:eth0", rx_port="host5:eth0", frame_size_b=512,
        rate=TgRate(pps=100), duration=TgDuration(fixed_seconds=1.0), src_port=20000 + i,
        dst_port=5403)) for i in range(32)]
    holed = [i for i in flows if t.lost_whole(i)]
    assert 0 < len(holed) < len(flows)
    hosts.fabric.advance(1.5)
    assert all(t.tg_metrics(f"probe{flows.index(i)}").frames_rx == 0 for i in holed)
    assert all(t.tg_metrics(f"probe{k}").frames_rx > 0 for k, i in enumerate(flows)
               if i not in holed)
    hosts.out("host5", "iperf3 -s -1 -p 5404 > /dev/null 2>&1 &")
    reply = hosts.run("host1", "iperf3 -c 10.0.0.5 -u -p 5404 -b 4096000 -l 512 -t 2 -P 32 -J")
    assert reply.exit_status == 1
    doc = json.loads(reply.output)
    assert doc["error"] == "unable to read from stream socket: Resource temporarily unavailable"
    assert doc["start"]["cookie"] and doc["start"]["connected"] == []
    assert iperf3_failure(json.dumps(doc)) == (doc["error"], True)  # the network's doing
