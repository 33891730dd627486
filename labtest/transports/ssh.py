"""SSH transport: one persistent paramiko connection per device.

Drivers run commands two ways: :meth:`SshTransport.exec` (one SSH channel per
command, with exit status and stderr) and :meth:`SshTransport.shell` (one
interactive session, output cut at the device's prompt), which is the only
way some network OSes can be driven and is ~80x cheaper than exec against
OpenSSH (stack probe, section 2).

Why the code looks the way it does:

- paramiko never sets TCP_NODELAY; without it every command stalls ~44 ms on
  delayed ACKs, so we open the socket ourselves (stack probe, finding 3).
- paramiko waits without a timeout for replies to exec/pty/shell requests, so
  those waits run under a watchdog that closes the channel at the deadline:
  a peer that accepts and then stays silent can never hang a test (ssh_channel.py).
- Host keys are checked here rather than through ``SSHClient``: ``accept-new``
  appends one line to known_hosts (``SSHClient`` would rewrite the whole user
  file), and a changed key is refused whatever the policy.
- known_hosts is read line by line (known_hosts.py): paramiko raises a bare ``Exception``
  on valid OpenSSH lines it does not know (``@cert-authority``, ``@revoked``),
  which would break every device. Such lines are skipped with one warning per
  file; a key on a ``@revoked`` line is refused for every host.
- Every paramiko failure becomes a typed :class:`TransportError` (the test is
  *broken*, not *failed*); paramiko's own thread tracebacks go to the log at
  debug level instead of the terminal.
- OpenSSH does not signal a command started without a terminal when its
  channel closes, so a timed-out command would keep running. On a POSIX shell
  (``process_group=True``) each command first reports its shell's PID, which
  sshd made a session and process-group leader, and a timeout kills that
  group through a second channel.
- paramiko 5 dropped SHA-1 key exchange; old switches that offer nothing else
  get :class:`LegacyAlgorithms` naming what they offered and the fix.
- Every message goes through :func:`labtest.secrets.redact` and settings are
  never formatted into one, so passwords and passphrases cannot leak.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import paramiko

from labtest.errors import (
    AuthFailed,
    ConnectionRefused,
    HostKeyMismatch,
    HostKeyRevoked,
    HostKeyUnknown,
    LegacyAlgorithms,
    ProtocolError,
    TransportError,
    TransportTimeout,
)
from labtest.secrets import redact, register
from labtest.testbed.model import SshSettings
from labtest.transports.closing import ClosedOnExit
from labtest.transports.known_hosts import (
    KnownHosts,
    KnownKeys,
    append_known_host,
    parse_known_hosts,
    prefer_key_types,
    warn_skipped,
)
from labtest.transports.ssh_channel import (
    Watchdog,
    clean,
    lf_text,
    pump,
    read_until_prompt,
    remaining,
    strip_echo,
    take_marker,
    wait_marker,
)

log = logging.getLogger("labtest.transport.ssh")


class _QuietParamiko(logging.Filter):
    """Demote paramiko's transport records to DEBUG: its thread tracebacks and "Socket
    exception" lines belong in the log file, and the failure reaches the caller typed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG:
            record.msg = f"({record.levelname.lower()}) {record.msg}"
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def quiet_paramiko_logs() -> None:
    """Install the demotion on paramiko's loggers (idempotent; clients and the emulator)."""
    for name in ("paramiko.transport", "paramiko.transport.sftp", "paramiko.hostkeys"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietParamiko) for f in logger.filters):
            logger.addFilter(_QuietParamiko())


quiet_paramiko_logs()

#: called after every command: (command, output, exit_status, duration_s, stderr); for
#: record/replay (stderr matters: refusals such as "Error: No such command" arrive there)
Recorder = Callable[[str, str, int | None, float, str], None]

E = TypeVar("E", bound=TransportError)

_PSEUDO_KEX = ("ext-info-", "kex-strict-")
_PTY_WIDTH, _PTY_HEIGHT = 511, 1000  # wide and tall: no wrapped lines, fewer pagers
_STOP_TIMEOUT_S = 5.0  # bound on killing a timed-out command's process group
#: how long a timed-out grouped command may still take to name its process group (the
#: wrapper's first line): a loaded host started the shell later than the command's timeout
_MARKER_GRACE_S = 5.0


