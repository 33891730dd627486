"""SSH transport against a real OpenSSH sshd on 127.0.0.1 (Debian's openssh-server).

What only a real sshd can prove: OpenSSH-written known_hosts markers, and that a
command which timed out is really gone from the host afterwards (OpenSSH does
not signal a command started without a terminal when its channel closes).
The tests log in as root with a throwaway key, so they need root.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_ssh import openssh_sshd

from labtest.emulation.sshserver import generate_key
from labtest.errors import HostKeyRevoked, TransportTimeout
from labtest.testbed.model import SshSettings
from labtest.transports.ssh import SshTransport

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to run sshd (openssh-server) and log in as root"
)


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[int, str, Path]]:
    """(port, host key line for known_hosts, client key file) of a fresh sshd."""
    key, text = generate_key()
    key_file = tmp_path / "id_ed25519"
    key_file.write_text(text)
    key_file.chmod(0o600)
    authorized = tmp_path / "authorized_keys"
    authorized.write_text(f"{key.get_name()} {key.get_base64()}\n")
    config = f"AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\n"
    with openssh_sshd(tmp_path, config) as (port, host_key):
        kind, blob = Path(f"{host_key}.pub").read_text().split()[:2]
        yield port, f"[127.0.0.1]:{port} {kind} {blob}\n", key_file


@pytest.fixture
def transport(sshd, tmp_path: Path) -> Callable[..., SshTransport]:
    port, _, key_file = sshd

    def make(known_hosts: str, **options: object) -> SshTransport:
        path = tmp_path / "known_hosts"
        path.write_text(known_hosts)
        settings = SshSettings(
            port=port, username="root", key_file=key_file, known_hosts=path, timeout_s=5.0
        )
        return SshTransport("host1", "127.0.0.1", settings, **options)  # type: ignore[arg-type]

    return make


def _other_key_line(marker: str, hosts: str = "*") -> str:
    key, _ = generate_key()
    return f"{marker} {hosts} {key.get_name()} {key.get_base64()}\n"


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, timeout=5)
    return [int(p) for p in found.stdout.split()]


def _gone(pattern: str, within_s: float = 5.0) -> bool:
    """Poll (bounded) until no process matches ``pattern``."""
    deadline = time.monotonic() + within_s
    while _pids(pattern):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_cert_authority_line_does_not_hide_the_plain_key(
    transport, sshd, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    known = _other_key_line("@cert-authority", "*.lab.example") + sshd[1]
    with transport(known) as ssh:
        result = ssh.exec("echo ok")
    assert (result.stdout, result.exit_status) == ("ok\n", 0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "line 1" in warnings[0] and "@cert-authority" in warnings[0]


def test_revoked_server_key_is_refused(transport, sshd) -> None:
    _, host_line, _ = sshd
    _name, kind, blob = host_line.split()
    known = f"@revoked * {kind} {blob}\n" + _other_key_line("@cert-authority") + host_line
    with pytest.raises(HostKeyRevoked, match="@revoked"):
        transport(known).connect()


def test_grouped_exec_keeps_output_streams_and_exit_status(transport, sshd) -> None:
    seen: list[tuple[str, str, int | None, float, str]] = []
    with transport(sshd[1], process_group=True, recorder=lambda *a: seen.append(a)) as ssh:
        result = ssh.exec("echo out; echo err >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_status) == ("out\n", "err\n", 3)
    assert [(c, o, s, e) for c, o, s, _, e in seen] == [
        ("echo out; echo err >&2; exit 3", "out\n", 3, "err\n")  # recorded as the driver asked
    ]


@pytest.mark.parametrize("shape", ["{sleep}", "{sleep} | cat", "true; {sleep}; echo never"])
def test_timed_out_command_leaves_no_process_on_the_host(transport, sshd, shape: str) -> None:
    sleep = f"sleep 30.{secrets.randbelow(10**6):06d}"  # unique: other sessions' sleeps differ
    seen: list[str] = []
    with transport(sshd[1], process_group=True, recorder=lambda c, *_: seen.append(c)) as ssh:
        with pytest.raises(TransportTimeout) as caught:
            ssh.exec(shape.format(sleep=sleep), timeout_s=1)
        assert "stopped its process group" in str(caught.value)
        assert ssh.exec("echo still usable").stdout == "still usable\n"
    assert seen == ["echo still usable"]  # the clean-up is not recorded
    assert _gone(sleep), f"{sleep!r} still runs on the host: {_pids(sleep)}"


def test_without_process_groups_openssh_leaves_the_command_running(transport, sshd) -> None:
    """The failure the process group fixes, shown on the same sshd (so the test above can fail)."""
    sleep = f"sleep 30.{secrets.randbelow(10**6):06d}"
    with transport(sshd[1]) as ssh, pytest.raises(TransportTimeout):
        ssh.exec(sleep, timeout_s=1)
    left = _pids(sleep)
    try:
        assert left, "sshd stopped the command by itself"
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert _gone(sleep)
