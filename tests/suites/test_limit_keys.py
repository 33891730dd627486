"""The limit keys each suite test declares (``@pytest.mark.judges``), checked against both
limits profiles for every suite family, without a lab: every declared key has a limit
with a source in both profiles, and every limit of a family is judged by some test.
At run time ``measure`` refuses any key a test did not declare, so the declarations are
the truth this static check reads. The stress profile is at least as strict."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from labtest.measure import Limit, load_limits

REPO = Path(__file__).resolve().parents[2]
SUITES = REPO / "suites"
PROFILES = ("acceptance-400g", "stress-400g")
#: every folder of suites/ with a test module is a family
FAMILIES = sorted(p.parent.name for p in SUITES.glob("*/test_*.py"))
#: declared keys a suite judges against a limit it builds itself (not in any profile), and why
COMPUTED = {
    "transceiver.link_loss_db": "the link budget TRANSCEIVER-1.5 adds up per link from the "
    "channel insertion loss, fibre, connector and monitor-allowance entries",
}
#: profile keys no test records under, and why
REFERENCE = {
    "transceiver.channel_insertion_loss_db": "a term of the computed transceiver.link_loss_db",
    "transceiver.connector_loss_db": "a term of the computed transceiver.link_loss_db",
    "transceiver.fibre_attenuation_db_per_km": "a term of the computed transceiver.link_loss_db",
    "transceiver.link_loss_monitor_allowance_db": "a term of the computed "
    "transceiver.link_loss_db",
}


def _modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"labtest.suites.{p.parent.name}.{p.stem}")
        for p in sorted(SUITES.glob("*/test_*.py"))
    ]


def _marks(obj: Any) -> list[pytest.Mark]:
    marks = getattr(obj, "pytestmark", [])
    return [getattr(m, "mark", m) for m in (marks if isinstance(marks, list) else [marks])]


def _collected(module: ModuleType) -> list[tuple[str, Any, list[pytest.Mark]]]:
    """What pytest collects from a suite module: ``test_*`` functions and the ``test_*``
    methods of ``Test*`` classes, each with the marks above it (module, class, own)."""
    out = []
    for name, obj in vars(module).items():
        if name.startswith("test_") and inspect.isfunction(obj):
            out.append((name, obj, _marks(module) + _marks(obj)))
        elif name.startswith("Test") and inspect.isclass(obj):
            for method, fn in vars(obj).items():
                if method.startswith("test_") and inspect.isfunction(fn):
                    out.append((f"{name}::{method}", fn,
                                _marks(module) + _marks(obj) + _marks(fn)))
    return out


def _tests() -> dict[str, tuple[Any, tuple[str, ...] | None]]:
    """``family/test_x.py::test_y`` -> (function, declared keys or None without a marker)."""
    out: dict[str, tuple[Any, tuple[str, ...] | None]] = {}
    for module in _modules():
        family = module.__name__.split(".")[2]
        for name, fn, all_marks in _collected(module):
            marks = [m for m in all_marks if m.name == "judges"]
            keys = tuple(k for m in marks for k in m.args) if marks else None
            out[f"{family}/{module.__name__.split('.')[-1]}.py::{name}"] = (fn, keys)
    return out


def test_a_test_class_method_is_seen_with_its_class_marks() -> None:
    module = ModuleType("labtest.suites.demo.test_demo")

    @pytest.mark.judges("link.flaps")
    class TestDemo:
        def test_inside(self, measure: Any) -> None: ...

        def helper(self) -> None: ...

    module.TestDemo = TestDemo  # type: ignore[attr-defined]
    ((name, _, marks),) = _collected(module)
    assert name == "TestDemo::test_inside" and [m.args for m in marks] == [("link.flaps",)]


def _declared() -> dict[str, set[str]]:
    """key -> the tests declaring it."""
    by_key: dict[str, set[str]] = {}
    for test, (_, keys) in _tests().items():
        for key in keys or ():
            by_key.setdefault(key, set()).add(test)
    return by_key


def _profile(name: str) -> dict[str, Limit]:
    return load_limits(SUITES / "limits" / f"{name}.yaml").limits


def test_every_family_is_seen() -> None:
    assert {"cabling", "link", "transceiver", "roce", "congestion", "latency"} <= set(FAMILIES)
    tests = _tests()
    assert len(tests) >= 30
    for family in FAMILIES:
        assert any(t.startswith(f"{family}/") and keys for t, (_, keys) in tests.items()), family


def test_every_test_that_measures_declares_what_it_judges() -> None:
    bare = [t for t, (fn, keys) in _tests().items()
            if "measure" in inspect.signature(fn).parameters and keys is None]
    assert not bare, f"tests taking `measure` without @pytest.mark.judges: {bare}"
    for test, (_, keys) in _tests().items():
        assert keys is None or (keys and all(isinstance(k, str) for k in keys)), test
        assert keys is None or len(set(keys)) == len(keys), f"{test} declares a key twice"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_declared_key_is_in_the_profile_with_a_source(profile: str) -> None:
    limits = _profile(profile)
    declared = _declared()
    missing = {k: sorted(t) for k, t in declared.items() if k not in COMPUTED and k not in limits}
    assert not missing, f"{profile} lacks {missing}"
    thin = sorted(k for k in _declared() if k in limits and len(limits[k].source) <= 20)
    assert not thin, f"{profile}: limits without a real source: {thin}"
    computed_listed = sorted(k for k in COMPUTED if k in limits)
    assert not computed_listed, f"{profile} has {computed_listed}: not computed any more?"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_family_limit_is_judged_or_listed(profile: str) -> None:
    limits = _profile(profile)
    ours = {k: v for k, v in limits.items() if k.split(".")[0] in FAMILIES}
    assert all(len(v.source) > 20 for v in ours.values()), profile
    declared = set(_declared())
    unjudged = sorted(
        k for k in ours if k.split("@")[0] not in declared and k.split("@")[0] not in REFERENCE
    )
    assert not unjudged, f"{profile}: limits no test judges: {unjudged}"
    stale = sorted(k for k in REFERENCE if k in declared or k not in limits)
    assert not stale, f"REFERENCE entries now judged or gone from {profile}: {stale}"


def test_stress_is_at_least_as_strict() -> None:
    acc, stress = _profile("acceptance-400g"), _profile("stress-400g")
    for key in ("link.prbs_target_ber", "link.fec_pre_fec_ber", "link.fec_tail_bin",
                "transceiver.temperature_c"):
        assert (stress[key].high or 0) <= (acc[key].high or 0), key
    for key in ("link.prbs_confidence", "link.watch_s", "transceiver.dom_interval_s"):
        assert (stress[key].low or 0) >= (acc[key].low or 0), key
