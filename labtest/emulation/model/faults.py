"""The fault catalogue: named, parameterised changes to the fabric model.

A fault is registered once with its parameter model (ranges included), its
effect and what it may target (``targets``, ``refs``: data that
``labtest.testbed.faultcheck`` holds each testbed's faults against, so a fault
the lab cannot do is refused at load, located, not a traceback mid-run). The
testbed file (``emulation.faults``), the Python API and the CLI all inject
faults through the same door, and ``labtest emulate --list-faults`` can print
the catalogue with each fault's documented effect.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from labtest.testbed.faultcheck import TargetType, param_problems


class FaultParams(BaseModel):
    """Base for a fault's parameters; unknown keys are an error, not a silent no-op."""

    model_config = ConfigDict(extra="forbid")


class FaultError(ValueError):
    """A fault spec names an unknown kind, a bad target or bad parameters."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        #: which ``emulation.faults`` entry (0-based), so the error can name its line
        self.index = index


#: ``effect(fabric, target, params) -> undo | None``: the fabric is not named here, as the
#: fabric imports this catalogue (an import back would tie the model into a circle)
Effect = Callable[..., Callable[[], None] | None]


@dataclass(frozen=True)
class FaultType:
    kind: str
    params: type[FaultParams]
    effect: Effect
    summary: str  # one line: what it does to the model
    caught_by: str  # which suite is meant to catch it
    targets: tuple[TargetType, ...] = ()  # what its target may be (faultcheck.TargetType)
    #: parameters that name testbed objects, and what they may be (miswired's ``other``)
    refs: Mapping[str, tuple[TargetType, ...]] = field(default_factory=dict)


CATALOGUE: dict[str, FaultType] = {}

#: the traffic family's targets (``traffic/faults.py`` belongs to the traffic model's owners;
#: until its ``@fault`` calls pass ``targets=``, they are declared here, once per kind)
TRAFFIC_TARGETS: dict[str, tuple[TargetType, ...]] = {
    "pfc_disabled": ("switch",),
    "ecn_disabled": ("switch", "host"),
    "ecn_thresholds": ("switch",),
    "shallow_buffer": ("switch",),
    "pfc_storm": ("host", "host_port"),
    "pfcwd_disabled": ("switch",),
    "ecmp_polarisation": ("switch", "every_switch"),
    "slow_convergence": ("switch",),
    "degraded_nic": ("host",),
    "mtu_mismatch": ("port",),
    "straggler_link": ("link",),
}


def fault(
    kind: str,
    params: type[FaultParams],
    summary: str,
    caught_by: str,
    targets: tuple[TargetType, ...] = (),
    refs: Mapping[str, tuple[TargetType, ...]] | None = None,
) -> Callable[[Effect], Effect]:
    """Register ``effect(fabric, target, params) -> undo | None`` under ``kind``; a fault
    that does not say what it may target is refused here, at import."""
    declared = targets or TRAFFIC_TARGETS.get(kind, ())
    if not declared or (targets and kind in TRAFFIC_TARGETS):
        raise RuntimeError(f"fault {kind!r}: declare its targets once (targets= or in "
                           "TRAFFIC_TARGETS)")

    def register(effect: Effect) -> Effect:
        if kind in CATALOGUE:
            raise RuntimeError(f"fault {kind!r} registered twice")
        CATALOGUE[kind] = FaultType(
            kind, params, effect, summary, caught_by, declared, dict(refs or {})
        )
        return effect

    return register


def parse_params(kind: str, raw: dict[str, Any]) -> FaultParams:
    """A fault's parameters, validated; the catalogue is loaded first, so the answer does
    not depend on whether something else imported the fault families already."""
    load_catalogue()
    if kind not in CATALOGUE:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(sorted(CATALOGUE))}")
    problems = param_problems(kind, CATALOGUE[kind].params, raw)
    if problems:
        raise FaultError(f"fault {kind!r}: {problems[0][1]}")
    return CATALOGUE[kind].params.model_validate(raw)


#: every fault family, the one place they are registered: ``load_catalogue`` imports each
#: (their ``@fault`` effects add themselves to ``CATALOGUE``). The gray failures' lossy link,
#: silent drop and ECMP blackhole are acceptance faults (``gray.ACCEPTANCE``); the doctor's
#: hourly flap (``gray.register()``) stays opt-in, outside the catalogue the matrix and
#: docs/faults.md cover.
FAULT_MODULES = (
    "labtest.emulation.model.catalogue",
    "labtest.emulation.model.traffic.faults",
    "labtest.emulation.model.gray",
)


def load_catalogue() -> dict[str, FaultType]:
    """Import every fault family (``FAULT_MODULES``) and return the catalogue; a family that
    fails to import is an error, not a smaller catalogue."""
    for name in FAULT_MODULES:
        importlib.import_module(name)
    return CATALOGUE


def describe() -> list[dict[str, Any]]:
    """The catalogue as rows for ``labtest emulate --list-faults``."""
    rows = []
    for kind in sorted(load_catalogue()):
        ft = CATALOGUE[kind]
        params = {
            name: {"type": str(f.annotation).replace("typing.", ""), "default": f.default}
            for name, f in ft.params.model_fields.items()
        }
        rows.append(
            {"kind": kind, "summary": ft.summary, "caught_by": ft.caught_by, "params": params}
        )
    return rows


@dataclass(frozen=True)
class PlacedFault:
    """A catalogue fault placed at a target with its parameters, not injected yet: what a
    gray-failure schedule entry and a matrix draw both are (each adds its own when/why)."""

    kind: str
    target: str
    params: dict[str, Any]


@dataclass
class FaultInstance:
    """One injected fault: scheduled, active, or cleared (kept for the record)."""

    id: str
    kind: str
    target: str
    params: FaultParams
    at_s: float
    duration_s: float | None = None
    state: Literal["scheduled", "active", "cleared"] = "scheduled"
    undo: Callable[[], None] | None = None
    cleared_at_s: float | None = None
