"""``iperf3`` in UDP mode on emulated hosts: sequence-numbered streams through the fabric model.

A server (``iperf3 -s [-1] [-p PORT]``) is a process in its host's table that
listens on its TCP control port (``ss -ltn`` shows it) until it is killed, or,
with ``-1``, until one test ran. A client (``iperf3 -c ADDR -u -b RATE -l LEN -t
SECS -P N [-p PORT] [-S TOS] [-J]``) fails as the real tool does when nothing
listens there ("unable to connect to server: Connection refused"), otherwise
starts its ``N`` streams in the traffic model as fixed-rate flows from its NIC to
the server's (``TrafficModel.start_tg_flow``: UDP, destination port = the server
port, each stream its own ephemeral source port, so ECMP spreads them), lets
``SECS`` of model time pass and prints what the server's sequence numbers found:
datagrams sent and lost per stream. Whatever the fabric does to the frames
(a link that dies before its ends reroute, a gray failure) shows up as lost
datagrams, exactly where a real iperf3 finds them. Except a flow the wire loses
whole (its 5-tuple in an ECMP member's hole): the real client opens each stream
with one datagram of the stream's 5-tuple and waits for the answer, so that run
fails before any data ("unable to read from stream socket", as the kernel lab's
iperf 3.12 does). The setup's answer (the reverse way) and a setup datagram lost
by chance on a lossy link are not modelled.

The JSON (``-J``) has the shape of iperf 3.12's for a UDP client (Debian bookworm's
package; tests/drivers_linux/samples/iperf3 holds real runs): ``start``
(``connected`` with each stream's local port, ``test_start``), one sender
interval for the whole run, and ``end`` (``streams[].udp`` with ``packets``,
``lost_packets``, ``lost_percent``, ``out_of_order``; ``sum``, ``sum_sent``,
``sum_received``), as iperf3's UDP runs publish it. Rates: ``-b`` counts
payload bits, 1000-based suffixes (K, M, G) as iperf3's ``unit_atof_rate``;
``-l`` sizes are 1024-based (``unit_atof``). A datagram of ``LEN`` bytes is a
frame of ``LEN`` + 46 B (UDP 8, IPv4 20, Ethernet 14, FCS 4). Not modelled:
TCP mode, reverse (``-R``) and bidirectional runs, interval reports other than
the one for the whole run, jitter (0.01 ms).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from labtest.emulation.model.traffic.tgflows import TgDuration, TgFlowSpec, TgRate
from labtest.emulation.personalities.linux.bash import Output
from labtest.emulation.personalities.linux.nic import stable_int
from labtest.emulation.personalities.linux.options import MissingValue, option_words
from labtest.emulation.personalities.linux.state import HostState, Proc, Sink, in_model

VERSION = "iperf 3.12"
DEFAULT_PORT = 5201
UDP_FRAME_OVERHEAD_B = 46  # UDP 8 + IPv4 20 + Ethernet 14 + FCS 4
DEFAULT_UDP_LEN = 1448
DEFAULT_UDP_BPS = 1_000_000.0  # iperf3's UDP default: 1 Mbit/s per stream
MAX_STREAMS = 128
_CJSON = (",", ":\t")  # cJSON's layout: "key":<TAB>value
USAGE = ("Usage: iperf3 [-s|-c host] [options]\n       iperf3 [-h|--help] [-v|--version]\n\n"
         "Try `iperf3 --help' for more information.\n")
_VALUED = {"-c": "client", "--client": "client", "-p": "port", "--port": "port",
           "-b": "bitrate", "--bitrate": "bitrate", "-l": "length", "--length": "length",
           "-t": "time", "--time": "time", "-P": "parallel", "--parallel": "parallel",
           "-S": "tos", "--tos": "tos", "--logfile": "logfile", "-B": "bind",
           "--cport": "cport"}
_FLAGS = {"-s": "server", "--server": "server", "-u": "udp", "--udp": "udp", "-J": "json",
          "--json": "json", "-1": "one_off", "--one-off": "one_off", "-v": "version",
          "--version": "version", "-h": "help", "--help": "help", "-D": "daemon",
          "--daemon": "daemon", "--get-server-output": "server_output"}


class IperfUsage(ValueError):
    pass


@dataclass(frozen=True)
class IperfOptions:
    server: bool = False
    client: str | None = None
    port: int = DEFAULT_PORT
    udp: bool = False
    bitrate_bps: float = DEFAULT_UDP_BPS
    length_b: int = DEFAULT_UDP_LEN
    time_s: float = 10.0
    parallel: int = 1
    tos: int = 0
    cport: int | None = None  # the client's source port (every stream's: iperf3 3.12 binds each)
    json: bool = False
    one_off: bool = False
    version: bool = False
    help: bool = False


def _rate(text: str) -> float:
    """iperf3's ``unit_atof_rate``: 1000-based K/M/G/T suffixes; an optional '/burst' ignored."""
    text = text.split("/", 1)[0].strip()
    scale = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}.get(text[-1:].lower(), 1.0)
    return float(text[:-1] if scale != 1.0 else text) * scale


