"""Root causes: group a run's failures under the few faults that explain them.

One fault fails many tests: a PFC storm from one NIC stalls every incast, a host
with a degraded NIC fails every pair it is in. Reporting each failure's own
location names the symptoms; this names the cause, with its evidence, and shows
the other failures as *consequences*.

The rules are small functions over the results document, tried in order; each
takes the failures it explains out of the pool:

1. ``storm``: a pause storm (limit keys in ``STORM_KEYS``) explains every
   traffic failure of the run; its source is the stormed port whose far end is
   not a switch (the NIC that pauses), else the port with most pause frames.
2. ``unreachable``: a test broken by a transport error (``TransportError``: no
   connection, timeout, authentication) that names a device explains the
   traffic failures of the hosts behind it. Other broken tests (a command or a
   parser that failed) are left to the last rule.
3. ``link_down``: a link that flapped or went down (``LINK_DOWN_KEYS``)
   explains the traffic failures of the hosts behind it.
4. ``anomaly``: a device or port whose own counters or readings failed (any
   failing measurement that is not a traffic symptom, ``SYMPTOM_KEYS``)
   explains the traffic failures of the hosts behind it.
5. ``ecmp``: uneven ECMP shares at a switch (``ECMP_KEYS``) explain the failures
   of traffic that crosses the spine layer in aggregate (``scope=bisection``).
6. ``common_member``: a host that is an end of most failing pairs (at least two,
   more than any other host) explains them.
7. ``located``: whatever is left is grouped by what its failing measurements
   name (``labtest.outcome.culprit``).

"Traffic failures" are failed tests whose every failing measurement is a
symptom key: a number that a fault elsewhere can spoil.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labtest.errors import TransportError
from labtest.measure.coverage import Units, expand_units, test_param
from labtest.measure.limits import Limit

#: measurements that show a pause storm (its port and, in ``peer``, who pauses)
STORM_KEYS = ("congestion.idle_pfc_rx_frames", "congestion.stormed_queues")
#: measurements that show a link going down or flapping
LINK_DOWN_KEYS = ("link.flaps", "link.oper_down*", "link.down_*")
#: measurements a fault elsewhere can spoil: traffic outcomes, not a device's own state
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
    "congestion.ecn_*",
    "congestion.cnp_*",
    "congestion.other_priority_loss_frames",
    "congestion.pfcwd_*_excess_ms",
    "collective.*",
    "failover.*",
    "latency.*_us",
    "latency.*inflation",
)
#: measurements that show a switch spreading flows unevenly over its ECMP members
ECMP_KEYS = ("roce.ecmp_share_deviation",)
#: the label value of aggregate traffic across the spine layer (bisection runs)
CROSS_FABRIC_SCOPE = "bisection"
#: labels whose values name hosts a traffic test used
HOST_LABELS = ("client", "server", "receiver", "host", "bottleneck_host")
MAX_EVIDENCE = 8
#: labels that say what is wrong (shown in an anomaly's one-line cause)
EXPLAINING_LABELS = ("trained", "capable", "expected", "seen", "peer")


@dataclass(frozen=True)
class RootCause:
    cause: str  # one line: what is wrong and where
    kind: str  # storm | unreachable | link_down | anomaly | common_member | located
    culprit: str  # the unit: a device, "device:port" or a link name
    evidence: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # failures that show the cause itself
    consequences: list[str] = field(default_factory=list)  # failures it explains elsewhere

    def as_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "kind": self.kind,
            "culprit": self.culprit,
            "evidence": list(self.evidence),
            "tests": list(self.tests),
            "consequences": list(self.consequences),
        }


def matches(key: str | None, patterns: Iterable[str]) -> bool:
    return bool(key) and any(fnmatch.fnmatchcase(str(key), p) for p in patterns)


# --- the failures, as the rules see them ------------------------------------------------------


@dataclass
class Failure:
    test: Mapping[str, Any]
    failing: list[Mapping[str, Any]]  # its FAIL measurements
    hosts: frozenset[str]  # hosts its traffic used (pair, ring, receiver, ...)

    @property
    def nodeid(self) -> str:
        return str(self.test.get("nodeid", ""))

    @property
    def symptom_only(self) -> bool:
        """Failed on traffic numbers alone (something elsewhere may have caused it)."""
        return (
            self.test.get("outcome") == "failed"
            and bool(self.failing)
            and all(matches(m.get("limit_key"), SYMPTOM_KEYS) for m in self.failing)
        )

    @property
    def pair(self) -> frozenset[str] | None:
        """The two hosts of a pair test, else None."""
        pairs = {m["labels"]["pair"] for m in self.failing if "pair" in (m.get("labels") or {})}
        if len(pairs) == 1:
            a, _, b = pairs.pop().partition("--")
            return frozenset({a, b}) if a and b else None
        return None


def failures(doc: Mapping[str, Any], topo: Topology) -> list[Failure]:
    out = []
    for t in doc.get("tests") or []:
        if t.get("outcome") not in ("failed", "broken"):
            continue
        failing = [m for m in t.get("measurements") or [] if m.get("verdict") == "FAIL"]
        out.append(Failure(t, failing, frozenset(_hosts_of(t, failing, topo))))
    return out


def _hosts_of(t: Mapping[str, Any], failing: list[Mapping[str, Any]], topo: Topology) -> set[str]:
    """Hosts a failure involves: the hosts behind where a failing measurement is located (a
    link, a device's port); at a fabric port also the hosts its host labels (receiver,
    client, ...) name, since drops at a leaf uplink during an incast into host5 are host5's
    traffic too. Only an unlocated measurement, or one whose run errored (``error=``),
    counts every host of its pair or ring."""
    hosts = {n for n, k in topo.units.device_kind.items() if k == "host"}
    found: set[str] = set()
    for m in failing:
        labels = m.get("labels") or {}
        if labels.get("scope") == CROSS_FABRIC_SCOPE:
            found |= hosts  # every host sends across the bisection at once
        # a run that errored (no number at all) failed end to end: its place is evidence
        # of a queue, not where it broke, so its pair's hosts count too
        errored = bool(labels.get("error"))
        where = _located(m, topo)
        if where is not None:
            _, device, link = where
            port = where[0].split(":", 1)[1] if device and ":" in where[0] else None
            found |= topo.shadow(device, port, link)
            if link in topo.host_link.values() and not errored:
                continue  # a host's own link: its hosts are exactly those behind it
        for key in HOST_LABELS:
            if labels.get(key) in hosts:
                found.add(str(labels[key]))
        if where is not None and not errored:
            continue  # at a fabric port: the ring or pair beyond it is not all its traffic
        for key in ("pair", "ring"):
            text = str(labels.get(key) or "")
            found.update(h for h in text.replace(" -> ", "--").split("--") if h in hosts)
    if not failing:
        param = test_param(t) or ""
        found.update(h for h in param.replace(" -> ", "--").split("--") if h in hosts)
    return found


# --- the topology the rules need --------------------------------------------------------------


@dataclass(frozen=True)
class Topology:
    units: Units
    host_link: dict[str, str]  # host -> its link
    hosts_behind: dict[str, frozenset[str]]  # switch -> hosts cabled to it
    link_hosts: dict[str, frozenset[str]]  # link -> hosts whose traffic crosses it first

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> Topology:
        units = expand_units(doc.get("testbed"))
        kind = units.device_kind
        host_link: dict[str, str] = {}
        behind: dict[str, set[str]] = {}
        for link, (a, b) in units.link_devices.items():
            for h, s in ((a, b), (b, a)):
                if kind.get(h) == "host" and kind.get(s) == "switch":
                    host_link.setdefault(h, link)
                    behind.setdefault(s, set()).add(h)
        hosts_behind = {s: frozenset(h) for s, h in behind.items()}
        link_hosts: dict[str, frozenset[str]] = {}
        for link, (a, b) in units.link_devices.items():
            direct = {d for d in (a, b) if kind.get(d) == "host"}
            link_hosts[link] = frozenset(direct) if direct else (
                hosts_behind.get(a, frozenset()) | hosts_behind.get(b, frozenset())
            )
        return cls(units, host_link, hosts_behind, link_hosts)

    def shadow(self, device: str | None, port: str | None = None, link: str | None = None
               ) -> frozenset[str]:
        """Hosts whose traffic a fault at this device, port or link spoils."""
        if link is None and device and port:
            link = self.units.endpoint_link.get(f"{device}:{port}")
        if link is not None and link in self.link_hosts:
            return self.link_hosts[link]
        if device is None:
            return frozenset()
        if self.units.device_kind.get(device) == "host":
            return frozenset({device})
        return self.hosts_behind.get(device, frozenset())

    def peer(self, device: str, port: str) -> str | None:
        link = self.units.endpoint_link.get(f"{device}:{port}")
        if link is None:
            return None
        a, _, b = link.partition("--")
        return b if a == f"{device}:{port}" else a


# --- the rules --------------------------------------------------------------------------------


Rule = Callable[[list[Failure], Topology], list[RootCause]]


def _absorb(pool: list[Failure], explains: Callable[[Failure], bool]) -> list[str]:
    """Take the symptom-only failures ``explains`` accepts out of ``pool``; their nodeids."""
    taken = [f for f in pool if f.symptom_only and explains(f)]
    for f in taken:
        pool.remove(f)
    return [f.nodeid for f in taken]


def _touching(hosts: frozenset[str]) -> Callable[[Failure], bool]:
    """Explains a failure of any of ``hosts`` (one a dead device shadows)."""
    return lambda f: bool(f.hosts & hosts)


def _alone_on(host: str) -> Callable[[Failure], bool]:
    """Explains a failure of ``host`` that is not a pair's."""
    return lambda f: host in f.hosts and f.pair is None


