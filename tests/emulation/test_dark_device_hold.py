"""A dark device holds the lab's clock only while a client waits on it (issue 36).

A client waiting on a hung device waits out a wall-clock timeout, so the elastic clock
must keep its wall pace meanwhile. It used to be held for the whole unreachable_device
fault, which took the idle skips from the rest of the run although the circuit breaker
had stopped the clients asking. Now each silent emulator holds its ``serving`` mark from
an unanswered request until its client gives up (SSH exec and shell, SCPI query) or for
one try's timeout (SNMP, UDP), and the model holds nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from labtest.emulation.model import Fabric
from labtest.emulation.scpiserver import ScpiServer
from labtest.emulation.snmpagent import DictMib, SnmpAgent
from labtest.emulation.sshserver import CliReply, SshServer
from labtest.errors import TransportError
from labtest.testbed import model as tbm
from labtest.testbed.model import SnmpSettings, SshSettings, VisaSettings
from labtest.transports.snmp import SnmpTransport
from labtest.transports.ssh import SshTransport
from labtest.transports.visa import VisaTransport


class Mark:
    """A ``serving`` stand-in that knows how many holders are inside now."""

    def __init__(self) -> None:
        self.inside = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            self.inside += 1
        try:
            yield
        finally:
            with self._lock:
                self.inside -= 1


def held_while(mark: Mark, call: Callable[[], object], released_within_s: float = 1.0) -> None:
    """``call`` (which waits on a silent device and fails) runs in a thread: the mark is
    held while it waits, and let go soon after it gave up."""
    done = threading.Event()

    def run() -> None:
        with contextlib.suppress(TransportError):
            call()
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    assert not done.is_set() and mark.inside >= 1  # the client waits: held
    assert done.wait(5)
    thread.join(5)
    deadline = time.monotonic() + released_within_s
    while mark.inside and time.monotonic() < deadline:
        time.sleep(0.02)
    assert mark.inside == 0  # it gave up: let go


class Echo:
    prompt = "sw1# "

    def run(self, command: str) -> CliReply:
        return CliReply(command + "\n")


@pytest.fixture
def ssh(tmp_path: Path) -> Iterator[tuple[SshServer, Mark, SshSettings]]:
    mark = Mark()
    with SshServer(Echo, password="pw-hold-test", serving=mark) as server:
        known_hosts = tmp_path / "known_hosts"
        server.write_known_hosts(known_hosts)
        settings = SshSettings(port=server.port, username="admin",
                               password=SecretStr("pw-hold-test"), known_hosts=known_hosts,
                               timeout_s=2.0, command_timeout_s=0.8)
        yield server, mark, settings


def test_a_silent_ssh_exec_holds_until_its_client_gives_up(ssh) -> None:
    server, mark, settings = ssh
    server.mode = "silent"
    with SshTransport("sw1", "127.0.0.1", settings) as client:
        held_while(mark, lambda: client.exec("show version"))
        held_while(mark, lambda: client.exec("show version"))  # a new connection: again


def test_a_silent_ssh_shell_holds_until_its_client_gives_up(ssh) -> None:
    server, mark, settings = ssh
    with SshTransport("sw1", "127.0.0.1", settings) as client:
        shell = client.shell()
        assert shell.send("show clock") == "show clock\n"
        server.mode = "silent"
        held_while(mark, lambda: shell.send("show clock"))


class Quiet:
    def handle(self, command: str) -> str | None:
        return None


def test_a_silent_instrument_holds_from_a_query_until_its_client_closes() -> None:
    mark = Mark()
    with ScpiServer(Quiet(), serving=mark) as server:
        server.set_mode("silent")
        settings = VisaSettings(resource=server.resource, timeout_s=0.8, check_errors=False)
        with VisaTransport("opm1", settings) as client:
            client.write("SENS:POW:UNIT DBM")  # a write waits for no reply: not held
            time.sleep(0.2)
            assert mark.inside == 0
            held_while(mark, lambda: client.query("*IDN?"))


def test_a_silent_agent_holds_for_one_try_after_each_dropped_request() -> None:
    mark = Mark()
    with SnmpAgent(DictMib({"sysName.0": "sw1"}), community="pw-hold-test",
                   serving=mark) as agent:
        agent.silent = True
        agent.silent_hold_s = 1.0
        settings = SnmpSettings(port=agent.port, community=SecretStr("pw-hold-test"),
                                timeout_s=0.8, retries=0)
        with SnmpTransport("sw1", "127.0.0.1", settings) as client:
            held_while(mark, lambda: client.get("sysName.0"), released_within_s=1.5)


def test_the_model_holds_nothing_for_a_dark_device() -> None:
    """Only a waiting client holds the clock; an unreachable device alone does not."""
    testbed = tbm.Testbed.model_validate({
        "name": "hold",
        "devices": {n: {"role": "leaf", "driver": "sonic"} for n in ("sw1", "sw2")},
        "links": [{"a": "sw1:Ethernet0", "b": "sw2:Ethernet0", "speed_gbps": 400,
                   "optic": "400G-DR4", "length_m": 3}],
    })
    fabric = Fabric(testbed, realtime=True)
    fabric.inject("unreachable_device", "sw2")
    assert not fabric.reachable("sw2") and not fabric.clock.held
