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


def _run(read_model: Any, fault: tuple[str, str, float] | None, minutes: float,
         every_s: float = 10.0) -> tuple[float | None, Any]:
    """The continuous doctor on the stepped model, one reading every ``every_s`` (its
    default interval): when it first paged, and that report."""
    tb = load_testbed(default_testbed())
    fabric = Fabric(tb)
    doctor = Doctor(Plan.of(tb), load_limits(tb.limits))  # type: ignore[arg-type]
    if fault is not None:
        kind, target, rate = fault
        fabric.inject(kind, target, drift_db_per_hour=rate)
    t = 0.0
    while t < minutes * 60.0:
        t0, t = t, t + every_s
        fabric.advance(every_s)
        report = doctor.step(read_model(fabric, tb, t0, t))
        if report.suspects:
            return t, report
    return None, None


@pytest.mark.parametrize(("port", "rate"), [("leaf1:Ethernet0", 10.0),
                                            ("host3:eth0", 20.0), ("spine2:Ethernet4/1", 14.0)])
def test_the_continuous_doctor_pages_a_fast_failing_laser_by_its_bias(
        read_model: Any, port: str, rate: float) -> None:
    """10-20 dB/h (the evaluation's range): 4-8 % more bias a minute, under the 10 % between
    two reads 20 s apart, so the continuous doctor never paged it while Tx power held
    (issue 34's onset evaluation: 3 of 5 missed). Judged against the reading ten minutes
    back (``service.REFERENCE_S``), it is paged once 10 % have gathered: 0.41 dB of loss,
    2.5 min at 10 dB/h."""
    paged_s, report = _run(read_model, ("failing_laser", port, rate), minutes=8)
    assert paged_s is not None, f"{port} at {rate} dB/h not paged in 8 min"
    suspect = report.suspects[0]
    assert port in suspect.unit, report.suspects
    assert any(e.metric == "tx_bias_change_pct" and "since the reference reading" in e.text
               for e in suspect.evidence), suspect.evidence
    assert paged_s <= 0.41 / rate * 3600 + 60, paged_s  # 10 % gathered, then a read or two


def test_a_healthy_lab_watched_half_an_hour_pages_nothing(read_model: Any) -> None:
    assert _run(read_model, None, minutes=30) == (None, None)
