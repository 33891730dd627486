"""What the doctor reads each interval: one typed record per port, from the drivers.

Every switch is asked, through :func:`labtest.sweep.sweep`, for whatever its
driver offers (link state, counters, FEC counters, DOM, LLDP, PFC counters);
every host for its NIC's link speed, module DOM and NIC counters. A capability a
device lacks is recorded in ``Snapshot.not_observed`` with the reason, so a
report can say "FEC of leaf3: not observed" instead of treating it as healthy.

Link state is *watched*, not read once: within a sweep turn a switch's
``interfaces()`` is sampled every ``poll_s`` for ``watch_s``, because a link
that is down for one second in ten is up at almost any single read. A switch
that counts its oper-status changes (``link_status_changes``, read through
``labtest.capabilities.switch.link_flap_counts``: the counters on EOS and FRR,
the LinkFlapCounts capability on SONiC) is sampled only at the start and end of
the watch: its counter sees a flap however short, and a production switch is
spared a CLI command every ``poll_s``.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from labtest.capabilities.switch import link_flap_counts
from labtest.doctor.reads import LATE_FACTOR, Arrived, Hold, Reads
from labtest.errors import CapabilityAbsent, CommandFailed, ServiceDown, TransportError
from labtest.lab import Lab
from labtest.registry import provides, resolve_capability
from labtest.sweep import SweepResult, sweep
from labtest.testbed.model import Testbed

#: cumulative counters the doctor turns into rates (names in the doctor's own vocabulary)
COUNTERS = (
    "rx_packets",
    "tx_packets",
    "rx_errors",
    "tx_errors",
    "rx_discards",
    "tx_discards",
    "rx_fcs_errors",
    "rx_pause_frames",
    "tx_pause_frames",
    "pfc_rx_frames",
    "pfc_tx_frames",
    "fec_corrected_cw",
    "fec_uncorrectable_cw",
    "phy_rx_bits",  # a host NIC's PHY: bits received, bits RS-FEC corrected (and per lane,
    "phy_corrected_bits",  # phy_lane<n>_corrected_bits): their growth is its pre-FEC BER
    "queue_tx_bytes",  # a switch port's egress queues: bytes sent, packets ECN-marked (the
    "queue_ecn_marked",  # queue was the bottleneck): its rate where it is the bottleneck
    "tx_bytes",  # the port's own count of bytes sent (EOS, FRR; SONiC counts them per queue)
    "rx_bytes",  # bytes received: what the far end's egress drained into this port
    "np_ecn_marked",  # a host NIC's RoCE packets received ECN-marked (somewhere on their way)
    "rx_rdma_packets",  # ... of its RoCE packets received
)


#: a NIC lane's corrected-bits counter among the doctor's counters: "phy_lane<n>_corrected_bits"
PHY_LANE = re.compile(r"phy_lane(\d+)_corrected_bits")


def phy_counters(e: Any) -> dict[str, int]:
    """A NicPhyErrors record as the doctor's counters."""
    out = {"phy_rx_bits": int(e.rx_bits), "phy_corrected_bits": int(e.rx_corrected_bits)}
    out |= {f"phy_lane{n}_corrected_bits": int(v) for n, v in enumerate(e.lane_corrected_bits)}
    return out


@dataclass(frozen=True)
class PortReading:
    """One port (or host NIC) at one instant; ``None``/empty: not reported."""

    device: str
    port: str
    time_s: float  # the device's clock where it has one, else the doctor host's monotonic
    oper_up: bool | None = None
    speed_gbps: float | None = None
    counters: dict[str, int] = field(default_factory=dict)  # cumulative, COUNTERS keys
    pre_fec_ber: float | None = None
    rx_power_dbm: tuple[float, ...] = ()
    tx_power_dbm: tuple[float, ...] = ()
    tx_bias_ma: tuple[float, ...] = ()
    temperature_c: float | None = None
    media: str | None = None
    neighbour: str | None = None  # LLDP "system:port"
    oper_samples: int = 0  # link-state samples taken during the watch
    oper_down_samples: int = 0
    down_events: int = 0  # up -> down transitions seen during the watch
    bgp_down: tuple[str, ...] = ()  # peers over this port whose BGP session is not Established
    bfd_down: tuple[str, ...] = ()  # peers over this port whose BFD session is not up
    mtu_bytes: int | None = None  # the port's IP MTU, as its switch reports it
    #: the levels of a read still running (``partial``): judged, never diffed nor kept
    partial: bool = False
    #: a late switch's lean read (``read_switch``): its CARRIED fields are an earlier read's
    lean: bool = False

    @property
    def name(self) -> str:
        return f"{self.device}:{self.port}"


