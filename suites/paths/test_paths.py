"""Paths: every fabric link on the traffic generator's paths carries the load offered to it.

A straggler link (one that forwards only part of its rate: a rate limit, lanes down, a
retimer that retrains) passes link state, LLDP and routing; only load shows it. The TG's
probe flows are mapped onto the ECMP paths between its two leaves (binary-weighted
bursts, as in failover), then the paths over each spine are loaded in turn, both
directions at once. Each directed hop's carried frames (the receiving end's rx counter,
beyond the fabric's own BFD/BGP/LLDP frames, read idle first) over the frames that entered
it (what the TG sent for the first hop, what the previous hop carried after it) names the
hop that dropped, so a slow link is named with the end that sends into it; a hop too few
path frames reached (after a hop that dropped nearly all) is not judged on the background.
Test plan: README.md in this folder. Run parameters: settings.yaml. Pass criteria: ``paths.*``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import allure
import pytest

from labtest import labtime, plugin
from labtest.capabilities.traffic import (
    ETHERNET_L1_OVERHEAD_BYTES,
    Flow,
    TrafficConfig,
    TrafficGenerator,
)
from labtest.errors import DataplaneFailed, InfraError, TransportTimeout
from labtest.fixtures.cabling_plan import fabric_links
from labtest.fixtures.route_moves import moved_links, read_sessions, unasked
from labtest.fixtures.suite_data import load_settings
from labtest.fixtures.tg_probes import (
    PathMapping,
    TgPort,
    map_probe_paths,
    probe_config,
    probe_flow_name,
    probe_pair,
)
from labtest.measure.coverage import expand_units
from labtest.measure.paths import Fabric
from labtest.reports import results
from labtest.reports.attach import attach_json

if TYPE_CHECKING:  # names pytest must not collect
    from labtest.fixtures.cabling_plan import Uplink
    from labtest.fixtures.traffic import FabricView
    from labtest.lab import Lab
    from labtest.measure.limits import LimitsProfile
    from labtest.testbed.model import Link

SETTINGS = load_settings("paths")
KEY = "paths.delivered_ratio"
SLACK_S = float(SETTINGS["route_moves"]["uptime_slack_s"])
UNREAD = "switches whose BGP sessions could not be read (a route that moved there is not known)"
pytestmark = [pytest.mark.needs("TrafficGenerator")]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fabric_link" in metafunc.fixturenames:
        tb = plugin.testbed_of(metafunc.config)
        links = fabric_links(tb) if tb is not None else []
        metafunc.parametrize("fabric_link", links, ids=[lk.name for lk in links])


@dataclass(frozen=True)
class Hop:
    """One direction of a fabric link under load: what entered it and what came out."""

    link: str
    device: str  # the end that sends into the link
    port: str
    peer: str  # the receiving end, device:port
    spine: str
    entered_frames: int
    carried_frames: int
    offered_pps: float  # what the TG achieved on the path, both directions' flows of it
    background_frames: int = 0  # the fabric's own, taken from the receiving end's count

    @property
    def ratio(self) -> float:
        return self.carried_frames / self.entered_frames if self.entered_frames > 0 else 0.0


@dataclass
class Deliveries:
    """Every loaded hop by link, and why a link has none."""

    hops: dict[str, list[Hop]] = field(default_factory=dict)
    holes: dict[str, str] = field(default_factory=dict)
    unloaded: str = ""  # why no link is loaded (no TG pair); else see ``hole``
    leaves: tuple[str, ...] = ()  # the switches of the TG's two ports
    flows: int = 0
    #: spine -> the links whose routing sessions dropped between the mapping of the flows
    #: and the end of that spine's load: its flows may have left their mapped members
    moved: dict[str, list[str]] = field(default_factory=dict)

    def hole(self, link: Link) -> str:
        """Why ``link`` carried no probe load."""
        if link.name in self.holes or self.unloaded:
            return self.holes.get(link.name) or self.unloaded
        if {e.device for e in link.ends} & set(self.leaves):
            return f"none of the {self.flows} probe flows per direction was hashed onto it"
        return (f"the traffic generator's ports are on {' and '.join(self.leaves)}: no path "
                "between them crosses it")


def _moved(links: list[str], own: str) -> dict[str, str]:
    """The ``moved`` label: other links whose sessions dropped while it was measured (the
    root cause engine's second suspects of its failure); none: no label."""
    others = [lk for lk in links if lk != own]
    return {"moved": ",".join(others)} if others else {}


def _offered(flows: list[Flow]) -> dict[str, float]:
    """Per-flow rate for the flows of one path and direction: the path's load, shared."""
    load = SETTINGS["load"]
    share = 1.0 / max(len(flows), 1)
    if load.get("pps"):
        return {"rate_pps": float(load["pps"]) * share}
    return {"rate_line_pct": float(load["line_pct"]) * share}


def _phase_config(base: TrafficConfig, groups: list[list[str]]) -> TrafficConfig:
    """The probe flows of one spine's paths, each path and direction at the path load."""
    by_name = {f.name: f for f in base.flows}
    flows = []
    for names in groups:
        rate = _offered([by_name[n] for n in names])
        for n in names:
            update = {"rate_pps": None, "rate_line_pct": None, "packets": None,
                      "duration_s": float(SETTINGS["duration_s"]), **rate}
            flows.append(Flow.model_validate({**by_name[n].model_dump(), **update}))
    return TrafficConfig(ports=base.ports, flows=flows)


def _rx(counters: dict[str, dict[str, Any]], end: tuple[str, str]) -> int | None:
    """The port's received packets; None where the switch does not report them."""
    device, port = end
    row = counters[device].get(port)
    value = None if row is None else row.rx_packets
    return None if value is None else int(value)


#: frames a port's count may be off by because the two ends are read one after the other
#: (a background frame lands between the reads): one per end
READ_SKEW_FRAMES = 1


@dataclass(frozen=True)
class Background:
    """The fabric's own frames (BFD, BGP, LLDP) each port receives per second when idle, and
    the delivered ratio's low limit. A hop's rx counter counts that background beside the
    path's frames (about 1 % of a path's load in the kernel lab), so what it carried is
    taken beyond it, and a hop after the first, judged on what the hop before it carried,
    only where those path frames leave the background's chance variation inside the
    limit's slack."""

    rx_pps: dict[tuple[str, str], float] = field(default_factory=dict)
    low: float | None = None
    sigma: float = float(SETTINGS["background"]["sigma"])

    def frames(self, end: tuple[str, str], seconds: float) -> int:
        """The background ``end`` receives over ``seconds``, as read idle."""
        return round(self.rx_pps.get(end, 0.0) * seconds)

    def too_few(self, entered: int, ends: tuple[tuple[str, str], tuple[str, str]],
                seconds: float) -> str:
        """Why ``entered`` path frames (counted beyond the background at ``ends[0]``) cannot
        judge the hop into ``ends[1]``; empty: they can. Background counts over a window
        vary like counts: ``sigma`` standard deviations of both ends' background, plus a
        frame of read skew each, must fit in the slack (1 - low) of the entered frames."""
        if self.low is None or self.low >= 1.0:
            return ""
        jitter = (self.sigma * math.sqrt(sum(self.frames(e, seconds) for e in ends))
                  + READ_SKEW_FRAMES * len(ends))
        if entered * (1.0 - self.low) >= jitter:
            return ""
        return (f"about {entered} of the path's frames entered it beyond the fabric's own "
                f"(BFD, BGP, LLDP: {self.frames(ends[0], seconds)} counted at "
                f"{':'.join(ends[0])} meanwhile, at its idle rate): their "
                f"{1 - self.low:.0%} slack is under that background's chance variation "
                f"({jitter:.0f} frames), so a ratio would judge the background, not the link")


def _background(lab: Lab, devices: list[str], low: float | None) -> Background:
    """The idle receive rate of every port of ``devices``, over ``background.idle_s``."""
    t0, was = labtime.monotonic(), _counts(lab, devices)
    labtime.sleep(float(SETTINGS["background"]["idle_s"]))
    t1, now = labtime.monotonic(), _counts(lab, devices)
    seconds = max(t1 - t0, 1e-9)
    rates = {}
    for end in ((d, port) for d in devices for port in now[d]):
        after, before = _rx(now, end), _rx(was, end)
        if after is not None and before is not None:
            rates[end] = max(after - before, 0) / seconds
    return Background(rates, low)


def _load_spine(
    lab: Lab, tg: TrafficGenerator, a: TgPort, base: TrafficConfig,
    spine: str, paths: dict[str, tuple[Uplink, ...]], out: Deliveries,
    background: Background | None = None,
) -> None:
    """Load every path over ``spine``, both directions at once; record each hop (without
    ``background``: none, and no hop refused for it)."""
    bg = background or Background()
    groups: dict[tuple[Uplink, ...], list[str]] = {}
    for name, path in paths.items():
        if path[0].peer == spine:
            groups.setdefault(path, []).append(name)
    tg.set_config(_phase_config(base, list(groups.values())))
    devices = sorted({d for path in groups for h in path for d in (h.switch, h.peer)})
    t_before, before = labtime.monotonic(), {d: lab.device(d).counters() for d in devices}
    tg.start_traffic()
    if not tg.wait_done(timeout_s=float(SETTINGS["timeout_s"])):
        raise TransportTimeout(a.tg, f"the load over {spine} did not finish")
    labtime.sleep(float(SETTINGS["settle_s"]))  # frames still queued reach the counters
    after = {d: lab.device(d).counters() for d in devices}
    seconds = labtime.monotonic() - t_before
    metrics = {m.name: m for m in tg.metrics()}
    evidence: dict[str, Any] = {}
    for path, names in groups.items():
        entered = sum(metrics[n].frames_tx for n in names)
        delivered = sum(metrics[n].frames_rx or 0 for n in names)
        pps = entered / float(SETTINGS["duration_s"])
        evidence[" > ".join(h.endpoint for h in path)] = {
            "flows": names, "tg_frames_tx": entered, "tg_frames_rx": delivered}
        if len(path) != 2:
            for h in path[1:]:
                out.holes.setdefault(h.link, (
                    f"{spine} reaches {h.peer} over {len(path) - 1} parallel links: which of "
                    "them a flow takes is not mapped"))
            path = path[:1]
        if entered == 0:  # the TG sent nothing here: say so, never fail the links for it
            raise InfraError(a.tg, f"the traffic generator sent no frame of flows {names} "
                                   f"(paths over {spine})")
        for k, h in enumerate(path):
            if entered == 0:  # the hop before it carried nothing: no ratio to take here
                out.holes.setdefault(h.link, f"nothing entered it on the paths over {spine}: "
                                     f"the hop before it ({path[k - 1].endpoint}) carried "
                                     "none of their frames")
                break
            end = (h.peer, h.peer_port)
            if k:
                prev = path[k - 1]
                why = bg.too_few(entered, ((prev.peer, prev.peer_port), end), seconds)
                if why:
                    out.holes.setdefault(h.link, f"on the paths over {spine}, {why}")
                    break
            now, was = _rx(after, end), _rx(before, end)
            if now is None or was is None:
                why = (f"{h.peer}:{h.peer_port} reports no rx_packets counter "
                       f"({lab.testbed.devices[h.peer].driver})")
                out.holes.setdefault(h.link, why)
                for later in path[k + 1:]:  # what entered them is not known
                    out.holes.setdefault(later.link, f"the hop before it is not measured: {why}")
                break
            own = bg.frames(end, seconds)
            carried = max(now - was - own, 0)  # the path's frames, beyond the background
            out.hops.setdefault(h.link, []).append(
                Hop(h.link, h.switch, h.port, f"{h.peer}:{h.peer_port}", spine, entered, carried,
                    pps, own))
            entered = carried
    attach_json(f"paths over {spine}", evidence)


@pytest.fixture(scope="module")
def deliveries(lab: Lab, fabric_view: FabricView, limits: LimitsProfile | None) -> Deliveries:
    found = probe_pair(lab)
    if found is None:
        return Deliveries(unloaded="no traffic generator has ports on two different switches: "
                                   "no path can be loaded")
    a, b = found
    tg = lab.device(a.tg, TrafficGenerator)
    cfg = SETTINGS["probe"]
    how = PathMapping.from_settings(cfg, SETTINGS,
                                    rate_pps=float(cfg["mapping_rate_pps_per_flow"]),
                                    timeout_s=float(SETTINGS["timeout_s"]))
    out = Deliveries(leaves=(a.switch, b.switch), flows=how.flows)
    try:
        mapped = read_sessions(lab)
        with allure.step("PATHS-1.1/1: map the probe flows onto the ECMP paths"):
            paths = map_probe_paths(lab, fabric_view, tg, a, b, how, attach_json)
            attach_json("flow paths", {f: [h.endpoint for h in p] for f, p in paths.items()})
        base = probe_config(lab, a, b, flows_per_direction=how.flows,
                            frame_size_bytes=how.frame_size_bytes, rate_pps=1.0, dscp=how.dscp)
        ordered = [probe_flow_name(s, d, i) for s, d in ((a, b), (b, a)) for i in range(how.flows)]
        spines = list(dict.fromkeys(paths[n][0].peer for n in ordered))
        low = limits.get(KEY).low if limits is not None and KEY in limits.limits else None
        crossed = sorted({d for p in paths.values() for h in p for d in (h.switch, h.peer)})
        with allure.step("PATHS-1.1/2: the fabric's own frames per port, idle"):
            background = _background(lab, crossed, low)
            attach_json("idle receive rate per port (frames/s)", {
                f"{d}:{p}": round(r, 1) for (d, p), r in background.rx_pps.items()})
        unread: dict[str, str] = {}
        for spine in spines:
            with allure.step(f"PATHS-1.1/2: load every path over {spine}, both directions"):
                _load_spine(lab, tg, a, base, spine, paths, out, background)
                now = read_sessions(lab)
                out.moved[spine] = moved_links(mapped, now, lab, uptime_slack_s=SLACK_S)
                unread |= unasked(mapped, now)
        if any(out.moved.values()):
            attach_json("routing sessions that dropped while the paths were loaded", out.moved)
        if unread:
            attach_json(UNREAD, unread)
    finally:
        tg.stop_traffic()
    return out


# --- PATHS-1.2: the links no TG path crosses, loaded by host streams pinned to them --------


@dataclass(frozen=True)
class HostHop:
    """One direction of a fabric link one pinned host stream loaded: what its sender sent
    and dropped at its egress (entered), what its receiver got (carried), and the frames its
    line rate carries over the stream's seconds (a healthy link offered beyond it drops the
    rest, a straggler far sooner)."""

    link: str
    device: str  # the sending end
    port: str
    peer: str  # the receiving end, device:port
    entered_frames: int  # tx_packets + tx_discards increase at the sending end
    carried_frames: int  # rx_packets increase at the receiving end
    line_frames: float
    stream: str  # sender>receiver:source port

    @property
    def offered(self) -> float:
        """What entered it over what its line rate carries in that time (1.0: line rate)."""
        return self.entered_frames / self.line_frames if self.line_frames > 0 else 0.0

    @property
    def ratio(self) -> float:
        """Carried over what it could carry: what entered it, up to its line rate."""
        cap = min(self.entered_frames, self.line_frames)
        return self.carried_frames / cap if cap > 0 else 0.0


@dataclass
class HostDeliveries:
    """Per link, the directions the hosts loaded; per direction not loaded, why."""

    hops: dict[str, list[HostHop]] = field(default_factory=dict)
    holes: dict[tuple[str, str], str] = field(default_factory=dict)  # (link, sender end) ->


#: a UDP datagram's headers and trailer on the wire: UDP 8, IPv4 20, Ethernet 14, FCS 4
UDP_FRAME_OVERHEAD_BYTES = 8 + 20 + 14 + 4


def _wire_frame_bits(payload_bytes: int) -> float:
    """A UDP datagram's layer-1 bits (what a line rate's frame count divides by)."""
    return (payload_bytes + UDP_FRAME_OVERHEAD_BYTES + ETHERNET_L1_OVERHEAD_BYTES) * 8.0


@dataclass(frozen=True)
class _Need:
    """A direction to load: the ring pair whose pinned stream crosses it, by which uplink."""

    link: Link
    snd: Any  # LinkEnd
    rcv: Any
    pair: tuple[str, str]  # sender host, receiver host
    uplink: Uplink  # the sender leaf's uplink the stream must take


def _needs(lab: Lab, fabric_view: FabricView, deliveries: Deliveries
           ) -> tuple[list[_Need], dict[tuple[str, str], str]]:
    """The link directions the TG did not load, each with the ring pair and uplink that load
    it (a leaf's uplink: its own host's stream; a spine's downlink to a leaf: the stream
    into that leaf's host from the previous leaf of the ring, over that spine); and why the
    others cannot be loaded."""
    from labtest.fixtures.cabling_plan import hosts_by_switch

    streaming = set(lab.names(capability="UdpStreams"))
    by_leaf = hosts_by_switch({h: a for h, a in fabric_view.attachment.items()
                               if h in streaming})
    leaves = [lf for lf in fabric_view.switches if by_leaf.get(lf)]
    ring = {lf: (by_leaf[lf][0], by_leaf[leaves[(i + 1) % len(leaves)]][0])
            for i, lf in enumerate(leaves)} if len(leaves) >= 2 else {}
    into = {leaves[(i + 1) % len(leaves)]: lf for i, lf in enumerate(leaves)} if ring else {}
    needs, holes = [], {}
    for link in fabric_links(lab.testbed):
        done = {(h.device, h.port) for h in deliveries.hops.get(link.name, [])}
        for snd, rcv in ((link.ends[0], link.ends[1]), (link.ends[1], link.ends[0])):
            if (snd.device, snd.port) in done:
                continue
            key = (link.name, f"{snd.device}:{snd.port}")
            ups = fabric_view.uplinks.get(snd.device, [])
            up = next((u for u in ups if u.port == snd.port and u.peer == rcv.device), None)
            if snd.device in ring and up is not None:
                needs.append(_Need(link, snd, rcv, ring[snd.device], up))
                continue
            src_leaf = into.get(rcv.device)
            up = next((u for u in fabric_view.uplinks.get(src_leaf or "", [])
                       if u.peer == snd.device), None)
            if src_leaf is not None and up is not None:
                needs.append(_Need(link, snd, rcv, ring[src_leaf], up))
            elif not ring:
                holes[key] = (f"{len(leaves)} leaf/leaves have a host offering UdpStreams "
                              "(iperf3): no host pair on two leaves can load it")
            else:
                holes[key] = (f"no ring pair of hosts crosses it from {snd.device} to "
                              f"{rcv.device} (neither a leaf with such a host nor a spine one "
                              "of their leaves reaches)")
    return needs, holes


@pytest.fixture(scope="module")
def host_deliveries(lab: Lab, fabric_view: FabricView, deliveries: Deliveries) -> HostDeliveries:
    """PATHS-1.2: each direction no TG path crossed gets a host's single UDP stream at
    ``line_pct`` of its line rate, pinned to it (``fixtures.pinned_streams``: a source port
    found by a short burst to leave the sender's leaf by the wanted uplink). One round per
    spine; in a round each leaf of the ring sends one stream and receives one, so no two
    streams share a link direction and none needs another to overlap it."""
    from labtest.capabilities.probes import UdpStreamResult
    from labtest.fixtures.pinned_streams import Burst, pin, stream_pinned
    from labtest.sweep import sweep

    cfg = SETTINGS["host_load"]
    needs, holes = _needs(lab, fabric_view, deliveries)
    out = HostDeliveries(holes=holes)
    if not needs:
        return out
    want: dict[tuple[str, str], set[str]] = {}
    leaf_of: dict[tuple[str, str], str] = {}
    for n in needs:
        want.setdefault(n.pair, set()).add(n.uplink.port)
        leaf_of[n.pair] = n.uplink.switch
    pairs = {a: (a, b) for a, b in want}  # one pair per sender host
    payload, timeout = int(cfg["payload_bytes"]), float(SETTINGS["timeout_s"])
    burst = Burst(int(cfg["map_frames"]), float(cfg["map_rate_pps"]), payload, timeout)
    port = int(cfg["port"])
    with allure.step(f"PATHS-1.2/1: pin a source port to each uplink "
                     f"({', '.join(f'{a}->{b}' for a, b in want)})"):
        uplink_ports = {p: [u.port for u in fabric_view.uplinks[leaf_of[p]]] for p in want}
        found = sweep(lab, list(pairs), lambda drv: pin(
            lab, drv.name, pairs[drv.name][1], leaf_of[pairs[drv.name]],
            uplink_ports[pairs[drv.name]], want[pairs[drv.name]], burst,
            attempts=int(cfg["map_attempts"]), server_port=port), timeout_s=timeout * 10)
        attach_json("pinned source ports", {
            f"{p.sender}->{p.receiver}": {"tries": p.tries, "by_uplink": p.ports_of,
                                          "missing": p.why_not}
            for p in found.ok.values()})
    frame = _wire_frame_bits(payload)
    switches = fabric_view.switches
    for spine in dict.fromkeys(n.uplink.peer for n in needs):
        here = [n for n in needs if n.uplink.peer == spine]
        plan: dict[str, tuple[str, tuple[int, int], float]] = {}  # sender -> receiver,
        # (source port, server port), datagrams/s
        for n in here:
            key = (n.link.name, f"{n.snd.device}:{n.snd.port}")
            sender = n.pair[0]
            if sender in found.failed:
                holes[key] = f"pinning {sender}'s streams failed: {found.failed[sender]}"
                continue
            ports = found.ok[sender].ports_of.get(n.uplink.port)
            if ports is None:
                holes[key] = found.ok[sender].why_not
                continue
            # the stream crosses the sender's uplink, then (a downlink) the judged link
            speeds = [x for x in (n.uplink.speed_gbps, n.link.speed_gbps) if x]
            if not speeds:
                holes[key] = f"{n.link.name} has no speed_gbps: its line rate is not known"
                continue
            pps = min(speeds) * 1e9 * float(cfg["line_pct"]) / 100 / frame
            plan[sender] = (n.pair[1], ports, pps)
        if not plan:
            continue
        with allure.step(f"PATHS-1.2/2: over {spine}: {len(plan)} pinned stream(s) at "
                         f"{cfg['line_pct']} % of line for {cfg['duration_s']} s"):
            before = _counts(lab, switches)
            def stream(drv: Any, plan: dict[str, tuple[str, tuple[int, int], float]] = plan
                       ) -> list[UdpStreamResult]:
                receiver, (sport, dport), pps = plan[drv.name]
                return stream_pinned(lab, drv.name, receiver, sport, rate_pps=pps,
                                     payload_bytes=payload, duration_s=float(cfg["duration_s"]),
                                     server_port=dport, timeout_s=timeout)

            ran = sweep(lab, list(plan), stream, timeout_s=timeout * 4)
            labtime.sleep(float(cfg["settle_s"]))
            after = _counts(lab, switches)
        for n in here:
            sender = n.pair[0]
            key = (n.link.name, f"{n.snd.device}:{n.snd.port}")
            if key in holes or sender not in plan:
                continue
            if sender not in ran.ok:
                why = ran.failed.get(sender)
                holes[key] = (f"{sender}'s pinned stream died under way: {why}" if
                              isinstance(why, DataplaneFailed) else
                              f"{sender}'s pinned stream could not run: {why}")
                continue
            seconds = max((r.seconds for r in ran.ok[sender]), default=0.0)
            hop = _host_hop(n, before, after, seconds, frame, plan[sender][1][0], sender)
            if isinstance(hop, str):
                holes[key] = hop
            elif hop.offered < float(cfg["min_line_pct"]) / 100:
                holes[key] = (f"{n.snd.device}:{n.snd.port} was offered {100 * hop.offered:.0f} "
                              f"% of its line rate, below the {cfg['min_line_pct']} % a "
                              "straggler could not keep up with (a slower link before it, or a "
                              "host that cannot send that fast)")
            else:
                out.hops.setdefault(n.link.name, []).append(hop)
    attach_json("host-loaded link directions", {
        f"{h.device}:{h.port} ({h.link})": {"entered": h.entered_frames,
                                            "carried": h.carried_frames,
                                            "offered_line_pct": round(100 * h.offered, 1),
                                            "stream": h.stream}
        for hops in out.hops.values() for h in hops} | {
        f"{k[1]} ({k[0]})": why for k, why in holes.items()})
    return out


def _host_hop(n: _Need, before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]],
              seconds: float, frame_bits: float, sport: int, sender: str) -> HostHop | str:
    """The direction's counts around the round, or why they cannot be read."""
    rows = [after[n.snd.device].get(n.snd.port), before[n.snd.device].get(n.snd.port),
            after[n.rcv.device].get(n.rcv.port), before[n.rcv.device].get(n.rcv.port)]
    s_now, s_was, r_now, r_was = rows
    if (s_now is None or s_was is None or r_now is None or r_was is None
            or any(r.tx_packets is None or r.rx_packets is None or r.tx_discards is None
                   for r in (s_now, s_was, r_now, r_was))):
        return (f"{n.snd.device}:{n.snd.port} or {n.rcv.device}:{n.rcv.port} reports no "
                "tx_packets, tx_discards or rx_packets counter")
    entered = s_now.tx_packets - s_was.tx_packets + s_now.tx_discards - s_was.tx_discards
    line = (n.link.speed_gbps or 0.0) * 1e9 * seconds / frame_bits
    return HostHop(n.link.name, n.snd.device, n.snd.port, f"{n.rcv.device}:{n.rcv.port}",
                   int(entered), int(r_now.rx_packets - r_was.rx_packets), line,
                   f"{sender}>{n.pair[1]}:{sport}")


