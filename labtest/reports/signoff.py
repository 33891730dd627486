"""The sign-off bundle: verdicts, evidence and hashes an engineer can sign.

``build(results_dir, out_dir)`` makes one self-contained folder::

    OUT/signoff.html      the report (opens from disk; plots and raw output inline)
    OUT/signoff.json      the same, for machines
    OUT/allure/index.html the Allure 3 report (single file), when built
    OUT/evidence/...      a copy of the results directory, as the run left it
    OUT/MANIFEST.sha256   SHA-256 of every file above (``sha256sum -c`` format)

``verify(out_dir)`` recomputes the manifest and lists what changed, went
missing or appeared. The manifest's own hash, printed by ``labtest report``,
is the one number to record with a signature.

Verdicts (``labtest.measure.coverage.run_verdict``, one definition for the
run table, Allure and this report): FAIL if any test or required cell failed;
otherwise INCOMPLETE if a required cell (requirement x unit) is not proven or
broken and not waived, a test broke, a device could not be judged or nothing
ran; otherwise PASS. The report leads with the root causes of the failures,
then the coverage matrix and the waivers.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import labtest
from labtest import safefs
from labtest.reports import provenance, results, scrub
from labtest.reports.files import sha256_file, write_atomic

SCHEMA = "labtest-signoff/1"
MANIFEST = "MANIFEST.sha256"
EVIDENCE_DIR = "evidence"
ALLURE_DIR = "allure"
#: what build() owns inside OUT; anything else there makes it refuse to overwrite
OWNED = frozenset({"signoff.html", "signoff.json", MANIFEST, EVIDENCE_DIR, ALLURE_DIR})
SKIP_SUFFIXES = (".tmp",)

PASS, FAIL, INCOMPLETE, SKIPPED = "PASS", "FAIL", "INCOMPLETE", "SKIPPED"
VERDICT_ORDER = {"FAIL": 0, "MARGINAL": 1, "PASS": 2}
OUTCOME_ORDER = {"failed": 0, "broken": 1, "skipped": 2, "passed": 3}
SUITE_ORDER = {FAIL: 0, INCOMPLETE: 1, SKIPPED: 2, PASS: 3}


class SignoffError(Exception):
    """The bundle cannot be built (bad input or output directory)."""


@dataclass(frozen=True)
class Bundle:
    out_dir: Path
    doc: dict[str, Any]
    manifest_sha256: str

    @property
    def html(self) -> Path:
        return self.out_dir / "signoff.html"


AllureBuilder = Callable[[Path, Path], Path]


def build(
    results_dir: Path,
    out_dir: Path,
    *,
    allure: AllureBuilder | None = None,
) -> Bundle:
    """Copy the evidence, build the Allure report (if a builder is given) and the sign-off.

    An Allure failure does not stop the sign-off: it is recorded in
    ``doc["allure_error"]`` and the caller decides the exit status.
    """
    from labtest.reports.signoff_html import render

    run = results.load(results_dir)
    scrub.learn_run_secrets(run)  # so the evidence copy below is scrubbed of them too
    _prepare_out(results_dir, out_dir)
    evidence = out_dir / EVIDENCE_DIR
    refused = copy_evidence(results_dir, evidence) + refuse_attachments(run)
    allure_path, allure_error = None, None
    if allure is not None:
        try:
            allure_path = allure(evidence, out_dir / ALLURE_DIR)
        except Exception as exc:  # reported in the sign-off and by the CLI's exit status
            allure_error = f"{type(exc).__name__}: {exc}"
    doc = signoff(run, evidence, out_dir)
    doc["allure_report"] = allure_path.relative_to(out_dir).as_posix() if allure_path else None
    doc["allure_error"] = allure_error
    doc["refused"] = refused
    write_atomic(out_dir / "signoff.json", _json(doc))
    write_atomic(out_dir / "signoff.html", render(doc, out_dir))
    manifest_sha256 = write_manifest(out_dir)
    return Bundle(out_dir=out_dir, doc=doc, manifest_sha256=manifest_sha256)


def _prepare_out(results_dir: Path, out_dir: Path) -> None:
    res, out = results_dir.resolve(), out_dir.resolve()
    if out == res or res in out.parents or out in res.parents:
        raise SignoffError(f"output {out_dir} must be outside the results {results_dir}")
    if out_dir.exists():
        foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in OWNED)
        if foreign:
            raise SignoffError(
                f"{out_dir} holds files this command did not write ({', '.join(foreign[:5])}); "
                "choose another --output"
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)


def _temporary(name: str) -> bool:
    return name.endswith(SKIP_SUFFIXES) or name.startswith(".labtest-write")


def copy_evidence(results_dir: Path, evidence: Path) -> list[dict[str, str]]:
    """Copy the results' regular files (scrubbed) into ``evidence``; what is refused instead.

    A symbolic link (to a file or a folder, inside the results or out of them) or a
    special file is neither followed nor copied: the bundle is world-readable and
    must hold only what the run wrote (:func:`labtest.safefs.copy_tree_inside`).
    """
    evidence.mkdir()

    def write(rel: str, data: bytes) -> None:
        dst = evidence / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(dst, data)  # scrubs known secrets

    refused = safefs.copy_tree_inside(results_dir, write, skip=_temporary)
    return [{"path": str(results_dir / r.path), "problem": r.problem} for r in refused]


def refuse_attachments(run: dict[str, Any]) -> list[dict[str, str]]:
    """Drop (and name) every attachment whose ``source`` is not a path inside the results:
    an absolute path or one with ``..`` would make the report read files outside them."""
    refused = []
    for test in run.get("tests", []):
        kept = []
        for att in test.get("attachments") or []:
            try:
                safefs.inside(att.get("source"))
            except safefs.UnsafePath as exc:
                refused.append({
                    "path": str(att.get("source")), "test": test.get("nodeid", ""),
                    "problem": f"attachment {att.get('name', '')!r} of {test.get('nodeid', '')}: "
                               f"{exc.problem}",
                })
                continue
            kept.append(att)
        test["attachments"] = kept
    return refused


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, default=str) + "\n"


# --- the sign-off document ---------------------------------------------------------


def signoff(run: dict[str, Any], evidence: Path, out_dir: Path) -> dict[str, Any]:
    """Everything the HTML shows, failed and broken first."""
    tests = sorted(run["tests"], key=lambda t: (OUTCOME_ORDER[t["outcome"]], t["nodeid"]))
    counts = Counter(t["outcome"] for t in tests)
    measurements = [
        {**m, "nodeid": t["nodeid"], "suite": t["suite"]} for t in tests for m in t["measurements"]
    ]
    measurements.sort(key=lambda m: VERDICT_ORDER.get(m["verdict"], 3))
    record = results.verdict_of(run)
    reason = _summary(counts)
    if record["verdict"] == INCOMPLETE and record.get("headline"):
        reason += f": {record['headline']}"
    return {
        "schema": SCHEMA,
        "verdict": record["verdict"],
        "verdict_reason": reason,
        "verdict_reasons": record["reasons"],
        "root_causes": record.get("root_causes", []),
        "coverage": record["coverage"],
        "counts": {k: counts.get(k, 0) for k in OUTCOME_ORDER} | {"total": len(tests)},
        "marginal_measurements": sum(1 for m in measurements if m["verdict"] == "MARGINAL"),
        "attention": [_attention(t) for t in tests if t["outcome"] in ("failed", "broken")],
        "suites": suites(tests, record["coverage"].get("by_suite")),
        "criteria": criteria(measurements),
        "measurements": measurements,
        "tests": tests,
        "run": run["run"],
        "testbed": run["testbed"],
        "limits": run["limits"],
        "inventory": run["inventory"],
        "inventory_error": run.get("inventory_error"),
        "evidence": evidence_list(evidence, out_dir),
        "generated": {
            "utc": provenance.utc_now(),
            "user": provenance.user(),
            "host": provenance.host(),
            "labtest_version": labtest.__version__,
        },
    }


def _summary(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in OUTCOME_ORDER if counts[k]) or "no tests"


def overall_verdict(counts: Counter[str]) -> tuple[str, str]:
    """The verdict of test outcomes alone (a suite's row; the run's verdict adds coverage)."""
    ran = counts["passed"] + counts["failed"] + counts["broken"]
    parts = [f"{counts[k]} {k}" for k in OUTCOME_ORDER if counts[k]]
    summary = ", ".join(parts) or "no tests"
    if counts["failed"]:
        return FAIL, summary
    if counts["broken"]:
        return INCOMPLETE, f"{summary}: broken tests were not verified"
    if ran == 0:
        return INCOMPLETE, f"{summary}: nothing was verified"
    return PASS, summary


def _attention(test: dict[str, Any]) -> dict[str, Any]:
    culprits = [m for m in test["measurements"] if m["verdict"] == "FAIL"]
    return {
        "nodeid": test["nodeid"],
        "suite": test["suite"],
        "plan_ids": test["plan_ids"],
        "outcome": test["outcome"],
        "category": test["category"],
        "device": test["device"],
        "message": test["message"],
        "culprits": culprits,
        "attachments": test["attachments"],
    }


def suites(
    tests: list[dict[str, Any]], coverage: dict[str, dict[str, int]] | None = None
) -> list[dict[str, Any]]:
    """A row per suite; a suite whose required cells are not all proven (or waived) is
    INCOMPLETE even when none of its tests failed."""
    out: list[dict[str, Any]] = []
    for name, tally in results.tally(tests, results.SuiteTally).items():
        counts = Counter({k: getattr(tally, k) for k in OUTCOME_ORDER})
        verdict, _ = overall_verdict(counts)
        if verdict == INCOMPLETE and not (counts["broken"] or counts["passed"]):
            verdict = SKIPPED
        cov = (coverage or {}).get(name)
        if verdict == PASS and cov and cov["proven"] < cov["required"]:
            verdict = INCOMPLETE
        out.append({"suite": name, "verdict": verdict, **{k: counts[k] for k in OUTCOME_ORDER}})
    out.sort(key=lambda s: (SUITE_ORDER[s["verdict"]], s["suite"]))
    return out


def criteria(measurements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per pass criterion (limit key, or measurement name without a limit)."""
    rows: dict[str, dict[str, Any]] = {}
    for m in measurements:
        key = m["limit_key"] or m["name"]
        row = rows.setdefault(
            key,
            {"criterion": key, "name": m["name"], "unit": m["unit"], "limit": m["limit"],
             "count": 0, "FAIL": 0, "MARGINAL": 0, "PASS": 0, "values": []},
        )
        row["count"] += 1
        row[m["verdict"]] += 1
        if isinstance(m["value"], int | float):
            row["values"].append(m["value"])
    out = []
    for row in rows.values():
        values = row.pop("values")
        row["min"] = min(values) if values else None
        row["max"] = max(values) if values else None
        row["verdict"] = FAIL if row["FAIL"] else ("MARGINAL" if row["MARGINAL"] else PASS)
        out.append(row)
    out.sort(key=lambda r: (VERDICT_ORDER[r["verdict"]], r["criterion"]))
    return out


