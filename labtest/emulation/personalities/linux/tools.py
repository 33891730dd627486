"""perftest and nccl-tests as an emulated host prints them: option parsing and text.

Pure functions: the host (``session``) decides *what* ran (from the fabric's
traffic model) and these decide how the tools would have printed it.

perftest formats (linux-rdma/perftest ``perftest_parameters.h`` and
``ctx_print_test_info``): the banner (``RDMA_Write BW Test``,
``Send Bidirectional BW Test``, ``RDMA_Write Latency Test``), the settings
block, ``local address``/``remote address`` lines with ``GID:`` in ``%02d``
bytes, the 87-dash ``RESULT_LINE``, ``RESULT_FMT``/``RESULT_FMT_G`` headers and
``REPORT_FMT`` rows (`` %-7lu    %-10lu       %-7.2lf            %-7.2lf\\t\\t
%-7.6lf``); latency rows as in the ConnectX-3 ``-a`` capture (percentile
columns) and the ``-D`` capture (``t_avg`` and ``tps average``); the server's
``Waiting for client`` box, `` WARNING: BW peak won't be measured in this
run.`` in duration mode (Mellanox/ngc_multinode_perf#108) and the
``Conflicting CPU frequency values detected`` line without ``-F``; the
client's connection failure as fixed in linux-rdma/perftest#228. ``--out_json``
keys are those of the published ``ib_write_bw --out_json`` example (sample
out_json_mlx5_11); a sweep writes ``results`` as a list (our choice).

nccl-tests formats (NVIDIA/nccl-tests ``common.cu``, as in the nccl-tests
#369 capture): the ``# nThread ...`` line, ``#  Rank`` lines, the two-group
column header, rows ``%12li  %12li  %8s  %6s  %6i`` then per group
``  %7.2f  %6.2f  %6.2f  %5s``, ``# Out of bounds values : 0 OK`` and
``# Avg bus bandwidth    : %g`` (the mean of both groups' busbw).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

RESULT_LINE = "-" * 87 + "\n"
WAITING_BOX = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)
NO_PEAK_WARNING = " WARNING: BW peak won't be measured in this run.\n"
MAX_SIZE = 8388608  # -a runs 2 B .. 2^23 B
MIB = 2**20

BANNER_VERB = {"write": "RDMA_Write", "read": "RDMA_Read", "send": "Send"}
TOOLS = {
    "ib_write_bw": ("write", "bw"),
    "ib_read_bw": ("read", "bw"),
    "ib_send_bw": ("send", "bw"),
    "ib_write_lat": ("write", "lat"),
    "ib_read_lat": ("read", "lat"),
    "ib_send_lat": ("send", "lat"),
}

_VALUE_OPTIONS = {
    "-d": "device",
    "--ib-dev": "device",
    "-i": "ib_port",
    "--ib-port": "ib_port",
    "-x": "gid_index",
    "--gid-index": "gid_index",
    "-q": "qps",
    "--qp": "qps",
    "-s": "size",
    "--size": "size",
    "-D": "duration",
    "--duration": "duration",
    "-n": "iters",
    "--iters": "iters",
    "-p": "port",
    "--port": "port",
    "-m": "mtu",
    "--mtu": "mtu",
    "-c": "connection",
    "--connection": "connection",
    "-t": "tx_depth",
    "--tx-depth": "tx_depth",
    "-r": "rx_depth",
    "--rx-depth": "rx_depth",
    "-I": "inline",
    "--inline_size": "inline",
    "-T": "tos",
    "--tos": "tos",
    "-S": "sl",
    "--sl": "sl",
    "-u": "qp_timeout",
    "--qp-timeout": "qp_timeout",
    "-Q": "cq_mod",
    "--cq-mod": "cq_mod",
    "-o": "outs",
    "--outs": "outs",
    "-l": "post_list",
    "--post_list": "post_list",
    "--out_json_file": "out_json_file",
    "--output": "output",
    "--source_ip": "source_ip",
    "--dest_ip": "dest_ip",
    "--flows": "flows",
    "-L": "hop_limit",
    "--hop_limit": "hop_limit",
}
_FLAG_OPTIONS = {
    "-a": "all",
    "--all": "all",
    "-b": "bidirectional",
    "--bidirectional": "bidirectional",
    "-F": "cpu_freq",
    "--CPU-freq": "cpu_freq",
    "-R": "rdma_cm",
    "--rdma_cm": "rdma_cm",
    "-z": "com_rdma_cm",
    "--com_rdma_cm": "com_rdma_cm",
    "--report_gbits": "report_gbits",
    "--out_json": "out_json",
    "-e": "events",
    "--events": "events",
    "-h": "help",
    "--help": "help",
    "-V": "version",
    "--version": "version",
    "-N": "no_peak",
    "--noPeak": "no_peak",
    "-H": "histogram",
    "--report-histogram": "histogram",
    "-U": "unsorted",
    "--report-unsorted": "unsorted",
    "-C": "cycles",
    "--report-cycles": "cycles",
    "--run_infinitely": "run_infinitely",
    "--report-both": "report_both",
    "-O": "dualport",
    "--dualport": "dualport",
    "--use_cuda": "use_cuda",
    "--odp": "odp",
}


class PerftestUsageError(ValueError):
    """A command line perftest refuses; the message is what it prints."""


@dataclass(frozen=True)
class PerftestOptions:
    tool: str
    verb: str  # write / read / send
    kind: str  # bw / lat
    server: str | None = None  # the address a client connects to; None: server side
    device: str | None = None
    ib_port: int = 1
    gid_index: int | None = None
    qps: int = 1
    size: int | None = None
    all_sizes: bool = False
    duration_s: int | None = None
    iters: int | None = None
    port: int = 18515
    mtu: int | None = None
    cpu_freq_f: bool = False
    bidirectional: bool = False
    report_gbits: bool = False
    rdma_cm: bool = False
    out_json: bool = False
    out_json_file: str | None = None
    help: bool = False
    version: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def is_client(self) -> bool:
        return self.server is not None

    def sizes(self) -> list[int]:
        if self.all_sizes:
            return [2**k for k in range(1, 24)]
        return [self.size or (65536 if self.kind == "bw" else 2)]

    def iterations(self) -> int:
        """Per QP, as ``-n`` sets it (write BW defaults to 5000, the rest to 1000)."""
        if self.iters:
            return self.iters
        return 5000 if (self.kind, self.verb) == ("bw", "write") else 1000

    def cq_moderation(self) -> int:
        """perftest lowers CQ moderation to 1 for messages above 8 KiB (MSG_SIZE_CQ_MOD_LIMIT)."""
        return 100 if self.all_sizes or (self.size or 65536) <= 8192 else 1

    def banner(self) -> str:
        kind = "Latency" if self.kind == "lat" else "BW"
        bidir = "Bidirectional " if self.bidirectional and self.kind == "bw" else ""
        return f"{BANNER_VERB[self.verb]} {bidir}{kind} Test"


def parse_perftest(tool: str, argv: list[str]) -> PerftestOptions:
    """perftest's getopt: short flags may cluster (``-zR``), long ones take ``=value``."""
    verb, kind = TOOLS[tool]
    values: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _VALUE_OPTIONS:
            if eq:
                values[_VALUE_OPTIONS[name]] = inline
            elif i + 1 < len(argv):
                values[_VALUE_OPTIONS[name]] = argv[i + 1]
                i += 1
            else:
                raise PerftestUsageError(
                    f"{tool}: option requires an argument -- '{name.lstrip('-')}'"
                )
        elif name in _FLAG_OPTIONS:
            flags.add(_FLAG_OPTIONS[name])
        elif arg.startswith("--"):
            raise PerftestUsageError(f"{tool}: unrecognized option '{arg}'")
        elif arg.startswith("-") and len(arg) > 2:
            for k, ch in enumerate(arg[1:]):  # clustered short flags: -zR, -aF, -s64
                short = f"-{ch}"
                if short in _FLAG_OPTIONS:
                    flags.add(_FLAG_OPTIONS[short])
                elif short in _VALUE_OPTIONS and arg[k + 2 :]:
                    values[_VALUE_OPTIONS[short]] = arg[k + 2 :]
                    break
                else:
                    raise PerftestUsageError(f"{tool}: invalid option -- '{ch}'")
        elif arg.startswith("-") and arg != "-":
            raise PerftestUsageError(f"{tool}: invalid option -- '{arg[1:]}'")
        else:
            positional.append(arg)
        i += 1
    if len(positional) > 1:
        raise PerftestUsageError(f" Too many arguments: {' '.join(positional)}")
    try:
        ints = {
            k: int(values[k], 0)
            for k in ("ib_port", "gid_index", "qps", "size", "duration", "iters", "port", "mtu")
            if k in values
        }
    except ValueError as exc:
        raise PerftestUsageError(f" Invalid number in the command line: {exc}") from None
    if ints.get("size", 1) < 1 or ints.get("size", 1) > MAX_SIZE:
        raise PerftestUsageError(f" Size should be between 1 and {MAX_SIZE}")
    if ints.get("qps", 1) < 1:
        raise PerftestUsageError(" Num of qps should be between 1 and 16384")
    return PerftestOptions(
        tool=tool,
        verb=verb,
        kind=kind,
        server=positional[0] if positional else None,
        device=values.get("device"),
        ib_port=ints.get("ib_port", 1),
        gid_index=ints.get("gid_index"),
        qps=ints.get("qps", 1),
        size=ints.get("size"),
        all_sizes="all" in flags,
        duration_s=ints.get("duration"),
        iters=ints.get("iters"),
        port=ints.get("port", 18515),
        mtu=ints.get("mtu"),
        cpu_freq_f="cpu_freq" in flags,
        bidirectional="bidirectional" in flags,
        report_gbits="report_gbits" in flags,
        rdma_cm="rdma_cm" in flags,
        out_json="out_json" in flags,
        out_json_file=values.get("out_json_file"),
        help="help" in flags,
        version="version" in flags,
    )


