"""No secret from a testbed reaches any file a run writes or anything it logs.

A real run: the plugin drives a SONiC emulator over SSH with a known password,
fails authentication on a second device with another known password, records
the session, and writes Allure results, JUnit XML, a DEBUG log file and the
terminal output. Every byte of it is scanned for the secrets.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from labtest.emulation.lab import personality
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.sshserver import SshServer
from labtest.testbed.model import Device, Link
from labtest.testbed.model import Testbed as _TestbedModel

GOOD_PW = "Leak-Check-Pw-7731"
BAD_PW = "Wrong-Pw-Also-Secret-5521"
COMMUNITY = "community-secret-8842"

TESTS = """
from labtest.errors import LimitFailure


def test_facts(device):
    assert device("leaf1").facts().os_version


def test_auth_fails(device):
    device("leaf2").facts()  # wrong password: broken, not failed


def test_limit_fails(measure, device):
    ports = device("leaf1").interfaces()
    measure("ports", len(ports), unit="count",
            limit=__import__("labtest.measure").measure.Limit(high=0, source="leak test"))
"""


@pytest.fixture
def sonic_server():
    tb = _TestbedModel(
        name="leak",
        devices={"leaf1": Device(role="leaf", driver="sonic"),
                 "spine1": Device(role="spine", driver="sonic")},
        links=[Link(a="leaf1:Ethernet0", b="spine1:Ethernet0", speed_gbps=400, optic="400G-DR4")],
    )
    fabric = Fabric(tb)
    served = personality("sonic")(fabric, "leaf1", tb.devices["leaf1"])
    server = SshServer(served.cli, username="admin", password=GOOD_PW).start()
    yield server
    server.stop()
    if served.stop:
        served.stop()


def test_no_secret_in_any_output(tmp_path: Path, sonic_server: SshServer) -> None:
    known_hosts = tmp_path / "known_hosts"
    sonic_server.write_known_hosts(known_hosts)
    (tmp_path / "tb.yaml").write_text(textwrap.dedent(f"""\
        name: leak
        devices:
          leaf1:
            role: leaf
            driver: sonic
            address: 127.0.0.1
            ssh: {{port: {sonic_server.port}, username: admin, password: "${{env:LT_GOOD}}",
                  known_hosts: {known_hosts}, timeout_s: 3, command_timeout_s: 5}}
            snmp: {{version: 2c, port: 9, community: "${{env:LT_COMMUNITY}}"}}
          leaf2:
            role: leaf
            driver: sonic
            address: 127.0.0.1
            ssh: {{port: {sonic_server.port}, username: admin, password: "${{env:LT_BAD}}",
                  known_hosts: {known_hosts}, timeout_s: 3, command_timeout_s: 5}}
        """))
    (tmp_path / "test_leak.py").write_text(TESTS)
    env = {**os.environ, "LT_GOOD": GOOD_PW, "LT_BAD": BAD_PW, "LT_COMMUNITY": COMMUNITY}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "test_leak.py", "-p", "no:cacheprovider",
         "--testbed", "tb.yaml", "--alluredir", "allure", "--junitxml", "junit.xml",
         "--log-file", "run.log", "--log-file-level", "DEBUG", "--log-level", "DEBUG",
         "--record", "recording", "-vv", "-rA", "--showlocals", "--tb=long"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    out = run.stdout + run.stderr
    assert "1 passed" in out and "1 failed" in out and "1 broken" in out, out[-3000:]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "tb.yaml"]
    assert any(p.parent.name == "recording" for p in written)  # the session was recorded
    assert (tmp_path / "run.log").stat().st_size > 1000  # DEBUG logging did run
    for secret in (GOOD_PW, BAD_PW, COMMUNITY):
        assert secret not in out, f"secret in terminal output: {secret}"
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"secret in {path}"
