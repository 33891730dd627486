"""A failing laser in the fabric model: the doctor forecasts the crossing before the link fails."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from labtest.doctor.judge import Plan
from labtest.doctor.service import Doctor
from labtest.emulation.model.fabric import Fabric
from labtest.measure import load_limits
from labtest.run import default_testbed
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[2]
LINK = "leaf1:Ethernet0--spine1:Ethernet0"


@pytest.fixture
def read_model(monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location("doctor_eval", ROOT / "bench" / "doctor_eval.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "doctor_eval", mod)
    spec.loader.exec_module(mod)
    return mod.read_model


def test_failing_laser_is_forecast_before_it_pages_and_nothing_else_drifts(read_model: Any
                                                                           ) -> None:
    tb = load_testbed(default_testbed())
    fabric = Fabric(tb)
    doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
    fabric.inject("failing_laser", "leaf1:Ethernet0", drift_db_per_hour=2.0)
    drifts: list[tuple[float, str, Any]] = []
    paged_at = None
    t = 0.0
    while t < 4 * 3600 and paged_at is None:  # one reading a minute
        t0, t = t, t + 60.0
        fabric.advance(60.0)
        report = doctor.step(read_model(fabric, tb, t0, t))
        drifts += [(t, where, d) for where, d in report.drifts]
        if report.suspects:
            assert report.suspects[0].unit == LINK
            paged_at = t
    assert paged_at is not None
    assert drifts and all(doctor.plan.unit(w) == LINK for _, w, _ in drifts), drifts
    first_t, _, first = drifts[0]
    assert first_t < paged_at and first.hours_to_limit is not None
    assert "predicted to cross limit" in first.text("x")
