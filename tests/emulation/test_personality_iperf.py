"""iperf3 UDP streams on emulated hosts and the Linux parser of their JSON report.

The parser reads real iperf3 3.12 reports (tests/drivers_linux/samples/iperf3); the
emulated iperf3 prints the same layout with values from the fabric model: a link that
dies under the streams costs the streams hashed onto it the frames the fabric lost until
its ends rerouted (BFD detection + convergence), and no other stream loses any.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from labtest.capabilities.probes import UdpStreamResult
from labtest.drivers.linux.parsers.iperf import INCOMPLETE, iperf3_failure, parse_iperf3_udp
from labtest.errors import ParseError
from tests.emulation.test_personality_linux import Hosts, make_testbed, serve_all

SAMPLES = Path(__file__).parents[1] / "drivers_linux" / "samples" / "iperf3"


def sample(name: str) -> str:
    lines = (SAMPLES / name).read_text().splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.startswith("# source:"))


def test_parser_reads_a_real_udp_report() -> None:
    streams = parse_iperf3_udp(sample("debian_bookworm_udp_p2_loopback.json"))
    assert streams == [
        UdpStreamResult(sport=53902, dport=5299, packets=2000, lost_packets=0, seconds=2.000069),
        UdpStreamResult(sport=60929, dport=5299, packets=2000, lost_packets=0, seconds=2.000069),
    ]
    assert streams[0].rate_pps == pytest.approx(1000, rel=1e-3) and streams[0].loss_ms == 0


def test_parser_refuses_errors_and_partial_reports() -> None:
    with pytest.raises(ParseError, match="Connection refused"):
        parse_iperf3_udp(sample("debian_bookworm_udp_refused.json"))
    whole = sample("debian_bookworm_udp_p2_loopback.json")
    with pytest.raises(ParseError, match="incomplete"):
        parse_iperf3_udp(whole[: len(whole) // 2])
    assert INCOMPLETE
    with pytest.raises(ParseError, match="not JSON"):
        parse_iperf3_udp("iperf3: error - unable to connect\n")


def test_an_iperf3_error_says_whether_its_streams_had_connected() -> None:
    """Refused at the start is the tool's or its server's; an error once the streams ran
    (kernel campaign 87970119: 25 % loss broke the control socket mid-run) is the network's."""
    import json

    assert iperf3_failure(sample("debian_bookworm_udp_refused.json")) == (
        "unable to connect to server: Connection refused", False)
    doc = json.loads(sample("debian_bookworm_udp_p2_loopback.json"))  # the real run, then
    doc["end"] = {}  # ... the error iperf3 printed when the campaign's streams died
    doc["error"] = "unable to read from stream socket: Resource temporarily unavailable"
    assert iperf3_failure(json.dumps(doc)) == (doc["error"], True)
    # the server agreed the test (cookie), then the streams' setup datagrams were lost
    assert iperf3_failure(sample("debian_bookworm_udp_stream_setup_lost.json")) == (
        "unable to read from stream socket: Resource temporarily unavailable", True)
    assert iperf3_failure(sample("debian_bookworm_udp_p2_loopback.json")) is None
    assert iperf3_failure("iperf3: error - unable to connect\n") is None


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    h = serve_all(make_testbed())
    yield h
    for s in h.served.values():
        assert s.stop is not None
        s.stop()


def _report_keys(text: str) -> list[str]:
    return [ln.strip().split(":")[0] for ln in text.splitlines() if ln.strip().startswith('"')]


def test_emulated_report_has_the_real_layout_and_counts(hosts: Hosts) -> None:
    hosts.out("host5", "iperf3 -s -1 -p 5301 > /tmp/s.log 2>&1 &")
    assert ":5301" in hosts.out("host5", "ss -ltnH 'sport = :5301'")
    text = hosts.out("host1", "iperf3 -c 10.0.0.5 -u -p 5301 -b 4096000 -l 512 -t 2 -P 2 -J")
    real = sample("debian_bookworm_udp_p2_loopback.json")
    end_keys = _report_keys(text[text.index('"end"'):])
    assert end_keys[:14] == _report_keys(real[real.index('"end"'):])[:14]
    assert '"packets":\t2000' in text  # cJSON's layout, as real iperf3 prints it
    streams = parse_iperf3_udp(text)
    assert [s.packets for s in streams] == [2000, 2000]
    assert all(s.lost_packets == 0 and s.dport == 5301 for s in streams)
    assert len({s.sport for s in streams}) == 2
    assert ":5301" not in hosts.out("host5", "ss -ltnH 'sport = :5301'")  # -1: one test, gone
    refused = hosts.run("host1", "iperf3 -c 10.0.0.5 -u -p 5301 -t 1 -J")
    assert refused.exit_status == 1 and "Connection refused" in refused.output


def test_a_shut_uplink_costs_the_streams_on_it_the_reroute_time(hosts: Hosts) -> None:
    fabric = hosts.fabric
    hosts.out("host5", "iperf3 -s -1 -p 5302 > /dev/null 2>&1 &")
    at = fabric.now_s() + 1.0
    fabric.schedule(at, lambda: fabric.set_admin("leaf1", "Ethernet0", False))
    text = hosts.out("host1", "iperf3 -c 10.0.0.5 -u -p 5302 -b 40960000 -l 512 -t 5 -P 8 -J")
    streams = parse_iperf3_udp(text)
    lost = sorted(s.loss_ms for s in streams if s.lost_packets)
    assert 0 < len(lost) < 8  # ECMP put some streams on the shut uplink, not all
    assert lost == pytest.approx([650.0] * len(lost), abs=2.0)  # BFD 3 x 200 ms + 50 ms
    fabric.inject("slow_convergence", "leaf1", extra_ms=800)
    fabric.set_admin("leaf1", "Ethernet0", True)
    fabric.advance(1.0)
    hosts.out("host5", "iperf3 -s -1 -p 5303 > /dev/null 2>&1 &")
    fabric.schedule(fabric.now_s() + 1.0, lambda: fabric.set_admin("leaf1", "Ethernet0", False))
    slow = parse_iperf3_udp(hosts.out(
        "host1", "iperf3 -c 10.0.0.5 -u -p 5303 -b 40960000 -l 512 -t 5 -P 8 -J"))
    assert max(s.loss_ms for s in slow) == pytest.approx(1450.0, abs=2.0)