@dataclass
class Snapshot:
    """Everything one interval read, and what it could not read (with why)."""

    ports: dict[str, PortReading] = field(default_factory=dict)  # "device:port" -> reading
    not_observed: dict[str, str] = field(default_factory=dict)  # "device capability" -> why
    failed: dict[str, str] = field(default_factory=dict)  # device -> error
    #: devices whose management plane did not answer (a transport error, not a bad answer)
    unreachable: set[str] = field(default_factory=set)
    #: a neighbour's interface address (from BGP sessions) -> "device:port" it is on, so a
    #: traceroute hop that answers from its ingress interface names the link it came over
    addresses: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0  # how long the collection took
    #: devices still answering when the round ended (device seconds their read has run)
    late: dict[str, float] = field(default_factory=dict)
    #: devices that said a daemon is dead (``ServiceDown``: "bfdd is not running") -> why
    services_down: dict[str, str] = field(default_factory=dict)
    #: the levels a late device's read has published so far ("device:port" -> reading)
    partial: dict[str, PortReading] = field(default_factory=dict)


def fail_dead(snap: Snapshot, dead: Mapping[str, Exception]) -> None:
    """Late devices a probe got no answer from (``Reads.probe``): failed and unreachable in
    ``snap``, no longer late."""
    for name, err in dead.items():
        snap.late.pop(name, None)
        snap.not_observed.pop(f"{name} readings", None)
        snap.failed[name] = f"{type(err).__name__}: {err}"
        snap.unreachable.add(name)


#: device seconds a late device's kind is waited for beyond the watch, at the least (a
#: read's few commands; the median rule decides above it)
LATE_FLOOR_S = 5.0
#: wall seconds between looks whether a held watch may end (``watch_oper``'s ``hold``)
HOLD_POLL_S = 0.05


def _offers(driver: Any, capability: str) -> bool:
    return provides(type(driver), resolve_capability(capability))


def _clock(driver: Any) -> float:
    if _offers(driver, "Clock"):
        return float(driver.device_time_s())
    return time.monotonic()


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def _switch_counters(c: object) -> dict[str, int]:
    out = {}
    for key in ("rx_packets", "tx_packets", "rx_errors", "tx_errors", "rx_discards",
                "tx_discards", "rx_fcs_errors", "rx_pause_frames", "tx_pause_frames"):
        v = _int(getattr(c, key, None))
        if v is not None:
            out[key] = v
    for ours, theirs in (("tx_bytes", "tx_octets"), ("rx_bytes", "rx_octets")):
        if (octets := _int(getattr(c, theirs, None))) is not None:
            out[ours] = octets
    return out


def _pfc_totals(p: object) -> dict[str, int]:
    out = {}
    for side in ("rx", "tx"):
        total = getattr(p, f"{side}_total", None)
        if total is None:
            per = [v for v in getattr(p, side, []) or [] if v is not None]
            total = sum(per) if per else None
        if total is not None:
            out[f"pfc_{side}_frames"] = int(total)
    return out


def _queue_totals(qc: Any) -> dict[str, int]:
    """A port's egress queues summed: bytes sent and packets ECN-marked (unicast queues;
    SONiC also prints multicast ones, EOS 'all' ones: the same bytes once)."""
    queues = [q for q in qc.queues if q.kind == "unicast"] or list(qc.queues)
    out = {}
    for key, attr in (("queue_tx_bytes", "tx_bytes"), ("queue_ecn_marked", "ecn_marked_packets")):
        values = [getattr(q, attr) for q in queues if getattr(q, attr) is not None]
        if values:
            out[key] = int(sum(values))
    return out


