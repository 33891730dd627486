"""Scapy traffic generator: OTG-shaped flows on real interfaces (veth in a netns included).

How it measures (see docs/traffic.md):

- Each flow's frame is built once with Scapy; for every send only the
  sequence number and send time are written into it (``frames.py``).
- One raw socket and one thread per tx port send every flow of that port,
  each on its own schedule (frame k of a flow is due at k / rate).
- One raw socket and one child process per rx port count, order and
  timestamp the frames (``receiver.py``). When that socket had to drop
  frames, the frame count comes from the rx interface's kernel counter
  instead, and the metrics say which method was used.

The device's ``packet`` settings map TG port names to OS interfaces and
name the network namespace they live in.
"""

from __future__ import annotations

import errno
import gc
import heapq
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from labtest import netns as ns
from labtest.capabilities.traffic import (
    MAX_PAUSE_QUANTA,
    Flow,
    FlowMetrics,
    PfcStorm,
    RxCountMethod,
    TrafficConfig,
    loss_duration_ms,
    loss_pct,
)
from labtest.drivers.tg.frames import FrameTemplate, build_template
from labtest.drivers.tg.receiver import RxFlowStats, RxPort
from labtest.errors import ConfigError, TransportError
from labtest.testbed.model import Device, Testbed
from labtest.transports import packets as pk

log = logging.getLogger("labtest.drivers.tg.scapy")

SNDBUF_BYTES = 4 << 20
MAX_BURST = 256  # frames sent back to back before the clock is read again
SETTLE_S = 0.05  # receivers idle this long = everything in flight has arrived
DRAIN_TIMEOUT_S = 2.0
RT_PRIORITY = 10  # SCHED_FIFO priority of the sender threads, when permitted
NICE = -10  # else their nice level
SWITCH_INTERVAL_S = 0.0005  # GIL hand-over while traffic runs (Python's default: 5 ms)


@dataclass
class _Stream:
    """One flow on its tx port: where it is in its schedule."""

    index: int
    flow: Flow
    template: FrameTemplate
    rate_pps: float
    count: int | None  # None: until stopped
    sent: int = 0
    first_tx_s: float | None = None
    last_tx_s: float | None = None
    max_lag_s: float = 0.0  # the furthest behind its schedule a frame left

    @property
    def done(self) -> bool:
        return self.count is not None and self.sent >= self.count


class _PortSender:
    """Sends every stream of one tx port from one socket, earliest due frame first."""

    def __init__(self, device: str, where: str, sock: socket.socket, streams: list[_Stream]):
        self.device = device
        self.where = where
        self.sock = sock
        self.streams = streams
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tg-tx-{where}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(max(0.0, timeout_s))
        return not self._thread.is_alive()

    def close(self) -> None:
        self.sock.close()

    def _run(self) -> None:
        try:
            raise_priority()
            self._loop()
        except BaseException as exc:  # handed to the driver, which raises it
            self.error = exc

    def _loop(self) -> None:
        send, stop, clock, now_ns = self.sock.send, self._stop, time.perf_counter, time.time_ns
        start = clock()
        due = [(0.0, s.index) for s in self.streams if not s.done]
        heapq.heapify(due)
        by_index = {s.index: s for s in self.streams}
        while due and not stop.is_set():
            due_s, index = due[0]
            elapsed = clock() - start
            if due_s > elapsed:
                time.sleep(min(due_s - elapsed, 0.01))
                continue
            stream = by_index[index]
            if stream.first_tx_s is None:
                stream.first_tx_s = elapsed
            if elapsed - due_s > stream.max_lag_s:
                stream.max_lag_s = elapsed - due_s
            behind = int((elapsed - due_s) * stream.rate_pps) + 1
            burst = min(behind, MAX_BURST)
            if stream.count is not None:
                burst = min(burst, stream.count - stream.sent)
            stamp = stream.template.stamp
            try:
                for seq in range(stream.sent, stream.sent + burst):
                    send(stamp(seq, now_ns()))
                    stream.sent = seq + 1
            except OSError as exc:
                if exc.errno not in (errno.ENOBUFS, errno.EAGAIN):
                    raise TransportError(self.device, f"send on {self.where}: {exc}") from exc
                time.sleep(0.0002)  # the queue is full: let it drain
            stream.last_tx_s = clock() - start
            if stream.done:
                heapq.heappop(due)
            else:
                heapq.heapreplace(due, (stream.sent / stream.rate_pps, index))


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


