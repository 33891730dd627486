"""Per-link evidence: one interval's readings judged against the limits profile.

Every number is judged with a limit of the profile the testbed names (the same
keys the acceptance suites use: ``link.*``, ``transceiver.*``, ``cabling.*``);
the doctor adds no thresholds of its own. Counters with no limit in the
profile (FCS errors, discards) are reported as *anomalies* when they grow,
never as a verdict. A symptom read at a port is charged to the port's cabled
link (the unit an operator replaces or cleans), with the port named as where
it was seen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labtest.capabilities.switch import drops_in
from labtest.doctor.evidence import PHY_LANE, PortReading, Snapshot
from labtest.measure.limits import Limit, LimitsProfile, Verdict
from labtest.testbed.model import SWITCH_ROLES, Link, Testbed

#: how much one kind of evidence moves a suspect's confidence (the doctor's scoring, not a limit)
#: a drift alone (CHANGE) or an unjudged counter alone (ANOMALY) never pages; with a
#: MARGINAL reading it does (1 - 0.7 * 0.6 = 0.58 >= localise.REPORT_CONFIDENCE)
WEIGHTS = {"FAIL": 0.9, "MARGINAL": 0.4, "CHANGE": 0.3, "ANOMALY": 0.3, "PROBE": 0.0}
#: a standing bottleneck's queue marks a steady share of what it sends (DCQCN holds it
#: between Kmin and Kmax, marking up to Pmax); a burst that met the queue once marks a
#: sliver: below this share of the packets sent, the port was not the bottleneck
BOTTLENECK_MARKED = 1e-3
#: a host's share of marked packets must be this many times what the queues read on their
#: way can have marked before the rest is placed on an unread one (the host's and the
#: switches' reads cover intervals seconds apart)
UNPLACED_MARGIN = 2.0


@dataclass(frozen=True)
class Evidence:
    unit: str  # a link name ("a:p--b:q"), else "device:port"
    where: str  # the port it was read at
    metric: str
    value: float
    verdict: str  # FAIL | MARGINAL | CHANGE | ANOMALY | PROBE
    text: str
    limit_key: str | None = None
    weight: float = field(default=0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "where": self.where, "metric": self.metric,
                "value": self.value, "verdict": self.verdict, "limit": self.limit_key,
                "weight": round(self.weight, 3), "text": self.text}


@dataclass(frozen=True)
class Plan:
    """The cabling plan, indexed by port."""

    testbed: Testbed
    link_of: dict[str, Link] = field(default_factory=dict)
    hosts: frozenset[str] = frozenset()
    #: each switch's egress ends one hop nearer it, by switch (``into``'s, made once)
    _toward: dict[str, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, testbed: Testbed) -> Plan:
        link_of = {str(e): lk for lk in testbed.links for e in lk.ends}
        hosts = frozenset(n for n, d in testbed.devices.items() if d.role == "host")
        return cls(testbed, link_of, hosts)

    def peer(self, port: str) -> str | None:
        lk = self.link_of.get(port)
        if lk is None:
            return None
        a, b = (str(e) for e in lk.ends)
        return b if port == a else a

    def unit(self, port: str) -> str:
        lk = self.link_of.get(port)
        return lk.name if lk is not None else port

    def into(self, port: str) -> tuple[tuple[str, str, int], ...]:
        """The egress ends whose queues carry what arrives at host port ``port``, each with
        the far end it sends into and its hops from the host's switch: that switch's end of
        the link (0), then every switch-to-switch end one hop nearer it (each shortest way:
        ECMP spreads flows over all of them). Empty for a port that is no host's or that no
        switch faces."""
        near = self.peer(port)
        if near is None or port.split(":", 1)[0] not in self.hosts \
                or near.split(":", 1)[0] in self.hosts:
            return ()
        leaf = near.split(":", 1)[0]
        if leaf not in self._toward:
            adj: dict[str, list[tuple[str, str, str]]] = {}
            switches = {n for n, d in self.testbed.devices.items() if d.role in SWITCH_ROLES}
            for lk in self.testbed.links:
                a, b = lk.ends
                if a.device not in switches or b.device not in switches:
                    continue
                adj.setdefault(a.device, []).append((str(a), str(b), b.device))
                adj.setdefault(b.device, []).append((str(b), str(a), a.device))
            dist, todo = {leaf: 0}, [leaf]
            for dev in todo:  # breadth first: ``todo`` grows while it is walked
                for _, _, nxt in adj.get(dev, ()):
                    if nxt not in dist:
                        dist[nxt] = dist[dev] + 1
                        todo.append(nxt)
            self._toward[leaf] = tuple(
                (mine, far, dist[dev]) for dev, ends in sorted(adj.items()) if dev in dist
                for mine, far, nxt in ends if dist.get(nxt) == dist[dev] - 1)
        return ((near, port, 0), *self._toward[leaf])


def limit_for(profile: LimitsProfile, key: str, media: str | None) -> tuple[str, Limit] | None:
    """The media-specific limit (``key@MEDIA``) where the profile has one, else ``key``."""
    for k in ([f"{key}@{media}"] if media else []) + [key]:
        if k in profile.limits:
            return k, profile.limits[k]
    return None


def deltas(prev: PortReading | None, cur: PortReading) -> dict[str, int]:
    """Counter growth over the interval; a counter that went backwards was cleared and
    counts from zero (its whole current value is the growth)."""
    if prev is None:
        return {}
    out = {}
    for key, v in cur.counters.items():
        before = prev.counters.get(key)
        if before is not None:
            out[key] = v - before if v >= before else v
    return out


def rates(prev: PortReading | None, cur: PortReading) -> dict[str, float]:
    """Counters per second of the device's clock over the interval."""
    if prev is None or cur.time_s <= prev.time_s:
        return {}
    dt = cur.time_s - prev.time_s
    return {k: v / dt for k, v in deltas(prev, cur).items()}


