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
        if "\ndevices:" not in f"\n{path.read_text()}":
            continue  # other YAML kept beside a testbed (suite settings)
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


# --- inputs that never lie: hostile YAML and load-time validation (issues 14, 15) ------

BASE = """\
name: lab1
devices:
  leaf1: {role: leaf, driver: sonic, ports: [Ethernet0, Ethernet8]}
  leaf2: {role: leaf, driver: sonic, ports: [Ethernet0]}
links:
  - {a: "leaf1:Ethernet0", b: "leaf2:Ethernet0"}
"""


def test_self_referencing_alias_is_a_located_error(tmp_path) -> None:
    errs = problems(write(tmp_path, BASE + "emulation: &loop {faults: [*loop]}\n"))
    assert any("recursive" in e and ":7:" in e for e in errs), errs


def test_list_used_as_mapping_key_is_a_located_error(tmp_path) -> None:
    errs = problems(write(tmp_path, BASE.replace("name: lab1", "? [a, b]\n: 1\nname: lab1")))
    assert any("mapping key must be a plain value" in e and ":1:3:" in e for e in errs), errs


def test_alias_bomb_is_refused_quickly_not_expanded(tmp_path) -> None:
    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(bomb) + "\n" + BASE)
    errs = problems(path)
    assert len(errs) == 1 and "alias bomb" in errs[0] and f"{path}:1:1:" in errs[0]


def test_limits_file_alias_bomb_is_refused(tmp_path) -> None:
    from labtest.measure import load_limits

    bomb = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "limits.yaml"
    path.write_text("\n".join(bomb) + "\n")
    with pytest.raises(ConfigError, match="alias bomb"):
        load_limits(path)


def test_non_utf8_file_names_line_and_column(tmp_path) -> None:
    path = tmp_path / "tb.yaml"
    path.write_bytes(
        BASE.encode().replace(
            b"role: leaf, driver: sonic, ports", b"role: l\xe9af, driver: sonic, ports", 1
        )
    )
    errs = problems(path)
    assert len(errs) == 1
    assert errs[0].startswith(f"{path}:3:18: not UTF-8 (byte 0xe9); save the file as UTF-8")


def test_secret_file_that_is_binary_is_a_located_error(tmp_path) -> None:
    (tmp_path / "pw.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    text = BASE.replace(
        "  leaf2: {role: leaf, driver: sonic, ports: [Ethernet0]}",
        "  leaf2:\n    role: leaf\n    driver: sonic\n    ports: [Ethernet0]\n"
        "    address: 127.0.0.1\n"
        '    ssh: {username: admin, password: "${file:pw.bin}"}',
    )
    errs = problems(write(tmp_path, text))
    assert any("leaf2.ssh.password" in e and "not UTF-8 text" in e and ":9:" in e for e in errs)


def test_unknown_driver_suggests_the_close_name(tmp_path) -> None:
    errs = problems(
        write(
            tmp_path,
            BASE.replace(
                "driver: sonic, ports: [Ethernet0]}", "driver: sonci, ports: [Ethernet0]}"
            ),
        )
    )
    assert len(errs) == 1
    assert ":4:" in errs[0] and "devices.leaf2.driver" in errs[0]
    assert "unknown driver 'sonci'; did you mean 'sonic'?" in errs[0]


def test_faults_checked_against_the_catalogue(tmp_path) -> None:
    text = BASE + textwrap.dedent(
        """\
        emulation:
          time_scale: .inf
          faults:
            - {kind: dirty_conector, target: "leaf1:Ethernet0"}
            - {kind: dirty_connector, target: "leaf1:Ethernet0", params: {loss_db: -1}}
            - {kind: dirty_connector, target: "leaf9:Ethernet0"}
            - {kind: dirty_connector, target: "leaf1:Ethernet0--leaf2:Ethernet4"}
        """
    )
    errs = problems(write(tmp_path, text))
    joined = "\n".join(errs)
    assert len(errs) == 5, joined
    assert "emulation.time_scale" in joined and "finite" in joined
    assert "unknown fault 'dirty_conector'; did you mean 'dirty_connector'?" in joined
    assert "emulation.faults[1].params" in joined and "loss_db" in joined
    assert "unknown device 'leaf9'" in joined and ":12:" in joined
    assert "no link 'leaf1:Ethernet0--leaf2:Ethernet4'" in joined


def test_devices_named_in_vars_must_exist(tmp_path) -> None:
    text = BASE.replace(
        "links:",
        "  pdu1: {role: pdu, driver: pdu, vars: {feeds: {1: leaf1, 2: leaf3}}}\n"
        '  voa1: {role: attenuator, driver: voa, vars: {link: "leaf2:Ethernet9"}}\n'
        "  opm1: {role: power-meter, driver: opm,\n"
        '         vars: {taps: ["leaf1:Ethernet0", "spine1:Ethernet0"]}}\n'
        "links:",
    )
    errs = problems(write(tmp_path, text))
    joined = "\n".join(errs)
    assert len(errs) == 3, joined
    assert "devices.pdu1.vars.feeds[2]" in joined and "unknown device 'leaf3'" in joined
    assert "device 'leaf2' has no port 'Ethernet9'" in joined
    assert "devices.opm1.vars.taps[1]" in joined and "'spine1'" in joined


def test_testbed_check_exits_2_with_every_error_and_never_a_traceback(tmp_path, capsys) -> None:
    from labtest.cli import main

    assert main(["testbed", "check", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "Traceback" not in err
    bad = write(
        tmp_path,
        BASE.replace("driver: sonic, ports: [Ethernet0]}", "driver: sonci, ports: [Ethernet0]}")
        + "emulation: {time_scale: .inf}\n",
    )
    assert main(["testbed", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'sonic'" in err and "finite" in err and "2 error(s)" in err


def test_kernel_backend_faults_are_checked_for_targets_only(tmp_path) -> None:
    text = BASE + textwrap.dedent(
        """\
        emulation:
          backend: kernel
          faults:
            - {kind: link_down, target: "leaf1:Ethernet0"}
            - {kind: link_down, target: "leaf7:Ethernet0"}
        """
    )
    errs = problems(write(tmp_path, text))
    assert len(errs) == 1 and "faults[1].target" in errs[0] and "'leaf7'" in errs[0]


def test_pytest_plugin_stops_with_a_usage_error_naming_every_problem(pytester, tmp_path) -> None:
    bad = write(tmp_path, BASE.replace("driver: sonic, ports: [Ethernet0]}", "driver: sonci}"))
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(f"--testbed={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown driver 'sonci'; did you mean 'sonic'?*"])