def watch_oper(driver: Any, watch_s: float, poll_s: float,
               hold: Callable[[], bool] | None = None) -> dict[str, tuple[int, int, int]]:
    """Sample ``interfaces()`` for ``watch_s``: port -> (samples, down samples, down events).
    While ``hold()`` is true past ``watch_s`` (the interval's bursts still run) the watch
    goes on, ending with one more sample: the counters read next then hold the bursts."""
    seen: dict[str, tuple[int, int, int]] = {}
    last: dict[str, bool] = {}
    deadline = time.monotonic() + watch_s
    while True:
        for port, st in driver.interfaces().items():
            if st.oper_up is None or st.admin_up is False:
                continue
            n, down, events = seen.get(port, (0, 0, 0))
            up = bool(st.oper_up)
            events += int(last.get(port, True) and not up)
            seen[port] = (n + 1, down + int(not up), events)
            last[port] = up
        if time.monotonic() >= deadline:
            if hold is None or not hold():
                return seen
            while hold():
                time.sleep(HOLD_POLL_S)
            deadline = time.monotonic()  # the closing sample, then the counters
            continue
        time.sleep(poll_s)


def read_switch(driver: Any, name: str, watch_s: float, poll_s: float,
                addresses: dict[str, str] | None = None,
                dead: dict[str, str] | None = None,
                publish: Callable[[dict[str, PortReading]], None] | None = None,
                hold: Callable[[], bool] | None = None, lean: bool = False) -> tuple[
        dict[str, PortReading], dict[str, str]]:
    """One switch's ports and the capabilities it did not offer; ``addresses`` is filled
    with its BGP peers' addresses (peer address -> this switch's port facing it), ``dead``
    with the daemon it said is dead (device -> why).

    The physical layer (FEC, DOM) is read right after the link-state watch, not before
    it: the round's report comes a few seconds after it, not a watch later (issue 34's
    onset evaluation: a dirty connector that began 1 s after spine1's levels were read
    waited a whole round, paged 48 s after its onset). It is handed to ``publish`` as it
    stands (:func:`partial`): a switch whose every answer comes seconds late is judged on
    those levels while the rest of its read runs (a dirty connector only the late switch
    saw waited 60-120 s for its whole read). A ``lean`` read (of a switch
    that was late) reads only what moves: the physical layer, the counters and its clock;
    its link states, LLDP and routing sessions are the last whole read's
    (:func:`carry`). Half the commands: the late switch's rates come twice as often."""
    missing: dict[str, str] = {}
    dead = {} if dead is None else dead
    addresses = {} if addresses is None else addresses
    ports: dict[str, dict[str, Any]] = {}

    def port(p: str) -> dict[str, Any]:
        return ports.setdefault(p, {"counters": {}})

    def physical() -> None:
        levels: set[str] = set()
        if _offers(driver, "FecCounters"):
            for p, f in driver.fec_stats().items():
                levels.add(p)
                d = port(p)
                for key, v in (("fec_corrected_cw", f.corrected_cw),
                               ("fec_uncorrectable_cw", f.uncorrectable_cw)):
                    if v is not None:
                        d["counters"][key] = int(v)
                d["pre_fec_ber"] = f.pre_fec_ber
        else:
            missing[f"{name} FEC"] = "driver offers no FecCounters"
        if _offers(driver, "Transceivers"):
            for p, t in driver.transceivers().items():
                if t.present:
                    levels.add(p)
                    port(p).update(_dom(t))
        else:
            missing[f"{name} DOM"] = "driver offers no Transceivers"
        if publish is not None and levels:
            publish(partial(name, {p: ports[p] for p in levels}))

    interfaces = _offers(driver, "Interfaces")
    watched = interfaces and not lean
    if not watched:  # nothing to wait for first
        physical()
    if interfaces:
        while lean and hold is not None and hold():  # the counters hold the bursts' bytes
            time.sleep(HOLD_POLL_S)
        if watched:
            for p, (n, down, events) in watch_oper(driver, watch_s, poll_s, hold).items():
                port(p).update(oper_samples=n, oper_down_samples=down, down_events=events)
            physical()
        for p, st in driver.interfaces().items() if not lean else ():
            port(p).update(oper_up=st.oper_up, speed_gbps=st.speed_gbps, mtu_bytes=st.mtu_bytes)
        counted = driver.counters()
        for p, c in counted.items():
            port(p)["counters"].update(_switch_counters(c))
        # EOS and FRR carry the count in the counters just read; SONiC answers it apart
        flaps = {p: n for p, n in (link_flap_counts(driver, counted) or {}).items()
                 if p in counted}
        for p, n in flaps.items():
            port(p)["counters"]["link_status_changes"] = n
        if not flaps:
            missing[f"{name} link-down counter"] = (
                "driver reports no link status changes: a flap shorter than the gap between "
                "link-state samples is not seen")
    else:
        missing[f"{name} link state and counters"] = "driver offers no Interfaces"
    if not lean:
        _sessions(driver, name, port, missing, dead, addresses)
    else:
        missing[f"{name} link state, LLDP and sessions"] = (
            "lean read of a late switch: its last whole read's stand (every "
            "doctor.service.LEAN_READS + 1-th read is whole)")
    if _offers(driver, "PfcQueues"):
        for p, pfc in driver.pfc_counters().items():
            port(p)["counters"].update(_pfc_totals(pfc))
        for p, qc in driver.queue_counters().items():
            port(p)["counters"].update(_queue_totals(qc))
    else:
        missing[f"{name} PFC"] = "driver offers no PfcQueues"
    now = _clock(driver)
    return {f"{name}:{p}": PortReading(device=name, port=p, time_s=now, lean=lean, **d)
            for p, d in ports.items()}, missing