@dataclass(frozen=True)
class CommandResult:
    """What one exec returned; ``exit_status`` is None when the device sent none."""

    stdout: str
    stderr: str
    exit_status: int | None
    duration_s: float


class SshTransport(ClosedOnExit):
    """One device's SSH connection, opened on first use and reopened after a drop."""

    def __init__(
        self,
        device_name: str,
        address: str,
        settings: SshSettings,
        *,
        recorder: Recorder | None = None,
        process_group: bool = False,
    ) -> None:
        self.device = device_name
        self.address = address
        self.settings = settings
        self.recorder = recorder
        #: the device runs exec commands in a POSIX shell: kill a timed-out one's process group
        self.process_group = process_group
        self._marker = f"labtest-pgid-{secrets.token_hex(4)}:"
        self.prompt_re = re.compile(settings.prompt)
        self._transport: paramiko.Transport | None = None
        self._lock = threading.RLock()
        for secret in (settings.password, settings.passphrase):
            if secret is not None:
                register(secret.get_secret_value())

    def __repr__(self) -> str:
        return f"SshTransport({self.device!r}, {self.endpoint})"

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{self.settings.port}"

    @property
    def host_key_name(self) -> str:
        """The known_hosts name of the device (``[address]:port`` off port 22)."""
        port = self.settings.port
        return self.address if port == 22 else f"[{self.address}]:{port}"

    @property
    def known_hosts_path(self) -> Path:
        return (self.settings.known_hosts or Path("~/.ssh/known_hosts")).expanduser()

    # --- connection ----------------------------------------------------------------

    def connect(self) -> None:
        """Open the connection now (it is otherwise opened by the first command)."""
        self._connected()

    def close(self) -> None:
        with self._lock:
            if self._transport is not None:
                self._transport.close()
                self._transport = None

    def _discard(self, transport: paramiko.Transport) -> None:
        """Drop a connection that misbehaved, so the next command reconnects."""
        with self._lock:
            if self._transport is transport:
                self._transport = None
        transport.close()

    def _connected(self) -> paramiko.Transport:
        with self._lock:
            if self._transport is not None and self._transport.is_active():
                return self._transport
            if self._transport is not None:
                log.info("%s: connection to %s lost, reconnecting", self.device, self.endpoint)
                self._transport.close()
                self._transport = None
            with self._typed_errors("connecting"):
                self._transport = self._open()
            return self._transport

    @contextlib.contextmanager
    def _typed_errors(self, doing: str) -> Iterator[None]:
        """Turn any untyped paramiko (or socket) failure into a typed TransportError."""
        try:
            yield
        except TransportError:
            raise
        except Exception as exc:
            if not _from_paramiko(exc):
                raise  # our own bug: keep its traceback
            kind, what = paramiko_error(exc)
            raise self._error(kind, f"{doing} {self.endpoint}: {what}") from exc

    def _open(self) -> paramiko.Transport:
        start = time.monotonic()
        deadline = start + self.settings.timeout_s
        hosts = self._known_hosts()
        known = hosts.keys.lookup(self.host_key_name)
        transport = self._handshake(self._tcp(deadline), deadline, known)
        try:
            self._check_host_key(transport, known, hosts.revoked)
            self._authenticate(transport, deadline)
        except BaseException:
            transport.close()
            raise
        log.info(
            "%s: connected to %s as %s in %.1f ms",
            self.device,
            self.endpoint,
            self.settings.username,
            (time.monotonic() - start) * 1e3,
        )
        return transport

    def _tcp(self, deadline: float) -> socket.socket:
        port = self.settings.port
        try:
            sock = socket.create_connection((self.address, port), timeout=remaining(deadline))
        except ConnectionRefusedError:
            raise self._error(
                ConnectionRefused,
                f"{self.endpoint} refused the connection (is SSH on port {port}?)",
            ) from None
        except TimeoutError:
            raise self._error(
                TransportTimeout,
                f"no TCP connection to {self.endpoint} within {self.settings.timeout_s:g} s",
            ) from None
        except OSError as exc:
            raise self._error(
                ConnectionRefused, f"cannot reach {self.endpoint}: {exc.strerror or exc}"
            ) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _handshake(
        self, sock: socket.socket, deadline: float, known: KnownKeys | None
    ) -> paramiko.Transport:
        transport = _ClientTransport(sock)
        transport.banner_timeout = transport.handshake_timeout = remaining(deadline)
        prefer_key_types(transport, known)
        done = threading.Event()  # set by paramiko on success and on failure
        transport.start_client(event=done)
        done.wait(remaining(deadline))
        if done.is_set() and transport.is_active():
            return transport
        cause = transport.get_exception()
        transport.close()
        raise self._handshake_error(cause, transport) from None

    def _handshake_error(self, cause: Exception | None, transport: _ClientTransport) -> Exception:
        where = self.endpoint
        if isinstance(cause, paramiko.IncompatiblePeer):
            if "kex" not in str(cause):
                return self._error(
                    LegacyAlgorithms, f"{where} offers only algorithms paramiko 5 refuses: {cause}"
                )
            offered = ", ".join(transport.peer_kex) or "unknown"
            return self._error(
                LegacyAlgorithms,
                f"{where} only offers SHA-1 (legacy) key exchange, which paramiko 5 refuses; "
                f"it offered: {offered}. Fix: enable a SHA-2 key exchange on the device "
                "(curve25519-sha256, ecdh-sha2-nistp256 or diffie-hellman-group14-sha256), "
                "usually in its SSH server settings or by a firmware upgrade",
            )
        if cause is None or isinstance(cause.__context__, TimeoutError):
            return self._error(
                TransportTimeout,
                f"{where} accepted TCP but completed no SSH handshake within "
                f"{self.settings.timeout_s:g} s",
            )
        if isinstance(cause, EOFError) or isinstance(cause.__context__, EOFError):
            return self._error(ProtocolError, f"{where} closed the connection during the handshake")
        return self._error(ProtocolError, f"SSH handshake with {where} failed: {cause!r}")

    # --- host keys -------------------------------------------------------------------

    def _known_hosts(self) -> KnownHosts:
        path = self.known_hosts_path
        if not path.exists():
            return KnownHosts(paramiko.HostKeys(), [], [])
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise self._error(
                HostKeyUnknown, f"cannot read {path}: {exc.strerror or exc}"
            ) from None
        hosts = parse_known_hosts(text)
        warn_skipped(path, hosts.skipped)
        return hosts

    def _check_host_key(
        self,
        transport: paramiko.Transport,
        recorded: KnownKeys | None,
        revoked: list[paramiko.PKey] | tuple[paramiko.PKey, ...] = (),
    ) -> None:
        key = transport.get_remote_server_key()
        name, path = self.host_key_name, self.known_hosts_path
        if key in revoked:
            raise self._error(
                HostKeyRevoked,
                f"host key of {name} ({key.get_name()} {key.fingerprint}) is marked @revoked "
                f"in {path}; refusing to connect",
            )
        if recorded is None:
            if self.settings.host_key_policy != "accept-new":
                raise self._error(
                    HostKeyUnknown,
                    f"host key of {name} ({key.get_name()} {key.fingerprint}) is not in {path}; "
                    "add it (ssh-keyscan) or set host_key_policy: accept-new",
                )
            append_known_host(path, name, key)
            log.info(
                "%s: added %s %s for %s to %s",
                self.device,
                key.get_name(),
                key.fingerprint,
                name,
                path,
            )
            return
        if recorded.get(key.get_name()) == key:
            return
        expected = ", ".join(f"{k.get_name()} {k.fingerprint}" for k in recorded.values())
        raise self._error(
            HostKeyMismatch,
            f"host key of {name} CHANGED: it presented {key.get_name()} {key.fingerprint}, "
            f"{path} records {expected}; refusing to connect (remove the old line only if the "
            "change is expected)",
        )

    # --- authentication ----------------------------------------------------------------

    def _authenticate(self, transport: paramiko.Transport, deadline: float) -> None:
        s, rejected = self.settings, []
        if s.key_file is not None:
            key = self._load_key(s.key_file)
            if self._try_auth(
                transport, deadline, lambda: transport.auth_publickey(s.username, key)
            ):
                return
            rejected.append(f"key {key.get_name()} {key.fingerprint}")
        if s.password is not None:
            password = s.password.get_secret_value()
            if self._try_auth(
                transport, deadline, lambda: transport.auth_password(s.username, password)
            ):
                return
            rejected.append("password")
        raise self._error(
            AuthFailed,
            f"{self.endpoint} rejected user {s.username!r} ({', '.join(rejected) or 'no method'})",
        )

    def _try_auth(
        self, transport: paramiko.Transport, deadline: float, attempt: Callable[[], object]
    ) -> bool:
        transport.auth_timeout = remaining(deadline)
        try:
            attempt()
        except paramiko.BadAuthenticationType as exc:
            log.info("%s: %s allows only %s", self.device, self.endpoint, exc.allowed_types)
            return False
        except paramiko.AuthenticationException as exc:
            if "timeout" in str(exc).lower():
                raise self._error(
                    TransportTimeout, f"{self.endpoint} did not answer authentication in time"
                ) from None
            if not transport.is_active():
                raise self._error(
                    AuthFailed, f"{self.endpoint} closed the connection during authentication"
                ) from None
            return False
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise self._error(ProtocolError, f"authentication broke off: {exc}") from None
        return bool(transport.is_authenticated())

    def _load_key(self, path: Path) -> paramiko.PKey:
        secret = self.settings.passphrase
        passphrase = secret.get_secret_value().encode() if secret is not None else None
        try:
            return paramiko.PKey.from_path(path.expanduser(), passphrase)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
        except TypeError:
            reason = "it is encrypted and no passphrase is configured"
        except (ValueError, paramiko.SSHException):
            reason = "it cannot be decrypted or parsed (wrong passphrase or not a private key)"
        raise self._error(AuthFailed, f"cannot use key file {path}: {reason}")

    # --- commands -------------------------------------------------------------------

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        """Run one command in its own channel; the timeout bounds the whole exchange."""
        with self._typed_errors(f"exec {command!r} on"):
            return self._exec(command, timeout_s, self.process_group)

    def _exec(
        self, command: str, timeout_s: float | None, grouped: bool, record: bool = True
    ) -> CommandResult:
        timeout = timeout_s if timeout_s is not None else self.settings.command_timeout_s
        transport = self._connected()
        start = time.monotonic()
        deadline = start + timeout
        stdout, stderr = bytearray(), bytearray()
        channel = self._open_channel(transport, timeout)
        failed: Exception | None = None
        wire = f"echo {self._marker}$$ >&2; {command}" if grouped else command
        with channel:
            with Watchdog(channel, remaining(deadline)) as dog:
                try:
                    channel.exec_command(wire)
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    failed = exc  # refused, dropped or timed out: judged below
            # read what arrived (even before a close); after a failed request, don't wait
            pump(channel, stdout, stderr, deadline if failed is None else 0.0)
            cut = not channel.eof_received  # no whole answer by the deadline
            if not cut:
                channel.status_event.wait(remaining(deadline))
            elif grouped and failed is None:
                # timed out before the wrapper's first line (a loaded host starts the shell
                # late): without the group's id the command would run on, so wait for it
                wait_marker(channel, stdout, stderr, self._marker,
                            time.monotonic() + _MARKER_GRACE_S)
        duration = time.monotonic() - start
        leader: int | None = None
        if grouped:
            leader, stderr = take_marker(stderr, self._marker)
        # ``cut``, not eof now: an answer that completed while we waited for the marker is late
        if failed is not None or cut:
            raw = lf_text(stdout) + lf_text(stderr)
            kind: type[TransportError]
            if dog.fired or time.monotonic() >= deadline:
                kind, what = TransportTimeout, f"no complete answer within {timeout:g} s"
                if leader is not None:
                    what += self._stop_group(transport, leader)
            elif isinstance(failed, paramiko.SSHException) and transport.is_active() and not raw:
                # a refusal closes the channel politely; a drop surfaces as EOFError/OSError
                kind, what = ProtocolError, "the device refused the exec request (use shell())"
            else:
                kind, what = ProtocolError, "the device closed the session mid-command"
            self._discard(transport)  # hung, dropped or odd: the next command reconnects
            raise self._error(kind, f"exec {command!r}: {what}", raw=raw)
        status = None if channel.exit_status == -1 else channel.exit_status
        result = CommandResult(lf_text(stdout), lf_text(stderr), status, duration)
        if record:  # our own clean-up is not part of the driver's conversation
            self._done("exec", command, result.stdout, status, duration, result.stderr)
        return result

    def shell(self, timeout_s: float | None = None) -> ShellSession:
        """Open an interactive session (pty + shell) and wait for the first prompt."""
        session = ShellSession(self)
        with self._typed_errors("shell on"):
            session.open(timeout_s)
        return session

    def _stop_group(self, transport: paramiko.Transport, leader: int) -> str:
        """Kill a timed-out command's process group (and session) on the device.

        TERM first so tools such as mpirun can stop their children, KILL what is
        left after about a second. Returns a note for the timeout message.
        """
        p = int(leader)
        # live: a member of the group that is not a zombie (a container's PID 1 may
        # never reap the orphans, and kill -0 counts zombies)
        live = f"ps -e -o pgid= -o stat= | awk '$1 == {p} && $2 !~ /^Z/ {{n++}} END {{exit !n}}'"
        script = (
            f"kill -TERM -{p} 2>/dev/null; pkill -TERM -s {p} 2>/dev/null; i=0; "
            f"while [ $i -lt 10 ] && {live}; do sleep 0.1; i=$((i+1)); done; "
            f"kill -KILL -{p} 2>/dev/null; pkill -KILL -s {p} 2>/dev/null; sleep 0.1; "
            f"if ! command -v ps >/dev/null; then echo unknown; elif {live}; then echo alive; "
            "else echo gone; fi"
        )
        try:
            if not transport.is_active():
                raise ProtocolError(self.device, "connection lost")
            result = self._exec(script, _STOP_TIMEOUT_S, grouped=False, record=False)
        except (TransportError, paramiko.SSHException, EOFError, OSError) as exc:
            log.warning(
                "%s: could not stop process group %d after a timeout: %s", self.device, p, exc
            )
            return f"; could not stop its process group {p} on the device"
        state = result.stdout.strip()
        if state == "unknown":  # no ps on the device: signals sent, outcome not checked
            log.info("%s: sent TERM and KILL to process group %d", self.device, p)
            return f"; sent TERM and KILL to its process group {p} on the device"
        if state != "gone":
            log.warning("%s: process group %d still alive after SIGKILL", self.device, p)
            return f"; its process group {p} survived SIGKILL"
        log.info("%s: stopped process group %d after a timeout", self.device, p)
        return f"; stopped its process group {p} on the device"

    def _open_channel(self, transport: paramiko.Transport, timeout: float) -> paramiko.Channel:
        try:
            return transport.open_session(timeout=timeout)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._discard(transport)
            if "timeout" in str(exc).lower():
                raise self._error(
                    TransportTimeout, f"no session opened within {timeout:g} s"
                ) from None
            raise self._error(ProtocolError, f"cannot open a session: {exc!r}") from None

    def _done(
        self,
        kind: str,
        command: str,
        output: str,
        status: int | None,
        duration_s: float,
        stderr: str = "",
    ) -> None:
        log.debug(
            "%s: %s %r -> exit %s, %d chars in %.2f ms",
            self.device,
            kind,
            redact(command),
            status,
            len(output),
            duration_s * 1e3,
        )
        if self.recorder is not None:
            self.recorder(command, output, status, duration_s, stderr)

    def _error(self, kind: type[E], message: str, raw: str | None = None) -> E:
        error = kind(self.device, redact(message), redact(raw) if raw is not None else None)
        log.warning("%s", error)
        return error