def _size(text: str) -> int:
    """iperf3's ``unit_atof``: 1024-based K/M/G suffixes."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    return int(float(text[:-1] if scale != 1 else text) * scale)


def parse_iperf(argv: list[str]) -> IperfOptions:
    raw: dict[str, Any] = {}
    try:
        for key, w in option_words(argv[1:], _VALUED):
            if key is not None:
                raw[key] = w
            elif w in _FLAGS:
                raw[_FLAGS[w]] = True
            else:
                raise IperfUsage(f"iperf3: unrecognized option '{w}'")
    except MissingValue as exc:
        raise IperfUsage(
            f"iperf3: option requires an argument -- '{exc.word.lstrip('-')}'"
        ) from None
    try:
        opts = IperfOptions(
            server=bool(raw.get("server")),
            client=raw.get("client"),
            port=int(raw.get("port", DEFAULT_PORT)),
            udp=bool(raw.get("udp")),
            bitrate_bps=_rate(raw["bitrate"]) if "bitrate" in raw else DEFAULT_UDP_BPS,
            length_b=_size(raw["length"]) if "length" in raw else DEFAULT_UDP_LEN,
            time_s=float(raw.get("time", 10.0)),
            parallel=int(raw.get("parallel", 1)),
            tos=int(str(raw.get("tos", "0")), 0),
            cport=int(raw["cport"]) if "cport" in raw else None,
            json=bool(raw.get("json")),
            one_off=bool(raw.get("one_off")),
            version=bool(raw.get("version")),
            help=bool(raw.get("help")),
        )
    except ValueError as exc:
        raise IperfUsage(f"iperf3: parameter error - {exc}") from None
    if not (opts.version or opts.help) and opts.server == (opts.client is not None):
        raise IperfUsage("iperf3: parameter error - must either be a client (-c) or server (-s)")
    if not 1 <= opts.parallel <= MAX_STREAMS:
        raise IperfUsage(f"iperf3: parameter error - number of parallel streams must be 1..."
                         f"{MAX_STREAMS}")
    if opts.cport is not None and not 1 <= opts.cport <= 65535:
        raise IperfUsage("iperf3: parameter error - client port must be 1..65535")
    if opts.time_s <= 0 or opts.length_b < 16 or opts.bitrate_bps <= 0:
        raise IperfUsage("iperf3: parameter error - invalid duration, length or bitrate")
    return opts


def is_server(argv: list[str]) -> bool:
    try:
        return parse_iperf(argv).server
    except IperfUsage:
        return False


def start_server(host: HostState, argv: list[str], sink: Sink) -> Proc | None:
    """``iperf3 -s``: a listener in the host's table (None: bad options, said on the sink)."""
    try:
        opts = parse_iperf(argv)
    except IperfUsage as exc:
        sink.write(2, f"{exc}\n{USAGE}")
        return None
    if host.listener_on(opts.port) is not None:
        sink.write(1, "iperf3: error - unable to start listener for connections: Address "
                      "already in use\niperf3: exiting\n")
        return None
    bar = "-" * 59 + "\n"
    sink.write(1, f"{bar}Server listening on {opts.port} (test #1)\n{bar}")
    return host.spawn("iperf3", " ".join(argv), sink, listen_port=opts.port,
                      one_off=opts.one_off)


