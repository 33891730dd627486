"""``labtest-results.json``: the run as labtest sees it, written next to Allure's files.

One entry per test (nodeid, outcome, category, plan IDs, measurements, the
error and the device it names, Allure attachments), plus what a sign-off needs
about the run: testbed and cabling plan, limits profile and its hash, device
inventory, who ran it, where, when, and from which commit.

Outcomes follow Allure: an assertion (``LimitFailure`` included) is *failed*;
any other exception is *broken*. The category says why (see ``allure_env``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from labtest.errors import ConfigError
from labtest.measure import load_limits
from labtest.reports import RESULTS_FILE
from labtest.reports.files import sha256_file, write_atomic
from labtest.testbed import Testbed

SCHEMA = "labtest-results/1"

PASSED, FAILED, BROKEN, SKIPPED = "passed", "failed", "broken", "skipped"
#: error kind (set by the plugin) -> (outcome, category)
KINDS = {
    "assertion": (FAILED, "product-failure"),
    "infra": (BROKEN, "infrastructure"),
    "deviation": (BROKEN, "emulation-deviation"),
    "other": (BROKEN, "test-defect"),
}
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
        "labels": {},
        "attachments": [],
    }


def apply_phase(test: dict[str, Any], outcome: str, info: dict[str, Any]) -> None:
    """Fold one phase report (setup, call, teardown; ``outcome`` is pytest's) into ``test``."""
    if outcome == "skipped" and test["outcome"] == PASSED:
        test["outcome"] = SKIPPED
        test["skip_reason"] = info.get("skip_reason")
    if outcome != "failed" or test["outcome"] in (FAILED, BROKEN):
        return  # the first failure is the culprit; a later teardown error follows from it
    error = info.get("error")
    test["outcome"], test["category"] = KINDS[error["kind"]] if error else KINDS["assertion"]
    if error:
        test["message"] = error["message"]
        test["device"] = error.get("device")


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
    }


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
    path = results_dir / RESULTS_FILE
    write_atomic(path, json.dumps(doc, indent=2, default=str) + "\n")
    return path


def load(results_dir: Path) -> dict[str, Any]:
    path = results_dir / RESULTS_FILE
    if not path.is_file():
        raise ResultsError(
            f"{results_dir}: no {RESULTS_FILE}; was the run made with labtest's "
            "reporting plugin and an --alluredir (or --testbed)?"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable: {exc}") from None
    if doc.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
    return doc
