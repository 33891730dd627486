"""Random placements for the fault-detection matrix: per fault kind a typed *domain* (which
targets are valid, which parameter ranges the catching suite's limit can see, and why),
and a seeded draw of targets and parameters from it.

A matrix whose faults sit at fixed placements can be tuned to: the suites end up right
where the matrix looks. Here every run draws its placements, and whom a correct failure
may blame is derived from the drawn target by :func:`blame` (the faulty port, its link,
the far end), never written per draw. The domains themselves are data
(``tests/matrix/matrix_data.py``); this module only knows how to read a testbed into
target classes, draw from them, and turn a draw into a :class:`labtest.matrix.Case`.

Draws are reproducible: one ``random.Random`` per (seed, fault kind), so adding a fault
kind or a draw leaves the other kinds' draws as they were.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labtest.emulation.model.faults import PlacedFault
from labtest.matrix.cases import Case, Expect
from labtest.registry import capabilities_of, driver_class
from labtest.testbed.model import SWITCH_ROLES, Testbed

# --- parameter domains ------------------------------------------------------------------


@dataclass(frozen=True)
class FloatRange:
    """A float drawn uniformly from [low, high], rounded to ``digits``."""

    low: float
    high: float
    why: str  # why these bounds: what the catching suite's limit can see
    digits: int = 2

    def draw(self, rng: random.Random) -> float:
        return round(rng.uniform(self.low, self.high), self.digits)

    def holds(self, value: Any) -> bool:
        return isinstance(value, int | float) and self.low <= value <= self.high

    def text(self) -> str:
        return f"{self.low:g} .. {self.high:g}"


@dataclass(frozen=True)
class IntRange:
    """An int drawn uniformly from [low, high]."""

    low: int
    high: int
    why: str

    def draw(self, rng: random.Random) -> int:
        return rng.randint(self.low, self.high)

    def holds(self, value: Any) -> bool:
        return isinstance(value, int) and self.low <= value <= self.high

    def text(self) -> str:
        return f"{self.low} .. {self.high} (integer)"


@dataclass(frozen=True)
class Choice:
    """One of a few values."""

    values: tuple[Any, ...]
    why: str

    def draw(self, rng: random.Random) -> Any:
        return rng.choice(self.values)

    def holds(self, value: Any) -> bool:
        return value in self.values

    def text(self) -> str:
        return " / ".join(str(v) for v in self.values)


Param = FloatRange | IntRange | Choice


# --- target classes: read from the testbed ----------------------------------------------

HOST_ROLES = ("host",)

#: class -> what it is; :func:`targets` computes each from the testbed
TARGET_CLASSES = {
    "fabric_link": "a link whose both ends are switches (`a--b`)",
    "host_link": "a link between a host and a switch (`a--b`)",
    "fabric_port": "a switch end of a fabric link (`device:port`)",
    "host_facing_port": "a switch end of a host link (`device:port`)",
    "host_port": "a host end of a host link (`device:port`)",
    "switch": "a switch (device)",
    "leaf": "a switch with role leaf (device)",
    "host": "a host (device)",
    "pair_group_switch": "a switch whose vendor group (driver) has exactly two switches",
    "tg_leaf": "a switch cabled to a traffic generator (device)",
    "pfc_queues_switch": "a switch whose driver reads per-queue PFC, ECN and watchdog state "
                         "(the PfcQueues capability)",
    "pfc_queues_leaf": "a leaf whose driver reads per-queue PFC, ECN and watchdog state",
    "fabric": "every switch at once (empty target)",
}


def _vendor(tb: Testbed, device: str) -> str:
    return tb.devices[device].driver


def _is(tb: Testbed, device: str, roles: Collection[str]) -> bool:
    return device in tb.devices and tb.devices[device].role in roles


def targets(tb: Testbed, cls: str) -> dict[str, list[str]]:
    """The targets of class ``cls`` in ``tb``, grouped in strata ``cls/vendor``.

    A stratum is what a draw cycles over, so every vendor (and, for links, every vendor
    pairing) gets its placements, not only the most common one.
    """
    if cls not in TARGET_CLASSES:
        raise ValueError(f"unknown target class {cls!r}; known: {', '.join(TARGET_CLASSES)}")
    out: dict[str, list[str]] = {}

    def put(key: str, target: str) -> None:
        out.setdefault(f"{cls}/{key}", []).append(target)

    switches = [n for n in tb.devices if _is(tb, n, SWITCH_ROLES)]
    for lk in tb.links:
        (a, b) = (lk.ends[0], lk.ends[1])
        sw = [e for e in (a, b) if _is(tb, e.device, SWITCH_ROLES)]
        hosts = [e for e in (a, b) if _is(tb, e.device, HOST_ROLES)]
        if len(sw) == 2:
            vendors = "+".join(sorted({_vendor(tb, e.device) for e in sw}))
            if cls == "fabric_link":
                put(vendors, lk.name)
            elif cls == "fabric_port":
                for e in sw:
                    put(_vendor(tb, e.device), str(e))
        elif len(sw) == 1 and len(hosts) == 1:
            if cls == "host_link":
                put(_vendor(tb, sw[0].device), lk.name)
            elif cls == "host_facing_port":
                put(_vendor(tb, sw[0].device), str(sw[0]))
            elif cls == "host_port":
                put(_vendor(tb, hosts[0].device), str(hosts[0]))
    if cls == "switch":
        for n in switches:
            put(_vendor(tb, n), n)
    elif cls == "leaf":
        for n in switches:
            if tb.devices[n].role == "leaf":
                put(_vendor(tb, n), n)
    elif cls == "host":
        for n in tb.devices:
            if _is(tb, n, HOST_ROLES):
                put(_vendor(tb, n), n)
    elif cls == "pair_group_switch":
        groups: dict[str, list[str]] = {}
        for n in switches:
            groups.setdefault(_vendor(tb, n), []).append(n)
        for vendor, members in groups.items():
            if len(members) == 2:
                for n in members:
                    put(vendor, n)
    elif cls == "tg_leaf":
        for lk in tb.links:
            ends = lk.ends
            if any(tb.devices[e.device].role == "tg" for e in ends):
                for e in ends:
                    if _is(tb, e.device, SWITCH_ROLES):
                        put(_vendor(tb, e.device), e.device)
    elif cls in ("pfc_queues_switch", "pfc_queues_leaf"):
        for n in switches:
            if cls == "pfc_queues_leaf" and tb.devices[n].role != "leaf":
                continue
            if "PfcQueues" in capabilities_of(driver_class(_vendor(tb, n))):
                put(_vendor(tb, n), n)
    elif cls == "fabric":
        out[f"{cls}/all"] = [""]
    return {k: list(dict.fromkeys(v)) for k, v in out.items()}


def _link_of(tb: Testbed, endpoint: str) -> Any:
    for lk in tb.links:
        if endpoint in (lk.a, lk.b) or endpoint == lk.name:
            return lk
        a, _, b = endpoint.partition("--")
        if b and {a, b} == {lk.a, lk.b}:
            return lk
    return None


def blame(tb: Testbed, target: str) -> tuple[str, ...]:
    """Whom a correct failure may name for a fault at ``target``, derived from the testbed.

    - a port: the port, the far end of its link, the link; and the host itself when the
      port is a host's (a host's pair and ring tests name the host, whose NIC it is);
    - a link: both ends and the link;
    - a host: the host, its ports, their far ends and links (its NIC's traffic shows on
      the switch port it is cabled to);
    - a switch: the switch (which matches its ports too: ``leaf2`` names ``leaf2:Ethernet8``);
    - the empty target (the whole fabric): every switch.
    """
    if target == "":
        return tuple(n for n in tb.devices if _is(tb, n, SWITCH_ROLES))
    if target in tb.devices:
        names = [target]
        if _is(tb, target, HOST_ROLES):
            for lk in tb.links:
                if target in (lk.ends[0].device, lk.ends[1].device):
                    names += [lk.a, lk.b, lk.name]
        return tuple(dict.fromkeys(names))
    lk = _link_of(tb, target)
    if lk is None:
        raise ValueError(f"{target!r} is neither a device nor cabled in {tb.name}")
    if "--" in target:
        return (lk.a, lk.b, lk.name)
    far = lk.b if target == lk.a else lk.a
    names = [target, far, lk.name]
    device = target.partition(":")[0]
    if _is(tb, device, HOST_ROLES):
        names.append(device)
    return tuple(names)


# --- domains and draws -------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where a fault may sit (target classes) and the parameters that go with it there."""

    classes: tuple[str, ...]
    params: Mapping[str, Param] = field(default_factory=dict)
    why: str = ""  # why these targets (and not others)
    #: strata (``class/vendor``) of these classes where no suite can see the fault, and
    #: why (e.g. EOS reports no module firmware): never drawn, listed in the docs
    unseen: Mapping[str, str] = field(default_factory=dict)

    def strata(self, tb: Testbed) -> dict[str, list[str]]:
        """This placement's strata in ``tb`` (``class/vendor`` -> targets), unseen left out."""
        return {k: v for cls in self.classes for k, v in sorted(targets(tb, cls).items())
                if v and k not in self.unseen}

    def targets(self, tb: Testbed) -> list[str]:
        return [t for ts in self.strata(tb).values() for t in ts]


