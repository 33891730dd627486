"""Station files: valid ones load; every mistake is reported at once with file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest
from burnin_helpers import LIMITS, MINI_STATION, MINI_TESTBED

from labtest.burnin.profile import Chamber, active, profile_duration_s, timeline
from labtest.burnin.station import load_station
from labtest.errors import ConfigError


def test_the_example_stations_load() -> None:
    root = Path(__file__).parents[2]
    station = load_station(root / "stations" / "emulated-leafspine.yaml")
    assert station.duration_s == 72 * 3600
    assert station.units.devices == ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"]
    assert station.testbed == root / "stations" / ".." / "testbeds/emulated/leafspine.yaml"
    assert len(station.sha256) == 64
    assert load_station(root / "stations" / "example-lab.yaml").duration_h == 48
    mini = load_station(MINI_STATION)
    assert set(mini.monitors.enabled()) == {"dom", "fec", "counters", "prbs", "chamber"}


BAD = f"""\
station: bad station
testbed: {MINI_TESTBED}
limits: {LIMITS}
duration_h: 1
units:
  devices: [sw1, sw9, sw1]
  optics: ["sw2:Ethernet99"]
  serials: {{"nowhere": "X1"}}
load: {{kind: prbs, patern: PRBS31Q}}
chamber:
  device: sw2
  profile:
    - {{kind: soak, temperature_c: 40, duration_h: 3}}
    - {{kind: cycles, count: 2, low_c: 50, high_c: 40, rate_c_per_min: 1}}
monitors:
  dom: {{period_s: 7200}}
  dmo: {{period_s: 60}}
"""


def test_every_mistake_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    with pytest.raises(ConfigError) as err:
        load_station(path)
    problems = err.value.problems
    text = "\n".join(problems)
    expected = [
        (1, "station: String should match pattern"),
        (6, "units.devices[1]: no device 'sw9' in the testbed"),
        (6, "units.devices[2]: device 'sw1' is listed twice"),
        (7, "units.optics[0]: device 'sw2' is not under test"),
        (8, "units.serials.nowhere: expected 'device' or 'device:port'"),
        (9, "load.prbs.patern: unknown field"),
        (11, "chamber.device: 'sw2' (sonic) is not a thermal chamber"),
        (14, "low_c 50.0 must be below high_c 40.0"),
        (16, "monitors.dom.period_s: period 7200 s is longer than the run"),
        (17, "monitors.dmo: unknown field"),
    ]
    for line, message in expected:
        assert any(p.startswith(f"{path}:{line}:") and message in p for p in problems), (
            f"line {line}: {message!r} not in:\n{text}"
        )


def test_a_broken_testbed_and_a_short_limits_profile_are_named(tmp_path: Path) -> None:
    testbed = tmp_path / "tb.yaml"
    testbed.write_text("name: tb\ndevices:\n  sw1: {role: leaf}\n")
    limits = tmp_path / "limits.yaml"
    limits.write_text("profile: p\nlimits:\n  burnin.link_flaps: {high: 0, source: test}\n")
    station = tmp_path / "station.yaml"
    station.write_text(
        f"station: s\ntestbed: {testbed}\nlimits: {limits}\nduration_h: 1\n"
        "units: {devices: [sw1]}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_station(station)
    text = "\n".join(err.value.problems)
    assert f"{station}:2:" in text and "testbed" in text
    assert f"{testbed}:3:" in text and "devices.sw1.driver: required field is missing" in text
    assert f"{station}:3:" in text and "lacks burnin.temperature_c" in text


def test_prbs_monitor_needs_a_prbs_load_and_profile_must_fit(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"station: s\ntestbed: {MINI_TESTBED}\nlimits: {LIMITS}\nduration_h: 1\n"
        "units: {devices: [sw1]}\n"
        "chamber: {device: chamber1, profile: [{kind: ramp, to_c: 100, rate_c_per_min: 1}]}\n"
        "monitors: {prbs: {period_s: 600}}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_station(path)
    text = "\n".join(err.value.problems)
    assert f"{path}:7:" in text and "needs 'load: {kind: prbs}'" in text
    assert f"{path}:6:" in text and "the profile lasts 1.25 h, longer than duration_h 1" in text


def test_profile_timeline_ramps_soaks_and_cycles() -> None:
    chamber = Chamber.model_validate({
        "device": "c", "start_c": 25, "profile": [
            {"kind": "ramp", "to_c": 45, "rate_c_per_min": 2},
            {"kind": "soak", "temperature_c": 45, "duration_h": 1},
            {"kind": "cycles", "count": 2, "low_c": 25, "high_c": 45, "rate_c_per_min": 1,
             "dwell_min": 10},
        ]})
    steps = timeline(chamber)
    assert [(s.t_s, s.setpoint_c) for s in steps] == [
        (0.0, 45), (600.0, 45),            # 20 C at 2 C/min = 10 min
        (4200.0, 45), (4800.0, 25),         # cycle 1: already at 45, dwell 10 min, then down
        (6600.0, 45), (8400.0, 25),       # 20 C at 1 C/min = 20 min, plus 10 min dwell
    ]
    assert steps[2].phase == "cycle 1/2 high"
    assert profile_duration_s(chamber) == 8400.0 + 1200 + 600
    assert active(steps, 599.0) is steps[0]
    assert active(steps, 5000.0) is steps[3]
