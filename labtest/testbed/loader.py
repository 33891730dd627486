"""Load a testbed file: parse, resolve secrets, validate, cross-check the cabling."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from labtest import secrets
from labtest.errors import SecretError
from labtest.testbed.model import SECRET_KEYS, Testbed
from labtest.yamlsource import Loc, Source, read, validate

PATH_KEYS = frozenset({"known_hosts", "key_file", "limits", "replay"})


def load_testbed(path: str | Path) -> Testbed:
    """Return the validated testbed or raise ``ConfigError`` listing every problem."""
    path = Path(path)
    src = read(path)
    warnings: list[str] = []
    _prepare(src.data, (), src, warnings)
    testbed = validate(src, Testbed, SECRET_KEYS)
    _check_references(src.data, src)
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


def _check_references(data: Any, src: Source) -> None:
    """Cross-field checks on the raw data, so they run even when a field is mistyped."""
    if not isinstance(data, dict):
        return
    devices = data.get("devices") if isinstance(data.get("devices"), dict) else {}
    limits = data.get("limits")
    if isinstance(limits, str) and not Path(limits).is_file():
        src.problem(("limits",), f"limits profile not found: {limits}")
    links = data.get("links") if isinstance(data.get("links"), list) else []
    used: Counter[str] = Counter()
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            continue
        for side in ("a", "b"):
            end = link.get(side)
            if not isinstance(end, str) or ":" not in end:
                continue  # the schema reports the shape
            dev_name, port = end.split(":", 1)
            dev = devices.get(dev_name)
            if not isinstance(dev, dict):
                known = ", ".join(sorted(map(str, devices))) or "none"
                src.problem(("links", i, side), f"unknown device {dev_name!r}; known: {known}")
                continue
            ports = dev.get("ports")
            if isinstance(ports, list) and ports and port not in ports:
                src.problem(("links", i, side), f"device {dev_name!r} has no port {port!r}")
            used[end] += 1
            if used[end] == 2:
                src.problem(("links", i, side), f"port {end} is cabled more than once")
        if link.get("a") is not None and link.get("a") == link.get("b"):
            src.problem(("links", i), "a link cannot connect a port to itself")
    for name, dev in devices.items():
        if isinstance(dev, dict):
            _check_device(str(name), dev, src)


def _check_device(name: str, dev: dict[str, Any], src: Source) -> None:
    loc: Loc = ("devices", name)
    ssh, snmp = dev.get("ssh"), dev.get("snmp")
    if isinstance(ssh, dict) and not (ssh.get("password") or ssh.get("key_file")):
        src.problem((*loc, "ssh"), "needs 'password' or 'key_file'")
    if (ssh or snmp) and not dev.get("address") and not dev.get("replay"):
        src.problem(loc, "'address' is required for ssh and snmp")
    if not isinstance(snmp, dict):
        return
    version = str(snmp.get("version", "2c"))
    if version == "2c" and not snmp.get("community"):
        src.problem((*loc, "snmp"), "SNMP v2c needs 'community'")
    if version == "3":
        for key in ("user", "auth_key", "priv_key"):
            if not snmp.get(key):
                src.problem((*loc, "snmp"), f"SNMP v3 authPriv needs {key!r}")
