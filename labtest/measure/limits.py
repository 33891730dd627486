"""Limits: pass criteria as data, each number with where it came from.

A limit is a band ``low <= value <= high`` (either side optional, inclusive or
not) plus an optional tighter *marginal* band: inside the limits but outside the
marginal band is MARGINAL — it passes, and it is flagged for the engineer.
"""

from __future__ import annotations

import hashlib
import math
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from labtest.yamlsource import read, validate


class Verdict(StrEnum):
    PASS = "PASS"
    MARGINAL = "MARGINAL"
    FAIL = "FAIL"


class Limit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    marginal_low: float | None = None
    marginal_high: float | None = None
    unit: str = ""
    source: str = Field(min_length=3, description="where the number comes from")
    description: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Limit:
        if self.low is None and self.high is None:
            raise ValueError("a limit needs 'low', 'high' or both")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        for name in ("marginal_low", "marginal_high"):
            m = getattr(self, name)
            if m is not None and not _inside(m, self.low, self.high, True, True):
                raise ValueError(f"{name} {m} lies outside the limits")
        return self

    def judge(self, value: float) -> Verdict:
        if math.isnan(value):
            return Verdict.FAIL
        if not _inside(value, self.low, self.high, self.low_inclusive, self.high_inclusive):
            return Verdict.FAIL
        if not _inside(value, self.marginal_low, self.marginal_high, True, True):
            return Verdict.MARGINAL
        return Verdict.PASS

    def describe(self) -> str:
        lo = "" if self.low is None else f"{_fmt(self.low)} {'<=' if self.low_inclusive else '<'} "
        hi = (
            ""
            if self.high is None
            else f" {'<=' if self.high_inclusive else '<'} {_fmt(self.high)}"
        )
        unit = f" {self.unit}" if self.unit else ""
        return f"{lo}x{hi}{unit}"


def _inside(v: float, low: float | None, high: float | None, lo_inc: bool, hi_inc: bool) -> bool:
    if low is not None and (v < low or (v == low and not lo_inc)):
        return False
    return not (high is not None and (v > high or (v == high and not hi_inc)))


def _fmt(v: float) -> str:
    return f"{v:.4g}" if (v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6)) else f"{v:g}"


class Waiver(BaseModel):
    """An accepted hole: ``requirement`` need not be proven on ``units`` (names or ``"*"``).

    A waiver covers cells that could not be proven; it never turns a failure into a pass.
    It is listed on the sign-off with its reason and source.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirement: str = Field(min_length=1)
    units: list[str] | Literal["*"] = "*"
    reason: str = Field(min_length=3)
    source: str = Field(min_length=3, description="who accepted it, or the document saying so")

    @model_validator(mode="after")
    def _units_once(self) -> Waiver:
        if isinstance(self.units, list):
            twice = sorted({u for u in self.units if self.units.count(u) > 1})
            if twice:
                raise ValueError(f"units named twice: {', '.join(twice)}")
        return self

    def covers(self, requirement: str, unit: str) -> bool:
        return requirement == self.requirement and (self.units == "*" or unit in self.units)


class LimitsProfile(BaseModel):
    """A YAML file ``{profile: NAME, description: ..., limits: {KEY: Limit}, waivers: [...]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: str
    description: str = ""
    limits: dict[str, Limit]
    waivers: list[Waiver] = Field(default_factory=list)
    sha256: str = ""
    path: Path | None = None

    def get(self, key: str) -> Limit:
        try:
            return self.limits[key]
        except KeyError:
            raise KeyError(
                f"limits profile {self.profile!r} has no limit {key!r}; it has: "
                + ", ".join(sorted(self.limits))
            ) from None


def load_limits(path: str | Path) -> LimitsProfile:
    """Load a limits profile; every error is located (file:line:col, field path)."""
    path = Path(path)
    src = read(path)
    profile = validate(src, LimitsProfile)
    src.raise_if_problems()
    assert profile is not None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return profile.model_copy(update={"sha256": digest, "path": path})
