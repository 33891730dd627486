"""The testbed loader on mutated YAML: ``ConfigError`` with located problems, or a
valid testbed; never another exception, never a hang.

Mutations of the shipped testbeds: cut at every line and mid-line, every line
duplicated (then the result must be a ConfigError or equal to the intact
testbed: a repeated key, link or port is an error, never a silent second
value), seeded random byte flips and bad-byte inserts (``random.Random`` per
file name: the same inputs every run, see test_parsers_fuzz.py), and YAML's own
hazards spliced in (a recursive alias, a list as key, an alias bomb, ``.inf``,
a driver typo, NUL, a python tag, 5000 open brackets).

A file cut at a line end is a shorter valid file, and one cut inside its last
value reads the cut value: YAML cannot tell, so those are only held to "no
exception other than ConfigError".
"""

from __future__ import annotations

import random
import shutil
import zlib
from pathlib import Path

import pytest
from mutate import BAD_BYTES, duplicate_line, flip, insert, line_cuts

from labtest.errors import ConfigError
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[2]
#: the shipped testbeds (other YAML under testbeds/, e.g. suite settings, is not one)
TESTBEDS = sorted(
    p for p in (ROOT / "testbeds").rglob("*.yaml") if "\ndevices:" in f"\n{p.read_text()}"
)

HAZARDS = (
    "x: &loop [*loop]\n",
    "? [a, b]\n: 1\n",
    "b0: &b0 [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]\n" for i in range(1, 9)),
    "emulation: {time_scale: .inf}\n",
    "devices: {leaf9: {role: leaf, driver: sonci}}\n",
    "\x00\n",
    "key: !!python/object:os.system [echo]\n",
    "[" * 5000 + "\n",
)

BYTE_ROUNDS = 40  # mutated copies per testbed


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the testbeds folder, so relative paths (limits, known_hosts) resolve alike."""
    shutil.copytree(ROOT / "testbeds", tmp_path / "testbeds")
    for sibling in ("suites", "reports"):
        if (ROOT / sibling).exists():
            (tmp_path / sibling).symlink_to(ROOT / sibling)
    return tmp_path


def _load(path: Path, data: bytes):
    path.write_bytes(data)
    try:
        return load_testbed(path)
    except ConfigError as exc:
        assert exc.problems and all(isinstance(p, str) for p in exc.problems)
        return None


@pytest.mark.parametrize("source", TESTBEDS, ids=[p.name for p in TESTBEDS])
def test_cuts_load_or_are_config_errors(source, workdir, tried, monkeypatch):
    monkeypatch.chdir(workdir)
    path = workdir / source.relative_to(ROOT)
    for mutated in line_cuts(source.read_text()):
        tried["testbed-cut"] += 1
        _load(path, mutated.encode())


@pytest.mark.parametrize("source", TESTBEDS, ids=[p.name for p in TESTBEDS])
def test_duplicated_lines_are_config_errors_or_change_nothing(source, workdir, tried, monkeypatch):
    monkeypatch.chdir(workdir)
    path = workdir / source.relative_to(ROOT)
    text = source.read_text()
    path.write_text(text)
    intact = load_testbed(path).model_dump(mode="json")
    changed = []
    for i in range(text.count("\n")):
        tried["testbed-duplicate"] += 1
        tb = _load(path, duplicate_line(text, i).encode())
        if tb is not None and tb.model_dump(mode="json") != intact:
            changed.append(f"line {i + 1}: {text.splitlines()[i].strip()!r}")
    assert not changed, changed


@pytest.mark.parametrize("source", TESTBEDS, ids=[p.name for p in TESTBEDS])
def test_bytes_and_yaml_hazards_load_or_are_config_errors(source, workdir, tried, monkeypatch):
    monkeypatch.chdir(workdir)
    path = workdir / source.relative_to(ROOT)
    data = source.read_bytes()
    rng = random.Random(zlib.crc32(source.name.encode()))
    size = len(data) + 1

    def run(
        flips: list[int], inserts: list[tuple[int, bytes]], hazard: tuple[int, str] | None
    ) -> None:
        mutated = data
        for at in flips:
            mutated = flip(mutated, at)
        for at, byte in inserts:
            mutated = insert(mutated, at, byte)
        if hazard:
            lines = mutated.split(b"\n")
            at = hazard[0] % (len(lines) + 1)
            mutated = b"\n".join([*lines[:at], hazard[1].encode().rstrip(b"\n"), *lines[at:]])
        tried["testbed-bytes"] += 1
        _load(path, mutated)

    for _ in range(BYTE_ROUNDS):
        flips = [rng.randrange(size) for _ in range(rng.randint(0, 2))]
        inserts = [(rng.randrange(size), rng.choice(BAD_BYTES)) for _ in range(rng.randint(0, 2))]
        hazard = (rng.randrange(size), rng.choice(HAZARDS)) if rng.random() < 0.5 else None
        run(flips, inserts, hazard)


@pytest.mark.parametrize(
    "hazard", HAZARDS, ids=["recursive", "list-key", "bomb", "inf", "driver", "nul", "tag", "deep"]
)
def test_each_yaml_hazard_is_a_located_config_error(hazard, workdir, tried):
    path = workdir / "testbeds" / "hazard.yaml"
    base = (ROOT / "testbeds" / "example-lab.yaml").read_text()
    if hazard.startswith(("devices", "emulation")):  # a second top-level key of that name
        base = base.replace("\ndevices:", "\ndevices_:", 1).replace("\nemulation:", "\nemul_:", 1)
        hazard = base.replace("\ndevices_:", "\ndevices:", 1) + hazard  # duplicated key
        text = hazard
    else:
        text = hazard + base
    path.write_text(text)
    tried["testbed-hazard"] += 1
    with pytest.raises(ConfigError) as info:
        load_testbed(path)
    assert all(p.startswith(f"{path}:") for p in info.value.problems), info.value.problems
