"""perftest between hosts: the server in the background on one, the client on the other.

One pair goes through these steps (docs/hosts.md lists the exact commands):

1. ``TOOL --help`` once per host: a missing tool is a ToolMissing before
   anything starts, and the help text tells whether ``--out_json`` exists.
2. Start the server: ``nohup stdbuf -oL -eL TOOL ARGS > LOG 2>&1 < /dev/null &
   echo $!``. The PID is recorded; ``stdbuf`` keeps the log complete even
   when the server has to be killed; all three streams are redirected so the
   SSH channel closes at once.
3. Wait, bounded, until it listens: ``ss -ltn 'sport = :PORT'`` (with
   ``-R``/rdma_cm there is no TCP listener, so the "Waiting for client"
   banner counts). A server that died gives ProtocolError with its log, one
   that never listens gives TransportTimeout; both name the server host and port.
4. Run the client within the caller's timeout; ``--out_json`` when the tool
   has it (bandwidth tests), the text table otherwise.
5. Collect the server's output once it has exited (bounded).
6. Always, also after any failure: stop the server by its PID (only if that
   PID still runs the tool: PIDs get reused), ``kill`` then ``kill -9``, and
   remove the files.

Several pairs run at once for fabric-wide and incast tests: each step runs for
every pair in parallel threads before the next step starts, so every server
listens before any client starts and all clients run at the same time.
"""

from __future__ import annotations

import logging
import re
import shlex
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from labtest.capabilities.host import (
    PerftestBandwidth,
    PerftestBandwidthPair,
    PerftestLatencyPair,
    PerftestSpec,
)
from labtest.drivers.linux.parsers.perftest import parse_perftest_bw, parse_perftest_lat
from labtest.drivers.linux.shell import HostShell
from labtest.errors import (
    CommandFailed,
    DataplaneFailed,
    InfraError,
    ParseError,
    ProtocolError,
    TransportTimeout,
)

log = logging.getLogger("labtest.drivers.linux.perftest")

BANDWIDTH_TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw")
LATENCY_TESTS = ("ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat")
POLL_S = 0.05
SERVER_EXIT_S = 5.0  # after the client finished, the server prints its report and exits
KILL_WAIT_S = 2.0
_COMM_LEN = 15  # Linux truncates a process name (comm) to 15 characters
_WAITING = "Waiting for client to connect"
#: what perftest prints when the data plane lost the QP's packets (IBV_WC_RETRY_EXC_ERR = 12):
#: the client's completion error (perftest_resources.c NOTIFY_COMP_ERROR_*), and the
#: server's "Couldn't read remote address" when its peer's exchange died mid-run
_DATAPLANE_FAILURE = re.compile(
    r"Completion with error|Failed status \d+|transport retry counter exceeded|"
    r"Failed to complete run_iter|Couldn't read remote address",
    re.I,
)

PerftestResult = PerftestBandwidthPair | PerftestLatencyPair
R = TypeVar("R")


@dataclass(frozen=True)
class RdmaEndpoint:
    """What perftest needs to know about one host's side of a test."""

    device: str | None
    ib_port: int | None
    gid_index: int | None
    address: str | None  # the data-plane IPv4 a client connects to


class PerftestHost(Protocol):
    """What a host offers the pair runner (LinuxHost does)."""

    name: str
    shell: HostShell
    tmp_dir: str
    server_start_timeout_s: float

    def rdma_endpoint(self) -> RdmaEndpoint: ...


@dataclass(frozen=True)
class PerftestPair:
    """One client/server pair; ``server_address`` None uses the server's RDMA address."""

    client: PerftestHost
    server: PerftestHost
    spec: PerftestSpec
    server_address: str | None = None


def is_latency(test: str) -> bool:
    if test in LATENCY_TESTS:
        return True
    if test in BANDWIDTH_TESTS:
        return False
    raise ValueError(f"unknown perftest tool {test!r}; known: {BANDWIDTH_TESTS + LATENCY_TESTS}")


