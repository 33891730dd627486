"""Active bandwidth probes: short RDMA write bursts, for a link that runs below its rate
while nothing loads it.

The counters see a slow link only once it is the bottleneck of real traffic (its queue
marks ECN while it drains below its speed: ``judge.Judge._bottleneck_rate``); on an idle
fabric a half-rate link slows nothing yet and no counter says so (issue 34:
``straggler_link@leaf2:Ethernet0`` gave no signal at all). Each interval a few host pairs
run one short ``ib_write_bw`` each, one after the other, while the switches watch their
links (one queue pair: one ECMP route; ``ITERATIONS`` x ``SIZE_B``, a few ms at 400 Gb/s).
A burst alone on its path runs at the
path's slowest hop, so it is judged only when every port its routes may cross carried
under ``IDLE_FRACTION`` of its speed over the interval (the counters); on a busy path it
measures a share, not a rate, and is not judged (there the counters' bottleneck check
speaks). A judged burst fails below the acceptance criterion ``roce.bw_fraction_of_line``
of the path's line rate; one that dies on the data plane fails at 0.

The judged bursts of the last ``WINDOW`` are observations for ``labtest run``'s inference
engine (what each crossed: its hosts' ECMP routes): the link the failing ones share and
the passing ones clear is named, with the engine's posterior as its weight, so a burst
through a healthy link beside the slow one clears it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from labtest.capabilities.host import Perftest, PerftestSpec
from labtest.doctor.evidence import PortReading
from labtest.doctor.judge import Evidence, Plan, limit_for, rates
from labtest.doctor.pager import probe_weight
from labtest.errors import DataplaneFailed, InfraError, TransportError
from labtest.measure.coverage import expand_units
from labtest.measure.inference import Observation, infer
from labtest.measure.limits import Limit, LimitsProfile, Verdict
from labtest.measure.paths import Fabric
from labtest.outcome import first_line
from labtest.reports.results import testbed_record
from labtest.testbed.model import Link

#: one burst: 1,000 writes of 64 KiB on one queue pair (65.5 MB: 1.3 ms at 400 Gb/s)
ITERATIONS, SIZE_B = 1000, 65536
BURST_B = ITERATIONS * SIZE_B
#: a port busier than this share of its speed over the interval shares it with the burst
IDLE_FRACTION = 0.05
#: judged bursts the inference reads (about eight intervals at four a interval)
WINDOW = 32
#: judged bursts that must have crossed a link before ``covered`` (``--once``'s healthy)
COVER = 1
#: not_observed key of the bursts (a host's: "<host> bandwidth bursts")
BUSY = "bandwidth bursts"
#: bytes a packet counts at most, where a port counts packets only (the RoCE MTU)
ROCE_MTU_B = 4096
#: the limit a burst's rate over its path's line rate is judged against
KEY = "roce.bw_fraction_of_line"


@dataclass(frozen=True)
class Burst:
    src: str
    dst: str
    gbps: float | None  # None: not judged (busy path, or the run failed off the data plane)
    line_gbps: float
    routes: tuple[frozenset[str], ...]
    failed: bool = False
    why: str = ""
    busy: bool = False  # not judged: the path carried other traffic (a share, not a rate)
    unrated: bool = False  # not run: a port of its path has no rate over an interval yet
    #: run before any rate was known (the first interval after a baseline): judged only if
    #: its own interval's counters show its path idle (``settle``)
    provisional: bool = False

    def text(self) -> str:
        if self.gbps is None:
            return f"burst {self.src}->{self.dst} not judged: {self.why}"
        return (f"burst {self.src}->{self.dst} {self.gbps:.0f} Gb/s of {self.line_gbps:g} "
                f"({self.gbps / self.line_gbps:.2f} of line){': ' + self.why if self.why else ''}")


@dataclass
class Bursts:
    """The doctor's burst prober: ``run`` once an interval, ``evidence`` what the window says."""

    plan: Plan
    profile: LimitsProfile
    per_interval: int = 4
    window: deque[tuple[int, Burst]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    not_observed: dict[str, str] = field(default_factory=dict)
    _queue: deque[tuple[str, str]] = field(default_factory=deque)
    _unsettled: list[Burst] = field(default_factory=list)
    _leaf: dict[str, str] = field(default_factory=dict)
    _count: int = 0
    _busy_streak: int = 0
    fabric_hosts: list[str] = field(default_factory=list)
    _cabled: set[str] = field(default_factory=set)
    _links: dict[str, Link] = field(default_factory=dict)
    _limit: Limit | None = None
    _reach: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fabric = Fabric(expand_units(testbed_record(self.plan.testbed)))
        self._links = {lk.name: lk for lk in self.plan.testbed.links}
        found = limit_for(self.profile, KEY, None)
        self._limit = found[1] if found is not None else None
        if self._limit is None:  # nothing to judge a burst against: said, not skipped
            self.not_observed[BUSY] = f"the limits profile has no {KEY}: bursts not judged"
        hosts = sorted(n for n, d in self.plan.testbed.devices.items() if d.role == "host")
        self.fabric_hosts = hosts
        # devices on some host's routes: links between them are the ones bursts can cross
        self._cabled = {c for a in hosts for b in hosts if a != b
                        for r in self.fabric.routes(a, b) for c in r}
        self._leaf = {h: lk_end.device for h in hosts for lk in self.plan.testbed.links_of(h)
                      for lk_end in lk.ends if lk_end.device != h}
        # every ordered pair, by shift: consecutive bursts start at different hosts; pairs
        # across the fabric first, a leaf's own pairs last (they cross no fabric link and
        # took a slot of the interval: on the default lab the first interval covered half
        # the fabric and a healthy --once waited a second round for the rest)
        pairs = [(hosts[i], hosts[(i + s) % len(hosts)])
                 for s in range(1, len(hosts)) for i in range(len(hosts))]
        own = {p for p in pairs if self._leaf.get(p[0]) == self._leaf.get(p[1])}
        self._queue = deque(sorted(pairs, key=lambda p: p in own))
        # what each pair's routes may cross, once (``_pick`` asks for every pair, each round)
        self._reach = {p: frozenset(c for r in self.fabric.routes(*p) for c in r) for p in pairs}

    def budget_fraction(self, interval_s: float, link_gbps: float = 400.0) -> float:
        """An upper bound of the burst bytes one link carries over its capacity (every
        burst of the interval across it): 4 bursts of 65.5 MB in 10 s at 400 Gb/s, 5.2e-4,
        under the probe mesh's 0.1 % budget; and only on idle paths."""
        return self.per_interval * BURST_B * 8 / (interval_s * link_gbps * 1e9)

    def run(self, lab: Any, port_rates: Mapping[str, Mapping[str, float]],
            speeds: Mapping[str, float]) -> list[Burst]:
        """This interval's bursts; ``port_rates``: each port's counters per device-second
        over the last interval, which says which paths are idle."""
        self._count += 1
        out: list[Burst] = []
        if not port_rates or self._limit is None:
            return out
        unrated: list[tuple[str, str]] = []
        for src, dst in self._pick():
            if self._left_out(src) or self._left_out(dst):
                continue
            burst = self._one(lab, src, dst, port_rates, speeds)
            out.append(burst)
            if burst.unrated:
                unrated.append((src, dst))
            self._uncounted(src, dst, port_rates)
            if burst.gbps is not None:
                self._unsettled.append(burst)
                self._busy_streak = 0
                self.not_observed.pop(BUSY, None)
            elif burst.busy:
                self._busy_streak += 1
        # not run, so not their turn yet: back to the front (the first interval after the
        # baseline has no rates, and its pairs went to the back of the rotation, so a healthy
        # --once waited a third round for the fabric's coverage)
        for pair in unrated:
            self._queue.remove(pair)
        self._queue.extendleft(reversed(unrated))
        if self._busy_streak >= 2 * self.per_interval:
            self.not_observed[BUSY] = ("every path busy for two intervals: a burst would "
                                       "measure a share, not a rate (the counters' bottleneck "
                                       "check judges loaded links)")
        return out

    def _uncounted(self, src: str, dst: str,
                   port_rates: Mapping[str, Mapping[str, float]]) -> None:
        """Leave out a host whose own port has no traffic rate while others' have (not the
        first round's missing baseline): its counters are not read (the kernel lab's veths
        carry none of the NIC's), so whether its bursts' paths are idle is never known, and
        waiting for its bursts held every healthy decision."""
        if not any(_counted(r) for r in port_rates.values()):
            return
        for host in (src, dst):
            ports = [str(e) for lk in self.plan.testbed.links_of(host) for e in lk.ends
                     if e.device == host]
            if ports and not any(_counted(port_rates.get(p)) for p in ports):
                self.not_observed[f"{host} {BUSY}"] = (
                    f"{', '.join(ports)}: no traffic counters read, so whether a burst's "
                    "path is idle is unknown: no burst from or to it is judged")

    def _pick(self) -> list[tuple[str, str]]:
        """The next pairs of the rotation, at most one crossing the fabric from each leaf:
        the interval's counters then show which uplink each burst took (``settle``). Pairs
        whose routes may cross a link no judged burst has crossed yet go first (each takes
        one ECMP member, so plain rotation left a member uncrossed for rounds, holding a
        healthy ``--once`` back); the rest in rotation order."""
        wanted = self._uncovered()
        chosen: list[tuple[str, str]] = []
        leaves: set[str] = set()
        for first in (True, False):
            for src, dst in list(self._queue):
                if len(chosen) >= self.per_interval:
                    break
                leaf, far = self._leaf.get(src), self._leaf.get(dst)
                if (src, dst) in chosen or (leaf != far and leaf in leaves):
                    continue
                reach = self._reach[(src, dst)]
                if first and not reach & wanted:
                    continue
                wanted -= reach
                leaves.add(leaf or src)
                chosen.append((src, dst))
        for pair in chosen:
            self._queue.remove(pair)
        self._queue.extend(chosen)  # back of the rotation
        return chosen

    def settle(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        """Judged bursts of the interval into the window, each with the route it took where
        the counters show it: the one uplink of its leaf whose bytes grew by at least half
        the burst while the others' grew by less (an idle fabric); else all its routes."""
        for b in self._unsettled:
            if b.provisional and not self._idle_over(b, before, after):
                continue  # its path carried other traffic (or was not read): not judged
            routes = b.routes
            if len(routes) > 1:
                grew = [_grew(before, after, self._first_port(b.src, r)) for r in routes]
                took = [r for r, g in zip(routes, grew, strict=True)
                        if g is not None and g >= BURST_B / 2]
                if len(took) == 1 and all(g is not None for g in grew):
                    routes = (took[0],)
            self.window.append((self._count, replace(b, routes=routes)))
        self._unsettled.clear()

    def _idle_over(self, b: Burst, before: Mapping[str, PortReading],
                   after: Mapping[str, PortReading]) -> bool:
        """Whether every port of the burst's routes was idle over the interval it ran in, by
        that interval's counters (the burst's own 65.5 MB are ~0.3 % of the idle bound over
        a 10 s interval at 400 Gb/s: left in)."""
        for p in self._ports(b.routes):
            if p not in before or p not in after:
                return False
            r = rates(before[p], after[p])
            if not _counted(r) or _busy(r, after[p].speed_gbps):
                return False
        return True

    def _first_port(self, host: str, route: frozenset[str]) -> str | None:
        """The port of ``host``'s leaf on the route's fabric link out of that leaf."""
        leaf = self._leaf.get(host)
        for c in route:
            lk = self._link(c)
            if lk is None or leaf is None:
                continue
            devices = {e.device for e in lk.ends}
            if leaf in devices and host not in devices:
                return next(str(e) for e in lk.ends if e.device == leaf)
        return None

    def _left_out(self, host: str) -> bool:
        return f"{host} {BUSY}" in self.not_observed

    def covered(self) -> bool:
        """Whether every link was crossed by ``COVER`` judged bursts, or the bursts can
        judge nothing here (no perftest, all busy)."""
        left = [h for h in self.fabric_hosts if not self._left_out(h)]
        return BUSY in self.not_observed or len(left) < 2 or not self._uncovered()

    def _uncovered(self) -> set[str]:
        """Links bursts can cross that fewer than ``COVER`` judged bursts have crossed. A
        burst crossed what every route left to it crosses: one still on two ECMP routes
        (its member not told by the counters) crossed one of two members, not both."""
        seen: dict[str, int] = {}
        for _, b in self.window:
            for c in frozenset.intersection(*b.routes) if b.routes else ():
                seen[c] = seen.get(c, 0) + 1
        return {lk.name for lk in self.plan.testbed.links
                if all(e.device in self._cabled for e in lk.ends)
                and seen.get(lk.name, 0) < COVER}

    def _one(self, lab: Any, src: str, dst: str,
             port_rates: Mapping[str, Mapping[str, float]],
             speeds: Mapping[str, float]) -> Burst:
        routes = self.fabric.routes(src, dst)
        ports = self._ports(routes)
        line = min((speeds[p] for p in ports if speeds.get(p)), default=0.0)
        unknown = [p for p in ports if not _counted(port_rates.get(p))]
        busy = [p for p in ports if _busy(port_rates.get(p), speeds.get(p))]
        # no rate anywhere yet: the first interval after a baseline. Run, and judge by this
        # interval's own counters (settle): waiting a round for rates cost a healthy
        # --once a whole round of the fabric's coverage
        provisional = not any(_counted(r) for r in port_rates.values())
        if not routes or not line:
            return Burst(src, dst, None, line, routes, why="no route or no port speed read")
        if unknown and not provisional:  # a port not read, or not over a whole interval yet
            return Burst(src, dst, None, line, routes, unrated=True,
                         why=f"no traffic rate of {', '.join(unknown[:3])} over the last interval")
        if busy:
            return Burst(src, dst, None, line, routes, busy=True,
                         why=f"its path is busy ({', '.join(busy[:3])}): a share, not a rate")
        client, server = lab.device(src), lab.device(dst)
        if not isinstance(client, Perftest) or not isinstance(server, Perftest):
            who = src if not isinstance(client, Perftest) else dst
            self.not_observed[f"{who} {BUSY}"] = "offers no perftest"
            return Burst(src, dst, None, line, routes, why="no perftest")
        spec = PerftestSpec(qps=1, size_bytes=SIZE_B, iterations=ITERATIONS)
        try:
            result = client.perftest_bandwidth(server, None, spec, timeout_s=30.0)
        except DataplaneFailed as exc:
            return Burst(src, dst, 0.0, line, routes, failed=True,
                         why=f"died on the data plane: {exc.evidence}")
        except TransportError as exc:  # a host that did not answer now: next time again
            return Burst(src, dst, None, line, routes, why=f"not run: {exc}")
        except InfraError as exc:  # the tool, not the fabric: that host is not probed again
            who = exc.device if exc.device in (src, dst) else src
            self.not_observed[f"{who} {BUSY}"] = first_line(str(exc))
            return Burst(src, dst, None, line, routes, why=str(exc))
        gbps = result.client.best_average_gbps
        if gbps is None:
            return Burst(src, dst, None, line, routes, why="perftest printed no bandwidth")
        assert self._limit is not None  # run() judges nothing without it
        failed = self._limit.judge(gbps / line) is Verdict.FAIL
        return Burst(src, dst, gbps, line, routes, failed=failed, provisional=provisional)

    def _ports(self, routes: tuple[frozenset[str], ...]) -> list[str]:
        """Every port on the links of ``routes``."""
        return sorted({e for r in routes for c in r if (lk := self._link(c)) is not None
                       for e in (str(x) for x in lk.ends)})

    def _link(self, component: str) -> Link | None:
        return self._links.get(component)

    def evidence(self) -> list[Evidence]:
        """The links the window's failing bursts share and its passing ones clear."""
        judged = [b for _, b in self.window]
        if not any(b.failed for b in judged):
            return []
        links = set(self._links)
        obs = [Observation(f"burst{i}", b.failed, (b.routes,), aspect=KEY)
               for i, b in enumerate(judged)]
        result = infer(obs, candidates=sorted({c for b in judged if b.failed
                                               for r in b.routes for c in r} & links))
        out = []
        for cause in result.causes:
            mine = [judged[int(i.removeprefix("burst"))] for i in cause.explains]
            worst = min(mine, key=lambda b: b.gbps or 0.0)
            passed = sum(1 for b in judged if not b.failed
                         and any(cause.component in r for r in b.routes))
            out.append(Evidence(
                cause.component, worst.src, "burst_rate", (worst.gbps or 0.0) / worst.line_gbps,
                "PROBE", f"{len(mine)} bandwidth burst(s) across {cause.component} below "
                f"{KEY} ({passed} passing burst(s) crossed it too; posterior "
                f"{cause.posterior:.3f}); worst: {worst.text()}", KEY,
                probe_weight(cause.posterior)))
        return out


def _grew(before: Mapping[str, Any], after: Mapping[str, Any], port: str | None) -> float | None:
    """Bytes ``port`` sent between two snapshots (None: not read, or nothing counted): the
    port's bytes, else its queues' (SONiC counts bytes per queue only: with the port's
    bytes alone no burst from a SONiC leaf was placed on its member, and the two uplinks
    stayed twins), else its packets at the RoCE MTU (an upper bound)."""
    if port is None or port not in before or port not in after:
        return None
    for key, scale in (("tx_bytes", 1), ("queue_tx_bytes", 1), ("tx_packets", ROCE_MTU_B)):
        a, b = before[port].counters.get(key), after[port].counters.get(key)
        if a is not None and b is not None:
            return float(b - a) * scale
    return None


def _counted(rates: Mapping[str, float] | None) -> bool:
    """Whether a port's rates say how much it carried (bytes or packets)."""
    return rates is not None and any(k in rates for k in ("tx_bytes", "tx_packets", "rx_packets"))


def _busy(rates: Mapping[str, float] | None, speed_gbps: float | None) -> bool:
    if not rates or not speed_gbps:
        return False
    # bytes where the port counts them, else packets at the RoCE MTU (an upper bound)
    packets = max(rates.get("tx_packets", 0.0), rates.get("rx_packets", 0.0))
    bits = 8.0 * max(rates.get("tx_bytes", 0.0), ROCE_MTU_B * packets)
    return bits > IDLE_FRACTION * speed_gbps * 1e9


def speeds_of(readings: Mapping[str, Any]) -> dict[str, float]:
    """Port -> its speed (Gb/s) from a snapshot's readings."""
    return {n: float(r.speed_gbps) for n, r in readings.items() if r.speed_gbps}