def _take(pool: list[Failure], chosen: Iterable[Failure]) -> list[str]:
    ids = []
    for f in list(chosen):
        if f in pool:
            pool.remove(f)
            ids.append(f.nodeid)
    return list(dict.fromkeys(ids))


def message(m: Mapping[str, Any]) -> str:
    """A failing measurement in one line (as ``Measurement.message`` prints it)."""
    labels = m.get("labels") or {}
    where = "".join(f" {k}={v}" for k, v in labels.items() if k not in ("detail", "evidence"))
    value = m.get("value")
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    bound = _limit_text(m.get("limit"))
    tail = f"; limit {bound}" if bound else ""
    head = f"{m.get('name')}{where}: {text} {m.get('unit') or ''}".rstrip()
    return f"{head} is {m.get('verdict')}{tail}"


def _limit_text(limit: Mapping[str, Any] | None) -> str:
    if not limit:
        return ""
    try:
        return Limit.model_validate(dict(limit)).describe()
    except ValueError:
        return ""


def storm_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    stormed = [(f, m) for f in pool for m in f.failing if matches(m.get("limit_key"), STORM_KEYS)]
    located = [(f, m) for f, m in stormed if (m.get("labels") or {}).get("device")]
    if not located:
        return []

    def rank(fm: tuple[Failure, Mapping[str, Any]]) -> tuple[int, float]:
        labels = fm[1].get("labels") or {}
        peer = labels.get("peer") or topo.peer(labels["device"], labels.get("port", "")) or ""
        from_edge = topo.units.device_kind.get(peer.split(":", 1)[0]) not in ("switch", None)
        value = fm[1].get("value")
        return (1 if from_edge else 0, float(value) if isinstance(value, int | float) else 0.0)

    _, source = max(located, key=rank)
    labels = source.get("labels") or {}
    device, port = str(labels["device"]), str(labels.get("port") or "")
    where = f"{device}:{port}" if port else device
    peer = labels.get("peer") or (topo.peer(device, port) if port else None)
    origin = f" (from {peer})" if peer else ""
    tests = _take(pool, [f for f, _ in stormed])
    evidence = [message(m) for _, m in stormed][:MAX_EVIDENCE]
    consequences = _absorb(pool, lambda f: True)  # pause frames stall the whole lossless class
    return [RootCause(f"PFC storm at {where}{origin}", "storm", where, evidence, tests,
                      consequences)]


