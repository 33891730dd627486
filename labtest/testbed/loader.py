"""Load a testbed file: parse, resolve secrets, validate, cross-check the cabling."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from labtest import secrets
from labtest.errors import SecretError
from labtest.testbed.model import SECRET_KEYS, Testbed
from labtest.yamlsource import Loc, Source, read, validate

PATH_KEYS = frozenset({"known_hosts", "key_file", "limits"})


def load_testbed(path: str | Path) -> Testbed:
    """Return the validated testbed or raise ``ConfigError`` listing every problem."""
    path = Path(path)
    src = read(path)
    warnings: list[str] = []
    _prepare(src.data, (), src, warnings)
    testbed = validate(src, Testbed, SECRET_KEYS)
    if testbed is not None:
        _check_cabling(testbed, src)
    src.raise_if_problems()
    assert testbed is not None
    testbed._source = path
    testbed._warnings = warnings
    return testbed


def _prepare(node: Any, loc: Loc, src: Source, warnings: list[str]) -> None:
    """Resolve secret references and relative paths in place, before validation."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _prepare(item, (*loc, i), src, warnings)
        return
    if not isinstance(node, dict):
        return
    for key, value in list(node.items()):
        here = (*loc, key)
        if key in SECRET_KEYS and isinstance(value, str):
            if not secrets.is_reference(value):
                place, dotted = src.where(here)
                warnings.append(
                    f"{place}: {dotted}: literal secret in the file; use ${{env:NAME}} "
                    "or ${file:path}"
                )
            try:
                node[key] = secrets.resolve(value, src.path.parent)
            except SecretError as exc:
                src.problem(here, str(exc))
        elif key in PATH_KEYS and isinstance(value, str) and value:
            p = Path(value).expanduser()
            node[key] = str(p if p.is_absolute() else (src.path.parent / p))
        else:
            _prepare(value, here, src, warnings)


def _check_cabling(tb: Testbed, src: Source) -> None:
    used: Counter[tuple[str, str]] = Counter()
    for i, link in enumerate(tb.links):
        for side, end in zip(("a", "b"), link.ends, strict=True):
            dev = tb.devices.get(end.device)
            if dev is None:
                known = ", ".join(sorted(tb.devices)) or "none"
                src.problem(("links", i, side), f"unknown device {end.device!r}; known: {known}")
                continue
            if dev.ports and end.port not in dev.ports:
                src.problem(
                    ("links", i, side), f"device {end.device!r} has no port {end.port!r}"
                )
            used[(end.device, end.port)] += 1
            if used[(end.device, end.port)] == 2:
                src.problem(("links", i, side), f"port {end} is cabled more than once")
        if link.ends[0] == link.ends[1]:
            src.problem(("links", i), "a link cannot connect a port to itself")
    for name, dev in tb.devices.items():
        if dev.ssh and not (dev.ssh.password or dev.ssh.key_file):
            src.problem(("devices", name, "ssh"), "needs 'password' or 'key_file'")
        if dev.snmp:
            _check_snmp(name, dev, src)
        if (dev.ssh or dev.snmp) and not dev.address:
            src.problem(("devices", name), "'address' is required for ssh and snmp")


def _check_snmp(name: str, dev: Any, src: Source) -> None:
    snmp = dev.snmp
    loc = ("devices", name, "snmp")
    if snmp.version == "2c" and snmp.community is None:
        src.problem(loc, "SNMP v2c needs 'community'")
    if snmp.version == "3":
        for key in ("user", "auth_key", "priv_key"):
            if getattr(snmp, key) is None:
                src.problem(loc, f"SNMP v3 authPriv needs {key!r}")