@pytest.mark.plan("PATHS-1.1")
@pytest.mark.judges("paths.delivered_ratio")
def test_path_delivery(fabric_link: Link, deliveries: Deliveries, measure: Any,
                       request: pytest.FixtureRequest) -> None:
    """PATHS-1.1: each direction of the link loaded on the TG's paths carries what entered
    it; PATHS-1.2: a direction no TG path crosses, loaded by a host stream pinned to it,
    carries what entered it up to its line rate."""
    link = fabric_link.name
    hops = deliveries.hops.get(link, [])
    with allure.step("PATHS-1.1/3: carried over entered, per direction of the link"):
        for hop in hops:
            measure("delivered_ratio", hop.ratio, key=KEY, link=link, device=hop.device,
                    port=hop.port, peer=hop.peer, entered_frames=hop.entered_frames,
                    carried_frames=hop.carried_frames, background_frames=hop.background_frames,
                    path_pps=f"{hop.offered_pps:.0f}",
                    **_moved(deliveries.moved.get(hop.spine, []), link))
    if len(hops) >= 2:
        return
    loaded: HostDeliveries = request.getfixturevalue("host_deliveries")
    with allure.step("PATHS-1.2/3: carried over entered (up to line rate), per direction"):
        for h in loaded.hops.get(link, []):
            measure("delivered_ratio", h.ratio, key=KEY, link=link, device=h.device,
                    port=h.port, peer=h.peer, entered_frames=h.entered_frames,
                    carried_frames=h.carried_frames, load="host stream", stream=h.stream,
                    offered_line_pct=f"{100 * h.offered:.1f}")
    holes = [f"{end}: {why}" for (lk, end), why in loaded.holes.items() if lk == link]
    if holes:
        reason = f"{link}: {deliveries.hole(fabric_link)}; " + "; ".join(holes)
        measure.not_proven(KEY, reason, link=link)
        if not hops and not loaded.hops.get(link):
            pytest.skip(reason)


