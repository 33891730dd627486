"""nccl-tests across hosts, launched with Open MPI's ``mpirun`` from one host.

The command is ``mpirun [vars.mpirun_args] -np N -H h1:R,h2:R -x VAR=value ...
all_reduce_perf -b MIN -e MAX -f STEP -n ITERS -w WARMUP -g GPUS -c 1``: one rank
per ``-g`` GPUs, R ranks per host. Environment such as ``NCCL_TESTS_SPLIT`` or
``NCCL_IB_GID_INDEX`` travels with ``-x`` (Open MPI exports it to every rank).
Hosts that run MPICH or need a hostfile set ``tool_paths``/``mpirun_args``.

The output is parsed whatever the exit status: nccl-tests exits non-zero when
data was corrupted, and the corrupted table is the evidence the suite judges
(``NcclResult.corrupted``). Only output without a table is an error.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Mapping, Sequence

from labtest.drivers.linux.parsers.nccl import parse_nccl_tests
from labtest.drivers.linux.shell import HostShell, ToolMissing

from labtest.capabilities.host import NcclResult, NcclSpec
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
    try:
        parsed = shell.parse(parse_nccl_tests, result.stdout)
    except ParseError:
        shell.judge(command, "mpirun", result)  # a failed run is the better error
        raise
    if result.exit_status not in (0, None):
        status = result.exit_status
        log.warning("%s: %s exited %s after its table", shell.host, spec.collective, status)
    return parsed
