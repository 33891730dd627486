"""The one record of what a test phase showed, and the one place a red test is classified.

The core plugin (``labtest.plugin``) builds a :class:`PhaseRecord` for every phase
report (setup, call, teardown) and carries it on the report as ``report.labtest``;
plain JSON values, so it crosses pytest-xdist unchanged. Everything after that only
reads it: the reporting plugin folds the phases into ``labtest-results.json``
(``labtest.reports.results``), which ``labtest run``'s table, the detection matrix
and the sign-off read. Nobody classifies an exception a second time.

*failed* means a product failure (an assertion, ``LimitFailure`` included); *broken*
means the test could not tell (``InfraError``: the lab could not be asked; an
emulation deviation; any other exception, a defect of the test).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict

from labtest import secrets
from labtest.errors import InfraError, LabtestError, ServiceDown

#: lines of an error message a record keeps
MESSAGE_MAX_LINES = 40

PASSED, FAILED, BROKEN, SKIPPED = "passed", "failed", "broken", "skipped"


class EmulationDeviation(LabtestError):
    """A test marked ``emulation_deviation`` failed on the emulated lab."""


class ErrorKind(StrEnum):
    ASSERTION = "assertion"  # a product failure: a measurement or assertion missed
    INFRA = "infra"  # the lab could not be asked (InfraError)
    DEVIATION = "deviation"  # the emulated lab does not model what the test checks
    OTHER = "other"  # any other exception: a defect of the test or of labtest


#: error kind -> (outcome, Allure category)
OUTCOME_OF = {
    ErrorKind.ASSERTION: (FAILED, "product-failure"),
    ErrorKind.INFRA: (BROKEN, "infrastructure"),
    ErrorKind.DEVIATION: (BROKEN, "emulation-deviation"),
    ErrorKind.OTHER: (BROKEN, "test-defect"),
}


class ErrorRecord(TypedDict):
    kind: str  # an ErrorKind value
    type: str  # the exception's qualified name
    message: str  # redacted, at most MESSAGE_MAX_LINES lines
    device: str | None  # the device an InfraError (or its cause) names


class RawEvidence(TypedDict):
    device: str
    text: str  # the device's raw output, redacted


class TestInfo(TypedDict):
    name: str
    suite: str
    plan_ids: list[str]
    emulation_deviation: str | None


class PhaseRecord(TypedDict, total=False):
    """What one phase report carries (``report.labtest``)."""

    test: TestInfo  # setup phase: what the test is
    suite_dir: str  # setup phase: the suite's folder (its requirements file)
    measurements: list[dict[str, Any]]  # call phase: Measurement.as_dict() each
    not_proven: list[dict[str, Any]]  # call phase: NotProven.as_dict() each
    skip_reason: str
    error: ErrorRecord
    raw: list[RawEvidence]
    # added by the reporting plugin (its own facts, not a second reading of the test):
    inventory: dict[str, Any]
    labels: dict[str, list[str]]


def qualified_name(cls: type) -> str:
    """The name Python prints for an exception: ``module.Class``, bare for builtins."""
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def classify(exc: BaseException) -> ErrorKind:
    """The kind of a red test's exception (the one classification labtest makes)."""
    if isinstance(exc, EmulationDeviation):
        return ErrorKind.DEVIATION
    if isinstance(exc, ServiceDown):  # the device was asked and said its daemon is dead
        return ErrorKind.ASSERTION
    if isinstance(exc, InfraError):
        return ErrorKind.INFRA
    import pytest  # here: the results' readers (labtest run, report) need no pytest

    if isinstance(exc, AssertionError | pytest.fail.Exception):
        return ErrorKind.ASSERTION
    return ErrorKind.OTHER


def error_record(exc: BaseException, exconly: str) -> ErrorRecord:
    """The record of a red test's exception; ``exconly`` is pytest's one-line rendering."""
    lines = secrets.redact(exconly).splitlines()
    device = exc.device if isinstance(exc, InfraError) else None
    cause = exc.__cause__
    if device is None and isinstance(cause, InfraError):
        device = cause.device
    return {
        "kind": classify(exc).value,
        "type": qualified_name(type(exc)),
        "message": "\n".join(lines[:MESSAGE_MAX_LINES]),
        "device": device,
    }


def raw_evidence(exc: BaseException) -> list[RawEvidence]:
    """The device output an InfraError carries, redacted (empty for anything else)."""
    if isinstance(exc, InfraError) and exc.raw:
        return [{"device": exc.device, "text": secrets.redact(exc.raw)}]
    return []


def outcome_of(error: ErrorRecord | None) -> tuple[str, str]:
    """(outcome, category) of a failed phase; a failure without an exception is an assertion."""
    return OUTCOME_OF[ErrorKind(error["kind"]) if error else ErrorKind.ASSERTION]


# --- naming the cause -----------------------------------------------------------------


def culprit(test: dict[str, Any]) -> str:
    """What a failing test names (in ``labtest-results.json`` form): the ends of its failing
    measurements, else its device. ``labtest run``, the matrix and the root-cause
    analysis name a failure by this one definition."""
    where: dict[str, list[str]] = {}  # "device:port" (or device, or link) -> lanes
    extra: dict[str, str] = {}
    for m in test.get("measurements") or []:
        if m.get("verdict") != "FAIL":
            continue
        labels = m.get("labels") or {}
        device, port = labels.get("device"), labels.get("port")
        name = f"{device}:{port}" if device and port else device or labels.get("link")
        if not name:
            continue
        lanes = where.setdefault(str(name), [])
        if labels.get("lane"):
            lanes.append(str(labels["lane"]))
        if labels.get("expected") and labels.get("seen"):
            extra[str(name)] = f" (expected {labels['expected']}, hears {labels['seen']})"
    if where:
        parts = [
            name + (f" lane{'s' if len(set(lanes)) > 1 else ''} {','.join(dict.fromkeys(lanes))}"
                    if lanes else "") + extra.get(name, "")
            for name, lanes in where.items()
        ]
        more = f" (+{len(parts) - 3} more)" if len(parts) > 3 else ""
        return ", ".join(parts[:3]) + more
    if test.get("device"):
        return f"{test['device']}: {first_line(test.get('message'), 140)}"
    return first_line(test.get("message"), 140)


def first_line(text: Any, width: int = 160) -> str:
    """A message's first line, cut to ``width`` with "..." where it was longer: what a
    table cell or a one-line summary shows of it."""
    lines = str(text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= width else line[: width - 3] + "..."
