"""traceroute -n: hops, answering addresses and answered probes; what it cannot read is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.drivers.linux.parsers.traceroute import parse_traceroute
from labtest.errors import ParseError

SAMPLES = Path(__file__).parent / "samples" / "traceroute"


def _sample(name: str) -> str:
    return "".join(ln for ln in (SAMPLES / name).read_text().splitlines(keepends=True)
                   if not ln.startswith("# "))


def test_real_outputs() -> None:
    (lo,) = parse_traceroute(_sample("debian_bookworm_udp_sport_loopback.txt"))
    assert lo.target == "127.0.0.1" and lo.reached and (lo.sent, lo.arrived) == (3, 3)
    (wg,) = parse_traceroute(_sample("wireguard_notes_q1_three_hops.txt"))
    assert [h.addresses for h in wg.hops] == [("192.168.1.1",), ("198.51.100.1",),
                                              ("192.0.2.21",)]
    assert wg.hops[1].rtt_ms == (0.623,) and (wg.sent, wg.arrived) == (1, 1)


def test_lost_probes_changed_addresses_and_annotations() -> None:
    text = ("traceroute to 10.0.0.7 (10.0.0.7), 5 hops max, 60 byte packets\n"
            " 1  198.19.255.3  0.052 ms  0.052 ms  0.057 ms\n"
            " 2  198.18.0.3  0.110 ms * 198.18.0.9  0.120 ms !H\n"
            " 3  * * *\n"
            " 4  * 10.0.0.7  0.207 ms *\n"
            "traceroute to 10.0.0.8 (10.0.0.8), 5 hops max, 60 byte packets\n"
            " 1  198.19.255.3  0.052 ms  0.052 ms  0.057 ms\n"
            " 2  * * *\n 3  * * *\n 4  * * *\n 5  * * *\n")
    a, b = parse_traceroute(text)
    assert a.hops[1].addresses == ("198.18.0.3", "198.18.0.9") and a.hops[1].answered == 2
    assert a.hops[2].addresses == () and a.hops[2].sent == 3
    assert a.reached and (a.sent, a.arrived) == (3, 1)
    assert not b.reached and (b.sent, b.arrived) == (3, 0) and len(b.hops) == 5


@pytest.mark.parametrize("text, why", [
    ("", "no traceroute header"),
    (" 1  10.0.0.1  0.1 ms\n", "not a traceroute line"),
    ("traceroute to a (10.0.0.1), 5 hops max, 60 byte packets\n 2  10.0.0.1  0.1 ms\n",
     "hop 2 after hop 0"),
    ("traceroute to a (10.0.0.1), 5 hops max, 60 byte packets\n 1  10.0.0.1  fast ms\n",
     "not a number"),
    ("traceroute to a (10.0.0.1), 5 hops max, 60 byte packets\n 1  gw (10.0.0.1)  0.1 ms\n",
     "cannot read 'gw'"),  # without -n: names are not what the driver asked for
    ("traceroute to a (10.0.0.1), 5 hops max, 60 byte packets\n 1\n", "not a traceroute line"),
    ("traceroute to a (10.0.0.1), 5 hops max, 60 byte packets\n", "has no hop line"),
])
def test_refuses_what_it_cannot_read(text: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        parse_traceroute(text)


HEAD = "traceroute to 10.0.0.7 (10.0.0.7), 5 hops max, 60 byte packets\n"
REACHED = (HEAD + " 1  198.19.255.3  0.052 ms  0.052 ms  0.057 ms\n"
           " 2  10.0.0.7  0.2 ms  0.2 ms  0.2 ms\n")
BUSY = HEAD + "bind: Address already in use\n"


def test_a_trace_whose_source_port_was_taken_has_no_hop() -> None:
    """Kernel CI: a hole trace's --sport was held by another socket on host2; traceroute
    printed its header and ``bind: Address already in use`` and sent nothing. That trace is
    returned hopless (the driver traces another port); the others still read."""
    a, busy, b = parse_traceroute(REACHED + BUSY + REACHED)
    assert a.reached and b.reached and busy.hops == () and busy.sent == 0
    (only,) = parse_traceroute(BUSY)
    assert only.hops == ()
    with pytest.raises(ParseError, match="not a traceroute line"):  # after hops: not a bind
        parse_traceroute(REACHED + "bind: Address already in use\n")
    with pytest.raises(ParseError, match="not a traceroute line"):  # no header before it
        parse_traceroute("bind: Address already in use\n")


class _Shell:
    """Runs the driver's traceroute lines: a port in ``taken`` prints the bind failure."""

    def __init__(self, taken: set[int]) -> None:
        self.taken, self.lines = taken, []

    def run(self, line: str, **_: object) -> object:
        import re
        from types import SimpleNamespace

        self.lines.append(line)
        ports = [int(p) for p in re.findall(r"--sport=(\d+)", line)]
        return SimpleNamespace(stdout="".join(BUSY if p in self.taken else REACHED
                                              for p in ports))

    def parse(self, fn: object, text: str) -> object:
        return parse_traceroute(text)


def test_the_driver_traces_the_next_free_port_in_place_of_a_taken_one() -> None:
    from labtest.drivers.linux.driver import TRACE_PORT_TRIES, LinuxHost
    from labtest.errors import CommandFailed

    host = object.__new__(LinuxHost)
    host.name, host.shell = "host2", _Shell({20005, 20006})  # type: ignore[assignment]
    traces = host.udp_traces("10.0.0.7", [20001, 20005, 20009], probes=3)
    assert [t.sport for t in traces] == [20001, 20007, 20009]  # 20006 taken too: 20007
    assert all(t.reached for t in traces) and len(host.shell.lines) == 3  # type: ignore[attr-defined]
    host.shell = _Shell(set(range(20000, 20100)))  # type: ignore[assignment]
    with pytest.raises(CommandFailed, match=f"still in use .* after {TRACE_PORT_TRIES} tries"):
        host.udp_traces("10.0.0.7", [20001], probes=3)
