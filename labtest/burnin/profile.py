"""A chamber profile as a timeline of setpoint commands on the run's clock.

The chamber itself ramps its air at the commanded rate (ESPEC operating model,
``labtest.drivers.instruments.chamber``), so a profile is just "at run time t, set ramp
rate r and setpoint T": no polling loop waits for a temperature, and the same
timeline works on wall time, on a scaled virtual clock and on a stepped one.
A ramp's duration is the temperature change over the rate, starting from where
the previous segment left the air.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtest.burnin.station import Chamber, Cycles, Ramp, Soak

#: the rate a soak is commanded with (it starts where the air already is; any rate works)
SOAK_RATE_C_PER_MIN = 1.0


@dataclass(frozen=True)
class Step:
    """From ``t_s`` on, the chamber holds ``setpoint_c``, reached at ``rate_c_per_min``."""

    t_s: float
    setpoint_c: float
    rate_c_per_min: float
    phase: str


def timeline(chamber: Chamber) -> list[Step]:
    steps: list[Step] = []
    t, air = 0.0, chamber.start_c
    for segment in chamber.profile:
        if isinstance(segment, Soak):
            steps.append(Step(t, segment.temperature_c, SOAK_RATE_C_PER_MIN,
                              f"soak {segment.temperature_c:g} C"))
            air = segment.temperature_c
            t += segment.duration_h * 3600.0
        elif isinstance(segment, Ramp):
            steps.append(Step(t, segment.to_c, segment.rate_c_per_min,
                              f"ramp to {segment.to_c:g} C"))
            t += _ramp_s(air, segment.to_c, segment.rate_c_per_min)
            air = segment.to_c
        else:
            t, air = _cycles(steps, t, air, segment)
    return steps


def _cycles(steps: list[Step], t: float, air: float, c: Cycles) -> tuple[float, float]:
    dwell_s = c.dwell_min * 60.0
    for i in range(1, c.count + 1):
        for target, word in ((c.high_c, "high"), (c.low_c, "low")):
            steps.append(Step(t, target, c.rate_c_per_min, f"cycle {i}/{c.count} {word}"))
            t += _ramp_s(air, target, c.rate_c_per_min) + dwell_s
            air = target
    return t, air


def _ramp_s(from_c: float, to_c: float, rate_c_per_min: float) -> float:
    return abs(to_c - from_c) / rate_c_per_min * 60.0


def profile_duration_s(chamber: Chamber) -> float:
    """When the last segment ends (a final soak's duration included)."""
    t, air = 0.0, chamber.start_c
    for segment in chamber.profile:
        if isinstance(segment, Soak):
            t += segment.duration_h * 3600.0
            air = segment.temperature_c
        elif isinstance(segment, Ramp):
            t += _ramp_s(air, segment.to_c, segment.rate_c_per_min)
            air = segment.to_c
        else:
            t, air = _cycles([], t, air, segment)
    return t


def active(steps: list[Step], t_s: float) -> Step | None:
    """The step in force at run time ``t_s`` (None before the first)."""
    current = None
    for step in steps:
        if step.t_s <= t_s:
            current = step
        else:
            break
    return current
