"""The emulated host's bash session: one SSH command line parsed (``bash``) and run.

See the package docstring for what a host answers."""

from __future__ import annotations

import fnmatch
import json
import logging
import posixpath
import random
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.optics import DARK_DBM
from labtest.emulation.model.traffic.topology import TrafficSettings
from labtest.emulation.personalities._clock import date_output, epoch_s
from labtest.emulation.personalities.linux import nic as nic_text
from labtest.emulation.personalities.linux import probe
from labtest.emulation.personalities.linux.bash import (
    Command,
    Output,
    ShellSyntaxError,
    Word,
    grep,
    head_tail,
    parse,
    wc,
)
from labtest.emulation.personalities.linux.runs import (
    Placement,
    mpirun_words,
    place,
    run_client,
    run_collective,
    start_server,
)
from labtest.emulation.personalities.linux.state import (
    BASE_PROCESSES,
    HostState,
    Proc,
    Sink,
    register,
)
from labtest.emulation.personalities.linux.tools import (
    COLLECTIVES,
    TOOLS,
    NcclUsageError,
    PerftestUsageError,
    mpirun_missing_executable,
    mpirun_unknown_host,
    mpirun_unreachable,
    parse_nccl,
    parse_perftest,
    usage,
)
from labtest.emulation.sshserver import CliReply
from labtest.testbed.model import Device

log = logging.getLogger("labtest.emulation.linux")

BANNER = (
    "Welcome to Ubuntu 22.04.4 LTS (GNU/Linux 5.15.0-105-generic x86_64)\n\n"
    " * Documentation:  https://help.ubuntu.com\n\n"
)
KERNEL = "5.15.0-105-generic"
MPI_PREFIX = "/usr/mpi/gcc/openmpi-4.1.7rc1/bin"
NCCL_TESTS = "/opt/nccl-tests/build"
SUDO_WRAPPERS = ("sudo", "nohup", "stdbuf", "timeout", "env", "exec")
FOREGROUND_SERVER_MAX_S = 3600.0  # a foreground perftest server waits this long at most
MAX_SLEEP_S = 30.0
STATIC_DIRS = frozenset(
    {
        "/",
        "/tmp",
        "/var",
        "/var/tmp",
        "/dev",
        "/home",
        "/root",
        "/etc",
        "/usr",
        "/usr/bin",
        "/usr/sbin",
        "/opt",
        "/sys",
        "/proc",
    }
)


def _tool_paths() -> dict[str, str]:
    paths = {
        t: f"/usr/bin/{t}"
        for t in (
            "cat",
            "date",
            "grep",
            "head",
            "tail",
            "wc",
            "ls",
            "rm",
            "ps",
            "pgrep",
            "pkill",
            "ss",
            "nohup",
            "stdbuf",
            "sudo",
            "timeout",
            "env",
            "hostname",
            "uname",
            "whoami",
            "id",
            "sleep",
            "true",
            "false",
            "which",
            "ibv_devinfo",
            "ibv_devices",
            *TOOLS,
        )
    }
    paths |= {t: f"/usr/sbin/{t}" for t in ("ip", "ethtool", "rdma", "show_gids", "show_counters")}
    paths["traceroute"] = "/usr/sbin/traceroute"  # Debian's traceroute package
    paths["mpirun"] = f"{MPI_PREFIX}/mpirun"
    paths |= {t: f"{NCCL_TESTS}/{t}" for t in COLLECTIVES}
    return paths