def run(host: HostState, argv: list[str]) -> Output:
    """``iperf3`` in the foreground: a client run, a version, or a server until killed."""
    try:
        opts = parse_iperf(argv)
    except IperfUsage as exc:
        return Output(stderr=f"{exc}\n{USAGE}", status=1)
    if opts.version:
        return Output(f"{VERSION} (cJSON 1.7.15)\nLinux {host.hostname} 5.15.0-91-generic "
                      "#101-Ubuntu SMP x86_64\nOptional features available: CPU affinity "
                      "setting, IPv6 flow label, TCP congestion algorithm setting, sendfile / "
                      "zerocopy, socket pacing, authentication\n")
    if opts.help:
        return Output(USAGE)
    if opts.server:
        sink = Sink(host, {1: ("buffer", ""), 2: ("buffer", "")})
        proc = start_server(host, argv, sink)
        if proc is not None:
            proc.done.wait(3600.0)
        return Output("".join(sink.buffer), status=0)
    return _client(host, opts)


def _fail(opts: IperfOptions, message: str) -> Output:
    if opts.json:
        doc = {"start": {"connected": [], "version": VERSION}, "intervals": [], "end": {},
               "error": message}
        return Output(json.dumps(doc, indent="\t", separators=_CJSON) + "\n", status=1)
    return Output(stderr=f"iperf3: error - {message}\n", status=1)


def _cookie(host: HostState, t0: float) -> str:
    return f"{host.name}{stable_int(host.name, t0, modulo=10**12):012d}"


def _setup_lost(host: HostState, opts: IperfOptions, t0: float) -> Output:
    """The control connection agreed the test (its cookie), a stream's setup datagram was
    never answered: iperf 3.12's document (tests/drivers_linux/samples/iperf3/
    debian_bookworm_udp_stream_setup_lost.json)."""
    message = "unable to read from stream socket: Resource temporarily unavailable"
    if not opts.json:
        return Output(stderr=f"iperf3: error - {message}\n", status=1)
    doc = {"start": {"connected": [], "version": VERSION,
                     "connecting_to": {"host": opts.client, "port": opts.port},
                     "cookie": _cookie(host, t0)},
           "intervals": [], "end": {}, "error": message}
    return Output(json.dumps(doc, indent="\t", separators=_CJSON) + "\n", status=1)


def _client(host: HostState, opts: IperfOptions) -> Output:
    assert opts.client is not None
    if not opts.udp:
        return _fail(opts, "this emulator runs UDP tests only (-u)")
    found = host.resolve(opts.client)
    if found is None:
        return _fail(opts, "unable to connect to server: Name or service not known")
    peer, peer_nic = found
    listener = peer.listener_on(opts.port)
    if listener is None or peer is host:
        return _fail(opts, "unable to connect to server: Connection refused")
    src = next((n for n in host.nics if n.cabled), None)
    dst = peer_nic if peer_nic is not None and peer_nic.cabled else next(
        (n for n in peer.nics if n.cabled), None)
    if src is None or dst is None:
        return _fail(opts, "unable to connect to server: No route to host")
    if opts.cport is not None and opts.parallel > 1:  # the real one binds each to it
        return _fail(opts, "unable to connect stream: Address already in use")
    fabric = host.fabric
    pid = host.new_pid()
    frame_b = min(opts.length_b + UDP_FRAME_OVERHEAD_B, 16000)
    pps = opts.bitrate_bps / (opts.length_b * 8)
    base = 32768 + stable_int(host.name, pid, modulo=20000)
    specs = [
        TgFlowSpec(
            name=f"iperf3.{host.name}.{pid}.{i}",
            tx_port=src.endpoint,
            rx_port=dst.endpoint,
            frame_size_b=max(frame_b, 64),
            rate=TgRate(pps=pps),
            duration=TgDuration(fixed_seconds=opts.time_s),
            dscp=opts.tos >> 2,
            src_port=opts.cport if opts.cport is not None else base + 7 * i,
            dst_port=opts.port,
        )
        for i in range(opts.parallel)
    ]
    listener.claimed = True
    t0 = fabric.now_s()
    ids = in_model(fabric, lambda: fabric.traffic.start_tg_flows(specs))
    try:
        if any(in_model(fabric, lambda: [fabric.traffic.lost_whole(i) for i in ids])):
            # a stream's setup datagram (its own 5-tuple) fell in a hole: it never starts
            return _setup_lost(host, opts, t0)
        host.run_for(opts.time_s)
        rows = in_model(fabric, lambda: fabric.traffic.tg_metrics_of([s.name for s in specs]))
    finally:
        in_model(fabric, lambda: fabric.traffic.remove_flows(ids))
        if listener.one_off:
            peer.finish(listener)
        else:
            listener.claimed = False
    streams = [
        _Stream(5 + i, s.src_port, int(m.frames_tx), max(int(m.frames_tx) - int(m.frames_rx), 0),
                int(m.out_of_order))
        for i, (s, m) in enumerate(zip(specs, rows, strict=True))
    ]
    doc = _document(host, opts, src.ipv4 or "", dst.ipv4 or opts.client, streams, t0)
    if opts.json:
        return Output(json.dumps(doc, indent="\t", separators=_CJSON) + "\n")
    return Output(_text(opts, streams))


