"""Packet transport: frame layouts (no privileges), then real traffic on a veth pair (root)."""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from labtest import netns
from labtest.errors import TransportError
from labtest.transports import packets as pk

MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
IP_A, IP_B = "198.18.0.1", "198.18.0.2"  # RFC 2544 benchmarking range

_skip_unless_root = pytest.mark.skipif(
    not netns.is_root() or shutil.which("ip") is None,
    reason="needs root and iproute2 to create network namespaces, veth pairs and raw sockets",
)


def needs_root(test: Callable[..., None]) -> Callable[..., None]:
    return pytest.mark.netns(_skip_unless_root(test))


# --- frame builders ----------------------------------------------------------------


def test_rocev2_frame_is_122_bytes_with_a_64_byte_payload() -> None:
    frame = bytes(pk.rocev2_frame(MAC_A, MAC_B, IP_A, IP_B, dqpn=0x11, psn=7))
    assert len(frame) == 14 + 20 + 8 + 12 + 64 + 4 == 122
    assert frame[36:38] == (4791).to_bytes(2, "big")  # UDP destination port
    bth = frame[42:54]
    assert bth[0] == pk.RC_SEND_ONLY
    assert int.from_bytes(bth[5:8], "big") == 0x11  # destination QP
    assert int.from_bytes(bth[9:12], "big") == 7  # PSN


def test_rocev2_dissects_back_and_icrc_ignores_ecn() -> None:
    plain = pk.rocev2_frame(MAC_A, MAC_B, IP_A, IP_B, dqpn=0x11, psn=7, ecn=pk.Ecn.ECT0)
    marked = pk.rocev2_frame(MAC_A, MAC_B, IP_A, IP_B, dqpn=0x11, psn=7, ecn=pk.Ecn.CE)
    other_qp = pk.rocev2_frame(MAC_A, MAC_B, IP_A, IP_B, dqpn=0x12, psn=7)
    parsed = pk.dissect(bytes(plain))
    assert (parsed["BTH"].dqpn, parsed["BTH"].psn) == (0x11, 7)
    icrc = bytes(plain)[-4:]
    assert icrc == parsed["BTH"].icrc.to_bytes(4, "big") != b"\0\0\0\0"
    assert bytes(marked)[-4:] == icrc  # ECN is masked out of the ICRC: a CE mark keeps it valid
    assert bytes(other_qp)[-4:] != icrc


def test_pfc_frame_layout() -> None:
    frame = bytes(pk.pfc_frame(MAC_A, {3: 0xFFFF, 4: 0x1234, 0: 0}))
    assert len(frame) == 60  # padded to the Ethernet minimum (64 with FCS)
    assert frame[0:6] == bytes.fromhex("0180c2000001")
    assert frame[6:12] == bytes.fromhex("02000000000a")  # explicit source, not 00:00:00:00:00:00
    assert frame[12:14] == b"\x88\x08" and frame[14:16] == b"\x01\x01"
    assert int.from_bytes(frame[16:18], "big") == 0b0001_1001  # class-enable vector: 0, 3, 4
    times = [int.from_bytes(frame[18 + 2 * i : 20 + 2 * i], "big") for i in range(8)]
    assert times == [0, 0, 0, 0xFFFF, 0x1234, 0, 0, 0]


def test_pfc_frame_rejects_bad_priorities_and_quanta() -> None:
    with pytest.raises(ValueError, match="priority"):
        pk.pfc_frame(MAC_A, {8: 1})
    with pytest.raises(ValueError, match="quanta"):
        pk.pfc_frame(MAC_A, {3: 0x10000})


def test_dscp_and_ecn_bits_in_ipv4_and_ipv6_headers() -> None:
    v4 = bytes(pk.udp_frame(MAC_A, MAC_B, IP_A, IP_B, dscp=26, ecn=pk.Ecn.CE))
    assert v4[15] == (26 << 2) | 0b11 == 0x6B  # TOS byte
    v6 = bytes(pk.udp_frame(MAC_A, MAC_B, "2001:db8::1", "2001:db8::2", dscp=46, ecn=pk.Ecn.ECT0))
    assert v6[12:14] == b"\x86\xdd"
    assert ((v6[14] & 0x0F) << 4) | (v6[15] >> 4) == (46 << 2) | 0b10  # traffic class
    with pytest.raises(ValueError, match="dscp"):
        pk.udp_frame(MAC_A, MAC_B, IP_A, IP_B, dscp=64)


def test_vlan_tag_carries_the_pcp() -> None:
    frame = bytes(pk.udp_frame(MAC_A, MAC_B, IP_A, IP_B, vlan=100, pcp=3))
    assert frame[12:14] == b"\x81\x00"
    assert int.from_bytes(frame[14:16], "big") == (3 << 13) | 100


def test_pause_quanta_durations() -> None:
    # 512 bit times: 5.12 ns at 100G, 1.28 ns at 400G; 65535 quanta = 335.5 us at 100G
    assert pk.pause_quantum_s(100) == pytest.approx(5.12e-9)
    assert pk.pause_quantum_s(400) == pytest.approx(1.28e-9)
    assert pk.pause_duration_s(0xFFFF, 100) == pytest.approx(335.5e-6, rel=1e-3)
    assert pk.quanta_for(pk.pause_duration_s(1000, 400), 400) == 1000
    assert pk.quanta_for(1.0, 100) == 0xFFFF


def test_counters_of_loopback_without_privileges() -> None:
    counters = pk.PacketPort("host", "lo").counters()
    assert {"rx_packets", "tx_packets", "rx_bytes", "rx_dropped"} <= counters.keys()


