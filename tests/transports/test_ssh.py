"""SSH transport against real SSH peers on 127.0.0.1.

Peers: the labtest emulation SSH server (paramiko) in every mode it has, and,
for legacy key exchange, Debian's OpenSSH ``sshd`` when it is installed.
Every test also checks that no configured secret reached a log record or an
exception text (the ``no_leaks`` fixture).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
import pytest
from pydantic import SecretStr

from labtest.emulation.sshserver import CliReply, SshServer, generate_key
from labtest.errors import (
    AuthFailed,
    ConnectionRefused,
    HostKeyMismatch,
    HostKeyRevoked,
    HostKeyUnknown,
    InfraError,
    LegacyAlgorithms,
    ProtocolError,
    TransportError,
    TransportTimeout,
)
from labtest.testbed.model import SshSettings
from labtest.transports.known_hosts import parse_known_hosts
from labtest.transports.ssh import SshTransport, paramiko_error
from labtest.transports.ssh_channel import take_marker

PASSWORD = "Pw-9f3LabSecret-Alpha"
WRONG_PASSWORD = "Pw-wrongSecret-Bravo"
PASSPHRASE = "Kp-keyPassphrase-Charlie"
SECRETS = (PASSWORD, WRONG_PASSWORD, PASSPHRASE)

# Field layout of SONiC `show version` as published in the sonic-utilities Command Reference
# (github.com/sonic-net/sonic-utilities, doc/Command-Reference.md); values are emulated.
VERSION = (
    "SONiC Software Version: SONiC.202311.1\n"
    "Distribution: Debian 12.5\n"
    "Kernel: 6.1.0-11-2-amd64\n"
    "Platform: x86_64-emu_lab-r0\n"
    "HwSKU: EMU-64x400G\n"
    "Serial Number: EMU0001\n"
)


class LabCli:
    """A tiny switch CLI with a config mode, so prompt changes are exercised."""

    def __init__(self) -> None:
        self.config = False

    @property
    def prompt(self) -> str:
        return "sw1(config)# " if self.config else "sw1# "

    def run(self, command: str) -> CliReply:
        cmd = command.strip()
        if cmd == "show version":
            return CliReply(VERSION)
        if cmd.startswith("echo "):
            return CliReply(cmd[5:] + "\n")
        if cmd == "configure":
            self.config = True
            return CliReply("")
        if cmd == "end":
            self.config = False
            return CliReply("")
        if cmd == "fail":
            return CliReply("", exit_status=3, stderr="% boom\n")
        if cmd == "exit":
            return CliReply("", close=True)
        return CliReply(f"% Invalid input: {cmd}\n", exit_status=1)


# --- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="module")
def client_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[paramiko.PKey, Path]:
    key, text = generate_key(PASSPHRASE, kdf_rounds=1)
    path = tmp_path_factory.mktemp("keys") / "id_ed25519"
    path.write_text(text)
    path.chmod(0o600)
    return key, path


@pytest.fixture
def server(client_key: tuple[paramiko.PKey, Path]) -> Iterator[SshServer]:
    with SshServer(
        LabCli, password=PASSWORD, authorized_keys=[client_key[0]], banner="Welcome to sw1"
    ) as srv:
        yield srv


@pytest.fixture
def known_hosts(tmp_path: Path, server: SshServer) -> Path:
    path = tmp_path / "known_hosts"
    server.write_known_hosts(path)
    return path


@pytest.fixture
def settings(server: SshServer, known_hosts: Path) -> Callable[..., SshSettings]:
    def make(**overrides: object) -> SshSettings:
        fields: dict[str, object] = {
            "port": server.port,
            "username": "admin",
            "password": SecretStr(PASSWORD),
            "known_hosts": known_hosts,
            "timeout_s": 2.0,
            "command_timeout_s": 2.0,
        }
        fields.update(overrides)
        return SshSettings(**fields)

    return make


@pytest.fixture(autouse=True)
def no_leaks(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Collect every log record and error text of the test; none may hold a secret."""
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    yield texts
    texts += [r.getMessage() for r in caplog.records]
    texts.append(caplog.text)
    for secret in SECRETS:
        leaked = [t for t in texts if secret in t]
        assert not leaked, f"secret leaked into: {leaked[:3]}"


