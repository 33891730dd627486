"""Packet transport: build test frames with Scapy, send them at a rate, capture, count.

Three lessons from the stack probe (section 4) shape this module:

- ``sendp()`` opens and closes a socket per call (41 frames/s). ``PacketPort``
  keeps ONE raw ``AF_PACKET`` socket and sends prebuilt ``bytes``
  (hundreds of thousands of frames/s on a veth).
- A Python sniffer catches only a fraction of fast traffic. Capture is for
  dissecting a few frames; counts come from the kernel's interface counters.
- A PFC frame without an explicit source MAC leaves as 00:00:00:00:00:00.

A port may live in a network namespace: its sockets are opened there (see
``labtest.netns``) and then used from the calling thread.
"""

from __future__ import annotations

import errno
import logging
import math
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from ipaddress import ip_address
from pathlib import Path
from typing import Any, TypeVar

from scapy.config import conf
from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw
from scapy.sendrecv import AsyncSniffer

from labtest import netns as ns
from labtest.errors import ProtocolError, TransportError
from labtest.transports.closing import ClosedOnExit

log = logging.getLogger("labtest.transport.packets")
T = TypeVar("T")

ROCEV2_UDP_PORT = 4791  # IANA; RoCEv2 (InfiniBand Annex A17)
PFC_ETHERTYPE = 0x8808  # MAC control
PFC_OPCODE = 0x0101  # class-based flow control (IEEE 802.1Qbb)
PFC_DST_MAC = "01:80:c2:00:00:01"  # reserved multicast, never forwarded by a bridge
PAUSE_QUANTUM_BITS = 512  # one pause quantum = the time to send 512 bits at link speed
MAX_PAUSE_QUANTA = 0xFFFF
RC_SEND_ONLY = 0x04  # BTH opcode: reliable connection, SEND only


class Ecn(IntEnum):
    """The two ECN bits of the IP header (RFC 3168)."""

    NOT_ECT = 0b00
    ECT1 = 0b01
    ECT0 = 0b10
    CE = 0b11


# --- frame builders ------------------------------------------------------------------


def traffic_class(dscp: int, ecn: int) -> int:
    """The IPv4 TOS / IPv6 traffic-class byte: DSCP in the top six bits, ECN in the low two."""
    if not 0 <= dscp <= 63:
        raise ValueError(f"dscp must be 0..63, got {dscp}")
    if not 0 <= ecn <= 3:
        raise ValueError(f"ecn must be 0..3, got {ecn}")
    return (dscp << 2) | ecn


def udp_frame(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    *,
    sport: int = 49152,
    dport: int = 9,
    payload: bytes = b"",
    dscp: int = 0,
    ecn: int = Ecn.NOT_ECT,
    vlan: int | None = None,
    pcp: int = 0,
    ttl: int = 64,
) -> Packet:
    """Ethernet [/ 802.1Q with PCP] / IPv4 or IPv6 (by address) / UDP / payload."""
    frame = Ether(src=src_mac, dst=dst_mac)
    if vlan is not None:
        if not 0 <= vlan <= 4095 or not 0 <= pcp <= 7:
            raise ValueError(f"vlan must be 0..4095 and pcp 0..7, got {vlan}/{pcp}")
        frame /= Dot1Q(vlan=vlan, prio=pcp)
    tos = traffic_class(dscp, ecn)
    if ip_address(src_ip).version == 6:
        frame /= IPv6(src=src_ip, dst=dst_ip, tc=tos, hlim=ttl)
    else:
        frame /= IP(src=src_ip, dst=dst_ip, tos=tos, ttl=ttl)
    frame /= UDP(sport=sport, dport=dport)
    return frame / Raw(payload) if payload else frame


def rocev2_frame(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    *,
    dqpn: int,
    psn: int = 0,
    opcode: int | str = RC_SEND_ONLY,
    payload_len: int = 64,
    sport: int = 49152,
    dscp: int = 0,
    ecn: int = Ecn.NOT_ECT,
    vlan: int | None = None,
    pcp: int = 0,
) -> Packet:
    """A RoCEv2 packet: UDP to 4791, BTH (opcode, dest QP, PSN), payload, ICRC.

    Scapy computes the ICRC (over the invariant fields, so it stays valid when
    a switch marks ECN). With a 64-byte payload over IPv4 the frame is 122 B:
    14 Ethernet + 20 IP + 8 UDP + 12 BTH + 64 + 4 ICRC (no FCS).
    """
    frame = udp_frame(
        src_mac, dst_mac, src_ip, dst_ip,
        sport=sport, dport=ROCEV2_UDP_PORT, dscp=dscp, ecn=ecn, vlan=vlan, pcp=pcp,
    )  # fmt: skip
    return frame / BTH(opcode=opcode, dqpn=dqpn, psn=psn) / Raw(bytes(payload_len))


