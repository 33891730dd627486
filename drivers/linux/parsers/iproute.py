"""iproute2 JSON output: ``ip -j link`` (also ``ip -j addr``, a superset).

The JSON is taken from the first ``[`` that starts a line, so a pasted shell
prompt or banner before it does not matter.
"""

from __future__ import annotations

import json
import re

from labtest.drivers.linux.parsers._common import parse_error

from labtest.capabilities.host import LinkInfo
from labtest.parsing import parser


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
        raise parse_error("no JSON array in ip -j output", text)
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start.end() - 1 :])
    except json.JSONDecodeError as exc:
        raise parse_error(f"ip -j output is not valid JSON: {exc}", text) from exc
    if not isinstance(data, list) or not all(isinstance(d, dict) and "ifname" in d for d in data):
        raise parse_error("ip -j output is not a list of interfaces", text)
    return [
        LinkInfo(
            ifname=d["ifname"],
            ifindex=d.get("ifindex"),
            mtu_bytes=d.get("mtu"),
            operstate=d.get("operstate"),
            mac=d.get("address"),
            link_type=d.get("link_type"),
            flags=list(d.get("flags", [])),
        )
        for d in data
    ]