#: the reading's per-lane field each DOM change metric compares
_FIELD = {"tx_bias_change_pct": "tx_bias_ma", "tx_power_change_db": "tx_power_dbm",
          "rx_power_change_db": "rx_power_dbm"}


def _worst_change(metric: str, now: Sequence[float],
                  then: Sequence[float]) -> tuple[float, int] | None:
    """The largest per-lane change (bias in % of the earlier value, power in dB) and its
    lane index; None when the lanes do not pair up."""
    if len(now) != len(then):
        return None
    pairs = enumerate(zip(now, then, strict=True))
    if metric == "tx_bias_change_pct":
        changes = {i: abs(a - b) / b * 100.0 for i, (a, b) in pairs if b}
    else:
        changes = {i: abs(a - b) for i, (a, b) in pairs}
    if not changes:
        return None
    lane = max(changes, key=changes.__getitem__)
    return changes[lane], lane


@dataclass
class Judge:
    plan: Plan
    profile: LimitsProfile
    connectors_per_link: int = 2  # as suites/transceiver/settings.yaml link_budget
    #: each port's readings of earlier intervals, oldest first (the DOM stability check)
    earlier: Mapping[str, Sequence[PortReading]] = field(default_factory=dict)
    #: each port's reference reading (a bounded run's first, the continuous doctor's about
    #: ``service.REFERENCE_S`` back): laser bias and power are judged against it too
    #: (empty: against the earlier readings alone)
    first: Mapping[str, PortReading] = field(default_factory=dict)

    def judge(self, snap: Snapshot, prev: Snapshot | None) -> list[Evidence]:
        out: list[Evidence] = []
        for name, r in snap.ports.items():
            if name not in self.plan.link_of:
                continue  # uncabled ports are nobody's link
            before = prev.ports.get(name) if prev is not None else None
            out += self._port(r, before, snap)
        return out + self._unplaced_marks(snap, prev)

    def _ev(self, r: PortReading, metric: str, value: float, key: str | None,
            verdict: str, text: str) -> Evidence:
        return Evidence(self.plan.unit(r.name), r.name, metric, float(value), verdict, text, key,
                        WEIGHTS[verdict])

    def _check(self, r: PortReading, metric: str, value: float | None, key: str,
               text: str) -> list[Evidence]:
        if value is None:
            return []
        found = limit_for(self.profile, key, r.media)
        if found is None:
            return []
        k, lim = found
        verdict = lim.judge(value)
        if verdict is Verdict.PASS:
            return []
        return [self._ev(r, metric, value, k, verdict.value,
                         f"{text} at {r.name}: {value:.4g} (limit {lim.describe()})")]

    def _port(self, r: PortReading, before: PortReading | None, snap: Snapshot) -> list[Evidence]:
        out: list[Evidence] = []
        grew = deltas(before, r)
        ber, how = self._pre_fec_ber(r, grew)
        out += self._check(r, "pre_fec_ber", ber, "link.fec_pre_fec_ber", how)
        lane, how = self._worst_lane_ber(r, grew, ber)
        out += self._check(r, "lane_pre_fec_ber", lane, "link.prbs_target_ber", how)
        if "fec_uncorrectable_cw" in grew:
            out += self._check(r, "fec_uncorrectable_cw", grew["fec_uncorrectable_cw"],
                               "link.fec_uncorrectable_cw", "uncorrectable FEC codewords")
        # the device's own transition counter sees a flap between two state samples
        counted = drops_in(grew.get("link_status_changes", 0))
        downs = max(r.down_events, counted) or int(r.oper_down_samples > 0)
        if r.oper_samples or counted:
            seen = f"{r.oper_samples} state samples" + (
                f", {grew['link_status_changes']} link status changes"
                if "link_status_changes" in grew else "")
            out += self._check(r, "flaps", downs, "link.flaps", f"link down events ({seen})")
        if r.oper_up is False and not r.oper_samples:
            out += self._check(r, "flaps", 1, "link.flaps", "link oper down")
        if r.rx_power_dbm:
            out += self._check(r, "rx_power_dbm", min(r.rx_power_dbm), "transceiver.rx_power_dbm",
                               "lowest lane Rx power")
        if r.tx_power_dbm:
            out += self._check(r, "tx_power_dbm", min(r.tx_power_dbm), "transceiver.tx_power_dbm",
                               "lowest lane Tx power")
        out += self._check(r, "temperature_c", r.temperature_c, "transceiver.temperature_c",
                           "module temperature")
        out += self._dom_stability(r)
        out += self._cabling(r)
        # what the data needs to cross (a RoCE MTU's IP MTU): a port lowered below it drops
        # every larger frame, while the small probes pass
        out += self._check(r, "mtu_bytes", r.mtu_bytes, "roce.port_mtu_bytes", "IP MTU")
        out += self._loss(r, snap)
        out += self._bottleneck_rate(r, before, grew)
        for metric, peers, what in (("bgp_session_down", r.bgp_down, "BGP sessions not "
                                     "Established"), ("bfd_session_down", r.bfd_down,
                                                      "BFD sessions not up")):
            if peers and r.oper_up is not False:  # a dark link's sessions are down anyway
                out += self._check(r, metric, len(peers), f"routing.{metric}",
                                   f"{what} with the link up (peers {', '.join(peers)})")
        for key in ("rx_fcs_errors", "rx_errors", "rx_discards"):
            if grew.get(key, 0) > 0:
                out.append(self._ev(r, key, grew[key], None, "ANOMALY",
                                    f"{key} grew by {grew[key]} at {r.name} (no limit in the "
                                    "profile: an anomaly, not a verdict)"))
                break  # one counter family, one vote
        return out

    def dom_interval_s(self, r: PortReading) -> float | None:
        """``transceiver.dom_interval_s``: how far apart two DOM reads must be for the
        stability check (None: the profile asks for no such check)."""
        found = limit_for(self.profile, "transceiver.dom_interval_s", r.media)
        return found[1].low if found is not None else None

    def _dom_stability(self, r: PortReading) -> list[Evidence]:
        """Acceptance's DOM stability (TRANSCEIVER-3.1) on the doctor's own readings: the
        change of temperature, each lane's laser bias (%) and Tx/Rx power between this
        reading and the latest one at least ``transceiver.dom_interval_s`` older, against
        the same limits. A module heating up or a laser losing efficiency (its bias climbing
        while the control loop holds Tx power) shows here minutes before a level crosses its
        limit. A dark end is the flap check's (its power fell because the link did).

        The laser's bias and power are also judged since the port's reference reading (a
        bounded run's first, the continuous doctor's ten minutes back):
        a laser losing 10 dB/h climbs ~4 % of bias a minute, under the 10 % between reads a
        minute apart, and ``--once`` at a real lab's pace decided it healthy (at the
        emulator's time scale 10 its reads were further apart, which alone paged it). Not
        temperature: a training job's start heats a module 3-4 C over minutes, and its bias
        by ~2 % (0.5 %/C), so 10 % of bias since the start is the laser's own doing."""
        interval = self.dom_interval_s(r)
        if interval is None or r.partial:  # a partial reading has no clock to compare on
            return []
        old = [e for e in self.earlier.get(r.name, ()) if r.time_s - e.time_s >= interval]
        if not old:
            return []
        e = old[-1]
        gap = f"over {r.time_s - e.time_s:.0f} s"
        start = self.first.get(r.name)
        if start is not None and (start.time_s >= e.time_s or start.oper_up is False):
            start = None  # no further back than the earlier reading, or dark then
        out: list[Evidence] = []
        if r.temperature_c is not None and e.temperature_c is not None:
            out += self._check(r, "temperature_change_c", abs(r.temperature_c - e.temperature_c),
                               "transceiver.temperature_change_c",
                               f"module temperature change {gap}")
        if r.oper_up is False or e.oper_up is False:
            return out
        pairs = [("tx_bias_change_pct", "transceiver.bias_change_pct", r.tx_bias_ma,
                  e.tx_bias_ma, "laser bias change (%)"),
                 ("tx_power_change_db", "transceiver.power_change_db", r.tx_power_dbm,
                  e.tx_power_dbm, "Tx power change"),
                 ("rx_power_change_db", "transceiver.power_change_db", r.rx_power_dbm,
                  e.rx_power_dbm, "Rx power change")]
        for metric, key, now, then, what in pairs:
            if not now or not then or len(now) != len(then):
                continue
            worst = _worst_change(metric, now, then)
            if start is not None:
                at_start = getattr(start, _FIELD[metric])
                since = _worst_change(metric, now, at_start) if at_start else None
                if since is not None and (worst is None or since[0] > worst[0]):
                    out += self._check(r, metric, since[0], key,
                                       f"{what} since the reference reading, over "
                                       f"{r.time_s - start.time_s:.0f} s, worst lane "
                                       f"{since[1] + 1}")
                    continue
            if worst is not None:
                out += self._check(r, metric, worst[0], key,
                                   f"{what} {gap}, worst lane {worst[1] + 1}")
        return out

    @staticmethod
    def _pre_fec_ber(r: PortReading, grew: dict[str, int]) -> tuple[float | None, str]:
        """A switch's FEC readout; else a NIC's corrected bits over bits received in the
        interval (None on the first reading: a since-boot ratio would hide a new fault)."""
        if r.pre_fec_ber is not None or grew.get("phy_rx_bits", 0) <= 0 \
                or "phy_corrected_bits" not in grew:
            return r.pre_fec_ber, "pre-FEC BER received"
        bits = grew["phy_rx_bits"]
        lanes = sorted((int(m.group(1)), v) for k, v in grew.items()
                       if (m := PHY_LANE.fullmatch(k)))
        worst = ""
        if lanes and sum(v for _, v in lanes) > 0:
            lane, errors = max(lanes, key=lambda kv: kv[1])
            worst = f", worst lane {lane}: {errors / (bits / len(lanes)):.3g}"
        return (grew["phy_corrected_bits"] / bits,
                f"pre-FEC BER received (NIC PHY corrected bits over the interval{worst})")

    @staticmethod
    def _worst_lane_ber(r: PortReading, grew: dict[str, int], port_ber: float | None
                        ) -> tuple[float | None, str]:
        """The worst lane's pre-FEC BER, which the acceptance link suite judges (LINK-1,
        ``link.prbs_target_ber``, per lane: PRBS, or bounded from live FEC counters by
        suites/link/link_fec_ber.py). A NIC that counts corrected bits per lane gives it;
        else the port's BER, the mean over its lanes, is a lower bound of it: above the
        target, some lane is too. Judging the mean against the port limit alone left one
        bad lane in four under it (issue 34: a 0.3 dB lane at 9.5e-5, the port 2.38e-5)."""
        lanes = sorted((int(m.group(1)), v) for k, v in grew.items()
                       if (m := PHY_LANE.fullmatch(k)))
        bits = grew.get("phy_rx_bits", 0)
        if lanes and bits > 0 and r.pre_fec_ber is None:
            lane, errors = max(lanes, key=lambda kv: kv[1])
            return (errors / (bits / len(lanes)),
                    f"worst lane's pre-FEC BER (NIC PHY corrected bits of lane {lane}, from 0, "
                    "over its share of the bits received in the interval)")
        if port_ber is None:
            return None, ""
        return port_ber, ("worst lane's pre-FEC BER, at least the port's (the mean over its "
                          "lanes)")

    def _bottleneck_rate(self, r: PortReading, before: PortReading | None,
                         grew: dict[str, int]) -> list[Evidence]:
        """A port whose egress queue marked ECN in the interval was the bottleneck of what
        it sent (DCQCN marks a queue that builds up: the offered load exceeded what the
        link drained); a healthy bottleneck drains at its speed. One that drained less
        runs below its rate (a straggler link: a degraded lane, a shaper, a bad retimer),
        judged against the acceptance bandwidth criterion ``roce.bw_fraction_of_line``
        (a pair certifies at 90 % of its link speed). Idle or uncongested, a slow link is
        invisible here: it slows nothing yet. A port whose marks are a sliver of what it sent
        (below ``BOTTLENECK_MARKED``: a burst met a queue for a moment) was not one."""
        marks = grew.get("queue_ecn_marked", 0)
        sent = grew.get("queue_tx_bytes", grew.get("tx_bytes"))  # per queue (SONiC), per port
        if marks <= 0 or sent is None or before is None or not r.speed_gbps \
                or r.time_s <= before.time_s or r.oper_up is False:
            return []
        packets = grew.get("tx_packets")
        if packets and marks < BOTTLENECK_MARKED * packets:
            return []
        gbps = sent * 8.0 / (r.time_s - before.time_s) / 1e9
        return self._check(r, "bottleneck_rate", gbps / r.speed_gbps, "roce.bw_fraction_of_line",
                           f"egress {gbps:.0f} Gb/s of its {r.speed_gbps:g} Gb/s while its queue "
                           f"marked {marks} packets ECN (the bottleneck drains below its speed): "
                           "fraction of line rate")

    def _unplaced_marks(self, snap: Snapshot, prev: Snapshot | None) -> list[Evidence]:
        """ECN marks a host received beyond what the queues read on their way can have
        made were made by a queue not read (a late switch's): where exactly one unread
        egress is on their way, it was a bottleneck, and what its far end received is what
        it drained, judged as :meth:`_bottleneck_rate` judges a queue read. Issue 34's onset
        evaluation missed two straggler host links whose only witness, the leaf's queue,
        sat on the late switch. What the read queues can have made is bounded by the
        worst share each hop's queues marked (a packet crosses one queue a hop); the host's
        share must exceed ``UNPLACED_MARGIN`` times that bound (their reads are seconds
        apart) and it by ``BOTTLENECK_MARKED`` (a standing queue, not a burst)."""
        out: list[Evidence] = []
        if prev is None:
            return out
        for name, r in snap.ports.items():
            ways = self.plan.into(name)
            if r.partial or not ways:
                continue
            grew = deltas(prev.ports.get(name), r)
            got = grew.get("rx_rdma_packets", 0)
            if got <= 0:
                continue
            share = grew.get("np_ecn_marked", 0) / got
            worst: dict[int, float] = {}
            unread = []
            for egress, far, hop in ways:
                e = snap.ports.get(egress)
                if e is None or e.partial:
                    unread.append((egress, far))
                    continue
                made = deltas(prev.ports.get(egress), e)
                if "queue_ecn_marked" not in made or not made.get("tx_packets"):
                    break  # a read queue whose marks are unknown: nothing can be placed
                worst[hop] = max(worst.get(hop, 0.0),
                                 made["queue_ecn_marked"] / made["tx_packets"])
            else:
                bound = 1.0 - math.prod(1.0 - w for w in worst.values())
                if len(unread) == 1 and share >= UNPLACED_MARGIN * bound \
                        and share - bound >= BOTTLENECK_MARKED:
                    out += self._drained(unread[0], prev, snap, name, share, bound)
        return out

    def _drained(self, way: tuple[str, str], prev: Snapshot, snap: Snapshot, host: str,
                 share: float, bound: float) -> list[Evidence]:
        """The unread egress ``way`` (port, far end) judged by what its far end received."""
        egress, far = way
        f, fb = snap.ports.get(far), prev.ports.get(far)
        if f is None or fb is None or f.partial or f.time_s <= fb.time_s \
                or not f.speed_gbps or f.oper_up is False:
            return []
        got = deltas(fb, f).get("rx_bytes")
        if got is None:
            return []
        gbps = got * 8.0 / (f.time_s - fb.time_s) / 1e9
        return self._check(f, "bottleneck_rate", gbps / f.speed_gbps, "roce.bw_fraction_of_line",
                           f"ingress {gbps:.0f} Gb/s of its {f.speed_gbps:g} Gb/s from the "
                           f"unread {egress}, whose queue marked ECN: {host} received "
                           f"{share:.2%} of its RoCE packets marked, the queues read on their "
                           f"way at most {bound:.2%} (the bottleneck drains below its "
                           "speed): fraction of line rate")

    def _cabling(self, r: PortReading) -> list[Evidence]:
        out: list[Evidence] = []
        lk = self.plan.link_of[r.name]
        peer = self.plan.peer(r.name)
        if r.neighbour is not None and peer is not None and r.neighbour != peer:
            out += self._check(r, "neighbour_mismatch", 1, "cabling.neighbour_mismatch",
                               f"LLDP neighbour {r.neighbour}, plan says {peer}")
        if r.speed_gbps is not None and lk.speed_gbps is not None and r.oper_up is not False \
                and r.speed_gbps != lk.speed_gbps:
            out += self._check(r, "speed_mismatch", 1, "cabling.speed_mismatch",
                               f"running at {r.speed_gbps:g} Gb/s, plan says {lk.speed_gbps:g}")
        return out

    def _loss(self, r: PortReading, snap: Snapshot) -> list[Evidence]:
        """Far end's Tx minus this end's Rx, lane by lane, against the channel budget
        (TRANSCEIVER-1.5's budget: fibre + connectors, capped at the channel maximum,
        plus the two monitors' allowance)."""
        peer = self.plan.peer(r.name)
        far = snap.ports.get(peer) if peer else None
        if far is None or not r.rx_power_dbm or len(far.tx_power_dbm) != len(r.rx_power_dbm):
            return []
        lk = self.plan.link_of[r.name]
        p = self.profile.limits
        chan = limit_for(self.profile, "transceiver.channel_insertion_loss_db", r.media)
        need = ("transceiver.fibre_attenuation_db_per_km", "transceiver.connector_loss_db",
                "transceiver.link_loss_monitor_allowance_db")
        if chan is None or any(k not in p for k in need) or lk.length_m is None:
            return []
        budget = min((lk.length_m / 1000.0) * (p[need[0]].high or 0.0)
                     + self.connectors_per_link * (p[need[1]].high or 0.0),
                     chan[1].high or 0.0) + (p[need[2]].high or 0.0)
        worst = max(t - rx for t, rx in zip(far.tx_power_dbm, r.rx_power_dbm, strict=True))
        if worst <= budget:
            return []
        return [self._ev(r, "link_loss_db", worst, chan[0], "FAIL",
                         f"channel loss {peer} Tx -> {r.name} Rx {worst:.2f} dB, budget "
                         f"{budget:.2f} dB ({lk.length_m:g} m, {self.connectors_per_link} "
                         "connector pairs, monitor allowance)")]
