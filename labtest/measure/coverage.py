"""Coverage: every requirement judged on every unit of the testbed, or said not to be.

A *requirement* (``suites/<family>/requirements.yaml``) names the limit key whose
measurements prove it, the kind of unit it is judged per (link, switch, host
pair, ...) and the test that proves it. The units come from the testbed (its
devices and cabling plan), not from what the tests happened to collect, so a
device or link that no test reached shows up as a hole instead of vanishing.

Each cell (requirement x unit) is one of:

- *proven*: measurements of the key name the unit and none failed;
- *failed*: a measurement of the key on the unit failed (or its test failed
  without measuring);
- *broken*: its test could not ask the lab (InfraError, test defect);
- *not proven*: no evidence, with the reason (an explicit
  ``measure.not_proven(...)``, the skip reason of its test, or "no measurement");
- *waived*: not proven or broken, but the limits profile waives it.

The run verdict (``run_verdict``) is FAIL if anything failed (a device under test whose
management did not answer while the lab reached the others counts: ``measure.management``),
else INCOMPLETE if any required cell is not proven or broken (unwaived), a test broke, a
device could not be judged or nothing ran, else PASS.

Everything here reads the results document (``labtest-results.json``), so the
``labtest run`` table, the sign-off and the Allure results agree by construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from labtest.measure.management import unmanaged
from labtest.outcome import first_line
from labtest.yamlsource import read, validate

REQUIREMENTS_FILE = "requirements.yaml"

UnitKind = Literal[
    "link", "fabric_link", "host_link", "switch", "host", "host_pair", "switch_group", "fabric"
]
UNIT_KINDS: tuple[str, ...] = UnitKind.__args__  # type: ignore[attr-defined]
LINK_KINDS = frozenset({"link", "fabric_link", "host_link"})
FABRIC_UNIT = "fabric"

PROVEN, FAILED, BROKEN, NOT_PROVEN, WAIVED = "proven", "failed", "broken", "not proven", "waived"
STATUS_ORDER = {FAILED: 0, BROKEN: 1, NOT_PROVEN: 2, WAIVED: 3, PROVEN: 4}
HOLES = frozenset({BROKEN, NOT_PROVEN})
PASS, INCOMPLETE, FAIL = "PASS", "INCOMPLETE", "FAIL"

#: capabilities that make a device a RoCE host (besides ``role: host``)
HOST_CAPABILITIES = frozenset({"RdmaDevices", "Perftest", "Collectives"})
#: capabilities that make a device a traffic generator (besides ``role: tg``)
TG_CAPABILITIES = frozenset({"TrafficGenerator"})
TG_ROLES = frozenset({"tg", "traffic-generator"})


# --- requirements as data ---------------------------------------------------------------------


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, description="the limit key whose measurements prove it")
    unit: UnitKind
    test: str = Field(pattern=r"^test_\w+$", description="the test function that proves it")
    description: str = ""


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    requirements: list[_Row]


@dataclass(frozen=True)
class Requirement:
    id: str
    unit: str
    test: str
    suite: str
    description: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def load_requirements(path: Path, suite: str) -> list[Requirement]:
    """A suite's ``requirements.yaml``; every error located (``file:line:col``), all at once."""
    src = read(path)
    parsed = validate(src, _File)
    seen: dict[tuple[str, str], int] = {}
    if parsed is not None:
        for i, row in enumerate(parsed.requirements):
            if (row.id, row.unit) in seen:
                src.problem(("requirements", i, "id"), f"{row.id} per {row.unit} is listed twice")
            seen[(row.id, row.unit)] = i
    src.raise_if_problems()
    assert parsed is not None
    return [Requirement(r.id, r.unit, r.test, suite, r.description) for r in parsed.requirements]


def suite_requirements(folder: Path) -> list[Requirement]:
    """The requirements of the suite family in ``folder`` (none if it has no file)."""
    path = folder / REQUIREMENTS_FILE
    return load_requirements(path, folder.name) if path.is_file() else []


# --- units from the testbed -------------------------------------------------------------------