def raises(
    kind: type[TransportError], texts: list[str], call: Callable[[], object]
) -> TransportError:
    """Run ``call``, expect ``kind``; keep its texts for the leak check."""
    with pytest.raises(kind) as info:
        call()
    error = info.value
    texts += [str(error), repr(error), error.raw or "", repr(error.__context__)]
    assert error.device == "sw1"
    return error


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- round trips ---------------------------------------------------------------


def test_exec_returns_stdout_stderr_and_exit_status(settings, no_leaks) -> None:
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        ok = ssh.exec("show version")
        assert (ok.stdout, ok.stderr, ok.exit_status) == (VERSION, "", 0)
        assert 0 < ok.duration_s < 2
        bad = ssh.exec("fail")
        assert (bad.stdout, bad.stderr, bad.exit_status) == ("", "% boom\n", 3)
    assert "sw1" in repr(ssh)
    no_leaks.append(repr(ssh))


def test_shell_strips_echo_and_prompt_and_follows_prompt_changes(settings) -> None:
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh, ssh.shell() as shell:
        assert shell.banner == "Welcome to sw1"
        assert shell.prompt == "sw1# "
        out = shell.send("show version")
        assert out == VERSION and "\r" not in out and "sw1#" not in out
        assert shell.send("echo hello world") == "hello world\n"
        assert shell.send("configure") == ""
        assert shell.prompt == "sw1(config)# "
        assert shell.send("end") == "" and shell.prompt == "sw1# "
        assert shell.send("exit") == ""  # the device ended the session...
        assert shell.send("echo again") == "again\n"  # ...and send() opened a new one


def test_hundred_commands_on_one_connection(settings, server: SshServer) -> None:
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        ssh.connect()
        sock = ssh._transport.sock  # type: ignore[union-attr]
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        start = time.perf_counter()
        for i in range(100):
            assert ssh.exec(f"echo {i}").stdout == f"{i}\n"
        exec_s = time.perf_counter() - start
        with ssh.shell() as shell:
            start = time.perf_counter()
            for i in range(100):
                assert shell.send(f"echo {i}") == f"{i}\n"
            shell_s = time.perf_counter() - start
    print(f"\nssh x100 on one connection: exec {exec_s:.3f} s, shell {shell_s:.3f} s")
    assert server.connections == 1
    assert exec_s < 10 and shell_s < 10  # without TCP_NODELAY: ~4.4 s and ~8.8 s


def test_recorder_sees_every_command(settings) -> None:
    seen: list[tuple[str, str, int | None, float, str]] = []
    with SshTransport("sw1", "127.0.0.1", settings(), recorder=lambda *a: seen.append(a)) as ssh:
        ssh.exec("echo one")
        with ssh.shell() as shell:
            shell.send("echo two")
    assert [(c, o, s) for c, o, s, _, _ in seen] == [
        ("echo one", "one\n", 0),
        ("echo two", "two\n", None),
    ]
    assert all(d > 0 for *_, d, _ in seen)


# --- authentication -------------------------------------------------------------


def test_key_auth_with_passphrase(settings, client_key) -> None:
    _, path = client_key
    config = settings(password=None, key_file=path, passphrase=SecretStr(PASSPHRASE))
    with SshTransport("sw1", "127.0.0.1", config) as ssh:
        assert ssh.exec("echo key").stdout == "key\n"


def test_wrong_password_is_auth_failed(settings, no_leaks) -> None:
    ssh = SshTransport("sw1", "127.0.0.1", settings(password=SecretStr(WRONG_PASSWORD)))
    error = raises(AuthFailed, no_leaks, ssh.connect)
    assert "'admin'" in str(error) and "password" in str(error)


def test_wrong_passphrase_is_auth_failed(settings, client_key, no_leaks) -> None:
    config = settings(password=None, key_file=client_key[1], passphrase=SecretStr(WRONG_PASSWORD))
    error = raises(AuthFailed, no_leaks, SshTransport("sw1", "127.0.0.1", config).connect)
    assert str(client_key[1]) in str(error)


# --- host keys ---------------------------------------------------------------------


