"""Process tools of the emulated host: ``ps``, ``pgrep``, ``pkill``, ``kill``, ``ss``.

A mixin of the session's ``Shell``: it reads and changes the host's process table
(``HostState.procs``), laid out as procps and iproute2 print it.
"""

from __future__ import annotations

import re

from labtest.emulation.personalities.linux.bash import Ctx, Output
from labtest.emulation.personalities.linux.state import BASE_PROCESSES, HostState, Proc


class ProcessTools:
    host: HostState


    def _rows(self) -> list[tuple[int, str, str, str]]:
        """(pid, user, comm, args) of every process, the session's own shell included."""
        with self.host.lock:
            procs = sorted(self.host.procs.values(), key=lambda p: p.pid)
        rows = list(BASE_PROCESSES)
        rows += [(p.pid, p.user, p.comm, p.args) for p in procs]
        return rows

    def _ps(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _pgrep(self, argv: list[str], ctx: Ctx) -> Output:
        hits = self._matching(argv)
        if "-a" in argv:
            text = "".join(f"{p.pid} {p.args}\n" for p in hits)
        elif "-l" in argv:
            text = "".join(f"{p.pid} {p.comm}\n" for p in hits)
        else:
            text = "".join(f"{p.pid}\n" for p in hits)
        return Output(text, status=0 if hits else 1)

    def _pkill(self, argv: list[str], ctx: Ctx) -> Output:
        hits = self._matching(argv)
        for p in hits:
            self.host.kill(p.pid)
        return Output(status=0 if hits else 1)

    def _kill(self, argv: list[str], ctx: Ctx) -> Output:
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

    def _ss(self, argv: list[str], ctx: Ctx) -> Output:
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

