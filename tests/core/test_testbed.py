"""Testbed loading: located errors, all of them at once, secrets resolved."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from labtest.errors import ConfigError
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[2]
GOOD = """\
name: lab1
devices:
  leaf1:
    role: leaf
    driver: sonic
    address: 127.0.0.1
    ssh: {username: admin, password: "${env:LT_TEST_PW}"}
  host1:
    role: host
    driver: linux
    address: 127.0.0.1
    ssh: {username: lab, key_file: id_ed25519}
links:
  - {a: "leaf1:Ethernet0", b: "host1:eth0", speed_gbps: 400, optic: 400G-DR4}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tb.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    return info.value.problems


def test_example_testbeds_load() -> None:
    for path in sorted((ROOT / "testbeds").rglob("*.yaml")):
        tb = load_testbed(path)
        assert tb.devices, path


def test_good_file_resolves_env_secret_and_relative_paths(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LT_TEST_PW", "s3cret-value")
    tb = load_testbed(write(tmp_path, GOOD))
    assert tb.devices["leaf1"].ssh.password.get_secret_value() == "s3cret-value"
    assert "s3cret-value" not in repr(tb)
    assert tb.devices["host1"].ssh.key_file == tmp_path / "id_ed25519"
    assert tb.peer("leaf1", "Ethernet0").device == "host1"
    assert tb.warnings == []


def test_three_mistakes_give_three_located_errors(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LT_TEST_PW", "x" * 8)
    bad = GOOD.replace("role: leaf", "role: leaf\n    colour: blue")  # unknown field
    bad = bad.replace("{username: lab,", "{port: 70000, username: lab,")  # out of range
    bad = bad.replace('b: "host1:eth0"', 'b: "host9:eth0"')  # dangling reference
    errs = problems(write(tmp_path, bad))
    assert len(errs) == 3, errs
    path = str(tmp_path / "tb.yaml")
    assert errs[0].startswith(f"{path}:5:5: devices.leaf1.colour: unknown field")
    assert errs[1].startswith(f"{path}:13:11: devices.host1.ssh.port:")
    assert "70000" in errs[1] and "65535" in errs[1]
    assert errs[2].startswith(f"{path}:15:") and "links[0].b: unknown device 'host9'" in errs[2]


def test_missing_env_secret_is_located_and_names_variable(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("LT_TEST_PW", raising=False)
    errs = problems(write(tmp_path, GOOD))
    assert len(errs) == 1
    assert ":7:" in errs[0] and "devices.leaf1.ssh.password" in errs[0]
    assert "LT_TEST_PW" in errs[0]


def test_env_default_and_file_reference(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("LT_TEST_PW", raising=False)
    (tmp_path / "pw.txt").write_text("from-a-file\n")
    text = GOOD.replace("${env:LT_TEST_PW}", "${file:pw.txt}")
    tb = load_testbed(write(tmp_path, text))
    assert tb.devices["leaf1"].ssh.password.get_secret_value() == "from-a-file"
    text = GOOD.replace("${env:LT_TEST_PW}", "${env:LT_TEST_PW:-lab-default}")
    tb = load_testbed(write(tmp_path, text))
    assert tb.devices["leaf1"].ssh.password.get_secret_value() == "lab-default"


def test_literal_password_warns_with_location(tmp_path) -> None:
    tb = load_testbed(write(tmp_path, GOOD.replace('"${env:LT_TEST_PW}"', "plaintext1")))
    assert len(tb.warnings) == 1
    assert ":7:" in tb.warnings[0] and "literal secret" in tb.warnings[0]
    assert "plaintext1" not in tb.warnings[0]


def test_secret_type_error_does_not_echo_the_value(tmp_path) -> None:
    errs = problems(write(tmp_path, GOOD.replace('"${env:LT_TEST_PW}"', "[hunter22, x]")))
    assert errs and all("hunter22" not in e for e in errs)


def test_syntax_error_and_duplicate_key_are_located(tmp_path) -> None:
    errs = problems(write(tmp_path, "name: a\ndevices: {x: [}\n"))
    assert ":2:" in errs[0] and "YAML syntax" in errs[0]
    errs = problems(write(tmp_path, "name: a\nname: b\ndevices: {}\n"))
    assert errs[0].endswith("name: duplicate key") and ":2:1:" in errs[0]


def test_cabling_checks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LT_TEST_PW", "x" * 8)
    text = GOOD + '  - {a: "leaf1:Ethernet0", b: "leaf1:Ethernet4"}\n  - {a: "host1", b: "x:y"}\n'
    errs = problems(write(tmp_path, text))
    assert any("links[1].a: port leaf1:Ethernet0 is cabled more than once" in e for e in errs)
    assert any("links[2].a:" in e and "device:port" in e for e in errs)


def test_snmp_v3_requires_keys_and_v2c_community(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LT_TEST_PW", "x" * 8)
    text = GOOD.replace(
        "    address: 127.0.0.1\n    ssh: {username: admin",
        "    address: 127.0.0.1\n    snmp: {version: 3, user: u}\n    ssh: {username: admin",
    )
    errs = problems(write(tmp_path, text))
    assert any("SNMP v3 authPriv needs 'auth_key'" in e for e in errs)
    assert any("SNMP v3 authPriv needs 'priv_key'" in e for e in errs)


def test_yaml_merge_keys_keep_locations(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LT_TEST_PW", "x" * 8)
    text = GOOD + "  - {a: 'h2:eth0', b: 'leaf1:Ethernet8'}\n"
    text = text.replace("links:", "  h2:\n    <<: *host\n    role: [bad]\nlinks:")
    text = text.replace("  host1:\n", "  host1: &host\n")
    errs = problems(write(tmp_path, text))
    assert len(errs) == 1 and "devices.h2.role" in errs[0] and ":15:5:" in errs[0]