def transport_errors() -> tuple[str, ...]:
    """Names of the errors that mean "the device could not be reached" (and subclasses)."""
    found, todo = [], [TransportError]
    while todo:
        cls = todo.pop()
        found.append(cls.__name__)
        todo.extend(cls.__subclasses__())
    return tuple(sorted(found))


def _unreachable(test: Mapping[str, Any]) -> bool:
    first = str(test.get("message") or "").split(":", 1)[0].rsplit(".", 1)[-1]
    return test.get("outcome") == "broken" and first in transport_errors()


def unreachable_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    by_device: dict[str, list[Failure]] = {}
    for f in pool:
        device = f.test.get("device")
        if device and _unreachable(f.test):
            by_device.setdefault(str(device), []).append(f)
    out = []
    for device, broken in sorted(by_device.items(), key=lambda kv: -len(kv[1])):
        first = str(broken[0].test.get("message") or "").strip().splitlines()
        why = first[0][:160] if first else "no answer"
        tests = _take(pool, broken)
        shadow = topo.shadow(device)
        consequences = _absorb(pool, _touching(shadow))
        out.append(RootCause(f"{device} could not be asked: {why}", "unreachable", device,
                             [f"{len(tests)} broken test(s) name {device}"], tests, consequences))
    return out


def _located(m: Mapping[str, Any], topo: Topology) -> tuple[str, str | None, str | None] | None:
    """(culprit, device, link) that a failing measurement points at, or None."""
    labels = m.get("labels") or {}
    device, port, link = labels.get("device"), labels.get("port"), labels.get("link")
    if device and port:
        return f"{device}:{port}", str(device), topo.units.endpoint_link.get(f"{device}:{port}")
    if link and link in topo.units.link_devices:
        return str(link), None, str(link)
    if device:
        return str(device), str(device), None
    return None


