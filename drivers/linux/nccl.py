"""nccl-tests across hosts, launched with Open MPI's ``mpirun`` from one host.

The command is ``mpirun [vars.mpirun_args] -np N -H h1:R,h2:R -x VAR=value ...
all_reduce_perf -b MIN -e MAX -f STEP -n ITERS -w WARMUP -g GPUS -c 1``: one rank
per ``-g`` GPUs, R ranks per host. Environment such as ``NCCL_TESTS_SPLIT`` or
``NCCL_IB_GID_INDEX`` travels with ``-x`` (Open MPI exports it to every rank).
Hosts that run MPICH or need a hostfile set ``tool_paths``/``mpirun_args``.

The output is parsed whatever the exit status: nccl-tests exits non-zero when
data was corrupted, and the corrupted table is the evidence the suite judges
(``NcclResult.corrupted``). A run that exits non-zero with a known network-error
signature (``NETWORK_ERRORS``: NCCL's IB completion errors, verbs retry
exhaustion, ...) is returned with ``network_error`` set, the rows it finished
(often none): the fabric failed the job, which is a finding, not broken
infrastructure. Other output without a table is an error.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labtest.capabilities.host import NcclNetworkError, NcclResult, NcclSpec
from labtest.drivers.linux.parsers.nccl import parse_nccl_tests
from labtest.drivers.linux.shell import HostShell, ToolMissing
from labtest.errors import ParseError

log = logging.getLogger("labtest.drivers.linux.nccl")

# Open MPI: "mpirun was unable to find the specified executable file" (issue threads
# QEF/q-e#32, JuliaParallel/MPI.jl#237), "could not access or execute an executable"
# (fastpm/fastpm#101); MPICH hydra: "execvp error on file X (No such file or directory)".
_NO_EXECUTABLE = re.compile(
    r"unable to find the specified executable|could not access\s+or execute an executable"
    r"|execvp error on file"
)
_NODE = re.compile(r"^\s*Node:\s*(\S+)", re.M)


@dataclass(frozen=True)
class NetworkErrorSignature:
    """Text by which NCCL or the verbs layer says the data plane failed (a product fault:
    the job ran and the fabric lost its traffic), with where the text comes from."""

    name: str
    pattern: re.Pattern[str]
    source: str


#: most specific first: the first that matches names the error
NETWORK_ERRORS: tuple[NetworkErrorSignature, ...] = (
    NetworkErrorSignature(
        "nccl_ib_completion_error",
        re.compile(
            r"NET/IB\s*:\s*Got completion from peer\s+(?P<peer>\S+)\s+with\s+"
            r"(?:error\s+|status=)(?P<status>\d+)"
        ),
        "NCCL src/transport/net_ib.cc ncclIbTest: 'Got completion from peer %s with error %d, "
        "opcode %d, len %d, vendor err %d' (2.1x), 'with status=%d opcode=%d ...' (2.19+); "
        "samples nccl_errors/ (ml-engineering, a PyTorch job log)",
    ),
    NetworkErrorSignature(
        "verbs_retry_exceeded",
        re.compile(r"transport retry counter exceeded|IBV_WC_RETRY_EXC_ERR", re.I),
        "libibverbs ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR) = 'transport retry counter "
        "exceeded' (rdma-core libibverbs/enum_strs.c)",
    ),
    NetworkErrorSignature(
        "perftest_completion_error",
        re.compile(r"Completion with error|Failed status \d+"),
        "perftest: ' Completion with error at client/server' then ' Failed status %d: wr_id "
        "%d syndrom 0x%x' (linux-rdma/perftest src/perftest_resources.c)",
    ),
    NetworkErrorSignature(
        "nccl_verbs_call_failed",
        re.compile(r"Call to ibv_\w+ failed"),
        'NCCL src/misc/ibvwrap.cc: WARN("Call to ibv_%s failed ...") (e.g. ibv_modify_qp '
        "when the peer's GID is unreachable)",
    ),
    NetworkErrorSignature(
        "perftest_remote_address",
        re.compile(r"Couldn't read remote address"),
        "perftest ctx_hand_shake: 'Couldn't read remote address' (the peer's exchange died)",
    ),
    NetworkErrorSignature(
        "nccl_remote_error",
        re.compile(r"remote process exited or there was a network error"),
        "NCCL ncclGetErrorString(ncclRemoteError); nccl-tests common.cu prints it as "
        "\"Test NCCL failure ... 'remote process exited or there was a network error'\"",
    ),
)

#: enum ibv_wc_status, libibverbs verbs.h (rdma-core)
IBV_WC_STATUS = {
    1: "IBV_WC_LOC_LEN_ERR",
    2: "IBV_WC_LOC_QP_OP_ERR",
    3: "IBV_WC_LOC_EEC_OP_ERR",
    4: "IBV_WC_LOC_PROT_ERR",
    5: "IBV_WC_WR_FLUSH_ERR",
    6: "IBV_WC_MW_BIND_ERR",
    7: "IBV_WC_BAD_RESP_ERR",
    8: "IBV_WC_LOC_ACCESS_ERR",
    9: "IBV_WC_REM_INV_REQ_ERR",
    10: "IBV_WC_REM_ACCESS_ERR",
    11: "IBV_WC_REM_OP_ERR",
    12: "IBV_WC_RETRY_EXC_ERR",
    13: "IBV_WC_RNR_RETRY_EXC_ERR",
    14: "IBV_WC_LOC_RDD_VIOL_ERR",
    15: "IBV_WC_REM_INV_RD_REQ_ERR",
    16: "IBV_WC_REM_ABORT_ERR",
    17: "IBV_WC_INV_EECN_ERR",
    18: "IBV_WC_INV_EEC_STATE_ERR",
    19: "IBV_WC_FATAL_ERR",
    20: "IBV_WC_RESP_TIMEOUT_ERR",
    21: "IBV_WC_GENERAL_ERR",
}


def network_error(text: str) -> NcclNetworkError | None:
    """The data-plane failure ``text`` reports (the first known signature), else None."""
    for sig in NETWORK_ERRORS:
        m = sig.pattern.search(text)
        if m is None:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = " ".join(text[start : len(text) if end < 0 else end].split())
        groups = m.groupdict()
        status = int(groups["status"]) if groups.get("status") else None
        if status is None and sig.name == "verbs_retry_exceeded":
            status = 12
        return NcclNetworkError(
            signature=sig.name,
            line=line,
            wc_status=status,
            wc_status_name=IBV_WC_STATUS.get(status) if status is not None else None,
            peer=groups.get("peer"),
        )
    return None


def mpirun_command(
    shell: HostShell,
    spec: NcclSpec,
    hosts: Sequence[str],
    *,
    ranks_per_host: int,
    mpirun_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> str:
    if not hosts:
        raise ValueError("nccl-tests needs at least one host")
    if not spec.collective.endswith("_perf"):
        raise ValueError(f"{spec.collective!r} is not an nccl-tests binary (e.g. all_reduce_perf)")
    words = [
        *mpirun_args,
        "-np",
        str(len(hosts) * ranks_per_host),
        "-H",
        ",".join(f"{host}:{ranks_per_host}" for host in hosts),
    ]
    for name, value in {**(env or {}), **spec.env}.items():
        words += ["-x", f"{name}={value}"]
    test = [
        "-b", str(spec.min_bytes),
        "-e", str(spec.max_bytes),
        "-f", str(spec.step_factor),
        "-n", str(spec.iterations),
        "-w", str(spec.warmup_iterations),
        "-g", str(spec.gpus_per_rank),
        "-c", "1" if spec.check else "0",
    ]  # fmt: skip
    return f"{shell.tool('mpirun')} {shlex.join(words)} {shell.tool(spec.collective)} " + (
        shlex.join(test)
    )


def run_collective(
    shell: HostShell,
    spec: NcclSpec,
    hosts: Sequence[str],
    *,
    ranks_per_host: int,
    timeout_s: float,
    mpirun_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> NcclResult:
    command = mpirun_command(
        shell, spec, hosts, ranks_per_host=ranks_per_host, mpirun_args=mpirun_args, env=env
    )
    shell.probe("mpirun", "--version")
    result = shell.runner.exec(command, timeout_s)
    text = result.stdout + result.stderr
    if _NO_EXECUTABLE.search(text):
        error = ToolMissing(shell.host, spec.collective, raw=text)
        if node := _NODE.search(text):
            error.add_note(f"mpirun reported it missing on node {node.group(1)}")
        raise error
    failed = result.exit_status not in (0, None)
    died = network_error(text) if failed else None
    try:
        parsed = shell.parse(parse_nccl_tests, result.stdout)
    except ParseError:
        if died is not None:  # the job ran and the fabric lost its traffic: a product fault
            log.warning("%s: %s died of a network error: %s", shell.host, spec.collective, died)
            return NcclResult([], None, None, spec.collective, network_error=died)
        shell.judge(command, "mpirun", result)  # a failed run is the better error
        raise
    if died is not None:
        return dataclasses.replace(parsed, network_error=died)
    if result.exit_status not in (0, None):
        status = result.exit_status
        log.warning("%s: %s exited %s after its table", shell.host, spec.collective, status)
    return parsed