@dataclass(frozen=True)
class Units:
    """The units of a testbed by kind, and how labels map onto them."""

    by_kind: Mapping[str, tuple[str, ...]]
    device_kind: Mapping[str, str]  # device -> switch | host | tg | instrument
    endpoint_link: Mapping[str, str]  # "device:port" -> link name
    link_devices: Mapping[str, tuple[str, str]]
    group_of: Mapping[str, str]  # switch -> its switch_group
    drivers: Mapping[str, str]
    capabilities: Mapping[str, tuple[str, ...] | None]  # None: the driver is not installed

    def of(self, kind: str) -> tuple[str, ...]:
        return self.by_kind.get(kind, ())


def expand_units(testbed: Mapping[str, Any] | None) -> Units:
    """Units from the results document's testbed record (devices with role, driver and
    capabilities; links ``a``/``b``). Cabled devices are hosts (``role: host`` or an RDMA
    capability), traffic generators, or else switches — whatever their driver offers, so a
    switch whose driver cannot do anything still owns its links' cells."""
    devices: Mapping[str, Any] = (testbed or {}).get("devices") or {}
    links: list[Mapping[str, Any]] = list((testbed or {}).get("links") or [])
    cabled = {str(lk[e]).split(":", 1)[0] for lk in links for e in ("a", "b")}
    kind: dict[str, str] = {}
    caps: dict[str, tuple[str, ...] | None] = {}
    for name, dev in devices.items():
        have = dev.get("capabilities")
        caps[name] = tuple(have) if have is not None else None
        has = set(have or ())
        if dev.get("role") == "host" or has & HOST_CAPABILITIES:
            kind[name] = "host"
        elif dev.get("role") in TG_ROLES or has & TG_CAPABILITIES:
            kind[name] = "tg"
        elif name in cabled or "Interfaces" in has:
            kind[name] = "switch"
        else:
            kind[name] = "instrument"
    endpoint_link: dict[str, str] = {}
    link_devices: dict[str, tuple[str, str]] = {}
    by_kind: dict[str, list[str]] = {k: [] for k in UNIT_KINDS}
    for lk in links:
        name = f"{lk['a']}--{lk['b']}"
        a, b = (str(lk[e]).split(":", 1)[0] for e in ("a", "b"))
        endpoint_link[str(lk["a"])] = endpoint_link[str(lk["b"])] = name
        link_devices[name] = (a, b)
        by_kind["link"].append(name)
        kinds = {kind.get(a), kind.get(b)}
        if kinds == {"switch"}:
            by_kind["fabric_link"].append(name)
        elif kinds == {"switch", "host"}:
            by_kind["host_link"].append(name)
    switches = [n for n, k in kind.items() if k == "switch"]
    hosts = [n for n, k in kind.items() if k == "host"]
    by_kind["switch"] = switches
    by_kind["host"] = hosts
    by_kind["host_pair"] = [pair_name(a, b) for a, b in itertools.combinations(hosts, 2)]
    group_of = {n: str(devices[n].get("driver", "?")) for n in switches}
    by_kind["switch_group"] = list(dict.fromkeys(group_of.values()))
    by_kind["fabric"] = [FABRIC_UNIT]
    return Units(
        by_kind={k: tuple(v) for k, v in by_kind.items()},
        device_kind=kind,
        endpoint_link=endpoint_link,
        link_devices=link_devices,
        group_of=group_of,
        drivers={n: str(d.get("driver", "?")) for n, d in devices.items()},
        capabilities=caps,
    )


def pair_name(a: str, b: str) -> str:
    """An unordered host pair as a unit name: ``hostA--hostB``, sorted."""
    x, y = sorted((a, b))
    return f"{x}--{y}"


def unit_of(
    kind: str, labels: Mapping[str, Any], units: Units, param: str | None = None
) -> str | None:
    """The unit of ``kind`` that labels (or, failing that, a test's parametrize id) name."""
    for source in (labels, {"_param": param} if param else {}):
        found = _unit_from(kind, source, units)
        if found is not None:
            return found
    return None


def _unit_from(kind: str, labels: Mapping[str, Any], units: Units) -> str | None:
    known = units.of(kind)
    param = labels.get("_param")
    if kind == FABRIC_UNIT:
        return FABRIC_UNIT
    if kind in LINK_KINDS:
        candidates = [labels.get("link"), param]
        device, port = labels.get("device"), labels.get("port")
        if device and port:
            candidates.append(units.endpoint_link.get(f"{device}:{port}"))
        if param:
            candidates.append(units.endpoint_link.get(param))
        return next((c for c in candidates if c and c in known), None)
    if kind in ("switch", "host"):
        for c in (labels.get("device"), param, _device_of_endpoint(param)):
            if c and c in known:
                return str(c)
        return None
    if kind == "host_pair":
        text = labels.get("pair") or param
        if not text and labels.get("client") and labels.get("server"):
            text = f"{labels['client']}--{labels['server']}"
        if text and "--" in str(text):
            a, _, b = str(text).partition("--")
            name = pair_name(a, b)
            return name if name in known else None
        return None
    if kind == "switch_group":
        group = labels.get("group")
        if group and group in known:
            return str(group)
        device = labels.get("device") or param
        return units.group_of.get(str(device)) if device else None
    return None