def test_unknown_host_is_refused_under_reject(settings, tmp_path: Path, no_leaks) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    ssh = SshTransport("sw1", "127.0.0.1", settings(known_hosts=empty))
    error = raises(HostKeyUnknown, no_leaks, ssh.connect)
    assert "SHA256:" in str(error) and "accept-new" in str(error)
    assert empty.read_text() == ""


def test_accept_new_records_key_then_refuses_a_changed_one(
    settings, server: SshServer, tmp_path: Path, no_leaks
) -> None:
    path = tmp_path / "new" / "known_hosts"
    with SshTransport(
        "sw1", "127.0.0.1", settings(known_hosts=path, host_key_policy="accept-new")
    ) as ssh:
        assert ssh.exec("echo first").stdout == "first\n"
    assert path.read_text() == server.known_hosts_line()
    with SshTransport("sw1", "127.0.0.1", settings(known_hosts=path)) as ssh:  # now known
        assert ssh.exec("echo second").exit_status == 0

    server.host_key = generate_key()[0]  # same type, different key
    ssh = SshTransport("sw1", "127.0.0.1", settings(known_hosts=path, host_key_policy="accept-new"))
    error = raises(HostKeyMismatch, no_leaks, ssh.connect)
    assert "CHANGED" in str(error) and server.host_key.fingerprint in str(error)

    server.host_key = paramiko.ECDSAKey.generate()  # a different key type is a change too
    raises(HostKeyMismatch, no_leaks, ssh.connect)
    assert path.read_text().count("\n") == 1  # nothing was added


# --- broken peers --------------------------------------------------------------------


def test_closed_port_is_connection_refused(settings, no_leaks) -> None:
    ssh = SshTransport("sw1", "127.0.0.1", settings(port=free_port()))
    error = raises(ConnectionRefused, no_leaks, ssh.connect)
    assert "refused" in str(error)


def test_peer_without_ssh_banner_times_out_on_connect(settings, server, no_leaks) -> None:
    server.mode = "no-banner"
    ssh = SshTransport("sw1", "127.0.0.1", settings(timeout_s=0.5))
    start = time.monotonic()
    raises(TransportTimeout, no_leaks, ssh.connect)
    assert time.monotonic() - start < 1.5


def test_silent_peer_times_out_within_the_timeout(settings, server, no_leaks) -> None:
    def bounded(call: Callable[[], object]) -> TransportError:
        start = time.monotonic()
        error = raises(TransportTimeout, no_leaks, call)
        assert 0.5 <= time.monotonic() - start < 1.5
        return error

    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        shell = ssh.shell()
        server.mode = "silent"  # the device hangs: no reply to any request
        bounded(lambda: shell.send("show version", timeout_s=0.5))  # open shell stops answering
        error = bounded(lambda: ssh.exec("show version", timeout_s=0.5))
        assert "0.5 s" in str(error)
        bounded(lambda: ssh.shell(timeout_s=0.5))
        bounded(lambda: shell.send("show version", timeout_s=0.5))  # reopening counts too


