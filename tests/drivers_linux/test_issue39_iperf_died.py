"""Issue 39 item 2 at the driver: iperf3's error once the run was under way is the network's.

A lossy link on the DUT must fail the run, never break it. On the kernel lab, 25 % loss on
one link killed iperf3's streams mid-run ("unable to read from stream socket"), and the
Linux driver raised that as a CommandFailed (infrastructure: the run was *broken*). The
parser test (tests/emulation/test_personality_iperf.py) only checks ``iperf3_failure``; these
tests hold ``LinuxHost.udp_streams_result`` itself to the type it raises, which is what the
paths and failover suites catch (``except DataplaneFailed``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from linux_fakes import linux_host

from labtest.capabilities.probes import UdpStreamsRun
from labtest.drivers.linux.driver import LinuxHost
from labtest.errors import CommandFailed, DataplaneFailed
from labtest.transports.ssh import CommandResult

SAMPLES = Path(__file__).parent / "samples" / "iperf3"
LOG = "/tmp/labtest-iperf3-test.json"


def _sample(name: str) -> str:
    lines = (SAMPLES / name).read_text().splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.startswith("# source:"))


class Runner:
    """The host: ``cat`` of the client's report answers ``report``; ``rm`` succeeds."""

    def __init__(self, report: str) -> None:
        self.report = report
        self.commands: list[str] = []

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        self.commands.append(command)
        if command == f"cat {LOG}":
            return CommandResult(self.report, "", 0, 0.0)
        if command == f"rm -f {LOG}":
            return CommandResult("", "", 0, 0.0)
        raise AssertionError(f"unexpected command {command!r}")

    def close(self) -> None:
        pass


def _result(report: str) -> tuple[LinuxHost, Runner, UdpStreamsRun]:
    runner = Runner(report)
    host = linux_host(runner)
    run = UdpStreamsRun(client="host1", server="host3", target="198.18.0.8", port=5201,
                        streams=8, rate_pps=500.0, payload_bytes=512, duration_s=0.0,
                        log_path=LOG, started_s=0.0)
    return host, runner, run


def _died_mid_run() -> str:
    """A real report whose streams had connected, then iperf3's error as the campaign saw it."""
    doc = json.loads(_sample("debian_bookworm_udp_p2_loopback.json"))
    doc["end"] = {}
    doc["error"] = "unable to read from stream socket: Resource temporarily unavailable"
    return json.dumps(doc)


@pytest.mark.parametrize("report", [
    pytest.param(_died_mid_run, id="streams-connected-then-died"),
    pytest.param(lambda: _sample("debian_bookworm_udp_stream_setup_lost.json"),
                 id="server-agreed-then-setup-lost"),
])
def test_streams_that_died_under_way_are_the_data_plane(report: Callable[[], str]) -> None:
    host, runner, run = _result(report())
    with pytest.raises(DataplaneFailed) as info:
        host.udp_streams_result(run, timeout_s=1.0)
    assert info.value.device == "host1"
    assert info.value.evidence.startswith("unable to read from stream socket")
    assert "iperf3 to host3" in str(info.value) and info.value.raw
    assert runner.commands[-1] == f"rm -f {LOG}"  # its report leaves nothing behind


def test_a_refused_start_stays_the_tools_failure_not_the_data_plane() -> None:
    host, _runner, run = _result(_sample("debian_bookworm_udp_refused.json"))
    with pytest.raises(CommandFailed) as info:
        host.udp_streams_result(run, timeout_s=1.0)
    assert not isinstance(info.value, DataplaneFailed)
    assert "Connection refused" in str(info.value)


class Script:
    """A host answering every command from ``answers`` (a prefix each), recording them."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.commands: list[str] = []

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        self.commands.append(command)
        for prefix, out in self.answers.items():
            if command.startswith(prefix):
                return CommandResult(out, "", 0, 0.0)
        raise AssertionError(f"unexpected command {command!r}")

    def close(self) -> None:
        pass


def test_the_servers_log_is_removed_once_it_listens() -> None:
    """The kernel lab left one ``labtest-iperf3-s52NN.log`` in the machine's /tmp per paths
    run: the server's log was written and never removed. It is unlinked once the server
    listens (its text only ever explains a server that did not)."""
    server_sh = Script({"nohup ": "", "ss -ltnH": "LISTEN 0 5 *:5201 *:*\n", "rm -f ": ""})
    client_sh = Script({"rm -f ": ""})
    server, client = linux_host(server_sh), linux_host(client_sh)
    server.name = "host3"
    client.probe_address = lambda: "198.18.0.8"  # type: ignore[method-assign]
    server.probe_address = lambda: "198.18.0.8"  # type: ignore[method-assign]
    client.device_time_s = lambda: 0.0  # type: ignore[method-assign]
    client.udp_streams_start(server, streams=1, rate_pps=10.0, payload_bytes=512,
                             duration_s=1.0, port=5201)
    listened = next(i for i, c in enumerate(server_sh.commands) if c.startswith("ss -ltnH"))
    assert server_sh.commands[listened + 1:] == ["rm -f /tmp/labtest-iperf3-s5201.log"], \
        server_sh.commands