def evidence_list(evidence: Path, out_dir: Path) -> list[dict[str, Any]]:
    return [
        {"path": p.relative_to(out_dir).as_posix(), "bytes": p.stat().st_size,
         "sha256": sha256_file(p)}
        for p in sorted(evidence.rglob("*"))
        if p.is_file()
    ]


# --- manifest --------------------------------------------------------------------


def write_manifest(out_dir: Path) -> str:
    """Hash every file under ``out_dir`` into MANIFEST.sha256; returns the manifest's hash."""
    lines = [
        f"{sha256_file(p)}  {p.relative_to(out_dir).as_posix()}"
        for p in sorted(out_dir.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    ]
    path = out_dir / MANIFEST
    write_atomic(path, "\n".join(lines) + "\n")
    return sha256_file(path)


@dataclass(frozen=True)
class Problem:
    kind: str  # MODIFIED, MISSING, UNLISTED
    path: str

    def __str__(self) -> str:
        return f"{self.kind:<9} {self.path}"


def verify(out_dir: Path) -> list[Problem]:
    """Recompute every hash in the manifest; an empty list means the bundle is intact."""
    manifest = out_dir / MANIFEST
    if not manifest.is_file():
        raise SignoffError(f"{out_dir}: no {MANIFEST}; is this a labtest sign-off folder?")
    listed: dict[str, str] = {}
    for n, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64:
            raise SignoffError(f"{manifest}:{n}: not a 'SHA256  path' line")
        listed[rel] = digest
    problems = []
    for rel, digest in listed.items():
        path = out_dir / rel
        if not path.is_file():
            problems.append(Problem("MISSING", rel))
        elif sha256_file(path) != digest:
            problems.append(Problem("MODIFIED", rel))
    for path in sorted(out_dir.rglob("*")):
        rel = path.relative_to(out_dir).as_posix()
        if path.is_file() and path.name != MANIFEST and rel not in listed:
            problems.append(Problem("UNLISTED", rel))
    return problems