@dataclass(frozen=True)
class Domain:
    """A fault kind's valid domain for the matrix, and how its row is judged."""

    kind: str
    placements: tuple[Placement, ...]
    catches: tuple[str, ...]  # suites meant to catch it
    #: the catchers are alternatives (any one failing naming the culprit is a catch):
    #: e.g. a dirty connector is the link suite's on a switch-switch link (PRBS, FEC) and
    #: the optical budget's (either suite) on a host link
    catch_any: bool = False
    also: tuple[str, ...] = ()  # other suites it may rightly fail (naming the culprit)
    #: traffic suites it fails as its consequences (seen on full rows): a reduced row runs
    #: them, judged as bystanders (``Case.spoils``)
    spoils: tuple[str, ...] = ()
    peer: bool = False  # miswired: param ``other`` is another target of the same class
    unreachable: bool = False  # the target's management plane is dead (expect broken)
    time_scale: float | None = None
    #: may be drawn into a combined row (two faults at once); False with the reason in note
    combinable: bool = True
    note: str = ""


@dataclass(frozen=True)
class Plan:
    """What one matrix run draws: ``draws`` per fault kind, forced extras, combined rows
    and healthy-lab rows, all from ``seed``."""

    seed: int
    draws: int = 1
    #: (kind, stratum prefix): one more draw of ``kind`` from a stratum starting so,
    #: e.g. ("flapping_link", "host_link") or ("dirty_connector", "fabric_link/eos")
    extra: tuple[tuple[str, str], ...] = ()
    combined: int = 0
    healthy: int = 0
    kinds: tuple[str, ...] | None = None  # None: every kind with a domain
    #: draw only from strata naming this driver (``fabric_link/eos+nxos`` names both), so a
    #: lab's one NX-OS leaf gets every kind's draws; kinds with no such stratum are left out
    #: (combined and healthy rows are drawn from the whole lab)
    vendor: str | None = None


