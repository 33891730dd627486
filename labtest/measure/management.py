"""Devices under test whose management plane is dead: a failure of the device, not a hole.

A switch or host that refuses, drops or never answers its SSH/SNMP/API while the lab
reaches the other devices of the same run has failed: a unit that cannot be managed cannot
be signed off, and the evidence (the lab's own path to its peers works) clears the lab.
What remains the lab's (a hole, INCOMPLETE): nothing answered at all (the management
network or the lab itself), a refusal that is the lab's configuration (credentials,
host keys, algorithms), not the device's silence, and the lab's own equipment (a traffic
generator, an instrument) gone silent.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from labtest.errors import ConnectionRefused, DeviceDown, ProtocolError, TransportTimeout
from labtest.outcome import first_line

#: errors that say "the device did not answer" (refused, timed out, hung up mid-protocol);
#: AuthFailed, HostKey* and LegacyAlgorithms are the lab's configuration, never the device's
SILENT = frozenset(c.__name__ for c in (ConnectionRefused, TransportTimeout, ProtocolError))
#: DeviceDown's message cites the failure that opened the breaker (transports.breaker)
_SINCE = re.compile(r"\bdown since (\w+)")


def error_name(test: Mapping[str, object]) -> str:
    """The class name of a red test's error (its message starts "module.Class: ...")."""
    return str(test.get("message") or "").split(":", 1)[0].rsplit(".", 1)[-1]


def silent(test: Mapping[str, object]) -> bool:
    """A broken test whose device did not answer (a DeviceDown by its first failure)."""
    if test.get("outcome") != "broken":
        return False
    name = error_name(test)
    if name == DeviceDown.__name__:
        since = _SINCE.search(str(test.get("message") or ""))
        return since is not None and since.group(1) in SILENT
    return name in SILENT


def unmanaged(tests: Iterable[Mapping[str, object]], under_test: Collection[str]
              ) -> dict[str, str]:
    """device -> its first "did not answer" line, for every device under test (a switch or
    a host: ``under_test``; a traffic generator or an instrument is the lab's own) that
    never answered while another device did (a test of it passed or failed, or a
    measurement read it); empty when no other device answered (then the lab, not a
    device, is in doubt)."""
    dead: dict[str, str] = {}
    spoke: set[str] = set()
    for t in tests:
        device = str(t.get("device") or "")
        if silent(t) and device in under_test:
            dead.setdefault(device, first_line(t.get("message"), 200))
        elif t.get("outcome") in ("passed", "failed"):
            spoke |= {device, *_read_devices(t)}
    spoke.discard("")
    dead = {d: why for d, why in dead.items() if d not in spoke}
    return dead if spoke - set(dead) else {}


def _read_devices(test: Mapping[str, object]) -> set[str]:
    """The devices a test's measurements were read from (their ``device`` labels)."""
    found = test.get("measurements")
    out: set[str] = set()
    for m in found if isinstance(found, list) else []:
        labels = m.get("labels") if isinstance(m, dict) else None
        if isinstance(labels, dict) and labels.get("device"):
            out.add(str(labels["device"]))
    return out
