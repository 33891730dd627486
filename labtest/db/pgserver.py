"""A throwaway PostgreSQL server for tests and benches: a temp dir, 127.0.0.1, a private port.

Uses the Debian ``postgresql`` package's binaries (``/usr/lib/postgresql/*/bin``).
PostgreSQL refuses to run as root, so as root the server runs as the
``postgres`` user (the package creates it) over a data directory chowned to it;
as any other user it runs as that user. The unix socket lives in the temp dir,
TCP listens on 127.0.0.1 only, authentication is ``trust`` for local
connections. :meth:`stop` ends the postmaster by its PID and removes the dir.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "postgresql"  # the Debian package that provides the server
START_TIMEOUT_S = 60.0


class ServerUnavailable(RuntimeError):
    """No server can be started here (package missing, no user to run it as); says why."""


def binaries() -> Path | None:
    """The newest installed ``.../bin`` holding ``initdb`` and ``postgres``, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name
                   .isdigit() else 0)
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """One private server; ``url`` connects as the superuser ``labtest`` to database ``labtest``."""

    def __init__(self, fsync: bool = False) -> None:
        found = binaries()
        if found is None:
            raise ServerUnavailable(f"no PostgreSQL server installed (Debian package {PACKAGE})")
        self.bin: Path = found
        self.uid: int | None = None
        self.gid: int | None = None
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:
                raise ServerUnavailable(
                    f"running as root and no 'postgres' user to run the server as "
                    f"(Debian package {PACKAGE} creates it)") from None
            self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.fsync = fsync
        self.dir = Path(tempfile.mkdtemp(prefix="labtest-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = f"postgresql://labtest@127.0.0.1:{self.port}/labtest"

    def _run(self, *cmd: str) -> None:
        done = subprocess.run(cmd, user=self.uid, group=self.gid, extra_groups=[]
                              if self.uid is not None else None,
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise ServerUnavailable(f"{cmd[0]} failed: {(done.stderr or done.stdout).strip()}")

    def start(self) -> LocalServer:
        if self.uid is not None:
            os.chown(self.dir, self.uid, self.gid if self.gid is not None else -1)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "labtest", "-A", "trust",
                  "-E", "UTF8", "--no-sync", "--no-instructions")
        cmd = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
               "-h", "127.0.0.1", "-k", str(self.dir),
               "-c", f"fsync={'on' if self.fsync else 'off'}",
               "-c", "max_connections=200", "-c", "shared_buffers=32MB",
               "-c", "logging_collector=off", "-c", "log_min_messages=warning"]
        log = open(self.dir / "server.log", "wb")  # noqa: SIM115 - the server's lifetime
        try:
            self.proc = subprocess.Popen(
                cmd, user=self.uid, group=self.gid,
                extra_groups=[] if self.uid is not None else None,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()
        self._wait_ready()
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "labtest", "labtest")
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerUnavailable(f"postgres exited at start: {self.log_tail()}")
            ready = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
                check=False, timeout=10)
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        self.stop()
        raise ServerUnavailable(f"postgres not ready after {START_TIMEOUT_S:g} s")

    def log_tail(self, lines: int = 5) -> str:
        with contextlib.suppress(OSError):
            return " | ".join((self.dir / "server.log").read_text().splitlines()[-lines:])
        return ""

    def new_database(self, name: str) -> str:
        """A fresh empty database on this server; its URL."""
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "labtest", name)
        return f"postgresql://labtest@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Fast shutdown of the postmaster (by its PID), then remove the temp dir."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown: ends sessions, checkpoints
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def database(url: str | None, fsync: bool = True) -> Iterator[str]:
    """``url`` as given, or a private server's for the block (stopped after): the benches'
    ``--url`` default, so each does not start and stop its own."""
    if url is not None:
        yield url
        return
    with LocalServer(fsync=fsync) as server:
        yield server.url
