"""Helpers of the switch personality tests: a small testbed, and structure comparison.

Structure: compare the shape of an emulated switch's output with a real published one.

Values differ between any two switches; what must not differ is the shape a
parser (ours or anyone's) relies on: the columns of a table and their order,
the ``Key:`` lines of a key/value report, the keys and value types of a JSON
document. Real samples live under ``tests/drivers/samples`` (and a few under
``tests/emulation/samples``); the first line of each names its source.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from labtest.emulation.model import fabric as fabric_module
from labtest.emulation.model.fabric import Fabric
from labtest.testbed.model import Testbed

TESTS = Path(__file__).resolve().parents[1]
SAMPLE_DIRS = (
    TESTS / "drivers" / "samples",
    TESTS / "drivers" / "driver_samples",
    TESTS / "emulation" / "samples",
)
_ECHO = re.compile(r"^(\S+@\S+[#$]|\S+#|DUT: |\$ |show |root@)")  # a captured prompt line
_DASHES = re.compile(r"^\s*-+(?:\s+-+)+\s*$")
# interface names, and the traffic classes / queue numbers EOS keys its queue counters by
_PORT_KEY = re.compile(
    r"^(?:(Ethernet|Management|Port-Channel|Loopback|Vlan|Et)\S*|TC\d+|\d+"
    r"|\d+\.\d+\.\d+\.\d+|[0-9a-f]*:[0-9a-f:]*(?:%\S+)?|)$"  # peer addresses; "" no interface
)


def sample(driver: str, stem: str) -> str:
    """A stored real sample without its source line and echoed command lines."""
    for base in SAMPLE_DIRS:
        path = base / driver / f"{stem}.txt"
        if path.exists():
            first, _, body = path.read_text().partition("\n")
            assert first.startswith("# source: "), f"{path}: first line must name the source"
            lines = body.splitlines()
            while lines and (not lines[0].strip() or _ECHO.match(lines[0])):
                lines.pop(0)
            return "\n".join(lines)
    raise FileNotFoundError(f"no sample {driver}/{stem}")


# --- the testbed ---------------------------------------------------------------------

#: short timeouts: a probe of a rebooting emulated switch must give up quickly
SSH = {"username": "admin", "timeout_s": 2.0, "command_timeout_s": 3.0}


def testbed(**leaf_vars: Any) -> Testbed:
    """A SONiC leaf and an EOS spine cabled twice, a host, and an empty leaf port."""
    return Testbed.model_validate(
        {
            "name": "personalities",
            "devices": {
                "leaf1": {"role": "leaf", "driver": "sonic", "ports": ["Ethernet24"],
                          "vars": dict(leaf_vars), "ssh": SSH},
                "spine1": {"role": "spine", "driver": "eos", "ssh": SSH},
                "host1": {"role": "host", "driver": "manual-host"},
            },
            "links": [
                {"a": "leaf1:Ethernet0", "b": "spine1:Ethernet1/1", "speed_gbps": 400,
                 "optic": "400G-DR4", "length_m": 30},
                {"a": "leaf1:Ethernet8", "b": "spine1:Ethernet2/1", "speed_gbps": 400,
                 "optic": "400G-FR4", "length_m": 30},
                {"a": "host1:eth0", "b": "leaf1:Ethernet16", "speed_gbps": 400,
                 "optic": "400G-DR4", "length_m": 3},
            ],
        }
    )


def quiet_fabric(mp: pytest.MonkeyPatch, tb: Testbed | None = None) -> Fabric:
    """A fabric on a virtual clock whose DOM reads carry no measurement noise, so a
    value printed by an emulator can be compared with a later ``fabric.dom()`` read."""
    for key in fabric_module.NOISE:
        mp.setitem(fabric_module.NOISE, key, 0.0)
    fabric = Fabric(tb or testbed())
    fabric.advance(120.0)  # FEC and LLDP counters have something to count
    return fabric


# --- tables ----------------------------------------------------------------------------


def table_headers(text: str) -> list[list[str]]:
    """Column names of every tabulate table (the line above each dash line)."""
    lines = text.splitlines()
    return [
        re.split(r"\s{2,}", lines[i - 1].strip())
        for i, line in enumerate(lines)
        if i and _DASHES.match(line)
    ]


def first_column(text: str) -> list[str]:
    """Row labels of the first table (``BIN0``, ``BIN1``, ...)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _DASHES.match(line)) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip() or _DASHES.match(line):
            break
        rows.append(line.split()[0])
    return rows


def header_words(text: str, first_word: str) -> list[str]:
    """The words of the first line starting with ``first_word`` (EOS text tables)."""
    return next(line.split() for line in text.splitlines() if line.startswith(first_word))


# --- key/value reports -------------------------------------------------------------------


def report_keys(text: str, stop: str = "Docker images") -> list[str]:
    """``Key:`` names at the left margin, in order, up to the ``stop`` line."""
    keys = []
    for line in text.splitlines():
        if line.startswith(stop):
            break
        m = re.match(r"^([A-Za-z][^:]*?)\s*:", line)
        if m:
            keys.append(m.group(1))
    return keys


def eeprom_keys(text: str) -> set[str]:
    """Indented ``Key: value`` names of an sfputil dump, lane numbers folded to ``N``."""
    keys = set()
    for line in text.splitlines():
        m = re.match(r"^\s+([^:]+?)\s*:", line)
        if m:
            keys.add(re.sub(r"\d+", "N", m.group(1)))
    return keys


# --- JSON --------------------------------------------------------------------------------


def json_problems(ours: Any, samples: list[Any], path: str = "$") -> list[str]:
    """Where ``ours`` leaves the shape of the real ``samples`` (empty when it does not).

    A dict keyed by interface names is a collection: each of our entries is held
    against every sample entry. Keys every sample has are required; keys no
    sample has are refused. Lists compare their elements with the samples'
    elements; scalars compare JSON types (``null`` matches anything).
    """
    samples = [s for s in samples if s is not None]
    if not samples:
        return []
    if isinstance(ours, dict) and all(isinstance(s, dict) for s in samples):
        if _collection(ours) and all(_collection(s) for s in samples):
            entries = [v for s in samples for v in s.values() if v != {}]
            out: list[str] = []
            for key, value in ours.items():
                if value != {}:
                    out += json_problems(value, entries, f"{path}.{key}")
            return out
        required = set.intersection(*(set(s) for s in samples))
        allowed = set.union(*(set(s) for s in samples))
        out = [f"{path}: missing key {k!r}" for k in sorted(required - set(ours))]
        out += [f"{path}: key {k!r} is in no real sample" for k in sorted(set(ours) - allowed)]
        for key in sorted(set(ours) & allowed):
            out += json_problems(ours[key], [s.get(key) for s in samples], f"{path}.{key}")
        return out
    if isinstance(ours, list) and all(isinstance(s, list) for s in samples):
        elements = [e for s in samples for e in s]
        return [p for i, e in enumerate(ours) for p in json_problems(e, elements, f"{path}[{i}]")]
    kinds = {_kind(s) for s in samples}
    if _kind(ours) not in kinds and ours is not None:
        return [f"{path}: {_kind(ours)} where real output has {sorted(kinds)}"]
    return []


def _collection(d: dict[str, Any]) -> bool:
    return bool(d) and all(_PORT_KEY.match(k) for k in d)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def load_json(text: str) -> Any:
    return json.loads(text[text.index("{"):])
