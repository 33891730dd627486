"""The receive side: one raw socket and one process per rx port, counting per flow.

The kernel timestamps each frame on arrival (``SO_TIMESTAMPNS``), so latency
and first/last timestamps do not include the time a frame waited for Python.
The socket's own drop counter (``PACKET_STATISTICS``) tells exactly whether
the thread kept up: if it did not, the driver falls back to the interface
counters for the frame count and says so.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import multiprocessing as mp
import socket
import struct
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from labtest import netns as ns
from labtest.drivers.tg.frames import SIGNATURE, locate_signature
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
#: bound on counting what is queued in the socket once told to stop, in the child's own CPU
#: time, so a starved child still gets it all (30,000 small frames: 1.3 s of wall time on a
#: 2-core host at load 15)
DRAIN_CPU_S = 2.0
STOP_WAIT_S = 10.0  # how long stop() waits for the final counts
_TIMESPEC = struct.Struct("@qq")


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
    """Counts the test frames arriving on one interface, in a child process, until stopped.

    The counting loop runs in a forked process so that it does not share a
    GIL with the senders: sharing one, every ``send()`` would hand the lock
    to the receiver and wait to get it back, which caps the rate at a
    fraction of what either side manages alone. The socket is opened here
    (in the port's namespace) and inherited; the parent reads the socket's
    drop counter, asks for snapshots while traffic runs, and collects the
    final counts on ``stop()``.
    """

    def __init__(self, device: str, interface: str, netns: str | None, flow_ids: set[int]) -> None:
        self.device = device
        self.interface = interface
        self.netns = netns
        self.stats: dict[int, RxFlowStats] = {fid: RxFlowStats() for fid in flow_ids}
        self.other_frames = 0  # frames that were not ours (or not for this port)
        self.socket_drops = 0
        self.error: BaseException | None = None
        self._sock = self._open()
        context = mp.get_context("fork")
        self._conn, self._child_conn = context.Pipe()
        self._shared = context.RawArray(ctypes.c_double, 3)  # stop, snapshot wanted, last rx
        self._shared[_LAST_RX] = time.monotonic()
        self._proc = context.Process(
            target=_serve,
            args=(self._sock, set(flow_ids), self._child_conn, self._shared),
            name=f"tg-rx-{interface}",
            daemon=True,
        )

    def start(self) -> None:
        self._proc.start()
        self._child_conn.close()  # the child's end: if the child dies, recv() sees EOF

    def idle_for_s(self) -> float:
        return time.monotonic() - self._shared[_LAST_RX]

    def refresh(self, timeout_s: float = 1.0) -> None:
        """Fetch the counts so far from the running receiver (bounded)."""
        if not self._proc.is_alive():
            return
        self._shared[_SNAPSHOT] += 1
        self._collect(timeout_s)

    def stop(self, timeout_s: float = STOP_WAIT_S) -> None:
        """Stop the receiver, take its final counts and the socket's drop count."""
        if self._sock.fileno() < 0:
            return
        self._shared[_STOP] = 1
        if self._proc.pid is not None:  # started
            if self._proc.is_alive() or self._conn.poll(0):
                self._collect(timeout_s)
            self._proc.join(timeout_s)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(timeout_s)
        self.socket_drops += self._read_drops_from(self._sock)
        self._sock.close()
        self._conn.close()
        self._child_conn.close()

    def _collect(self, timeout_s: float) -> None:
        if not self._conn.poll(timeout_s + 2 * POLL_S):
            where = self.interface
            self.error = TransportError(self.device, f"receiver on {where} stopped answering")
            return
        try:
            reply = self._conn.recv()
        except EOFError:
            reply = "the receiver process ended without reporting"
        if isinstance(reply, str):
            self.error = TransportError(self.device, f"receiver on {self.interface}: {reply}")
            return
        self.stats, self.other_frames = reply

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

    @staticmethod
    def _read_drops_from(sock: socket.socket) -> int:
        _, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        return int(drops)


_STOP, _SNAPSHOT, _LAST_RX = 0, 1, 2


def _serve(sock: socket.socket, flow_ids: set[int], conn: Connection, shared: Any) -> None:
    """The child process: count until told to stop, answering snapshot requests on the way."""
    gc.disable()  # the loop makes no reference cycles; a collection would only stall it
    stats = {fid: RxFlowStats() for fid in flow_ids}
    other = [0]
    try:
        _count(sock, stats, other, conn, shared)
        conn.send((stats, other[0]))
    except BaseException as exc:  # reported to the parent, which raises it
        conn.send(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


def _count(
    sock: socket.socket,
    stats: dict[int, RxFlowStats],
    other: list[int],
    conn: Connection,
    shared: Any,
) -> None:
    buf = bytearray(16384)
    ancillary = socket.CMSG_SPACE(_TIMESPEC.size)
    unpack_sig = SIGNATURE.unpack_from
    answered = 0.0
    drain_until = 0.0
    while True:
        if shared[_STOP] and not drain_until:
            # what is queued in the socket arrived before the stop: count it too. A receiver
            # starved of CPU lags behind (the parent saw it idle), and every frame it had not
            # read yet would be counted lost: the flow's tail, an outage that never was
            drain_until = time.process_time() + DRAIN_CPU_S
            sock.setblocking(False)
        if drain_until and time.process_time() > drain_until:
            break
        if shared[_SNAPSHOT] != answered:
            answered = shared[_SNAPSHOT]
            conn.send((stats, other[0]))
        try:
            n, anc, _, addr = sock.recvmsg_into([buf], ancillary)
        except OSError as exc:
            if exc.errno == errno.EAGAIN and drain_until:
                break  # drained
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                continue
            raise
        if addr[2] == PACKET_OUTGOING:
            continue
        shared[_LAST_RX] = time.monotonic()
        if anc:
            seconds, nanoseconds = _TIMESPEC.unpack(anc[0][2])
            rx_ns = seconds * 1_000_000_000 + nanoseconds
        else:
            rx_ns = time.time_ns()
        found = locate_signature(buf, n)
        if found is None:
            other[0] += 1
            continue
        offset, ecn = found
        _, flow_id, seq, tx_ns, _ = unpack_sig(buf, offset)
        flow = stats.get(flow_id)
        if flow is None:
            other[0] += 1
            continue
        flow.add(seq, tx_ns, rx_ns, ecn)
