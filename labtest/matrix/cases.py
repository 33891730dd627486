"""Cases of the fault-detection matrix: what a row injects and which suites must catch it."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labtest.run import REPO, SUITE_ORDER

DEFAULT_CASES = REPO / "tests" / "matrix" / "matrix_data.py"
DEFAULT_SEEDS = (1, 2, 3, 4, 5)


# --- cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What one injected fault must cause: a failure in ``catches`` naming a culprit."""

    kind: str
    target: str = ""
    catches: tuple[str, ...] = ()
    culprits: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    catch_any: bool = False  # the catchers are alternatives: one failing is a catch


@dataclass(frozen=True)
class Case:
    """One run of the matrix: a testbed with these faults (none: the healthy lab)."""

    name: str
    faults: tuple[dict[str, Any], ...] = ()
    catches: tuple[str, ...] = ()  # suite families meant to fail on it
    culprits: tuple[str, ...] = ()  # device:port, a-b link or device; a failure names one
    #: other suites the fault may rightly fail too (a dead link fails traffic as well);
    #: when they fail, they must name the culprit as a catcher does
    also: tuple[str, ...] = ()
    #: traffic suites the fault fails as its consequences (a flapping host link fails the
    #: incasts into its host): a reduced run keeps them, judged as bystanders (every
    #: failure names a culprit); the expensive suites it cannot reach are left out
    spoils: tuple[str, ...] = ()
    #: cheap suites a reduced run leaves out on this row, for a reason the note gives
    not_run: tuple[str, ...] = ()
    unreachable: str | None = None  # a device whose management plane is dead
    seed: int | None = None  # emulation.seed (None: the testbed's)
    time_scale: float | None = None  # emulation.time_scale (None: the testbed's)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-device overrides
    pytest_args: tuple[str, ...] = ()
    note: str = ""  # why this target and these parameters
    #: the catchers are alternatives: one failing naming the culprit is a catch, the
    #: others may pass or fail naming it (a host link's dirty connector: link or transceiver)
    catch_any: bool = False
    #: per fault, what it must cause (a combined row has two); empty: one, from the fields above
    parts: tuple[Expect, ...] = ()
    #: the testbed the faults go into (None: the runner's base), e.g. the NX-OS variant lab
    base: str | None = None

    @property
    def healthy(self) -> bool:
        return not self.faults

    @property
    def expects(self) -> tuple[Expect, ...]:
        if self.parts or self.healthy:
            return self.parts
        f = self.faults[0]
        return (
            Expect(
                f["kind"],
                f.get("target", ""),
                self.catches,
                self.culprits,
                self.also,
                self.catch_any,
            ),
        )

    def describe(self) -> str:
        """``kind@target k=v`` per fault, as a table cell."""
        if self.healthy:
            return f"no fault, seed {self.seed}" if self.seed is not None else "no fault"
        parts = []
        for f in self.faults:
            params = " ".join(f"{k}={v}" for k, v in (f.get("params") or {}).items())
            parts.append(f"`{f['kind']}@{f.get('target', '')}`" + (f" {params}" if params else ""))
        if self.time_scale is not None:
            parts.append(f"time_scale {self.time_scale:g}")
        return ", ".join(parts)


#: the cheap "other" suites (under a minute together on the default lab) a reduced run
#: adds to a fault's catchers; roce, congestion, latency and failover are left out
BYSTANDERS = ("link", "transceiver", "cabling", "collective", "paths", "routing")


def reduced_suites(case: Case, consequences: bool = True) -> list[str]:
    """A reduced run's suites: every suite for the healthy lab (empty list); for a fault,
    the suites meant to catch it, those it may fail, those it spoils (``consequences``:
    its consequences named through the root cause), and every cheap other one, to see a
    false failure. The expensive traffic suites a fault cannot reach pass on the healthy
    rows; run on its row, they would prove the emulator, not the suite."""
    if case.healthy:
        return []
    spoiled = case.spoils if consequences else ()
    wanted = {*case.catches, *case.also, *spoiled, *BYSTANDERS} - set(case.not_run)
    unknown = sorted(wanted - set(SUITE_ORDER))
    if unknown:  # a catcher left out of the run would leave its fault unjudged
        raise ValueError(f"{case.name}: no such suite {unknown} (known: {SUITE_ORDER})")
    return [s for s in SUITE_ORDER if s in wanted]


def healthy_case(seed: int) -> Case:
    return Case(name=f"healthy-seed{seed}", seed=seed)


def load_data(path: Path = DEFAULT_CASES) -> Any:
    """The matrix data module (``CASES``, ``DOMAINS``, ``CI_PLAN``), imported by path."""
    spec = importlib.util.spec_from_file_location("labtest_matrix_data", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_cases(path: Path = DEFAULT_CASES) -> dict[str, Case]:
    """``CASES`` (fault kind -> Case, the fixed placements) from a matrix data module."""
    return dict(load_data(path).CASES)


def faulted_testbed(base: Path, case: Case, path: Path) -> Path:
    """Write a copy of ``base`` carrying the case's faults, seed and overrides to ``path``.

    The copy lives elsewhere, so its ``limits:`` is made absolute.
    """
    doc = yaml.safe_load(base.read_text(encoding="utf-8"))
    if doc.get("limits"):
        doc["limits"] = str((base.parent / doc["limits"]).resolve())
    emulation = doc["emulation"] = doc.get("emulation") or {}
    emulation["faults"] = [dict(f) for f in case.faults]
    if case.seed is not None:
        emulation["seed"] = case.seed
    if case.time_scale is not None:
        emulation["time_scale"] = case.time_scale
    for name, override in case.devices.items():
        doc["devices"][name].update(override)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path