def test_missing_interface_is_a_typed_error_naming_the_device() -> None:
    with pytest.raises(TransportError, match="gen1"):
        pk.PacketPort("gen1", "lt-missing0").counters()


# --- real frames on a veth pair between two namespaces (root) -----------------------


@pytest.fixture(scope="module")
def link() -> Iterator[netns.VethLink]:
    if not netns.is_root():
        pytest.skip("needs root")
    with netns.veth_link() as veth:
        yield veth
    assert not set(veth.namespaces) & set(netns.list_netns())


@pytest.fixture
def ports(link: netns.VethLink) -> Iterator[tuple[pk.PacketPort, pk.PacketPort]]:
    with (
        pk.PacketPort("gen1", link.a.interface, link.a.netns) as tx,
        pk.PacketPort("gen1", link.b.interface, link.b.netns) as rx,
    ):
        yield tx, rx


def _wait_for_rx(port: pk.PacketPort, wanted: int, timeout_s: float = 2.0) -> int:
    deadline = time.monotonic() + timeout_s
    while (seen := port.counters()["rx_packets"]) < wanted and time.monotonic() < deadline:
        time.sleep(0.02)
    return seen


@needs_root
def test_paced_send_is_counted_exactly_by_the_receiving_kernel(
    link: netns.VethLink, ports: tuple[pk.PacketPort, pk.PacketPort]
) -> None:
    tx, rx = ports
    frame = bytes(pk.rocev2_frame(link.a.mac, link.b.mac, IP_A, IP_B, dqpn=0x11))
    rx_before, tx_before = rx.counters()["rx_packets"], tx.counters()["tx_packets"]
    result = tx.send_at_rate(frame, count=20_000, rate_pps=50_000, timeout_s=5)
    received = _wait_for_rx(rx, rx_before + 20_000) - rx_before
    rate = f"{result.achieved_pps:,.0f} frames/s (target 50,000)"
    print(f"\npaced: {result.frames_sent} frames in {result.elapsed_s:.3f} s = {rate}; "
          f"receiver counted {received}")  # fmt: skip
    assert result.completed and result.frames_sent == 20_000
    assert received == 20_000
    assert tx.counters()["tx_packets"] - tx_before == 20_000
    assert result.achieved_pps <= 50_000 * 1.02  # pacing never runs ahead
    assert result.achieved_pps >= 50_000 * 0.5  # and keeps up on a loaded 2-core host


@needs_root
def test_unpaced_send_rate(
    link: netns.VethLink, ports: tuple[pk.PacketPort, pk.PacketPort]
) -> None:
    tx, rx = ports
    frame = bytes(pk.pfc_frame(link.a.mac, {3: 0}))
    rx_before = rx.counters()["rx_packets"]
    result = tx.send_at_rate(frame, count=20_000, rate_pps=None, timeout_s=5)
    received = _wait_for_rx(rx, rx_before + 20_000) - rx_before
    print(f"\nunpaced: {result.achieved_pps:,.0f} frames/s of 60 B; receiver counted {received}")
    assert received == result.frames_sent == 20_000


@needs_root
def test_send_stops_at_the_timeout_and_reports_what_was_sent(
    link: netns.VethLink, ports: tuple[pk.PacketPort, pk.PacketPort]
) -> None:
    tx, _ = ports
    frame = bytes(pk.udp_frame(link.a.mac, link.b.mac, IP_A, IP_B))
    result = tx.send_at_rate(frame, count=1_000, rate_pps=1_000, timeout_s=0.2)
    assert not result.completed
    assert 150 <= result.frames_sent <= 210
    assert result.elapsed_s < 0.4


@needs_root
def test_capture_and_dissect_rocev2_and_pfc(
    link: netns.VethLink, ports: tuple[pk.PacketPort, pk.PacketPort]
) -> None:
    tx, rx = ports
    roce = pk.rocev2_frame(link.a.mac, link.b.mac, IP_A, IP_B, dqpn=0xABCDE, psn=42)
    pfc = pk.pfc_frame(link.a.mac, {3: 0xFFFF})
    with rx.capture("udp port 4791 or ether proto 0x8808", count=2, timeout_s=3) as capture:
        tx.send(roce)
        tx.send(pfc)
        frames = capture.wait()
    assert len(frames) == 2
    bth = frames[0]["BTH"]
    assert (bth.dqpn, bth.psn) == (0xABCDE, 42)
    pause = frames[1]["MACControlClassBasedFlowControl"]
    assert (pause.c3_enabled, pause.c3_pause_time) == (1, 0xFFFF)
    assert frames[1].src == link.a.mac


@needs_root
def test_capture_returns_at_its_timeout_when_nothing_arrives(
    ports: tuple[pk.PacketPort, pk.PacketPort],
) -> None:
    _, rx = ports
    started = time.monotonic()
    frames = rx.capture("udp port 4791", count=1, timeout_s=0.3).wait()
    assert frames == []
    assert 0.25 <= time.monotonic() - started < 1.5


@needs_root
def test_call_in_netns_sees_only_that_namespace(link: netns.VethLink) -> None:
    inside = netns.call_in_netns(link.a.netns, lambda: {n for _, n in socket.if_nameindex()})
    outside = {n for _, n in socket.if_nameindex()}
    assert inside == {"lo", link.a.interface}
    assert link.a.interface not in outside and link.b.interface not in outside


@needs_root
def test_namespaces_are_removed_even_when_the_block_fails() -> None:
    names: list[str] = []
    with pytest.raises(RuntimeError), netns.veth_link() as veth:
        names = veth.namespaces
        assert set(names) <= set(netns.list_netns())
        raise RuntimeError("test body failed")
    assert len(names) == 2
    assert not set(names) & set(netns.list_netns())
