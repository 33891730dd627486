"""Measurements: a named value with its unit, limit, verdict and provenance.

A test records every measurement before anything fails (OpenHTF style), so a
failing link still leaves its full evidence; the plugin fails the test at the
end of its body if any measurement is FAIL.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from labtest.errors import LimitFailure, UndeclaredLimit
from labtest.measure.limits import Limit, LimitsProfile, Verdict


@dataclass(frozen=True)
class Measurement:
    name: str
    value: float
    unit: str
    verdict: Verdict
    limit: Limit | None
    limit_key: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    timestamp_s: float = field(default_factory=time.time)

    def message(self) -> str:
        where = "".join(f" {k}={v}" for k, v in self.labels.items())
        value = f"{_value(self.value)} {self.unit}".rstrip()
        if self.limit is None:
            return f"{self.name}{where}: {value} (recorded, no limit)"
        return (
            f"{self.name}{where}: {value} is {self.verdict.value}; "
            f"limit {self.limit.describe()} (source: {self.limit.source})"
        )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["limit"] = self.limit.model_dump() if self.limit else None
        out["verdict"] = self.verdict.value
        out["value"] = stored_value(self.value)
        return out


def _value(v: float) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def stored_value(v: float) -> float | str | None:
    """A value as the results document stores it (JSON has no infinity or NaN)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def read_value(v: object) -> float | None:
    """A results document's measured value as a number: JSON has no infinity, so a reading
    that never ended (a reroute that never converged) is stored as "inf" and read back as
    one; None for no number (NaN, a missing value, a text reading)."""
    if isinstance(v, int | float):  # a bool too: a yes/no reading is 1 or 0
        return float(v)
    if isinstance(v, str) and v in ("inf", "-inf"):
        return float(v)
    return None


@dataclass(frozen=True)
class NotProven:
    """An explicit hole: ``requirement`` could not be judged on the unit ``labels`` name."""

    requirement: str
    reason: str
    labels: dict[str, str] = field(default_factory=dict)

    def message(self) -> str:
        where = "".join(f" {k}={v}" for k, v in self.labels.items())
        return f"NOT PROVEN {self.requirement}{where}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Sink = Callable[[Measurement], None]
NoteSink = Callable[[NotProven], None]


class Recorder:
    """What a test calls: ``measure("rx_power_dbm", -3.1, unit="dBm", key="optics.rx_power")``."""

    def __init__(
        self,
        profile: LimitsProfile | None = None,
        sinks: list[Sink] | None = None,
        note_sinks: list[NoteSink] | None = None,
        *,
        test: str | None = None,
        judges: tuple[str, ...] | None = None,
    ):
        """``test`` names the running test and turns on its declaration: only the keys
        in ``judges`` (its ``@pytest.mark.judges``; ``None`` = no marker) may be recorded,
        a key's ``KEY@VARIANT`` included. Without ``test`` (a script) nothing is refused."""
        self.profile = profile
        self.sinks = list(sinks or [])
        self.note_sinks = list(note_sinks or [])
        self.test = test
        self.judges = judges
        self.measurements: list[Measurement] = []
        self.not_proven_notes: list[NotProven] = []
        self.refused: UndeclaredLimit | None = None  # kept: a test may swallow the raise

    def __call__(
        self,
        name: str,
        value: float,
        *,
        unit: str | None = None,
        key: str | None = None,
        limit: Limit | None = None,
        **labels: Any,
    ) -> Measurement:
        """Record ``value``; the limit comes from ``limit`` or from ``key`` in the profile."""
        self._declared(key)
        if limit is None and key is not None:
            if self.profile is None:
                raise LookupError(
                    f"measurement {name!r} needs limit {key!r} but no --limits profile"
                )
            limit = self.profile.get(key)
        if limit is not None and unit is not None and limit.unit and unit != limit.unit:
            raise ValueError(
                f"measurement {name!r} is in {unit!r} but limit {key or ''!r} is in {limit.unit!r}"
            )
        value = float(value)
        verdict = limit.judge(value) if limit is not None else Verdict.PASS
        m = Measurement(
            name=name,
            value=value,
            unit=unit if unit is not None else (limit.unit if limit else ""),
            verdict=verdict,
            limit=limit,
            limit_key=key,
            labels={k: str(v) for k, v in labels.items()},
        )
        self.measurements.append(m)
        for sink in self.sinks:
            sink(m)
        return m

    def not_proven(self, requirement: str, reason: str, **unit_labels: Any) -> NotProven:
        """Say that ``requirement`` could not be judged on this unit, and why.

        ``unit_labels`` name the unit as a measurement would (``link=``, ``device=`` [+
        ``port=``], ``pair=``). The coverage engine shows the cell as *not proven* with
        ``reason``; the run cannot be PASS unless the profile waives it.
        """
        if not reason.strip():
            raise ValueError(f"not_proven({requirement!r}) needs a reason")
        self._declared(requirement)
        note = NotProven(requirement, reason.strip(), {k: str(v) for k, v in unit_labels.items()})
        self.not_proven_notes.append(note)
        for sink in self.note_sinks:
            sink(note)
        return note

    def _declared(self, key: str | None) -> None:
        """Refuse a key the running test does not declare, or any record without the marker."""
        if self.test is None:
            return
        if self.judges is not None and (
            key is None or key in self.judges or key.split("@", 1)[0] in self.judges
        ):
            return
        refusal = UndeclaredLimit(self.test, key, self.judges)
        self.refused = self.refused or refusal
        raise refusal

    @property
    def failures(self) -> list[Measurement]:
        return [m for m in self.measurements if m.verdict is Verdict.FAIL]

    def verdict(self) -> Verdict:
        verdicts = {m.verdict for m in self.measurements}
        for v in (Verdict.FAIL, Verdict.MARGINAL):
            if v in verdicts:
                return v
        return Verdict.PASS

    def check(self) -> None:
        """Raise the first refusal (the test is broken), else ``LimitFailure`` naming
        every failed measurement."""
        if self.refused is not None:
            raise self.refused
        failed = self.failures
        if failed:
            lines = "\n".join(f"  {m.message()}" for m in failed)
            raise LimitFailure(f"{len(failed)} measurement(s) outside limits:\n{lines}")

    def to_json(self) -> str:
        return json.dumps([m.as_dict() for m in self.measurements], indent=2, default=str)