# --- PATHS-2: hosts load every fabric link with many streams -----------------------------------

LOSS_KEY, SPREAD_KEY = "paths.member_loss_ratio", "paths.ecmp_spread_max_mean"


class Death(NamedTuple):
    """A pair's streams that died under way: iperf3's telling line, and the round (from 1)."""

    evidence: str
    round: int


@dataclass
class MemberLoads:
    """Per direction of each fabric link: frames its sender sent and its receiver got while
    the hosts' streams ran; per leaf, its uplinks' frames; and why nothing was loaded."""

    sent: dict[tuple[str, str], int] = field(default_factory=dict)  # (link, sender end) ->
    got: dict[tuple[str, str], int] = field(default_factory=dict)  # ... receiver's rx
    #: ... frames the sender's background traffic (BFD, BGP, LLDP) may have put between the
    #: two ends' reads: twice what it sent during one idle read of every switch (the ends
    #: are read one after the other, before and after, each skew at most one read)
    allowance: dict[tuple[str, str], int] = field(default_factory=dict)
    #: ... frames the background alone would have sent over the load window (its rate over
    #: an idle window, twice over): a direction counts as loaded only by frames beyond them,
    #: so a direction whose streams died is never judged, and passed, on BFD and BGP alone
    background: dict[tuple[str, str], int] = field(default_factory=dict)
    peer: dict[tuple[str, str], str] = field(default_factory=dict)
    uplinks: dict[str, dict[str, int]] = field(default_factory=dict)  # leaf -> port -> tx
    pairs: list[tuple[str, str]] = field(default_factory=list)
    source_of: dict[str, tuple[str, str]] = field(default_factory=dict)  # leaf -> its pair
    #: pairs whose streams died under way (iperf3's error), and in which round: the links
    #: on their routes may have carried too few frames to judge, and that is the fabric's
    #: doing. Their later rounds are not started (a new flow falls in the same hole, and
    #: each death costs iperf3's 30 s wait for a stream's first answer), so a dead pair's
    #: leaf had fewer rounds than its spread's bound (``rounds``, planned)
    died: dict[tuple[str, str], Death] = field(default_factory=dict)
    rounds: int = 0
    #: the links each pair's routes may cross
    crossing: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    unloaded: str = ""
    min_frames: float = 0.0
    #: the links whose routing sessions dropped while the streams ran: flows rehashed, so
    #: a pair's streams and a leaf's spread are the routes' doing too (a link's own loss,
    #: its two ends' counters, is not: it stays unlabelled)
    moved: list[str] = field(default_factory=list)
    #: link -> what traces of the dead pairs' flows showed there (a hole located); and why
    #: the dead pairs could not be traced
    located: dict[str, str] = field(default_factory=dict)
    untraced: str = ""
    #: UDP streams a pair ran at once, one source port each: a dead pair's streams crossed
    #: every ECMP member on its way (the inference reads it as the ``flows`` label)
    flows: int = 1


