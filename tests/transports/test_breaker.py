"""The per-device circuit breaker (labtest.transports.breaker, issue 36).

A fake transport and a fake probe show the rules: a failure a probe confirms marks the
device down, the next call fails at once citing the first error, one reprobe per suite
may close the breaker, other devices are unaffected, threads see one trip. Then the real
thing: ``connect.cli`` against the emulation's SSH server gone silent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from labtest import connect
from labtest.drivers.common.cli import CliSwitch
from labtest.emulation.sshserver import CliReply, SshServer
from labtest.errors import (
    CommandFailed,
    ConnectionRefused,
    DeviceDown,
    ProtocolError,
    TransportError,
    TransportTimeout,
)
from labtest.measure.rootcause import root_causes, transport_errors
from labtest.testbed.model import Device, SshSettings
from labtest.transports import breaker
from labtest.transports.breaker import Board, guard
from labtest.transports.ssh import CommandResult


class FakeTransport:
    """Answers ``exec`` until ``dead``; then each call raises a timeout (counted)."""

    def __init__(self, device: str = "host3") -> None:
        self.device = device
        self.dead = False
        self.calls = 0
        self.closed = False
        self.settings = "kept"

    def exec(self, command: str) -> str:
        self.calls += 1
        if self.dead:
            raise TransportTimeout(self.device, f"exec {command!r}: no complete answer within 30 s")
        return f"ran {command}"

    def close(self) -> None:
        self.closed = True


class FakeProbe:
    """Fails while ``dead``; counts its runs."""

    def __init__(self, transport: FakeTransport) -> None:
        self.transport = transport
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1
        if self.transport.dead:
            raise TransportTimeout(self.transport.device, "probe: no answer within 2 s")


@pytest.fixture
def board() -> Iterator[Board]:
    b = Board()
    b.at("suites/roce/test_roce.py::test_first[host3--host4] (call)", "suites/roce/test_roce.py")
    breaker.install(b)
    yield b
    breaker.install(None)


def guarded(device: str = "host3") -> tuple[FakeTransport, FakeProbe, FakeTransport]:
    fake = FakeTransport(device)
    probe = FakeProbe(fake)
    return fake, probe, guard(device, fake, probe)


def test_second_call_fails_at_once_citing_the_first_error(board: Board) -> None:
    fake, probe, cli = guarded()
    assert cli.exec("uptime") == "ran uptime"
    fake.dead = True
    with pytest.raises(TransportTimeout) as first:
        cli.exec("ip -j link")
    assert probe.runs == 1  # the failure was confirmed before marking the device down
    board.at("suites/roce/test_roce.py::test_second", "suites/roce/test_roce.py")
    start = time.monotonic()
    with pytest.raises(DeviceDown) as down:
        cli.exec("ibv_devinfo")
    assert time.monotonic() - start < 0.1
    assert fake.calls == 2 and probe.runs == 1  # neither the transport nor a probe asked
    text = str(down.value)
    assert text.startswith("[host3] down since TransportTimeout: exec")
    assert "exec 'ip -j link': no complete answer within 30 s (in " in text
    assert "in suites/roce/test_roce.py::test_first[host3--host4] (call), at " in text
    assert text.endswith("; not asked again")
    assert down.value.first is first.value and down.value.device == "host3"
    assert isinstance(down.value, TransportError)  # broken as unreachable, like the first
    assert set(board.down()) == {"host3"}


def test_a_failure_the_probe_does_not_confirm_leaves_the_device_up(board: Board) -> None:
    fake, probe, cli = guarded()

    def hung_tool(command: str) -> str:  # one command hangs; the device itself answers
        fake.calls += 1
        raise TransportTimeout("host3", "exec 'ib_write_bw': no complete answer within 120 s")

    fake.exec = hung_tool  # type: ignore[method-assign]
    with pytest.raises(TransportTimeout):
        cli.exec("ib_write_bw")
    assert probe.runs == 1 and board.down() == {}
    with pytest.raises(TransportTimeout):  # asked again, not refused
        cli.exec("ib_write_bw")
    assert fake.calls == 2


def test_errors_that_are_not_transport_errors_never_trip(board: Board) -> None:
    fake, probe, cli = guarded()

    def refused(command: str) -> str:
        raise CommandFailed("host3", f"{command!r} exited with status 1")

    fake.exec = refused  # type: ignore[method-assign]
    with pytest.raises(CommandFailed):
        cli.exec("false")
    assert probe.runs == 0 and board.down() == {}


def test_one_reprobe_per_suite_may_close_the_breaker(board: Board) -> None:
    fake, probe, cli = guarded()
    fake.dead = True
    with pytest.raises(TransportTimeout):
        cli.exec("uptime")
    for _ in range(3):  # the same suite: no reprobe
        with pytest.raises(DeviceDown):
            cli.exec("uptime")
    assert probe.runs == 1

    board.at("suites/link/test_link.py::test_a", "suites/link/test_link.py")
    for _ in range(3):  # a new suite: one reprobe, still dead
        with pytest.raises(DeviceDown):
            cli.exec("uptime")
    assert probe.runs == 2 and fake.calls == 1

    board.at("suites/cabling/test_cabling.py::test_b", "suites/cabling/test_cabling.py")
    fake.dead = False  # back: the next suite's reprobe closes the breaker
    assert cli.exec("uptime") == "ran uptime"
    assert probe.runs == 3 and board.down() == {}
    assert cli.exec("uptime") == "ran uptime"
    assert probe.runs == 3


def test_another_device_is_unaffected(board: Board) -> None:
    dead, _, dead_cli = guarded("host3")
    alive, alive_probe, alive_cli = guarded("host4")
    dead.dead = True
    with pytest.raises(TransportTimeout):
        dead_cli.exec("uptime")
    with pytest.raises(DeviceDown):
        dead_cli.exec("uptime")
    assert alive_cli.exec("uptime") == "ran uptime"
    assert alive.calls == 1 and alive_probe.runs == 0
    assert set(board.down()) == {"host3"}


def test_attributes_and_close_pass_through(board: Board) -> None:
    fake, _, cli = guarded()
    fake.dead = True
    with pytest.raises(TransportTimeout):
        cli.exec("uptime")
    assert cli.settings == "kept"
    cli.close()  # closing a down device's transport needs no device
    assert fake.closed


def test_without_a_board_transports_are_not_wrapped() -> None:
    assert breaker.current() is None
    fake = FakeTransport()
    assert guard("host3", fake, FakeProbe(fake)) is fake


def test_an_expected_outage_neither_marks_down_nor_refuses(board: Board) -> None:
    fake, probe, cli = guarded()
    fake.dead = True
    with breaker.expected_outage("host3"):
        for _ in range(3):
            with pytest.raises(TransportTimeout):  # asked every time, never refused
                cli.exec("uptime")
    assert probe.runs == 0 and board.down() == {}
    with pytest.raises(TransportTimeout):  # afterwards the breaker works again
        cli.exec("uptime")
    with pytest.raises(DeviceDown):
        cli.exec("uptime")


class RebootingSwitch:
    """A switch CLI whose reboot drops the session, then refuses connections for two
    polls, then answers again."""

    def __init__(self) -> None:
        self.dark_polls = 0
        self.uptime_s = 1000.0

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        if command == "reboot":
            self.dark_polls = 2
            raise ProtocolError("sw1", "exec 'reboot': the device closed the session mid-command")
        if self.dark_polls:
            self.dark_polls -= 1
            raise ConnectionRefused("sw1", "127.0.0.1:22 refused the connection")
        return CommandResult(f"{self.uptime_s}\n", "", 0, 0.0)

    def close(self) -> None:
        pass


def test_a_reboot_is_an_expected_outage_for_the_switch_drivers(board: Board) -> None:
    """CliSwitch.reboot_and_wait polls a device that is dark on purpose: the refused
    polls do not mark it down (else every later poll would be refused and the reboot
    never confirmed)."""
    device = Device(role="leaf", driver="sonic", vars={"reboot_poll_s": 0.01})
    switch = CliSwitch("sw1", device, None)  # type: ignore[arg-type]  # no testbed needed
    cli = RebootingSwitch()
    probes: list[str] = []

    def probe() -> None:
        probes.append("probe")
        if cli.dark_polls:
            raise ConnectionRefused("sw1", "probe: refused")

    switch._cli = guard("sw1", cli, probe)
    switch.reboot_and_wait("reboot", lambda: float(switch.run("uptime")), timeout_s=5)
    assert probes == [] and board.down() == {}


def test_threads_see_one_trip_and_one_probe(board: Board) -> None:
    """Eight threads (perftest pairs) fail on the same dead device at once: one probe
    confirms it, one trip records it; a reprobe in the next suite also runs once, the
    threads arriving meanwhile wait for its verdict and are refused."""
    fake, probe, cli = guarded()
    fake.dead = True
    gate = threading.Barrier(8)
    release = threading.Event()

    def slow_probe() -> None:
        probe.runs += 1
        release.wait(5)
        raise TransportTimeout("host3", "probe: no answer within 2 s")

    cli._probe = slow_probe  # type: ignore[attr-defined]
    errors: list[BaseException] = []
    lock = threading.Lock()

    def call() -> None:
        gate.wait(5)
        try:
            cli.exec("uptime")
        except TransportError as exc:
            with lock:
                errors.append(exc)

    def run_all() -> None:
        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # all of them are in the probe's wait or queued on the lock
        release.set()
        for t in threads:
            t.join(5)
        release.clear()

    run_all()
    assert probe.runs == 1 and len(errors) == 8
    timeouts = [e for e in errors if isinstance(e, TransportTimeout)]
    assert fake.calls == len(timeouts) >= 1  # the rest came after the trip: refused
    assert all(isinstance(e, TransportTimeout | DeviceDown) for e in errors)
    assert set(board.down()) == {"host3"}

    errors.clear()
    board.at("suites/link/test_link.py::test_a", "suites/link/test_link.py")
    run_all()
    assert probe.runs == 2 and len(errors) == 8
    assert all(isinstance(e, DeviceDown) for e in errors)
    assert fake.calls == len(timeouts)


def test_mark_down_opens_the_breaker_without_a_second_probe(board: Board) -> None:
    """The doctor probes a late device itself (its command timeout, outside the lock) and
    marks it down on no answer: no probe of the breaker's own, later calls refused."""
    fake, probe, cli = guarded()
    board.breaker("host3").mark_down(TransportTimeout("host3", "doctor read hung"))
    with pytest.raises(DeviceDown) as down:
        cli.exec("uptime")
    assert "doctor read hung" in str(down.value)
    assert probe.runs == 0 and fake.calls == 0 and set(board.down()) == {"host3"}
    with breaker.expected_outage("host4"):  # an expected outage marks nothing
        board.breaker("host4").mark_down(TransportTimeout("host4", "x"))
    assert set(board.down()) == {"host3"}