TOOL_PATHS = _tool_paths()
BUILTINS = frozenset({"cd", "echo", "kill", "command", "type", "exit", "wait", "pwd", ":"})


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point for ``driver: linux`` devices."""
    host = HostState(fabric, name, device)
    register(host)
    # every emulated host listens on 127.0.0.1, so mpirun must reach them by name
    mpi = {"mpi_host": device.vars.get("mpi_host", name)}
    return Served(cli=lambda: Shell(host), banner=BANNER, stop=host.stop, vars_update=mpi)


@dataclass
class _Ctx:
    """What one command gets besides its words: its stdin and ``VAR=value`` prefixes."""

    stdin: str = ""
    env: dict[str, str] = field(default_factory=dict)


class Shell:
    """One SSH channel's bash (a CommandHandler); state that outlives it is in HostState."""

    def __init__(self, host: HostState) -> None:
        self.host = host
        self.home = "/root" if host.user == "root" else f"/home/{host.user}"
        self.cwd = self.home
        self.last_bg: int | None = None
        self.status = 0
        self._sysfs: dict[str, str | None] | None = None
        self._rng = random.Random(zlib.crc32(host.name.encode()))  # probe losses, per session

    @property
    def prompt(self) -> str:
        where = "~" if self.cwd == self.home else self.cwd
        mark = "#" if self.host.user == "root" else "$"
        return f"{self.host.user}@{self.host.hostname}:{where}{mark} "

    # --- a command line -----------------------------------------------------------

    def run(self, command: str) -> CliReply:
        self._sysfs = None  # sysfs is read afresh for every command line
        try:
            return self._line(command)
        except Exception as exc:  # an emulator bug answers at once instead of hanging SSH
            log.exception("%s: %r failed in the emulator", self.host.name, command)
            return CliReply("", 1, f"bash: emulator error: {type(exc).__name__}: {exc}\n")

    def _line(self, command: str) -> CliReply:
        try:
            steps = parse(command)
        except ShellSyntaxError as exc:
            return CliReply("", 2, f"bash: -c: line 1: {exc}\n")
        out: list[str] = []
        err: list[str] = []
        skip = False
        for step in steps:
            if not skip:
                if step.then == "&":
                    result = self._background(step.pipeline)
                else:
                    result = self._pipeline(step.pipeline)
                out.append(result.stdout)
                err.append(result.stderr)
                self.status = result.status
                if isinstance(result, _Exit):
                    return CliReply("".join(out), result.status, "".join(err), close=True)
            skip = (step.then == "&&" and self.status != 0) or (
                step.then == "||" and self.status == 0
            )
        return CliReply("".join(out), self.status, "".join(err))

    def _pipeline(self, commands: list[Command]) -> Output:
        stdin, errors = "", []
        result = Output()
        for cmd in commands:
            result = self._simple(cmd, stdin)
            errors.append(result.stderr)
            stdin = result.stdout
            if isinstance(result, _Exit):
                return result
        return Output(stdin, "".join(errors), result.status)

    def _simple(self, cmd: Command, stdin: str) -> Output:
        argv = self._expand(cmd.words)
        routes = self._routes(cmd, stdin)
        if isinstance(routes, Output):
            return routes
        stdin, targets = routes
        if not argv:
            return Output()
        result = self._exec(argv, _Ctx(stdin=stdin, env=dict(cmd.env)))
        out, err = [], []
        for fd, text in ((1, result.stdout), (2, result.stderr)):
            kind, path = targets[fd]
            if kind == "stdout":
                out.append(text)
            elif kind == "stderr":
                err.append(text)
            elif kind == "file":
                self.host.append_file(path, text)
        if isinstance(result, _Exit):
            return _Exit("".join(out), "".join(err), result.status)
        return Output("".join(out), "".join(err), result.status)

    def _routes(self, cmd: Command, stdin: str) -> Output | tuple[str, dict[int, tuple[str, str]]]:
        """Apply redirections in order: stdin text, and where fds 1 and 2 go."""
        targets: dict[int, tuple[str, str]] = {1: ("stdout", ""), 2: ("stderr", "")}
        for r in cmd.redirects:
            if r.op == ">&":
                if r.target.isdigit() and int(r.target) in targets:
                    targets[r.fd] = targets[int(r.target)]
                    continue
                path = self._path(r.target)  # "&>" style: both to a file
                targets[1] = targets[2] = ("file", path)
                continue
            path = self._path(r.target)
            if r.op == "<":
                if path == "/dev/null":
                    stdin = ""
                    continue
                text = self._read(path)
                if text is None:
                    return Output(stderr=f"bash: {r.target}: No such file or directory\n", status=1)
                stdin = text
                continue
            if path == "/dev/null":
                targets[r.fd] = ("null", "")
                continue
            if path.startswith(("/sys/", "/proc/")) or not self._is_dir(posixpath.dirname(path)):
                system = path.startswith(("/sys/", "/proc/"))
                why = "Permission denied" if system else "No such file or directory"
                return Output(stderr=f"bash: {r.target}: {why}\n", status=1)
            if r.op == ">":
                self.host.write_file(path, "")
            targets[r.fd] = ("file", path)
        return stdin, targets

    def _background(self, commands: list[Command]) -> Output:
        """``cmd &``: a process in the host's table; its output goes where it was redirected."""
        cmd = commands[-1]
        if len(commands) > 1:
            self._pipeline(commands[:-1])
        argv = self._expand(cmd.words)
        routes = self._routes(cmd, "")
        if isinstance(routes, Output):
            return routes
        stdin, targets = routes
        sink = Sink(
            self.host,
            {
                fd: (kind if kind == "file" else "null", path)
                for fd, (kind, path) in targets.items()
            },
        )
        core, failure = self._unwrap(argv)
        if failure is not None or not core:
            if failure is not None:
                sink.write(1, failure.stdout)
                sink.write(2, failure.stderr)
            self.last_bg = self.host.new_pid()
            return Output()
        tool = posixpath.basename(core[0])
        if tool in TOOLS and self._available(core[0]) is None:
            try:
                opts = parse_perftest(tool, core[1:])
            except PerftestUsageError:
                opts = None
            if opts is not None and not opts.is_client and not (opts.help or opts.version):
                proc = start_server(self.host, opts, " ".join(core), sink)
                self.last_bg = proc.pid if proc else self.host.new_pid()
                return Output()
        proc = self.host.spawn(tool, " ".join(core), sink)
        self.last_bg = proc.pid
        ctx = _Ctx(stdin=stdin, env=dict(cmd.env))
        thread = threading.Thread(
            target=self._run_background,
            args=(proc, core, ctx),
            name=f"bg-{self.host.name}-{proc.pid}",
            daemon=True,
        )
        thread.start()
        return Output()

    def _run_background(self, proc: Proc, argv: list[str], ctx: _Ctx) -> None:
        try:
            result = self._exec(argv, ctx)
        except Exception as exc:  # a bug in the emulator must not kill silently
            result = Output(stderr=f"{argv[0]}: emulator error: {exc}\n", status=1)
        if not proc.killed:
            proc.sink.write(1, result.stdout)
            proc.sink.write(2, result.stderr)
        self.host.finish(proc)

    # --- words ---------------------------------------------------------------------

    def _expand(self, words: list[Word]) -> list[str]:
        out: list[str] = []
        for w in words:
            text = w.text
            if not w.literal:
                text = text.replace("$!", str(self.last_bg or "")).replace("$?", str(self.status))
                text = re.sub(r"\$\{?(HOME|USER|PWD)\}?", lambda m: self._var(m[1]), text)
                if text.startswith("~"):
                    text = self.home + text[1:]
            if w.glob:
                matches = self._glob(text)
                if matches:
                    out.extend(matches)
                    continue
            out.append(text)
        return out

    def _var(self, name: str) -> str:
        return {"HOME": self.home, "USER": self.host.user, "PWD": self.cwd}[name]

    def _path(self, text: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, text))

    def _glob(self, pattern: str) -> list[str]:
        absolute = self._path(pattern)
        directory, base = posixpath.split(absolute)
        names = sorted(n for n in self._listdir(directory) if fnmatch.fnmatchcase(n, base))
        prefix = pattern[: len(pattern) - len(posixpath.basename(pattern))]
        return [prefix + n for n in names]

    # --- the file system -------------------------------------------------------------

    def _sys(self) -> dict[str, str | None]:
        if self._sysfs is None:
            ports = self._ports()
            counters = {p.nic.rdma: nic_text.hw_counters(self.host.fabric, p) for p in ports}
            pcie = nic_text.pcie_trained(self.host.fabric, self.host.name)
            self._sysfs = nic_text.sysfs_files(ports, counters, pcie)
        return self._sysfs

    def _all_files(self) -> dict[str, str | None]:
        with self.host.lock:
            files: dict[str, str | None] = dict(self.host.files)
        return files

    def _read(self, path: str) -> str | None:
        if path.startswith("/sys/"):
            return self._sys().get(path)
        if path == "/etc/hostname":
            return self.host.hostname + "\n"
        with self.host.lock:
            return self.host.files.get(path)

    def _exists(self, path: str) -> bool:
        if path.startswith("/sys/"):
            return path in self._sys() or self._is_dir(path)
        return path in self._all_files() or self._is_dir(path)

    def _is_dir(self, path: str) -> bool:
        if path in STATIC_DIRS or path in (self.home, posixpath.dirname(self.home)):
            return True
        prefix = path.rstrip("/") + "/"
        pool = self._sys() if path.startswith("/sys") else self._all_files()
        return any(k.startswith(prefix) for k in pool)

    def _listdir(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        pool = self._sys() if directory.startswith("/sys") else self._all_files()
        return sorted({k[len(prefix) :].split("/")[0] for k in pool if k.startswith(prefix)})

    # --- running one command ------------------------------------------------------------

    def _available(self, word: str) -> Output | None:
        """None when the shell can run ``word``; else bash's complaint."""
        tool = posixpath.basename(word)
        if (tool in TOOL_PATHS or tool in BUILTINS) and tool not in self.host.missing:
            return None
        if "/" in word:
            return Output(stderr=f"bash: {word}: No such file or directory\n", status=127)
        return Output(stderr=f"bash: {word}: command not found\n", status=127)

    def _unwrap(self, argv: list[str]) -> tuple[list[str], Output | None]:
        """Strip nohup/stdbuf/sudo/timeout/env/exec in front of the real command."""
        while argv and posixpath.basename(argv[0]) in SUDO_WRAPPERS:
            wrapper = posixpath.basename(argv[0])
            if (missing := self._available(argv[0])) is not None:
                return [], missing
            rest = argv[1:]
            if wrapper == "sudo":
                if self.host.var("sudo_needs_password"):
                    why = "a password is required"
                    if "-n" not in rest:
                        why = "a terminal is required to read the password"
                    return [], Output(stderr=f"sudo: {why}\n", status=1)
                while rest and rest[0].startswith("-"):
                    rest = rest[2:] if rest[0] in ("-u", "-g") else rest[1:]
            elif wrapper == "stdbuf":
                while rest and rest[0].startswith("-"):
                    rest = rest[2:] if rest[0] in ("-i", "-o", "-e") else rest[1:]
            elif wrapper == "timeout":
                while rest and rest[0].startswith("-"):
                    rest = rest[2:] if rest[0] in ("-s", "-k") else rest[1:]
                rest = rest[1:]  # the duration
            elif wrapper == "env":
                while rest and ("=" in rest[0] or rest[0].startswith("-")):
                    rest = rest[1:]
            if not rest:
                return [], Output(stderr=f"{wrapper}: missing operand\n", status=125)
            if (missing := self._available(rest[0])) is not None and wrapper == "nohup":
                tool = rest[0]
                return [], Output(
                    stderr=f"nohup: failed to run command '{tool}': No such file or directory\n",
                    status=127,
                )
            argv = rest
        return argv, None

    def _exec(self, argv: list[str], ctx: _Ctx) -> Output:
        core, failure = self._unwrap(argv)
        if failure is not None:
            return failure
        if not core:
            return Output()
        if (missing := self._available(core[0])) is not None:
            return missing
        tool = posixpath.basename(core[0])
        handler = self._handlers().get(tool)
        if handler is None:
            return Output(stderr=f"bash: {core[0]}: command not found\n", status=127)
        return handler(core, ctx)

    def _handlers(self) -> dict[str, Callable[[list[str], _Ctx], Output]]:
        table: dict[str, Callable[[list[str], _Ctx], Output]] = {
            "cd": self._cd,
            "pwd": lambda a, c: Output(self.cwd + "\n"),
            "echo": self._echo,
            "exit": self._exit,
            "true": lambda a, c: Output(),
            ":": lambda a, c: Output(),
            "false": lambda a, c: Output(status=1),
            "wait": lambda a, c: Output(),
            "command": self._command,
            "which": self._which,
            "type": self._type,
            "hostname": lambda a, c: Output(self.host.hostname + "\n"),
            "whoami": lambda a, c: Output(self.host.user + "\n"),
            "id": self._id,
            "uname": self._uname,
            "date": self._date,
            "sleep": self._sleep,
            "cat": self._cat,
            "grep": self._grep,
            "head": self._head,
            "tail": self._tail,
            "wc": lambda a, c: wc(a, c.stdin),
            "ls": self._ls,
            "rm": self._rm,
            "ps": self._ps,
            "pgrep": self._pgrep,
            "pkill": self._pkill,
            "kill": self._kill,
            "ss": self._ss,
            "ip": self._ip,
            "ethtool": self._ethtool,
            "rdma": self._rdma,
            "ibv_devinfo": self._ibv_devinfo,
            "ibv_devices": self._ibv_devices,
            "show_gids": self._show_gids,
            "show_counters": self._show_counters,
            "mpirun": self._mpirun,
            "traceroute": lambda a, c: probe.traceroute(self.host, a, self._rng),
        }
        table |= dict.fromkeys(TOOLS, self._perftest)
        table |= dict.fromkeys(COLLECTIVES, self._nccl_local)
        return table

    # --- builtins and coreutils -------------------------------------------------------------

    def _cd(self, argv: list[str], ctx: _Ctx) -> Output:
        target = self._path(argv[1]) if len(argv) > 1 else self.home
        if not self._is_dir(target):
            return Output(stderr=f"bash: cd: {argv[1]}: No such file or directory\n", status=1)
        self.cwd = target
        return Output()

    def _echo(self, argv: list[str], ctx: _Ctx) -> Output:
        args = argv[1:]
        newline = "\n"
        if args and args[0] == "-n":
            args, newline = args[1:], ""
        return Output(" ".join(args) + newline)

    def _exit(self, argv: list[str], ctx: _Ctx) -> Output:
        code = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else self.status
        return _Exit(status=code)

    def _command(self, argv: list[str], ctx: _Ctx) -> Output:
        if len(argv) > 2 and argv[1] in ("-v", "-V"):
            return self._which(["which", *argv[2:]], ctx, builtin_names=True)
        return self._exec(argv[1:], ctx) if len(argv) > 1 else Output()

    def _which(self, argv: list[str], ctx: _Ctx, builtin_names: bool = False) -> Output:
        out, status = [], 0
        for name in argv[1:]:
            if self._available(name) is not None:
                status = 1
            elif (builtin_names and name in BUILTINS) or "/" in name:
                out.append(name)
            elif name in TOOL_PATHS:
                out.append(TOOL_PATHS[name])
            else:
                status = 1
        return Output("".join(f"{line}\n" for line in out), status=status)

    def _type(self, argv: list[str], ctx: _Ctx) -> Output:
        out, err, status = [], [], 0
        for name in argv[1:]:
            if name in BUILTINS:
                out.append(f"{name} is a shell builtin")
            elif self._available(name) is None and name in TOOL_PATHS:
                out.append(f"{name} is {TOOL_PATHS[name]}")
            else:
                err.append(f"bash: type: {name}: not found")
                status = 1
        return Output("".join(f"{x}\n" for x in out), "".join(f"{x}\n" for x in err), status)

    def _id(self, argv: list[str], ctx: _Ctx) -> Output:
        uid = 0 if self.host.user == "root" else 1000
        return Output(
            f"uid={uid}({self.host.user}) gid={uid}({self.host.user}) "
            f"groups={uid}({self.host.user})\n"
        )

    def _uname(self, argv: list[str], ctx: _Ctx) -> Output:
        if "-a" in argv:
            return Output(
                f"Linux {self.host.hostname} {KERNEL} #115-Ubuntu SMP x86_64 x86_64 "
                "x86_64 GNU/Linux\n"
            )
        if "-r" in argv:
            return Output(KERNEL + "\n")
        if "-n" in argv:
            return Output(self.host.hostname + "\n")
        return Output("Linux\n")

    def _date(self, argv: list[str], ctx: _Ctx) -> Output:
        """The host's clock at the fabric's pace (its NIC counters run on it too)."""
        out, err, status = date_output(argv[1:], epoch_s(self.host.fabric))
        return Output(out, err, status)

    def _sleep(self, argv: list[str], ctx: _Ctx) -> Output:
        try:
            seconds = float(argv[1].rstrip("s"))
        except (IndexError, ValueError):
            return Output(stderr="sleep: missing operand\n", status=1)
        self.host.stopped.wait(min(seconds, MAX_SLEEP_S))
        return Output()

    def _cat(self, argv: list[str], ctx: _Ctx) -> Output:
        paths = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
        if not paths:
            return Output(ctx.stdin)
        out, err, status = [], [], 0
        for name in paths:
            text, why = self._open(name)
            if text is None:
                err.append(f"cat: {name}: {why}\n")
                status = 1
            else:
                out.append(text)
        return Output("".join(out), "".join(err), status)

    def _grep(self, argv: list[str], ctx: _Ctx) -> Output:
        return grep(argv, ctx.stdin, self._open)

    def _open(self, name: str) -> tuple[str | None, str]:
        """A file's text, or None and the reason the kernel gives (EINVAL for empty GIDs)."""
        path = self._path(name)
        text = self._read(path)
        if text is not None:
            return text, ""
        if path.startswith("/sys/") and path in self._sys():
            return None, "Invalid argument"
        return None, "Is a directory" if self._is_dir(path) else "No such file or directory"

    def _head(self, argv: list[str], ctx: _Ctx) -> Output:
        return head_tail(argv, self._input(argv, ctx), tail=False)

    def _tail(self, argv: list[str], ctx: _Ctx) -> Output:
        return head_tail(argv, self._input(argv, ctx), tail=True)

    def _input(self, argv: list[str], ctx: _Ctx) -> str:
        files = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()]
        if files:
            return self._read(self._path(files[-1])) or ""
        return ctx.stdin

    def _ls(self, argv: list[str], ctx: _Ctx) -> Output:
        targets = [a for a in argv[1:] if not a.startswith("-")] or ["."]
        out, err, status = [], [], 0
        for name in targets:
            path = self._path(name)
            if self._is_dir(path):
                out.extend(self._listdir(path))
            elif self._exists(path):
                out.append(name)
            else:
                err.append(f"ls: cannot access '{name}': No such file or directory\n")
                status = 2
        return Output("".join(f"{x}\n" for x in out), "".join(err), status)

    def _rm(self, argv: list[str], ctx: _Ctx) -> Output:
        force = any(a.startswith("-") and "f" in a for a in argv[1:])
        err, status = [], 0
        for name in (a for a in argv[1:] if not a.startswith("-")):
            path = self._path(name)
            with self.host.lock:
                gone = self.host.files.pop(path, None) is not None
            if not gone and not force:
                err.append(f"rm: cannot remove '{name}': No such file or directory\n")
                status = 1
        return Output(stderr="".join(err), status=status)

    # --- processes ---------------------------------------------------------------------

    def _rows(self) -> list[tuple[int, str, str, str]]:
        """(pid, user, comm, args) of every process, the session's own shell included."""
        with self.host.lock:
            procs = sorted(self.host.procs.values(), key=lambda p: p.pid)
        rows = list(BASE_PROCESSES)
        rows += [(p.pid, p.user, p.comm, p.args) for p in procs]
        return rows

    def _ps(self, argv: list[str], ctx: _Ctx) -> Output:
        """procps ``ps``: -e/-A/ax, -f, aux, -o FORMAT (``comm=`` drops the header),
        -p PIDS, -C NAMES; option letters may cluster (``-eo pid,comm``)."""
        rows = self._rows()
        cols: list[tuple[str, str]] = []
        pids: set[int] | None = None
        names: set[str] | None = None
        style = ""
        words = argv[1:]
        i = 0
        while i < len(words):
            word = words[i]
            letters = word[1:] if word.startswith("-") else word
            for k, ch in enumerate(letters):
                if ch in "opqC":
                    value = letters[k + 1 :]
                    if not value and i + 1 < len(words):
                        i, value = i + 1, words[i + 1]
                    if ch == "o":
                        for item in value.split(","):
                            key, eq, head = item.partition("=")
                            cols.append((key, head if eq else _PS_HEADERS.get(key, key.upper())))
                    elif ch in "pq":
                        pids = {int(x) for x in re.split(r"[,\s]+", value) if x.isdigit()}
                    else:
                        names = set(value.split(","))
                    break
                if ch == "f" or (ch == "u" and not word.startswith("-")):
                    style = "full" if ch == "f" else "user"
            i += 1
        if not cols and style == "full":
            cols = [("user", "UID"), ("pid", "PID"), ("ppid", "PPID"), ("args", "CMD")]
        elif not cols and style == "user":
            cols = [("user", "USER"), ("pid", "PID"), ("stat", "STAT"), ("args", "COMMAND")]
        if pids is not None:
            rows = [r for r in rows if r[0] in pids]
        if names is not None:
            rows = [r for r in rows if r[2] in names]
        cols = cols or [("pid", "PID"), ("tty", "TTY"), ("time", "TIME"), ("comm", "CMD")]
        lines = []
        if any(head for _, head in cols):
            lines.append(" ".join(_ps_cell(key, head, header=True) for key, head in cols).rstrip())
        for pid, user, comm, args in rows:
            values = {
                "pid": str(pid),
                "ppid": "1",
                "user": user,
                "uname": user,
                "comm": comm,
                "ucomm": comm,
                "args": args,
                "cmd": args,
                "command": args,
                "stat": "Sl",
                "tty": "?",
                "time": "00:00:00",
                "etime": "00:42",
            }
            lines.append(" ".join(_ps_cell(k, values.get(k, "-")) for k, _ in cols).rstrip())
        status = 1 if (pids is not None or names is not None) and not rows else 0
        return Output("".join(f"{ln}\n" for ln in lines), status=status)

    def _matching(self, argv: list[str]) -> list[Proc]:
        full = "-f" in argv
        exact = "-x" in argv
        words = [a for a in argv[1:] if not a.startswith("-")]
        if not words:
            return []
        try:
            rx = re.compile(words[-1])
        except re.error:
            return []
        with self.host.lock:
            procs = list(self.host.procs.values())
        hits = []
        for p in procs:
            text = p.args if full else p.comm
            if (rx.fullmatch(text) if exact else rx.search(text)) is not None:
                hits.append(p)
        return sorted(hits, key=lambda p: p.pid)

    def _pgrep(self, argv: list[str], ctx: _Ctx) -> Output:
        hits = self._matching(argv)
        if "-a" in argv:
            text = "".join(f"{p.pid} {p.args}\n" for p in hits)
        elif "-l" in argv:
            text = "".join(f"{p.pid} {p.comm}\n" for p in hits)
        else:
            text = "".join(f"{p.pid}\n" for p in hits)
        return Output(text, status=0 if hits else 1)

    def _pkill(self, argv: list[str], ctx: _Ctx) -> Output:
        hits = self._matching(argv)
        for p in hits:
            self.host.kill(p.pid)
        return Output(status=0 if hits else 1)

    def _kill(self, argv: list[str], ctx: _Ctx) -> Output:
        args = argv[1:]
        check_only = False
        if args and args[0] in ("-s", "-n") and len(args) > 1:
            check_only, args = args[1] == "0", args[2:]
        elif args and args[0].startswith("-") and args[0] != "--":
            check_only, args = args[0] == "-0", args[1:]
        if not args:
            return Output(
                stderr="kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | "
                "jobspec ... or kill -l [sigspec]\n",
                status=2,
            )
        err, status = [], 0
        base = {pid for pid, *_ in BASE_PROCESSES}
        for word in args:
            if not word.isdigit():
                err.append(f"bash: kill: {word}: arguments must be process or job IDs\n")
                status = 1
                continue
            pid = int(word)
            if pid in base:
                if not check_only or self.host.user != "root":
                    err.append(f"bash: kill: ({pid}) - Operation not permitted\n")
                    status = 1
                continue
            with self.host.lock:
                alive = pid in self.host.procs
            if not alive or (not check_only and not self.host.kill(pid)):
                err.append(f"bash: kill: ({pid}) - No such process\n")
                status = 1
        return Output(stderr="".join(err), status=status)

    def _ss(self, argv: list[str], ctx: _Ctx) -> Output:
        """``ss -ltn ['sport = :PORT']``: sshd and the perftest servers' TCP listeners."""
        text = " ".join(argv[1:])
        want = re.search(r"sport\s*(?:=|==|eq)\s*:(\d+)", text)
        listeners = [("0.0.0.0", 22, 128), ("[::]", 22, 128)]
        with self.host.lock:
            listeners += [
                ("0.0.0.0", p.listen_port, 1)
                for p in self.host.procs.values()
                if p.listen_port is not None
            ]
        if want:
            listeners = [x for x in listeners if x[1] == int(want.group(1))]
        lines = ["State  Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess"]
        for addr, port, backlog in listeners:
            peer = "[::]:*" if addr.startswith("[") else "0.0.0.0:*"
            local = f"{addr}:{port}"
            lines.append(f"LISTEN 0      {backlog:<6} {local:>18} {peer:>18}")
        return Output("\n".join(lines) + "\n")

    # --- NIC inventory and counters -------------------------------------------------------

    def _ports(self) -> list[nic_text.PortNow]:
        fabric = self.host.fabric
        fabric.now_s()  # the model is brought up to date before anything is read
        return [nic_text.port_now(fabric, self.host.name, nic) for nic in self.host.nics]

    def _port_by_netdev(self, netdev: str) -> nic_text.PortNow | None:
        nic = self.host.nic_by_netdev(netdev)
        if nic is None:
            return None
        self.host.fabric.now_s()
        return nic_text.port_now(self.host.fabric, self.host.name, nic)

    def _pfc(self) -> tuple[int, ...]:
        settings = TrafficSettings.model_validate(self.host.device.vars)
        return tuple(sorted(settings.pfc_priorities))

    def _ethtool_counters(self, now: nic_text.PortNow) -> dict[str, int]:
        return nic_text.ethtool_counters(self.host.fabric, self.host.name, now, self._pfc())

    def _ip(self, argv: list[str], ctx: _Ctx) -> Output:
        words = argv[1:]
        flags = set()
        while words and words[0].startswith("-"):
            flags.add(words.pop(0).lstrip("-"))
        json_out = bool({"j", "json"} & flags) or any(f.startswith("j") for f in flags)
        stats = "s" in flags or "stats" in flags
        if not words:
            return Output(stderr="Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n", status=255)
        obj = words[0]
        addresses = "address".startswith(obj) or obj == "a"
        if not (addresses or "link".startswith(obj)):
            return Output(stderr=f'Object "{obj}" is unknown, try "ip help".\n', status=1)
        rest = [w for w in words[1:] if w not in ("show", "list", "dev")]
        ports = self._ports()
        if rest:
            ports = [p for p in ports if p.nic.netdev == rest[0]]
            if not ports and rest[0] != "lo":
                return Output(stderr=f'Device "{rest[0]}" does not exist.\n', status=1)
        counters = (
            {p.nic.netdev: nic_text.stats64(self._ethtool_counters(p)) for p in ports}
            if stats
            else {}
        )
        text = nic_text.ip_json(ports, addresses, counters)
        data = json.loads(text)
        if rest:
            data = [d for d in data if d["ifname"] == rest[0]]
        if json_out:
            return Output(json.dumps(data, separators=(",", ":")) + "\n")
        return Output(_ip_text(data, addresses))

    def _ethtool(self, argv: list[str], ctx: _Ctx) -> Output:
        words = argv[1:]
        if not words:
            return Output(
                stderr="ethtool: bad command line argument(s)\nFor more information "
                "run ethtool -h\n",
                status=1,
            )
        option = words[0] if words[0].startswith("-") else ""
        netdev = words[1] if option and len(words) > 1 else words[0]
        now = self._port_by_netdev(netdev)
        if now is None:
            return Output(
                stderr="netlink error: no device matches name (offset 24)\n"
                "netlink error: No such device\n",
                status=1,
            )
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        if option in ("-S", "--statistics"):
            return Output(nic_text.ethtool_stats_text(self._ethtool_counters(now)))
        if option in ("-m", "--dump-module-eeprom", "--module-info"):
            return self._module(now)
        if option in ("-i", "--driver"):
            return Output(nic_text.ethtool_driver_text(now, fw))
        if option == "--show-fec":
            return Output(
                f"FEC parameters for {netdev}:\nSupported/Configured FEC encodings: "
                "RS\nActive FEC encoding: RS\n"
            )
        if option:
            return Output(
                stderr="ethtool: bad command line argument(s)\n"
                "For more information run ethtool -h\n",
                status=1,
            )
        return Output(nic_text.ethtool_settings_text(now))

    def _module(self, now: nic_text.PortNow) -> Output:
        fabric, host = self.host.fabric, self.host.name
        inv = fabric.transceiver(host, now.nic.port)
        if not inv.present:
            return Output(
                stderr="netlink error: Failed to get module EEPROM information\n"
                "netlink error: Input/output error\n",
                status=1,
            )
        dom = fabric.dom(host, now.nic.port)
        thresholds = fabric.dom_thresholds(host, now.nic.port)
        flags = fabric.dom_flags(host, now.nic.port, clear=True)
        return Output(nic_text.ethtool_module_text(inv, dom, thresholds, flags, DARK_DBM))

    def _rdma(self, argv: list[str], ctx: _Ctx) -> Output:
        flags = {w.lstrip("-") for w in argv[1:] if w.startswith("-")}
        words = [w for w in argv[1:] if not w.startswith("-")]
        as_json = bool({"j", "json"} & flags)
        pretty = bool({"p", "pretty"} & flags)
        if not words:
            return Output(stderr="Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\n", status=1)
        obj, rest = words[0], [w for w in words[1:] if w not in ("show", "list")]
        ports = self._ports()
        if rest and rest[0] == "link":
            rest = rest[1:]
        if rest:
            name, _, port = rest[0].partition("/")
            ports = [
                p for p in ports if p.nic.rdma == name and (not port or str(p.nic.ib_port) == port)
            ]
            if not ports:
                return Output(stderr="Wrong device name\n", status=1)
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        if "link".startswith(obj):
            if as_json:
                data = [
                    {
                        "ifindex": i,
                        "ifname": p.nic.rdma,
                        "port": p.nic.ib_port,
                        "state": nic_text._states(p)[0],
                        "physical_state": nic_text._states(p)[1],
                        "netdev": p.nic.netdev,
                        "netdev_index": p.nic.ifindex,
                    }
                    for i, p in enumerate(ports)
                ]
                return Output(json.dumps(data, separators=(",", ":")) + "\n")
            return Output(nic_text.rdma_link_text(ports))
        if "dev".startswith(obj):
            return Output(nic_text.rdma_dev_text(ports, fw))
        if "statistic".startswith(obj) and len(obj) >= 4:
            rows = [(p.nic, nic_text.hw_counters(self.host.fabric, p)) for p in ports]
            if as_json:
                data = [{"ifname": n.rdma, "port": n.ib_port, **c} for n, c in rows]
                return Output(json.dumps(data, separators=(",", ":")) + "\n")
            return Output(nic_text.rdma_statistic_text(rows, pretty))
        return Output(stderr=f'Unknown object "{obj}"\n', status=1)

    def _ibv_devinfo(self, argv: list[str], ctx: _Ctx) -> Output:
        verbose = any(a.startswith("-v") or a == "--verbose" for a in argv[1:])
        device = None
        if "-d" in argv and argv.index("-d") + 1 < len(argv):
            device = argv[argv.index("-d") + 1]
        ports = self._ports()
        if "-l" in argv or "--list" in argv:
            n = len(ports)
            return Output(
                f"{n} HCA{'s' if n != 1 else ''} found:\n"
                + "".join(f"\t{p.nic.rdma}\n" for p in ports)
            )
        if device and not any(p.nic.rdma == device for p in ports):
            return Output(stderr=f"IB device '{device}' wasn't found\n", status=255)
        if not ports:
            return Output("No IB devices found\n", status=255)
        fw = nic_text.firmware(self.host.fabric, self.host.name, self.host.device)
        return Output(nic_text.ibv_devinfo_text(ports, fw, verbose, device))

    def _ibv_devices(self, argv: list[str], ctx: _Ctx) -> Output:
        rows = "".join(
            f"    {p.nic.rdma:<16}\t{nic_text.node_guid(p.nic.mac).replace(':', '')}\n"
            for p in self._ports()
        )
        return Output(
            "    device          \t   node GUID\n    ------          \t----------------\n" + rows
        )

    def _show_gids(self, argv: list[str], ctx: _Ctx) -> Output:
        ports = self._ports()
        if len(argv) > 1:
            ports = [p for p in ports if p.nic.rdma == argv[1]]
        return Output(nic_text.show_gids_text(ports))

    def _show_counters(self, argv: list[str], ctx: _Ctx) -> Output:
        ports = [p for p in self._ports() if len(argv) < 2 or p.nic.rdma == argv[1]]
        if not ports:
            return Output(stderr="Usage: show_counters <device>\n", status=1)
        out = []
        for p in ports:
            counters = nic_text.hw_counters(self.host.fabric, p) | {"lifespan": 10}
            out.append(
                f"Port {p.nic.ib_port} hw counters:\n"
                + "".join(f"{k}: {counters[k]}\n" for k in sorted(counters))
            )
        return Output("".join(out))

    # --- perftest and nccl-tests ---------------------------------------------------------

    def _perftest(self, argv: list[str], ctx: _Ctx) -> Output:
        tool = posixpath.basename(argv[0])
        args = argv[1:]
        if not self.host.perftest_out_json:
            old = next((a for a in args if a.startswith("--out_json")), None)
            if old is not None:
                return Output(
                    stderr=f"{tool}: unrecognized option '{old}'\n"
                    " Parser function exited with Error\n",
                    status=1,
                )
        try:
            opts = parse_perftest(tool, args)
        except PerftestUsageError as exc:
            return Output(stderr=f"{exc}\n Parser function exited with Error\n", status=1)
        if opts.help:
            text = usage(tool)
            if not self.host.perftest_out_json:
                text = "".join(ln for ln in text.splitlines(keepends=True) if "out_json" not in ln)
            return Output(text, status=1)
        if opts.version:
            return Output("Version: 6.10\n")
        if opts.is_client:
            return run_client(self.host, opts, self.cwd)
        # a server in the foreground: it waits for its client (or a kill), then exits
        sink = Sink(self.host, {1: ("buffer", ""), 2: ("buffer", "")})
        proc = start_server(self.host, opts, " ".join(argv), sink)
        if proc is None:
            return Output(stderr="".join(sink.buffer), status=1)
        proc.done.wait(FOREGROUND_SERVER_MAX_S)
        return Output("".join(sink.buffer), status=0 if not proc.killed else 143)

    def _mpirun(self, argv: list[str], ctx: _Ctx) -> Output:
        if "--version" in argv or "-V" in argv:
            return Output(
                "mpirun (Open MPI) 4.1.7rc1\n\n"
                "Report bugs to https://www.open-mpi.org/community/help/\n"
            )
        opts, rest = mpirun_words(argv)
        bar = "-" * 74 + "\n"
        if not rest:
            return Output(
                stderr=f"{bar}No executable was specified on the mpirun command "
                f"line.\n\nAborting.\n{bar}",
                status=1,
            )
        hosts = list(opts["hosts"])
        if "hostfile" in opts:
            text = self._read(self._path(opts["hostfile"])) or ""
            for line in text.splitlines():
                words = line.split("#")[0].split()
                if words:
                    slots = next((w.split("=")[1] for w in words if w.startswith("slots=")), "1")
                    hosts.append(f"{words[0]}:{slots}")
        if not hosts:
            hosts = [f"localhost:{opts['np'] or 1}"]
        placements, unknown, short = place(hosts, opts["np"], self._mpi_host)
        if unknown is not None:
            return Output(stderr=mpirun_unknown_host(unknown), status=1)
        if short > 0:
            return Output(
                stderr=f"{bar}There are not enough slots available in the system to "
                f"satisfy the {opts['np']}\nslots that were requested by the "
                f"application:\n\n  {rest[0]}\n\nEither request fewer slots for"
                f" your application, or make more slots\navailable for use.\n"
                f"{bar}",
                status=1,
            )
        for host in dict.fromkeys(p.host for p in placements):
            if host is not self.host and not host.fabric.reachable(host.name):
                return Output(stderr=mpirun_unreachable(host.hostname), status=1)
        exe = posixpath.basename(rest[0])
        for p in placements:
            if exe in p.host.missing or (exe not in COLLECTIVES and exe != "hostname"):
                return Output(stderr=mpirun_missing_executable(p.host.hostname, rest[0]), status=1)
        if exe == "hostname":
            return Output("".join(f"{p.host.hostname}\n" * p.slots for p in placements))
        try:
            nopts = parse_nccl(rest[1:])
        except NcclUsageError as exc:
            return Output(stderr=f"Error: {exc}\n", status=1)
        return run_collective(self.host, exe, nopts, placements)

    def _mpi_host(self, name: str) -> HostState | None:
        found = self.host.resolve(name)
        return found[0] if found else None

    def _nccl_local(self, argv: list[str], ctx: _Ctx) -> Output:
        try:
            nopts = parse_nccl(argv[1:])
        except NcclUsageError as exc:
            return Output(stderr=f"Error: {exc}\n", status=1)
        binary = posixpath.basename(argv[0])
        return run_collective(self.host, binary, nopts, [Placement(self.host, 1)])


