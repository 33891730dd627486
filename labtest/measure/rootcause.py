"""Root causes: the fewest faults that explain a run's failures, found on its paths.

One fault fails many tests: a straggler link slows every pair and ring hashed onto
it, a dead switch breaks every test that needs it. This turns the results document
into evidence for :mod:`labtest.measure.inference` (what each measurement crossed,
whether it failed, how far from its limit) and reads the inferred faults back as
root causes: the culprit, the evidence, why not the runner-up, the failures it
explains, and what it costs. A failure no cause explains is listed as unexplained,
never given a culprit it did not earn.

What a measurement crossed comes from its labels and the testbed:

* ``pair=a--b`` (and ``client``/``server``, ``receiver`` with ``host``): every
  shortest route between the two hosts (the ECMP set, :mod:`labtest.measure.paths`);
* ``ring=h1 -> h2 -> ...``: each step's routes, the ring crossing all steps;
* ``receiver`` with ``senders`` (an incast): what every sender's routes share (the
  receiver's side) fully, each sender's own routes as a *part* carrying its share of
  the aggregate (a slow sender's link does not show in an incast of seven);
* ``receiver`` alone: the receiver and its link;
* a failover's ``link`` (the one the test shut): the devices at its ends, which must
  reroute (``X (all links)``: X's neighbours); the shut link itself is the stimulus,
  not a suspect;
* ``device``/``port``/``link`` otherwise *name* a component: a port names its link
  and its device; a ``queue`` at a port also the far end, which may be pausing it.

A broken test whose error is a transport error (the device could not be reached)
names its device. Pause-storm measurements (``STORM_KEYS``) mark their source
(the port's far end, which pauses) as *spreading*: pauses stall lossless traffic
anywhere, so it may explain every traffic failure.
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from labtest.errors import ServiceDown, TransportError
from labtest.measure import inference
from labtest.measure.coverage import expand_units, test_param
from labtest.measure.inference import Observation, Route
from labtest.measure.limits import Limit
from labtest.measure.management import error_name
from labtest.measure.measurement import read_value
from labtest.measure.paths import Fabric
from labtest.outcome import first_line

#: measurements that show a pause storm (its port and, in ``peer``, who pauses)
STORM_KEYS = ("congestion.idle_pfc_rx_frames", "congestion.stormed_queues")
#: measurements that show a link going down or flapping
LINK_DOWN_KEYS = ("link.flaps", "link.oper_down*", "link.down_*")
#: a routing session found down on a link, or seen to drop and come back: the link was down
#: at those moments (a laser that died mid-run, a lossy cable that took BFD down), while what
#: crossed it at others passed
SESSION_DOWN_KEYS = ("routing.bgp_session_down", "routing.bfd_session_down",
                     "routing.bgp_session_flaps")
#: a link seen coming and going (down some moments) or holing part of its flows: what
#: crossed it failed or passed by the moment or the hash (the engine's intermittent mode)
PARTIAL_LOSS_KEYS = ("paths.member_loss_ratio",)  # intermittent only below a total loss
#: a NIC a ring found down: its link was down at that moment (a laser dying mid-run), while
#: what crossed it earlier passed
NIC_DOWN_KEYS = ("collective.ring_nics_down",)
#: measurements of a session between two devices (``peer``: the far end): the far device is a
#: second suspect (a daemon dead on it takes down every session it has, seen from the other
#: ends, while its own end cannot be asked)
PEERED_KEYS = ("routing.bgp_*", "routing.bfd_*")
INTERMITTENT_KEYS = (*LINK_DOWN_KEYS, *NIC_DOWN_KEYS, *SESSION_DOWN_KEYS, *PARTIAL_LOSS_KEYS)
#: measurements of traffic: a fault anywhere on their path can spoil them
SYMPTOM_KEYS = (
    "roce.bw_*",
    "roce.latency_*",
    "roce.ecmp_*",
    "roce.lossless_drops",
    "roce.active_mtu_bytes",
    "roce.completion_errors*",
    "congestion.incast_*",
    "congestion.jain_*",
    "congestion.lossless_drops",
    "congestion.lossy_pfc_frames",
    "congestion.victim_*",
    "congestion.cnp_*",
    "congestion.other_priority_loss_frames",
    "congestion.pfcwd_*_excess_ms",
    "collective.busbw_*",  # not ring_nics_down: a NIC's own state, read at the ring's start
    "collective.wrong_elements",
    "collective.network_errors",
    "failover.*",
    "latency.*_us",
    "latency.*inflation",
    "delivered_ratio",
    "paths.*",
)
#: labels that list the ports (``Ethernet0:3 Ethernet8:3``) a device-wide finding covers
LIST_LABELS = ("queues", "ports")
#: labels that give a place as one "device:port" (a queue also adds ":priority")
PLACE_LABELS = ("ecn_port", "queue", "port")
#: measurements that show a switch spreading flows unevenly over its ECMP members: its
#: hashing spoils aggregate cross-fabric traffic wherever it goes (polarisation repeats
#: the same choice tier after tier)
ECMP_KEYS = ("roce.ecmp_share_deviation", "paths.ecmp_spread_max_mean")
#: ECMP findings in bytes of RDMA flows, which a lossy or blackholing member also makes short
SHARE_KEYS = ("roce.ecmp_share_deviation",)
#: an ECMP member below this fraction of its fair share (outside the balancing range, 25 %
#: under the mean) is short of flows: a hash that avoids it, or a link that lost its routes,
#: collapses its flows by loss or blackholes some (campaign 3204 case 049: 0.31/0.69)
STARVED_SHARE = 0.75
#: how a failover names a device taken down whole (a reboot) instead of one link
ALL_LINKS = " (all links)"
#: cabling faults are the cables': they name the link (and the far end seen instead)
CABLE_KEYS = ("cabling.*",)
#: a switch port's (or NIC's) own ECN counters: the device's reading, not its traffic's;
#: a pause storm anywhere stops them (nothing queues, nothing is marked)
STALL_KEYS = ("congestion.ecn_*", "congestion.receiver_ecn_*")
#: measurements whose ``link``/``device``/``port`` is the stimulus (what the test shut)
STIMULUS_KEYS = ("failover.*",)
CONVERGENCE_KEY, RESTORATION_KEY = ("failover.convergence_ms",
                                    "failover.restoration_convergence_ms")
#: measurements taken while a test held a link shut: their ``link`` label is that link
SHUT_LINK_KEYS = ("latency.failover_*",)
#: the label value of aggregate traffic across the spine layer (bisection runs)
CROSS_FABRIC_SCOPE = "bisection"
#: what judges bandwidth traffic of the kind a background load is (perftest pairs,
#: incasts, rings, many-stream members): a cause seen to spoil one reshapes a load
LOAD_KEYS = ("roce.bw_*", "congestion.incast_goodput_fraction", "congestion.victim_*",
             "collective.busbw_*", "paths.member_loss_ratio", "roce.ecmp_share_deviation",
             "roce.lossless_drops")
MAX_EVIDENCE = 8
MIN_FAIL_STRENGTH = 0.6
MIN_PASS_STRENGTH = 0.2
#: explanations closer than this (nats) are a tie the evidence cannot break
TIE_NATS = 0.5
#: a device's own word that a daemon is dead (``ServiceDown``): the aspect of its evidence
SERVICE_ASPECT = "service"
_DEAD = re.compile(r"([\w.-]+) is not running")
#: a test broken because its device did not answer is certain, first-hand evidence
UNREACHABLE_STRENGTH = 2.0
#: labels that say what is wrong (shown in a cause's one-line summary)
EXPLAINING_LABELS = ("trained", "capable", "expected", "seen", "peer")
#: prior of a fault by component kind: alike, but for a hair that makes the smaller claim
#: win a tie (the link before the host or switch its evidence also names)
PRIOR = {"link": inference.PRIOR, "host": inference.PRIOR * 0.995,
         "switch": inference.PRIOR * 0.99}


@dataclass(frozen=True)
class RootCause:
    cause: str  # one line: what is wrong and where
    kind: str  # fault | unreachable | service_down | storm | ecmp | link_down | unexplained
    culprit: str  # the unit: a device, "device:port" or a link name; "" when unexplained
    evidence: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # failures that show the cause itself
    consequences: list[str] = field(default_factory=list)  # failures it explains elsewhere
    not_runner_up: str = ""  # why not the next best explanation
    impact: list[str] = field(default_factory=list)  # what it costs, in the seeds' terms
    waiting_hosts: list[str] = field(default_factory=list)  # hosts whose traffic it slows
    score: float = 0.0  # log-likelihood gain (nats) of the explanation
    #: an earlier cause every traffic failure of this one crossed: perhaps its consequence
    downstream_of: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "score": round(self.score, 2)}


def matches(key: str | None, patterns: Iterable[str]) -> bool:
    return bool(key) and any(fnmatch.fnmatchcase(str(key), p) for p in patterns)


# --- one measurement as evidence --------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """An observation and where it came from (to quote it back)."""

    obs: Observation
    test: str
    measurement: Mapping[str, Any] | None  # None: a broken test's error
    text: str
    port: str | None = None  # the "device:port" it names, if one


def strength(m: Mapping[str, Any]) -> float:
    """How much a measurement says, from its distance to the limit: a tenth of the bound
    past it (or inside it) says all; a count against a bound of 0 says all. A failure
    says at least ``MIN_FAIL_STRENGTH`` (it did fail), a pass at least ``MIN_PASS_STRENGTH``."""
    value, limit = read_value(m.get("value")), m.get("limit") or {}
    bounds = [b for b in (limit.get("low"), limit.get("high")) if isinstance(b, int | float)]
    if value is None or not bounds or isinstance(m.get("value"), bool):
        return 1.0
    distance = min(abs(value - float(b)) for b in bounds)
    scale = max(abs(float(b)) for b in bounds) * 0.1
    if scale == 0:
        return 1.0
    floor = MIN_FAIL_STRENGTH if m.get("verdict") == "FAIL" else MIN_PASS_STRENGTH
    return min(1.0, max(floor, distance / scale))


def _ring_hosts(text: str) -> list[str]:
    return [h.strip() for h in text.split("->") if h.strip()]


def _segments(labels: Mapping[str, Any], key: str, fabric: Fabric, endless: bool = False,
              parts: tuple[tuple[Route, ...], ...] = ()) -> tuple[tuple[Route, ...], ...]:
    """What the measurement's traffic crossed, per segment (each: its ECMP routes).
    ``endless``: a failover that never stopped losing (its surviving routes count);
    ``parts``: an incast's senders' routes (``_parts``)."""
    crossed = _crossed(labels, fabric) if labels.get("flow") else frozenset()
    if crossed:  # a flow whose path was mapped: one route, every link of it crossed
        return ((crossed,),)
    if matches(key, STIMULUS_KEYS):
        stim = str(labels.get("link") or "")
        ends = fabric.link_ends(stim)
        if ends:
            event = (frozenset(d for d in ends if fabric.is_switch(d) or fabric.is_host(d)),)
            # a reroute that kept losing is the surviving members' doing as much as the ends';
            # one that ended late is the ends' detection and rehash
            after = _rerouted(labels, stim, fabric) if endless else ()
            # flows off the failed path that lost frames anyway: what they crossed (``links``);
            # an end's reroute (its FIB rewritten) spoils only the flows through that end
            hit = _crossed(labels, fabric) if not labels.get("flow") else frozenset()
            if hit:
                near = event[0] & hit
                return (*(((near,),) if near else ()), *((after,) if after else ()), (hit,))
            return (event, *((after,) if after else ()))
        whole = re.fullmatch(r"(\S+)" + re.escape(ALL_LINKS), stim)
        if whole and fabric.neighbours(whole.group(1)):
            return ((frozenset(fabric.neighbours(whole.group(1))),),)
        routes = _flow_routes(labels, fabric)  # a host stream losing before any event
        return (routes,) if routes and not stim else ()
    ring = str(labels.get("ring") or "")
    if ring:
        hosts = _ring_hosts(ring)
        steps = list(zip(hosts, hosts[1:] + hosts[:1], strict=True)) if len(hosts) > 1 else []
        return tuple(r for a, b in steps if (r := fabric.routes(a, b)))
    pair = str(labels.get("pair") or "")
    a, _, b = pair.partition("--")
    if not (a and b):
        a, b = str(labels.get("client") or labels.get("host") or ""), str(
            labels.get("server") or labels.get("receiver") or "")
    if a and b and fabric.is_host(a) and fabric.is_host(b):
        routes = fabric.routes(a, b)
        return (routes,) if routes else ()
    every = [r for seg in parts for r in seg]
    if every:  # an incast: what all of it crossed (each sender's own routes: its parts)
        return ((frozenset.intersection(*every),),)
    receiver = str(labels.get("receiver") or labels.get("host") or "")
    if fabric.is_host(receiver):
        return ((frozenset({receiver, *fabric.host_links(receiver)}),),)
    return ()


def _parts(labels: Mapping[str, Any], fabric: Fabric) -> tuple[tuple[Route, ...], ...]:
    """An incast's aggregate (``receiver`` and its ``senders``): each sender's routes."""
    receiver = str(labels.get("receiver") or labels.get("host") or "")
    senders = [h for h in str(labels.get("senders") or "").split()
               if fabric.is_host(h) and h != receiver]
    if not fabric.is_host(receiver):
        return ()
    return tuple(r for h in senders if (r := fabric.routes(h, receiver)))


def _crossed(labels: Mapping[str, Any], fabric: Fabric) -> Route:
    """The links a ``flow``'s ``links`` label lists (its mapped path: a TG probe flow's)
    and their ends; empty when the label is absent or names a link the testbed lacks."""
    links = [lk for lk in str(labels.get("links") or "").split(",") if lk]
    ends = [fabric.link_ends(lk) for lk in links]
    if not links or any(e is None for e in ends):
        return frozenset()
    return frozenset({*links, *(d for e in ends if e for d in e)})


def _stimulus_link(labels: Mapping[str, Any], key: str) -> bool:
    """Whether the ``link`` label is the link a test shut (latency during a failover, or
    after its link came back: ``phase``), not where the measurement located a fault."""
    return matches(key, SHUT_LINK_KEYS) or bool(labels.get("phase"))


def _rerouted(labels: Mapping[str, Any], stim: str, fabric: Fabric) -> tuple[Route, ...]:
    """The routes a failover's host flow (``flow``: ``src>dst:sport``), or a TG flow between
    the switches ``between`` names, could take once ``stim`` was down: a reroute that kept
    losing is the surviving members' doing as much as the ends' (an ECMP member blackholing
    what the shut sent onto it, a member already down). () when the flow's ends are unknown
    or no route avoids the link. Not the hosts' own ends: they carried the flow alike
    before and after the shut, so they cannot slow its reroute."""
    routes = [r for r in _event_routes(labels, fabric) if stim not in r]
    ends = _host_ends({c for r in routes for c in r if fabric.is_host(c)}, fabric)
    return tuple(r - ends for r in routes)


def _transient(labels: Mapping[str, Any], key: str, fabric: Fabric
               ) -> tuple[tuple[Route, ...], ...]:
    """What a failover flow crossed that only a fault which comes and goes can have spoilt
    (segments reached in the intermittent mode only). Its own routes once the test shut its
    link (``flow`` of hosts, or the switches ``between`` its TG ports: those that avoid the
    link, else all of them less it): the flow crossed them before the event without loss
    (its baseline), so a steady fault there is cleared, but a link that came and went
    during the reroute spoils its convergence like a slow switch does. So does the shut
    link itself when it flapped: dark on its own before the shut, its loss counts into the
    event's."""
    if not matches(key, STIMULUS_KEYS):
        return ()
    stim = str(labels.get("link") or "")
    routes = _event_routes(labels, fabric)
    after = [r for r in routes if stim not in r] or [r - {stim} for r in routes]
    shut = ((frozenset({stim}),),) if fabric.link_ends(stim) else ()
    return ((tuple(after),) if after else ()) + shut