def _grouped(pool: list[Failure], topo: Topology, keys: Callable[[str | None], bool]
             ) -> dict[str, tuple[str | None, str | None, list[tuple[Failure, Mapping[str, Any]]]]]:
    groups: dict[str, tuple[str | None, str | None, list[tuple[Failure, Mapping[str, Any]]]]] = {}
    for f in pool:
        for m in f.failing:
            if not keys(m.get("limit_key")):
                continue
            where = _located(m, topo)
            if where is None:
                continue
            culprit, device, link = where
            groups.setdefault(culprit, (device, link, []))[2].append((f, m))
    return groups


def link_down_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    groups = _grouped(pool, topo, lambda k: matches(k, LINK_DOWN_KEYS))
    by_link: dict[str, list[tuple[Failure, Mapping[str, Any]]]] = {}
    for culprit, (_, link, found) in groups.items():
        by_link.setdefault(link or culprit, []).extend(found)
    out = []
    for link, found in sorted(by_link.items(), key=lambda kv: -len(kv[1])):
        tests = _take(pool, [f for f, _ in found])
        shadow = topo.shadow(None, link=link) if link in topo.units.link_devices else frozenset()
        consequences = _absorb(pool, _touching(shadow))
        out.append(RootCause(f"link {link} went down or flapped", "link_down", link,
                             [message(m) for _, m in found][:MAX_EVIDENCE], tests, consequences))
    return out


def anomaly_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    groups = _grouped(pool, topo, lambda k: not matches(k, SYMPTOM_KEYS))
    out = []
    for culprit, (device, link, found) in sorted(groups.items(), key=lambda kv: -len(kv[1][2])):
        if not any(f in pool for f, _ in found):
            continue  # its failures were taken by a bigger group
        tests = _take(pool, [f for f, _ in found])
        port = culprit.split(":", 1)[1] if device and ":" in culprit else None
        shadow = topo.shadow(device, port, link)
        consequences = _absorb(pool, _touching(shadow))
        evidence = [message(m) for _, m in found][:MAX_EVIDENCE]
        if len(consequences) >= 2 and device and topo.units.device_kind.get(device) == "host":
            evidence.append(f"{device} takes part in {len(consequences)} failing traffic tests")
        first = found[0][1]
        labels = first.get("labels") or {}
        why = ", ".join(f"{k}={labels[k]}" for k in EXPLAINING_LABELS if labels.get(k))
        out.append(RootCause(f"{culprit}: {first.get('name')} {_value(first)} outside its limit"
                             + (f" ({why})" if why else ""), "anomaly", culprit,
                             evidence, tests, consequences))
    return out