def test_peer_closing_mid_command_is_protocol_error_then_reconnects(
    settings, server: SshServer, no_leaks
) -> None:
    partial = VERSION[: len(VERSION) // 2]
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        assert ssh.exec("echo up").exit_status == 0
        server.mode = "drop"
        error = raises(ProtocolError, no_leaks, lambda: ssh.exec("show version"))
        assert error.raw == partial
        server.mode = "normal"
        assert ssh.exec("echo back").stdout == "back\n"  # reconnected on demand
        assert server.connections == 2

        shell = ssh.shell()
        server.mode = "drop"
        error = raises(ProtocolError, no_leaks, lambda: shell.send("show version"))
        assert error.raw is not None and partial.splitlines()[0] in error.raw
        server.mode = "normal"
        assert shell.send("echo back") == "back\n"
        assert server.connections == 3


def test_refused_exec_is_protocol_error_without_waiting(settings, server, no_leaks) -> None:
    server.allow_exec = False  # a shell-only device
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        start = time.monotonic()
        error = raises(ProtocolError, no_leaks, lambda: ssh.exec("show version", timeout_s=2))
        assert time.monotonic() - start < 1 and "refused" in str(error)
        assert ssh.shell().send("echo still here") == "still here\n"


def test_legacy_kex_peer_is_legacy_algorithms(settings, server, no_leaks) -> None:
    server.mode = "legacy-kex"
    error = raises(LegacyAlgorithms, no_leaks, SshTransport("sw1", "127.0.0.1", settings()).connect)
    assert "SHA-1" in str(error) and "diffie-hellman-group14-sha1" in str(error)
    assert "Fix:" in str(error)


SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


@contextlib.contextmanager
def openssh_sshd(directory: Path, config: str = "") -> Iterator[tuple[int, Path]]:
    """Debian's OpenSSH sshd on a free 127.0.0.1 port; yields (port, host key path).

    ``config`` adds sshd_config lines. Skips (naming the package) when sshd is
    missing or cannot run; the daemon is stopped by its PID.
    """
    if SSHD is None or shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH sshd not installed (apt-get install openssh-server)")
    privsep = Path("/run/sshd")  # sshd refuses to start without its privilege-separation dir
    if os.geteuid() != 0 and not privsep.exists():
        pytest.skip("sshd (openssh-server) needs /run/sshd, which only root can create")
    made_privsep = os.geteuid() == 0 and not privsep.exists()
    if made_privsep:
        privsep.mkdir(mode=0o755)
    host_key = directory / "ssh_host_ed25519_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True, timeout=10
    )
    port = free_port()
    sshd_config = directory / "sshd_config"
    sshd_config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
        f"PidFile {directory / 'sshd.pid'}\nUsePAM no\nStrictModes no\n"
        f"PasswordAuthentication no\n{config}"
    )
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd_config)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 5
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"sshd did not start: {proc.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
            time.sleep(0.02)
        yield port, host_key
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if made_privsep:
            with contextlib.suppress(OSError):  # another sshd of this run may still use it
                privsep.rmdir()


@pytest.fixture
def legacy_sshd(tmp_path: Path) -> Iterator[int]:
    """OpenSSH sshd offering only SHA-1 key exchange."""
    with openssh_sshd(tmp_path, "KexAlgorithms diffie-hellman-group14-sha1\n") as (port, _):
        yield port


def test_openssh_with_only_sha1_kex_is_legacy_algorithms(settings, legacy_sshd, no_leaks) -> None:
    ssh = SshTransport("sw1", "127.0.0.1", settings(port=legacy_sshd))
    error = raises(LegacyAlgorithms, no_leaks, ssh.connect)
    assert "diffie-hellman-group14-sha1" in str(error)


def test_server_stop_closes_everything(tmp_path: Path) -> None:
    baseline = {t.ident for t in threading.enumerate()}
    server = SshServer(LabCli, password=PASSWORD).start()
    server.write_known_hosts(tmp_path / "known_hosts")
    config = SshSettings(
        port=server.port,
        username="admin",
        password=SecretStr(PASSWORD),
        known_hosts=tmp_path / "known_hosts",
        command_timeout_s=0.3,
    )
    ssh = SshTransport("sw1", "127.0.0.1", config)
    ssh.shell()  # leaves a shell thread on the server
    server.mode = "silent"
    with pytest.raises(TransportTimeout):
        ssh.exec("show version")  # leaves a hung transport thread on the server
    ssh.close()
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 3
    deadline = time.monotonic() + 3
    while {t.ident for t in threading.enumerate()} - baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not {t.name for t in threading.enumerate() if t.ident not in baseline}
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_leak_check_is_live(settings, caplog: pytest.LogCaptureFixture) -> None:
    """The no_leaks fixture scans real transport records, so its check can fail."""
    with SshTransport("sw1", "127.0.0.1", settings()) as ssh:
        ssh.exec("echo x")
    names = {r.name for r in caplog.records}
    assert "labtest.transport.ssh" in names and "paramiko.transport" in names


# --- known_hosts as OpenSSH writes it ---------------------------------------------------


def _line(name: str, key: paramiko.PKey, marker: str = "") -> str:
    return f"{marker + ' ' if marker else ''}{name} {key.get_name()} {key.get_base64()}\n"