def _sessions(driver: Any, name: str, port: Callable[[str], dict[str, Any]],
              missing: dict[str, str], dead: dict[str, str], addresses: dict[str, str]) -> None:
    """A switch's LLDP neighbours and BGP and BFD sessions, into its ports' readings."""
    if _offers(driver, "Lldp"):
        for p, n in driver.lldp_neighbors().items():
            if n.remote_system and n.remote_port:
                port(p)["neighbour"] = f"{n.remote_system}:{n.remote_port}"
    else:
        missing[f"{name} LLDP"] = "driver offers no Lldp"
    for cap, read, key, ok in (("BgpSessions", "bgp_sessions", "bgp_down", "established"),
                               ("BfdSessions", "bfd_sessions", "bfd_down", "up")):
        if not _offers(driver, cap):
            missing[f"{name} {cap}"] = (f"driver offers no {cap}: session state not judged"
                                        + (", probe hops not pinned to its links"
                                           if cap == "BgpSessions" else ""))
            continue
        unplaced = []
        try:
            sessions = getattr(driver, read)()
        except ServiceDown as exc:  # asked, it says the daemon is dead: its own fault
            dead[name] = f"{exc.service} is not running ({cap} unread)"
            missing[f"{name} {cap}"] = f"{exc.service} is not running"
            continue
        for peer, s in sessions.items():
            if s.local_port is None:  # no connected subnet names the port it runs over
                unplaced.append(peer)
                continue
            if not getattr(s, ok):
                port(s.local_port).setdefault(key, ())
                port(s.local_port)[key] += (peer,)
            if cap == "BgpSessions":
                addresses[peer] = f"{name}:{s.local_port}"  # the near end: peer() gives the far
        if unplaced:
            missing[f"{name} {cap}"] = f"no local port known for peer(s) {', '.join(unplaced)}"


#: what a lean read does not read: the last whole reading's values stand for them
CARRIED = ("oper_up", "speed_gbps", "mtu_bytes", "neighbour", "bgp_down", "bfd_down")


def carry(lean: PortReading, whole: PortReading | None) -> PortReading:
    """A lean reading with what it did not read taken from the port's last whole one."""
    if whole is None:
        return lean
    return replace(lean, **{f: getattr(whole, f) for f in CARRIED})


def partial(name: str, ports: Mapping[str, Mapping[str, object]]) -> dict[str, PortReading]:
    """A read's levels so far (pre-FEC BER, DOM), without its counters: those are diffed
    with the next read's, which needs them stamped with the device's clock, read last."""
    return {f"{name}:{p}": PortReading(
        device=name, port=p, time_s=math.nan, partial=True,
        pre_fec_ber=cast("float | None", d.get("pre_fec_ber")),
        rx_power_dbm=cast("tuple[float, ...]", d.get("rx_power_dbm", ())),
        tx_power_dbm=cast("tuple[float, ...]", d.get("tx_power_dbm", ())),
        tx_bias_ma=cast("tuple[float, ...]", d.get("tx_bias_ma", ())),
        temperature_c=cast("float | None", d.get("temperature_c")),
        media=cast("str | None", d.get("media")))
        for p, d in ports.items()}


def _dom(t: Any) -> dict[str, Any]:
    lanes = list(t.lanes)
    return {
        "rx_power_dbm": tuple(ln.rx_power_dbm for ln in lanes if ln.rx_power_dbm is not None),
        "tx_power_dbm": tuple(ln.tx_power_dbm for ln in lanes if ln.tx_power_dbm is not None),
        "tx_bias_ma": tuple(ln.tx_bias_ma for ln in lanes if ln.tx_bias_ma is not None),
        "temperature_c": t.temperature_c,
        "media": t.media_type,
    }


