"""The emulated host's bash session: one SSH command line parsed (``bash``) and run.

See the package docstring for what a host answers."""

from __future__ import annotations

import fnmatch
import logging
import posixpath
import re
import threading
from collections.abc import Callable

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities._clock import date_output, epoch_s
from labtest.emulation.personalities.linux import iperf, probe
from labtest.emulation.personalities.linux import nic as nic_text
from labtest.emulation.personalities.linux.bash import (
    Command,
    Ctx,
    Output,
    ShellSyntaxError,
    Word,
    grep,
    head_tail,
    parse,
    wc,
)
from labtest.emulation.personalities.linux.nictools import NicTools
from labtest.emulation.personalities.linux.procs import ProcessTools
from labtest.emulation.personalities.linux.runs import (
    Placement,
    mpirun_words,
    place,
    run_client,
    run_collective,
    start_server,
)
from labtest.emulation.personalities.linux.state import (
    HostState,
    Proc,
    Sink,
    register,
)
from labtest.emulation.personalities.linux.tools import (
    COLLECTIVES,
    MPI_BAR,
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
            "iperf3",
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


class Shell(ProcessTools, NicTools):
    """One SSH channel's bash (a CommandHandler); state that outlives it is in HostState."""

    def __init__(self, host: HostState) -> None:
        self.host = host
        self.home = "/root" if host.user == "root" else f"/home/{host.user}"
        self.cwd = self.home
        self.last_bg: int | None = None
        self.status = 0
        self._sysfs: dict[str, str | None] | None = None

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
        result = self._exec(argv, Ctx(stdin=stdin, env=dict(cmd.env)))
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
        if tool == "iperf3" and self._available(core[0]) is None and iperf.is_server(core):
            server = iperf.start_server(self.host, core, sink)
            self.last_bg = server.pid if server else self.host.new_pid()
            return Output()
        proc = self.host.spawn(tool, " ".join(core), sink)
        self.last_bg = proc.pid
        ctx = Ctx(stdin=stdin, env=dict(cmd.env))
        thread = threading.Thread(
            target=self._run_background,
            args=(proc, core, ctx),
            name=f"bg-{self.host.name}-{proc.pid}",
            daemon=True,
        )
        thread.start()
        return Output()

    def _run_background(self, proc: Proc, argv: list[str], ctx: Ctx) -> None:
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

    def _exec(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _handlers(self) -> dict[str, Callable[[list[str], Ctx], Output]]:
        table: dict[str, Callable[[list[str], Ctx], Output]] = {
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
            "traceroute": lambda a, c: probe.traceroute(self.host, a, self.host.rng),
            "iperf3": lambda a, c: iperf.run(self.host, a),
        }
        table |= dict.fromkeys(TOOLS, self._perftest)
        table |= dict.fromkeys(COLLECTIVES, self._nccl_local)
        return table

    # --- builtins and coreutils -------------------------------------------------------------

    def _cd(self, argv: list[str], ctx: Ctx) -> Output:
        target = self._path(argv[1]) if len(argv) > 1 else self.home
        if not self._is_dir(target):
            return Output(stderr=f"bash: cd: {argv[1]}: No such file or directory\n", status=1)
        self.cwd = target
        return Output()

    def _echo(self, argv: list[str], ctx: Ctx) -> Output:
        args = argv[1:]
        newline = "\n"
        if args and args[0] == "-n":
            args, newline = args[1:], ""
        return Output(" ".join(args) + newline)

    def _exit(self, argv: list[str], ctx: Ctx) -> Output:
        code = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else self.status
        return _Exit(status=code)

    def _command(self, argv: list[str], ctx: Ctx) -> Output:
        if len(argv) > 2 and argv[1] in ("-v", "-V"):
            return self._which(["which", *argv[2:]], ctx, builtin_names=True)
        return self._exec(argv[1:], ctx) if len(argv) > 1 else Output()

    def _which(self, argv: list[str], ctx: Ctx, builtin_names: bool = False) -> Output:
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

    def _type(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _id(self, argv: list[str], ctx: Ctx) -> Output:
        uid = 0 if self.host.user == "root" else 1000
        return Output(
            f"uid={uid}({self.host.user}) gid={uid}({self.host.user}) "
            f"groups={uid}({self.host.user})\n"
        )

    def _uname(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _date(self, argv: list[str], ctx: Ctx) -> Output:
        """The host's clock at the fabric's pace (its NIC counters run on it too)."""
        out, err, status = date_output(argv[1:], epoch_s(self.host.fabric))
        return Output(out, err, status)

    def _sleep(self, argv: list[str], ctx: Ctx) -> Output:
        try:
            seconds = float(argv[1].rstrip("s"))
        except (IndexError, ValueError):
            return Output(stderr="sleep: missing operand\n", status=1)
        self.host.stopped.wait(min(seconds, MAX_SLEEP_S))
        return Output()

    def _cat(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _grep(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _head(self, argv: list[str], ctx: Ctx) -> Output:
        return head_tail(argv, self._input(argv, ctx), tail=False)

    def _tail(self, argv: list[str], ctx: Ctx) -> Output:
        return head_tail(argv, self._input(argv, ctx), tail=True)

    def _input(self, argv: list[str], ctx: Ctx) -> str:
        files = [a for a in argv[1:] if not a.startswith("-") and not a.isdigit()]
        if files:
            return self._read(self._path(files[-1])) or ""
        return ctx.stdin

    def _ls(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _rm(self, argv: list[str], ctx: Ctx) -> Output:
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

    # --- perftest and nccl-tests ---------------------------------------------------------

    def _perftest(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _mpirun(self, argv: list[str], ctx: Ctx) -> Output:
        if "--version" in argv or "-V" in argv:
            return Output(
                "mpirun (Open MPI) 4.1.7rc1\n\n"
                "Report bugs to https://www.open-mpi.org/community/help/\n"
            )
        opts, rest = mpirun_words(argv)
        if not rest:
            return Output(
                stderr=f"{MPI_BAR}No executable was specified on the mpirun command "
                f"line.\n\nAborting.\n{MPI_BAR}",
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
                stderr=f"{MPI_BAR}There are not enough slots available in the system to "
                f"satisfy the {opts['np']}\nslots that were requested by the "
                f"application:\n\n  {rest[0]}\n\nEither request fewer slots for"
                f" your application, or make more slots\navailable for use.\n"
                f"{MPI_BAR}",
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

    def _nccl_local(self, argv: list[str], ctx: Ctx) -> Output:
        try:
            nopts = parse_nccl(argv[1:])
        except NcclUsageError as exc:
            return Output(stderr=f"Error: {exc}\n", status=1)
        binary = posixpath.basename(argv[0])
        return run_collective(self.host, binary, nopts, [Placement(self.host, 1)])


class _Exit(Output):
    """The ``exit`` builtin's result: the session ends after it."""

