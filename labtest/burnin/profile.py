"""A chamber profile as a timeline of setpoint commands on the run's clock.

The chamber itself ramps its air at the commanded rate (ESPEC operating model,
``labtest.drivers.instruments.chamber``), so a profile is just "at run time t, set ramp
rate r and setpoint T": no polling loop waits for a temperature, and the same
timeline works on wall time, on a scaled virtual clock and on a stepped one.
A ramp's duration is the temperature change over the rate, starting from where
the previous segment left the air. The profile's schema (the ``chamber:`` part of a
station file) is here too, so the station file's loader reads it from below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    """A part of a station file: unknown keys refused, frozen (every model of the file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --- the schema (a station file's ``chamber:``) ------------------------------------------


class Soak(Strict):
    kind: Literal["soak"]
    temperature_c: float = Field(ge=-70, le=180)
    duration_h: float = Field(gt=0)


class Ramp(Strict):
    kind: Literal["ramp"]
    to_c: float = Field(ge=-70, le=180)
    rate_c_per_min: float = Field(gt=0, le=30)


class Cycles(Strict):
    kind: Literal["cycles"]
    count: int = Field(ge=1, le=1000)
    low_c: float = Field(ge=-70, le=180)
    high_c: float = Field(ge=-70, le=180)
    rate_c_per_min: float = Field(gt=0, le=30)
    dwell_min: float = Field(0.0, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Cycles:
        if self.low_c >= self.high_c:
            raise ValueError(f"low_c {self.low_c} must be below high_c {self.high_c}")
        return self


Segment = Annotated[Soak | Ramp | Cycles, Field(discriminator="kind")]


class Chamber(Strict):
    device: str
    start_c: float = Field(25.0, description="air temperature when the run starts")
    profile: list[Segment] = Field(min_length=1)
    at_end: Literal["standby", "hold"] = "standby"


# --- the timeline ------------------------------------------------------------------------

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
