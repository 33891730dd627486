"""CUSUM drift detection and the time-to-limit forecast."""

from __future__ import annotations

import numpy as np

from labtest.doctor.change import Cusum


def test_no_alarm_on_stationary_noise() -> None:
    rng = np.random.default_rng(3)
    det = Cusum(resolution=0.01, low=-5.9, high=4.0)
    alarms = [det.update(60.0 * i, 0.5 + rng.normal(0, 0.05), "rx_power_dbm") for i in range(200)]
    assert not any(alarms)


def test_drift_down_is_detected_with_a_forecast_of_the_crossing() -> None:
    rng = np.random.default_rng(4)
    det = Cusum(resolution=0.01, low=-5.9, high=4.0)
    slope_per_h = -0.5  # dB per hour: a failing laser's Rx at the far end
    drift = None
    for i in range(400):
        t = 60.0 * i  # one reading a minute
        x = 0.5 + (slope_per_h * max(0.0, t - 600) / 3600) + rng.normal(0, 0.05)
        drift = det.update(t, x, "rx_power_dbm")
        if drift is not None:
            break
    assert drift is not None and drift.direction == "down"
    assert drift.hours_to_limit is not None
    truth_h = (drift.value - (-5.9)) / 0.5
    assert abs(drift.hours_to_limit - truth_h) < 0.5 * truth_h
    assert "predicted to cross limit -5.9" in drift.text("leaf1:Ethernet0")
