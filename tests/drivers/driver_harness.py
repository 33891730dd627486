"""Run a switch driver end to end against an SSH server that answers with real outputs.

``Script`` is the device: a map from command line to reply (a sample text, a
``CliReply``, or a function of the command; ``patterns`` map a regex to a
function of the match), the family's answer to an unknown
command, and a log of every line it was sent. Each SSH channel gets its own
``ScriptedCli`` (config mode is per session, as on a real switch). ``lab()``
starts the server on 127.0.0.1 and yields a testbed whose one device points at
it; the driver under test is opened through the registry, like a suite would.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from switch_samples import SOURCE_PREFIX

from labtest.emulation.sshserver import CliReply, SshServer
from labtest.registry import open_driver
from labtest.testbed.model import Device, SshSettings, Testbed

PASSWORD = "Drv-test-Secret-7"
DRIVER_SAMPLES = Path(__file__).parent / "driver_samples"

Reply = str | CliReply | Callable[[str], CliReply | str]


def driver_sample(driver: str, name: str) -> str:
    """A sample added with the driver parsers (``driver_samples/``), without its source line."""
    first, _, body = (DRIVER_SAMPLES / driver / f"{name}.txt").read_text().partition("\n")
    assert first.startswith(SOURCE_PREFIX), f"{driver}/{name}: first line must name the source"
    return body


def sonic_unknown(command: str) -> CliReply:
    """What SONiC's click CLI prints for a subcommand it lacks (exit status 2)."""
    words = command.split()
    return CliReply(
        "",
        exit_status=2,
        stderr=f'Usage: {words[0]} [OPTIONS] COMMAND [ARGS]...\nTry "{words[0]} -h" for help.\n\n'
        f'Error: No such command "{words[-1]}".\n',
    )


def eos_unknown(command: str) -> CliReply:
    return CliReply("% Invalid input\n", exit_status=0)


def nxos_unknown(command: str) -> CliReply:
    return CliReply(f"{command}\n^\n% Invalid command at '^' marker.\n", exit_status=0)


@dataclass
class Script:
    replies: dict[str, Reply]
    unknown: Callable[[str], CliReply]
    prompt: str = "admin@sonic:~$ "
    hostname: str = "switch"
    config_enter: str = "configure terminal"
    config_lines: str = r"interface \S+|shutdown|no shutdown"
    patterns: dict[str, Callable[[re.Match[str]], Reply]] = field(default_factory=dict)
    on_config: Callable[[str | None, str], None] | None = None  # (interface, line) applied
    log: list[str] = field(default_factory=list)

    def handler(self) -> ScriptedCli:
        return ScriptedCli(self)


_GROUP_MARKER = re.compile(r"^echo labtest-pgid-[0-9a-f]+:\$\$ >&2; ")


class ScriptedCli:
    """One SSH channel's CLI: exec commands and shell lines, with a config mode."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.mode: str | None = None  # None, "config" or "config-if"
        self.interface: str | None = None

    @property
    def prompt(self) -> str:
        if self.mode is None:
            return self.script.prompt
        return f"{self.script.hostname}({self.mode})# "

    def run(self, command: str) -> CliReply:
        # a driver whose device is a POSIX shell (frr) sends each command after an
        # 'echo <marker>$$ >&2; ' (transports/ssh.py); a shell prints it and runs the rest
        command = _GROUP_MARKER.sub("", command)
        line = " ".join(command.split())
        self.script.log.append(line)
        if line in ("exit", "logout"):
            return CliReply("", close=True)
        if line == self.script.config_enter:
            self.mode = "config"
            return CliReply("")
        if self.mode is not None:
            if line == "end":
                self.mode = None
                return CliReply("")
            if re.fullmatch(self.script.config_lines, line):
                if line.startswith("interface "):
                    self.mode, self.interface = "config-if", line.split()[1]
                elif self.script.on_config is not None:
                    self.script.on_config(self.interface, line)
                return CliReply("")
        reply = self.script.replies.get(line)
        if reply is None:
            for pattern, make in self.script.patterns.items():
                if m := re.fullmatch(pattern, line):
                    reply = make(m)
                    break
            else:
                return self.script.unknown(line)
        if callable(reply):
            reply = reply(line)
        return CliReply(reply) if isinstance(reply, str) else reply


@contextlib.contextmanager
def lab(
    script: Script,
    driver: str,
    tmp_path: Path,
    *,
    name: str = "sw1",
    command_timeout_s: float = 3.0,
    vars: dict[str, Any] | None = None,
    **server_options: Any,
) -> Iterator[tuple[SshServer, Testbed]]:
    """An SSH server playing ``script`` and a testbed whose device ``name`` reaches it."""
    with SshServer(script.handler, password=PASSWORD, **server_options) as server:
        known_hosts = tmp_path / f"known_hosts_{server.port}"
        server.write_known_hosts(known_hosts)
        yield server, testbed_for(server, driver, known_hosts, name, command_timeout_s, vars)


def testbed_for(
    server: SshServer,
    driver: str,
    known_hosts: Path,
    name: str = "sw1",
    command_timeout_s: float = 3.0,
    vars: dict[str, Any] | None = None,
) -> Testbed:
    ssh = SshSettings(
        port=server.port,
        username="admin",
        password=SecretStr(PASSWORD),
        known_hosts=known_hosts,
        timeout_s=2.0,
        command_timeout_s=command_timeout_s,
    )
    device = Device(role="leaf", driver=driver, address="127.0.0.1", ssh=ssh, vars=vars or {})
    return Testbed(name="drivers", devices={name: device})


def replay_testbed(driver: str, recording: Path, name: str = "sw1") -> Testbed:
    """A testbed whose device answers from a ``--record``'ed session file."""
    device = Device(role="leaf", driver=driver, replay=recording)
    return Testbed(name="replayed", devices={name: device})


@contextlib.contextmanager
def opened(testbed: Testbed, name: str = "sw1") -> Iterator[Any]:
    """The device's driver, opened through the registry and closed afterwards."""
    driver = open_driver(name, testbed)
    try:
        yield driver
    finally:
        driver.close()


@contextlib.contextmanager
def driver_on(script: Script, driver: str, tmp_path: Path, **options: Any) -> Iterator[Any]:
    """``lab()`` and ``opened()`` in one: the driver of a device played by ``script``."""
    with lab(script, driver, tmp_path, **options) as (_server, testbed), opened(testbed) as d:
        yield d