@dataclass(frozen=True)
class Draw(PlacedFault):
    stratum: str

    def fault(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "params": dict(self.params)}


def strata(domain: Domain, tb: Testbed) -> list[tuple[int, str, list[str]]]:
    """(placement index, stratum, targets) of every non-empty stratum of the domain."""
    out = []
    for i, placement in enumerate(domain.placements):
        out += [(i, key, found) for key, found in placement.strata(tb).items()]
    return out


def names_vendor(stratum: str, vendor: str | None) -> bool:
    """Whether ``stratum`` (``class/vendor[+vendor]``) names ``vendor`` (None: any)."""
    return vendor is None or vendor in stratum.partition("/")[2].split("+")


def draw_kind(domain: Domain, tb: Testbed, rng: random.Random, n: int,
              prefix: str = "", avoid: Iterable[str] = (), vendor: str | None = None
              ) -> list[Draw]:
    """``n`` draws: strata in a seeded order, cycled, so n >= #strata covers every one.
    Targets in ``avoid`` (drawn already) are taken only when a stratum has no other."""
    pool = [s for s in strata(domain, tb)
            if s[1].startswith(prefix) and names_vendor(s[1], vendor)]
    if not pool:
        raise ValueError(f"{domain.kind}: no target in {tb.name} matches {prefix!r}")
    draws: list[Draw] = []
    order: list[tuple[int, str, list[str]]] = []
    while len(draws) < n:
        if not order:
            order = list(pool)
            rng.shuffle(order)
        index, stratum, found = order.pop()
        placement = domain.placements[index]
        fresh = [t for t in found if t not in set(avoid)]
        target = rng.choice(fresh or found)
        params = {name: p.draw(rng) for name, p in sorted(placement.params.items())}
        if domain.peer:
            params["other"] = _peer(tb, placement, target, rng)
        draws.append(Draw(domain.kind, target, params, stratum))
    return draws