class _ScapyPfcStorm(PfcStorm):
    """Pause frames from ``PacketPort.send_at_rate`` in short chunks, until stopped.

    The chunks keep one schedule from the storm's start: a chunk started late (the thread
    not scheduled on a busy host) first sends the frames already due, so the storm sends
    its rate over its run instead of losing each gap between chunks."""

    CHUNK_S = 0.05

    def __init__(
        self, port: pk.PacketPort, frame: bytes, rate_pps: float, duration_s: float | None
    ):
        self._port = port
        self._frame = frame
        self._rate_pps = rate_pps
        self._deadline = None if duration_s is None else time.monotonic() + duration_s
        self._sent = 0
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tg-pfc-storm", daemon=True)
        self._thread.start()

    @property
    def frames_sent(self) -> int:
        return self._sent

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5.0)
        self._port.close()
        if self.error is not None:
            raise self.error
        return self._sent

    def _run(self) -> None:
        start, rate, timeout_s = time.monotonic(), self._rate_pps, self.CHUNK_S * 2 + 0.1
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if self._deadline is not None and now >= self._deadline:
                    break
                end = now + self.CHUNK_S
                if self._deadline is not None:
                    end = min(end, self._deadline)
                behind = int((now - start) * rate) - self._sent  # due already, not sent
                if behind > 0:
                    self._sent += self._port.send_at_rate(self._frame, behind, None,
                                                          timeout_s).frames_sent
                chunk = round((end - start) * rate) - self._sent  # due by the chunk's end
                if chunk > 0:
                    self._sent += self._port.send_at_rate(self._frame, chunk, rate,
                                                          timeout_s).frames_sent
                else:
                    time.sleep(min(self.CHUNK_S, max(end - now, 0.0)) / 2)
        except BaseException as exc:  # raised again by stop()
            self.error = exc


class _Run:
    """One start..stop of the configured flows: the threads and the counters they fill."""

    def __init__(self, senders: list[_PortSender], receivers: dict[str, RxPort]) -> None:
        self.senders = senders
        self.receivers = receivers
        self.counters_before: dict[str, dict[str, int]] = {}
        self.counters_after: dict[str, dict[str, int]] = {}
        self.finished = False
        self._gc_was_enabled = gc.isenabled()
        self._switch_interval_s = sys.getswitchinterval()

    def quiet_interpreter(self) -> None:
        """Keep the sender on schedule while traffic runs (both process-wide, both undone after).

        A cyclic garbage collection of a process that imported Scapy holds the
        GIL for milliseconds, and by default another thread waits up to 5 ms
        for it: either shows up as a late, then bunched, sender. The sender
        and receiver loops create no reference cycles, so pausing the
        collector costs nothing.
        """
        gc.disable()
        sys.setswitchinterval(SWITCH_INTERVAL_S)

    def restore_interpreter(self) -> None:
        sys.setswitchinterval(self._switch_interval_s)
        if self._gc_was_enabled:
            gc.enable()


