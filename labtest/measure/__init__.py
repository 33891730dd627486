"""Measurements with units, limits and verdicts; limits profiles as data."""

from labtest.measure.limits import Limit, LimitsProfile, Verdict, load_limits
from labtest.measure.measurement import Measurement, Recorder

__all__ = ["Limit", "LimitsProfile", "Measurement", "Recorder", "Verdict", "load_limits"]