class ShellSession(ClosedOnExit):
    """An interactive CLI session: send a line, get the text up to the next prompt.

    After a drop or a timeout the next :meth:`send` opens a fresh session (and
    connection if needed); session state such as a config mode does not survive.
    """

    def __init__(self, owner: SshTransport) -> None:
        self._owner = owner
        self._channel: paramiko.Channel | None = None
        self.prompt = ""  # the last prompt seen, e.g. "sw1(config)# "
        self.banner = ""  # what the device printed before its first prompt

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def open(self, timeout_s: float | None = None) -> None:
        owner = self._owner
        timeout = timeout_s if timeout_s is not None else owner.settings.timeout_s
        self.close()
        start = time.monotonic()
        channel = owner._open_channel(owner._connected(), timeout)
        suppress = contextlib.suppress(paramiko.SSHException, EOFError, OSError)
        with Watchdog(channel, timeout) as dog, suppress:  # failures judged below
            channel.get_pty(term="vt100", width=_PTY_WIDTH, height=_PTY_HEIGHT)
            channel.invoke_shell()
        data, seen = read_until_prompt(channel, owner.prompt_re, start + timeout)
        if not seen:
            owner._discard(channel.get_transport())
            timed_out = dog.fired or time.monotonic() >= start + timeout
            raise owner._error(
                TransportTimeout if timed_out else ProtocolError,
                f"shell on {owner.endpoint}: no prompt matching {owner.prompt_re.pattern!r}"
                + (f" within {timeout:g} s" if timed_out else " before the session closed"),
                raw=clean(data),
            )
        self._channel = channel
        self.banner, _, self.prompt = clean(data).rpartition("\n")

    def send(self, command: str, timeout_s: float | None = None) -> str:
        """Send one line; return its output without the echo and the prompt, with LF endings."""
        owner = self._owner
        timeout = timeout_s if timeout_s is not None else owner.settings.command_timeout_s
        start = time.monotonic()
        deadline = start + timeout  # one budget for reopening and answering
        if self._channel is None or self._channel.closed:
            with owner._typed_errors("shell on"):
                self.open(timeout)
        channel = self._channel
        assert channel is not None
        while channel.recv_ready():  # stale output from an earlier command
            channel.recv(65536)
        data, seen = b"", False
        try:
            channel.settimeout(remaining(deadline))
            channel.sendall((command + "\n").encode())
            data, seen = read_until_prompt(channel, owner.prompt_re, deadline)
        except (OSError, paramiko.SSHException, EOFError):
            pass
        duration = time.monotonic() - start
        text = clean(data)
        if not seen and not channel.eof_received:
            self.close()
            timed_out = time.monotonic() >= deadline
            owner._discard(channel.get_transport())
            what = f"no prompt within {timeout:g} s" if timed_out else "session closed mid-command"
            raise owner._error(
                TransportTimeout if timed_out else ProtocolError,
                f"shell {command!r}: {what}",
                raw=text,
            )
        body, _, prompt = text.rpartition("\n") if seen else (text, "", "")
        if seen:
            self.prompt = prompt
        else:
            self.close()  # the device ended the session (e.g. "exit")
        output = strip_echo(body, command)
        owner._done("shell", command, output, None, duration)
        return output


