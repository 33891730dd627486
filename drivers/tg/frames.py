"""Test frames: built once with Scapy, then stamped in place for every send.

Every measured frame carries an 18-byte *signature* at the start of its UDP
payload (after the BTH for RoCEv2), all fields big-endian:

    offset  size  field
    0       2     magic 0x4C54 ("LT")
    2       2     flow id (the flow's index in the config)
    4       4     sequence number (0, 1, 2, ... wrapping at 2**32)
    8       8     send time, ns since the epoch (CLOCK_REALTIME, as kernel rx stamps)
    16      2     checksum fix

Stamping a frame changes only the sequence number and send time. The
checksum fix is chosen so that the one's-complement sum of bytes 4..17 stays
the same whatever they hold: the UDP checksum computed once at build time stays
valid, so nothing is recomputed per frame. RoCEv2 frames carry a zero UDP
checksum (the ICRC protects them) and get their ICRC recomputed per frame
from a precomputed CRC of the invariant prefix: one ``zlib.crc32`` call.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

from labtest.capabilities.traffic import (
    FCS_BYTES,
    SIGNATURE_BYTES,
    Ethernet,
    Flow,
    Ipv4,
    Ipv6,
    PfcPause,
    Rocev2Bth,
    Udp,
    Vlan,
)
from labtest.transports import packets as pk

MAGIC = 0x4C54
SIGNATURE = struct.Struct(">HHIQH")
_STAMP = struct.Struct(">IQH")  # sequence, send time, checksum fix: bytes 4..17
assert SIGNATURE.size == SIGNATURE_BYTES


@dataclass(frozen=True)
class Signature:
    flow_id: int
    seq: int
    tx_time_ns: int


def checksum_fix(seq: int, tx_time_ns: int) -> int:
    """The word that cancels seq + time in a one's-complement sum.

    A one's-complement sum of 16-bit words is congruent to the number they
    form modulo 0xFFFF (2**16 = 1 mod 0xFFFF), so the fix is minus that
    number modulo 0xFFFF: one big-integer operation instead of six adds.
    """
    return -((seq << 64) | tx_time_ns) % 0xFFFF


def pack_signature(flow_id: int, seq: int, tx_time_ns: int) -> bytes:
    return SIGNATURE.pack(MAGIC, flow_id, seq, tx_time_ns, checksum_fix(seq, tx_time_ns))


def unpack_signature(data: bytes | bytearray | memoryview, offset: int = 0) -> Signature | None:
    """The signature at ``offset``, or ``None`` if there is none (not a test frame)."""
    if len(data) < offset + SIGNATURE_BYTES:
        return None
    magic, flow_id, seq, tx_time_ns, _ = SIGNATURE.unpack_from(data, offset)
    return Signature(flow_id, seq, tx_time_ns) if magic == MAGIC else None


@dataclass
class FrameTemplate:
    """One flow's frame (without FCS) and where to stamp it."""

    frame: bytearray
    signature_offset: int | None  # None: sent as built (PFC)
    icrc_offset: int | None = None  # RoCEv2: the 4 ICRC bytes at the end
    icrc_from: int = 0  # first byte covered by the per-frame part of the CRC
    icrc_seed: int = 0  # CRC32 of the masked, invariant prefix

    def stamp(self, seq: int, tx_time_ns: int) -> bytearray:
        """Write sequence number and send time into the frame (in place) and return it."""
        off = self.signature_offset
        if off is not None:
            seq &= 0xFFFFFFFF  # the signature's sequence number wraps at 2**32
            _STAMP.pack_into(self.frame, off + 4, seq, tx_time_ns, checksum_fix(seq, tx_time_ns))
            if self.icrc_offset is not None:
                body = memoryview(self.frame)[self.icrc_from : self.icrc_offset]
                crc = zlib.crc32(body, self.icrc_seed)
                struct.pack_into("<I", self.frame, self.icrc_offset, crc)
        return self.frame