def read_host(driver: Any, name: str, testbed: Testbed,
              rdma: dict[str, tuple[str, int] | None] | None = None) -> tuple[
        dict[str, PortReading], dict[str, str]]:
    """A host's cabled NIC ports: link speed, module DOM, NIC counters where offered, and
    its carrier changes: a host link that flaps between two reads is seen from the host's
    end too, when the switch at the other end is late or unread. The RoCE packets it
    received ECN-marked place a bottleneck on their way when the switch that marked them
    is late (``judge.Judge._unplaced_marks``); ``rdma`` caches its netdevs' RDMA ports
    (``rdma link`` once, not every round; None: no RDMA port on that netdev)."""
    missing: dict[str, str] = {}
    rdma = {} if rdma is None else rdma
    out: dict[str, PortReading] = {}
    flaps = link_flap_counts(driver)
    if flaps is None:
        missing[f"{name} link-down counter"] = "driver reports no carrier changes"
    for link in testbed.links_of(name):
        end = next(e for e in link.ends if e.device == name)
        d: dict[str, Any] = {"counters": {}}
        if hasattr(driver, "link_speed_gbps"):
            d["speed_gbps"] = driver.link_speed_gbps(end.port)
        if _offers(driver, "RdmaDevices"):
            up = {li.ifname: li.lower_up for li in driver.links()}
            d["oper_up"] = up.get(end.port)
        if _offers(driver, "ModuleDom"):
            try:
                d.update(_dom(driver.module_dom(end.port)))
            except CapabilityAbsent as exc:  # a virtual NIC: no module to read
                missing[f"{name} DOM"] = str(exc)
        else:
            missing[f"{name} DOM"] = "driver offers no ModuleDom"
        if _offers(driver, "NicCounters"):
            stats = driver.ethtool_stats(end.port)
            for ours, theirs in (("rx_packets", "rx_packets"), ("tx_packets", "tx_packets"),
                                 ("rx_bytes", "rx_bytes_phy"),
                                 ("rx_rdma_packets", "rx_vport_rdma_unicast_packets"),
                                 ("rx_fcs_errors", "rx_crc_errors_phy"),
                                 ("rx_discards", "rx_out_of_buffer")):
                if theirs in stats:
                    d["counters"][ours] = int(stats[theirs])
            pfc = driver.pfc_counters(end.port)
            d["counters"]["pfc_rx_frames"] = int(pfc.rx_pause_frames or 0)
            d["counters"]["pfc_tx_frames"] = int(pfc.tx_pause_frames or 0)
            if _offers(driver, "RdmaDevices") and end.port not in rdma:  # asked once
                with contextlib.suppress(CapabilityAbsent):  # no RDMA: no marks to count
                    rdma.update({r.netdev: (r.name, r.port) for r in driver.rdma_devices()
                                 if r.netdev})
                rdma.setdefault(end.port, None)
            marked, why = None, f"no RDMA port on {end.port}"
            if (on := rdma.get(end.port)) is not None:
                try:
                    marked = driver.rdma_hw_counters(*on).np_ecn_marked_roce_packets
                except (CapabilityAbsent, CommandFailed) as exc:  # the rest of the read stands
                    why = f"{on[0]}/{on[1]} hw counters unread: {exc}"
                    rdma[end.port] = None  # not asked again every round
                else:
                    why = f"{on[0]} counts no np_ecn_marked_roce_packets"
            if marked is not None:
                d["counters"]["np_ecn_marked"] = int(marked)
            else:
                missing[f"{name} ECN marks received"] = (
                    f"{why}: marks made by a late switch are not placed")
        else:
            missing[f"{name} NIC counters"] = "driver offers no NicCounters"
        if _offers(driver, "NicFec"):
            try:
                d["counters"].update(phy_counters(driver.nic_phy_errors(end.port)))
            except CapabilityAbsent as exc:
                missing[f"{name} FEC"] = str(exc)
        else:
            missing[f"{name} FEC"] = "driver offers no NicFec (NIC PHY bit counters)"
        if flaps is not None and end.port in flaps:
            d["counters"]["link_status_changes"] = flaps[end.port]
        out[f"{name}:{end.port}"] = PortReading(device=name, port=end.port, time_s=_clock(driver),
                                                **d)
    return out, missing