def _peer(tb: Testbed, placement: Placement, target: str, rng: random.Random) -> str:
    """Another target of the placement's classes with the same optic (cables must fit)."""
    optic = getattr(_link_of(tb, target), "optic", None)
    found = [t for t in placement.targets(tb)
             if t != target and getattr(_link_of(tb, t), "optic", None) == optic]
    if not found:
        raise ValueError(f"no second target like {target!r} in {tb.name}")
    return rng.choice(sorted(found))


def expect(domain: Domain, tb: Testbed, d: Draw) -> Expect:
    culprits = blame(tb, d.target)
    if domain.peer:
        culprits = tuple(dict.fromkeys(culprits + blame(tb, str(d.params["other"]))))
    return Expect(kind=d.kind, target=d.target, catches=domain.catches, culprits=culprits,
                  also=domain.also, catch_any=domain.catch_any)


def to_case(name: str, domain: Domain, tb: Testbed, d: Draw, seed: int) -> Case:
    e = expect(domain, tb, d)
    extra: dict[str, Any] = {}
    if domain.unreachable:
        # short SSH timeouts keep the run quick; the emulator replaces port and password
        extra = {"unreachable": d.target, "pytest_args": ("--no-inventory",),
                 "devices": {d.target: {"address": "127.0.0.1", "ssh": {
                     "username": "admin", "password": "replaced-by-the-emulator",
                     "timeout_s": 2, "command_timeout_s": 2}}}}
    return Case(name=name, faults=(d.fault(),), catches=e.catches, culprits=e.culprits,
                also=e.also, spoils=domain.spoils, catch_any=e.catch_any, parts=(e,),
                time_scale=domain.time_scale,
                note=f"drawn (seed {seed}) from {d.stratum}", **extra)


def combine(name: str, domains: Mapping[str, Domain], tb: Testbed, pair: Sequence[Draw],
            seed: int) -> Case:
    """One row with every fault of ``pair`` at once; each must be caught and named."""
    parts = tuple(expect(domains[d.kind], tb, d) for d in pair)
    scales = [s for s in (domains[d.kind].time_scale for d in pair) if s is not None]
    return Case(
        name=name, faults=tuple(d.fault() for d in pair),
        catches=tuple(dict.fromkeys(s for e in parts for s in e.catches)),
        culprits=tuple(dict.fromkeys(c for e in parts for c in e.culprits)),
        also=tuple(dict.fromkeys(s for e in parts for s in e.also)),
        spoils=tuple(dict.fromkeys(s for d in pair for s in domains[d.kind].spoils)),
        catch_any=any(e.catch_any for e in parts), parts=parts,
        time_scale=max(scales) if scales else None,
        note=f"drawn (seed {seed}): " + " + ".join(f"{d.kind} from {d.stratum}" for d in pair))


def _devices(culprits: Iterable[str]) -> set[str]:
    out = set()
    for c in culprits:
        for side in c.split("--"):
            out.add(side.partition(":")[0])
    return out


def _suites(domain: Domain) -> set[str]:
    return {*domain.catches, *domain.also}


