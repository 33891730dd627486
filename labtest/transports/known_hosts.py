"""OpenSSH known_hosts, read and appended the way OpenSSH does it.

paramiko raises a bare ``Exception`` on valid OpenSSH lines it does not know
(``@cert-authority``, ``@revoked``), which would break every device, so the file is read
line by line here: such lines are skipped with one warning per file, and a key on a
``@revoked`` line is refused for every host. ``accept-new`` appends one line; the
user's file is never rewritten.
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

log = logging.getLogger("labtest.transport.ssh")

KnownKeys = Mapping[str, paramiko.PKey]  # key type -> key, for one host in known_hosts


@dataclass(frozen=True)
class KnownHosts:
    """What a known_hosts file holds that we can use, and the lines we could not."""

    keys: paramiko.HostKeys
    revoked: list[paramiko.PKey]
    skipped: list[tuple[int, str]]  # (line number, why)


def parse_known_hosts(text: str) -> KnownHosts:
    """Read OpenSSH known_hosts text line by line; never raises on a line.

    Plain and hashed (``|1|...``) lines become host keys; ``@revoked`` keys are
    collected; ``@cert-authority`` lines (host certificates, which paramiko
    cannot verify), unknown key types and malformed lines are skipped with why.
    """
    keys, revoked, skipped = paramiko.HostKeys(), [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        marker = fields.pop(0) if fields[0].startswith("@") else None
        if marker not in (None, "@revoked"):
            why = "host certificates are not supported" if marker == "@cert-authority" else ""
            skipped.append((number, f"{marker} line{': ' + why if why else ''}"))
            continue
        if len(fields) < 3:
            skipped.append((number, "fewer than 3 fields (hosts, key type, key)"))
            continue
        names, key_type, blob = fields[:3]
        key, why = _host_key(key_type, blob)
        if key is None:
            skipped.append((number, why))
        elif marker == "@revoked":
            revoked.append(key)
        else:
            for name in names.split(","):
                keys.add(name, key.get_name(), key)
    return KnownHosts(keys, revoked, skipped)


def _host_key(key_type: str, blob: str) -> tuple[paramiko.PKey | None, str]:
    try:
        data = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None, "the key is not valid base64"
    try:
        return paramiko.PKey.from_type_string(key_type, data), ""
    except paramiko.UnknownKeyType:
        return None, f"key type {key_type!r} is not supported"
    except Exception:  # paramiko raises many kinds on a damaged key blob
        return None, f"the {key_type} key cannot be parsed"


_warned: set[tuple[str, tuple[tuple[int, str], ...]]] = set()
_warned_lock = threading.Lock()


def warn_skipped(path: Path, skipped: Sequence[tuple[int, str]]) -> None:
    """One warning per file (and per distinct set of skipped lines) per process."""
    if not skipped:
        return
    key = (str(path), tuple(skipped))
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    lines = "; ".join(f"line {n}: {why}" for n, why in skipped)
    log.warning("%s: skipped %d line(s) SSH cannot use: %s", path, len(skipped), lines)



def prefer_key_types(transport: paramiko.Transport, recorded: KnownKeys | None) -> None:
    """Ask first for the key types known_hosts records, so a multi-key host presents one of them."""
    if not recorded:
        return
    options = transport.get_security_options()
    wanted: list[str] = []
    for name in recorded:
        wanted += ["rsa-sha2-512", "rsa-sha2-256"] if name == "ssh-rsa" else [name]
    first = [k for k in wanted if k in options.key_types]
    options.key_types = first + [k for k in options.key_types if k not in first]


def append_known_host(path: Path, name: str, key: paramiko.PKey) -> None:
    """Add one line, as OpenSSH does; never rewrite the user's file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "a", encoding="ascii") as out:
        out.write(f"{name} {key.get_name()} {key.get_base64()}\n")
