"""traceroute (Linux traceroute 2.x, ``-n``): hops, who answered, how many probes.

One trace is a header ``traceroute to ADDR (ADDR), N hops max, S byte packets``
(traceroute prints it on stderr: the driver runs it with ``2>&1``) and one line
per TTL: `` 2  10.1.0.1  0.120 ms *  10.1.0.5  0.131 ms !H``. Each probe is a
``*`` (no answer in time) or a round-trip time, the time preceded by the
answering address where it differs from the previous probe's; ``!X``-style
annotations follow a time. Several traces run back to back are split at their
headers. A trace whose source port was taken on the sender prints ``bind: Address
already in use`` after its header and sends nothing: it is returned with no hop (the
driver traces another port). Anything else is refused.
"""

from __future__ import annotations

import re

from labtest.capabilities.probes import TraceHop, UdpTrace
from labtest.drivers.common.cells import is_address
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import fingerprint, parser

_HEADER = re.compile(
    r"^traceroute to (\S+) \((\S+)\), (\d+) hops max, (\d+) byte packets\s*$")
_HOP = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_NOTE = re.compile(r"^!(?:[HNPSFXVC]|F-\d+|\d+|<\d+>)?$")

#: traceroute's line when ``--sport`` is taken by another socket (it sends nothing, exit 1)
PORT_IN_USE = "bind: Address already in use"

fingerprint("linux", "traceroute", r"^traceroute to \S+ \(\S+\), \d+ hops max", "traceroute")


def _hop(ttl: int, rest: str, text: str, line: int) -> TraceHop:
    tokens = rest.split()
    addresses: list[str] = []
    rtts: list[float] = []
    sent = 0
    current: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "*":
            sent += 1
        elif is_address(tok):
            current = tok
            if tok not in addresses:
                addresses.append(tok)
        elif i + 1 < len(tokens) and tokens[i + 1] == "ms" and current is not None:
            try:
                rtts.append(float(tok))
            except ValueError:
                raise parse_error(f"round-trip time {tok!r} is not a number", text, line=line,
                                  command="traceroute", expected="N.NNN ms") from None
            sent += 1
            i += 1
        elif _NOTE.match(tok) and rtts:
            pass  # !H, !N, ...: the answer was an ICMP error of that kind
        else:
            raise parse_error(f"hop {ttl}: cannot read {tok!r}", text, line=line,
                              command="traceroute", expected="'*', an address or 'N.NNN ms'")
        i += 1
    if sent == 0:
        raise parse_error(f"hop {ttl} lists no probe", text, line=line, command="traceroute")
    return TraceHop(ttl, tuple(addresses), sent, len(rtts), tuple(rtts))


@parser("linux", "traceroute")
def parse_traceroute(text: str) -> list[UdpTrace]:
    """Every trace in the text, in order (source and destination ports unknown here: 0)."""
    traces: list[UdpTrace] = []
    target: str | None = None
    hops: list[TraceHop] = []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        head = _HEADER.match(raw)
        if head:
            if target is not None:
                traces.append(_trace(target, hops, text, n))
            target, hops = head.group(2), []
            continue
        if raw.strip() == PORT_IN_USE and target is not None and not hops:
            traces.append(UdpTrace(target, 0, 0, ()))  # nothing sent: no hop to read
            target = None
            continue
        hop = _HOP.match(raw)
        if hop is None or target is None:
            raise parse_error(f"not a traceroute line: {raw!r}", text, line=n,
                              command="traceroute", expected="a header, then one line per TTL")
        ttl = int(hop.group(1))
        if ttl != len(hops) + 1:
            raise parse_error(f"hop {ttl} after hop {len(hops)}", text, line=n,
                              command="traceroute", expected=f"hop {len(hops) + 1}")
        hops.append(_hop(ttl, hop.group(2), text, n))
    if target is not None:
        traces.append(_trace(target, hops, text, None))
    if not traces:
        raise parse_error("no traceroute header", text, command="traceroute",
                          expected="'traceroute to ADDR (ADDR), N hops max, S byte packets'")
    return traces


def _trace(target: str, hops: list[TraceHop], text: str, line: int | None) -> UdpTrace:
    if not hops:  # traceroute prints at least the first TTL's line
        raise parse_error(f"trace to {target} has no hop line", text, line=line,
                          command="traceroute", expected="' 1  ...' after the header")
    return UdpTrace(target, 0, 0, tuple(hops))
