"""The EOS parsers' common ground: registration with the ``| json`` aliases, one
checked JSON reader that names the command a wrong capture answers, typed value
readers and port names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from labtest.parsing import F, checked
from labtest.parsing import Garbled as _Garbled

DRIVER = "eos"


def _eos(*commands: str) -> Callable[[F], F]:
    """Register ``fn`` for each command and its ``| json`` form, with the ParseError
    contract; a JSON document is checked by closing, text by its last line."""
    return checked(
        DRIVER,
        *commands,
        aliases=tuple(f"{c} | json" for c in commands),
        cut=_not_json,
    )


def _not_json(text: str) -> bool:
    """Text is checked for a cut last line; a JSON document is checked by closing."""
    return not text.rstrip().endswith("}")


_PROMPT = re.compile(r"^\S+[#>]")  # "switch#show version | json" echoed before the output


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` keeps the last of two equal keys silently; EOS never prints one twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Garbled(f"duplicated key {key!r}", expected="each key once")
        out[key] = value
    return out


def _as_json(text: str) -> dict[str, Any] | None:
    """The JSON document in ``text`` (leading prompt/comment lines allowed), else None.

    The whole rest must be that one document: a second document, a cut one or a
    duplicated key is refused with the line it happens on."""
    lines = text.splitlines()
    skipped = 0
    while skipped < len(lines) and (
        not lines[skipped].strip()
        or (
            not lines[skipped].lstrip().startswith("{")
            and (_PROMPT.match(lines[skipped]) or lines[skipped].startswith("#"))
        )
    ):
        skipped += 1
    body = "\n".join(lines[skipped:]).rstrip()
    if not body.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(body, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        what = "a JSON document that closes" if exc.pos >= len(body) else "one JSON document"
        raise _Garbled(
            f"broken JSON: {exc.msg}", line=exc.lineno + skipped, expected=what
        ) from None
    if not isinstance(doc, dict):
        raise _Garbled("JSON output is not an object", expected="a JSON object")
    return doc


#: top-level key -> the command whose answer carries it, to name a wrong capture
_JSON_KEYS = {
    "modelName": "show version",
    "interfaceStatuses": "show interfaces status",
    "interfaceErrorCounters": "show interfaces counters errors",
    "lldpNeighbors": "show lldp neighbors",
    "interfacePhyStatuses": "show interfaces phy detail",
    "egressQueueCounters": "show interfaces counters queue detail",
    "intfQueueCounters": "show qos interfaces ecn counters queue",
    "interfaceCounters": "show priority-flow-control counters",
    "xcvrSlots": "show inventory",
    "utcTime": "show clock",
}
#: a ``vrfs`` document's first peer entry key -> the command whose answer has it
_VRF_PEER_KEYS = {"peerState": "show ip bgp summary vrf all", "peerStats": "show bfd peers detail",
                  "peers": "show bfd peers detail"}
_TRANSCEIVER_KEYS = {
    "txPower",
    "rxPower",
    "temperature",
    "voltage",
    "txBias",
    "vendorSn",
    "mediaType",
    "updateTime",
}


def _looks_like(doc: dict[str, Any]) -> str:
    """The command ``doc`` most likely answers, for a refusal message."""
    for key, command in _JSON_KEYS.items():
        if key in doc:
            return command
    vrfs = doc.get("vrfs")
    if isinstance(vrfs, dict):
        for vrf in vrfs.values():
            if not isinstance(vrf, dict):
                continue
            groups = [vrf.get(k) for k in ("peers", "ipv4Neighbors", "ipv6Neighbors")]
            for group in groups:
                first = next((e for e in (group or {}).values() if isinstance(e, dict)), {})
                for key, command in _VRF_PEER_KEYS.items():
                    if key in first:
                        return command
    entries = doc.get("interfaces")
    if isinstance(entries, dict):
        first = next((e for e in entries.values() if isinstance(e, dict) and e), {})
        if "interfaceAddress" in first and "interfaceCounters" not in first and (
            "urpf" in first or "localProxyArp" in first
        ):
            return "show ip interface"
        first = next((e for e in entries.values() if isinstance(e, dict) and e), {})
        if "priorities" in first:
            return "show interfaces priority-flow-control counters detail"
        if "txQueues" in first:
            return "show priority-flow-control counters watchdog"
        if "interfaceCounters" in first or "lineProtocolStatus" in first:
            return "show interfaces"
        if "inOctets" in first:
            return "show interfaces counters"
        if _TRANSCEIVER_KEYS & set(first):
            return "show interfaces transceiver"
    return "another command"


def _require_json(
    text: str, command: str, key: str, kind: type | tuple[type, ...] = dict
) -> dict[str, Any]:
    """The JSON answer of ``command``, which must carry ``key`` of type ``kind``."""
    doc = _as_json(text)
    if doc is None:
        raise _Garbled(
            f"expected JSON output (run '{command} | json')", line=1, expected="a JSON document"
        )
    _own_key(doc, command, key, kind)
    return doc


def _own_key(doc: dict[str, Any], command: str, key: str, kind: Any = dict) -> None:
    if not isinstance(doc.get(key), kind):
        looks = _looks_like(doc)
        name = getattr(kind, "__name__", "value")
        raise _Garbled(
            f"this looks like '{looks} | json' output, not '{command} | json'"
            if looks != command
            else f"no {key!r} {name}",
            expected=f"a {key!r} {name}",
        )


def _object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is an object, ``{}`` when absent; anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Garbled(f"{where} is {type(value).__name__}, not an object")
    return value


def _entries(doc: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """``doc[key]`` as port -> object; a non-object entry is refused."""
    out = doc[key]
    for port, entry in out.items():
        if not isinstance(entry, dict):
            raise _Garbled(f"{key}.{port} is {type(entry).__name__}, not an object")
    return out


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Garbled(f"expected a string, got {value!r}")
    value = str(value).strip()
    return value or None


def _number(value: object) -> int | float | None:
    """A JSON number as it stands, None when absent: a bool or a string is refused, never
    read as one (EOS prints numbers bare)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Garbled(f"expected a number, got {value!r}")
    return value


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _num(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else float(number)


_SHORT_NAMES = {"Et": "Ethernet", "Po": "Port-Channel", "Ma": "Management", "Lo": "Loopback"}


def long_name(name: str) -> str:
    """Text tables abbreviate (``Et1``); JSON and config use ``Ethernet1``."""
    m = re.fullmatch(r"([A-Z][a-z])(\d[\d/.]*)", name)
    if m and m.group(1) in _SHORT_NAMES:
        return _SHORT_NAMES[m.group(1)] + m.group(2)
    return name