@dataclass(frozen=True)
class _Stream:
    socket: int
    local_port: int
    packets: int
    lost: int
    out_of_order: int


def _udp_record(opts: IperfOptions, s: _Stream | None, total: list[_Stream]) -> dict[str, Any]:
    picked = [s] if s is not None else total
    packets = sum(x.packets for x in picked)
    lost = sum(x.lost for x in picked)
    nbytes = packets * opts.length_b
    rec: dict[str, Any] = {} if s is None else {"socket": s.socket}
    rec |= {
        "start": 0,
        "end": opts.time_s,
        "seconds": opts.time_s,
        "bytes": nbytes,
        "bits_per_second": nbytes * 8 / opts.time_s,
        "jitter_ms": 0.01,
        "lost_packets": lost,
        "packets": packets,
        "lost_percent": 100.0 * lost / packets if packets else 0,
    }
    if s is not None:
        rec["out_of_order"] = s.out_of_order
    rec["sender"] = True
    return rec


def _document(host: HostState, opts: IperfOptions, local: str, remote: str,
              streams: list[_Stream], t0: float) -> dict[str, Any]:
    epoch = 1_700_000_000 + math.floor(t0)
    interval = [{"socket": s.socket, "start": 0, "end": opts.time_s, "seconds": opts.time_s,
                 "bytes": s.packets * opts.length_b,
                 "bits_per_second": s.packets * opts.length_b * 8 / opts.time_s,
                 "packets": s.packets, "omitted": False, "sender": True} for s in streams]
    sent = sum(s.packets for s in streams)
    summary = {k: v for k, v in interval[0].items() if k != "socket"} if interval else {}
    summary |= {"bytes": sent * opts.length_b,
                "bits_per_second": sent * opts.length_b * 8 / opts.time_s, "packets": sent}
    whole = _udp_record(opts, None, streams)
    received = dict(whole, bytes=(sent - whole["lost_packets"]) * opts.length_b, sender=False)
    return {
        "start": {
            "connected": [{"socket": s.socket, "local_host": local, "local_port": s.local_port,
                           "remote_host": remote, "remote_port": opts.port} for s in streams],
            "version": VERSION,
            "system_info": f"Linux {host.hostname} 5.15.0-91-generic #101-Ubuntu SMP x86_64",
            "timestamp": {"time": "", "timesecs": epoch},
            "connecting_to": {"host": opts.client, "port": opts.port},
            "cookie": _cookie(host, t0),
            "sock_bufsize": 0,
            "sndbuf_actual": 212992,
            "rcvbuf_actual": 212992,
            "test_start": {"protocol": "UDP", "num_streams": len(streams),
                           "blksize": opts.length_b, "omit": 0, "duration": opts.time_s,
                           "bytes": 0, "blocks": 0, "reverse": 0, "tos": opts.tos},
        },
        "intervals": [{"streams": interval, "sum": summary}],
        "end": {
            "streams": [{"udp": _udp_record(opts, s, streams)} for s in streams],
            "sum": whole,
            "sum_sent": dict(whole),
            "sum_received": received,
            "cpu_utilization_percent": {"host_total": 1.5, "host_user": 0.3,
                                        "host_system": 1.2, "remote_total": 0.8,
                                        "remote_user": 0.1, "remote_system": 0.7},
        },
    }


def _text(opts: IperfOptions, streams: list[_Stream]) -> str:
    lines = ["[ ID] Interval           Transfer     Bitrate         Jitter    "
             "Lost/Total Datagrams\n"]
    for s in streams:
        mb = s.packets * opts.length_b / 2**20
        mbit = s.packets * opts.length_b * 8 / opts.time_s / 1e6
        pct = 100.0 * s.lost / s.packets if s.packets else 0.0
        lines.append(f"[{s.socket:3d}]   0.00-{opts.time_s:.2f}  sec  {mb:.2f} MBytes  "
                     f"{mbit:.2f} Mbits/sec  0.010 ms  {s.lost}/{s.packets} ({pct:.2g}%)  "
                     "receiver\n")
    return "".join(lines) + "\niperf Done.\n"