def _stranded(measurements: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """The links a failover test shut whose reroute never converged (no route left between
    its TG ports' switches), with those switches (``between``). The same test's restoration
    then measured the outage until the only route came back (its sessions re-established),
    not a member re-added: it is the missing routes' doing as much as the never-converged
    reroute (kernel campaign 20261215/013: leaf1--spine1 down, spine2's restoration of 1.1 s
    beside its two endless reroutes named spine2 first)."""
    out: dict[str, str] = {}
    for m in measurements:
        labels = m.get("labels")
        value = read_value(m.get("value"))
        if not isinstance(labels, Mapping) or str(m.get("limit_key") or "") != CONVERGENCE_KEY:
            continue
        if labels.get("between") and (value is None or not math.isfinite(value)):
            out[str(labels.get("link") or "")] = str(labels["between"])
    return out


def _event_routes(labels: Mapping[str, Any], fabric: Fabric) -> tuple[Route, ...]:
    """Every route a failover's flow may take: a host flow's (``flow``), else those between
    the switches ``between`` names (a TG flow: its ports' switches); () when neither."""
    routes = _flow_routes(labels, fabric)
    between = str(labels.get("between") or "").split()
    if not routes and len(between) == 2 and all(fabric.is_switch(d) for d in between):
        routes = tuple(fabric.routes(*between))
    return routes


def _background(labels: Mapping[str, Any], fabric: Fabric) -> tuple[tuple[Route, ...], ...]:
    """The routes of the load a measurement ran beside (``background``: ``client>server
    ...``), one segment per flow; flows between unknown hosts are left out."""
    out = []
    for flow in str(labels.get("background") or "").split():
        a, _, b = flow.partition(">")
        if fabric.is_host(a) and fabric.is_host(b) and (routes := fabric.routes(a, b)):
            out.append(tuple(routes))
    return tuple(out)


def _host_ends(hosts: Iterable[str], fabric: Fabric) -> set[str]:
    """The hosts and their links: what carries a flow alike on every route it may take."""
    return {c for h in hosts for c in (h, *fabric.host_links(h))}


def _flow_routes(labels: Mapping[str, Any], fabric: Fabric) -> tuple[Route, ...]:
    """The routes of a host flow (``flow``: ``src>dst:sport``); () for a TG flow."""
    found = re.fullmatch(r"([^>\s]+)>([^:\s]+)(?::\d+)?", str(labels.get("flow") or ""))
    if not found or not (fabric.is_host(found[1]) and fabric.is_host(found[2])):
        return ()
    return tuple(fabric.routes(found[1], found[2]))


def _named(labels: Mapping[str, Any], key: str, fabric: Fabric
           ) -> tuple[frozenset[str], frozenset[str], str | None]:
    """Components a measurement names itself, their second suspects, and the port it
    names (if one)."""
    if matches(key, STIMULUS_KEYS):
        device = str(labels.get("device") or "")
        port_given = str(labels.get("port") or "")
        # a failover's own device state (ECMP width after the shut) names that device
        return (frozenset({device}) if device in fabric.kind and not port_given
                and not labels.get("link") else frozenset()), frozenset(), None
    device, port, link = (str(labels.get(k) or "") for k in ("device", "port", "link"))
    out: set[str] = set()
    nearby: set[str] = set()
    named_port = None
    if not (device and port):  # a place given as one "device:port" label
        for k in PLACE_LABELS:
            dev, _, prt = str(labels.get(k) or "").partition(":")
            if dev in fabric.kind and prt:
                device, port = dev, prt.split(":", 1)[0] if k == "queue" else prt
                break
    if device and port and device in fabric.kind:
        named_port = f"{device}:{port}"
        out.add(device)
        if (lk := fabric.link_of(device, port)) is not None:
            out.add(lk)
            # a NIC's trouble shows at the switch port facing it: that port names the host
            out.update(d for d in fabric.link_ends(lk) or () if d != device and fabric.is_host(d))
            if labels.get("queue"):
                # a queue standing at an egress port: its owner's marking or buffers, the
                # link, or the far end pausing it (PFC from the device downstream)
                far = [d for d in fabric.link_ends(lk) or ()
                       if d != device and (fabric.is_switch(d) or fabric.is_host(d))]
                nearby.update(far)
                # and on a fabric link, its ECMP siblings: one losing (RoCE collapsing over
                # it) or gone shifts the load onto this member
                nearby.update(s for d in far if fabric.is_switch(d) and fabric.is_switch(device)
                              for s in _siblings(lk, device, d, fabric))
    elif device in fabric.kind:
        out.add(device)
    if link and fabric.link_ends(link) and not _stimulus_link(labels, key):
        out.add(link)
    if matches(key, PEERED_KEYS):  # a session needs both ends: the far one is named too
        other_end = str(labels.get("peer") or "").partition(":")[0]
        if fabric.is_switch(other_end) or fabric.is_host(other_end):
            out.add(other_end)
    if matches(key, CABLE_KEYS):  # a switch does not swap its cables
        out.discard(device)
        seen_link = _link_of_endpoint(str(labels.get("seen") or ""), fabric)
        if seen_link:
            nearby.add(seen_link)
    return frozenset(out), frozenset(nearby - out), named_port


def _moved(labels: Mapping[str, object], fabric: Fabric) -> frozenset[str]:
    """The links whose routing sessions dropped while the measurement ran (``moved``): its
    flows may have left the place it names for them, so they are second suspects of its
    failure. A pass says nothing of them (whatever moved, it held)."""
    return frozenset(lk for lk in str(labels.get("moved") or "").split(",")
                     if lk and fabric.link_ends(lk))


def _streams(labels: Mapping[str, Any]) -> int:
    """How many independently hashed streams the traffic was (its ``flows`` label; 1)."""
    try:
        return max(int(str(labels.get("flows") or 1)), 1)
    except ValueError:
        return 1


def _starved_links(labels: Mapping[str, Any], fabric: Fabric) -> frozenset[str]:
    """The links of the ECMP members (``shares``: ``port=share ...``) that carried less than
    ``STARVED_SHARE`` of their fair share."""
    device = str(labels.get("device") or "")
    shares: dict[str, float] = {}
    for item in str(labels.get("shares") or "").split():
        port, _, value = item.rpartition("=")
        with contextlib.suppress(ValueError):
            shares[port] = float(value)
    if len(shares) < 2:
        return frozenset()
    fair = sum(shares.values()) / len(shares)
    return frozenset(lk for port, share in shares.items() if share < STARVED_SHARE * fair
                     and (lk := fabric.link_of(device, port)) is not None)


def _onward(labels: Mapping[str, Any], starved: frozenset[str], fabric: Fabric
            ) -> frozenset[str]:
    """What the flows a short member carried crossed after it (``source`` host to each of
    ``towards``, on the routes through a starved member): RoCE collapsing on a lossy link
    further on leaves that member short too, so those are its second suspects. Not the
    hosts' ends nor their leaves: a leaf carries what every member brings it alike, so it
    cannot starve one of them."""
    src, towards = str(labels.get("source") or ""), str(labels.get("towards") or "").split()
    if not (src and starved):
        return frozenset()
    routes = [r for dst in towards for r in fabric.routes(src, dst) if starved & r]
    crossed = {c for r in routes for c in r if fabric.link_ends(c) or fabric.is_switch(c)}
    ends = _host_ends((h for h in (src, *towards) if fabric.is_host(h)), fabric)
    leaves = {d for lk in ends for d in fabric.link_ends(lk) or () if fabric.is_switch(d)}
    return frozenset(crossed - ends - leaves)


def _siblings(link: str, near: str, far: str, fabric: Fabric) -> set[str]:
    """``link``'s ECMP siblings for traffic from switch ``near`` to switch ``far``: toward a
    leaf (a switch with hosts), the other switches' links into it, which the source leaves
    chose among; toward a spine, ``near``'s other links to switches, the members it chose
    among (the other leaves' links into that spine carry other leaves' choices)."""
    leafward = any(fabric.is_host(n) for n in fabric.adjacency.get(far, {}))
    hub = far if leafward else near
    return {lk for nbr, links in fabric.adjacency.get(hub, {}).items() if fabric.is_switch(nbr)
            for lk in links if lk != link}


def _many_ports(labels: Mapping[str, Any]) -> bool:
    """A device-wide finding: its ``queues``/``ports`` label lists more than one port (the
    ``port`` label then only says where the list starts)."""
    listed = " ".join(str(labels.get(k) or "") for k in LIST_LABELS).split()
    return len({item.split(":", 1)[0] for item in listed}) > 1


def _link_of_endpoint(endpoint: str, fabric: Fabric) -> str | None:
    dev, _, port = endpoint.partition(":")
    return fabric.link_of(dev, port) if dev and port else None


def evidence_of(doc: Mapping[str, Any], fabric: Fabric
                ) -> tuple[list[Evidence], dict[str, str]]:
    """Every judged measurement (and every transport-broken test) as evidence, and the
    components that may spoil traffic beyond their routes (a pause storm's source: all
    traffic; a switch hashing unevenly: the bisection runs), by the scope they reach.
    Passing measurements of one test on one path count once (five readings of one pair
    are one clearance)."""
    out: list[Evidence] = []
    load_kinds = _load_kinds(doc)
    sources: set[str] = set()
    spread_ports: set[str] = set()
    uneven: set[str] = set()
    seen: set[tuple[Any, ...]] = set()
    for t in doc.get("tests") or []:
        nodeid = str(t.get("nodeid") or "")
        outcome = t.get("outcome")
        if outcome == "broken" and _unreachable(t) and str(t.get("device") or "") in fabric.kind:
            device = str(t["device"])
            text = first_line(t.get("message")) or "no answer"
            obs = Observation(f"{nodeid}#broken", True, named=frozenset({device}),
                              strength=UNREACHABLE_STRENGTH, traffic=False,
                              aspect="reachability")
            out.append(Evidence(obs, nodeid, None, f"{device} could not be asked: {text}"))
            continue
        if outcome == "failed" and error_name(t) == ServiceDown.__name__ and str(
                t.get("device") or "") in fabric.kind:  # asked, it said its daemon is dead
            device = str(t["device"])
            said = _DEAD.search(str(t.get("message") or ""))
            text = f"{said.group(1)} is not running" if said else first_line(t.get("message"))
            obs = Observation(f"{nodeid}#service", True, named=frozenset({device}),
                              traffic=False, aspect=SERVICE_ASPECT)
            out.append(Evidence(obs, nodeid, None, f"{device} says {text}"))
            continue
        stranded = _stranded(t.get("measurements") or [])
        for i, m in enumerate(t.get("measurements") or []):
            verdict = m.get("verdict")
            if verdict not in ("PASS", "FAIL"):
                continue
            key = str(m.get("limit_key") or m.get("name") or "")
            labels = m.get("labels") or {}
            strand = stranded.get(str(labels.get("link"))) if key == RESTORATION_KEY else None
            if strand is not None:  # the flows' only route came back: the routes it lacked
                labels = {**labels, "between": strand}
            traffic = matches(key, SYMPTOM_KEYS) or matches(key, STORM_KEYS)
            named, nearby, port = _named(labels, key, fabric)
            if _many_ports(labels):  # a finding over several of its ports is the device's
                named, nearby, port = frozenset({str(labels.get("device"))}) & set(fabric.kind), (
                    frozenset()), None
            failed = verdict == "FAIL"
            if failed:  # measured while routes moved: see _moved
                nearby |= _moved(labels, fabric) - named
            if matches(key, ECMP_KEYS):  # the switch hashes, whichever member is named
                named, port = frozenset({str(labels.get("device"))}) & set(fabric.kind), None
                if failed:
                    uneven |= named
                    # RoCE bytes short on a member may be the link's doing (its routes
                    # withdrawn, its flows collapsed by loss): the link explains it too. The
                    # paths suite counts its streams' frames per member, and judges each
                    # member's loss apart (PATHS-2): its short member is the hash's, or
                    # second, a member that was dark for moments (its flows rehashed)
                    starved = _starved_links(labels, fabric)
                    if matches(key, SHARE_KEYS):
                        named |= starved
                        nearby |= _onward(labels, starved, fabric) - named
                    else:  # a member dark for moments (its flows went to the others), or
                        # one whose onward route was withdrawn: what its flows crossed after
                        nearby |= (starved | _onward(labels, starved, fabric)) - named
            value = read_value(m.get("value"))
            endless = value is None or not math.isfinite(value) or strand is not None
            parts = _parts(labels, fabric) if traffic else ()
            segments = _segments(labels, key, fabric, endless, parts) if traffic else ()
            parts = parts if segments else ()
            aspect = key
            if matches(key, STIMULUS_KEYS) and str(labels.get("link") or "").endswith(ALL_LINKS):
                aspect = f"{key}@reboot"  # a reboot withdraws its routes first: not a failure
            if not failed and not (traffic and segments):
                continue  # a device's own reading that passed clears nothing else
            signature = (nodeid, failed, named, nearby, segments, parts,
                         key if not failed else "")  # transient: from the same labels
            if not failed and signature in seen:
                continue
            seen.add(signature)
            if failed and matches(key, STORM_KEYS):
                from_host, from_port = _storm_sources(labels, fabric)
                sources |= from_host
                spread_ports |= from_port
            transient = _transient(labels, key, fabric) if traffic else ()
            obs = Observation(f"{nodeid}#{i}", failed, segments, named, strength(m),
                              traffic=traffic, aspect=aspect, scope=str(labels.get("scope") or ""),
                              nearby=nearby, stalls=matches(key, STALL_KEYS),
                              streams=_streams(labels), parts=parts, transient=transient,
                              load=_background(labels, fabric) if traffic else (),
                              load_aspects=load_kinds)
            out.append(Evidence(obs, nodeid, m, message(m), port))
    spreading = dict.fromkeys(sources or spread_ports, inference.ANY_SCOPE)
    return _one_fact_each(out), spreading | dict.fromkeys(uneven, CROSS_FABRIC_SCOPE)


def _load_kinds(doc: Mapping[str, Any]) -> frozenset[str]:
    """The run's limit keys that judge bandwidth traffic (``LOAD_KEYS``): a cause seen to
    spoil one of them reshapes a background load it crossed."""
    keys = {str(m.get("limit_key") or "") for t in doc.get("tests") or []
            for m in t.get("measurements") or []}
    return frozenset(k for k in keys if matches(k, LOAD_KEYS))


def _one_fact_each(found: list[Evidence]) -> list[Evidence]:
    """Readings of one test at one place on one path are one fact (the p50, p99 and max
    of one queue): their strengths are scaled to add up to the strongest's, so the fact
    counts once while each keeps its own key (what a fault of that kind spoils)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, e in enumerate(found):
        o = e.obs
        groups.setdefault((e.test, o.failed, o.named, o.nearby, o.segments, o.parts),
                          []).append(i)
    out = list(found)
    for members in groups.values():
        total = sum(found[i].obs.strength for i in members)
        top = max(found[i].obs.strength for i in members)
        for i in members:
            obs = found[i].obs
            out[i] = replace(found[i], obs=replace(obs, strength=obs.strength * top / total))
    return out


def _storm_sources(labels: Mapping[str, Any], fabric: Fabric) -> tuple[set[str], set[str]]:
    """(the pausing NIC and its link, when the stormed port faces a host; else the stormed
    port's link): a storm comes from an end that pauses, and pauses from a switch are
    the storm's spread, not its source."""
    device, port = str(labels.get("device") or ""), str(labels.get("port") or "")
    link = fabric.link_of(device, port) if device and port else None
    peer = str(labels.get("peer") or "")
    if not peer and link:
        peer = next((e for e in fabric.link_ends(link) or () if e != device), "")
    peer_device = peer.partition(":")[0]
    if fabric.is_host(peer_device):
        return set([link] if link else fabric.host_links(peer_device)), set()
    return set(), {link} if link else set()


# --- from inferred faults to root causes -----------------------------------------------------


def root_causes(doc: Mapping[str, Any]) -> list[RootCause]:
    """The run's failures under the fewest causes that explain them, the strongest first;
    then each failure no cause explains."""
    fabric = Fabric(expand_units(doc.get("testbed")))
    found, spreading = evidence_of(doc, fabric)
    by_id = {e.obs.id: e for e in found}
    priors = {c: PRIOR.get(_component_kind(c, fabric), inference.PRIOR)
              for c in {*(c for e in found for c in e.obs.components), *spreading}}
    result = inference.infer([e.obs for e in found], spreading=spreading, priors=priors,
                             intermittent=_intermittent(found, fabric))
    failed_tests = [t for t in doc.get("tests") or [] if t.get("outcome") in ("failed", "broken")]
    owner: dict[str, int] = {}  # nodeid -> index of the cause that claims it
    ordered = _independent_first(result.causes, by_id)
    causes = [c for c, _ in ordered]
    for i, cause in enumerate(causes):
        for oid in (*cause.explains, *cause.likely):
            owner.setdefault(by_id[oid].test, i)
    out: list[RootCause] = []
    for i, cause in enumerate(causes):
        mine = [by_id[oid] for oid in cause.explains]
        direct = [e for e in mine if cause.component in e.obs.named]
        tests = list(dict.fromkeys(e.test for e in direct if owner.get(e.test) == i))
        # what it explains, then what is likelier its doing than noise (``likely``)
        consequences = [n for n in dict.fromkeys(
            [*(e.test for e in mine), *(by_id[oid].test for oid in cause.likely)])
            if owner.get(n) == i and n not in tests]
        found_as = _describe(cause, mine, direct, tests, consequences, by_id, fabric)
        upstream = ordered[i][1]
        out.append(replace(found_as, downstream_of=_culprit_of(upstream, by_id, fabric))
                   if upstream is not None else found_as)
    claimed = set(owner)
    for t in failed_tests:
        nodeid = str(t.get("nodeid") or "")
        if nodeid not in claimed:
            out.append(_unexplained(t))
    return out


def _independent_first(causes: Sequence[inference.Cause], by_id: Mapping[str, Evidence]
                       ) -> list[tuple[inference.Cause, inference.Cause | None]]:
    """The causes by gain, but one whose failures all moved traffic across an earlier,
    independent cause after the independent ones, with that cause: flows collapsing on a
    lossy link look like uneven hashing at their leaf, a flapping host link stalls the
    incasts it sent into; the model has no mechanism for such knock-on effects, and they
    must not push a second fault's own reading out of the first places."""
    lead: list[tuple[inference.Cause, None]] = []
    after: list[tuple[inference.Cause, inference.Cause | None]] = []
    for cause in causes:
        seen = [by_id[i].obs for i in cause.explains]
        upstream = next((a for a, _ in lead if seen and all(
            o.traffic and a.component in o.components for o in seen)), None)
        if upstream is None:
            lead.append((cause, None))
        else:
            after.append((cause, upstream))
    return [*lead, *after]


def _culprit_of(cause: inference.Cause, by_id: Mapping[str, Evidence], fabric: Fabric
                ) -> str:
    """The culprit an upstream cause is shown as: a link as its port where its readings name
    one; a device as its port where every reading of its own is at that one port (kernel
    campaign 20261216/016: spine2:Ethernet0's MTU lowered, its link cleared by the traffic
    that crossed it at small frames, was shown as "spine2")."""
    direct = [by_id[i] for i in cause.explains if cause.component in by_id[i].obs.named]
    if fabric.link_ends(cause.component):
        ports = {e.port for e in direct
                 if e.port and fabric.link_of(*e.port.split(":", 1)) == cause.component}
        return ports.pop() if len(ports) == 1 else cause.component
    places = {e.port for e in direct}
    port = places.pop() if len(places) == 1 else None
    return port if port and port.split(":", 1)[0] == cause.component else cause.component


def _intermittent(found: Iterable[Evidence], fabric: Fabric) -> set[str]:
    """The links a failing reading shows flapping, or losing part (not all) of a member's
    frames: each may have spoiled only what crossed it at the wrong moment or hash."""
    out: set[str] = set()
    for e in found:
        m = e.measurement or {}
        key, value = str(m.get("limit_key") or ""), read_value(m.get("value"))
        if not e.obs.failed or not matches(key, INTERMITTENT_KEYS):
            continue
        if matches(key, PARTIAL_LOSS_KEYS) and not (value is not None and 0.0 < value < 1.0):
            continue  # a member that lost everything is dark, not intermittent
        out |= {c for c in e.obs.named if fabric.link_ends(c)}
    return out


def _component_kind(c: str, fabric: Fabric) -> str:
    if fabric.link_ends(c):
        return "link"
    return fabric.kind.get(c, "switch")


def _describe(cause: inference.Cause, mine: Sequence[Evidence], direct: Sequence[Evidence],
              tests: list[str], consequences: list[str], by_id: Mapping[str, Evidence],
              fabric: Fabric) -> RootCause:
    comp = cause.component
    culprit = _culprit_of(cause, by_id, fabric)
    if cause.mode == "spreading" and comp in fabric.kind and fabric.is_switch(comp) and any(
            matches(str((e.measurement or {}).get("limit_key")), ECMP_KEYS) for e in direct):
        kind, what = "ecmp", ""
    elif cause.mode == "spreading":
        kind, what = "storm", "PFC storm"
    elif any(e.measurement is None and e.obs.aspect == SERVICE_ASPECT for e in direct):
        kind, what = "service_down", "says a daemon is dead"
    elif any(e.measurement is None for e in direct):
        kind, what = "unreachable", "could not be asked"
    elif fabric.link_ends(comp) and any(
            matches(str((e.measurement or {}).get("limit_key")), LINK_DOWN_KEYS) for e in direct):
        kind, what, culprit = "link_down", "", comp
    else:
        kind, what = "fault", _what(direct or mine)
    where = culprit
    peer = ""
    if kind == "storm" and fabric.link_ends(comp):
        ends = fabric.link_ends(comp) or ("", "")
        far = next((str((e.measurement or {}).get("labels", {}).get("peer") or "")
                    for e in direct if e.port == culprit), "")
        host = far or next((d for d in ends if fabric.is_host(d)), "")
        peer = f" (from {host})" if host and host not in culprit else ""
    if kind in ("unreachable", "service_down"):
        head = next(e.text for e in direct if e.measurement is None)
    elif kind == "storm":
        head = f"PFC storm at {where}{peer}"
    elif kind == "ecmp":
        head = f"uneven ECMP hashing at {comp}: flows share too few uplinks"
    elif kind == "link_down":
        head = f"link {comp} went down or flapped"
    else:
        head = f"{where}: {what}"
    evidence = _evidence_lines(direct, mine)
    runner = _runner_up_text(cause, by_id, fabric)
    impact, waiting = _impact(mine, fabric)
    return RootCause(head, kind, culprit, evidence, tests, consequences, runner, impact,
                     waiting, cause.gain)


def _what(found: Sequence[Evidence]) -> str:
    """The cause in words: the failing keys and the values that explain them."""
    keys = list(dict.fromkeys(str(e.measurement.get("name")) for e in found if e.measurement))
    first = next((e.measurement for e in found if e.measurement), None)
    labels = (first or {}).get("labels") or {}
    why = ", ".join(f"{k}={labels[k]}" for k in EXPLAINING_LABELS if labels.get(k))
    n = len({e.test for e in found})
    head = ", ".join(keys[:3]) + (f" (+{len(keys) - 3} more)" if len(keys) > 3 else "")
    tail = f" ({why})" if why else ""
    value = f" {_value(first)}" if first is not None and len(keys) == 1 else ""
    many = f" in {n} tests" if n > 1 else ""
    return f"{head}{value} outside its limit{many}{tail}"


def _evidence_lines(direct: Sequence[Evidence], mine: Sequence[Evidence]) -> list[str]:
    ordered = list(direct) + [e for e in sorted(mine, key=lambda e: -e.obs.strength)
                              if e not in direct]
    return list(dict.fromkeys(e.text for e in ordered))[:MAX_EVIDENCE]


def _runner_up_text(cause: inference.Cause, by_id: Mapping[str, Evidence], fabric: Fabric
                    ) -> str:
    other = cause.runner_up
    if other is None:
        return ""
    if cause.cleared_by:
        e = by_id[cause.cleared_by[0]]
        m = e.measurement or {}
        return (f"not {other}: {e.test.rsplit('::', 1)[-1]} crossed it and passed "
                f"({m.get('name')} {_value(m)})")
    if cause.runner_up_gain <= 0:
        return f"not {other}: it explains none of these failures"
    if cause.gain - cause.runner_up_gain < TIE_NATS:
        return (f"or {other}: it explains these failures as well and no measurement "
                "separates the two; check both")
    return (f"not {other}: it explains less (log-likelihood {cause.runner_up_gain:.1f} "
            f"against {cause.gain:.1f})")


def _impact(mine: Sequence[Evidence], fabric: Fabric) -> tuple[list[str], list[str]]:
    """What the cause costs: bus bandwidth lost, RoCE bandwidth lost per pair, latency
    added, and the hosts whose traffic waits on it."""
    out: list[str] = []
    busbw = [(float(lb["busbw_gbytes_s"]), float(lb["ceiling_gbytes_s"]))
             for e in mine if e.measurement and e.obs.failed
             and "busbw_gbytes_s" in (lb := e.measurement.get("labels") or {})
             and "ceiling_gbytes_s" in lb]
    if busbw:
        worst, ceiling = min(busbw)
        out.append(f"all-reduce bus bandwidth {worst:.1f} of {ceiling:.1f} GB/s "
                   f"(-{(ceiling - worst):.1f} GB/s, -{100 * (1 - worst / ceiling):.0f}%) "
                   f"in {len(busbw)} ring(s)")
    pairs: dict[str, tuple[float, float]] = {}
    for e in mine:
        lb = (e.measurement or {}).get("labels") or {}
        if e.obs.failed and "bw_gbps" in lb and "line_gbps" in lb and lb.get("pair"):
            pairs[str(lb["pair"])] = min(pairs.get(str(lb["pair"]), (math.inf, 0.0)),
                                         (float(lb["bw_gbps"]), float(lb["line_gbps"])))
    if pairs:
        lost = [line - bw for bw, line in pairs.values()]
        low_bw, its_line = min(pairs.values())
        out.append(f"RoCE bandwidth -{sum(lost) / len(lost):.0f} Gb/s per pair on {len(pairs)} "
                   f"pair(s) (worst {low_bw:.0f} of {its_line:.0f} Gb/s)")
    added = [float(lb["loaded_us"]) - float(lb["idle_us"])
             for e in mine if e.measurement and e.obs.failed
             and "idle_us" in (lb := e.measurement.get("labels") or {}) and "loaded_us" in lb]
    if added:
        out.append(f"p99 latency +{max(added):.1f} us under load")
    hosts = sorted({c for e in mine if e.obs.failed and e.obs.traffic
                    for seg in (*e.obs.segments, *e.obs.parts) for r in seg for c in r
                    if fabric.is_host(c)})
    if hosts:
        out.append(f"{len(hosts)} host(s) wait on it: {', '.join(hosts)}")
    return out, hosts


def _unexplained(t: Mapping[str, Any]) -> RootCause:
    nodeid = str(t.get("nodeid") or "")
    failing = [m for m in t.get("measurements") or [] if m.get("verdict") == "FAIL"]
    evidence = [message(m) for m in failing][:MAX_EVIDENCE]
    if not evidence:
        line = first_line(t.get("message"))
        evidence = [line] if line else []
    what = "broken" if t.get("outcome") == "broken" else "failed"
    name = nodeid.rsplit("::", 1)[-1] or (test_param(t) or "?")
    device = f" on {t['device']}" if t.get("device") else ""
    return RootCause(f"unexplained: {name} {what}{device}, and no fault on its path "
                     "explains it", "unexplained", "", evidence, [nodeid], [])


# --- text ----------------------------------------------------------------------------------


def message(m: Mapping[str, Any]) -> str:
    """A failing measurement in one line (as ``Measurement.message`` prints it)."""
    labels = m.get("labels") or {}
    where = "".join(f" {k}={v}" for k, v in labels.items() if k not in ("detail", "evidence"))
    bound = _limit_text(m.get("limit"))
    tail = f"; limit {bound}" if bound else ""
    head = f"{m.get('name')}{where}: {_value(m)}".rstrip()
    return f"{head} is {m.get('verdict')}{tail}"


def _value(m: Mapping[str, Any]) -> str:
    value = m.get("value")
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{text} {m.get('unit') or ''}".rstrip()


def _limit_text(limit: Mapping[str, Any] | None) -> str:
    if not limit:
        return ""
    try:
        return Limit.model_validate(dict(limit)).describe()
    except ValueError:
        return ""


def transport_errors() -> tuple[str, ...]:
    """Names of the errors that mean "the device could not be reached" (and subclasses)."""
    found, todo = [], [TransportError]
    while todo:
        cls = todo.pop()
        found.append(cls.__name__)
        todo.extend(cls.__subclasses__())
    return tuple(sorted(found))


def _unreachable(test: Mapping[str, Any]) -> bool:
    return test.get("outcome") == "broken" and error_name(test) in transport_errors()


def explained_by(causes: Iterable[RootCause]) -> dict[str, RootCause]:
    """nodeid -> the cause it is a consequence of."""
    return {n: c for c in causes for n in c.consequences}