def usage(tool: str) -> str:
    """``--help``: perftest's usage() wording for the options the emulator honours."""
    verb, kind = TOOLS[tool]
    default_size = 65536 if kind == "bw" else 2
    default_iters = 5000 if (kind, verb) == ("bw", "write") else 1000
    lines = [
        "Usage:",
        f"  {tool}            start a server and wait for connection",
        f"  {tool} <host>     connect to server at <host>",
        "",
        "Options:",
        "  -a, --all  Run sizes from 2 till 2^23",
        "  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional)",
        "  -c, --connection=<RC/XRC/UC/UD/DC/SRD>  Connection type RC/XRC/UC/UD/DC/SRD "
        "(default RC)",
        "  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)",
        "  -D, --duration  Run test for a customized period of seconds.",
        "  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, "
        "and cpu-freq is not on max.",
        "  -h, --help  Show this help screen.",
        "  -i, --ib-port=<port>  Use port <port> of IB device (default 1)",
        "  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu)",
        f"  -n, --iters=<iters>  Number of exchanges (at least 5, default {default_iters})",
        "  -p, --port=<port>  Listen on/connect to port <port> (default 18515)",
        "  -q, --qp=<num of qp's>  Num of qp's(default 1)",
        "  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs",
        f"  -s, --size=<size>  Size of message to exchange (default {default_size})",
        "  -x, --gid-index=<index>  Test uses GID with GID index",
        "  -z, --com_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs",
        "      --out_json  Save the report in a json file",
        "      --out_json_file=<file>  Name of the report json file",
        "      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)",
    ]
    return "\n".join(lines) + "\n"


