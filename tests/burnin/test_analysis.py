"""Analysis on synthetic runs: drift with temperature correction, counters, attribution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from burnin_helpers import LIMITS

from labtest.burnin.analysis import analyse, flaps, increments, trend
from labtest.burnin.backends import open_store
from labtest.burnin.store import Reading, Run, Sample, Unit
from labtest.measure import load_limits

HOURS = 24
PERIOD_S = 600.0


def test_trend_separates_ageing_from_temperature() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(0, HOURS * 3600 + 1, PERIOD_S)
    temp = 40 + 20 * t / (HOURS * 3600) + 3 * np.sin(2 * np.pi * t / (6 * 3600))  # 40 -> 60 C
    bias = 55 + 0.5 * t / 3600 + 0.3 * (temp - 45) + rng.normal(0, 0.2, t.size)
    tr = trend(t, bias, temp)
    assert tr.compensated
    assert tr.slope_per_h == pytest.approx(0.5, abs=0.02)
    assert tr.drift == pytest.approx(0.5 * (HOURS - 1), abs=0.6)  # window means 1 h apart
    raw = trend(t, bias)
    assert raw.drift > tr.drift + 4.0  # uncorrected, the warmer end looks like more ageing
    flat = trend(t, 50 + rng.normal(0, 0.05, t.size))
    assert abs(flat.drift) < 0.05 and not flat.compensated


def test_counter_increments_survive_a_reset_and_flaps_count_downs() -> None:
    assert increments(np.array([0.0, 5, 7, 2, 4])).tolist() == [0, 5, 2, 2, 2]
    assert flaps(np.array([1.0, 1, 0, 1, 0, 0, 1])) == 2
    assert flaps(np.array([0.0, 0, 0])) == 0


def _write_run(tmp_path: Path, *, tx_drop_db: float, rx_drop_db: float, ber: float) -> tuple:
    """Two switches, one link P=sw1:E0 (module SA) <-> Q=sw2:E0 (module SB), PRBS on it.

    SA's laser loses ``tx_drop_db`` over the run; SB receives ``rx_drop_db`` less light and
    its PRBS checker sees ``ber``.
    """
    store = open_store(tmp_path / "b.db", synchronous="normal")
    duration = HOURS * 3600.0
    n = int(duration / PERIOD_S) + 1
    streams = [["dom", "sw1", PERIOD_S, False], ["dom", "sw2", PERIOD_S, False],
               ["prbs", "sw1:E0--sw2:E0", PERIOD_S, True]]
    info = {"streams": streams, "ports": [["sw1", "E0", "sw2:E0", "prbs"],
                                          ["sw2", "E0", "sw1:E0", "prbs"]]}
    store.create_run(Run("r", "st", "complete", "2025-01-01T00:00:00+00:00", duration,
                         info=info))
    th = {"tx_power_dbm": {"low_alarm": -5.9, "low_warn": -2.9, "high_warn": 4, "high_alarm": 7}}
    store.put_units("r", [
        Unit("S1", "switch", "sw1", "", True), Unit("S2", "switch", "sw2", "", True),
        Unit("SA", "module", "sw1", "E0", True, {"thresholds": th}),
        Unit("SB", "module", "sw2", "E0", True, {"thresholds": th}),
    ])
    for k in range(n):
        f = k / (n - 1)
        for dev, serial, tx, rx in (("sw1", "SA", 1.0 - tx_drop_db * f, 0.5),
                                    ("sw2", "SB", 1.0, 0.5 - rx_drop_db * f)):
            port = f"{dev}:E0"
            samples = [Sample(serial, port, 0, "temperature_c", 45.0, "degC"),
                       Sample(serial, port, 1, "tx_bias_ma", 55.0, "mA"),
                       Sample(serial, port, 1, "tx_power_dbm", tx, "dBm"),
                       Sample(serial, port, 1, "rx_power_dbm", rx, "dBm")]
            store.write("r", Reading("dom", dev, k, k * PERIOD_S, 0.0, samples))
        if k < n - 1:
            prbs = [Sample("S1", "sw1:E0", 1, "prbs_ber", 1e-12, ""),
                    Sample("S1", "sw1:E0", 1, "prbs_locked", 1.0, "bool"),
                    Sample("S2", "sw2:E0", 1, "prbs_ber", ber * f, ""),
                    Sample("S2", "sw2:E0", 1, "prbs_locked", 1.0, "bool")]
            store.write("r", Reading("prbs", "sw1:E0--sw2:E0", k, (k + 1) * PERIOD_S, 0.0, prbs))
    return store, load_limits(LIMITS)


def test_a_failing_transmitter_takes_the_blame_for_its_far_end(tmp_path: Path) -> None:
    store, limits = _write_run(tmp_path, tx_drop_db=3.0, rx_drop_db=3.0, ber=1e-4)
    report = analyse(store, "r", limits)
    verdicts = {u.unit.serial: u.verdict for u in report.units}
    assert verdicts == {"S1": "PASS", "S2": "PASS", "SA": "FAIL", "SB": "PASS"}
    reasons = "\n".join(report.by_serial("SA").reasons)
    assert "tx power drift -2.88 dB (0.94 -> -1.94" in reasons  # window means, 1 h in
    assert "sw2:E0 lane 1 (far end of sw1:E0): rx power drift" in reasons
    assert "PRBS BER max 9.93e-05" in reasons and "caused by this unit's transmitter" in reasons
    assert all(u.coverage_pct == 100.0 for u in report.units)


def test_errors_at_full_light_are_the_receivers(tmp_path: Path) -> None:
    store, limits = _write_run(tmp_path, tx_drop_db=0.0, rx_drop_db=0.0, ber=1e-4)
    report = analyse(store, "r", limits)
    verdicts = {u.unit.serial: u.verdict for u in report.units}
    assert verdicts == {"S1": "PASS", "S2": "PASS", "SA": "PASS", "SB": "FAIL"}
    assert report.by_serial("SB").reasons == [
        "sw2:E0 lane 1: PRBS BER max 9.93e-05; limit x <= 5e-07"]


def test_missing_readings_make_a_unit_incomplete(tmp_path: Path) -> None:
    store, limits = _write_run(tmp_path, tx_drop_db=0.0, rx_drop_db=0.0, ber=0.0)
    with store._lock:  # simulate a station that could not read sw2 for a while
        store._db.execute("DELETE FROM readings WHERE target='sw2' AND sched_index > 100")
    report = analyse(store, "r", limits)
    sb = report.by_serial("SB")
    assert sb.verdict == "INCOMPLETE" and "cover 69.7 % of the schedule" in sb.reasons[0]
    assert report.by_serial("SA").verdict == "PASS"
