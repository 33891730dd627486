"""The Allure 3 HTML report (npm ``allure``, installed on first use; no Java)."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import LabRun

from labtest.cli import main

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="Allure 3 needs node and npm (CI has node 20 + npm)",
)


def test_report_builds_one_file_allure_html(
    faulty_run: LabRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "signoff"
    assert main(["report", str(faulty_run.results_dir), "-o", str(out)]) == 1  # verdict FAIL
    assert f"allure:    {out / 'allure' / 'index.html'}" in capsys.readouterr().out
    allure_dir = out / "allure"
    # single-file mode: no app-*.js or data/ next to index.html, so file:// works
    assert sorted(p.name for p in allure_dir.iterdir()) == [
        "index.html", "summary.json", "test-results.json"]
    assert (allure_dir / "index.html").stat().st_size > 500_000
    summary = json.loads((allure_dir / "summary.json").read_text())
    assert summary["stats"] == {"total": 4, "passed": 2, "failed": 1, "broken": 1}
    assert summary["meta"]["singleFile"] is True
    # the run's categories went into Allure 3's config (it ignores categories.json)
    index = (allure_dir / "index.html").read_text()
    embedded = re.search(r'd\("widgets/categories\.json","([^"]+)"\)', index)
    assert embedded is not None
    tree = json.loads(base64.b64decode(embedded.group(1)))
    found = {n["name"]: n["statistic"] for n in tree["nodes"].values() if n["type"] == "category"}
    assert found == {
        "Product failures": {"total": 1, "failed": 1},
        "Broken infrastructure": {"total": 1, "broken": 1},
    }
    doc = json.loads((out / "signoff.json").read_text())
    assert doc["allure_report"] == "allure/index.html"
    assert "allure/index.html" in (out / "MANIFEST.sha256").read_text()
    assert main(["report", "--verify", str(out)]) == 0