def default_timeout_s(spec: PerftestSpec) -> float:
    """A generous client budget: the run itself plus connection setup and margins."""
    per_size = spec.duration_s if spec.duration_s else 5.0
    sizes = 23 if spec.size_bytes is None else 1  # -a runs 2 B .. 8 MiB
    return per_size * sizes + 30.0


def perftest_args(spec: PerftestSpec, side: RdmaEndpoint) -> list[str]:
    """The options both sides get; device, port and GID index default to each host's own."""
    latency = is_latency(spec.test)
    if spec.size_bytes is None and spec.duration_s:
        raise ValueError("perftest cannot sweep all sizes (-a) in duration mode (-D)")
    if latency and (spec.bidirectional or spec.qps != 1):
        raise ValueError(f"{spec.test} has no bidirectional mode and runs one QP")
    args: list[str] = []
    device = spec.device or side.device
    ib_port = spec.ib_port or side.ib_port
    gid_index = spec.gid_index if spec.gid_index is not None else side.gid_index
    if device:
        args += ["-d", device]
    if ib_port:
        args += ["-i", str(ib_port)]
    if gid_index is not None:
        args += ["-x", str(gid_index)]
    if not latency:
        args += ["-q", str(spec.qps)]
    args += ["-s", str(spec.size_bytes)] if spec.size_bytes is not None else ["-a"]
    if spec.duration_s:
        args += ["-D", str(max(1, round(spec.duration_s)))]
    if spec.iterations:
        args += ["-n", str(spec.iterations)]
    if spec.bidirectional:
        args += ["-b"]
    if spec.report_gbits and not latency:
        args += ["--report_gbits"]
    return [*args, "-F", "-p", str(spec.tcp_port), *spec.extra_args]


def check_ports(pairs: Sequence[PerftestPair]) -> None:
    """Servers sharing a host must listen on distinct TCP ports."""
    seen: dict[tuple[str, int], int] = {}
    for i, pair in enumerate(pairs):
        key = (pair.server.name, pair.spec.tcp_port)
        if key in seen:
            raise ValueError(
                f"perftest pairs {seen[key]} and {i} both listen on {key[0]} TCP port {key[1]}; "
                "give every pair on one server host its own tcp_port"
            )
        seen[key] = i


def run_pairs(pairs: Sequence[PerftestPair], *, timeout_s: float) -> list[PerftestResult]:
    """Run every pair at once; results in the order of ``pairs``.

    Any failure stops every server that was started before the error propagates
    (a failure to stop one is added to the error as a note).
    """
    check_ports(pairs)
    runs = [_PairRun(pair) for pair in pairs]
    try:
        _each(runs, _PairRun.prepare)
        _each(runs, _PairRun.start_server)
        _each(runs, _PairRun.wait_listening)
        _each(runs, lambda run: run.run_client(timeout_s))
        _each(runs, _PairRun.collect_server)
    except BaseException as exc:
        _stop_all(runs, exc)
        failed = dataplane_failed(exc)
        if failed is None:
            raise
        raise failed from exc
    _stop_all(runs, None)
    return [run.result() for run in runs]


def dataplane_failed(exc: BaseException) -> DataplaneFailed | None:
    """A perftest command that failed with an RDMA completion error, typed as such; else None
    (a refused connection, a timeout, a missing tool: the infrastructure, not the product)."""
    if not isinstance(exc, CommandFailed) or isinstance(exc, DataplaneFailed):
        return None
    for text in (exc.raw or "", str(exc)):
        match = _DATAPLANE_FAILURE.search(text)
        if match is not None:
            line = next(ln for ln in text.splitlines() if match.group(0) in ln).strip()
            message = str(exc).removeprefix(f"[{exc.device}] ")
            failed = DataplaneFailed(exc.device, message, exc.raw, evidence=line)
            for note in getattr(exc, "__notes__", ()):
                failed.add_note(note)
            return failed
    return None