def _watch_ended(end: float, hold: Hold | None) -> None:
    """Wait until the switches' watch ends (wall ``end``, as ``watch_oper``'s deadline)
    and the interval's bursts with it: a host read then is as fresh at the report as the
    switches' levels, and its counters hold the bursts' bytes as theirs do (read as the
    round began, a host's levels were a whole watch old at the report)."""
    time.sleep(max(0.0, end - time.monotonic()))
    while hold is not None and hold.is_alive():
        time.sleep(HOLD_POLL_S)


def collect(
    lab: Lab,
    *,
    watch_s: float = 0.0,
    poll_s: float = 0.5,
    timeout_s: float = 120.0,
    max_workers: int = 32,
    counting: frozenset[str] = frozenset(),
    reads: Reads | None = None,
    scale: float = 1.0,
    hold: Hold | None = None,
    rdma: dict[str, dict[str, tuple[str, int] | None]] | None = None,
    lean: Callable[[str], bool] | None = None,
) -> Snapshot:
    """One interval's readings of every switch and host of the lab. A switch in
    ``counting`` counts its oper-status changes (seen last interval): its link state is
    sampled only at the watch's start and end, as the counter sees every flap between.
    With ``reads`` a device far slower than its kind is left answering in the background
    (``labtest.doctor.reads``) and named in ``Snapshot.late``; ``scale`` is device seconds
    per wall second (an emulated lab's time scale; ``watch_s`` and ``poll_s`` are wall).
    ``hold``: a switch watches on past ``watch_s`` while it runs (``watch_oper``);
    ``rdma``: each host's netdev -> RDMA port cache, kept by the caller across rounds;
    ``lean(switch)``, asked as a switch's read starts: whether it is a lean one. With
    ``reads`` the hosts are asked as the switches' watch ends (``_watch_ended``)."""
    tb = lab.testbed
    switches = lab.names(capability="Interfaces")
    hosts = [n for n, d in tb.devices.items() if d.role == "host" and n not in switches]
    began = time.monotonic()

    def one(name: str, publish: Callable[[dict[str, PortReading]], None] | None = None
            ) -> Any:
        """A device's readings, its missing parts, the daemon it said is dead and its BGP
        peers' addresses: all in its result, which a late read hands to the round it
        arrives in (into the round it began in, they were lost)."""
        drv = lab.device(name)  # the driver sweep holds the lock of
        if name in hosts:
            return (*read_host(drv, name, tb, None if rdma is None
                               else rdma.setdefault(name, {})), {}, {})
        pace = max(poll_s, watch_s) if name in counting else poll_s
        peers: dict[str, str] = {}
        dead: dict[str, str] = {}
        ports, missing = read_switch(drv, name, watch_s, pace, peers, dead, publish,
                                     hold.is_alive if hold is not None else None,
                                     lean is not None and lean(name))
        return ports, missing, dead, peers

    # every driver is built as ``cls(name, device, testbed)`` and keeps its ``name``
    if reads is None:
        res: SweepResult[Any] | Arrived = sweep(
            lab, switches + hosts, lambda drv: one(drv.name), max_workers=max_workers,
            timeout_s=timeout_s + watch_s)
        late: dict[str, float] = {}
        early: dict[str, object] = {}
    else:
        res = reads.round(lab, [switches, hosts], lambda drv, publish: one(drv.name, publish),
                          floor_s=watch_s + LATE_FLOOR_S / scale, hold=hold,
                          first=lambda: _watch_ended(began + watch_s, hold), deferred=hosts)
        late, early = res.late, res.early
    snap = Snapshot(wall_s=time.monotonic() - began)
    for parts in early.values():  # what ``one`` handed ``publish``: ``partial``'s readings
        snap.partial.update(cast(dict[str, PortReading], parts))
    for name, ran_s in late.items():
        snap.late[name] = ran_s * scale
        snap.not_observed[f"{name} readings"] = (
            f"late: its read has run {ran_s * scale:.0f} s of device time, "
            f"over {LATE_FACTOR:g}x its kind's median; judged when it arrives"
            + (" (its FEC and DOM levels, read first, judged now)" if name in early else ""))
    for ports, missing, dead, peers in res.ok.values():
        snap.ports.update(ports)
        snap.not_observed.update(missing)
        snap.services_down.update(dead)
        snap.addresses.update(peers)
    for name, err in res.failed.items():
        snap.failed[name] = f"{type(err).__name__}: {err}"
        if isinstance(err, TransportError):
            snap.unreachable.add(name)
    return snap