def paramiko_error(exc: BaseException) -> tuple[type[TransportError], str]:
    """The typed error (and a short reason) for an exception paramiko or a socket raised."""
    what = f"{type(exc).__name__}: {exc}".rstrip(": ")
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyMismatch, what
    if isinstance(exc, paramiko.hostkeys.InvalidHostKey):
        return HostKeyUnknown, what
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthFailed, what
    if isinstance(exc, paramiko.IncompatiblePeer):
        return LegacyAlgorithms, what
    if isinstance(exc, TimeoutError) or "timeout" in str(exc).lower():
        return TransportTimeout, what
    if isinstance(exc, ConnectionRefusedError | paramiko.ssh_exception.NoValidConnectionsError):
        return ConnectionRefused, what
    if isinstance(exc, paramiko.ProxyCommandFailure):
        return ConnectionRefused, what
    return ProtocolError, what  # SSHException, ChannelException, EOFError, resets, the rest


def _from_paramiko(exc: BaseException) -> bool:
    """Raised by paramiko or the network, not by a bug of ours."""
    if isinstance(exc, paramiko.SSHException | EOFError | OSError):
        return True
    if type(exc).__module__.startswith("paramiko"):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith("paramiko"):
            return True
        tb = tb.tb_next
    return False


class _ClientTransport(paramiko.Transport):
    """A paramiko Transport that remembers the peer's key exchange offer for error messages."""

    peer_kex: tuple[str, ...] = ()

    def _really_parse_kex_init(self, m: Any, ignore_first_byte: bool = False) -> Any:
        parsed = super()._really_parse_kex_init(m, ignore_first_byte)
        self.peer_kex = tuple(k for k in parsed["kex_algo_list"] if not k.startswith(_PSEUDO_KEX))
        return parsed