def _counts(lab: Lab, switches: list[str]) -> dict[str, dict[str, Any]]:
    return {s: lab.device(s).counters() for s in switches}


def spread_rounds(limits: LimitsProfile | None, members: int, streams: int) -> int:
    """Rounds of ``streams`` a leaf's uplinks need so that a fair hash stays ``spread_sigma``
    standard deviations inside the spread limit by chance alone. Each member's share of N
    flows is binomial (p = 1/m), so the heaviest over the mean, 1 + t, is z sigma away when
    N = z^2 (m - 1) / t^2: 400 flows for two members at 5 sigma and t = 0.25, where one
    round of 128 is 2.8 sigma (a healthy leaf over the limit once in 200)."""
    cfg = SETTINGS["member_load"]
    if limits is None or members < 2 or SPREAD_KEY not in limits.limits:
        return 1
    high = limits.get(SPREAD_KEY).high
    if high is None or high <= 1.0:
        return 1
    z, t = float(cfg["spread_sigma"]), high - 1.0
    need = z * z * (members - 1) / (t * t)
    return max(1, min(int(cfg["max_rounds"]), math.ceil(need / streams)))


@pytest.fixture(scope="module")
def member_loads(lab: Lab, fabric_view: FabricView,
                 limits: LimitsProfile | None) -> MemberLoads:
    from labtest import labtime
    from labtest.capabilities.probes import UdpStreams
    from labtest.fixtures.cabling_plan import hosts_by_switch

    cfg = SETTINGS["member_load"]
    streaming = set(lab.names(capability="UdpStreams"))
    by_leaf = hosts_by_switch({h: a for h, a in fabric_view.attachment.items()
                               if h in streaming})
    leaves = [lf for lf in fabric_view.switches if by_leaf.get(lf)]
    out = MemberLoads()
    if len(leaves) < 2:
        out.unloaded = (f"{len(leaves)} leaf/leaves have a host offering UdpStreams (iperf3): "
                        "no host pair on two leaves can load the fabric links")
        return out
    out.pairs = [(by_leaf[lf][0], by_leaf[leaves[(i + 1) % len(leaves)]][0])
                 for i, lf in enumerate(leaves)]
    out.source_of = dict(zip(leaves, out.pairs, strict=True))
    streams, rate = int(cfg["streams"]), float(cfg["rate_pps_per_stream"])
    duration = float(cfg["duration_s"])
    out.min_frames = rate * duration * 0.5  # half a stream: the direction carried one
    out.flows = streams
    switches = fabric_view.switches
    members = max(len(fabric_view.uplinks.get(lf, [])) for lf in leaves)
    rounds = spread_rounds(limits, members, streams)
    lost: dict[str, int] = {}
    with allure.step(f"PATHS-2.1/1: {', '.join(f'{a}->{b}' for a, b in out.pairs)}: "
                     f"{rounds} x {streams} UDP streams each, {rate:g} datagrams/s, "
                     f"{duration:g} s a round"):
        t_idle, idle = labtime.monotonic(), _counts(lab, switches)
        labtime.sleep(float(cfg["idle_s"]))  # the background's rate, and its share of a skew
        t_before, before = labtime.monotonic(), _counts(lab, switches)
        started = read_sessions(lab)
        out.rounds = rounds
        for n in range(rounds):  # each round's streams take new source ports
            runs = []
            for k, (a, b) in enumerate(out.pairs):
                if (a, b) in out.died:
                    continue
                client, server = lab.device(a), lab.device(b)
                assert isinstance(client, UdpStreams)
                # a server port of its own per round: the last round's one-shot server may
                # still hold its port while it closes (the kernel lab's iperf3 did)
                runs.append((client, client.udp_streams_start(
                    server, streams=streams, rate_pps=rate,
                    payload_bytes=int(cfg["payload_bytes"]), duration_s=duration,
                    port=int(cfg["port"]) + n * len(out.pairs) + k)))
            for drv, run in runs:
                try:
                    done = drv.udp_streams_result(run, timeout_s=float(SETTINGS["timeout_s"]))
                except DataplaneFailed as exc:  # the counters still tell what crossed
                    out.died[(run.client, run.server)] = Death(exc.evidence, n + 1)
                    continue
                lost[run.client] = lost.get(run.client, 0) + sum(r.lost_packets for r in done)
        labtime.sleep(float(cfg["settle_s"]))
        t_after, after = labtime.monotonic(), _counts(lab, switches)
        ended = read_sessions(lab)
        out.moved = moved_links(started, ended, lab, uptime_slack_s=SLACK_S)
        attach_json("streams lost per source host", lost)
        if out.moved:
            attach_json("routing sessions that dropped while the streams ran", out.moved)
        unread = unasked(started, ended)
        if unread:
            attach_json(UNREAD, unread)
        if out.died:
            attach_json("streams that died under way", {
                f"{a}->{b}": {"error": d.evidence, "round": d.round, "rounds": rounds}
                for (a, b), d in out.died.items()})
    if out.died:
        _trace_dead_pairs(lab, out)
    routes = Fabric(expand_units(results.testbed_record(lab.testbed)))
    out.crossing = {(a, b): frozenset(c for r in routes.routes(a, b) for c in r)
                    for a, b in out.pairs}
    window = (t_after - t_before) / max(t_before - t_idle, 1e-9)  # load over idle seconds
    for link in fabric_links(lab.testbed):
        for snd, rcv in ((link.ends[0], link.ends[1]), (link.ends[1], link.ends[0])):
            s_now, s_was = after[snd.device].get(snd.port), before[snd.device].get(snd.port)
            r_now, r_was = after[rcv.device].get(rcv.port), before[rcv.device].get(rcv.port)
            if s_now is None or s_was is None or r_now is None or r_was is None:
                continue
            key = (link.name, f"{snd.device}:{snd.port}")
            out.sent[key] = int(s_now.tx_packets or 0) - int(s_was.tx_packets or 0)
            out.got[key] = int(r_now.rx_packets or 0) - int(r_was.rx_packets or 0)
            out.peer[key] = f"{rcv.device}:{rcv.port}"
            s_idle = idle[snd.device].get(snd.port) or s_was
            quiet = max(int(s_was.tx_packets or 0) - int(s_idle.tx_packets or 0), 0)
            out.allowance[key] = 2 * quiet
            out.background[key] = math.ceil(out.allowance[key] * window)
    for leaf in leaves:
        ups = fabric_view.uplinks.get(leaf, [])
        out.uplinks[leaf] = {u.port: out.sent.get((u.link, u.endpoint), 0) for u in ups}
    attach_json("frames per link direction", {f"{k[1]} ({k[0]})": [out.sent[k], out.got[k]]
                                              for k in out.sent})
    return out