def _device_of_endpoint(text: str | None) -> str | None:
    return text.split(":", 1)[0] if text and ":" in text and "--" not in text else None


# --- the cells --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    requirement: str
    unit: str
    status: str
    reason: str = ""
    tests: tuple[str, ...] = ()  # nodeids of the evidence
    waiver: str = ""  # the waiver's reason and source, when waived

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tests": list(self.tests)}  # a JSON list, not a tuple


@dataclass
class RequirementCoverage:
    requirement: Requirement
    cells: list[Cell]

    def count(self, *statuses: str) -> int:
        return sum(1 for c in self.cells if c.status in statuses)

    @property
    def holes(self) -> list[Cell]:
        return [c for c in self.cells if c.status in HOLES]

    def summary(self) -> str:
        """``link.prbs_target_ber: proven on 5/8 fabric_links; not proven on X (why), ...``"""
        req, n = self.requirement, len(self.cells)
        plural = req.unit if n == 1 else req.unit + ("es" if req.unit.endswith("ch") else "s")
        head = f"{req.id}: proven on {self.count(PROVEN)}/{n} {plural}"
        if self.count(WAIVED):
            head += f", waived on {self.count(WAIVED)}"
        parts = [head]
        for status in (FAILED, BROKEN, NOT_PROVEN):
            cells = [c for c in self.cells if c.status == status]
            if cells:
                parts.append(f"{status} on " + ", ".join(f"{c.unit} ({c.reason})" for c in cells))
        return "; ".join(parts)


@dataclass
class Coverage:
    requirements: list[RequirementCoverage]
    unjudged: list[str] = field(default_factory=list)  # devices no suite could judge
    under_test: frozenset[str] = frozenset()  # the testbed's switches and hosts
    waivers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def cells(self) -> list[Cell]:
        return [c for r in self.requirements for c in r.cells]

    @property
    def holes(self) -> list[Cell]:
        return [c for c in self.cells if c.status in HOLES]

    @property
    def failed(self) -> list[Cell]:
        return [c for c in self.cells if c.status == FAILED]

    def by_suite(self) -> dict[str, tuple[int, int]]:
        """Suite -> (cells proven or waived, cells required)."""
        out: dict[str, tuple[int, int]] = {}
        for r in self.requirements:
            done, total = out.get(r.requirement.suite, (0, 0))
            out[r.requirement.suite] = (
                done + r.count(PROVEN, WAIVED),
                total + len(r.cells),
            )
        return out

    def hole_lines(self) -> list[str]:
        """One line per requirement with a hole, then one per device no suite could judge."""
        lines = [r.summary() for r in self.requirements if r.holes]
        return lines + self.unjudged

    def as_dict(self) -> dict[str, Any]:
        return {
            "requirements": [
                {
                    **r.requirement.as_dict(),
                    "proven": r.count(PROVEN),
                    "waived": r.count(WAIVED),
                    "failed": r.count(FAILED),
                    "broken": r.count(BROKEN),
                    "not_proven": r.count(NOT_PROVEN),
                    "required": len(r.cells),
                    "summary": r.summary(),
                    "cells": [c.as_dict() for c in r.cells],
                }
                for r in self.requirements
            ],
            "by_suite": {s: {"proven": d, "required": t} for s, (d, t) in self.by_suite().items()},
            "unjudged": list(self.unjudged),
            "waivers": list(self.waivers),
        }


def requirements_of(doc: Mapping[str, Any]) -> list[Requirement]:
    return [
        Requirement(r["id"], r["unit"], r["test"], r.get("suite", ""), r.get("description", ""))
        for r in doc.get("requirements") or []
    ]