def draw_combined(domains: Mapping[str, Domain], tb: Testbed, rng: random.Random,
                  avoid: Iterable[str] = (), tries: int = 200) -> tuple[Draw, Draw]:
    """Two faults of different kinds, in different places (no device in common) and seen
    by different suites (a failure is then attributable to one of them: two faults in one
    suite's view are the single rows' concern, and one may mask the other). Kinds in
    ``avoid`` (already in another combined row) are left out while others remain."""
    kinds = sorted(k for k, d in domains.items() if d.combinable)
    fresh = [k for k in kinds if k not in set(avoid)]
    for attempt in range(tries):
        ka, kb = rng.sample(fresh if len(fresh) >= 2 and attempt < tries // 2 else kinds, 2)
        if _suites(domains[ka]) & _suites(domains[kb]):
            continue
        (a,) = draw_kind(domains[ka], tb, rng, 1)
        (b,) = draw_kind(domains[kb], tb, rng, 1)
        ea, eb = expect(domains[ka], tb, a), expect(domains[kb], tb, b)
        if _devices(ea.culprits) & _devices(eb.culprits):
            continue
        return a, b
    raise ValueError("no combinable pair of faults found")


def draw_cases(plan: Plan, domains: Mapping[str, Domain], tb: Testbed) -> list[Case]:
    """Every row of a matrix run: per kind ``plan.draws`` draws, the forced extras, the
    combined rows and the healthy rows (seeds drawn too), deterministic per ``plan.seed``."""
    cases: list[Case] = []
    counts: dict[str, int] = {}

    def name(kind: str) -> str:
        counts[kind] = counts.get(kind, 0) + 1
        return f"{kind}.{counts[kind]}"

    kinds = list(plan.kinds) if plan.kinds is not None else list(domains)
    if plan.vendor is not None:
        kinds = [k for k in kinds
                 if any(names_vendor(s[1], plan.vendor) for s in strata(domains[k], tb))]
    for kind in kinds:
        rng = random.Random(f"{plan.seed}/{kind}")
        for d in draw_kind(domains[kind], tb, rng, plan.draws, vendor=plan.vendor):
            cases.append(to_case(name(kind), domains[kind], tb, d, plan.seed))
    for i, (kind, prefix) in enumerate(plan.extra):
        rng = random.Random(f"{plan.seed}/extra/{i}/{kind}")
        drawn = [f["target"] for c in cases for f in c.faults if f["kind"] == kind]
        (d,) = draw_kind(domains[kind], tb, rng, 1, prefix, drawn)
        cases.append(to_case(name(kind), domains[kind], tb, d, plan.seed))
    rng = random.Random(f"{plan.seed}/combined")
    used: list[str] = []
    for _ in range(plan.combined):
        pair = draw_combined(domains, tb, rng, used)
        used += [d.kind for d in pair]
        cases.append(combine(name("combined"), domains, tb, pair, plan.seed))
    rng = random.Random(f"{plan.seed}/healthy")
    seeds: list[int] = []
    while len(seeds) < plan.healthy:
        s = rng.randint(1, 999_999)
        if s not in seeds:
            seeds.append(s)
    cases += [Case(name=f"healthy-seed{s}", seed=s) for s in seeds]
    return cases


def in_domain(domain: Domain, tb: Testbed, fault: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``fault`` for ``domain`` (empty: a valid draw)."""
    found: list[str] = [f"target {fault['target']!r} is in no placement of {domain.kind}"]
    for placement in domain.placements:
        valid = set(placement.targets(tb))
        if fault["target"] not in valid:
            continue
        params = dict(fault.get("params") or {})
        other = params.pop("other", None)
        found = [f"{k}={params.get(k)!r} outside {p.text()}"
                 for k, p in placement.params.items() if not p.holds(params.get(k))]
        found += [f"unexpected parameter {k}" for k in params if k not in placement.params]
        if domain.peer and (other not in valid or other == fault["target"]):
            found.append(f"other={other!r} is not another {'/'.join(placement.classes)}")
        if not found:
            return []
    return found


def describe_domains(domains: Mapping[str, Domain], tb: Testbed) -> list[str]:
    """Markdown: per kind, the target classes (and their strata in ``tb``) and parameter
    ranges with the reason for each bound."""
    lines = ["| fault | catching suite(s) | targets (strata in the default lab) | "
             "parameters | why |", "|---|---|---|---|---|"]
    for kind, d in domains.items():
        catch = (" or " if d.catch_any else " and ").join(d.catches)
        if d.also:
            catch += f" (may also fail: {', '.join(d.also)})"
        for p in d.placements:
            where = "; ".join(
                f"{cls}: " + ", ".join(f"{k.split('/', 1)[1]} ({len(v)})"
                                       for k, v in sorted(targets(tb, cls).items()))
                for cls in p.classes)
            where += "".join(f"; not {k} (no suite can see it there: {why})"
                             for k, why in p.unseen.items())
            params = "; ".join(f"`{k}` {v.text()}" for k, v in p.params.items()) or "—"
            whys = [f"targets: {p.why}."] + [f"`{k}`: {v.why}." for k, v in p.params.items()]
            if d.peer:
                params += "; `other` another link of the same class and optic"
            lines.append(f"| `{kind}` | {catch} | {where} | {params} | "
                         + " ".join(w for w in whys if w).replace("|", "/") + " |")
    return lines