def _trace_dead_pairs(lab: Lab, out: MemberLoads) -> None:
    """PATHS-2.1/3: a pair whose streams died never loaded the member that killed them (a
    flow in a hole never starts): traces of many 5-tuples both ways locate it."""
    from labtest.fixtures.flow_holes import locate_holes

    cfg = SETTINGS["member_load"]["hole_traces"]
    with allure.step(f"PATHS-2.1/3: trace flows ({cfg['sports']} a round, at most "
                     f"{cfg['max_sports']}) each way between the pairs whose streams died"):
        found = locate_holes(lab, out.died, sports=int(cfg["sports"]),
                             max_sports=int(cfg["max_sports"]), probes=int(cfg["probes"]),
                             wait_s=float(cfg["wait_s"]))
        out.located, out.untraced = found.links, found.why_not
        attach_json("traces of the dead pairs' flows", {
            "located": found.links, "why_not": found.why_not,
            "source_ports_each_way": found.sports, "lost": found.lost})


@pytest.mark.plan("PATHS-2.1")
@pytest.mark.judges(LOSS_KEY)
def test_member_loss(fabric_link: Link, member_loads: MemberLoads, measure: Any) -> None:
    """PATHS-2.1: each direction of the link loses none of the frames its sender sent while
    the hosts' streams crossed it (sender tx against receiver rx): a lossy link, a one-way
    silent drop or an ECMP member that blackholes some flows is named at its sending port."""
    link = fabric_link.name
    judged = unloaded = 0
    with allure.step("PATHS-2.1/2: frames lost per direction, sender tx against receiver rx"):
        for (name, sender), sent in member_loads.sent.items():
            if name != link:
                continue
            background = member_loads.background.get((name, sender), 0)
            if sent - background < member_loads.min_frames:
                unloaded += 1  # the streams never crossed it, or died: BFD and BGP prove
                continue  # nothing of a hole in the flows' hash space
            device, _, port = sender.partition(":")
            got = member_loads.got[(name, sender)]
            allowance = member_loads.allowance.get((name, sender), 0)
            measure("member_loss_ratio", max(sent - got - allowance, 0) / sent, key=LOSS_KEY,
                    link=link, device=device, port=port, peer=member_loads.peer[(name, sender)],
                    sent_frames=sent, received_frames=got,
                    background_allowance_frames=allowance,
                    background_frames=background)  # fmt: skip
            judged += 1
    died = [(a, b, d.evidence) for (a, b), d in member_loads.died.items()
            if link in member_loads.crossing.get((a, b), ())]
    if link in member_loads.located:  # the dead pairs' traced flows vanished here
        pairs = " ".join(f"{a}--{b}" for a, b, _ in died)
        measure("member_loss_ratio", float("nan"), key=LOSS_KEY, link=link,
                error=f"streams of {pairs or 'a pair'} died; {member_loads.located[link]}")
    if died and (unloaded or not judged):  # the fabric broke what should have loaded a
        # direction of it: a failure; the unit is the test's link, the pair's path the place
        # why no trace located the hole (none ran, or none stood alone), said with it
        untraced = f"; not located: {member_loads.untraced}" if member_loads.untraced else ""
        for a, b, why in died:
            measure("member_loss_ratio", float("nan"), key=LOSS_KEY, pair=f"{a}--{b}",
                    flows=member_loads.flows,
                    error=f"{a}->{b} streams died under way: {why}{untraced}",
                    **_moved(member_loads.moved, link))
        return
    if not judged:
        pairs = ", ".join(f"{a}->{b}" for a, b in member_loads.pairs)
        reason = member_loads.unloaded or (
            f"{link}: none of the host streams ({pairs}) was hashed onto it in either direction")
        measure.not_proven(LOSS_KEY, reason, link=link)
        pytest.skip(reason)