def waivers_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The limits profile's waivers, then the testbed's (each says where it came from)."""
    out = []
    for origin, part in (("limits profile", doc.get("limits")), ("testbed", doc.get("testbed"))):
        for w in (part or {}).get("waivers") or []:
            out.append({**w, "origin": origin})
    return out


def compute(doc: Mapping[str, Any]) -> Coverage:
    """The coverage of a results document: every requirement of the suites that ran, per unit."""
    units = expand_units(doc.get("testbed"))
    tests: list[Mapping[str, Any]] = list(doc.get("tests") or [])
    waivers = waivers_of(doc)
    out = []
    for req in requirements_of(doc):
        evidence = _Evidence.gather(req, tests, units)
        cells = [_waive(evidence.cell(unit), waivers) for unit in units.of(req.unit)]
        out.append(RequirementCoverage(req, cells))
    coverage = Coverage(out, waivers=waivers)
    coverage.unjudged = _unjudged(coverage, tests, units)
    coverage.under_test = frozenset(d for d, kind in units.device_kind.items()
                                    if kind in ("switch", "host"))
    return coverage


def test_name(test: Mapping[str, Any]) -> str:
    return str(test.get("name") or str(test.get("nodeid", "")).rsplit("::", 1)[-1]).split("[")[0]


def test_param(test: Mapping[str, Any]) -> str | None:
    name = str(test.get("name") or str(test.get("nodeid", "")).rsplit("::", 1)[-1])
    if "[" not in name or not name.endswith("]"):
        return None
    return name[name.index("[") + 1 : -1]


@dataclass
class _Evidence:
    req: Requirement
    measurements: dict[str, list[tuple[str, Mapping[str, Any]]]]  # unit -> (nodeid, m)
    notes: dict[str, list[tuple[str, str]]]  # unit -> (nodeid, reason)
    instances: dict[str, list[Mapping[str, Any]]]  # unit -> the requirement's test for it
    everywhere: list[Mapping[str, Any]]  # unparametrised instances: they judge every unit
    #: instances whose parameter is no unit (a failover event): they reach a unit only by
    #: the measurements they record
    unplaced: list[Mapping[str, Any]] = field(default_factory=list)

    @classmethod
    def gather(
        cls, req: Requirement, tests: Iterable[Mapping[str, Any]], units: Units
    ) -> _Evidence:
        ev = cls(req, {}, {}, {}, [])
        for t in tests:
            param = test_param(t)
            nodeid = str(t.get("nodeid", ""))
            ours = test_name(t) == req.test and t.get("suite", req.suite) in (req.suite, "")
            for m in t.get("measurements") or []:
                if not proves(str(m.get("limit_key") or ""), req.id):
                    continue
                if req.unit == FABRIC_UNIT and not ours:
                    continue  # a run-wide requirement is its own test's, not every such number
                unit = unit_of(req.unit, m.get("labels") or {}, units, param)
                if unit is not None:
                    ev.measurements.setdefault(unit, []).append((nodeid, m))
            for note in t.get("not_proven") or []:
                if note.get("requirement") != req.id:
                    continue
                unit = unit_of(req.unit, note.get("labels") or {}, units, param)
                targets = [unit] if unit is not None else (
                    list(units.of(req.unit)) if not note.get("labels") and param is None else []
                )
                for u in targets:
                    ev.notes.setdefault(u, []).append((nodeid, str(note.get("reason", ""))))
            if not ours:
                continue
            if param is None or req.unit == "fabric":
                ev.everywhere.append(t)
                continue
            unit = unit_of(req.unit, {}, units, param)
            if unit is not None:
                ev.instances.setdefault(unit, []).append(t)
            else:
                ev.unplaced.append(t)
        return ev

    def cell(self, unit: str) -> Cell:
        found = self._cell(unit)
        reason = found.reason.removeprefix(f"{unit}: ").strip()
        return found if reason == found.reason else Cell(
            found.requirement, found.unit, found.status, reason, found.tests, found.waiver)

    def _cell(self, unit: str) -> Cell:
        req = self.req
        ms = self.measurements.get(unit, [])
        notes = self.notes.get(unit, [])
        runs = self.instances.get(unit, []) + self.everywhere
        failing = [(n, m) for n, m in ms if m.get("verdict") == "FAIL"]
        if failing:
            return Cell(req.id, unit, FAILED, _measured(failing[0][1]), _ids(failing))
        # a test that judges many units and failed says nothing about this one, unless it is
        # this unit's own test (or the requirement is run-wide)
        own = runs if req.unit == FABRIC_UNIT else self.instances.get(unit, [])
        failed_runs = [t for t in own if t.get("outcome") == "failed"]
        if failed_runs and not ms:
            return Cell(req.id, unit, FAILED, first_line(failed_runs[0].get("message")),
                        tuple(str(t["nodeid"]) for t in failed_runs))
        if notes:
            reason = "; ".join(dict.fromkeys(r for _, r in notes))
            return Cell(req.id, unit, NOT_PROVEN, reason, _ids(notes))
        if ms:
            return Cell(req.id, unit, PROVEN, "", _ids(ms))
        for outcome, status in (("broken", BROKEN), ("skipped", NOT_PROVEN)):
            hit = [t for t in runs if t.get("outcome") == outcome]
            if hit:
                why = hit[0].get("message") if outcome == "broken" else hit[0].get("skip_reason")
                return Cell(req.id, unit, status, first_line(why) or outcome,
                            tuple(str(t["nodeid"]) for t in hit))
        if runs:
            return Cell(req.id, unit, NOT_PROVEN,
                        f"{req.test} recorded no measurement of {req.id}",
                        tuple(str(t["nodeid"]) for t in runs))
        stopped = [t for t in self.unplaced if t.get("outcome") in ("failed", "broken")
                   and not any(proves(str(m.get("limit_key") or ""), req.id)
                               for m in t.get("measurements") or [])]
        if stopped:  # e.g. every failover event failed on loss before the event was made
            first = stopped[0]
            return Cell(req.id, unit, NOT_PROVEN,
                        f"no measurement of {req.id}: {len(stopped)} run(s) of {req.test} "
                        f"{first.get('outcome')} before measuring it (first: "
                        f"{test_param(first)}: {first_line(first.get('message'))})",
                        tuple(str(t["nodeid"]) for t in stopped))
        return Cell(req.id, unit, NOT_PROVEN, f"no measurement of {req.id} ({req.test} did not run "
                    "for it)")


def proves(limit_key: str, requirement: str) -> bool:
    """A measurement's limit key proves a requirement: the same key, or a variant of it
    (``transceiver.rx_power_dbm@400G-DR4`` proves ``transceiver.rx_power_dbm``)."""
    return limit_key == requirement or limit_key.startswith(requirement + "@")


def _ids(pairs: Iterable[tuple[str, Any]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n for n, _ in pairs))


def _measured(m: Mapping[str, Any]) -> str:
    labels = m.get("labels") or {}
    where = " ".join(f"{k}={labels[k]}" for k in ("device", "port", "lane", "pair") if k in labels)
    value = m.get("value")
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{m.get('name')} {where} = {text} {m.get('unit') or ''}".replace("  ", " ").strip()


def _waive(cell: Cell, waivers: list[dict[str, Any]]) -> Cell:
    if cell.status not in HOLES:
        return cell
    for w in waivers:
        units = w.get("units", "*")
        if w.get("requirement") == cell.requirement and (units == "*" or cell.unit in units):
            note = f"{w.get('reason')} (source: {w.get('source')})"
            return Cell(cell.requirement, cell.unit, WAIVED, cell.reason, cell.tests, note)
    return cell


#: unit kinds a device of each kind takes part in
_KINDS_OF = {
    "switch": frozenset({"link", "fabric_link", "host_link", "switch", "switch_group"}),
    "host": frozenset({"link", "host_link", "host", "host_pair"}),
}


def _unjudged(coverage: Coverage, tests: list[Mapping[str, Any]], units: Units) -> list[str]:
    """Devices under test that no suite of this run could judge: never a silent drop."""
    needed = {r.requirement.unit for r in coverage.requirements}
    named: set[str] = set()
    for t in tests:
        for m in t.get("measurements") or []:
            labels = m.get("labels") or {}
            named.update(str(labels[k]) for k in ("device", "client", "server") if k in labels)
            pair = str(labels.get("pair") or "")
            named.update(pair.split("--") if "--" in pair else ())
            link = units.link_devices.get(str(labels.get("link") or ""))
            if link and not labels.get("device"):
                named.update(link)
    for c in coverage.cells:
        if c.status in (PROVEN, FAILED, WAIVED) and units.device_kind.get(c.unit):
            named.add(c.unit)
        if c.status in (PROVEN, FAILED, WAIVED):  # a judged (or accepted) link: both ends
            named.update(units.link_devices.get(c.unit, ()))
        ends = c.unit.split("--") if c.status in (PROVEN, FAILED) and "--" in c.unit else []
        named.update(d for d in ends if units.device_kind.get(d) == "host")
    lines = []
    for name, kind in units.device_kind.items():
        if kind not in _KINDS_OF or not (_KINDS_OF[kind] & needed) or name in named:
            continue
        caps = units.capabilities.get(name)
        driver = units.drivers.get(name, "?")
        offers = (
            f"driver {driver!r} is not installed" if caps is None
            else f"driver {driver!r} offers {', '.join(caps)}; no check of this run could use it"
            if caps else f"driver {driver!r} offers no capability"
        )
        lines.append(f"{name}: no suite could judge it ({offers})")
    return lines


# --- the run's verdict ------------------------------------------------------------------------


def unstated_skips(doc: Mapping[str, Any]) -> list[str]:
    """Skipped tests of suites that state no requirements: with nothing to say which cells
    they prove, every such skip is a hole (never a silent one)."""
    stated = {r.suite for r in requirements_of(doc)}
    return [
        f"{t.get('suite')}: {t.get('name')} skipped ({first_line(t.get('skip_reason'))}); "
        "the suite states no requirements.yaml, so its skips are holes"
        for t in doc.get("tests") or []
        if t.get("outcome") == "skipped" and t.get("suite") not in stated
    ]


@dataclass(frozen=True)
class RunVerdict:
    verdict: str  # PASS | INCOMPLETE | FAIL
    reasons: tuple[str, ...]  # why it is not PASS (empty for PASS)
    coverage: Coverage

    def headline(self) -> str:
        """One line for a banner: how much was proven, and what kept it from PASS."""
        cells = self.coverage.cells
        done = sum(1 for c in cells if c.status in (PROVEN, WAIVED))
        waived = sum(1 for c in cells if c.status == WAIVED)
        head = f"{done}/{len(cells)} required cells proven" + (
            f" or waived ({waived} waived)" if waived else "")
        if self.verdict == FAIL:
            return f"{head}; {self.reasons[0]}" if self.reasons else head
        holes = [
            f"{r.requirement.id} on {len(r.holes)} {r.requirement.unit}(s)"
            for r in self.coverage.requirements if r.holes
        ]
        extra = [line for line in self.reasons if not any(
            line.startswith(r.requirement.id + ":") for r in self.coverage.requirements)]
        parts = ([f"not proven: {', '.join(holes)}"] if holes else []) + extra
        return "; ".join([head, *parts])

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "headline": self.headline(),
            "reasons": list(self.reasons),
            "coverage": self.coverage.as_dict(),
        }


def run_verdict(doc: Mapping[str, Any], coverage: Coverage | None = None) -> RunVerdict:
    """FAIL if a test or a cell failed or a device's management did not answer while others'
    did; else INCOMPLETE if a required cell is not proven or
    broken (unwaived), a test broke, a device could not be judged or nothing ran; else PASS."""
    coverage = compute(doc) if coverage is None else coverage
    tests = list(doc.get("tests") or [])
    outcomes = [t.get("outcome") for t in tests]
    failed_tests = [t for t in tests if t.get("outcome") == "failed"]
    dead = unmanaged(tests, coverage.under_test)  # a DUT that cannot be managed fails
    if failed_tests or coverage.failed or dead:
        reasons = [f"{len(failed_tests)} test(s) failed"] if failed_tests else []
        reasons += [f"{device}'s management did not answer while the lab reached the other "
                    f"devices: {why}" for device, why in sorted(dead.items())]
        reasons += [f"{c.requirement} failed on {c.unit}: {c.reason}" for c in coverage.failed]
        reasons += [f"also {line}" for line in coverage.hole_lines()]
        return RunVerdict(FAIL, tuple(reasons), coverage)
    reasons = coverage.hole_lines() + unstated_skips(doc)
    broken = outcomes.count("broken")
    if broken:
        reasons.append(f"{broken} test(s) broken: the lab could not be asked, nothing verified")
    if not any(o in ("passed", "failed") for o in outcomes):
        reasons.append("nothing was verified (no test passed)")
    if reasons:
        return RunVerdict(INCOMPLETE, tuple(reasons), coverage)
    return RunVerdict(PASS, (), coverage)
