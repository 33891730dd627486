"""``labtest-results.json``: the run as labtest sees it, written next to Allure's files.

One entry per test (nodeid, outcome, category, plan IDs, measurements, the
error and the device it names, Allure attachments), plus what a sign-off needs
about the run: testbed and cabling plan, limits profile and its hash, device
inventory, who ran it, where, when, and from which commit.

Outcomes follow Allure: an assertion (``LimitFailure`` included) is *failed*;
any other exception is *broken*; the core plugin classifies once
(``labtest.outcome``), this module folds the phases. The category says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from labtest import safefs
from labtest.errors import ConfigError
from labtest.measure import coverage, load_limits
from labtest.outcome import BROKEN, FAILED, PASSED, SKIPPED, outcome_of
from labtest.reports import RESULTS_FILE, model
from labtest.reports.files import sha256_file, write_atomic
from labtest.testbed import Testbed

SCHEMA = model.SCHEMA

NODEID_LABEL = "labtest_nodeid"


class ResultsError(Exception):
    """A results directory cannot be read as a labtest run."""


def new_test(nodeid: str) -> dict[str, Any]:
    return {
        "nodeid": nodeid,
        "name": nodeid.rsplit("::", 1)[-1],
        "suite": "",
        "plan_ids": [],
        "outcome": PASSED,
        "category": None,
        "message": None,
        "device": None,
        "skip_reason": None,
        "emulation_deviation": None,
        "duration_s": 0.0,
        "measurements": [],
        "not_proven": [],  # explicit holes: {requirement, reason, labels}
        "labels": {},
        "attachments": [],
    }


def apply_phase(test: dict[str, Any], outcome: str, info: Mapping[str, Any]) -> None:
    """Fold one phase report (setup, call, teardown; ``outcome`` is pytest's) into ``test``."""
    if outcome == "skipped" and test["outcome"] == PASSED:
        test["outcome"] = SKIPPED
        test["skip_reason"] = info.get("skip_reason")
    if outcome != "failed" or test["outcome"] in (FAILED, BROKEN):
        return  # the first failure is the culprit; a later teardown error follows from it
    error = info.get("error")
    test["outcome"], test["category"] = outcome_of(error)
    if error:
        test["message"] = error["message"]
        test["device"] = error.get("device")


@dataclass
class SuiteTally:
    """One suite family's test outcomes: the one place outcomes are counted
    (``labtest run``'s table and the detection matrix extend it)."""

    passed: int = 0
    failed: int = 0
    broken: int = 0
    skipped: int = 0
    red_tests: list[dict[str, Any]] = field(default_factory=list)  # failed and broken, in order

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.broken + self.skipped


T = TypeVar("T", bound=SuiteTally)


def tally(tests: Iterable[dict[str, Any]], make: Callable[[], T]) -> dict[str, T]:
    """Per suite family (``test["suite"]``, "?" without one): outcome counts and the red tests."""
    suites: dict[str, T] = {}
    for t in tests:
        suite = suites.setdefault(t.get("suite") or "?", make())
        outcome = t.get("outcome", PASSED)
        if outcome == FAILED:
            suite.failed += 1
        elif outcome == BROKEN:
            suite.broken += 1
        elif outcome == SKIPPED:
            suite.skipped += 1
        else:
            suite.passed += 1
        if outcome in (FAILED, BROKEN):
            suite.red_tests.append(t)
    return suites


# --- run-level records --------------------------------------------------------


def testbed_record(testbed: Testbed) -> dict[str, Any]:
    """The testbed without any credential: devices, cabling plan, emulation faults."""
    source = testbed.source
    return {
        "name": testbed.name,
        "description": testbed.description,
        "file": str(source.resolve()) if source else None,
        "sha256": sha256_file(source) if source and source.is_file() else None,
        "devices": {
            name: {
                "role": d.role,
                "driver": d.driver,
                "address": d.address,
                "transports": d.transports,
                "capabilities": capabilities(d.driver),
            }
            for name, d in testbed.devices.items()
        },
        "links": [
            {
                "a": lk.a,
                "b": lk.b,
                "speed_gbps": lk.speed_gbps,
                "optic": lk.optic,
                "length_m": lk.length_m,
            }
            for lk in testbed.links
        ],
        "emulation": testbed.emulation.model_dump(mode="json") if testbed.emulation else None,
        "waivers": [w.model_dump(mode="json") for w in testbed.waivers],
    }


def capabilities(driver: str) -> list[str] | None:
    """Capability names the driver class offers; None when no such driver is installed."""
    from labtest.registry import DriverNotFound, capability_protocols, driver_class, provides

    try:
        cls = driver_class(driver)
    except (DriverNotFound, ImportError):
        return None
    return sorted(name for name, proto in capability_protocols().items() if provides(cls, proto))


def requirements_record(suite_dirs: dict[str, Path]) -> tuple[list[dict[str, str]], list[str]]:
    """The requirements of the suite families that ran, and the problems reading them."""
    found: list[dict[str, str]] = []
    problems: list[str] = []
    for suite, folder in sorted(suite_dirs.items()):
        path = folder / coverage.REQUIREMENTS_FILE
        if not path.is_file():
            continue
        try:
            found += [r.as_dict() for r in coverage.load_requirements(path, suite)]
        except ConfigError as exc:
            problems.append(str(exc))
    return found, problems


def limits_record(path: str | Path) -> dict[str, Any] | None:
    """Profile name, file, SHA-256 and every limit with its source (None if unreadable)."""
    try:
        profile = load_limits(path)
    except ConfigError:
        return None  # the core plugin reports a bad profile as a usage error
    return {
        "profile": profile.profile,
        "description": profile.description,
        "file": str(Path(path).resolve()),
        "sha256": profile.sha256,
        "limits": {k: v.model_dump(mode="json") for k, v in profile.limits.items()},
        "waivers": [w.model_dump(mode="json") for w in profile.waivers],
    }


# --- Allure attachments by test -------------------------------------------------


def allure_attachments(results_dir: Path) -> dict[str, list[dict[str, str]]]:
    """``{nodeid: [{name, source, type}]}`` from Allure's result files (label join)."""
    found: dict[str, list[dict[str, str]]] = {}
    for path in sorted(results_dir.glob("*-result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        nodeids = [lb["value"] for lb in result.get("labels", []) if lb["name"] == NODEID_LABEL]
        if nodeids:
            found.setdefault(nodeids[0], []).extend(_attachments_of(result))
    return found


def _attachments_of(node: dict[str, Any]) -> Iterable[dict[str, str]]:
    for att in node.get("attachments", []):
        yield {"name": att.get("name", ""), "source": att["source"], "type": att.get("type", "")}
    for step in node.get("steps", []):
        yield from _attachments_of(step)


# --- files ---------------------------------------------------------------------


def write(results_dir: Path, doc: dict[str, Any]) -> Path:
    """Write the document, then check it against the model: a writer's slip is written
    (the run is not lost) and raised, never left for a reader to trip on."""
    path = results_dir / RESULTS_FILE
    text = json.dumps(doc, indent=2, default=str) + "\n"
    write_atomic(path, text)
    wrong = model.problems(json.loads(text))  # what the file holds, without reading it back
    if wrong:
        raise ResultsError(f"{path}: written, but not a {SCHEMA} document: " + "; ".join(wrong))
    return path


def load(results_dir: Path) -> dict[str, Any]:
    return _read(results_dir)[0]


def load_typed(results_dir: Path) -> model.Results:
    """``load``'s document as the typed model (``labtest.reports.model``)."""
    return _read(results_dir)[1]


def _read(results_dir: Path) -> tuple[dict[str, Any], model.Results]:
    """The document as read and as the model validated it (once)."""
    path = results_dir / RESULTS_FILE
    if not path.is_file() and not path.is_symlink():
        raise ResultsError(
            f"{results_dir}: no {RESULTS_FILE}; was the run made with labtest's "
            "reporting plugin and an --alluredir (or --testbed)?"
        )
    try:  # input: a regular file inside the results, never a link out of them
        doc = json.loads(safefs.read_inside(results_dir, RESULTS_FILE).decode("utf-8"))
    except safefs.UnsafePath as exc:
        raise ResultsError(f"{path}: refused: {exc.problem}") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable: {exc}") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: a JSON {type(doc).__name__}, not a labtest results object")
    if doc.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    try:
        typed = model.Results.model_validate(doc)
    except ValidationError as exc:
        raise ResultsError(f"{path}: not a {SCHEMA} document: "
                           + "; ".join(model.located(exc))) from None
    return doc, typed


# --- the run's verdict: coverage and root causes ---------------------------------------


def verdict_record(doc: dict[str, Any]) -> dict[str, Any]:
    """PASS / INCOMPLETE / FAIL with its reasons, the coverage matrix and the root causes."""
    from labtest.measure import rootcause

    try:
        verdict = coverage.run_verdict(doc)
    except Exception as exc:  # the results must still be written; the verdict says why
        why = f"the verdict could not be computed: {type(exc).__name__}: {exc}"
        return {"verdict": coverage.INCOMPLETE, "headline": why, "reasons": [why],
                "coverage": coverage.Coverage([]).as_dict(), "root_causes": []}
    out = verdict.as_dict()
    problems = list(doc.get("requirements_errors") or [])
    if problems and out["verdict"] == coverage.PASS:
        out["verdict"] = coverage.INCOMPLETE
    out["reasons"] += [f"requirements unreadable: {p}" for p in problems]
    try:
        out["root_causes"] = [c.as_dict() for c in rootcause.root_causes(doc)]
    except Exception as exc:  # never lose the run over its summary
        out["root_causes"] = []
        out["reasons"].append(f"root causes not computed: {type(exc).__name__}: {exc}")
    return out


def verdict_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's verdict record; computed when an older writer left none."""
    found = doc.get("verdict")
    return found if isinstance(found, dict) and "coverage" in found else verdict_record(doc)


NOT_PROVEN_ERROR = "labtest.coverage.NotProven"
COVERAGE_CATEGORY = "Not proven (coverage holes)"


def coverage_categories() -> list[dict[str, Any]]:
    """An Allure category for the coverage results below (first: it is the most specific)."""
    return [
        {
            "name": COVERAGE_CATEGORY,
            "description": "a required cell (requirement x unit) was not proven and not waived: "
            "the run is INCOMPLETE, not PASS",
            "matchedStatuses": ["broken"],
            "messageRegex": rf"^{NOT_PROVEN_ERROR.replace('.', '[.]')}:[\s\S]*",
        }
    ]


def consequence_texts(causes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """nodeid -> the root cause (a ``root_causes`` record) it is a consequence of, and that
    cause's own upstream cause when the analysis suspects one (``downstream_of``): a failure
    shown as the consequence of a second cause still names the first."""
    out: dict[str, str] = {}
    for c in causes:
        out.update(dict.fromkeys(c.get("consequences") or [], str(c["cause"]) + upstream_note(c)))
    return out


def upstream_note(cause: Mapping[str, Any]) -> str:
    """``; perhaps itself a consequence of X`` for a cause suspected downstream of X, else
    nothing: what every consumer appends to the cause's line."""
    up = cause.get("downstream_of")
    return f"; perhaps itself a consequence of {up}" if up else ""


def upstream_of_evidence(causes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """nodeid -> the upstream cause of the cause it is direct evidence of (``tests`` of a
    cause with ``downstream_of``): the place it names may itself be a consequence."""
    return {n: str(c["downstream_of"]) for c in causes if c.get("downstream_of")
            for n in c.get("tests") or []}


def label_consequences(results_dir: Path, doc: dict[str, Any]) -> int:
    """Give each Allure result a root cause explains the labels ``root_cause`` (the cause)
    and tag ``consequence``, so Allure shows the cause beside the symptom (the causes
    themselves are listed in ``environment.properties``: a result per cause would count
    each failure twice). Returns how many results were labelled."""
    causes = (doc.get("verdict") or {}).get("root_causes") or []
    because = consequence_texts(causes)
    labelled = 0
    for path in sorted(results_dir.glob("*-result.json")) if because else []:
        result = json.loads(path.read_text(encoding="utf-8"))
        ids = [lb["value"] for lb in result.get("labels", []) if lb["name"] == NODEID_LABEL]
        if ids and ids[0] in because:
            result["labels"] += [{"name": "root_cause", "value": because[ids[0]]},
                                 {"name": "tag", "value": "consequence"}]
            write_atomic(path, json.dumps(result) + "\n")
            labelled += 1
    return labelled


def write_coverage_results(results_dir: Path, doc: dict[str, Any]) -> list[Path]:
    """One Allure result per requirement (epic = suite, feature = "coverage"): passed when
    every cell is proven or waived, failed with a failed cell, else broken with the holes,
    so no Allure view is green over a hole."""
    import hashlib
    import time

    now_ms = int(time.time() * 1000)
    written = []
    for req in (doc.get("verdict") or {}).get("coverage", {}).get("requirements", []):
        cells = req["cells"]
        if req["failed"]:
            status, message = "failed", f"{req['summary']}"
        elif req["broken"] or req["not_proven"]:
            status, message = "broken", f"{NOT_PROVEN_ERROR}: {req['summary']}"
        else:
            status, message = "passed", req["summary"]
        ident = f"{req['suite']}:{req['id']}:{req['unit']}"
        uuid = hashlib.sha256(ident.encode()).hexdigest()[:32]
        body = {
            "uuid": uuid,
            "historyId": hashlib.md5(ident.encode(), usedforsecurity=False).hexdigest(),
            "name": f"coverage: {req['id']} per {req['unit']}",
            "fullName": f"coverage.{req['suite']}.{req['id']}.{req['unit']}",
            "status": status,
            "statusDetails": {
                "message": message,
                "trace": "\n".join(
                    f"{c['status']:<11} {c['unit']}" + (f": {c['reason']}" if c["reason"] else "")
                    + (f" [waived: {c['waiver']}]" if c["waiver"] else "")
                    for c in cells
                ),
            },
            "stage": "finished",
            "start": now_ms,
            "stop": now_ms,
            "labels": [
                {"name": "epic", "value": req["suite"]},
                {"name": "feature", "value": "coverage"},
                {"name": "story", "value": req["id"]},
                {"name": "suite", "value": "coverage"},
            ],
            "steps": [],
            "attachments": [],
        }
        path = results_dir / f"{uuid}-result.json"
        write_atomic(path, json.dumps(body, indent=2) + "\n")
        written.append(path)
    return written
