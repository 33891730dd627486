"""The Clock capability: the device's own time, for windows its counters were kept over.

A counter read twice over SSH spans the *device's* time between the two reads,
not the test host's: the two differ when the reads queue behind a slow CLI, and
by a constant factor on an emulated lab whose devices run faster than the wall
clock. A suite that turns a counter delta into a rate or a count of codewords
brackets each read with ``device_time_s()`` and uses the device-clock interval.
Only differences of two readings on the same device are meaningful: the
epoch offset (NTP, a manually set clock) cancels out.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def device_time_s(self) -> float:
        """The device's current time (seconds since the Unix epoch, sub-second resolution)."""
        ...
