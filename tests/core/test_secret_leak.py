"""No secret from a testbed reaches any file a run writes or anything it logs.

A real run: the plugin drives a SONiC emulator over SSH with a known password,
fails authentication on a second device with another known password, records
the session, and writes Allure results, JUnit XML, a DEBUG log file and the
terminal output. The tests also plant the password where a careless test or a
chatty device would: an exception message, a test parameter (its value and its
id), device output (an attachment, an error's raw output, stdout, a log line)
and a measurement's name and labels. Then ``labtest report`` builds the
sign-off from those results. Every byte of every file, and the terminal, is
scanned for the secrets.
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
import logging
import os

import allure
import pytest

from labtest.errors import InfraError, LimitFailure

PW = os.environ["LT_GOOD"]


def test_facts(device):
    assert device("leaf1").facts().os_version


def test_auth_fails(device):
    device("leaf2").facts()  # wrong password: broken, not failed


@pytest.mark.judges()  # its limit is given inline, not from the profile
def test_limit_fails(measure, device):
    ports = device("leaf1").interfaces()
    measure("ports", len(ports), unit="count",
            limit=__import__("labtest.measure").measure.Limit(high=0, source="leak test"))


def test_exception_message(device):
    device("leaf1").facts()
    raise RuntimeError("device said: " + PW)


@pytest.mark.parametrize("secret", [PW], ids=["given-id"])
def test_parameter_value(device, secret):
    assert device("leaf1").facts().os_version and secret


@pytest.mark.parametrize("secret", [PW])
def test_parameter_as_id(device, secret):
    assert device("leaf1").facts().os_version and secret


def test_device_output(device):
    device("leaf1").facts()
    allure.attach("show running-config\\n  password " + PW, name="running config " + PW)
    print("device echoed", PW)
    logging.getLogger("dut").warning("device echoed %s", PW)
    raise InfraError("leaf1", "could not parse the prompt", raw="login: admin " + PW)


def test_device_echoes_it(device):
    answer = device("leaf1").cli.exec("echo " + PW)
    print("device answered:", answer.stdout, answer.stderr)
    device("leaf1").run("show " + PW)  # refused by the device, which quotes the command


@pytest.mark.judges()
def test_measurement_label(measure, device):
    device("leaf1").facts()
    measure("rx " + PW, 1.0, unit="count", port="Ethernet" + PW)
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
    assert "4 passed" in out and "2 failed" in out and "3 broken" in out, out[-3000:]
    planted = tmp_path / "allure" / "from-an-older-labtest.txt"  # results never scrubbed
    planted.write_text(f"password {GOOD_PW}\n")
    report = subprocess.run(
        [sys.executable, "-c", "import sys; from labtest.cli import main; sys.exit(main())",
         "report", "allure", "--output", "signoff",
         "--no-allure", "--exit-zero"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    out += report.stdout + report.stderr
    assert report.returncode == 0, out[-3000:]
    assert (tmp_path / "signoff" / "signoff.html").is_file()
    assert any((tmp_path / "signoff" / "evidence").glob("*-result.json"))
    copied = tmp_path / "signoff" / "evidence" / planted.name
    assert copied.read_text() == "password ********\n"  # the report learnt the testbed's secrets
    planted.unlink()  # ours, not the run's: everything else must be clean
    attachments = [p.read_text() for p in (tmp_path / "allure").glob("*-attachment*")]
    assert any("password ********" in a for a in attachments)  # written, and scrubbed
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "tb.yaml"]
    assert any(p.parent.name == "recording" for p in written)  # the session was recorded
    recorded = (tmp_path / "recording" / "leaf1.jsonl").read_text()
    assert "echo ********" in recorded and "show ********" in recorded  # went through, scrubbed
    assert (tmp_path / "run.log").stat().st_size > 1000  # DEBUG logging did run
    leaks = []
    for secret in (GOOD_PW, BAD_PW, COMMUNITY):
        if secret in out:
            leaks.append(f"terminal: {secret}")
        leaks += [f"{p.relative_to(tmp_path)}: {secret}"
                  for p in written if secret.encode() in p.read_bytes()]
    assert leaks == [], "\n".join(leaks)