def build_template(flow: Flow, flow_id: int, src_mac: str, dst_mac: str) -> FrameTemplate:
    """Build ``flow``'s frame once; MACs left ``None`` in the flow default to the given ones."""
    eth = flow.header(Ethernet)
    assert isinstance(eth, Ethernet)
    src_mac = eth.src_mac or src_mac
    pfc = flow.header(PfcPause)
    if isinstance(pfc, PfcPause):
        frame = pk.pfc_frame(src_mac, pfc.pause_quanta, dst_mac=eth.dst_mac or pk.PFC_DST_MAC)
        return FrameTemplate(bytearray(bytes(frame)), None)
    packet = _scapy_stack(flow, src_mac, eth.dst_mac or dst_mac)
    headers_len = len(packet)
    bth = flow.header(Rocev2Bth)
    payload_len = flow.size_bytes - FCS_BYTES - headers_len - (12 + 4 if bth else 0)  # BTH, ICRC
    payload = pack_signature(flow_id, 0, 0) + bytes(payload_len - SIGNATURE_BYTES)
    if isinstance(bth, Rocev2Bth):
        packet[UDP].chksum = 0  # RoCEv2: the ICRC protects the packet, not the UDP checksum
        packet = packet / BTH(
            opcode=bth.opcode, pkey=bth.partition_key, dqpn=bth.dest_qp, psn=bth.psn
        )
    data = bytearray(bytes(packet / Raw(payload)))
    if len(data) != flow.size_bytes - FCS_BYTES:
        raise ValueError(f"flow {flow.name}: built {len(data)} B, expected {flow.size_bytes - 4}")
    template = FrameTemplate(data, signature_offset=headers_len + (12 if bth else 0))
    if bth is not None:
        _prepare_icrc(template, data, flow)
    return template


def _scapy_stack(flow: Flow, src_mac: str, dst_mac: str) -> Packet:
    packet: Packet = Ether(src=src_mac, dst=dst_mac)
    for header in flow.packet[1:]:
        if isinstance(header, Vlan):
            packet = packet / Dot1Q(vlan=header.vlan_id, prio=header.pcp)
        elif isinstance(header, Ipv4):
            tos = pk.traffic_class(header.dscp, header.ecn)
            packet = packet / IP(src=header.src, dst=header.dst, tos=tos, ttl=header.ttl)
        elif isinstance(header, Ipv6):
            tc = pk.traffic_class(header.dscp, header.ecn)
            packet = packet / IPv6(src=header.src, dst=header.dst, tc=tc, hlim=header.hop_limit)
        elif isinstance(header, Udp):
            packet = packet / UDP(sport=header.src_port, dport=header.dst_port)
    return packet


def _prepare_icrc(template: FrameTemplate, data: bytearray, flow: Flow) -> None:
    """Precompute the ICRC's invariant part (IBA Annex A17: RoCEv2 ICRC).

    The CRC covers 8 bytes of 0xFF (the absent LRH), the IP header with
    TOS/TTL/checksum (IPv4) or traffic class/flow label/hop limit (IPv6) set to
    ones, the UDP header with its checksum set to ones, and the BTH with byte 4
    (FECN/BECN/reserved) set to ones; everything after BTH byte 4 is taken
    as is, so it is CRC'd per frame.
    """
    l3 = 14 + (4 if "vlan" in flow.kinds else 0)
    masked = bytearray(data[l3:])
    if "ipv4" in flow.kinds:
        masked[1] = 0xFF  # TOS
        masked[8] = 0xFF  # TTL
        masked[10:12] = b"\xff\xff"  # header checksum
        ip_len = 20
    else:
        masked[0:4] = bytes([masked[0] | 0x0F, 0xFF, 0xFF, 0xFF])  # traffic class + flow label
        masked[7] = 0xFF  # hop limit
        ip_len = 40
    masked[ip_len + 6 : ip_len + 8] = b"\xff\xff"  # UDP checksum
    bth = ip_len + 8
    masked[bth + 4] = 0xFF
    template.icrc_seed = zlib.crc32(b"\xff" * 8 + bytes(masked[: bth + 5]))
    template.icrc_from = l3 + bth + 5
    template.icrc_offset = len(data) - 4


# --- the receive side ---------------------------------------------------------------


def locate_signature(frame: bytes | bytearray | memoryview, length: int) -> tuple[int, int] | None:
    """``(signature offset, ECN bits)`` of a received test frame, or ``None``.

    Walks Ethernet, any 802.1Q/802.1ad tags (a tag stripped by VLAN offload is
    simply absent), IPv4 or IPv6, UDP and, on port 4791, the BTH.
    """
    if length < 42:
        return None
    off = 12
    ethertype = (frame[off] << 8) | frame[off + 1]
    while ethertype in (0x8100, 0x88A8):
        off += 4
        ethertype = (frame[off] << 8) | frame[off + 1]
    off += 2
    if ethertype == 0x0800:
        ecn = frame[off + 1] & 0x03
        if frame[off + 9] != 17:
            return None
        off += (frame[off] & 0x0F) * 4
    elif ethertype == 0x86DD:
        ecn = (frame[off + 1] >> 4) & 0x03
        if frame[off + 6] != 17:
            return None
        off += 40
    else:
        return None
    dport = (frame[off + 2] << 8) | frame[off + 3]
    off += 8 + (12 if dport == pk.ROCEV2_UDP_PORT else 0)
    if off + SIGNATURE_BYTES > length or (frame[off] << 8 | frame[off + 1]) != MAGIC:
        return None
    return off, ecn
