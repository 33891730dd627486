"""Network-error signatures in nccl-tests / perftest output: a product fault, not broken infra."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labtest.capabilities.host import NcclSpec
from labtest.drivers.linux.nccl import NETWORK_ERRORS, network_error, run_collective
from labtest.drivers.linux.parsers.nccl import parse_nccl_tests
from labtest.errors import CommandFailed


def test_nccl_ib_completion_error_12_wrapped_as_published(sample):
    err = network_error(sample("nccl_errors/ml_engineering_ib_error12_wrapped.txt"))
    assert err is not None and err.signature == "nccl_ib_completion_error"
    assert (err.wc_status, err.wc_status_name, err.peer) == (
        12, "IBV_WC_RETRY_EXC_ERR", "10.2.0.5<33092>",
    )  # fmt: skip
    assert err.line.startswith("node-2:5776:5902 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB")


def test_the_completion_error_wins_over_the_generic_remote_error(sample):
    err = network_error(sample("nccl_errors/pytorch_ib_error5_remote_error.txt"))
    assert err is not None and err.signature == "nccl_ib_completion_error"
    assert (err.wc_status, err.wc_status_name) == (5, "IBV_WC_WR_FLUSH_ERR")
    assert err.peer == "10.5.0.34<33956>"


def test_perftest_completion_error_and_newer_nccl_wording(sample):
    err = network_error(sample("nccl_errors/perftest_completion_error_mtu.txt"))
    assert err is not None and err.signature == "perftest_completion_error"
    newer = network_error(
        "h1:9:9 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.7<4242> with status=12 "
        "opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.7"
    )
    assert newer is not None and (newer.wc_status, newer.peer) == (12, "10.0.0.7<4242>")
    retry = network_error("ibv_poll_cq: transport retry counter exceeded")
    assert retry is not None and retry.wc_status_name == "IBV_WC_RETRY_EXC_ERR"


@pytest.mark.parametrize(
    "text",
    [
        "ssh: connect to host host2 port 22: No route to host",
        "mpirun was unable to find the specified executable file",
        "# Out of bounds values : 0 OK",
    ],
)
def test_management_plane_and_tool_failures_are_no_network_error(text):
    assert network_error(text) is None


def test_every_signature_names_its_source():
    assert len({s.name for s in NETWORK_ERRORS}) == len(NETWORK_ERRORS)
    assert all(len(s.source) > 30 for s in NETWORK_ERRORS)


class _Shell:
    """Just what run_collective touches on a HostShell."""

    host = "host1"

    def __init__(self, stdout: str, stderr: str, status: int) -> None:
        self.runner = SimpleNamespace(
            exec=lambda command, timeout: SimpleNamespace(
                stdout=stdout, stderr=stderr, exit_status=status
            )
        )

    def tool(self, name: str) -> str:
        return name

    def probe(self, *args: str) -> None:
        return None

    def parse(self, fn, text):
        return fn(text)

    def judge(self, command, tool, result):
        raise CommandFailed(self.host, f"{tool} exited {result.exit_status}", raw=result.stderr)


NCCL_DIED = (
    "host1:1:2 [0] transport/net_ib.cc:1296 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.5<4000> with error 12, opcode 0, len 0, vendor err 129 (Recv)\n"
    "host1: Test NCCL failure common.cu:1008 'remote process exited or there was a network "
    "error / '\n"
)


def test_a_collective_that_died_of_a_network_error_is_a_result_not_broken():
    result = run_collective(
        _Shell("", NCCL_DIED, 1), NcclSpec(), ["host1", "host2"], ranks_per_host=1, timeout_s=9
    )
    assert result.rows == [] and result.network_error is not None
    assert result.network_error.wc_status == 12 and result.network_error.peer == "10.0.0.5<4000>"


def test_a_failure_without_a_network_signature_stays_broken():
    shell = _Shell("", "ssh: connect to host host2 port 22: No route to host\n", 255)
    with pytest.raises(CommandFailed):
        run_collective(shell, NcclSpec(), ["host1", "host2"], ranks_per_host=1, timeout_s=9)


def test_a_table_that_ends_in_a_network_error_keeps_its_rows(sample):
    table = sample("nccl/gh200_all_reduce_wrong_nonzero.txt")
    result = run_collective(
        _Shell(table, NCCL_DIED, 1), NcclSpec(), ["h1", "h2"], ranks_per_host=1, timeout_s=9
    )
    assert result.rows == parse_nccl_tests(table).rows and result.network_error is not None
