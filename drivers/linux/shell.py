"""Running commands on a Linux host and judging their answers.

A Linux host answers through a POSIX shell, so failures look the same for every
tool: exit 127 or ``command not found`` is a tool that is not installed (or not
on PATH), exit 126 or ``Permission denied`` is a missing privilege, any other
non-zero exit is the tool refusing. Each becomes a typed error naming the host,
the tool and the output, so a report says what to install or fix without a rerun.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

from labtest.connect import CommandRunner
from labtest.drivers.linux.parsers._common import SOURCE
from labtest.errors import CommandFailed, CommandNotSupported, ParseError, PermissionDenied
from labtest.transports.ssh import CommandResult

T = TypeVar("T")

_DENIED = re.compile(r"Permission denied|Operation not permitted|a password is required", re.I)


class ToolMissing(CommandNotSupported):
    """A tool the driver needs is not installed on the host (or not on its PATH)."""

    def __init__(self, device: str, tool: str, raw: str | None = None) -> None:
        self.tool = tool
        super().__init__(
            device, f"{tool} is not installed on {device} (or not on its PATH)", raw=raw
        )


class HostShell:
    """One host's command runner with typed failures and a per-tool probe cache.

    ``tool_paths`` maps a tool name to the path to run instead (``mpirun`` ->
    ``/opt/hpcx/ompi/bin/mpirun``), for hosts where a tool is not on PATH.
    """

    def __init__(
        self, host: str, runner: CommandRunner, tool_paths: Mapping[str, str] | None = None
    ) -> None:
        self.host = host
        self.runner = runner
        self.tool_paths = dict(tool_paths or {})
        self._probes: dict[str, str] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self.runner.close()

    def tool(self, name: str) -> str:
        """The shell word that runs ``name`` on this host."""
        return shlex.quote(self.tool_paths.get(name, name))

    def run(
        self,
        command: str,
        *,
        tool: str,
        timeout_s: float | None = None,
        ok: Collection[int] = (0,),
    ) -> CommandResult:
        """Run ``command`` (None: the transport's command timeout); a status outside
        ``ok`` raises a typed error naming ``tool``."""
        result = self.runner.exec(command, timeout_s)
        self.judge(command, tool, result, ok)
        return result

    def judge(
        self, command: str, tool: str, result: CommandResult, ok: Collection[int] = (0,)
    ) -> None:
        status = result.exit_status
        raw = result.stdout + result.stderr
        if status == 127 or (status not in ok and self._not_found(tool, result.stderr)):
            raise ToolMissing(self.host, tool, raw=raw)
        if status is None or status in ok:
            return
        last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or [""]
        if status == 126 or _DENIED.search(result.stderr):
            raise PermissionDenied(
                self.host, f"{command!r}: permission denied (needs root or sudo?): {last[0]}", raw
            )
        raise CommandFailed(self.host, f"{command!r} exited {status}: {last[0]}", raw=raw)

    def _not_found(self, tool: str, stderr: str) -> bool:
        """The shell's own complaint about ``tool`` (bash, dash, or a bad configured path)."""
        names = {tool, self.tool_paths.get(tool, tool)}
        return any(
            f"{name}: command not found" in stderr
            or f"{name}: not found" in stderr
            or f"{name}: No such file or directory" in stderr
            for name in names
        )

    def probe(self, tool: str, args: str = "--help") -> str:
        """``tool --help`` once per host: proves the tool is there and tells its options.

        Help output goes to either stream and many tools exit non-zero after it
        (perftest returns 1), so only a missing tool is an error here.
        """
        with self._lock:
            if tool in self._probes:
                return self._probes[tool]
        result = self.run(f"{self.tool(tool)} {args}", tool=tool, ok=range(0, 126))
        text = result.stdout + result.stderr
        with self._lock:
            self._probes[tool] = text
        return text

    def parse(self, parse: Callable[[str], T], text: str) -> T:
        """Parse tool output; a ParseError names this host instead of the parsers' "linux"."""
        try:
            return parse(text)
        except ParseError as exc:
            message = str(exc).removeprefix(f"[{SOURCE}] ")
            raise ParseError(self.host, message, raw=exc.raw) from None
