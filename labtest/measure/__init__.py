"""Measurements with units, limits and verdicts; limits profiles as data."""

from labtest.measure.limits import Limit, LimitsProfile, Verdict, Waiver, load_limits
from labtest.measure.measurement import Measurement, NotProven, Recorder

__all__ = [
    "Limit",
    "LimitsProfile",
    "Measurement",
    "NotProven",
    "Recorder",
    "Verdict",
    "Waiver",
    "load_limits",
]