# --- perftest text ----------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One end as the banner prints it."""

    device: str
    gid_index: int | None
    gid: str  # %02d bytes
    qpns: tuple[int, ...]
    psn_seed: int


def settings_block(opts: PerftestOptions, local: Side, mtu: int, qps: int, server: bool) -> str:
    """The banner and the settings lines (``ctx_print_test_info``)."""
    tab = "\t\t"
    lines = [
        RESULT_LINE.rstrip("\n"),
        f"                    {opts.banner()}",
        f" Dual-port       : OFF{tab}Device         : {local.device}",
        f" Number of qps   : {qps}{tab}Transport type : IB",
        f" Connection type : RC{tab}Using SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
    ]
    if opts.kind == "lat":
        lines.append(" TX depth        : 1")
    elif opts.verb == "send" and server:
        lines.append(" RX depth        : 512")
    elif not server:
        lines.append(" TX depth        : 128")
    if opts.kind == "bw":
        lines.append(f" CQ Moderation   : {opts.cq_moderation()}")
    lines += [f" Mtu             : {mtu}[B]", " Link type       : Ethernet"]
    if local.gid_index is not None:
        lines.append(f" GID index       : {local.gid_index}")
    if opts.verb == "read":
        lines.append(" Outstand reads  : 16")
    else:
        inline = {"write": 220, "send": 236}.get(opts.verb, 0) if opts.kind == "lat" else 0
        lines.append(f" Max inline data : {inline}[B]")
    lines += [
        f" rdma_cm QPs\t : {'ON' if opts.rdma_cm else 'OFF'}",
        f" Data ex. method : {'rdma_cm' if opts.rdma_cm else 'Ethernet'}",
        RESULT_LINE.rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


def address_lines(opts: PerftestOptions, local: Side, remote: Side) -> str:
    out = []
    for label, side in (("local", local), ("remote", remote)):
        for k, qpn in enumerate(side.qpns):
            psn = (side.psn_seed * 2654435761 + k * 40503) % (1 << 24)
            line = f" {label} address: LID 0000 QPN {qpn:#06x} PSN {psn:#x}"
            if opts.verb == "read":
                line += " OUT 0x10"
            if opts.verb != "send":
                rkey = (psn ^ 0x5A5A5) & 0xFFFFFF
                vaddr = 0x7F0000000000 + ((psn << 12) & 0xFFFFFFFFF000)
                line += f" RKey {rkey:#08x} VAddr {vaddr:#016x}"
            out.append(f"{line}\n GID: {side.gid}\n")
    return "".join(out) + RESULT_LINE


@dataclass(frozen=True)
class BwRow:
    size: int
    iterations: int
    peak_gbps: float
    avg_gbps: float
    msg_rate_mpps: float


def bw_value(gbps: float, report_gbits: bool) -> float:
    return gbps if report_gbits else gbps * 1e9 / 8 / MIB


def bw_table(rows: list[BwRow], unit_gbits: bool, values_gbits: bool, cpu_warning: str) -> str:
    """The result table; ``unit_gbits`` is the header's unit, ``values_gbits`` the numbers'
    (a server without ``--report_gbits`` prints the client's Gb/s under an MB/sec header)."""
    unit = "Gb/sec" if unit_gbits else "MB/sec"
    out = [f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]\n"]
    out.append(cpu_warning)
    for r in rows:
        peak, avg = bw_value(r.peak_gbps, values_gbits), bw_value(r.avg_gbps, values_gbits)
        out.append(
            f" {r.size:<7d}    {r.iterations:<10d}       {peak:<7.2f}            {avg:<7.2f}"
            f"\t\t   {r.msg_rate_mpps:<7.6f}\n"
        )
    return "".join(out) + RESULT_LINE


@dataclass(frozen=True)
class LatRow:
    size: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float
    t_avg_us: float
    t_stdev_us: float
    p99_us: float
    p99_9_us: float


def lat_table(rows: list[LatRow], duration_s: int | None, cpu_warning: str) -> str:
    if duration_s:
        out = [" #bytes        #iterations       t_avg[usec]    tps average\n", cpu_warning]
        for r in rows:
            tps = 1e6 / r.t_avg_us if r.t_avg_us > 0 else 0.0
            iters = round(duration_s * tps / 2)
            out.append(
                f" {r.size:<7d}       {iters:<d}            {r.t_avg_us:<7.2f}        {tps:<7.2f}\n"
            )
        return "".join(out) + RESULT_LINE
    out = [
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
        "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n",
        cpu_warning,
    ]
    for r in rows:
        out.append(
            f" {r.size:<7d} {r.iterations:<d}          {r.t_min_us:<7.2f}        "
            f"{r.t_max_us:<7.2f}      {r.t_typical_us:<7.2f}            {r.t_avg_us:<7.2f}"
            f"       {r.t_stdev_us:<7.2f}         {r.p99_us:<7.2f}                 "
            f"{r.p99_9_us:<7.2f}\n"
        )
    return "".join(out) + RESULT_LINE


def cpu_warning(seed: int) -> str:
    """The line perftest prints without ``-F`` when the cores run below their max clock."""
    low = 1200.0 + (seed % 97) * 7.213
    high = 2400.0 + (seed % 13) * 0.917
    return (
        f"Conflicting CPU frequency values detected: {low:.6f} != {high:.6f}. "
        "CPU Frequency is not max.\n"
    )


def bw_json(
    opts: PerftestOptions, device: str, mtu: int, gid_index: int | None, rows: list[BwRow]
) -> str:
    results = [
        {
            "MsgSize": r.size,
            "n_iterations": r.iterations,
            "BW_peak": round(bw_value(r.peak_gbps, opts.report_gbits), 2),
            "BW_average": round(bw_value(r.avg_gbps, opts.report_gbits), 2),
            "MsgRate": round(r.msg_rate_mpps, 6),
        }
        for r in rows
    ]
    data: dict[str, Any] = {
        "test_info": {
            "test": opts.banner().replace(" ", "_"),
            "Dual_port": "OFF",
            "Device": device,
            "Number_of_qps": opts.qps,
            "Transport_type": "IB",
            "Connection_type": "RC",
            "Using_SRQ": "OFF",
            "PCIe_relax_order": "ON",
            "ibv_wr_API": "ON",
            "TX_depth": 128,
            "CQ_Moderation": opts.cq_moderation(),
            "Mtu": mtu,
            "Link_type": "Ethernet",
            "GID_index": gid_index,
            "Max_inline_data": 0,
            "rdma_cm_QPs": "ON" if opts.rdma_cm else "OFF",
            "Use_ROCm_memory": "OFF",
            "Data_ex_method": "rdma_cm" if opts.rdma_cm else "Ethernet",
        },
        "results": results[0] if len(results) == 1 else results,
    }
    return json.dumps(data, indent=2) + "\n"


def connect_failure(address: str, port: int) -> str:
    """What a client prints when nothing listens (perftest after linux-rdma/perftest#228)."""
    return (
        f"Couldn't connect to {address}:{port}\n"
        "Unable to open file descriptor for socket connection\n"
        " Unable to init the socket connection\n"
    )


def completion_failure(side: str) -> str:
    """A QP that lost its peer: the retry counter ran out (IBV_WC_RETRY_EXC_ERR = 12)."""
    return (
        f" Completion with error at {side}\n"
        " Failed status 12: wr_id 0 syndrom 0x81\n"
        "scnt=128, ccnt=0\n"
        " Failed to complete run_iter function successfully\n"
    )


# --- nccl-tests ---------------------------------------------------------------------

COLLECTIVES: dict[str, tuple[str, int, str]] = {
    # binary: (redop, root, how count relates to size) -- nccl-tests' defaults per test
    "all_reduce_perf": ("sum", -1, "all"),
    "all_gather_perf": ("none", -1, "per_rank"),
    "reduce_scatter_perf": ("sum", -1, "per_rank"),
    "alltoall_perf": ("none", -1, "per_rank"),
    "broadcast_perf": ("none", 0, "all"),
    "reduce_perf": ("sum", 0, "all"),
    "sendrecv_perf": ("sum", -1, "all"),
}
NCCL_VERSION = "# nccl-tests version 2.17.8 nccl-headers=22703 nccl-library=22703\n"


class NcclUsageError(ValueError):
    pass


@dataclass(frozen=True)
class NcclOptions:
    min_bytes: int = 32 * 1024 * 1024
    max_bytes: int = 32 * 1024 * 1024
    step_factor: int | None = None
    step_bytes: int = 1024 * 1024
    iters: int = 20
    warmup: int = 1
    gpus: int = 1
    check: int = 1
    dtype: str = "float"


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMGkmg]?)", text)
    if not m:
        raise NcclUsageError(f"invalid size {text!r}")
    return int(m[1]) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m[2].lower()]


