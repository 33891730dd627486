"""iproute2 JSON output: ``ip -j link`` (also ``ip -j addr``, a superset).

The JSON is taken from the first ``[`` that starts a line, so a pasted shell
prompt or banner before it does not matter. Every document in the input is
read (two ``ip -j`` runs pasted together give both lists); anything after the
last one other than a shell prompt is refused, and so is a key or an
interface given twice.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from labtest.capabilities.host import LinkInfo
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import parser


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ValueError(f"key {dup!r} twice in one object")
    return dict(pairs)


_TRAILING_PROMPT = re.compile(r"\s*(?:\S+@\S+?[:~][^\n]*[#$][^\n]*)?\s*")


def _documents(text: str, pos: int) -> list[object]:
    """Every JSON array from ``pos`` on, concatenated; trailing text other than a prompt
    is refused (a second document is not silently ignored)."""
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    items: list[object] = []
    while True:
        try:
            data, end = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, ValueError) as exc:
            line = text.count("\n", 0, getattr(exc, "pos", pos)) + 1
            raise parse_error(
                f"ip -j output is not valid JSON: {exc}", text, line=line, expected="JSON"
            ) from exc
        if not isinstance(data, list):
            raise parse_error("ip -j output is not a list of interfaces", text)
        items.extend(data)
        rest = re.compile(r"\s*").match(text, end)
        pos = rest.end() if rest else end
        if pos < len(text) and text[pos] == "[":
            continue
        tail = _TRAILING_PROMPT.fullmatch(text, end)
        if tail is None:
            line = text.count("\n", 0, pos) + 1
            raise parse_error(
                f"text after the JSON document: {text[pos : pos + 40]!r}",
                text,
                line=line,
                expected="end of input or another JSON document",
            )
        return items


@parser(
    "linux",
    "ip -j link",
    "ip -json link",
    "ip -j -d link",
    "ip -d -j link",
    "ip -j -s link",
    "ip -s -j link",
    "ip -s -s -j link",
    "ip -j addr",
    "ip -d -j addr",
)
def parse_ip_link(text: str) -> list[LinkInfo]:
    """Every interface: name, index, MTU in bytes, operstate, link-layer address."""
    start = re.search(r"^\s*\[", text, re.MULTILINE)
    if start is None:
        raise parse_error("no JSON array in ip -j output", text, expected="a JSON array")
    docs = _documents(text, start.end() - 1)
    data = [d for d in docs if isinstance(d, dict) and "ifname" in d]
    if len(data) != len(docs):
        raise parse_error("ip -j output is not a list of interfaces", text)
    names = Counter(d["ifname"] for d in data)
    if dup := next((n for n, k in names.items() if k > 1), None):
        raise parse_error(f"interface {dup!r} twice", text, expected="each interface once")
    return [
        LinkInfo(
            ifname=d["ifname"],
            ifindex=d.get("ifindex"),
            mtu_bytes=d.get("mtu"),
            operstate=d.get("operstate"),
            mac=d.get("address"),
            link_type=d.get("link_type"),
            flags=list(d.get("flags", [])),
            carrier_changes=_carrier_changes(d, text),
        )
        for d in data
    ]


def _carrier_changes(entry: dict[str, Any], text: str) -> int | None:
    """``stats64.tx.carrier_changes`` (printed with a second ``-s``); None when absent."""
    stats = entry.get("stats64") or entry.get("stats")
    tx = stats.get("tx") if isinstance(stats, dict) else None
    if not isinstance(tx, dict) or "carrier_changes" not in tx:
        return None
    value = tx["carrier_changes"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise parse_error(f"{entry['ifname']}: carrier_changes {value!r} is not a count", text,
                          expected="a non-negative integer")
    return value


def parse_ip_addresses(text: str) -> dict[str, list[str]]:
    """``ip -j addr``: interface -> its global IPv4 addresses, in order (none: empty)."""
    start = re.search(r"^\s*\[", text, re.MULTILINE)
    if start is None:
        raise parse_error("no JSON array in ip -j output", text, expected="a JSON array")
    out: dict[str, list[str]] = {}
    for d in _documents(text, start.end() - 1):
        if not isinstance(d, dict) or "ifname" not in d:
            raise parse_error("ip -j output is not a list of interfaces", text)
        infos = d.get("addr_info", [])
        if not isinstance(infos, list):
            raise parse_error(f"{d['ifname']}: addr_info is not a list", text)
        out[str(d["ifname"])] = [
            str(a["local"]) for a in infos
            if isinstance(a, dict) and a.get("family") == "inet" and "local" in a
            and a.get("scope", "global") == "global"
        ]
    return out