def test_device_down_is_read_as_unreachable_by_the_root_cause_analysis() -> None:
    """The subclass keeps ``unreachable_rule`` working: a test broken by the open breaker
    names its device like the one the first timeout broke, and the device is the first
    root cause."""
    assert "DeviceDown" in transport_errors()
    first = "labtest.errors.TransportTimeout: [host3] exec 'ip -j link': no complete answer"
    later = ("labtest.errors.DeviceDown: [host3] down since TransportTimeout: exec 'ip -j "
             "link': no complete answer within 30 s (in ...); not asked again")
    tests = [
        {"nodeid": "suites/roce/test_roce.py::test_a", "outcome": "broken", "device": "host3",
         "message": first, "measurements": []},
        *({"nodeid": f"suites/roce/test_roce.py::test_{i}", "outcome": "broken",
           "device": "host3", "message": later, "measurements": []} for i in range(5)),
        {"nodeid": "suites/link/test_link.py::test_x", "outcome": "broken", "device": "leaf1",
         "message": "labtest.errors.ParseError: [leaf1] line 3: garbled", "measurements": []},
    ]
    devices = {n: {"role": r, "driver": d} for n, r, d in (
        ("leaf1", "leaf", "sonic"), ("leaf2", "leaf", "sonic"),
        ("host3", "host", "linux"), ("host4", "host", "linux"))}
    links = [{"a": "host3:eth0", "b": "leaf2:Ethernet16"},
             {"a": "host4:eth0", "b": "leaf2:Ethernet24"},
             {"a": "leaf1:Ethernet0", "b": "leaf2:Ethernet0"}]
    causes = root_causes({"tests": tests, "testbed": {"devices": devices, "links": links}})
    assert causes[0].kind == "unreachable" and causes[0].culprit == "host3"
    assert len(causes[0].tests) == 6