def parse_nccl(argv: list[str]) -> NcclOptions:
    """nccl-tests options: -b -e -f -i -n -w -g -c -d (others are accepted and ignored)."""
    keys = {
        "-b": "min_bytes",
        "--minbytes": "min_bytes",
        "-e": "max_bytes",
        "--maxbytes": "max_bytes",
        "-f": "step_factor",
        "--stepfactor": "step_factor",
        "-i": "step_bytes",
        "--stepbytes": "step_bytes",
        "-n": "iters",
        "--iters": "iters",
        "-w": "warmup",
        "--warmup_iters": "warmup",
        "-g": "gpus",
        "--ngpus": "gpus",
        "-c": "check",
        "--check": "check",
        "-d": "dtype",
        "--datatype": "dtype",
    }
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        name, eq, inline = argv[i].partition("=")
        if name.startswith("-") and i + 1 <= len(argv):
            value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if eq else 2
            key = keys.get(name)
            if key in ("min_bytes", "max_bytes", "step_bytes"):
                values[key] = _size(value)
            elif key == "dtype":
                values[key] = value
            elif key is not None:
                try:
                    values[key] = int(value)
                except ValueError:
                    raise NcclUsageError(f"invalid value {value!r} for {name}") from None
            continue
        i += 1
    opts = NcclOptions(**values)
    if opts.min_bytes > opts.max_bytes:
        raise NcclUsageError("minBytes must be lower or equal to maxBytes")
    return opts


