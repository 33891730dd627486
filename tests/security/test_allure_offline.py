"""Issue 37 item 9: a sign-off bundle opens offline and calls nobody.

Allure 3's "awesome" single-file report embeds Google Analytics
(googletagmanager.com) whatever its options say. ``labtest report`` strips it and
any other remote script or stylesheet, and adds a Content-Security-Policy that
lets the page load nothing but what it holds. Checked on a fixture page shaped
like Allure's template, and in the real browser on a real Allure report with the
network blocked: the page asks for nothing beyond its own file and data: URLs,
and still renders.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from labtest.reports import allure_html
from labtest.reports.allure_html import OFFLINE_CSP, offline
from labtest.reports.screenshot import browser

TEMPLATE = """<!DOCTYPE html>
<html dir="ltr" lang="en">
<head>
    <meta charset="utf-8">
    <title>Allure Report</title>
    <link rel="stylesheet" href="https://fonts.example.com/inter.css">
    <link rel="icon" href="data:image/png;base64,AAAA">
    <script>
      window.allureReportOptions = {"id":"awesome"}
    </script>
</head>
<body>
    <div id="app"></div>
    <script src="data:text/javascript;base64,ZG9jdW1lbnQuYm9keS5kYXRhc2V0LmFwcCA9ICdvayc7"></script>
    <script async src="https://www.googletagmanager.com/gtag/js?id=G-LNDJ3J7WT0"></script>
    <script>
        window.dataLayer = window.dataLayer || [];
        function gtag(){dataLayer.push(arguments);}
        gtag('js', new Date());
        gtag('config', 'G-LNDJ3J7WT0', {"report": "awesome"});
    </script>
    <script SRC='//cdn.example.com/x.js'></script>
    <script async>
      function d(name, value){ return value; }
    </script>
</body>
</html>
"""


def test_offline_strips_every_remote_script_and_the_tracker() -> None:
    html = offline(TEMPLATE)
    for gone in ("googletagmanager", "gtag(", "dataLayer", "fonts.example.com", "cdn.example.com"):
        assert gone not in html
    for kept in ("window.allureReportOptions", "data:text/javascript;base64", "function d(name",
                 'rel="icon" href="data:image/png', '<div id="app">'):
        assert kept in html
    head = html.index("<head>") + len("<head>")
    assert html[head:].startswith(f'<meta http-equiv="Content-Security-Policy" '
                                  f'content="{OFFLINE_CSP}">')
    assert "default-src 'none'" in OFFLINE_CSP and "http" not in OFFLINE_CSP
    assert offline(html) == html  # idempotent


needs_browser = pytest.mark.skipif(browser() is None, reason="no chromium on PATH")
needs_allure = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="Allure 3 needs node and npm",
)


def _left_the_bundle(requests: list[str]) -> list[str]:
    return [u for u in requests if not u.startswith(("file://", "data:", "blob:"))]


@needs_browser
def test_the_fixture_page_calls_nobody_once_offline(tmp_path: Path) -> None:
    from security_browser import visit

    raw, clean = tmp_path / "raw.html", tmp_path / "clean.html"
    raw.write_text(TEMPLATE)
    clean.write_text(offline(TEMPLATE))
    assert any("googletagmanager" in u for u in visit(raw.as_uri()).requests)  # the probe works
    assert _left_the_bundle(visit(clean.as_uri()).requests) == []


@needs_browser
@needs_allure
def test_the_real_allure_report_opens_offline_and_calls_nobody(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from security_browser import visit

    results = tmp_path / "results"
    results.mkdir()
    (results / "0a-result.json").write_text(
        '{"uuid": "0a", "name": "test_optics", "fullName": "suite#test_optics", '
        '"status": "passed", "start": 1, "stop": 2, "labels": []}')
    # Allure exactly as it generates (the raw page), then as labtest ships it
    monkeypatch.setattr(allure_html, "offline", lambda html: html)
    raw = allure_html.build(results, tmp_path / "raw")
    monkeypatch.undo()
    shipped = allure_html.build(results, tmp_path / "shipped")
    assert "googletagmanager" in raw.read_text()  # Allure still embeds it: the fix is needed
    assert "googletagmanager" not in shipped.read_text()

    before = visit(raw.as_uri())
    assert any("googletagmanager.com" in u for u in before.requests), before.requests
    after = visit(shipped.as_uri(), shows="test_optics")
    assert _left_the_bundle(after.requests) == [], after.requests
    assert "Results" in after.text and "test_optics" in after.text, after.text[:500]  # rendered