class _Exit(Output):
    """The ``exit`` builtin's result: the session ends after it."""


_PS_HEADERS = {
    "pid": "PID",
    "ppid": "PPID",
    "comm": "COMMAND",
    "ucomm": "COMMAND",
    "args": "COMMAND",
    "cmd": "CMD",
    "command": "COMMAND",
    "user": "USER",
    "uname": "USER",
    "stat": "STAT",
    "etime": "ELAPSED",
    "tty": "TT",
    "time": "TIME",
}
_PS_RIGHT = {"pid": 7, "ppid": 7}
_PS_LEFT = {
    "user": 8,
    "uname": 8,
    "stat": 4,
    "tty": 8,
    "time": 8,
    "etime": 11,
    "comm": 15,
    "ucomm": 15,
}


def _ps_cell(key: str, value: str, header: bool = False) -> str:
    """procps layout: numbers right-aligned, text left-aligned, the last column unpadded."""
    if key in _PS_RIGHT:
        return value.rjust(_PS_RIGHT[key])
    if key in _PS_LEFT:
        return value.ljust(_PS_LEFT[key])
    return value


def _ip_text(data: list[dict[str, object]], addresses: bool) -> str:
    """``ip link`` / ``ip addr`` without -j, from the same records."""
    out = []
    for d in data:
        flags = ",".join(d["flags"])  # type: ignore[arg-type]
        kind = "loopback" if d["link_type"] == "loopback" else "ether"
        out.append(
            f"{d['ifindex']}: {d['ifname']}: <{flags}> mtu {d['mtu']} qdisc {d['qdisc']} "
            f"state {d['operstate']} mode DEFAULT group default qlen {d['txqlen']}\n"
            f"    link/{kind} {d['address']} brd {d['broadcast']}\n"
        )
        infos = d.get("addr_info", []) if addresses else []
        for a in infos if isinstance(infos, list) else []:
            fam = "inet" if a["family"] == "inet" else "inet6"
            brd = f" brd {a['broadcast']}" if "broadcast" in a else ""
            label = f" {a['label']}" if "label" in a else ""
            out.append(
                f"    {fam} {a['local']}/{a['prefixlen']}{brd} scope {a['scope']}{label}\n"
                "       valid_lft forever preferred_lft forever\n"
            )
    return "".join(out)