def ecmp_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    uneven = [(f, m) for f in pool for m in f.failing
              if matches(m.get("limit_key"), ECMP_KEYS) and (m.get("labels") or {}).get("device")]
    if not uneven:
        return []
    devices = sorted({str(m["labels"]["device"]) for _, m in uneven})
    tests = _take(pool, [f for f, _ in uneven])
    evidence = [message(m) for _, m in uneven][:MAX_EVIDENCE]
    consequences = _absorb(pool, lambda f: all(
        (m.get("labels") or {}).get("scope") == CROSS_FABRIC_SCOPE for m in f.failing))
    culprit = devices[0] if len(devices) == 1 else ", ".join(devices)
    return [RootCause(f"uneven ECMP hashing at {culprit}: flows share too few uplinks", "ecmp",
                      culprit, evidence, tests, consequences)]


def _value(m: Mapping[str, Any]) -> str:
    value = m.get("value")
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{text} {m.get('unit') or ''}".rstrip()


def common_member_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    out: list[RootCause] = []
    while True:
        pairs = [f for f in pool if f.symptom_only and f.pair is not None]
        counts = Counter(h for f in pairs for h in f.pair or ())
        if not counts:
            return out
        (host, n), *rest = counts.most_common()
        runner_up = rest[0][1] if rest else 0
        if n < 2 or n <= runner_up or 2 * n < len(pairs):
            return out
        mine = [f for f in pairs if host in (f.pair or ())]
        tests = [f.nodeid for f in mine]
        for f in mine:
            pool.remove(f)
        evidence = [f"{host} is an end of {n} of {len(pairs)} failing pairs: "
                    + ", ".join("--".join(sorted(f.pair or ())) for f in mine)]
        link = topo.host_link.get(host)
        if link:
            evidence.append(f"{host}'s link: {link}")
        consequences = _absorb(pool, _alone_on(host))
        where = f" (its NIC or its link {link})" if link else ""
        out.append(RootCause(f"{host}: common end of {n} failing pairs{where}", "common_member",
                             host, evidence, [], tests + consequences))


def located_rule(pool: list[Failure], topo: Topology) -> list[RootCause]:
    from labtest.outcome import culprit as culprit_of  # the table's own naming, one definition

    groups: dict[str, list[Failure]] = {}
    for f in pool:
        groups.setdefault(culprit_of(dict(f.test)) or f.nodeid, []).append(f)
    out = []
    for where, found in groups.items():
        evidence = [message(m) for f in found for m in f.failing][:MAX_EVIDENCE]
        if not evidence:
            evidence = [str(f.test.get("message") or "").strip().splitlines()[0]
                        for f in found if str(f.test.get("message") or "").strip()][:MAX_EVIDENCE]
        out.append(RootCause(where, "located", where, evidence, _take(pool, found), []))
    return out


RULES: tuple[Rule, ...] = (
    storm_rule,
    unreachable_rule,
    link_down_rule,
    anomaly_rule,
    ecmp_rule,
    common_member_rule,
    located_rule,
)


def root_causes(doc: Mapping[str, Any], rules: Iterable[Rule] = RULES) -> list[RootCause]:
    """The run's failures grouped under their most likely causes, the biggest first within
    each rule's rank (storms, unreachable devices, dead links, anomalies, common members)."""
    topo = Topology.of(doc)
    pool = failures(doc, topo)
    out: list[RootCause] = []
    for rule in rules:
        if not pool:
            break
        out.extend(rule(pool, topo))
    return out


def explained_by(causes: Iterable[RootCause]) -> dict[str, RootCause]:
    """nodeid -> the cause it is a consequence of."""
    return {n: c for c in causes for n in c.consequences}