class ScapyTrafficGenerator:
    """A TrafficGenerator (and PfcStormGenerator) on the host's own interfaces."""

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        if device.packet is None:
            raise ConfigError(name, ["device has no 'packet' settings (interfaces, netns)"])
        self.name = name
        self._interfaces = dict(device.packet.interfaces)
        self._netns = device.packet.netns
        self._config: TrafficConfig | None = None
        self._streams: list[_Stream] = []
        self._run: _Run | None = None

    # --- lifecycle ----------------------------------------------------------------

    def close(self) -> None:
        if self._run is not None and not self._run.finished:
            self.stop_traffic()

    def interface(self, location: str) -> str:
        """The OS interface behind a port location (a TG port name or an interface)."""
        return self._interfaces.get(location, location)

    # --- TrafficGenerator ------------------------------------------------------------

    def set_config(self, config: TrafficConfig) -> None:
        """Check the ports exist and build every frame now, so start has nothing to build."""
        self.close()
        macs = {p.name: self._mac(self.interface(p.location)) for p in config.ports}
        streams = []
        for index, flow in enumerate(config.flows):
            dst = macs[flow.rx_ports[0]] if flow.rx_ports else pk.PFC_DST_MAC
            template = build_template(flow, index, macs[flow.tx_port], dst)
            speed = self._speed_gbps(config, flow.tx_port) if flow.rate_line_pct else None
            rate = flow.pps(speed)
            streams.append(_Stream(index, flow, template, rate, flow.packets_at(rate)))
        self._config, self._streams, self._run = config, streams, None

    def start_traffic(self, flows: Sequence[str] | None = None) -> None:
        config = self._require_config()
        if self._run is not None and not self._run.finished:
            raise TransportError(self.name, "traffic is already running; stop it first")
        chosen = [s for s in self._streams if flows is None or s.flow.name in flows]
        unknown = set(flows or []) - {s.flow.name for s in self._streams}
        if unknown:
            raise ConfigError(self.name, [f"unknown flow(s): {sorted(unknown)}"])
        for stream in chosen:
            stream.sent, stream.first_tx_s, stream.last_tx_s, stream.max_lag_s = 0, None, None, 0.0
        rx_flows: dict[str, set[int]] = {}
        for stream in chosen:
            for port in stream.flow.rx_ports if stream.flow.is_measured else []:
                rx_flows.setdefault(port, set()).add(stream.index)
        receivers: dict[str, RxPort] = {}
        senders: list[_PortSender] = []
        try:
            for port, ids in rx_flows.items():
                iface = self.interface(config.port(port).location)
                receivers[port] = RxPort(self.name, iface, self._netns, ids)
            by_port: dict[str, list[_Stream]] = {}
            for stream in chosen:
                by_port.setdefault(stream.flow.tx_port, []).append(stream)
            for port, streams in by_port.items():
                iface = self.interface(config.port(port).location)
                sock = self._tx_socket(iface)
                senders.append(_PortSender(self.name, iface, sock, streams))
            counters_before = {p: self._counters(p) for p in receivers}
        except BaseException:
            for rx in receivers.values():
                rx.stop()
            for tx in senders:
                tx.close()
            raise
        run = _Run(senders, receivers)
        run.counters_before = counters_before
        run.quiet_interpreter()
        for rx in receivers.values():
            rx.start()
        for tx in senders:
            tx.start()
        self._run = run

    def stop_traffic(self) -> None:
        run = self._run
        if run is None or run.finished:
            return
        for tx in run.senders:
            tx.stop()
        for tx in run.senders:
            tx.join(5.0)
        self._finish(run)

    def wait_done(self, timeout_s: float) -> bool:
        """Wait (bounded) until every flow has sent its frames; continuous flows never do."""
        run = self._run
        if run is None:
            raise TransportError(self.name, "wait_done() before start_traffic()")
        if run.finished:
            return True
        deadline = time.monotonic() + timeout_s
        for tx in run.senders:
            if not tx.join(deadline - time.monotonic()):
                self._raise_thread_errors(run)
                return False
        self._finish(run)
        return True

    def metrics(self, flows: Sequence[str] | None = None) -> list[FlowMetrics]:
        self._require_config()
        run = self._run
        if run is not None:
            if not run.finished:
                for rx in run.receivers.values():
                    rx.refresh()
            self._raise_thread_errors(run)
        return [
            self._flow_metrics(s, run)
            for s in self._streams
            if flows is None or s.flow.name in flows
        ]

    # --- PfcStormGenerator ------------------------------------------------------------

    def pfc_storm(
        self,
        port: str,
        *,
        priority: int,
        quanta: int = MAX_PAUSE_QUANTA,
        rate_pps: float,
        duration_s: float | None = None,
    ) -> PfcStorm:
        """Start pause frames for ``priority`` on ``port`` (a TG port or an interface) now."""
        location = port
        if self._config is not None and port in {p.name for p in self._config.ports}:
            location = self._config.port(port).location
        iface = self.interface(location)
        frame = bytes(pk.pfc_frame(self._mac(iface), {priority: quanta}))
        return _ScapyPfcStorm(pk.PacketPort(self.name, iface, self._netns), frame, rate_pps,
                              duration_s)  # fmt: skip

    # --- internals ------------------------------------------------------------------------

    def _require_config(self) -> TrafficConfig:
        if self._config is None:
            raise ConfigError(self.name, ["no traffic configuration: call set_config() first"])
        return self._config

    def _finish(self, run: _Run) -> None:
        """Let in-flight frames arrive, stop the receivers, read the kernel counters."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while run.receivers and time.monotonic() < deadline:
            if min(rx.idle_for_s() for rx in run.receivers.values()) >= SETTLE_S:
                break
            time.sleep(SETTLE_S / 5)
        for rx in run.receivers.values():
            rx.stop()
        for tx in run.senders:
            tx.close()
        run.restore_interpreter()
        run.counters_after = {p: self._counters(p) for p in run.receivers}
        run.finished = True
        self._raise_thread_errors(run)

    def _raise_thread_errors(self, run: _Run) -> None:
        workers: list[_PortSender | RxPort] = [*run.senders, *run.receivers.values()]
        for worker in workers:
            if worker.error is not None:
                error, worker.error = worker.error, None
                if isinstance(error, TransportError):
                    raise error
                raise TransportError(self.name, f"traffic thread failed: {error!r}") from error

    def _flow_metrics(self, stream: _Stream, run: _Run | None) -> FlowMetrics:
        flow = stream.flow
        stopped = run is None or run.finished
        tx_time_s = (stream.last_tx_s or 0.0) - (stream.first_tx_s or 0.0)
        achieved = (stream.sent - 1) / tx_time_s if stream.sent > 1 and tx_time_s > 0 else 0.0
        base = FlowMetrics(
            name=flow.name,
            transmit="stopped" if stopped or stream.done else "started",
            frames_tx=stream.sent,
            bytes_tx=stream.sent * flow.size_bytes,
            frames_tx_rate_pps=achieved,
            tx_max_lag_us=stream.max_lag_s * 1e6,
        )
        if not flow.is_measured or run is None:
            return base
        parts = [rx.stats[stream.index] for p, rx in run.receivers.items() if p in flow.rx_ports]
        return self._rx_metrics(base, stream, run, parts, stopped)

    def _rx_metrics(
        self,
        base: FlowMetrics,
        stream: _Stream,
        run: _Run,
        parts: list[RxFlowStats],
        stopped: bool,
    ) -> FlowMetrics:
        flow = stream.flow
        frames = sum(p.frames for p in parts)
        duplicates = sum(p.duplicates for p in parts)
        tail = stream.sent if stopped else None
        gaps = [g for p in parts for g in p.gap_frames(tail)]
        outages_ns = [t for p in parts for t in p.outages_ns(1e9 / stream.rate_pps, tail)]
        drops = sum(run.receivers[p].socket_drops for p in flow.rx_ports if p in run.receivers)
        method: RxCountMethod = "signature"
        if drops:  # the gaps then include frames the socket dropped: not outages
            frames, method = self._counted_by_interface(stream, run, frames)
        exact = method == "signature"
        unique = frames - duplicates if exact else frames
        lost = max(0, stream.sent - unique) if stopped else None
        latency_frames = sum(p.frames for p in parts)
        mins = [p.latency_min_ns for p in parts if p.latency_min_ns is not None]
        firsts = [p.first_rx_ns for p in parts if p.first_rx_ns is not None]
        lasts = [p.last_rx_ns for p in parts if p.last_rx_ns is not None]
        # the rate the frames actually left at (the target when it cannot be measured)
        rate = base.frames_tx_rate_pps if stopped and base.frames_tx_rate_pps else stream.rate_pps
        return replace(
            base,
            frames_rx=frames,
            bytes_rx=frames * flow.size_bytes,
            loss_frames=lost,
            missing_frames=sum(parts[0].gap_frames()) if exact and len(parts) == 1 else None,
            loss_pct=loss_pct(stream.sent, unique) if stopped else None,
            loss_duration_ms=loss_duration_ms(lost, rate) if lost is not None else None,
            longest_gap_frames=max(gaps, default=0) if exact else None,
            longest_outage_ms=max(outages_ns, default=0.0) / 1e6 if exact else None,
            outages=len(gaps) if exact else None,
            latency_min_us=min(mins) / 1e3 if mins else None,
            latency_avg_us=(
                sum(p.latency_sum_ns for p in parts) / latency_frames / 1e3
                if latency_frames
                else None
            ),
            latency_max_us=max(p.latency_max_ns for p in parts) / 1e3 if mins else None,
            first_rx_timestamp_ns=min(firsts) if firsts else None,
            last_rx_timestamp_ns=max(lasts) if lasts else None,
            ecn_ce_count=sum(p.ecn_ce for p in parts),
            out_of_order=sum(p.out_of_order for p in parts),
            duplicates=duplicates,
            rx_count_method=method,
            rx_socket_drops=drops,
        )

    def _counted_by_interface(
        self, stream: _Stream, run: _Run, seen: int
    ) -> tuple[int, RxCountMethod]:
        """The receiver missed frames: count with the kernel where the port carries one flow."""
        ports = [p for p in stream.flow.rx_ports if p in run.receivers]
        total = 0
        for port in ports:
            rx = run.receivers[port]
            before = run.counters_before.get(port, {}).get("rx_packets")
            after = run.counters_after.get(port, {}).get("rx_packets")
            if len(rx.stats) != 1 or before is None or after is None:
                log.warning("[%s] rx port %s shared by flows: counts are a lower bound",
                            self.name, port)  # fmt: skip
                return seen, "signature-incomplete"
            total += max(0, after - before - rx.other_frames)
        return total, "interface-counters"

    def _counters(self, port: str) -> dict[str, int]:
        config = self._require_config()
        iface = self.interface(config.port(port).location)
        return pk.PacketPort(self.name, iface, self._netns).counters()

    def _tx_socket(self, iface: str) -> socket.socket:
        def open_here() -> socket.socket:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # send-only
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF_BYTES)
                sock.bind((iface, 0))
            except OSError:
                sock.close()
                raise
            return sock

        try:
            return ns.call_in_netns(self._netns, open_here, timeout_s=10)
        except (OSError, ns.NetnsError) as exc:
            raise TransportError(self.name, f"open sender on {iface}: {exc}") from exc

    def _mac(self, iface: str) -> str:
        try:
            return ns.interface_mac(iface, self._netns)
        except ns.NetnsError as exc:
            raise TransportError(self.name, f"no interface {iface}: {exc}") from exc

    def _speed_gbps(self, config: TrafficConfig, port: str) -> float:
        """The port's line rate: from the config, else the OS (``/sys/class/net/X/speed``)."""
        declared = config.port(port).speed_gbps
        if declared:
            return declared
        iface = self.interface(config.port(port).location)
        path = f"/sys/class/net/{iface}/speed"
        try:
            if self._netns:
                text = ns.run_in_netns(self._netns, ["cat", path], timeout_s=5).stdout
            else:
                with open(path) as f:
                    text = f.read()
            mbps = int(text.strip())
        except (OSError, ValueError, ns.NetnsError):
            mbps = -1
        if mbps <= 0:
            raise ConfigError(self.name, [f"port {port}: speed unknown; set Port.speed_gbps"])
        return mbps / 1000
