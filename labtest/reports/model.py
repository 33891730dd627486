"""The results document's types: ``labtest-results.json`` as the plugin writes it, once.

The writers build their parts as records of their own (``Measurement.as_dict``,
``Coverage.as_dict``, ``RootCause.as_dict``); this model is the one statement of what the
document holds, checked when it is written (a writer's slip fails the run's report, not a
reader months later) and when it is read (a file of another format is refused with where
it differs). Readers that want attributes take ``Results``; ``docs/results-schema.json`` is
its JSON Schema (``python -m labtest.reports.model`` writes it), for tools outside Python.

Open on purpose: a device's inventory entry and a testbed's device and link records are
what their drivers and the testbed file say (their own models own them), and labels are
the measurement's own words. Everything the verdict is made of is closed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from labtest.measure.limits import Limit, Verdict

#: the document's format; a reader refuses another (``labtest.reports.results.load``)
SCHEMA: Final = "labtest-results/1"

Outcome = Literal["passed", "failed", "broken", "skipped"]
RunVerdictName = Literal["PASS", "INCOMPLETE", "FAIL"]
CellStatus = Literal["proven", "waived", "failed", "broken", "not proven"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MeasurementRecord(_Closed):
    name: str
    #: a number; "inf"/"-inf" for a reading that never ended (JSON has no infinity); None
    #: for no number (NaN); a text reading as its text
    value: float | str | None
    unit: str = ""
    verdict: Verdict
    limit: Limit | None = None  # the limits profile's own model
    limit_key: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    timestamp_s: float | None = None


class NotProvenRecord(_Closed):
    requirement: str
    reason: str
    labels: dict[str, str] = Field(default_factory=dict)


class AttachmentRecord(_Closed):
    name: str
    source: str
    type: str = ""


class TestRecord(_Closed):
    nodeid: str
    name: str
    suite: str = ""
    plan_ids: list[str] = Field(default_factory=list)
    outcome: Outcome
    category: str | None = None
    message: str | None = None
    device: str | None = None
    skip_reason: str | None = None
    emulation_deviation: str | None = None
    duration_s: float = 0.0
    measurements: list[MeasurementRecord] = Field(default_factory=list)
    not_proven: list[NotProvenRecord] = Field(default_factory=list)
    labels: dict[str, list[str]] = Field(default_factory=dict)
    attachments: list[AttachmentRecord] = Field(default_factory=list)


class RequirementRecord(_Closed):
    id: str
    unit: str
    test: str
    suite: str = ""
    description: str = ""


class CellRecord(_Closed):
    requirement: str
    unit: str
    status: CellStatus
    reason: str = ""
    tests: list[str] = Field(default_factory=list)
    waiver: str = ""


class RequirementCoverageRecord(RequirementRecord):
    proven: int
    waived: int
    failed: int
    broken: int
    not_proven: int
    required: int
    summary: str
    cells: list[CellRecord]


class SuiteCoverage(_Closed):
    proven: int
    required: int


class CoverageRecord(_Closed):
    requirements: list[RequirementCoverageRecord] = Field(default_factory=list)
    by_suite: dict[str, SuiteCoverage] = Field(default_factory=dict)
    unjudged: list[str] = Field(default_factory=list)
    waivers: list[dict[str, JsonValue]] = Field(default_factory=list)  # as their files wrote them


class RootCauseRecord(_Closed):
    cause: str
    kind: str
    culprit: str
    evidence: list[str] = Field(default_factory=list)
    tests: list[str] = Field(default_factory=list)
    consequences: list[str] = Field(default_factory=list)
    not_runner_up: str = ""
    impact: list[str] = Field(default_factory=list)
    waiting_hosts: list[str] = Field(default_factory=list)
    score: float | None = None
    downstream_of: str = ""


class VerdictRecord(_Closed):
    """The run's verdict, computed once (``labtest.reports.results.verdict_record``) and
    read by every consumer: the CLI's table, Allure's environment, the sign-off."""

    verdict: RunVerdictName
    headline: str = ""
    reasons: list[str] = Field(default_factory=list)
    coverage: CoverageRecord
    root_causes: list[RootCauseRecord] = Field(default_factory=list)


class RunRecord(_Closed):
    started_utc: str
    finished_utc: str
    user: str
    host: str
    labtest_version: str
    git_commit: str | None = None
    labtest_commit: str | None = None
    python: str = ""
    pytest: str = ""
    args: list[str] = Field(default_factory=list)
    rootdir: str | None = None
    emulated: bool
    pytest_exit_status: int | None = None


class TestbedRecord(BaseModel):
    """The testbed as run (its devices and links are the testbed model's own records)."""

    model_config = ConfigDict(extra="allow")
    name: str
    file: str | None = None
    sha256: str | None = None
    devices: dict[str, JsonValue] = Field(default_factory=dict)
    links: list[JsonValue] = Field(default_factory=list)
    waivers: list[dict[str, JsonValue]] = Field(default_factory=list)


class LimitsFileRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    profile: str | None = None
    file: str | None = None
    sha256: str | None = None
    limits: dict[str, JsonValue] = Field(default_factory=dict)
    waivers: list[dict[str, JsonValue]] = Field(default_factory=list)


class Results(_Closed):
    """One run: who, where, on what, against which limits; every test; the verdict."""

    schema_: Literal["labtest-results/1"] = Field(SCHEMA, alias="schema")
    run: RunRecord
    testbed: TestbedRecord | None = None
    limits: LimitsFileRecord | None = None
    inventory: dict[str, JsonValue] = Field(default_factory=dict)  # drivers' own records
    inventory_error: str | None = None
    tests: list[TestRecord] = Field(default_factory=list)
    requirements: list[RequirementRecord] = Field(default_factory=list)
    requirements_errors: list[str] = Field(default_factory=list)
    verdict: VerdictRecord | None = None  # None only in a document an old writer left

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def problems(doc: object) -> list[str]:
    """Where ``doc`` is not a results document of this format ("tests[3].outcome: ..."),
    at most ten, each located; empty when it is one."""
    try:
        Results.model_validate(doc)
    except ValidationError as exc:
        return located(exc)
    return []


def located(exc: ValidationError) -> list[str]:
    """The model's complaints, each at its place ("tests[3].outcome: ..."), at most ten."""
    out = []
    for err in exc.errors()[:10]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        out.append(f"{where.lstrip('.') or '(document)'}: {err['msg']}")
    return out


def json_schema() -> dict[str, JsonValue]:
    return Results.model_json_schema(by_alias=True)


def main(argv: list[str]) -> int:
    """``python -m labtest.reports.model [FILE]``: the JSON Schema (to FILE, or stdout)."""
    text = json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
