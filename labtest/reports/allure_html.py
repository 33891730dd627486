"""The Allure HTML report, built with Allure Report 3 from npm (pure Node, no Java).

Allure 3 is installed on first use into a per-version cache folder
(``$LABTEST_CACHE_DIR`` or ``~/.cache/labtest``), via a temporary folder and a
rename so two runs never see half an install. The report is generated in
*single-file* mode: the default multi-file report only renders over HTTP and
spins forever from ``file://`` (stack-probe.md §5). Allure 3 takes categories
from its config, not from ``categories.json``, so the run's categories are
copied into the generated config. Its exit status is 0 even when tests failed:
verdicts come from the sign-off, never from Allure. The generated page is made
:func:`offline`: Allure's analytics script is stripped and a Content-Security-Policy
keeps the page from calling any host.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from labtest.reports import CATEGORIES_FILE
from labtest.reports.results import NODEID_LABEL

ALLURE_VERSION = os.environ.get("LABTEST_ALLURE_VERSION", "3.18.0")
INSTALL_TIMEOUT_S = 300.0
GENERATE_TIMEOUT_S = 180.0


class AllureError(Exception):
    """Allure 3 could not be installed or could not build the report."""


def cache_dir() -> Path:
    root = os.environ.get("LABTEST_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "labtest"


def allure_cli(version: str = ALLURE_VERSION) -> Path:
    """The Allure 3 CLI script, installing it with npm when it is missing."""
    home = cache_dir() / f"allure-{version}"
    cli = _bin(home)
    if cli.is_file():
        return cli
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise AllureError(
            "Allure 3 needs Node.js >= 20 and npm (Debian: apt-get install nodejs npm); "
            "or pass --no-allure"
        )
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".allure-{version}-", dir=home.parent))
    try:
        _run(
            [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund",
             "--loglevel=error", f"allure@{version}"],
            INSTALL_TIMEOUT_S,
            f"npm install allure@{version}",
        )
        try:
            staging.rename(home)
        except OSError:
            if not _bin(home).is_file():  # not a concurrent install that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _bin(home)


def _bin(home: Path) -> Path:
    return home / "node_modules" / ".bin" / "allure"


def build(results_dir: Path, out_dir: Path, *, name: str = "labtest") -> Path:
    """Generate ``out_dir/index.html`` (one self-contained file) from ``results_dir``."""
    cli = allure_cli()
    node = shutil.which("node")
    if node is None:
        raise AllureError("node is not on PATH")
    config = {
        "name": name,
        "output": str(out_dir.resolve()),
        "hideLabels": [NODEID_LABEL],
        "plugins": {
            "awesome": {"options": {"singleFile": True, "groupBy": ["epic", "feature", "story"]}}
        },
        "categories": {"rules": _categories(results_dir)},
    }
    with tempfile.TemporaryDirectory(prefix="labtest-allure-") as tmp:
        rc = Path(tmp) / "allurerc.json"
        rc.write_text(json.dumps(config, indent=2))
        _run(
            [node, str(cli.resolve()), "generate", "--config", str(rc), "--output",
             str(out_dir.resolve()), str(results_dir.resolve())],
            GENERATE_TIMEOUT_S,
            "allure generate",
            cwd=Path(tmp),
        )
    index = out_dir / "index.html"
    if not index.is_file():
        raise AllureError(f"allure generate wrote no {index}")
    index.write_text(offline(index.read_text(encoding="utf-8")), encoding="utf-8")
    return index


#: what the single-file report may load once it is offline: its own inline code, styles,
#: fonts and data (data: and blob: URLs), nothing from any host
OFFLINE_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval' data: blob:; "
    "style-src 'unsafe-inline' data: blob:; img-src data: blob:; font-src data:; "
    "connect-src data: blob:; media-src data: blob:; worker-src data: blob:; "
    "form-action 'none'"
)
_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_REMOTE = re.compile(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)
_REMOTE_LINK = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_TRACKING = ("gtag(", "googletagmanager", "google-analytics", "dataLayer")


def offline(html: str) -> str:
    """The report without what calls a third party when it is opened.

    Allure 3's awesome report always embeds Google Analytics (``analyticsEnable`` is
    hard-wired to true in 3.18; ``ALLURE_NO_ANALYTICS`` only reaches the allure2
    plugin): a script from googletagmanager.com and its ``gtag`` configuration, which
    sends the report's id to Google each time somebody opens a sign-off. Both go, as
    does any other script or stylesheet from a host; a Content-Security-Policy then
    lets the page load only what it holds inline, so a tracker added by a later
    Allure release is blocked by the browser too. The bundle opens offline.
    """

    def script(match: re.Match[str]) -> str:
        attrs, body = match.group(1), match.group(2)
        if _REMOTE.search(attrs) or any(t in body for t in _TRACKING):
            return ""
        return match.group(0)

    html = _SCRIPT.sub(script, html)
    html = _REMOTE_LINK.sub(lambda m: "" if _REMOTE.search(m.group(0)) else m.group(0), html)
    meta = f'<meta http-equiv="Content-Security-Policy" content="{OFFLINE_CSP}">'
    if meta in html:
        return html
    head = re.search(r"<head\b[^>]*>", html, re.IGNORECASE)
    if head is None:
        return meta + html
    return html[: head.end()] + meta + html[head.end():]


def _categories(results_dir: Path) -> list[dict[str, object]]:
    path = results_dir / CATEGORIES_FILE
    if not path.is_file():
        return []
    rules = json.loads(path.read_text(encoding="utf-8"))
    keys = ("name", "matchedStatuses", "messageRegex", "traceRegex", "flaky")
    return [{k: r[k] for k in keys if k in r} for r in rules]


def _run(cmd: list[str], timeout_s: float, what: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise AllureError(f"{what}: no result after {timeout_s:.0f} s") from None
    except OSError as exc:
        raise AllureError(f"{what}: {exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        raise AllureError(f"{what} exited with {proc.returncode}:\n" + "\n".join(tail))
