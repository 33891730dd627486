"""SNMP transport against two real peers: labtest's own agent and net-snmp ``snmpd``.

Both listen on 127.0.0.1 (ephemeral port) and are stopped by the fixtures.
Timeouts are short (0.3 s x 2 tries) so the failure cases stay fast and bounded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtest.emulation.snmpagent import (
    Counter64,
    DictMib,
    Gauge32,
    IpAddress,
    ObjectIdentifier,
    SnmpAgent,
    TimeTicks,
    V3User,
)
from labtest.errors import AuthFailed, ConfigError, ProtocolError, TransportTimeout
from labtest.testbed.model import SnmpSettings
from labtest.transports import mibs
from labtest.transports.snmp import SnmpTransport, octets_to_str

COMMUNITY = "c0mm-Secret-7f3a"
AUTH_KEY = "auth-Secret-91b2"
PRIV_KEY = "priv-Secret-4c8d"
SECRETS = (COMMUNITY, AUTH_KEY, PRIV_KEY)
PORTS = 8
FAST = {"timeout_s": 0.3, "retries": 1}
BOUND_S = 0.3 * 2 + 1.0  # timeout x tries + the transport's slack
SNMPD = shutil.which("snmpd") or ("/usr/sbin/snmpd" if Path("/usr/sbin/snmpd").exists() else None)


# --- the emulated peer ------------------------------------------------------------


def switch_mib() -> DictMib:
    """A small switch: system group, ifTable/ifXTable for 8 ports, 64-bit counters
    that grow at ~10 Gb/s x port number in real time."""
    t0 = time.monotonic()
    values: dict[str, object] = {
        "sysDescr.0": "labtest emulated switch",
        "sysObjectID.0": ObjectIdentifier("1.3.6.1.4.1.8072.3.2.10"),
        "sysUpTime.0": lambda: TimeTicks(int((time.monotonic() - t0) * 100)),
        "sysName.0": "leaf1",
        "ifNumber.0": PORTS,
        "1.3.6.1.2.1.4.20.1.1.10.0.0.1": IpAddress("10.0.0.1"),  # ipAdEntAddr
    }
    for i in range(1, PORTS + 1):
        values |= {
            f"ifDescr.{i}": f"Ethernet{i}",
            f"ifType.{i}": 6,
            f"ifMtu.{i}": 9100,
            f"ifSpeed.{i}": Gauge32(4294967295),
            f"ifPhysAddress.{i}": bytes.fromhex(f"0200000000{i:02x}"),
            f"ifAdminStatus.{i}": 1,
            f"ifOperStatus.{i}": 1 if i % 2 else 2,
            f"ifName.{i}": f"Ethernet{i}",
            f"ifHCInOctets.{i}": (
                lambda i=i: Counter64(2**40 + int((time.monotonic() - t0) * 1.25e9 * i))
            ),
            f"ifHighSpeed.{i}": Gauge32(400000),
            f"ifAlias.{i}": f"to spine{i}",
            f"lldpLocPortId.{i}": f"Ethernet{i}",
        }
    for port in (1, 2):  # LLDP neighbours, indexed by timeMark.localPortNum.remIndex
        values |= {
            f"lldpRemChassisIdSubtype.0.{port}.1": 4,
            f"lldpRemChassisId.0.{port}.1": bytes.fromhex(f"0c0000000a{port:02x}"),
            f"lldpRemPortId.0.{port}.1": "Ethernet1",
            f"lldpRemSysName.0.{port}.1": f"spine{port}",
        }
    return DictMib(values)


@pytest.fixture(scope="module")
def agent() -> Iterator[SnmpAgent]:
    users = [
        V3User("labuser", AUTH_KEY, PRIV_KEY),
        V3User("labuser256", AUTH_KEY, PRIV_KEY, auth_protocol="SHA256", priv_protocol="AES256"),
    ]
    with SnmpAgent(switch_mib(), community=COMMUNITY, users=users) as running:
        yield running


def v2c(port: int, community: str = COMMUNITY, **kw: object) -> SnmpSettings:
    return SnmpSettings(version="2c", port=port, community=community, **(FAST | kw))


def v3(port: int, user: str = "labuser", auth_key: str = AUTH_KEY, **kw: object) -> SnmpSettings:
    return SnmpSettings(
        version="3", port=port, user=user, auth_key=auth_key, priv_key=PRIV_KEY, **(FAST | kw)
    )


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def walk_rate(transport: SnmpTransport, roots: list[str], rounds: int = 3) -> tuple[int, float]:
    """OIDs per walk round and OIDs/s, after a warm-up get (engine and v3 discovery)."""
    transport.get("sysName.0")
    started = time.perf_counter()
    count = sum(len(transport.walk(root)) for _ in range(rounds) for root in roots)
    return count // rounds, count / (time.perf_counter() - started)


# --- v2c against the emulated agent ---------------------------------------------


def test_v2c_get_converts_values_to_plain_python(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        got = snmp.get("SNMPv2-MIB::sysDescr.0", "sysObjectID.0", "sysUpTime.0",
                       "ifPhysAddress.3", "ifSpeed.1", "1.3.6.1.2.1.4.20.1.1.10.0.0.1")
    assert list(got) == [
        "1.3.6.1.2.1.1.1.0", "1.3.6.1.2.1.1.2.0", "1.3.6.1.2.1.1.3.0",
        "1.3.6.1.2.1.2.2.1.6.3", "1.3.6.1.2.1.2.2.1.5.1", "1.3.6.1.2.1.4.20.1.1.10.0.0.1",
    ]
    descr, object_id, uptime, mac, speed, address = got.values()
    assert descr == "labtest emulated switch"
    assert object_id == "1.3.6.1.4.1.8072.3.2.10"
    assert isinstance(uptime, int) and uptime >= 0
    assert mac == "0x020000000003"
    assert speed == 4294967295
    assert address == "10.0.0.1"


def test_v2c_walk_stays_inside_the_subtree(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        names = snmp.walk("IF-MIB::ifName")
        system = snmp.walk("SNMPv2-MIB::system", max_repetitions=2)
    assert names == [(mibs.oid(f"ifName.{i}"), f"Ethernet{i}") for i in range(1, PORTS + 1)]
    assert [mibs.name(o) for o, _ in system] == [
        "SNMPv2-MIB::sysDescr.0", "SNMPv2-MIB::sysObjectID.0", "SNMPv2-MIB::sysUpTime.0",
        "SNMPv2-MIB::sysName.0",
    ]


def test_v2c_table_rows_by_index(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        rows = snmp.table(["ifName", "IF-MIB::ifOperStatus", "ifHighSpeed", "ifAlias"])
    assert sorted(rows, key=int) == [str(i) for i in range(1, PORTS + 1)]
    assert rows["2"] == {
        "ifName": "Ethernet2", "IF-MIB::ifOperStatus": 2, "ifHighSpeed": 400000,
        "ifAlias": "to spine2",
    }
    assert mibs.IF_OPER_STATUS[rows["1"]["IF-MIB::ifOperStatus"]] == "up"


def test_table_with_a_composite_index(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        neighbours = snmp.table(["lldpRemChassisIdSubtype", "lldpRemChassisId", "lldpRemSysName"])
    assert neighbours == {
        "0.1.1": {"lldpRemChassisIdSubtype": 4, "lldpRemChassisId": "0x0c0000000a01",
                  "lldpRemSysName": "spine1"},
        "0.2.1": {"lldpRemChassisIdSubtype": 4, "lldpRemChassisId": "0x0c0000000a02",
                  "lldpRemSysName": "spine2"},
    }


def test_counter64_grows_between_two_reads(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        first = snmp.get("IF-MIB::ifHCInOctets.4")[mibs.oid("ifHCInOctets.4")]
        time.sleep(0.05)
        second = snmp.get("IF-MIB::ifHCInOctets.4")[mibs.oid("ifHCInOctets.4")]
    assert first > 2**32  # really 64-bit on the wire
    assert second - first > 1.25e9 * 4 * 0.04  # about 5 GB/s for 50 ms, with margin


def test_missing_instance_is_a_protocol_error_unless_allowed(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        with pytest.raises(ProtocolError, match=r"no IF-MIB::ifName\.99") as caught:
            snmp.get("sysName.0", "ifName.99")
        optional = snmp.get("sysName.0", "ifName.99", missing_ok=True)
        absent = snmp.walk("ENTITY-SENSOR-MIB::entPhySensorTable")
    assert caught.value.device == "leaf1"
    assert optional == {mibs.oid("sysName.0"): "leaf1", mibs.oid("ifName.99"): None}
    assert absent == []


def test_provider_exception_becomes_generr_not_silence() -> None:
    def broken() -> int:
        raise RuntimeError("sensor bus stuck")

    with (
        SnmpAgent(DictMib({"sysName.0": "x", "sysLocation.0": broken}), community=COMMUNITY) as ag,
        SnmpTransport("leaf9", "127.0.0.1", v2c(ag.port)) as snmp,
    ):
        snmp.get("sysName.0")  # warm up: the first call builds the engine
        started = time.monotonic()
        with pytest.raises(ProtocolError, match=r"genErr at SNMPv2-MIB::sysLocation\.0"):
            snmp.get("sysName.0", "sysLocation.0")
        assert time.monotonic() - started < 0.3  # answered, not timed out


# --- v3 against the emulated agent ----------------------------------------------


@pytest.mark.parametrize(
    ("user", "protocols"),
    [("labuser", {}), ("labuser256", {"auth_protocol": "SHA256", "priv_protocol": "AES256"})],
)
def test_v3_authpriv_get_and_walk(agent: SnmpAgent, user: str, protocols: dict) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v3(agent.port, user=user, **protocols)) as snmp:
        got = snmp.get("sysName.0")
        octets = snmp.walk("ifHCInOctets")
    assert got == {mibs.oid("sysName.0"): "leaf1"}
    assert [mibs.index_of(o, "ifHCInOctets") for o, _ in octets] == [
        (i,) for i in range(1, PORTS + 1)
    ]
    assert all(isinstance(v, int) and v > 2**40 for _, v in octets)


# --- failures: typed, bounded, no secret ---------------------------------------


def test_wrong_community_times_out_within_bound(
    agent: SnmpAgent, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = v2c(agent.port, community="not-" + COMMUNITY)
    with SnmpTransport("leaf1", "127.0.0.1", settings) as snmp:
        started = time.monotonic()
        with pytest.raises(TransportTimeout) as caught:
            snmp.get("sysName.0")
        elapsed_s = time.monotonic() - started
    assert 0.5 <= elapsed_s < BOUND_S  # both tries were sent, and no more
    assert caught.value.device == "leaf1"
    assert "community" in str(caught.value)
    assert_no_secret(str(caught.value), repr(caught.value.args), caplog.text)


@pytest.mark.parametrize(
    ("user", "auth_key"),
    [("labuser", "wrong-" + AUTH_KEY), ("nobody", AUTH_KEY)],
    ids=["wrong-auth-key", "unknown-user"],
)
def test_v3_refused_credentials_are_auth_failed(
    agent: SnmpAgent, caplog: pytest.LogCaptureFixture, user: str, auth_key: str
) -> None:
    caplog.set_level(logging.DEBUG)
    with SnmpTransport("leaf1", "127.0.0.1", v3(agent.port, user=user, auth_key=auth_key)) as snmp:
        started = time.monotonic()
        with pytest.raises(AuthFailed) as caught:
            snmp.walk("system")
    assert time.monotonic() - started < BOUND_S
    assert caught.value.device == "leaf1"
    assert_no_secret(str(caught.value), repr(caught.value.args), caplog.text)


def test_silent_agent_times_out_bounded_then_recovers(agent: SnmpAgent) -> None:
    with SnmpTransport("leaf1", "127.0.0.1", v3(agent.port)) as snmp:
        snmp.get("sysName.0")  # engine id discovered while the agent talks
        agent.silent = True
        try:
            started = time.monotonic()
            with pytest.raises(TransportTimeout, match=r"after 2 tries of 0\.3 s"):
                snmp.walk("ifTable")
            assert time.monotonic() - started < BOUND_S
        finally:
            agent.silent = False
        assert snmp.get("sysName.0") == {mibs.oid("sysName.0"): "leaf1"}


def test_unreachable_port_times_out_bounded() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hole:
        hole.bind(("127.0.0.1", 0))  # bound, never read: nothing will answer
        with SnmpTransport("ghost", "127.0.0.1", v2c(hole.getsockname()[1], retries=0)) as snmp:
            started = time.monotonic()
            with pytest.raises(TransportTimeout, match=r"\[ghost\]"):
                snmp.get("sysName.0")
    assert time.monotonic() - started < 0.3 + 1.0


def test_settings_without_credentials_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"snmp\.community"):
        SnmpTransport("leaf1", "127.0.0.1", SnmpSettings(version="2c"))
    with pytest.raises(ConfigError, match=r"snmp\.auth_key: at least 8") as caught:
        SnmpTransport("leaf1", "127.0.0.1", SnmpSettings(version="3", user="u", auth_key="short"))
    assert "short" not in str(caught.value)


# --- threads, loops and clean shutdown -----------------------------------------


def test_usable_from_threads_and_from_inside_a_running_loop(agent: SnmpAgent) -> None:
    results: list[object] = []
    with SnmpTransport("leaf1", "127.0.0.1", v2c(agent.port)) as snmp:
        workers = [
            threading.Thread(target=lambda: results.append(snmp.walk("ifDescr")))
            for _ in range(4)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(10)

        async def inside_a_loop() -> dict:
            return snmp.get("sysName.0")

        from_loop = asyncio.run(inside_a_loop())
    assert len(results) == 4 and all(len(r) == PORTS for r in results)  # type: ignore[arg-type]
    assert from_loop == {mibs.oid("sysName.0"): "leaf1"}


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stop_and_close_leave_no_thread_or_socket() -> None:
    threads, fds = set(threading.enumerate()), _fds()
    agent = SnmpAgent(DictMib({"sysName.0": "tmp"}), community=COMMUNITY).start()
    port = agent.port
    snmp = SnmpTransport("tmp", "127.0.0.1", v2c(port))
    assert snmp.get("sysName.0") == {mibs.oid("sysName.0"): "tmp"}
    started = time.monotonic()
    snmp.close()
    agent.stop()
    assert time.monotonic() - started < 2.0
    # what it started is gone (a thread of an earlier test ending meanwhile is not a leak:
    # the CI-like run saw a finished Timer of another test make the sets differ)
    assert set(threading.enumerate()) - threads == set()
    assert _fds() <= fds  # no descriptor more than before
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
        again.bind(("127.0.0.1", port))  # the agent's port is free again


# --- MIB names and value conversion ---------------------------------------------


def test_mib_names_resolve_both_ways() -> None:
    assert mibs.oid("IF-MIB::ifHCInOctets.5") == "1.3.6.1.2.1.31.1.1.1.6.5"
    assert mibs.oid(".1.3.6.1.2.1.1.5.0") == "1.3.6.1.2.1.1.5.0"
    assert mibs.oid("lldpRemSysName") == "1.0.8802.1.1.2.1.4.1.1.9"
    assert mibs.oid("entPhysicalSerialNum.1") == "1.3.6.1.2.1.47.1.1.1.1.11.1"
    assert mibs.oid("entPhySensorValue") == "1.3.6.1.2.1.99.1.1.1.4"
    assert mibs.name("1.3.6.1.2.1.31.1.1.1.6.5") == "IF-MIB::ifHCInOctets.5"
    assert mibs.name("1.0.8802.1.1.2.1.4.1.1.7.0.12.1") == "LLDP-MIB::lldpRemPortId.0.12.1"
    assert mibs.name("1.3.6.1.4.1.8072") == "1.3.6.1.4.1.8072"
    assert mibs.index_of("1.0.8802.1.1.2.1.4.1.1.9.0.12.1", "lldpRemSysName") == (0, 12, 1)
    for module, objects in mibs.MODULES.items():
        for obj in objects:
            assert mibs.name(mibs.oid(f"{module}::{obj}")) == f"{module}::{obj}"
    with pytest.raises(KeyError, match="ifNoSuchThing"):
        mibs.oid("IF-MIB::ifNoSuchThing")


def test_sensor_reading_follows_rfc3433_fixed_point() -> None:
    assert mibs.sensor_reading(3345, scale=9, precision=2) == pytest.approx(33.45)  # celsius
    assert mibs.sensor_reading(-2510, scale=8, precision=1) == pytest.approx(-0.251)  # milli
    assert mibs.sensor_reading(12, scale=10, precision=-2) == pytest.approx(12000)
    with pytest.raises(ValueError, match="RFC 3433"):
        mibs.sensor_reading(1, scale=2**31 - 1, precision=0)


def test_octet_strings_become_text_or_hex() -> None:
    assert octets_to_str(b"Ethernet1/1") == "Ethernet1/1"
    assert octets_to_str(b"SN123\x00\x00") == "SN123"
    assert octets_to_str(b"\x00\x1b\x21\x3c\x4d\x5e") == "0x001b213c4d5e"
    assert octets_to_str(b"\xff\xfe") == "0xfffe"
    assert octets_to_str(b"") == ""


# --- net-snmp snmpd, the reference agent ------------------------------------------


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def snmpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    if SNMPD is None:
        pytest.skip("net-snmp snmpd is not installed (Debian package 'snmpd')")
    work = tmp_path_factory.mktemp("snmpd")
    state = work / "state"  # snmpd rewrites $SNMP_PERSISTENT_DIR/snmpd.conf: keep it apart
    state.mkdir()
    port = _free_udp_port()
    conf = work / "agent.conf"
    conf.write_text(
        f"agentAddress udp:127.0.0.1:{port}\n"
        f"rocommunity {COMMUNITY} 127.0.0.1\n"
        f'createUser labuser SHA "{AUTH_KEY}" AES "{PRIV_KEY}"\n'
        f'createUser labuser256 SHA256 "{AUTH_KEY}" AES256C "{PRIV_KEY}"\n'
        "rouser labuser priv\n"
        "rouser labuser256 priv\n"
    )
    env = os.environ | {"MIBS": "", "SNMP_PERSISTENT_DIR": str(state)}
    proc = subprocess.Popen(
        [SNMPD, "-f", "-Lf", str(work / "log"), "-C", "-c", str(conf), "-p", str(work / "pid")],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        with SnmpTransport("snmpd", "127.0.0.1", v2c(port, timeout_s=0.2, retries=0)) as probe:
            deadline = time.monotonic() + 5.0
            while True:
                try:
                    probe.get("sysName.0")
                    break
                except TransportTimeout:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log = (work / "log").read_text() if (work / "log").exists() else ""
                        pytest.fail(f"snmpd did not answer on port {port}:\n{log}")
        yield port
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # -f: no fork, our child is the daemon
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.parametrize("version", ["2c", "3", "3-sha256-aes256"])
def test_snmpd_walks_system_and_if_mib(snmpd: int, version: str) -> None:
    if version == "2c":
        settings = v2c(snmpd, timeout_s=1.0)
    elif version == "3":
        settings = v3(snmpd, timeout_s=1.0)
    else:
        settings = v3(snmpd, user="labuser256", auth_protocol="SHA256", priv_protocol="AES256",
                      timeout_s=1.0)
    with SnmpTransport("snmpd", "127.0.0.1", settings) as snmp:
        system = dict(snmp.walk("system"))
        if_count = snmp.get("ifNumber.0")[mibs.oid("ifNumber.0")]
        rows = snmp.table(["ifDescr", "ifOperStatus", "ifName", "ifHCInOctets"])
        count, rate = walk_rate(snmp, ["system", "ifTable", "ifXTable"])
    assert system[mibs.oid("sysName.0")] == socket.gethostname()
    assert system[mibs.oid("sysObjectID.0")].startswith("1.3.6.1.4.1.8072.")  # net-snmp
    assert len(rows) == if_count >= 1
    loopback = next(row for row in rows.values() if row["ifDescr"] == "lo")
    assert loopback["ifName"] == "lo"
    assert isinstance(loopback["ifHCInOctets"], int)
    print(f"\nsnmpd v{version}: walked {count} OIDs at {rate:,.0f} OIDs/s")


def test_snmpd_wrong_auth_key_is_auth_failed(snmpd: int) -> None:
    settings = v3(snmpd, auth_key="wrong-" + AUTH_KEY)
    with SnmpTransport("snmpd", "127.0.0.1", settings) as snmp, pytest.raises(AuthFailed) as caught:
        snmp.get("sysName.0")
    assert_no_secret(str(caught.value))


def test_emulated_agent_walk_throughput(agent: SnmpAgent) -> None:
    for label, settings in (("v2c", v2c(agent.port)), ("v3", v3(agent.port))):
        with SnmpTransport("leaf1", "127.0.0.1", settings) as snmp:
            count, rate = walk_rate(snmp, ["system", "ifTable", "ifXTable"])
        assert count == 4 + 7 * PORTS + 4 * PORTS
        print(f"\nemulated agent {label}: walked {count} OIDs at {rate:,.0f} OIDs/s")


def test_every_request_is_answered_inside_the_lab_serving_mark(serving_mark: Any) -> None:
    """An emulated lab's clock keeps its pace while an agent answers (as SSH and OTG do)."""
    with SnmpAgent(switch_mib(), community=COMMUNITY, serving=serving_mark) as running, \
            SnmpTransport("leaf1", "127.0.0.1", v2c(running.port)) as snmp:
        snmp.get("sysName.0")
    assert serving_mark.entered