def test_known_hosts_reader_keeps_usable_lines_and_says_why_it_skipped_the_rest() -> None:
    plain, hashed, revoked, ca = (generate_key()[0] for _ in range(4))
    hashed_name = paramiko.HostKeys.hash_host("[10.0.0.2]:2222")
    text = (
        "# comment\n\n"  # lines 1-2
        + _line("sw1,10.0.0.1", plain)  # 3
        + _line(hashed_name, hashed)  # 4
        + _line("*.lab.example", ca, "@cert-authority")  # 5
        + _line("*", revoked, "@revoked")  # 6
        + "sw9 sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t\n"  # 7
        + "sw8 ssh-ed25519 not*base64\n"  # 8
        + "sw7 ssh-ed25519\n"  # 9
        + f"sw6 ssh-rsa {plain.get_base64()}\n"  # 10: the blob is not the type named
        + "@future-marker sw5 ssh-ed25519 AAAA\n"  # 11
    )
    hosts = parse_known_hosts(text)
    assert hosts.keys.lookup("sw1")["ssh-ed25519"] == plain
    assert hosts.keys.lookup("10.0.0.1")["ssh-ed25519"] == plain
    assert hosts.keys.lookup("[10.0.0.2]:2222")["ssh-ed25519"] == hashed
    assert hosts.keys.lookup("sw9") is None and hosts.keys.lookup("sw6") is None
    assert hosts.revoked == [revoked]
    reasons = dict(hosts.skipped)
    assert sorted(reasons) == [5, 7, 8, 9, 10, 11]
    assert "@cert-authority" in reasons[5] and "certificates" in reasons[5]
    assert "sk-ssh-ed25519@openssh.com" in reasons[7]
    assert "base64" in reasons[8] and "fields" in reasons[9] and "parsed" in reasons[10]
    assert "@future-marker" in reasons[11]


def test_cert_authority_line_is_skipped_with_one_warning_and_plain_key_works(
    settings, server: SshServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "known_hosts_ca"
    path.write_text(_line("*", generate_key()[0], "@cert-authority") + server.known_hosts_line())
    for _ in range(2):  # a second connection does not repeat the warning
        with SshTransport("sw1", "127.0.0.1", settings(known_hosts=path)) as ssh:
            assert ssh.exec("echo ok").stdout == "ok\n"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert str(path) in warnings[0] and "line 1" in warnings[0]


def test_revoked_host_key_is_refused_whatever_the_policy(
    settings, server: SshServer, tmp_path: Path, no_leaks
) -> None:
    path = tmp_path / "known_hosts_revoked"
    path.write_text(_line("*", server.host_key, "@revoked") + server.known_hosts_line())
    error = raises(
        HostKeyRevoked,
        no_leaks,
        SshTransport("sw1", "127.0.0.1", settings(known_hosts=path)).connect,
    )
    assert "@revoked" in str(error) and server.host_key.fingerprint in str(error)

    path.write_text(
        _line("*", server.host_key, "@revoked")
    )  # not recorded: accept-new may not add it
    config = settings(known_hosts=path, host_key_policy="accept-new")
    raises(HostKeyRevoked, no_leaks, SshTransport("sw1", "127.0.0.1", config).connect)
    assert path.read_text().count("\n") == 1


# --- every paramiko failure is typed ---------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (paramiko.hostkeys.InvalidHostKey("@revoked x", ValueError()), HostKeyUnknown),
        (paramiko.BadHostKeyException("h", generate_key()[0], generate_key()[0]), HostKeyMismatch),
        (paramiko.AuthenticationException("no"), AuthFailed),
        (paramiko.BadAuthenticationType("no", ["password"]), AuthFailed),
        (paramiko.PasswordRequiredException("key is encrypted"), AuthFailed),
        (paramiko.IncompatiblePeer("no kex"), LegacyAlgorithms),
        (paramiko.SSHException("Timeout opening channel."), TransportTimeout),
        (TimeoutError("timed out"), TransportTimeout),
        (paramiko.SSHException("Error reading SSH protocol banner"), ProtocolError),
        (paramiko.ChannelException(2, "Connect failed"), ProtocolError),
        (paramiko.ssh_exception.MessageOrderError(), ProtocolError),
        (EOFError(), ProtocolError),
        (ConnectionResetError(104, "Connection reset by peer"), ProtocolError),
        (ConnectionRefusedError(111, "refused"), ConnectionRefused),
        (
            paramiko.ssh_exception.NoValidConnectionsError({("127.0.0.1", 22): OSError()}),
            ConnectionRefused,
        ),
        (paramiko.ProxyCommandFailure("nc", "exit 1"), ConnectionRefused),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else "",
)
def test_paramiko_exceptions_map_to_typed_errors(exc: BaseException, expected: type) -> None:
    kind, what = paramiko_error(exc)
    assert kind is expected and issubclass(kind, InfraError)
    assert type(exc).__name__ in what


