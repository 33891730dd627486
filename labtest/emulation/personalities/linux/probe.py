"""``traceroute -n -U --sport=S -p D``: a UDP probe's path and its losses, from the model.

The probe's path is the traffic model's ECMP path for its 5-tuple
(``TrafficModel.path``). At TTL k the probe crosses the path's first k links;
the router there answers from the interface it came in on (its BGP session
address on a fabric link; its loopback where the interface has none, as on a
host-facing port), the target answers from its own address (ICMP port
unreachable). A probe or its answer is lost with the model's gray-failure loss
(``gray.frame_loss``: lossy links, one-way silent drops, ECMP blackholes, dark
links) on each link it crosses, the answer retracing the probe's links (the
model has no return path of its own). Round-trip times are nominal (50 us per
hop): the model has no per-packet latency.
"""

from __future__ import annotations

import random
import zlib

from labtest.emulation.model import gray
from labtest.emulation.personalities import _routing
from labtest.emulation.personalities.linux.bash import Output
from labtest.emulation.personalities.linux.options import MissingValue, option_words
from labtest.emulation.personalities.linux.state import HostState

USAGE = ("Usage:\n  traceroute [ -46dFITnreAUDV ] [ -f first_ttl ] [ -g gate,... ] [ -i device ] "
         "[ -m max_ttl ] [ -N squeries ] [ -p port ] [ -t tos ] [ -l flow_label ] "
         "[ -w MAX,HERE,NEAR ] [ -q nqueries ] [ -s src_addr ] [ -z sendwait ] "
         "[ --fwmark=num ] host [ packetlen ]\n")
#: the most probes per hop traceroute takes (``-q``; more is refused)
MAX_PROBES = 10
_VALUED = {"-p": "port", "-q": "probes", "-w": "wait", "-m": "max_hops", "--sport": "sport"}


def _options(argv: list[str]) -> dict[str, str] | None:
    opts: dict[str, str] = {}
    try:
        for key, w in option_words(argv[1:], _VALUED):
            if key is not None:
                opts[key] = w
            elif w in ("-n", "-U", "--udp"):
                opts[w.lstrip("-")[:1]] = "1"
            elif w.startswith("-") or "target" in opts:
                return None
            else:
                opts["target"] = w
    except MissingValue:
        return None
    return opts if "target" in opts else None


def traceroute(host: HostState, argv: list[str], rng: random.Random) -> Output:
    opts = _options(argv)
    if opts is None:
        return Output(stderr=USAGE, status=2)
    try:
        sport, dport = int(opts.get("sport", "33434")), int(opts.get("port", "53"))
        probes, max_hops = int(opts.get("probes", "3")), int(opts.get("max_hops", "30"))
        float(opts.get("wait", "5").split(",")[0])
    except ValueError:
        return Output(stderr=USAGE, status=2)
    if not 1 <= probes <= MAX_PROBES:  # traceroute 2.1's own limit (its message, exit 2)
        return Output(stderr=f"No more than {MAX_PROBES} probes per hop\n", status=2)
    target = opts["target"]
    found = host.resolve(target)
    if found is None:
        return Output(stderr=f"{target}: Name or service not known\nCannot handle \"host\" "
                      "cmdline arg `" + target + "' on position 1 (argc 8)\n", status=2)
    peer, _ = found
    with host.fabric.instant():  # one answer, one model instant (FabricCore.instant)
        return _trace(host, peer, target, sport, dport, probes, max_hops, rng)


def _trace(host: HostState, peer: HostState, target: str, sport: int, dport: int,
           probes: int, max_hops: int, rng: random.Random) -> Output:
    fabric = host.fabric
    src = next((n for n in host.nics if n.cabled), None)
    dst = next((n for n in peer.nics if n.cabled), None)
    egress = (fabric.traffic.path(src.endpoint, dst.endpoint, sport=sport)
              if src is not None and dst is not None else [])
    hops = _hops(host, egress, dst.ipv4 if dst is not None else None) if dst else []
    flow = zlib.crc32(f"{host.name}>{peer.name}:{sport}:{dport}".encode())
    lines = [f"traceroute to {target} ({target}), {max_hops} hops max, 60 byte packets\n"]
    noise = fabric.testbed.emulation.noise if fabric.testbed.emulation else None
    # the probe's survival up to this hop (and its answer's, back); a noisy lab's hosts
    # drop an answer now and then whatever its path
    keep_to = 1.0 - (noise.probe_loss if noise is not None else 0.0)
    for ttl in range(1, max_hops + 1):
        if ttl <= len(hops):
            address, link, direction = hops[ttl - 1]
            p = gray.frame_loss(fabric, link, direction, flow)
            back = gray.frame_loss(fabric, link, "ba" if direction == "ab" else "ab", flow)
            keep_to *= (1.0 - p) * (1.0 - back)
        else:
            address = None
        # traceroute's own layout: "%2d ", then per probe " ADDR" where it changes and
        # "  N.NNN ms", or " *"
        line, last, answered = f"{ttl:2d} ", None, False
        for _ in range(probes):
            if address is not None and rng.random() < keep_to:
                if address != last:
                    line += f" {address}"
                    last = address
                line += f"  {0.05 * ttl + rng.uniform(0, 0.01):.3f} ms"
                answered = True
            else:
                line += " *"
        lines.append(line + "\n")
        if answered and address == (dst.ipv4 if dst else None):
            break  # the target answered: traceroute stops (else it goes on to max_hops)
    return Output("".join(lines))


def _hops(host: HostState, egress: list[str], target: str | None) -> list[tuple[str, str, str]]:
    """(answering address, link crossed to get there, its direction) per TTL."""
    fabric = host.fabric
    out = []
    for i, out_port in enumerate(egress):
        device, port = out_port.rsplit(":", 1)
        link = fabric.link_of(device, port)
        far = fabric.physical_peer(device, port)
        if link is None or far is None:
            break
        direction = "ab" if link.split("--", 1)[0] == out_port else "ba"  # link name: a--b
        if i == len(egress) - 1:
            address = target or ""
        else:
            address = next((s.local_ip for s in _routing.sessions(fabric, far.device)
                            if s.port == far.port), None) \
                or _routing.router_id(fabric, far.device)  # no interface address: loopback
        out.append((address, link, direction))
    return out

