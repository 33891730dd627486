"""A small threaded SSH server that emulated devices plug their CLI into.

Network devices are driven over SSH in two ways: one ``exec`` request per
command, or an interactive shell with a prompt. This server speaks both on
127.0.0.1 (an ephemeral port by default) with real SSH (paramiko), so the SSH
transport and the drivers above it cannot tell an emulated device from a real
one. What the device *answers* lives in a pluggable :class:`CommandHandler`;
each SSH channel (one exec or one shell) gets a fresh handler from the
factory, because per-session state such as a config mode dies with the session
on a real device too.

It can also misbehave on purpose, switchable at runtime through ``mode``:

- ``silent``: accepts connection and auth, then hangs: exec, pty and shell
  requests get no reply (a shell that is already open stops answering). While a
  client waits for such a reply (until it sends anything, closes, or gives up) the
  server holds ``serving``: the lab's clock keeps its wall pace under the client's
  wall-clock timeout, and skips idle time again once nobody waits;
- ``drop``: sends part of the answer, then drops the TCP connection;
- ``legacy-kex``: offers only ``diffie-hellman-group14-sha1`` key exchange,
  like an old switch (paramiko 5 cannot *complete* that exchange, but a client
  refuses at negotiation, before the server would have to);
- ``no-banner``: accepts the TCP connection and never sends the SSH banner;
- ``refuse``: closes every open session and every new TCP connection at once, as a
  rebooting box whose sshd is down does (clients fail fast, they wait on no timeout).

Every socket gets TCP_NODELAY: without it each command costs ~44 ms of
delayed-ACK stall (stack probe, finding 3).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import logging
import queue
import re
import select
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from labtest.emulation.listen import accepted
from labtest.transports.ssh import quiet_paramiko_logs

log = logging.getLogger("labtest.emulation.ssh")

Mode = Literal["normal", "silent", "drop", "legacy-kex", "no-banner", "refuse"]
MODES: tuple[Mode, ...] = ("normal", "silent", "drop", "legacy-kex", "no-banner", "refuse")

LEGACY_KEX = ("diffie-hellman-group14-sha1",)
_CLIENT_CLOSE_WAIT_S = 5.0  # how long an exec worker waits for the client to close its side
_MAX_LINE_BYTES = 64 * 1024
_GONE = (OSError, EOFError, paramiko.SSHException)  # what a vanished client raises
_PEER_POLL_S = 0.05  # how often a silent device looks whether its waiting client moved on


@dataclass(frozen=True)
class CliReply:
    """What a device answers to one command line."""

    output: str
    exit_status: int = 0
    stderr: str = ""  # exec only; a shell (pty) merges it into ``output``
    close: bool = False  # end the shell session after this reply (e.g. ``exit``)


class CommandHandler(Protocol):
    """The CLI behind the SSH server: a prompt and one command at a time."""

    @property
    def prompt(self) -> str: ...

    def run(self, command: str) -> CliReply: ...


HandlerFactory = Callable[[], CommandHandler]


class FunctionHandler:
    """Adapts a plain ``Callable[[str], str]`` into a :class:`CommandHandler`.

    ``exit``/``logout``/``quit`` close the shell, as on most CLIs.
    """

    def __init__(self, function: Callable[[str], str], prompt: str = "switch# ") -> None:
        self._function = function
        self._prompt = prompt

    @property
    def prompt(self) -> str:
        return self._prompt

    def run(self, command: str) -> CliReply:
        if command.strip() in ("exit", "logout", "quit"):
            return CliReply("", close=True)
        return CliReply(self._function(command))


def generate_key(passphrase: str | None = None, kdf_rounds: int = 16) -> tuple[paramiko.PKey, str]:
    """A fresh Ed25519 key and its OpenSSH private-key text (encrypted if a passphrase is given).

    paramiko cannot generate Ed25519 keys itself, and RSA generation is slow.
    ``kdf_rounds`` is the bcrypt cost of the encryption (16, ~0.3 s per load,
    is ssh-keygen's default; tests use 1).
    """
    private = ed25519.Ed25519PrivateKey.generate()
    encryption: serialization.KeySerializationEncryption = serialization.NoEncryption()
    if passphrase:
        encryption = (
            serialization.PrivateFormat.OpenSSH.encryption_builder()
            .kdf_rounds(kdf_rounds)
            .build(passphrase.encode())
        )
    text = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, encryption
    ).decode()
    key = paramiko.Ed25519Key(file_obj=io.StringIO(text), password=passphrase)
    return key, text


class SshServer:
    """An SSH server on ``host`` (127.0.0.1) serving exec and shell through a handler factory."""

    def __init__(
        self,
        handler: HandlerFactory,
        *,
        username: str = "admin",
        password: str | None = None,
        authorized_keys: Sequence[paramiko.PKey] = (),
        host_key: paramiko.PKey | None = None,
        mode: Mode = "normal",
        banner: str = "",
        allow_exec: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        serving: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
        before_answer: Callable[[], None] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
        self.handler = handler
        self.username = username
        self._password = password
        self.authorized_keys = list(authorized_keys)
        self.host_key = host_key or generate_key()[0]
        self.mode: Mode = mode
        self.banner = banner  # sent before the first prompt of a shell (a MOTD)
        self.allow_exec = allow_exec  # some network OSes only offer a shell
        self.host = host
        self.serving = serving  # held while a command is answered (the lab's clock keeps its pace)
        self.before_answer = before_answer  # a busy control plane's wait before each answer
        self._requested_port = port
        self.port = 0
        self.connections = 0  # TCP connections accepted so far (tests check reuse)
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._workers = _Workers(self._stop)  # exec requests: threads kept for the next one
        self._transports: list[paramiko.Transport] = []
        self._raw_sockets: list[socket.socket] = []

    def __repr__(self) -> str:
        return f"SshServer({self.host}:{self.port}, mode={self.mode!r})"

    # --- lifecycle -------------------------------------------------------------

    def start(self) -> SshServer:
        quiet_paramiko_logs()  # a vanished client is not worth a traceback on the terminal
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self._requested_port))
        listener.listen(64)
        listener.settimeout(0.1)  # the accept loop polls the stop flag
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._stop.clear()
        self._spawn(self._accept_loop, "ssh-accept")
        log.debug("ssh server listening on %s:%d", self.host, self.port)
        return self

    def refuse(self) -> None:
        """Go into ``refuse`` mode: every open session is closed now (a reboot's RST)."""
        self.mode = "refuse"
        with self._lock:
            transports, self._transports = self._transports, []
        for transport in transports:
            transport.close()

    def stop(self, timeout_s: float = 3.0) -> None:
        """Close every socket and wait (bounded) for every thread."""
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            transports, self._transports = self._transports, []
            raw, self._raw_sockets = self._raw_sockets, []
            threads, self._threads = self._threads, []
        for transport in transports:
            transport.close()
        for sock in raw:
            sock.close()
        threads += self._workers.stop()
        for thread in threads:
            thread.join(timeout=timeout_s / max(len(threads), 1))
        for transport in transports:
            transport.join(timeout=0.5)

    def __enter__(self) -> SshServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what clients need to trust us -----------------------------------------

    @property
    def host_key_name(self) -> str:
        """The known_hosts host pattern for this server (``[host]:port`` off port 22)."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def known_hosts_line(self) -> str:
        return f"{self.host_key_name} {self.host_key.get_name()} {self.host_key.get_base64()}\n"

    def write_known_hosts(self, path: str | Path) -> None:
        with open(path, "a", encoding="ascii") as out:
            out.write(self.known_hosts_line())

    # --- threads -----------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        for sock in accepted(self._listener, self._stop):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections += 1
            if self.mode == "refuse":
                sock.close()
                continue
            if self.mode == "no-banner":
                with self._lock:
                    self._raw_sockets.append(sock)
                continue
            self._spawn(self._serve_connection, "ssh-conn", sock)

    def _serve_connection(self, sock: socket.socket) -> None:
        transport = paramiko.Transport(sock)
        transport.add_server_key(self.host_key)
        if self.mode == "legacy-kex":
            # Not settable through SecurityOptions (paramiko 5 dropped SHA-1 kex),
            # so override what this one transport advertises in its KEXINIT.
            transport._preferred_kex = LEGACY_KEX
        with self._lock:
            if self._stop.is_set():
                transport.close()
                return
            self._transports.append(transport)
        try:
            transport.start_server(server=_Interface(self, transport))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            # clients that drop mid-handshake or refuse our algorithms end up here
            log.debug("ssh handshake ended: %s", exc)

    # --- sessions ----------------------------------------------------------------

    def check_password(self, username: str, password: str) -> bool:
        if self._password is None or username != self.username:
            return False
        return hmac.compare_digest(password.encode(), self._password.encode())

    def check_key(self, username: str, key: paramiko.PKey) -> bool:
        return username == self.username and any(
            key.get_name() == k.get_name() and key.get_base64() == k.get_base64()
            for k in self.authorized_keys
        )

    def serve_exec(
        self, transport: paramiko.Transport, channel: paramiko.Channel, command: str
    ) -> None:
        if self.before_answer is not None:
            self.before_answer()
        with self.serving():
            reply = self.handler().run(command)
        try:
            if self.mode == "drop":
                channel.sendall(reply.output[: len(reply.output) // 2].encode())
                _drop(transport)
                return
            channel.sendall(reply.output.encode())
            if reply.stderr:
                channel.sendall_stderr(reply.stderr.encode())
            channel.send_exit_status(reply.exit_status)
            channel.shutdown_write()  # EOF
            # paramiko answers the exec request only after check_channel_exec_request
            # returns; closing before the client closed its side races with that
            # reply and the client sees "Channel closed." (stack probe, section 2).
            channel.settimeout(_CLIENT_CLOSE_WAIT_S)
            while channel.recv(1024):
                pass
        except _GONE:
            return  # the client went away (or did not close in time)
        finally:
            _close(channel)

    def serve_shell(self, transport: paramiko.Transport, channel: paramiko.Channel) -> None:
        handler = self.handler()
        waiting = contextlib.ExitStack()  # silent: a line went unanswered, its client waits
        try:
            channel.sendall(_crlf(self.banner) + handler.prompt.encode())
            pending = b""
            while not self._stop.is_set():
                data = channel.recv(4096)
                waiting.close()  # the client spoke again, or left
                if not data:
                    return
                lines, pending = _split_lines(pending + data)
                if len(pending) > _MAX_LINE_BYTES:
                    return
                if self.mode == "silent" and lines:
                    waiting.enter_context(self.serving())
                for raw in lines:
                    if not self._shell_line(
                        transport, channel, handler, raw.decode(errors="replace")
                    ):
                        return
        except _GONE:
            return
        finally:
            waiting.close()
            _close(channel)

    def _shell_line(
        self,
        transport: paramiko.Transport,
        channel: paramiko.Channel,
        handler: CommandHandler,
        line: str,
    ) -> bool:
        """Answer one line like a pty would: echo, output, prompt. False ends the session."""
        if self.mode == "silent":
            return True
        channel.sendall(line.encode() + b"\r\n")
        if not line.strip():
            channel.sendall(handler.prompt.encode())
            return True
        if self.before_answer is not None:
            self.before_answer()
        with self.serving():
            reply = handler.run(line)
        if self.mode == "drop":
            channel.sendall(_crlf(reply.output[: len(reply.output) // 2]))
            _drop(transport)
            return False
        channel.sendall(_crlf(reply.output + reply.stderr))
        if reply.close:
            channel.send_exit_status(reply.exit_status)
            channel.shutdown_write()
            return False
        channel.sendall(handler.prompt.encode())
        return True


class _Workers:
    """Threads that serve exec requests and wait a while for the next one: starting a
    thread per command cost a tenth of the command's CPU (issue 19). A request finding
    no idle thread gets a new one, so a long command never holds up another."""

    IDLE_S = 2.0

    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop
        self._lock = threading.Lock()
        self._idle = 0
        self._tasks: queue.SimpleQueue[tuple[Callable[..., None], tuple[object, ...]] | None] = (
            queue.SimpleQueue())
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[..., None], *args: object) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._tasks.put((fn, args))
                return
            thread = threading.Thread(target=self._work, args=((fn, args),), name="ssh-exec",
                                      daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    @property
    def idle(self) -> int:
        """Threads waiting for the next request."""
        with self._lock:
            return self._idle

    def stop(self) -> list[threading.Thread]:
        """Wake the idle threads to end (the busy ones end after their request)."""
        with self._lock:
            for _ in range(self._idle):
                self._tasks.put(None)
            self._idle = 0
            return list(self._threads)

    def _work(self, task: tuple[Callable[..., None], tuple[object, ...]] | None) -> None:
        while task is not None:
            fn, args = task
            try:
                fn(*args)
            except Exception:  # a worker outlives one request's failure
                log.exception("ssh exec request failed")
            with self._lock:
                if self._stop.is_set():
                    return
                self._idle += 1
            try:
                task = self._tasks.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._lock:  # a request may have counted on us meanwhile
                    try:
                        task = self._tasks.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return


def _split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines ended by CR, LF or CRLF, and the rest; a trailing CR waits for its LF."""
    held = b""
    if buffer.endswith(b"\r"):
        buffer, held = buffer[:-1], b"\r"
    *lines, rest = re.split(rb"\r\n|\r|\n", buffer)
    return lines, rest + held


def _crlf(text: str) -> bytes:
    if text and not text.endswith("\n"):
        text += "\n"
    return text.replace("\r\n", "\n").replace("\n", "\r\n").encode()


def _close(channel: paramiko.Channel) -> None:
    """Close a channel whose connection may already be gone."""
    with contextlib.suppress(*_GONE):
        channel.close()


def _until_readable(sock: socket.socket, stop: threading.Event) -> None:
    """Return once the peer sends anything or closes (a client waiting for a reply sends
    nothing: it gave up), or at stop()."""
    while not stop.is_set():
        try:
            readable, _, _ = select.select([sock], [], [], _PEER_POLL_S)
        except (OSError, ValueError):  # closed under us
            return
        if readable:
            return


def _drop(transport: paramiko.Transport) -> None:
    """Cut the TCP connection under the session, as a crashing device would."""
    with contextlib.suppress(OSError):
        transport.sock.shutdown(socket.SHUT_RDWR)
    transport.close()


class _Interface(paramiko.ServerInterface):
    """paramiko's callbacks for one connection; the work happens in worker threads."""

    def __init__(self, server: SshServer, transport: paramiko.Transport) -> None:
        self._server = server
        self._transport = transport

    def get_allowed_auths(self, username: str) -> str:
        kinds = []
        if self._server.authorized_keys:
            kinds.append("publickey")
        if self._server._password is not None:
            kinds.append("password")
        return ",".join(kinds) or "none"

    def check_auth_password(self, username: str, password: str) -> int:
        ok = self._server.check_password(username, password)
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = self._server.check_key(username, key)
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def _hang_if_silent(self) -> bool:
        """Block this connection's transport thread, as a hung device would, until stop();
        its client waits for the reply until it gives up: ``serving`` is held that long."""
        server = self._server
        if server.mode != "silent":
            return False
        with server.serving():
            _until_readable(self._transport.sock, server._stop)
        server._stop.wait()
        return True

    def check_channel_pty_request(self, *args: object) -> bool:
        return not self._hang_if_silent()

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        if self._hang_if_silent() or not self._server.allow_exec:
            return False
        text = command.decode(errors="replace")
        self._server._workers.submit(self._server.serve_exec, self._transport, channel, text)
        return True

    def check_channel_shell_request(self, channel: paramiko.Channel) -> bool:
        if self._hang_if_silent():
            return False
        self._server._spawn(self._server.serve_shell, "ssh-shell", self._transport, channel)
        return True