def pfc_frame(src_mac: str, pause_quanta: Mapping[int, int], dst_mac: str = PFC_DST_MAC) -> Packet:
    """A PFC (802.1Qbb) frame pausing each priority in ``pause_quanta`` for that many quanta.

    Priorities present are set in the class-enable vector; 0 quanta means
    "resume" (XON). Scapy pads the frame to the 60-byte minimum.
    """
    fields: dict[str, Any] = {}  # scapy's field values
    for priority, quanta in pause_quanta.items():
        if not 0 <= priority <= 7:
            raise ValueError(f"PFC priority must be 0..7, got {priority}")
        if not 0 <= quanta <= MAX_PAUSE_QUANTA:
            raise ValueError(f"pause quanta must be 0..{MAX_PAUSE_QUANTA}, got {quanta}")
        fields[f"c{priority}_enabled"] = 1
        fields[f"c{priority}_pause_time"] = quanta
    return Ether(src=src_mac, dst=dst_mac, type=PFC_ETHERTYPE) / MACControlClassBasedFlowControl(
        **fields
    )


def dissect(frame: bytes) -> Packet:
    """Parse raw bytes back into layers (BTH on UDP 4791 and MAC control on 0x8808 included)."""
    return Ether(frame)


# --- PFC timing ----------------------------------------------------------------------


def pause_quantum_s(speed_gbps: float) -> float:
    """One pause quantum (512 bit times): 5.12 ns at 100G, 1.28 ns at 400G."""
    return PAUSE_QUANTUM_BITS / (speed_gbps * 1e9)


def pause_duration_s(quanta: int, speed_gbps: float) -> float:
    return quanta * pause_quantum_s(speed_gbps)


def quanta_for(duration_s: float, speed_gbps: float) -> int:
    """The fewest quanta that pause for at least ``duration_s``, capped at 65535."""
    return min(MAX_PAUSE_QUANTA, math.ceil(duration_s / pause_quantum_s(speed_gbps) - 1e-9))


# --- the port --------------------------------------------------------------------------


@dataclass(frozen=True)
class SendResult:
    frames_requested: int
    frames_sent: int
    elapsed_s: float
    target_pps: float | None

    @property
    def achieved_pps(self) -> float:
        return self.frames_sent / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def completed(self) -> bool:
        return self.frames_sent == self.frames_requested


