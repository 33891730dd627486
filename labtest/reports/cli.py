"""``labtest report``: the sign-off bundle from a results directory, and its check.

Exit status: 0 the verdict is PASS (or ``--exit-zero``); 1 the verdict is FAIL,
or ``--verify`` found a changed file; 2 the report could not be made (no
results, output not writable, Allure or the screenshot failed; the sign-off is
still written when possible); 6 the verdict is INCOMPLETE (as ``labtest run``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from labtest import exits
from labtest.reports import results, signoff


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "report",
        help="build the sign-off report (and Allure HTML) from a results directory",
        description="Build the sign-off bundle from RESULTS_DIR, or check one with --verify.",
    )
    ap.add_argument("results_dir", nargs="?", type=Path, metavar="RESULTS_DIR",
                    help="the run's --alluredir (default reports/allure-results)")
    ap.add_argument("-o", "--output", type=Path, metavar="DIR",
                    help="where to write the bundle (default: RESULTS_DIR/../signoff)")
    ap.add_argument("--no-allure", action="store_true", help="skip the Allure 3 HTML report")
    ap.add_argument("--screenshot", type=Path, metavar="PNG",
                    help="also save the sign-off's first screen (headless chromium)")
    ap.add_argument("--exit-zero", action="store_true",
                    help="exit 0 whatever the verdict once the report is written")
    ap.add_argument("--verify", type=Path, metavar="DIR",
                    help="recompute the hashes of a sign-off bundle and list changes")
    ap.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    if args.verify is not None:
        return _verify(args.verify)
    results_dir: Path = args.results_dir or Path("reports") / "allure-results"
    out_dir: Path = args.output or results_dir.parent / "signoff"
    builder = None if args.no_allure else _allure_builder()
    try:
        bundle = signoff.build(results_dir, out_dir, allure=builder)
    except (results.ResultsError, signoff.SignoffError) as exc:
        print(f"labtest report: {exc}", file=sys.stderr)
        return exits.USAGE
    except OSError as exc:
        print(f"labtest report: cannot write {out_dir}: {exc}", file=sys.stderr)
        return exits.USAGE
    doc = bundle.doc
    status = exits.PASS if args.exit_zero else exits.BY_VERDICT[doc["verdict"]]
    print(f"{doc['verdict']}: {doc['verdict_reason']}")
    for i, cause in enumerate(doc.get("root_causes") or [], 1):
        follows = len(cause["consequences"])
        print(f"  root cause {i}: {cause['cause']}"
              + (f" (explains {follows} other failure(s))" if follows else ""))
        for cost in cause.get("impact") or []:
            print(f"    costs: {cost}")
    for item in doc["attention"]:
        print(f"  {item['outcome'].upper():<7} {item['nodeid']}: {_culprit(item)}")
    for item in doc.get("refused") or []:
        print(f"labtest report: refused {item['path']}: {item['problem']}; not in the bundle",
              file=sys.stderr)
    print(f"sign-off:  {bundle.html}")
    if doc["allure_report"]:
        print(f"allure:    {out_dir / doc['allure_report']}")
    elif doc["allure_error"]:
        print(f"labtest report: Allure HTML not built: {doc['allure_error']}", file=sys.stderr)
        status = exits.USAGE
    print(f"manifest:  {out_dir / signoff.MANIFEST} sha256 {bundle.manifest_sha256}")
    if args.screenshot is not None and _screenshot(bundle.html, args.screenshot) != exits.PASS:
        status = exits.USAGE
    return status


def _allure_builder() -> signoff.AllureBuilder:
    from labtest.reports import allure_html

    return lambda res, out: allure_html.build(res, out, name="labtest sign-off")


def _culprit(item: dict[str, Any]) -> str:
    if item["culprits"]:
        m = item["culprits"][0]
        where = " ".join(f"{k}={v}" for k, v in m["labels"].items())
        more = f" (+{len(item['culprits']) - 1} more)" if len(item["culprits"]) > 1 else ""
        return f"{m['name']} {where} = {m['value']} {m['unit']}".rstrip() + more
    return (item["message"] or "").split("\n")[0]


def _screenshot(html: Path, png: Path) -> int:
    from labtest.reports.screenshot import ScreenshotError, screenshot

    try:
        screenshot(html, png)
    except ScreenshotError as exc:
        print(f"labtest report: screenshot: {exc}", file=sys.stderr)
        return exits.USAGE
    print(f"screenshot: {png}")
    return exits.PASS


def _verify(out_dir: Path) -> int:
    try:
        problems = signoff.verify(out_dir)
    except signoff.SignoffError as exc:
        print(f"labtest report --verify: {exc}", file=sys.stderr)
        return exits.USAGE
    manifest = out_dir / signoff.MANIFEST
    if not problems:
        listed = len(manifest.read_text().splitlines())
        print(f"OK: {listed} files match {manifest}")
        return exits.PASS
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) against {manifest}", file=sys.stderr)
    return exits.FAIL  # the bundle changed since it was signed
