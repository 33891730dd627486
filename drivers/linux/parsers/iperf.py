"""iperf3 ``-J`` (JSON) of a UDP client run: each stream's source port, datagrams and losses.

The shape is iperf 3.9's (and later): ``start.connected[]`` names each stream's socket and
``local_port``; ``end.streams[].udp`` has per socket ``packets`` (sent), ``lost_packets``
(the server's sequence-number gaps, exchanged at the end of the test), ``out_of_order`` and
``seconds``. A run that failed is a document with an ``error`` string (iperf3 prints it with
``-J`` too) and is refused with it; a report still being written (no ``end``) is refused as
incomplete, so a caller can poll until it is whole. Anything else is refused.
"""

from __future__ import annotations

import json
from typing import Any

from labtest.capabilities.probes import UdpStreamResult
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import fingerprint, parser

fingerprint("linux", "iperf3", r'^\{\s*"start":\s*\{\s*"connected"', "iperf3")

INCOMPLETE = "the iperf3 report is incomplete (the run has not ended)"


def _num(rec: dict[str, Any], key: str, text: str) -> float:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise parse_error(f"end.streams[].udp.{key} is {value!r}, not a number", text,
                          command="iperf3", expected=f"a number for {key}")
    return float(value)


@parser("linux", "iperf3")
def parse_iperf3_udp(text: str) -> list[UdpStreamResult]:
    """Every stream of a finished UDP client run, in ``start.connected`` order."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        if text.lstrip().startswith("{"):
            raise parse_error(INCOMPLETE, text, command="iperf3",
                              expected="a whole JSON document") from None
        raise parse_error(f"not JSON: {exc}", text, command="iperf3",
                          expected="iperf3 -J output") from None
    if not isinstance(doc, dict) or "start" not in doc:
        raise parse_error("no 'start' object", text, command="iperf3", expected="iperf3 -J")
    if doc.get("error"):
        raise parse_error(f"iperf3: {doc['error']}", text, command="iperf3",
                          expected="a run without 'error'")
    connected = {c.get("socket"): c for c in doc["start"].get("connected") or []}
    port = doc["start"].get("connecting_to", {}).get("port", 0)
    end = doc.get("end") or {}
    streams = end.get("streams")
    if not streams:
        raise parse_error(INCOMPLETE, text, command="iperf3", expected="end.streams")
    out = []
    for row in streams:
        udp = row.get("udp") if isinstance(row, dict) else None
        if not isinstance(udp, dict):
            raise parse_error("end.streams[] has no 'udp' record (a TCP run?)", text,
                              command="iperf3", expected="a UDP run (-u)")
        sock = udp.get("socket")
        conn = connected.get(sock)
        if conn is None:
            raise parse_error(f"stream socket {sock!r} is not in start.connected", text,
                              command="iperf3", expected="every stream connected")
        out.append(UdpStreamResult(
            sport=int(conn.get("local_port", 0)),
            dport=int(conn.get("remote_port", port)),
            packets=int(_num(udp, "packets", text)),
            lost_packets=int(_num(udp, "lost_packets", text)),
            seconds=_num(udp, "seconds", text),
            out_of_order=int(udp.get("out_of_order") or 0),
        ))
    return out


def iperf3_failure(text: str) -> tuple[str, bool] | None:
    """iperf3's own ``error`` of a run, and whether the server had agreed the test (its
    ``cookie``: the control connection was up) or its streams had connected: what failed
    then was the network under the run, not the tool or its server (a stream's setup
    datagrams lost: "unable to read from stream socket"); None when the output is no iperf3
    JSON or carries no error."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not doc.get("error"):
        return None
    start = doc.get("start")
    agreed = isinstance(start, dict) and bool(start.get("cookie") or start.get("connected"))
    return str(doc["error"]), agreed