class Capture:
    """A running capture; ``wait()`` returns the frames (bounded by the timeout)."""

    def __init__(self, sniffer: AsyncSniffer, listen: object, timeout_s: float) -> None:
        self._sniffer = sniffer
        self._listen = listen
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s

    def wait(self) -> list[Packet]:
        """Until ``count`` frames arrived or the timeout passed; then stop and return them."""
        thread = self._sniffer.thread
        if thread is not None:
            thread.join(max(0.0, self._deadline - time.monotonic()))
        self.stop()
        return list(self._sniffer.results or [])

    def stop(self) -> None:
        if self._sniffer.running:
            self._sniffer.stop(join=True)
        self._listen.close()  # type: ignore[attr-defined]

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PacketPort(ClosedOnExit):
    """One traffic port: an OS interface, optionally inside a network namespace."""

    def __init__(self, device_name: str, interface: str, netns: str | None = None) -> None:
        self.device = device_name
        self.interface = interface
        self.netns = netns
        self._tx: socket.socket | None = None

    @property
    def where(self) -> str:
        return f"{self.interface}" + (f" (netns {self.netns})" if self.netns else "")

    def close(self) -> None:
        if self._tx is not None:
            self._tx.close()
            self._tx = None

    # --- sending ---------------------------------------------------------------------

    def send(self, frame: bytes | Packet) -> None:
        self.send_at_rate(bytes(frame), 1, None, timeout_s=1.0)

    def send_at_rate(
        self,
        frame_bytes: bytes | Sequence[bytes],
        count: int,
        rate_pps: float | None,
        timeout_s: float,
    ) -> SendResult:
        """Send ``count`` prebuilt frames (cycling through a sequence) at ``rate_pps``.

        ``rate_pps=None`` sends as fast as the socket takes them. Pacing keeps
        the running total on schedule (``sent <= elapsed * rate``), sleeping
        when ahead. Stops at ``timeout_s`` and reports what was sent: sending
        fewer frames than asked is a measurement, not an exception.
        """
        frames = [frame_bytes] if isinstance(frame_bytes, bytes | bytearray) else list(frame_bytes)
        if not frames or count < 0:
            raise ValueError("need at least one frame and count >= 0")
        if rate_pps is not None and rate_pps <= 0:
            raise ValueError(f"rate_pps must be > 0, got {rate_pps}")
        send = self._tx_socket().send
        n = len(frames)
        sent = 0
        start = time.perf_counter()
        deadline = start + timeout_s
        while sent < count:
            now = time.perf_counter()
            if now >= deadline:
                break
            due = count if rate_pps is None else min(count, int((now - start) * rate_pps) + 1)
            if due <= sent:  # ahead of schedule
                time.sleep(min(start + sent / rate_pps - now, deadline - now))  # type: ignore[operator]
                continue
            try:
                for _ in range(min(due - sent, 512)):  # bounded burst, then re-check the clock
                    send(frames[sent % n])
                    sent += 1
            except OSError as exc:
                if exc.errno in (errno.ENOBUFS, errno.EAGAIN):  # queue full: back off briefly
                    time.sleep(0.0002)
                    continue
                raise TransportError(self.device, f"send on {self.where}: {exc}") from exc
        result = SendResult(count, sent, time.perf_counter() - start, rate_pps)
        log.debug(
            "[%s] sent %d/%d frames on %s in %.3f s (%.0f frames/s)",
            self.device, sent, count, self.where, result.elapsed_s, result.achieved_pps,
        )  # fmt: skip
        return result

    def _tx_socket(self) -> socket.socket:
        if self._tx is None:
            # protocol 0: a send-only socket, so the kernel queues nothing for it to read
            self._tx = self._in_netns(lambda: _bound_packet_socket(self.interface))
        return self._tx

    # --- capturing and counting ----------------------------------------------------------

    def capture(self, filter: str | None, count: int, timeout_s: float) -> Capture:
        """Start capturing now (the socket is open on return, so nothing sent later is missed).

        ``filter`` is BPF syntax (needs libpcap). For a handful of frames to
        dissect; verify fast traffic with ``counters()``.
        """
        listen = self._in_netns(lambda: conf.L2listen(iface=self.interface, filter=filter))
        # scapy 2.8's AsyncSniffer takes no timeout: Capture.wait() enforces it
        sniffer = AsyncSniffer(opened_socket=listen, count=count, store=True)
        sniffer.start()
        return Capture(sniffer, listen, timeout_s)

    def counters(self) -> dict[str, int]:
        """The kernel's interface statistics (``rx_packets``, ``tx_bytes``, ...)."""
        stats = f"/sys/class/net/{self.interface}/statistics"
        try:
            if self.netns is None:
                return {p.name: int(p.read_text()) for p in Path(stats).iterdir()}
            out = ns.run_in_netns(self.netns, ["grep", "-r", ".", stats], timeout_s=5).stdout
        except (OSError, ns.NetnsError) as exc:
            raise TransportError(self.device, f"counters of {self.where}: {exc}") from exc
        counters = {}
        for line in out.splitlines():
            path, _, value = line.rpartition(":")
            try:
                counters[path.rsplit("/", 1)[-1]] = int(value)
            except ValueError:
                raise ProtocolError(self.device, f"bad counter line {line!r}", raw=out) from None
        return counters

    def _in_netns(self, fn: Callable[[], T]) -> T:
        try:
            return ns.call_in_netns(self.netns, fn, timeout_s=10)
        except OSError as exc:
            hint = " (needs root / CAP_NET_RAW)" if exc.errno == errno.EPERM else ""
            raise TransportError(self.device, f"open {self.where}: {exc}{hint}") from exc
        except ns.NetnsError as exc:
            raise TransportError(self.device, f"open {self.where}: {exc}") from exc


def _bound_packet_socket(interface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.bind((interface, 0))
    except OSError:
        sock.close()
        raise
    return sock
