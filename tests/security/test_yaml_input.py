"""Issue 37 items 5 and 6: a config file cannot cost minutes, gigabytes, or a silent object.

Every user-facing YAML file (testbed, limits, station, settings) is read by
``labtest.yamlsource.read``: a file over ``MAX_BYTES`` is refused before it is
parsed, with its size said; an alias bomb is refused within a second; a
document with too many values says so (not "alias bomb"); and any tag that is
not a plain YAML type (``!!python/object`` on a mapping, ``!!python/tuple``,
``!!binary``, ``!custom``) is an error at its file:line:column.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from labtest import yamlsource
from labtest.errors import ConfigError

TESTBED = """\
name: lab1
devices:
  leaf1: {role: leaf, driver: sonic, ports: [Ethernet0]}
"""


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        yamlsource.read(path)
    return info.value.problems


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as fh:  # 50 MB of a plausible testbed: sparse, written at once
        fh.write(TESTBED.encode())
        fh.truncate(50 * 2**20)
    began = time.monotonic()
    errs = problems(path)
    assert time.monotonic() - began < 1.0
    assert errs == [f"{path}:1:1: the file is 50.0 MB; a config file may be at most 8 MB "
                    "(is this the file you meant?)"]
    assert "alias" not in errs[0]


def test_the_limit_holds_for_a_pipe_whose_size_is_unknown(tmp_path: Path) -> None:
    fifo = tmp_path / "tb.yaml"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the writer: more than the limit, then gone
        try:
            with fifo.open("wb") as fh:
                chunk = b"# " + b"x" * (2**20 - 3) + b"\n"
                for _ in range(yamlsource.MAX_BYTES // 2**20 + 2):
                    fh.write(chunk)
        finally:
            os._exit(0)
    try:
        errs = problems(fifo)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert errs == [f"{fifo}:1:1: the file is more than that; a config file may be at most "
                    "8 MB (is this the file you meant?)"]


def test_the_limit_is_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsource, "MAX_BYTES", 4096)
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED + "#" * (4096 - len(TESTBED) - 1) + "\n")
    assert yamlsource.read(path).data["name"] == "lab1"
    path.write_text(TESTBED + "#" * (4096 - len(TESTBED)) + "\n")
    assert "a config file may be at most" in problems(path)[0]


def test_billion_laughs_is_refused_within_a_second(tmp_path: Path) -> None:
    lol = ['lol0: &l0 "lol"']
    lol += [f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lol) + "\n")
    began = time.monotonic()
    errs = problems(path)
    assert time.monotonic() - began < 1.0  # measured, never expanded (~10 ms)
    assert len(errs) == 1 and "alias bomb" in errs[0] and errs[0].startswith(f"{path}:1:1:")


def test_an_alias_bomb_through_merge_keys_is_refused_too(tmp_path: Path) -> None:
    lines = ["m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}"]
    for i in range(1, 8):
        refs = ", ".join(f"k{j}: *m{i - 1}" for j in range(10))
        lines.append(f"m{i}: &m{i} {{<<: *m{i - 1}, {refs}}}")
    path = tmp_path / "merge.yaml"
    path.write_text("\n".join(lines) + "\n")
    errs = problems(path)
    assert len(errs) == 1 and "alias bomb" in errs[0]


def test_a_large_testbed_with_a_merge_per_device_is_not_a_bomb(tmp_path: Path) -> None:
    lines = ["x-host: &host {role: host, driver: linux, vars: {a: 1, b: 2, c: 3}}", "devices:"]
    lines += [f"  h{i}: {{<<: *host, address: 10.0.{i // 250}.{i % 250 + 1}}}" for i in range(3000)]
    path = tmp_path / "big.yaml"
    path.write_text("name: big\n" + "\n".join(lines) + "\n")
    assert len(yamlsource.read(path).data["devices"]) == 3000


def test_too_many_values_without_aliases_is_not_called_an_alias_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yamlsource, "MAX_NODES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text("values: [" + ", ".join(["1"] * 2000) + "]\n")
    errs = problems(path)
    assert errs == [f"{path}:1:1: the document holds more than 1000 values; "
                    "a config file is not that big"]


@pytest.mark.parametrize(
    ("line", "tag", "col"),
    [
        ("emulation: !!python/object:labtest.Evil {backend: model}", "!!python/object:labtest.Evil",
         12),
        ("emulation: !!python/object/new:os.system {args: [id]}",
         "!!python/object/new:os.system", 12),
        ("notes: !!python/tuple [1, 2]", "!!python/tuple", 8),
        ("notes: !!binary aGVsbG8=", "!!binary", 8),
        ("notes: !!set {a, b}", "!!set", 8),
        ("notes: !!omap [{a: 1}]", "!!omap", 8),
        ("notes: !custom {a: 1}", "!custom", 8),
        ("notes: !!python/name:os.system", "!!python/name:os.system", 8),
    ],
)
def test_a_tag_that_is_not_plain_yaml_is_a_located_error(
    tmp_path: Path, line: str, tag: str, col: int
) -> None:
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED + line + "\n")
    errs = problems(path)
    assert len(errs) == 1, errs
    assert errs[0].startswith(f"{path}:4:{col}: ")
    assert f"the tag {tag} is not allowed" in errs[0]


def test_a_tagged_key_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED + "? !!binary aGVsbG8=\n: 1\n")
    errs = problems(path)
    assert len(errs) == 1 and errs[0].startswith(f"{path}:4:3: ") and "!!binary" in errs[0]


def test_plain_tags_and_implicit_types_are_still_read(tmp_path: Path) -> None:
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED + "vars: !!map {serial: !!str 0123, n: !!int 3, when: 2024-05-01, "
                    "x: !!float 1, on: !!bool true, none: !!null '', l: !!seq [1]}\n")
    data = yamlsource.read(path).data["vars"]
    assert data["serial"] == "0123" and data["n"] == 3 and data["x"] == 1.0
    assert str(data["when"]) == "2024-05-01" and data["l"] == [1] and data["none"] is None


def test_the_testbed_loader_refuses_a_python_object_mapping(tmp_path: Path) -> None:
    from labtest.testbed import load_testbed

    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED.replace("leaf1: {role", "leaf1: !!python/object:x.Y {role"))
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    assert any(p.startswith(f"{path}:3:10: ") and "!!python/object:x.Y" in p
               for p in info.value.problems), info.value.problems