def nccl_sizes(opts: NcclOptions) -> list[int]:
    sizes, s = [], opts.min_bytes
    while s <= opts.max_bytes:
        sizes.append(s)
        if opts.step_factor and opts.step_factor > 1:
            s *= opts.step_factor
        else:
            s += max(opts.step_bytes, 1)
    return sizes


@dataclass(frozen=True)
class Rank:
    rank: int
    pid: int
    host: str
    device: int
    bus: str
    gpu: str


@dataclass(frozen=True)
class NcclRowOut:
    size: int
    count: int
    time_us: float
    algbw: float
    busbw: float


def nccl_text(binary: str, opts: NcclOptions, ranks: list[Rank], rows: list[NcclRowOut]) -> str:
    redop, root, _ = COLLECTIVES[binary]
    step = f"{opts.step_factor}(factor)" if opts.step_factor else f"{opts.step_bytes}(bytes)"
    out = [
        NCCL_VERSION,
        f"# Collective test starting: {binary}\n",
        f"# nThread 1 nGpus {opts.gpus} minBytes {opts.min_bytes} maxBytes {opts.max_bytes} "
        f"step: {step} warmup iters: {opts.warmup} iters: {opts.iters} agg iters: 1 "
        f"validation: {opts.check} graph: 0\n",
        "#\n",
        "# Using devices\n",
    ]
    out += [
        f"#  Rank {r.rank:2d} Group  0 Pid {r.pid:6d} on {r.host:>10} device {r.device:2d} "
        f"[{r.bus}] {r.gpu}\n"
        for r in ranks
    ]
    out += [
        "#\n",
        "#                                                              out-of-place"
        "                       in-place          \n",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong \n",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
        "     (us)  (GB/s)  (GB/s)         \n",
    ]
    busbws: list[float] = []
    for r in rows:
        timing = (r.time_us, r.algbw, r.busbw, 0)
        out.append(nccl_row(r.size, r.count, opts.dtype, redop, root, timing, timing))
        busbws += [round(r.busbw, 2)] * 2
    avg = sum(busbws) / len(busbws) if busbws else 0.0
    out += [
        "# Out of bounds values : 0 OK\n",
        f"# Avg bus bandwidth    : {avg:g} \n",
        "#\n",
        f"# Collective test concluded: {binary}\n",
        "#\n",
    ]
    return "".join(out)