def test_untyped_paramiko_exception_becomes_typed_but_our_bugs_do_not(
    settings, monkeypatch: pytest.MonkeyPatch, no_leaks
) -> None:
    ssh = SshTransport("sw1", "127.0.0.1", settings())

    def invalid_line(self: SshTransport) -> None:  # what paramiko's own loader raised
        raise paramiko.hostkeys.InvalidHostKey("@cert-authority * ssh-ed25519", ValueError())

    monkeypatch.setattr(SshTransport, "_known_hosts", invalid_line)
    error = raises(HostKeyUnknown, no_leaks, ssh.connect)
    assert "InvalidHostKey" in str(error)

    def bug(self: SshTransport) -> None:
        raise KeyError("a labtest bug")

    monkeypatch.setattr(SshTransport, "_known_hosts", bug)
    with pytest.raises(KeyError):
        ssh.connect()


def test_paramiko_log_noise_is_demoted_to_debug(caplog: pytest.LogCaptureFixture) -> None:
    terminal = logging.Handler(logging.WARNING)
    shown: list[logging.LogRecord] = []
    terminal.emit = shown.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(terminal)
    try:
        logging.getLogger("paramiko.transport").error("Socket exception: Connection reset (104)")
    finally:
        logging.getLogger().removeHandler(terminal)
    assert shown == []
    kept = [r for r in caplog.records if "Socket exception" in r.getMessage()]
    assert [r.levelno for r in kept] == [logging.DEBUG]
    assert kept[0].getMessage().startswith("(error) ")


def test_group_marker_is_split_from_stderr() -> None:
    mark = "labtest-pgid-0a1b2c3d:"
    assert take_marker(bytearray(f"{mark}4242\nwarn\n".encode()), mark) == (
        4242,
        bytearray(b"warn\n"),
    )
    assert take_marker(bytearray(f"{mark}$$\n".encode()), mark) == (None, bytearray())  # no $$
    assert take_marker(bytearray(b"bash: x: not found\n"), mark) == (
        None,
        bytearray(b"bash: x: not found\n"),
    )


class _LateShell:
    """A channel whose wrapper line arrives in pieces after the command's deadline, with the
    command's own output interleaved (a loaded host: fresh-clone run beside a kernel lab)."""

    closed = False
    eof_received = False

    def __init__(self, chunks: list[tuple[str, bytes]]) -> None:
        self.chunks = chunks

    def recv_ready(self) -> bool:
        return bool(self.chunks) and self.chunks[0][0] == "out"

    def recv_stderr_ready(self) -> bool:
        return bool(self.chunks) and self.chunks[0][0] == "err"

    def recv(self, _n: int) -> bytes:
        return self.chunks.pop(0)[1]

    recv_stderr = recv


def test_a_late_group_marker_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """exec timed out before the shell wrote its process group: without waiting for it, the
    command was left running (tests/transports/test_ssh_real_sshd.py failed under load)."""
    import labtest.transports.ssh_channel as ch

    mark = "labtest-pgid-0a1b2c3d:"
    monkeypatch.setattr(ch, "wait_readable", lambda channel, deadline: bool(channel.chunks))
    late = _LateShell([("err", mark[:9].encode()), ("out", b"partial"),
                       ("err", f"{mark[9:]}4242\n".encode()), ("err", b"never read\n")])
    stdout, stderr = bytearray(), bytearray()
    ch.wait_marker(late, stdout, stderr, mark, deadline=0.0)  # type: ignore[arg-type]
    assert take_marker(stderr, mark)[0] == 4242 and stdout == b"partial"
    # something else first on stderr: no marker will come, nothing more is waited for
    other = _LateShell([("err", b"bash: warning\n"), ("out", b"x"),
                        ("err", f"{mark}4242\n".encode())])
    stderr = bytearray()
    ch.wait_marker(other, bytearray(), stderr, mark, deadline=0.0)  # type: ignore[arg-type]
    assert stderr == b"bash: warning\n"
