"""The receive side: one raw socket and one thread per rx port, counting per flow.

The kernel timestamps each frame on arrival (``SO_TIMESTAMPNS``), so latency
and first/last timestamps do not include the time a frame waited for Python.
The socket's own drop counter (``PACKET_STATISTICS``) tells exactly whether
the thread kept up: if it did not, the driver falls back to the interface
counters for the frame count and says so.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from drivers.tg.frames import SIGNATURE, locate_signature
from labtest import netns as ns
from labtest.errors import TransportError

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4  # sll_pkttype of frames this host sent on the interface
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SO_RCVBUFFORCE = 33
RCVBUF_BYTES = 32 << 20  # absorbs ~250k small frames while Python catches up
POLL_S = 0.05  # how often an idle receiver checks whether it should stop
GAP_SEARCH = 64  # how many recent gaps a late frame is matched against
_TIMESPEC = struct.Struct("@qq")
RT_PRIORITY = 10  # SCHED_FIFO priority of the traffic threads, when permitted
NICE = -10  # else their nice level

log = logging.getLogger("labtest.drivers.tg.scapy")


def raise_priority() -> None:
    """Ask the scheduler to run this (sender) thread as soon as it wakes (needs root).

    A sender that waits for a CPU sends late and then in a burst, which moves
    frames across the edges of an outage. A low real-time priority (FIFO 10)
    keeps it on schedule on a busy host; the kernel's real-time throttling
    still leaves 5 % of a CPU to everything else if it never sleeps. Only
    the senders get it: a receiver that never sleeps would take that CPU.
    Without the privilege, a higher nice level; failing that, carry on.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        return
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except OSError:
        log.debug("cannot raise the priority of the traffic threads: timing may jitter")


@dataclass
class RxFlowStats:
    """What one rx port saw of one flow.

    ``gaps`` are runs of missing sequence numbers, ``[first, end, tx_before_ns,
    tx_after_ns]``: the send times of the frames received either side of the
    run, which bracket the outage on the sender's clock.
    """

    frames: int = 0
    ecn_ce: int = 0
    out_of_order: int = 0
    duplicates: int = 0
    next_seq: int = 0
    last_tx_ns: int = 0  # send time of the frame with sequence number next_seq - 1
    gaps: list[list[int]] = field(default_factory=list)
    latency_min_ns: int | None = None
    latency_max_ns: int = 0
    latency_sum_ns: int = 0
    first_rx_ns: int | None = None
    last_rx_ns: int | None = None

    def add(self, seq: int, tx_ns: int, rx_ns: int, ecn: int) -> None:
        self.frames += 1
        if seq == self.next_seq:
            self.next_seq += 1
            self.last_tx_ns = tx_ns
        elif seq > self.next_seq:
            before = self.last_tx_ns if self.next_seq else -1  # lost from the start: no bracket
            self.gaps.append([self.next_seq, seq, before, tx_ns])
            self.next_seq = seq + 1
            self.last_tx_ns = tx_ns
        elif self._fill(seq, tx_ns):
            self.out_of_order += 1
        else:
            self.duplicates += 1
        if ecn == 3:
            self.ecn_ce += 1
        latency = rx_ns - tx_ns
        if self.latency_min_ns is None or latency < self.latency_min_ns:
            self.latency_min_ns = latency
        if latency > self.latency_max_ns:
            self.latency_max_ns = latency
        self.latency_sum_ns += latency
        if self.first_rx_ns is None:
            self.first_rx_ns = rx_ns
        self.last_rx_ns = rx_ns

    def _fill(self, seq: int, tx_ns: int) -> bool:
        """A late frame: shrink or split the gap it belongs to; False if it is a duplicate."""
        for i in range(len(self.gaps) - 1, max(-1, len(self.gaps) - 1 - GAP_SEARCH), -1):
            start, end, before, after = self.gaps[i]
            if start <= seq < end:
                pieces = [[start, seq, before, tx_ns], [seq + 1, end, tx_ns, after]]
                self.gaps[i : i + 1] = [p for p in pieces if p[1] > p[0]]
                return True
        return False

    def gap_frames(self, frames_tx: int | None = None) -> list[int]:
        """Missing runs in frames; with ``frames_tx`` (traffic stopped) the unanswered tail too."""
        lengths = [end - start for start, end, _, _ in self.gaps]
        if frames_tx is not None and frames_tx > self.next_seq:
            lengths.append(frames_tx - self.next_seq)
        return lengths

    def outages_ns(self, interval_ns: float, frames_tx: int | None = None) -> list[float]:
        """Each gap as time: on the send clock where frames bracket it, else frames x interval.

        A gap of g frames between frames sent at t_a and t_b is an outage of
        t_b - t_a - interval: g x interval when the sender kept its schedule,
        and still right when it did not (a late sender bunches frames, which
        shifts a frame count but not the send times).
        """
        times = [
            (after - before - interval_ns) if before >= 0 else (end - start) * interval_ns
            for start, end, before, after in self.gaps
        ]
        if frames_tx is not None and frames_tx > self.next_seq:
            times.append((frames_tx - self.next_seq) * interval_ns)
        return times