def nccl_row(
    size: int,
    count: int,
    dtype: str,
    redop: str,
    root: int,
    out_of_place: tuple[float, float, float, int],
    in_place: tuple[float, float, float, int],
) -> str:
    """One table row; each timing is (time_us, algbw GB/s, busbw GB/s, #wrong)."""
    groups = "".join(
        f"  {t:7.2f}  {alg:6.2f}  {bus:6.2f}  {wrong:6d}"
        for t, alg, bus, wrong in (out_of_place, in_place)
    )
    return f"{size:12d}  {count:12d}  {dtype:>8}  {redop:>6}  {root:6d}{groups}\n"


#: the rule Open MPI draws above and below its help messages
MPI_BAR = "-" * 74 + "\n"


def mpirun_missing_executable(node: str, executable: str) -> str:
    """Open MPI's message when a node lacks the binary (as quoted in QEF/q-e#32)."""
    return (
        f"{MPI_BAR}mpirun was unable to find the specified executable file, and therefore\n"
        "did not launch the job.  This error was first reported for process\n"
        "rank 0; it may have occurred for other processes as well.\n\n"
        f"NOTE: A common cause for this error is misspelling a mpirun command\n"
        "      line parameter option (remember that mpirun interprets the first\n"
        "      unrecognized command line token as the executable).\n\n"
        f"Node:       {node}\nExecutable: {executable}\n{MPI_BAR}"
    )


def _orte_no_daemons(ssh_error: str, causes: str = "") -> str:
    """ssh's own error, then ORTE's one message for any daemon it could not start."""
    return (
        f"{ssh_error}\n{MPI_BAR}ORTE was unable to reliably start one or more daemons.\n"
        f"{causes}{MPI_BAR}"
    )


def mpirun_unreachable(node: str) -> str:
    """Open MPI when it cannot start its daemon on a node over ssh."""
    return _orte_no_daemons(
        f"ssh: connect to host {node} port 22: No route to host",
        "This usually is caused by:\n\n"
        "* not finding the required libraries and/or binaries on\n"
        "  one or more nodes. Please check your PATH and LD_LIBRARY_PATH\n"
        "  settings, or configure OMPI with --enable-orterun-prefix-by-default\n\n"
        "* lack of authority to execute on one or more specified nodes.\n",
    )


def mpirun_unknown_host(node: str) -> str:
    return _orte_no_daemons(f"ssh: Could not resolve hostname {node}: Name or service not known")
