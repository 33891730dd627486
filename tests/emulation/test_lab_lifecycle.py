"""The emulated lab's lifecycle: servers up with generated credentials, all gone after."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from labtest.emulation.lab import EmulatedLab, Served, register_personality
from labtest.emulation.sshserver import FunctionHandler
from labtest.errors import TransportTimeout
from labtest.registry import register_driver
from labtest.testbed import load_testbed
from labtest.transports.ssh import SshTransport

TESTBED = """\
name: tiny
devices:
  sw1:
    role: leaf
    driver: toy-switch
    address: 10.0.0.1
    ssh: {username: admin, password: "${env:NOPE:-not-the-real-one}"}
  sw2:
    role: leaf
    driver: no-emulator-driver
    address: 10.0.0.2
links:
  - {a: "sw1:Ethernet0", b: "sw2:Ethernet0", speed_gbps: 400, optic: 400G-DR4}
"""


def toy(fabric, name, device) -> Served:
    def run(command: str) -> str:
        if command == "show clock":
            return f"{fabric.clock.now_s():.3f}\n"
        return f"{name}: {command}\n"

    return Served(cli=lambda: FunctionHandler(run, prompt=f"{name}# "))


class _Driverless:
    """Stands for a driver labtest knows but the emulated lab has no personality for."""


register_personality("toy-switch", toy)
# the loader refuses unknown driver names; these are known in-process, as a lab's conftest does
register_driver("toy-switch", _Driverless)
register_driver("no-emulator-driver", _Driverless)


@pytest.fixture
def testbed(tmp_path: Path):
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED)
    return load_testbed(path)


def test_lab_serves_devices_and_cleans_up(testbed, tmp_path) -> None:
    threads_before = set(threading.enumerate())
    lab = EmulatedLab(testbed, workdir=tmp_path / "lab")
    emulated = lab.start()
    try:
        ssh = emulated.devices["sw1"].ssh
        assert emulated.devices["sw1"].address == "127.0.0.1"
        assert ssh.password.get_secret_value() != "not-the-real-one"
        assert ssh.host_key_policy == "reject"  # the generated key is in known_hosts
        assert lab.skipped == {"sw2": "no emulator for driver 'no-emulator-driver'"}
        with SshTransport("sw1", "127.0.0.1", ssh) as t:
            assert t.exec("show version").stdout == "sw1: show version\n"
            # unreachable: the device goes silent on every protocol, then comes back
            lab.fabric.set_reachable("sw1", False)
            time.sleep(0.2)  # the lab applies reachability within 50 ms
            ssh_fast = ssh.model_copy(update={"command_timeout_s": 0.5, "timeout_s": 0.5})
            with pytest.raises(TransportTimeout), SshTransport("sw1", "127.0.0.1", ssh_fast) as t2:
                t2.exec("show version")
            lab.fabric.set_reachable("sw1", True)
        out = lab.write_testbed(tmp_path / "out" / "emulated.yaml")
        reloaded = load_testbed(out)
        assert reloaded.devices["sw1"].ssh.port == ssh.port
        assert ssh.password.get_secret_value() not in out.read_text()
        port = ssh.port
    finally:
        lab.stop()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # nothing listens any more
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        leftover = [t for t in set(threading.enumerate()) - threads_before if t.is_alive()]
        if not leftover:
            break
        time.sleep(0.05)
    assert not leftover, leftover


def test_labtest_emulate_cli_starts_serves_and_leaves_nothing(tmp_path: Path) -> None:
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "labtest.cli", "emulate",
         str(root / "testbeds/emulated/leafspine.yaml"), "--duration-s", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        lines = []
        for line in proc.stdout:  # bounded: the lab stops by itself after 30 s
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        text = "".join(lines)
        took = float(re.search(r"is up in ([\d.]+) s", text)[1])
        assert took < 10, text  # issue 4: the default lab comes up in under 10 s
        ports = [int(p) for p in re.findall(r"ssh -p (\d+)", text)]
        assert len(ports) == 14  # 6 switches + 8 hosts
        workdir = Path(re.search(r"testbed: (\S+)", text)[1]).parent
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", ports[0])) == 0
        proc.send_signal(__import__("signal").SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for port in ports:
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0
    assert not workdir.exists()


def test_a_server_that_will_not_stop_still_takes_the_keys_and_secrets_with_it(testbed) -> None:
    """The lab's own folder (known_hosts, generated secrets) goes even when stopping a
    server raises; a lab stopped that way once left its folder in /tmp."""
    lab = EmulatedLab(testbed)
    lab.start()
    workdir = lab.workdir
    assert workdir is not None and (workdir / "known_hosts").is_file()
    ssh = lab.server("sw1").ssh
    real_stop = ssh.stop

    def stuck() -> None:
        real_stop()
        raise OSError("socket would not close")

    ssh.stop = stuck
    with pytest.raises(OSError, match="would not close"):
        lab.stop()
    assert not workdir.exists()