@pytest.mark.plan("PATHS-2.2")
@pytest.mark.judges(SPREAD_KEY)
def test_ecmp_spread(member_loads: MemberLoads, measure: Any) -> None:
    """PATHS-2.2: each leaf spreads one host pair's many streams (one source port each) over
    its uplinks: the heaviest member's frames over the mean; a switch that hashes on the IP
    addresses only (polarised) puts them all on one member, named at that leaf and port."""
    if member_loads.unloaded:
        measure.not_proven(SPREAD_KEY, member_loads.unloaded)
        pytest.skip(member_loads.unloaded)
    judged, dead = 0, []
    for leaf, ports in member_loads.uplinks.items():
        if len(ports) < 2:
            continue
        # whose streams its uplinks carried: a member short of them may be one whose onward
        # route to the destination was withdrawn (a dead link beyond the spine)
        src, dst = member_loads.source_of.get(leaf, ("", ""))
        death = member_loads.died.get((src, dst))
        if death is not None:  # its uplinks carried the rounds before, or BFD and BGP alone
            dead.append(f"{leaf}: {src}->{dst} streams died in round {death.round} of "
                        f"{member_loads.rounds}: its uplinks' shares are not a fair-hash "
                        "sample (the member loss names the hole)")
            measure.not_proven(SPREAD_KEY, dead[-1])
            continue
        if sum(ports.values()) <= 0:
            continue
        mean = sum(ports.values()) / len(ports)
        worst = max(ports, key=lambda p: ports[p])
        flows = {"source": src, "towards": dst} if src else {}
        measure("ecmp_spread_max_mean", ports[worst] / mean, key=SPREAD_KEY, device=leaf,
                port=worst, shares=" ".join(f"{p}={n}" for p, n in ports.items()), **flows,
                **_moved(member_loads.moved, ""))
        judged += 1
    if dead and not judged:
        pytest.skip("; ".join(dead))
    if not judged:
        reason = "no leaf with a streaming host has two or more uplinks that carried frames"
        measure.not_proven(SPREAD_KEY, reason)
        pytest.skip(reason)
