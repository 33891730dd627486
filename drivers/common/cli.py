"""The shared base of the SSH-CLI switch drivers (SONiC, EOS, NX-OS).

A driver method is three steps: run one command, judge the answer, parse it.
The transport always comes from :func:`labtest.connect.cli`, so the same code
talks to a real switch, an emulated one, or a replayed recording.

Judging happens before any parser sees the text, because a device that refuses
a command still prints something, and that something must not reach a parser
as if it were data:

- ``CommandNotSupported``: ``% Invalid input`` (EOS, IOS-like CLIs), ``% Invalid
  command`` (NX-OS), ``Error: No such command`` (SONiC's click CLI), ``command
  not found`` (bash, exit 127);
- ``PermissionDenied``: ``Permission denied``, ``% Authorization denied``, SONiC's
  ``Root privileges are required``, sudo's ``not in the sudoers file``;
- ``ServiceDown``: a non-zero exit whose answer says a daemon is not running (FRR's
  vtysh: "bgpd is not running"): the device's own fault, judged as a failure there;
- ``CommandFailed``: any other non-zero exit status, with every line of the answer's
  head (not only the first: a warning often comes before the cause).

Only the first lines of stdout (and all of stderr) are searched: a device
prints its refusal first, and a long legitimate output (a running config, an
EEPROM dump) must not trip on a phrase in its body.

A parser that cannot read the text raises ``ParseError`` naming this device
and carrying the raw text; an unexpected exception inside a parser becomes one
too, so garbled output is never a crash and never a half-empty record.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from labtest import connect, labtime
from labtest.capabilities.switch import Interfaces, status_changes_in
from labtest.connect import CommandRunner
from labtest.errors import (
    CommandFailed,
    CommandNotSupported,
    InfraError,
    ParseError,
    PermissionDenied,
    ServiceDown,
    TransportError,
    TransportTimeout,
)
from labtest.testbed.model import Device, Testbed
from labtest.transports import breaker
from labtest.transports.ssh import CommandResult

T = TypeVar("T")

HEAD_LINES = 5  # how many non-empty stdout lines may hold a refusal
TELLING_CHARS = 400  # how much of a failed command's answer its error message carries

NOT_SUPPORTED = re.compile(
    r"^\s*% ?(?:Invalid (?:input|command)|Unrecognized command|Unavailable command"
    r"|Incomplete command|.*\bnot supported\b)"
    r"|command not found\s*$"
    r"|^\s*Error: No such (?:command|option)",
    re.IGNORECASE | re.MULTILINE,
)
PERMISSION = re.compile(
    r"permission denied"
    r"|^\s*% ?(?:Authorization denied|Insufficient privilege|.*\bnot authorized\b)"
    r"|Root privileges are required"
    r"|is not in the sudoers file"
    r"|^\s*sudo: a (?:terminal|password) is required",
    re.IGNORECASE | re.MULTILINE,
)

#: the device says a daemon the command needs is dead (FRR's vtysh: "bgpd is not running")
SERVICE_DOWN = re.compile(r"^\s*%?\s*(?P<service>[\w.-]+) is not running\b", re.MULTILINE)

_PORT = re.compile(r"[A-Za-z][\w./:-]*")
_TOKEN = re.compile(r"labtest-[0-9TZ]+-[0-9a-f]{6}")


def check_answer(device: str, command: str, result: CommandResult) -> None:
    """Raise the typed error a refused command deserves; return quietly otherwise."""
    stdout_head = "\n".join([ln for ln in result.stdout.splitlines() if ln.strip()][:HEAD_LINES])
    head = f"{stdout_head}\n{result.stderr}"
    raw = result.stdout + result.stderr
    status = result.exit_status
    if (m := PERMISSION.search(head)) or status == 126:
        reason = m.group(0).strip() if m else "exit status 126"
        raise PermissionDenied(device, f"{command!r}: permission denied ({reason})", raw=raw)
    if (m := NOT_SUPPORTED.search(head)) or status == 127:
        reason = _line_of(head, m) if m else "exit status 127"
        raise CommandNotSupported(device, f"{command!r} is not supported: {reason}", raw=raw)
    if status not in (0, None) and (m := SERVICE_DOWN.search(head)):
        raise ServiceDown(device, f"{command!r}: {m.group('service')} is not running "
                          f"(exit status {status}: {telling(head)})", raw=raw,
                          service=m.group("service"))
    if status not in (0, None):
        raise CommandFailed(device, f"{command!r} exited with status {status}: {telling(head)}",
                            raw=raw)


def telling(text: str, budget: int = TELLING_CHARS) -> str:
    """The lines of a failed command's answer, in order and once each, within ``budget``
    characters: a harmless first line (vtysh's "Can't open configuration file") must not
    hide the one that says why ("bgpd is not running"), which tools often print last. Past
    the budget the first line and the last ones that fit are kept (the raw output is
    attached to the error)."""
    lines = list(dict.fromkeys(ln.strip() for ln in text.splitlines() if ln.strip()))
    if not lines:
        return "no output"
    joined = " / ".join(lines)
    if len(joined) <= budget:
        return joined
    tail: list[str] = []
    room = budget - len(lines[0])
    for ln in reversed(lines[1:]):
        if len(ln) + 3 > room:
            break
        tail.insert(0, ln)
        room -= len(ln) + 3
    skipped = len(lines) - 1 - len(tail)
    return " / ".join([lines[0][:budget], f"[{skipped} line(s)]", *tail])


def _line_of(text: str, match: re.Match[str]) -> str:
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end != -1 else None].strip()


def port_name(port: str) -> str:
    """A port name safe to put in a command line (no spaces, no shell characters)."""
    if not _PORT.fullmatch(port):
        raise ValueError(f"not a port name: {port!r}")
    return port


def new_snapshot_token() -> str:
    """``labtest-20250101T120000Z-1a2b3c``: sortable, unique, safe in a file name."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"labtest-{stamp}-{secrets.token_hex(3)}"


def snapshot_token(token: str) -> str:
    """Refuse a token this family did not hand out (it ends up in a command line)."""
    if not _TOKEN.fullmatch(token):
        raise ValueError(f"not a labtest snapshot token: {token!r}")
    return token


class FlapsFromCounters:
    """LinkFlapCounts for a driver whose ``counters()`` already carry each port's
    oper-status changes (EOS ``linkStatusChanges``, FRR ``carrier_changes``): read from
    the same command, so a caller holding both reads it once (``link_flap_counts``)."""

    def link_status_changes(self: Interfaces) -> dict[str, int]:
        return status_changes_in(self.counters())


class CliSwitch:
    """Base of an SSH-CLI switch driver; subclasses add the capability methods.

    ``config_mode`` is how the family enters and leaves configuration mode in an
    interactive session; ``vars`` of the testbed device tune timeouts.
    """

    config_mode: tuple[str, str] = ("configure terminal", "end")
    #: the device runs exec commands in a POSIX shell: a timed-out command's process group
    #: is killed on the device (``connect.cli(posix_shell=True)``, docs/drivers.md)
    posix_shell: bool = False

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        self.name = name
        self.device = device
        self.testbed = testbed
        self._cli: CommandRunner | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def cli(self) -> CommandRunner:
        """The device's command runner, opened on first use."""
        if self._cli is None:
            self._cli = connect.cli(self.name, self.device, posix_shell=self.posix_shell)
        return self._cli

    def close(self) -> None:
        if self._cli is not None:
            self._cli.close()
            self._cli = None

    def seconds(self, key: str, default: float) -> float:
        """A duration option from the testbed device's ``vars`` (``reboot_poll_s: 1``)."""
        return float(self.device.vars.get(key, default))

    # --- commands -------------------------------------------------------------

    def run(self, command: str, timeout_s: float | None = None) -> str:
        """Run one command and return its stdout, or raise what its answer deserves."""
        result = self.cli.exec(command, timeout_s)
        check_answer(self.name, command, result)
        return result.stdout

    def parse(self, parser: Callable[..., T], command: str, text: str, **kwargs: Any) -> T:
        """``parser(text)``, with every failure turned into a ParseError naming this device."""
        try:
            return parser(text, device=self.name, **kwargs)
        except ParseError as exc:
            if exc.device == self.name:
                raise
            raise ParseError(self.name, f"{command}: {exc}", raw=text) from exc
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ParseError(self.name, f"{command}: {exc!r}", raw=text) from exc

    def show(self, command: str, parser: Callable[..., T], **kwargs: Any) -> T:
        return self.parse(parser, command, self.run(command), **kwargs)

    def configure(self, lines: Sequence[str], timeout_s: float | None = None) -> None:
        """Apply ``lines`` in configuration mode, in one interactive session.

        Each line's answer is judged like a command's. A replayed session has no
        interactive shell: it answers each recorded line in turn instead.
        """
        enter, leave = self.config_mode
        commands = [enter, *lines, leave]
        open_shell = getattr(self.cli, "shell", None)
        if open_shell is None:
            for command in commands:
                self.run(command, timeout_s)
            return
        with open_shell(timeout_s) as session:
            for command in commands:
                output = session.send(command, timeout_s)
                check_answer(self.name, command, CommandResult(output, "", None, 0.0))

    # --- reboot ---------------------------------------------------------------

    def reboot_and_wait(
        self, command: str, uptime_s: Callable[[], float | None], timeout_s: float
    ) -> None:
        """Send ``command`` and return once the device has rebooted and answers again.

        A reboot is confirmed when the device stopped answering for a while, or
        when its uptime went backwards; ``vars.reboot_poll_s`` paces the probes. The
        waits are lab time (the wall clock on a real lab; an emulated lab's clock may
        skip the boot's idle seconds).
        Raises ``TransportTimeout`` when neither happened within ``timeout_s``.
        """
        poll_s = self.seconds("reboot_poll_s", 5.0)
        before = uptime_s()  # a device already marked down (its breaker) fails here at once
        deadline = labtime.monotonic() + timeout_s
        command_timeout_s = min(self.seconds("reboot_command_timeout_s", 30.0), timeout_s)
        went_away = False
        last: Exception | None = None
        with breaker.expected_outage(self.name):  # dark on purpose: not marked down
            with contextlib.suppress(TransportError):  # dropped on its way down: expected
                self.run(command, timeout_s=command_timeout_s)
            while (remaining := deadline - labtime.monotonic()) > 0:
                labtime.sleep(min(poll_s, remaining))
                try:
                    now = uptime_s()
                except InfraError as exc:  # down, booting, services not up yet
                    went_away, last = True, exc
                    continue
                if went_away or (before is not None and now is not None and now < before):
                    return
        what = f"last error: {last}" if last else "it kept answering with a growing uptime"
        raise TransportTimeout(
            self.name, f"no completed reboot within {timeout_s:g} s after {command!r} ({what})"
        )

    def wait_until(self, probe: Callable[[], object], timeout_s: float, what: str) -> None:
        """Call ``probe`` until it returns without an InfraError (bounded)."""
        poll_s = self.seconds("reboot_poll_s", 5.0)
        deadline = labtime.monotonic() + timeout_s
        with breaker.expected_outage(self.name):  # restarting services: not marked down
            while True:
                try:
                    probe()
                    return
                except InfraError as exc:
                    if labtime.monotonic() + poll_s > deadline:
                        raise TransportTimeout(
                            self.name, f"{what} not done within {timeout_s:g} s: {exc}"
                        ) from exc
                labtime.sleep(poll_s)
