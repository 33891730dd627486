"""No thread started per SSH command: the emulator's server reuses its exec workers, and
the transport's watchdogs share one deadline thread (issue 19) without losing a timeout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from labtest.emulation.sshserver import FunctionHandler, SshServer
from labtest.errors import TransportTimeout
from labtest.testbed.model import SshSettings
from labtest.transports.ssh import SshTransport

PASSWORD = "Pw-threads-Charlie-7"


def _transport(server: SshServer, tmp_path: Path, **settings: float) -> SshTransport:
    known = tmp_path / "known_hosts"
    if not known.exists():
        server.write_known_hosts(known)
    config = SshSettings(port=server.port, username="admin", password=SecretStr(PASSWORD),
                         known_hosts=known, **settings)
    return SshTransport("sw1", "127.0.0.1", config)


def test_back_to_back_commands_are_served_by_one_reused_thread(tmp_path: Path) -> None:
    served_by: list[threading.Thread] = []  # the objects, kept alive: identities stay unique

    def answer(command: str) -> str:
        served_by.append(threading.current_thread())
        return f"ran {command}\n"

    with SshServer(lambda: FunctionHandler(answer), password=PASSWORD) as server:
        ssh = _transport(server, tmp_path)
        outputs = []
        for i in range(20):
            outputs.append(ssh.exec(f"show {i}").stdout)
            # the worker marks itself idle just after the client saw the command end: wait
            # for that (bounded), so the next command tests reuse, not the scheduler's timing
            deadline = time.monotonic() + 5.0
            while server._workers.idle == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
        ssh.close()
    assert outputs == [f"ran show {i}\n" for i in range(20)]
    distinct = {id(t) for t in served_by}
    assert len(distinct) == 1, len(distinct)  # was one new thread per command


def test_a_command_that_waits_never_holds_up_another(tmp_path: Path) -> None:
    """Three commands that each wait for the other two: each needs its own worker."""
    everyone_in = threading.Barrier(3, timeout=10)

    def answer(command: str) -> str:
        everyone_in.wait()
        return "ok\n"

    with SshServer(lambda: FunctionHandler(answer), password=PASSWORD) as server:
        clients = [_transport(server, tmp_path) for _ in range(3)]
        results: list[str] = []
        threads = [threading.Thread(target=lambda c=c: results.append(c.exec("go").stdout))
                   for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        for c in clients:
            c.close()
    assert results == ["ok\n"] * 3


def test_watchdogs_still_fire_and_their_thread_ends_after_the_last(tmp_path: Path) -> None:
    with SshServer(lambda: FunctionHandler(lambda c: "ok\n"), password=PASSWORD) as server:
        ssh = _transport(server, tmp_path, command_timeout_s=0.3)
        assert ssh.exec("show a").stdout == "ok\n"
        server.mode = "silent"  # the exec request gets no reply: only the watchdog ends it
        began = time.monotonic()
        with pytest.raises(TransportTimeout):
            ssh.exec("show b")
        assert time.monotonic() - began < 5
        ssh.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        t.name == "ssh-watchdog" for t in threading.enumerate()
    ):
        time.sleep(0.05)
    assert not [t.name for t in threading.enumerate() if t.name == "ssh-watchdog"]


def test_an_answer_completed_while_waiting_for_the_group_marker_is_still_late(
    tmp_path: Path,
) -> None:
    """A grouped exec past its timeout waits for the wrapper's process-group line; if the
    whole answer arrives in that grace, it came after the timeout all the same: a timeout,
    not a success (the grace exists only to stop the command)."""
    from labtest.emulation.sshserver import CliReply

    class Slow:
        prompt = "# "

        def run(self, command: str) -> CliReply:
            marker = command.split("$$", 1)[0].removeprefix("echo ")
            if "sleep" in command:  # the late command: its answer (marker first) after 1.5 s
                time.sleep(1.5)
                return CliReply("done\n", stderr=f"{marker}4242\n")
            return CliReply("gone\n", stderr=f"{marker}4243\n")  # the group stop's script

    with SshServer(Slow, password=PASSWORD) as server:
        ssh = _transport(server, tmp_path)
        ssh.process_group = True
        with pytest.raises(TransportTimeout, match="within 1 s"):
            ssh.exec("sleep 1.5", timeout_s=1)
        ssh.close()