def _each(runs: Sequence[_PairRun], step: Callable[[_PairRun], None]) -> None:
    """Run ``step`` for every pair in parallel; wait for all, then raise the first error."""
    if len(runs) == 1:
        step(runs[0])
        return
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="perftest") as pool:
        futures = [pool.submit(step, run) for run in runs]
    errors = [exc for f in futures if (exc := f.exception()) is not None]
    if errors:
        for other in errors[1:]:
            errors[0].add_note(f"another pair failed too: {other}")
        raise errors[0]


def _stop_all(runs: Sequence[_PairRun], failure: BaseException | None) -> None:
    try:
        _each(runs, _PairRun.stop)
    except InfraError as exc:
        if failure is None:
            raise
        failure.add_note(f"stopping a perftest server failed as well: {exc}")


class _PairRun:
    """One pair's state through the steps; every host interaction goes through a HostShell."""

    def __init__(self, pair: PerftestPair) -> None:
        self.pair = pair
        self.spec = pair.spec
        self.tool = pair.spec.test
        self.latency = is_latency(self.tool)
        token = uuid.uuid4().hex[:8]
        stem = f"labtest-{self.tool}-{self.spec.tcp_port}-{token}"
        self.log_path = f"{pair.server.tmp_dir}/{stem}.log"
        self.json_path: str | None = None
        self.json_stem = f"{pair.client.tmp_dir}/{stem}.json"
        self.pid: int | None = None
        self.address = ""
        self.server_args: list[str] = []
        self.client_args: list[str] = []
        self.client_text = ""
        self.client_json: str | None = None
        self.server_text: str | None = None

    @property
    def where(self) -> str:
        return f"{self.tool} server on {self.pair.server.name} TCP port {self.spec.tcp_port}"

    # --- the steps ---------------------------------------------------------

    def prepare(self) -> None:
        server, client = self.pair.server, self.pair.client
        server.shell.probe(self.tool)
        client_help = client.shell.probe(self.tool)
        server_side = server.rdma_endpoint()
        address = self.pair.server_address or server_side.address
        if not address:
            raise ValueError(f"no address for the {self.where}: set vars.rdma_address")
        self.address = address
        self.server_args = perftest_args(self.spec, server_side)
        self.client_args = perftest_args(self.spec, client.rdma_endpoint())
        if not self.latency and "--out_json" in client_help:
            self.json_path = self.json_stem

    def start_server(self) -> None:
        shell = self.pair.server.shell
        command = (
            f"nohup stdbuf -oL -eL {shell.tool(self.tool)} {shlex.join(self.server_args)} "
            f"> {shlex.quote(self.log_path)} 2>&1 < /dev/null & echo $!"
        )
        output = shell.run(command, tool=self.tool).stdout.split()
        if not output or not output[-1].isdigit():
            raise ProtocolError(self.pair.server.name, f"{self.where}: no PID from {command!r}")
        self.pid = int(output[-1])
        log.info("%s started, PID %d", self.where, self.pid)

    def wait_listening(self) -> None:
        server = self.pair.server
        timeout_s = server.server_start_timeout_s
        deadline = time.monotonic() + timeout_s
        while not self._listening():
            if not self._alive():
                text = self._read_log()
                last = text.strip().splitlines()[-1:] or ["(empty log)"]
                raise ProtocolError(
                    server.name, f"{self.where} exited before listening: {last[0]}", raw=text
                )
            if time.monotonic() >= deadline:
                raise TransportTimeout(
                    server.name,
                    f"{self.where} did not listen within {timeout_s:g} s; "
                    f"the client on {self.pair.client.name} was not started",
                    raw=self._read_log(),
                )
            time.sleep(POLL_S)

    def run_client(self, timeout_s: float) -> None:
        client = self.pair.client
        json_args = ["--out_json", f"--out_json_file={self.json_path}"] if self.json_path else []
        command = (
            f"{client.shell.tool(self.tool)} {shlex.join([*self.client_args, *json_args])} "
            f"{shlex.quote(self.address)}"
        )
        result = client.shell.run(command, tool=self.tool, timeout_s=timeout_s)
        self.client_text = result.stdout + ("\n" + result.stderr if result.stderr else "")
        if self.json_path:
            read = client.shell.run(f"cat {shlex.quote(self.json_path)}", tool="cat", ok=(0, 1))
            self.client_json = read.stdout if read.exit_status in (0, None) else None

    def collect_server(self) -> None:
        deadline = time.monotonic() + SERVER_EXIT_S
        while self._alive() and time.monotonic() < deadline:
            time.sleep(POLL_S)
        self.server_text = self._read_log()

    def stop(self) -> None:
        """Kill the server if it still runs, then remove the files (safe to call twice)."""
        server = self.pair.server
        if self.pid is not None:
            self._kill()
            self.pid = None
            server.shell.run(f"rm -f {shlex.quote(self.log_path)}", tool="rm", ok=(0, 1))
        if self.json_path:
            path, self.json_path = self.json_path, None
            self.pair.client.shell.run(f"rm -f {shlex.quote(path)}", tool="rm", ok=(0, 1))

    def result(self) -> PerftestResult:
        if self.latency:
            return PerftestLatencyPair(
                client=self.pair.client.shell.parse(parse_perftest_lat, self.client_text),
                server=self._server_record(parse_perftest_lat),
            )
        return PerftestBandwidthPair(
            client=self._client_bw(), server=self._server_record(parse_perftest_bw)
        )

    # --- helpers -------------------------------------------------------------

    def _client_bw(self) -> PerftestBandwidth:
        shell = self.pair.client.shell
        if self.client_json and self.client_json.lstrip().startswith("{"):
            try:
                return shell.parse(parse_perftest_bw, self.client_json)
            except ParseError as exc:
                log.warning("%s: --out_json unusable (%s); using the text output", self.where, exc)
        return shell.parse(parse_perftest_bw, self.client_text)

    def _server_record(self, parse: Callable[[str], R]) -> R | None:
        """The server's own table; None where this perftest prints none on the server."""
        if not self.server_text:
            return None
        try:
            return self.pair.server.shell.parse(parse, self.server_text)
        except ParseError as exc:
            log.info("%s: no server-side table (%s)", self.where, exc)
            return None

    def _listening(self) -> bool:
        shell = self.pair.server.shell
        port = self.spec.tcp_port
        out = shell.run(f"ss -ltn 'sport = :{port}'", tool="ss").stdout
        if any(f":{port} " in line or line.endswith(f":{port}") for line in out.splitlines()):
            return True
        rdma_cm = {"-R", "--rdma_cm"} & set(self.spec.extra_args)
        return bool(rdma_cm) and _WAITING in self._read_log()

    def _alive(self) -> bool:
        """True while the recorded PID still runs this tool."""
        if self.pid is None:
            return False
        shell = self.pair.server.shell
        result = shell.run(f"ps -o comm= -p {self.pid}", tool="ps", ok=(0, 1))
        # right after the start the PID may still be nohup or stdbuf, about to exec the tool
        ours = (self.tool[:_COMM_LEN], "nohup", "stdbuf")
        return result.exit_status in (0, None) and result.stdout.strip() in ours

    def _read_log(self) -> str:
        shell = self.pair.server.shell
        return shell.run(f"cat {shlex.quote(self.log_path)}", tool="cat", ok=(0, 1)).stdout

    def _kill(self) -> None:
        shell = self.pair.server.shell
        for signal_args in ("", "-9 "):
            if not self._alive():
                return
            log.info("%s: killing PID %d %s", self.where, self.pid, signal_args.strip())
            shell.run(f"kill {signal_args}{self.pid}", tool="kill", ok=(0, 1))
            deadline = time.monotonic() + KILL_WAIT_S
            while self._alive() and time.monotonic() < deadline:
                time.sleep(POLL_S)
        if self._alive():
            raise ProtocolError(
                self.pair.server.name, f"{self.where}: PID {self.pid} survived kill -9"
            )