class RxPort:
    """Counts the test frames arriving on one interface, in a thread, until stopped."""

    def __init__(self, device: str, interface: str, netns: str | None, flow_ids: set[int]) -> None:
        self.device = device
        self.interface = interface
        self.netns = netns
        self.stats: dict[int, RxFlowStats] = {fid: RxFlowStats() for fid in flow_ids}
        self.other_frames = 0  # frames that were not ours (or not for this port)
        self.socket_drops = 0
        self.last_rx_monotonic = time.monotonic()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._sock = self._open()
        self._thread = threading.Thread(target=self._run, name=f"tg-rx-{interface}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def idle_for_s(self) -> float:
        return time.monotonic() - self.last_rx_monotonic

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop the thread and read how many frames the socket had to drop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        if self._sock.fileno() >= 0:
            self.socket_drops += self._read_drops()
            self._sock.close()

    def _open(self) -> socket.socket:
        def open_here() -> socket.socket:
            # protocol 0 until bound, so frames of other interfaces never queue up here
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            try:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
                except OSError:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                # a kernel receive timeout keeps recv at one syscall per frame
                timeval = struct.pack("@ll", 0, int(POLL_S * 1e6))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
                sock.bind((self.interface, ETH_P_ALL))
            except OSError:
                sock.close()
                raise
            return sock

        try:
            sock = ns.call_in_netns(self.netns, open_here, timeout_s=10)
        except (OSError, ns.NetnsError) as exc:
            where = self.interface + (f" (netns {self.netns})" if self.netns else "")
            raise TransportError(self.device, f"open receiver on {where}: {exc}") from exc
        self._read_drops_from(sock)  # reading resets the kernel's counters
        return sock

    def _read_drops(self) -> int:
        return self._read_drops_from(self._sock)

    @staticmethod
    def _read_drops_from(sock: socket.socket) -> int:
        _, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        return int(drops)

    def _run(self) -> None:
        try:
            raise_priority()  # a receiver preempted while it holds the GIL would stall the sender
            self._loop()
        except BaseException as exc:  # handed to the driver, which raises it
            self.error = exc

    def _loop(self) -> None:
        sock, stats, stop = self._sock, self.stats, self._stop
        buf = bytearray(16384)
        ancillary = socket.CMSG_SPACE(_TIMESPEC.size)
        unpack_sig = SIGNATURE.unpack_from
        while not stop.is_set():
            try:
                n, anc, _, addr = sock.recvmsg_into([buf], ancillary)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    continue
                raise
            if addr[2] == PACKET_OUTGOING:
                continue
            self.last_rx_monotonic = time.monotonic()
            if anc:
                seconds, nanoseconds = _TIMESPEC.unpack(anc[0][2])
                rx_ns = seconds * 1_000_000_000 + nanoseconds
            else:
                rx_ns = time.time_ns()
            found = locate_signature(buf, n)
            if found is None:
                self.other_frames += 1
                continue
            offset, ecn = found
            _, flow_id, seq, tx_ns, _ = unpack_sig(buf, offset)
            flow = stats.get(flow_id)
            if flow is None:
                self.other_frames += 1
                continue
            flow.add(seq, tx_ns, rx_ns, ecn)
