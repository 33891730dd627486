"""perftest and nccl-tests runs on emulated hosts, computed from the fabric's traffic model.

perftest: a server is a process in its host's table that "listens" on its TCP
port until a client connects or it is killed. A client resolves its server
argument to a peer host (see ``state``), fails like the real tool when
nothing listens there, and otherwise takes the server, asks the traffic model
for the pair's result (``run_bandwidth``: max-min shares of the fabric as it
is now; ``run_latency``), lets the run's time pass, prints its side and
appends the server's side to the server's log before the server exits.

Clients with the same test shape that start together are computed together, as
one ``run_bandwidth`` call over all their pairs: a driver starting an incast's
clients in parallel gets fair shares for all of them, not full rate for whoever
came first. "Together" does not depend on how busy the machine is: drivers start
every server of a parallel run before any client (as a lab engineer does), so a
batch stays open while a bandwidth server of the same tool still waits for its
client, and for ``GATHER_S`` after the last arrival; ``GATHER_MAX_S`` bounds it
for a server whose client never comes. Each run also starts its queue
pairs in the model for the run's duration, so switch and NIC counters move
(a size sweep drives its largest size for the whole sweep).

Latency: ``run_latency`` gives the one-way time of a small message; messages
longer than one RoCE MTU add their serialisation at the port's speed and wire
efficiency (our addition), and ``ib_read_lat`` reports the round trip.

nccl-tests: ``mpirun`` places ranks on the ``-H`` hosts in order; the ring over
the distinct hosts gets its bandwidth and per-step latency from the model's
``run_allreduce`` (two sizes give both), and every collective's time follows
nccl-tests' PERFORMANCE.md factors: t = k * alpha + S * f / B with k steps and
bus factor f (all_reduce 2(n-1) and 2(n-1)/n; all_gather, reduce_scatter and
alltoall n-1 and (n-1)/n; broadcast and reduce n-1 and 1; sendrecv 1 and 1),
so busbw tends to the slowest ring link. Ranks on a single host use an
intra-node bandwidth (``INTRA_NODE_GBYTES_S``, an NVLink-class assumption).
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.traffic import roce as roce_model
from labtest.emulation.model.traffic.model import BrokenRing
from labtest.emulation.personalities.linux.bash import Output
from labtest.emulation.personalities.linux.nic import (
    NicPort,
    gid_bytes_text,
    gid_table,
    port_now,
    stable_int,
)
from labtest.emulation.personalities.linux.state import HostState, Proc, hosts_of, in_model
from labtest.emulation.personalities.linux.tools import (
    COLLECTIVES,
    NO_PEAK_WARNING,
    WAITING_BOX,
    BwRow,
    LatRow,
    NcclOptions,
    NcclRowOut,
    PerftestOptions,
    Rank,
    Side,
    address_lines,
    bw_json,
    bw_table,
    completion_failure,
    connect_failure,
    cpu_warning,
    lat_table,
    nccl_sizes,
    nccl_text,
    settings_block,
)

GATHER_S = 0.1  # a batch closes this long after its last client, when no server waits
GATHER_MAX_S = 5.0  # and at the latest this long after it opened
BATCH_WAIT_S = 30.0
LAT_SAMPLES_DURATION_MODE = 1000
INTRA_NODE_GBYTES_S = 150.0  # [emulator assumption] NVLink-class bus bandwidth on one host
INTRA_NODE_STEP_US = 2.0
# NCCL 2.1x net_ib.cc ncclIbTest wording (as in a published Azure log, ml-engineering):
# IBV_WC_RETRY_EXC_ERR (12), Mellanox vendor syndrome 0x81 = 129, then the proxy's unwinding
NCCL_IB_WARN = (
    "{host}:{pid}:{tid} [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from "
    "peer {peer}<45031> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
    "{host}:{pid}:{tid} [0] NCCL INFO transport/net.cc:1134 -> 6\n"
    "{host}:{pid}:{tid} [0] NCCL INFO proxy.cc:679 -> 6\n"
)
# [emulator assumption] a QP gives up after 7 retries of NCCL_IB_TIMEOUT=14 (4.096 us x
# 2^14 = 67 ms each): a link dark for half a second kills the collective
QP_RETRY_BUDGET_S = 7 * 4.096e-6 * 2**14
RING_CHANNELS = 4
NCCL_INIT_S = 3.0  # [emulator assumption] mpirun start, NCCL bootstrap and ring connection setup
NCCL_ERROR = (
    "{host}: Test NCCL failure common.cu:1008 'remote process exited or there was a network "
    "error / '\n .. {host} pid {pid}: Test failure common.cu:1188\n"
)


# --- perftest: bandwidth, computed in batches ------------------------------------------


@dataclass(frozen=True)
class BwOutcome:
    rows: list[BwRow]
    mtu: int
    run_s: float
    error: str | None = None


@dataclass
class _Batch:
    requests: list[tuple[str, str]] = field(default_factory=list)
    outcomes: list[BwOutcome] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class _Coordinator:
    """Gathers bandwidth clients of one fabric that start together (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: dict[tuple[Any, ...], _Batch] = {}

    def bandwidth(
        self, fabric: Fabric, client: str, server: str, opts: PerftestOptions
    ) -> BwOutcome:
        key = (
            tuple(opts.sizes()),
            opts.qps,
            opts.bidirectional,
            opts.duration_s,
            opts.iterations(),
        )
        with self.lock:
            batch = self.open.get(key)
            leader = batch is None
            if batch is None:
                batch = self.open[key] = _Batch()
            index = len(batch.requests)
            batch.requests.append((client, server))
        if leader:
            self._gather(fabric, batch, opts.tool)
            with self.lock:
                del self.open[key]
            try:
                batch.outcomes = in_model(fabric, lambda: _bandwidth(fabric, batch.requests, opts))
            except BaseException as exc:  # handed to every member of the batch
                batch.error = exc
            batch.done.set()
        elif not batch.done.wait(BATCH_WAIT_S):
            raise TimeoutError("perftest batch did not complete")
        if batch.error is not None:
            raise batch.error
        return batch.outcomes[index]


    def _gather(self, fabric: Fabric, batch: _Batch, tool: str) -> None:
        opened = time.monotonic()
        seen = 0
        while time.monotonic() - opened < GATHER_MAX_S:
            time.sleep(GATHER_S)
            with self.lock:
                arrived, seen = len(batch.requests) > seen, len(batch.requests)
            if not arrived and not _waiting_servers(fabric, tool):
                return


def _waiting_servers(fabric: Fabric, tool: str) -> bool:
    """Whether a bandwidth server of ``tool`` somewhere on the fabric waits for its client."""
    return any(host.awaits_bandwidth_client(tool) for host in hosts_of(fabric).values())


_COORDINATORS: weakref.WeakKeyDictionary[Fabric, _Coordinator] = weakref.WeakKeyDictionary()
_COORDINATORS_LOCK = threading.Lock()


def _coordinator(fabric: Fabric) -> _Coordinator:
    with _COORDINATORS_LOCK:
        return _COORDINATORS.setdefault(fabric, _Coordinator())


def _bandwidth(
    fabric: Fabric, pairs: list[tuple[str, str]], opts: PerftestOptions
) -> list[BwOutcome]:
    """Every pair's rows at every size, then the queue pairs started for the run's length."""
    traffic = fabric.traffic
    rows: list[list[BwRow]] = [[] for _ in pairs]
    run_s = [0.0] * len(pairs)
    mtu = [0] * len(pairs)
    errors: list[str | None] = [None] * len(pairs)
    # one run's queue pairs keep their QP numbers (their ECMP routes) from measurement to
    # the started flows whose bytes the counters show
    qp_numbers = {(c, s, d, q): traffic.draw_qp() for c, s in pairs
                  for d in range(2 if opts.bidirectional else 1) for q in range(opts.qps)}
    for size in opts.sizes():
        results = traffic.run_bandwidth(
            pairs,
            msg_size_b=size,
            qps=opts.qps,
            duration_s=1.0,
            bidirectional=opts.bidirectional,
            start=False,
            qp_numbers=qp_numbers,
        )
        for k, r in enumerate(results):
            mtu[k] = min(r.mtu_b, opts.mtu or r.mtu_b)
            if r.error or r.bw_avg_gbps <= 0:
                errors[k] = r.error or "no bandwidth"
                continue
            rate_pps = r.msg_rate_mpps * 1e6
            if opts.duration_s:
                seconds = float(opts.duration_s)
                iterations = int(rate_pps * seconds)
            else:
                iterations = opts.iterations() * opts.qps
                seconds = iterations / (rate_pps / (2 if opts.bidirectional else 1))
            peak = 0.0 if opts.duration_s else r.bw_peak_gbps
            rows[k].append(BwRow(size, iterations, peak, r.bw_avg_gbps, r.msg_rate_mpps))
            run_s[k] += seconds
    live = [p for p, e in zip(pairs, errors, strict=True) if e is None]
    longest = max((s for s, e in zip(run_s, errors, strict=True) if e is None), default=0.0)
    if live and longest > 0:
        traffic.run_bandwidth(
            live,
            msg_size_b=opts.sizes()[-1],
            qps=opts.qps,
            duration_s=longest,
            bidirectional=opts.bidirectional,
            start=True,
            qp_numbers=qp_numbers,
        )
    return [BwOutcome(rows[k], mtu[k], run_s[k], errors[k]) for k in range(len(pairs))]


# --- perftest: latency ---------------------------------------------------------------


def _latency(
    fabric: Fabric, client: NicPort, server: NicPort, host: str, opts: PerftestOptions
) -> tuple[list[LatRow], int, float, str | None]:
    now = port_now(fabric, host, client)
    mtu = min(now.roce_mtu_bytes, opts.mtu or now.roce_mtu_bytes)
    gbps = max(now.speed_gbps, 1.0) * roce_model.wire_efficiency(mtu)
    samples = LAT_SAMPLES_DURATION_MODE if opts.duration_s else opts.iterations()
    rows, run_s = [], 0.0
    for size in opts.sizes():
        r = in_model(
            fabric,
            lambda size=size: fabric.traffic.run_latency(  # type: ignore[misc]
                client.endpoint, server.endpoint, size_b=size, iterations=samples
            ),
        )
        if r.error:
            return [], mtu, 0.0, r.error
        extra_us = max(size - mtu, 0) * 8 / (gbps * 1e3)
        scale = 2.0 if opts.verb == "read" else 1.0  # read latency is a round trip

        def t(v: float, extra_us: float = extra_us, scale: float = scale) -> float:
            return (v + extra_us) * scale

        rows.append(
            LatRow(
                size,
                samples,
                t(r.t_min_us),
                t(r.t_max_us),
                t(r.t_typical_us),
                t(r.t_avg_us),
                r.t_stdev_us * scale,
                t(r.p99_us),
                t(r.p99_9_us),
            )
        )
        run_s += opts.duration_s or samples * 2 * t(r.t_avg_us) * 1e-6
    return rows, mtu, run_s, None


# --- perftest: server and client ---------------------------------------------------------


def _side(host: HostState, nic: NicPort, opts: PerftestOptions, pid: int, qps: int) -> Side:
    index = opts.gid_index if opts.gid_index is not None else 3
    table = {i: gid for i, gid, _ in gid_table(nic)}
    gid = table.get(index)
    text = gid_bytes_text(gid) if gid is not None else ":".join(["00"] * 16)
    qpns = tuple(0x100 + stable_int(host.name, pid, k, modulo=0xFF00) for k in range(qps))
    return Side(opts.device or nic.rdma, index, text, qpns, stable_int(host.name, pid, "psn"))


def device_error(device: str) -> str:
    return f"IB device {device} not found\n Unable to find the Infiniband/RoCE device\n"


def start_server(host: HostState, opts: PerftestOptions, args: str, proc_sink: Any) -> Proc | None:
    """A server process that waits for its client; None when it exits at once (its log says why)."""
    if host.nic(opts.device) is None:
        proc_sink.write(2, device_error(opts.device or "?"))
        return None
    if host.listener(opts.port) is not None:
        proc_sink.write(
            2, f"Couldn't listen to port {opts.port}\n Unable to init the socket connection\n"
        )
        return None
    preamble = NO_PEAK_WARNING if opts.kind == "bw" and opts.duration_s else ""
    proc_sink.write(1, preamble + WAITING_BOX)
    listen = None if opts.rdma_cm else opts.port  # rdma_cm connects without a TCP listener
    return host.spawn(opts.tool, args, proc_sink, perftest=opts, listen_port=listen)


def run_client(host: HostState, opts: PerftestOptions, cwd: str) -> Output:
    """One client run, start to end (see the module docstring)."""
    assert opts.server is not None
    nic = host.nic(opts.device)
    if nic is None:
        return Output(stderr=device_error(opts.device or "?"), status=1)
    found = host.resolve(opts.server)
    peer = found[0] if found else None
    server = None
    if peer is not None and host.fabric.reachable(peer.name):
        server = peer.listener(opts.port)
    if peer is None or server is None:
        return Output(stderr=connect_failure(opts.server, opts.port), status=1)
    with peer.lock:
        if server.claimed or server.done.is_set():
            return Output(stderr=connect_failure(opts.server, opts.port), status=1)
        server.claimed, server.listen_port = True, None
    sopts = server.perftest
    assert sopts is not None
    if sopts.tool != opts.tool:
        text = " Failed to exchange data between server and clients\n"
        server.sink.write(2, text)
        peer.finish(server)
        return Output(stderr=text, status=1)
    peer_nic = (found[1] if found and found[1] else None) or peer.nic(sopts.device) or peer.nics[0]
    local = _side(host, nic, opts, host.new_pid(), opts.qps)
    remote = _side(peer, peer_nic, sopts, server.pid, opts.qps)
    fabric = host.fabric
    bw_rows: list[BwRow] = []
    lat_rows: list[LatRow] = []
    if opts.kind == "bw":
        outcome = _coordinator(fabric).bandwidth(fabric, nic.endpoint, peer_nic.endpoint, opts)
        bw_rows, mtu, run_s, error = outcome.rows, outcome.mtu, outcome.run_s, outcome.error
    else:
        lat_rows, mtu, run_s, error = _latency(fabric, nic, peer_nic, host.name, opts)
    client_head = settings_block(opts, local, mtu, opts.qps, server=False)
    client_head += address_lines(opts, local, remote)
    server_head = settings_block(sopts, remote, mtu, opts.qps, server=True)
    server_head += address_lines(sopts, remote, local)
    if error is None:
        host.run_for(run_s)
        if server.killed:
            error = "the server went away"
    if error is not None:
        if not server.killed:
            server.sink.write(1, server_head)
            server.sink.write(2, completion_failure("server"))
            peer.finish(server)
        return Output(client_head, completion_failure("client"), 1)
    warn_client = "" if opts.cpu_freq_f else cpu_warning(stable_int(host.name, "cpu"))
    warn_server = "" if sopts.cpu_freq_f else cpu_warning(stable_int(peer.name, "cpu"))
    if opts.kind == "bw":
        client_table = bw_table(bw_rows, opts.report_gbits, opts.report_gbits, warn_client)
        server_table = bw_table(bw_rows, sopts.report_gbits, opts.report_gbits, warn_server)
        if opts.out_json:
            path = opts.out_json_file or "perftest_out.json"
            path = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
            host.write_file(path, bw_json(opts, local.device, mtu, local.gid_index, bw_rows))
    else:
        client_table = lat_table(lat_rows, opts.duration_s, warn_client)
        server_table = lat_table(lat_rows, opts.duration_s, warn_server)
    server.sink.write(1, server_head + server_table)
    peer.finish(server)
    preamble = NO_PEAK_WARNING if opts.kind == "bw" and opts.duration_s else ""
    return Output(preamble + client_head + client_table)


# --- nccl-tests -------------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    host: HostState
    slots: int


def ring_figures(fabric: Fabric, hosts: list[HostState]) -> tuple[float, float]:
    """(bus bandwidth in bytes/us, per-step latency in us) of a ring over ``hosts``."""
    if len(hosts) < 2:
        return INTRA_NODE_GBYTES_S * 1e3, INTRA_NODE_STEP_US
    endpoints = [h.nics[0].endpoint for h in hosts]
    s1, s2 = 1 << 20, 1 << 30
    rows = in_model(fabric, lambda: fabric.traffic.run_allreduce(endpoints, [s1, s2]))
    n = len(hosts)
    slope = (rows[1].time_us - rows[0].time_us) / (s2 - s1)  # us per byte
    bandwidth = 2 * (n - 1) / (n * slope)
    alpha = rows[0].time_us / (2 * (n - 1)) - s1 / (n * bandwidth)
    return bandwidth, max(alpha, 0.0)


def collective_rows(
    binary: str, opts: NcclOptions, nranks: int, bandwidth: float, alpha_us: float
) -> list[NcclRowOut]:
    _, _, count_rule = COLLECTIVES[binary]
    n = max(nranks, 1)
    steps, factor = {
        "all_reduce_perf": (2 * (n - 1), 2 * (n - 1) / n),
        "all_gather_perf": (n - 1, (n - 1) / n),
        "reduce_scatter_perf": (n - 1, (n - 1) / n),
        "alltoall_perf": (n - 1, (n - 1) / n),
        "broadcast_perf": (n - 1, 1.0),
        "reduce_perf": (n - 1, 1.0),
        "sendrecv_perf": (1, 1.0),
    }[binary]
    word = (
        2 if opts.dtype in ("half", "bfloat16", "float16") else 8 if opts.dtype == "double" else 4
    )
    rows = []
    for size in nccl_sizes(opts):
        if count_rule == "per_rank":
            count = size // word // n
            size = count * word * n
        else:
            count = size // word
            size = count * word
        if n == 1:
            t_us = alpha_us + size / bandwidth
            bus = 0.0
        else:
            t_us = steps * alpha_us + size * factor / bandwidth
            bus = factor
        algbw = size / t_us / 1e3  # bytes/us -> GB/s
        rows.append(NcclRowOut(size, count, t_us, algbw, algbw * bus))
    return rows


def run_collective(
    launcher: HostState, binary: str, opts: NcclOptions, placements: list[Placement]
) -> Output:
    """nccl-tests over the placed ranks: header, table, gate lines; the run's time passes."""
    hosts = [p.host for p in placements]
    distinct = list(dict.fromkeys(hosts))
    ranks: list[Rank] = []
    gpu = str(launcher.var("gpu_model", "NVIDIA H100 80GB HBM3"))
    for placement in placements:
        for slot in range(placement.slots):
            pid = 10000 + stable_int(placement.host.name, len(ranks), modulo=3_000_000)
            for g in range(opts.gpus):
                device = slot * opts.gpus + g
                bus = f"0x{0x18 + 0x1A * device % 0xE0:x}"
                ranks.append(Rank(len(ranks), pid, placement.host.hostname, device, bus, gpu))
    try:
        bandwidth, alpha = ring_figures(launcher.fabric, distinct)
    except BrokenRing:  # the first rank's QP exhausts its retries (any other error is a bug)
        first, peer = distinct[0], distinct[1 % len(distinct)]
        pid = ranks[0].pid
        address = next((n.ipv4 for n in peer.nics if n.ipv4), peer.hostname)
        warn = NCCL_IB_WARN.format(host=first.hostname, pid=pid, tid=pid + 71, peer=address)
        text = NCCL_ERROR.format(host=first.hostname, pid=pid)
        return Output(stderr=warn + text, status=1)
    rows = collective_rows(binary, opts, len(ranks), bandwidth, alpha)
    run_s = NCCL_INIT_S + sum(r.time_us for r in rows) * 2 * (opts.iters + opts.warmup) * 1e-6
    dark_at = _ring_goes_dark(launcher.fabric, distinct, run_s)
    if dark_at is not None:  # a link of the ring went dark long enough: the QP gave up
        launcher.run_for(dark_at + QP_RETRY_BUDGET_S)
        first, peer = distinct[0], distinct[1]
        pid = ranks[0].pid
        address = next((n.ipv4 for n in peer.nics if n.ipv4), peer.hostname)
        warn = NCCL_IB_WARN.format(host=first.hostname, pid=pid, tid=pid + 71, peer=address)
        return Output(stderr=warn + NCCL_ERROR.format(host=first.hostname, pid=pid), status=1)
    launcher.run_for(run_s)
    return Output(nccl_text(binary, opts, ranks, rows))


def _ring_goes_dark(fabric: Fabric, hosts: list[HostState], run_s: float) -> float | None:
    """Seconds into the run at which a link on the ring's paths (each hop over
    ``RING_CHANNELS`` entropies, as NCCL spreads a hop over channels) stays down for the
    QP's whole retry budget; None if none does."""
    if len(hosts) < 2:
        return None
    traffic, t0 = fabric.traffic, fabric.now_s()
    links: set[str] = set()
    ends = [h.nics[0].endpoint for h in hosts]
    flapping = fabric.flapping_links()  # a hop returns to a flapping link when it is lit
    for a, b in zip(ends, [*ends[1:], ends[0]], strict=True):
        for channel, returning in itertools.product(range(RING_CHANNELS), ((), flapping)):
            for egress in traffic.path(a, b, sport=0xC000 + channel, returning=returning):
                device, _, port = egress.partition(":")
                if (link := fabric.link_of(device, port)) is not None:
                    links.add(link)
    first: float | None = None
    for link in links:
        end = t0 + run_s + QP_RETRY_BUDGET_S
        edges = fabric.link_transitions(link, t0, end)
        if not edges:
            continue
        for (t, up), nxt in zip(edges, [*edges[1:], (end, True)], strict=True):
            if not up and t <= t0 + run_s and nxt[0] - t >= QP_RETRY_BUDGET_S:
                first = t - t0 if first is None else min(first, t - t0)
    return first


def mpirun_words(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Open MPI options up to the executable, and the executable with its arguments."""
    with_value = {
        "-np",
        "-n",
        "-c",
        "--np",
        "-H",
        "--host",
        "-host",
        "-x",
        "--mca",
        "-mca",
        "--bind-to",
        "--map-by",
        "-N",
        "--npernode",
        "-hostfile",
        "--hostfile",
        "--machinefile",
        "-wdir",
        "--wdir",
        "--prefix",
        "--rankfile",
    }
    two_values = {"--mca", "-mca"}
    opts: dict[str, Any] = {"env": {}, "hosts": [], "np": None}
    i = 1
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-"):
            return opts, argv[i:]
        if word in two_values:
            i += 3
            continue
        if word in with_value:
            value = argv[i + 1] if i + 1 < len(argv) else ""
            if word in ("-np", "-n", "-c", "--np"):
                opts["np"] = int(value) if value.isdigit() else None
            elif word in ("-H", "--host", "-host"):
                opts["hosts"] += [h for h in value.split(",") if h]
            elif word == "-x":
                name, _, val = value.partition("=")
                opts["env"][name] = val
            elif word in ("-hostfile", "--hostfile", "--machinefile"):
                opts["hostfile"] = value
            i += 2
            continue
        opts.setdefault("flags", []).append(word)
        i += 1
    return opts, []


def place(
    hosts: list[str],
    np: int | None,
    resolve: Callable[[str], HostState | None],
) -> tuple[list[Placement], str | None, int]:
    """Ranks per host as Open MPI's ``-H h:slots`` fills them, the first name that resolves
    to no host, and how many ranks found no slot (Open MPI refuses to oversubscribe)."""
    slots: list[tuple[HostState, int]] = []
    for entry in hosts:
        name, _, count = entry.partition(":")
        host = resolve(name)
        if host is None:
            return [], name, 0
        slots.append((host, int(count) if count.isdigit() else 1))
    total = np if np is not None else sum(s for _, s in slots)
    placements: list[Placement] = []
    left = total
    for host, room in slots:
        take = min(room, left)
        if take > 0:
            placements.append(Placement(host, take))
            left -= take
    return placements, None, left