# --- the real thing: connect.cli against a silent emulated SSH server ---------------------


class Echo:
    prompt = "host3$ "

    def run(self, command: str) -> CliReply:
        return CliReply(command.removeprefix("echo ") + "\n")


@pytest.fixture
def server() -> Iterator[SshServer]:
    with SshServer(Echo, password="pw-breaker-test") as srv:
        yield srv


def host(server: SshServer, known_hosts: Path, timeout_s: float = 1.0) -> Device:
    ssh = SshSettings(port=server.port, username="admin", password=SecretStr("pw-breaker-test"),
                      known_hosts=known_hosts, timeout_s=timeout_s, command_timeout_s=timeout_s)
    return Device(role="host", driver="linux", address="127.0.0.1", ssh=ssh)


def test_a_silent_ssh_device_costs_one_timeout_then_fails_fast(
    board: Board, server: SshServer, tmp_path: Path
) -> None:
    known_hosts = tmp_path / "known_hosts"
    server.write_known_hosts(known_hosts)
    cli = connect.cli("host3", host(server, known_hosts))
    assert cli.exec("echo up").stdout == "up\n"
    server.mode = "silent"  # the management plane hangs: unreachable_device
    start = time.monotonic()
    with pytest.raises(TransportTimeout):
        cli.exec("echo one")
    assert time.monotonic() - start < 1.0 + 2 * breaker.PROBE_TIMEOUT_S  # timeout + probe
    connections = server.connections
    start = time.monotonic()
    for _ in range(5):
        with pytest.raises(DeviceDown, match="TransportTimeout"):
            cli.exec("echo again")
    assert time.monotonic() - start < 0.5
    assert server.connections == connections  # nobody connected to the dead device

    server.mode = "normal"  # back; the next suite's reprobe closes the breaker
    board.at("suites/link/test_link.py::test_a", "suites/link/test_link.py")
    assert cli.exec("echo back").stdout == "back\n"
    assert board.down() == {}


def test_a_refused_exec_is_an_answer_to_the_probe(
    board: Board, server: SshServer, tmp_path: Path
) -> None:
    """A shell-only device refuses exec channels: it is up, the probe says so."""
    known_hosts = tmp_path / "known_hosts"
    server.write_known_hosts(known_hosts)
    server.allow_exec = False
    # not a test of time: under a loaded run (xdist, the whole suite) a fresh session to
    # the in-process server took over 1 s, and the probe's timeout marked sw1 down
    cli = connect.cli("sw1", host(server, known_hosts, timeout_s=10.0))
    for _ in range(2):
        with pytest.raises(ProtocolError):
            cli.exec("show version")
    assert board.down() == {}
