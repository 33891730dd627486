"""The OTG-shaped model, rate and loss arithmetic, frames and the signature (no privileges)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from labtest.capabilities import traffic as tr
from labtest.drivers.tg import frames
from labtest.drivers.tg.receiver import RxFlowStats
from labtest.registry import capabilities_of, driver_class

MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"


def udp_flow(*headers: object, **fields: object) -> tr.Flow:
    stack = headers or (tr.Ipv4(src="198.18.0.1", dst="198.18.0.2"), tr.Udp(dst_port=5001))
    values = {"name": "f", "tx_port": "p1", "rx_ports": ["p2"], "rate_pps": 1000} | fields
    return tr.Flow(packet=[tr.Ethernet(), *stack], **values)  # type: ignore[arg-type]


# --- rates ---------------------------------------------------------------------------


def test_bps_is_layer_1_like_otg() -> None:
    # OTG's minimum of 672 bps is one 64-byte frame (plus 20 B preamble and gap) per second
    assert tr.frames_per_second(64, rate_bps=672) == 1.0
    assert tr.frames_per_second(1500, rate_bps=10e9) == pytest.approx(10e9 / (1520 * 8))


def test_percent_of_line() -> None:
    assert tr.line_rate_pps(64, 100) == pytest.approx(148_809_523.8, abs=0.1)
    flow = udp_flow(rate_pps=None, rate_line_pct=10, size_bytes=128)
    assert flow.pps(line_speed_gbps=10) == pytest.approx(0.1 * 10e9 / (148 * 8))
    with pytest.raises(ValueError, match="speed"):
        flow.pps()


def test_pps_and_duration_give_the_frame_count() -> None:
    assert udp_flow(rate_pps=10_000, duration_s=2.0).packets_at(10_000) == 20_000
    assert udp_flow(packets=7).packets_at(10_000) == 7
    assert udp_flow().packets_at(10_000) is None  # continuous


# --- loss arithmetic --------------------------------------------------------------------


def test_loss_duration_is_lost_frames_over_rate() -> None:
    # featureprofiles: outage_ms = lost / (fps / 1000); 500 frames at 10k pps = 50 ms
    assert tr.loss_duration_ms(500, 10_000) == 50.0
    assert tr.loss_duration_ms(250, 1_000_000) == 0.25
    assert tr.loss_duration_ms(-3, 1000) == 0.0  # rx > tx is an anomaly, not negative loss
    assert tr.longest_outage_ms([3, 500, 2], 10_000) == 50.0
    assert tr.longest_outage_ms([], 10_000) == 0.0
    assert tr.loss_pct(20_000, 19_500) == 2.5
    assert tr.loss_pct(0, 0) == 0.0


def test_anomalies_flag_no_tx_and_rx_above_tx() -> None:
    nothing_sent = tr.FlowMetrics("a", "stopped", 0, 0, 0.0, frames_rx=0)
    too_many = tr.FlowMetrics("b", "stopped", 10, 1280, 10.0, frames_rx=11)
    healthy = tr.FlowMetrics("c", "stopped", 10, 1280, 10.0, frames_rx=10)
    assert nothing_sent.anomalies == ["flow a: no frames transmitted"]
    assert too_many.anomalies == ["flow b: 11 received > 10 sent"]
    assert healthy.anomalies == []


def test_pfc_storm_rate_and_flow() -> None:
    # 65535 quanta x 512 bit at 100G = 335.5 us; twice per pause = 5,961 frames/s
    assert tr.pause_refresh_pps(0xFFFF, 100) == pytest.approx(2 / (0xFFFF * 512 / 100e9))
    flow = tr.pfc_storm_flow("storm", "p1", priority=3, rate_pps=6000, duration_s=1.0)
    assert flow.is_pfc and not flow.is_measured and flow.kinds == ["ethernet", "pfc_pause"]
    template = frames.build_template(flow, 0, MAC_A, MAC_B)
    assert template.signature_offset is None
    assert bytes(template.frame[:6]) == bytes.fromhex("0180c2000001")
    assert int.from_bytes(template.frame[16:18], "big") == 1 << 3
    assert int.from_bytes(template.frame[18 + 6 : 20 + 6], "big") == 0xFFFF  # class 3 timer


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rate_bps": 1e6}, "exactly one of rate_pps"),
        ({"packets": 5, "duration_s": 1.0}, "not both"),
        ({"size_bytes": 60}, "greater than or equal to 64"),
        ({"rx_ports": []}, "needs at least one rx port"),
    ],
)
def test_flow_rejects(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        udp_flow(**fields)


def test_header_stack_order_is_checked() -> None:
    with pytest.raises(ValidationError, match="unsupported header stack"):
        udp_flow(tr.Udp(dst_port=1), tr.Ipv4(src="198.18.0.1", dst="198.18.0.2"))
    with pytest.raises(ValidationError, match="4791"):
        udp_flow(
            tr.Ipv4(src="198.18.0.1", dst="198.18.0.2"), tr.Udp(dst_port=1), tr.Rocev2Bth(dest_qp=1)
        )
    with pytest.raises(ValidationError, match=r"priority must be 0\.\.7"):
        tr.PfcPause(pause_quanta={8: 1})


def test_size_must_hold_headers_and_signature() -> None:
    ipv6 = (tr.Ipv6(src="2001:db8::1", dst="2001:db8::2"), tr.Udp(dst_port=5001))
    with pytest.raises(ValidationError, match="below 84"):  # 14 + 40 + 8 + 18 + 4 FCS
        udp_flow(*ipv6, size_bytes=80)
    assert udp_flow(size_bytes=64).min_size_bytes == 64  # 14 + 20 + 8 + 18 + 4: just fits


def test_config_checks_ports_and_names() -> None:
    ports = [tr.Port(name="p1", location="eth1"), tr.Port(name="p2", location="eth2")]
    with pytest.raises(ValidationError, match="unknown port 'p3'"):
        tr.TrafficConfig(ports=ports, flows=[udp_flow(rx_ports=["p3"])])
    with pytest.raises(ValidationError, match="flow names must be unique"):
        tr.TrafficConfig(ports=ports, flows=[udp_flow(), udp_flow()])


# --- frames and signature ----------------------------------------------------------------


def test_signature_round_trip() -> None:
    packed = frames.pack_signature(7, 123_456, 1_700_000_000_123_456_789)
    assert len(packed) == tr.SIGNATURE_BYTES == 18
    assert packed[:2] == b"LT"
    sig = frames.unpack_signature(b"\0\0" + packed, offset=2)
    assert sig == frames.Signature(7, 123_456, 1_700_000_000_123_456_789)
    assert frames.unpack_signature(b"XX" + packed[2:]) is None
    assert frames.unpack_signature(packed[:10]) is None


@pytest.mark.parametrize(
    "stack",
    [
        (tr.Ipv4(src="198.18.0.1", dst="198.18.0.2", dscp=26, ecn=2), tr.Udp(dst_port=5001)),
        (
            tr.Vlan(vlan_id=100, pcp=3),
            tr.Ipv6(src="2001:db8::1", dst="2001:db8::2"),
            tr.Udp(dst_port=9),
        ),
    ],
)
def test_stamping_keeps_the_udp_checksum_valid(stack: tuple[object, ...]) -> None:
    template = frames.build_template(udp_flow(*stack, size_bytes=256), 3, MAC_A, MAC_B)
    assert len(template.frame) == 256 - 4  # the FCS is the NIC's
    for seq, now_ns in ((0, 0), (1, 1_700_000_000_000_000_001), (0xFFFFFFFF, 2**64 - 1)):
        frame = Ether(bytes(template.stamp(seq, now_ns)))
        sent = frame[UDP].chksum
        del frame[UDP].chksum
        assert sent != 0 and Ether(bytes(frame))[UDP].chksum == sent
        offset, _ = frames.locate_signature(bytes(template.frame), len(template.frame)) or (0, 0)
        assert frames.unpack_signature(template.frame, offset) == frames.Signature(3, seq, now_ns)


@pytest.mark.parametrize("ip", ["ipv4", "ipv6"])
def test_rocev2_icrc_matches_scapy_after_stamping(ip: str) -> None:
    l3 = (
        tr.Ipv4(src="198.18.0.1", dst="198.18.0.2", ecn=2)
        if ip == "ipv4"
        else tr.Ipv6(src="2001:db8::1", dst="2001:db8::2", ecn=2)
    )
    flow = udp_flow(l3, tr.Udp(dst_port=4791), tr.Rocev2Bth(dest_qp=0x11, psn=7), size_bytes=128)
    template = frames.build_template(flow, 1, MAC_A, MAC_B)
    data = bytes(template.stamp(42, 1_700_000_000_000_000_000))
    assert len(data) == 124
    parsed = Ether(data)
    assert (parsed[BTH].dqpn, parsed[BTH].psn, parsed[UDP].chksum) == (0x11, 7, 0)
    payload = bytes(parsed[BTH].payload)  # the ICRC is a BTH field to Scapy
    ip_layer = parsed[IP] if ip == "ipv4" else parsed[IPv6]
    reference = Ether(src=MAC_A, dst=MAC_B) / ip_layer.copy()
    reference[UDP].remove_payload()
    reference = reference / BTH(opcode=4, dqpn=0x11, psn=7) / Raw(payload)
    assert data[-4:] == bytes(reference)[-4:]  # Scapy computes the ICRC itself here
    assert frames.locate_signature(data, len(data)) == (14 + (20 if ip == "ipv4" else 40) + 20, 2)


def test_locate_signature_with_a_tag_and_after_vlan_offload() -> None:
    flow = udp_flow(
        tr.Vlan(vlan_id=5), tr.Ipv4(src="198.18.0.1", dst="198.18.0.2", ecn=3), tr.Udp(dst_port=1)
    )
    tagged = bytes(frames.build_template(flow, 0, MAC_A, MAC_B).stamp(9, 1))
    assert frames.locate_signature(tagged, len(tagged)) == (14 + 4 + 20 + 8, 3)
    stripped = tagged[:12] + tagged[16:]  # what AF_PACKET shows when the NIC took the tag off
    assert frames.locate_signature(stripped, len(stripped)) == (14 + 20 + 8, 3)
    other = bytes(Ether(src=MAC_A, dst=MAC_B) / Dot1Q(vlan=5) / IP() / UDP() / Raw(b"x" * 30))
    assert frames.locate_signature(other, len(other)) is None


# --- receive-side bookkeeping ---------------------------------------------------------------


def test_gaps_late_frames_and_duplicates() -> None:
    stats = RxFlowStats()
    tx = {seq: 1_000_000 + seq * 100_000 for seq in range(20)}  # 10k pps on the send clock
    for seq in [0, 1, 2, 6, 7, 4, 7, 8, 9]:
        stats.add(seq, tx[seq], tx[seq] + 5_000, ecn=3 if seq == 9 else 2)
    assert stats.frames == 9 and stats.ecn_ce == 1
    assert (stats.out_of_order, stats.duplicates) == (1, 1)  # 4 came late; 7 came twice
    assert [g[:2] for g in stats.gaps] == [[3, 4], [5, 6]]  # 4 split the gap 3..5
    assert stats.gap_frames() == [1, 1]
    assert stats.gap_frames(frames_tx=12) == [1, 1, 2]  # 10 and 11 never arrived
    assert stats.outages_ns(100_000) == [100_000, 100_000]  # send-clock gaps minus one interval
    assert stats.latency_min_ns == stats.latency_max_ns == 5_000


def test_outage_on_the_send_clock_ignores_a_late_burst() -> None:
    """Frames 5..9 lost while the sender was 2 ms late: the frame count says 0.5 ms..."""
    stats = RxFlowStats()
    for seq in range(5):
        stats.add(seq, seq * 100_000, seq * 100_000, 0)
    stats.add(10, 4 * 100_000 + 600_000, 0, 0)  # ... the send clock says 0.5 ms too
    assert stats.outages_ns(100_000) == [500_000]
    late = RxFlowStats()
    late.add(0, 0, 0, 0)
    late.add(6, 3_000_000, 0, 0)  # 5 frames lost, but the gap on the send clock was 3 ms
    assert late.gap_frames() == [5] and late.outages_ns(100_000) == [2_900_000]


# --- registration -----------------------------------------------------------------------------


def test_scapy_driver_is_registered_with_its_capabilities() -> None:
    cls = driver_class("scapy-tg")
    assert cls.__name__ == "ScapyTrafficGenerator"
    assert {"TrafficGenerator", "PfcStormGenerator"} <= set(capabilities_of(cls))
