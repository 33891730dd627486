"""``labtest init`` projects and where ``labtest run`` finds suites and the testbed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labtest import __version__
from labtest.project import InitError, init_project
from labtest.run import DEFAULT_TESTBED, SUITES_DIR, RunError, default_testbed, suite_folders


def test_init_writes_a_project_that_pins_labtest(tmp_path: Path) -> None:
    project = tmp_path / "mylab"
    written = init_project(project)
    names = {p.relative_to(project).as_posix() for p in written}
    assert names == {"README.md", "pyproject.toml", "requirements.txt", "limits.yaml",
                     "testbed.yaml", "suites/site_optics/test_site_optics.py"}
    assert (project / "requirements.txt").read_text().strip() == f"labtest=={__version__}"
    assert f'"labtest=={__version__}"' in (project / "pyproject.toml").read_text()
    assert "mylab" in (project / "README.md").read_text()
    testbed = yaml.safe_load((project / "testbed.yaml").read_text())
    assert testbed["limits"] == "limits.yaml"
    limits = yaml.safe_load((project / "limits.yaml").read_text())["limits"]
    base = yaml.safe_load((SUITES_DIR / "limits" / "acceptance-400g.yaml").read_text())["limits"]
    assert set(limits) == set(base) | {"site.module_temperature_c"}
    assert all(v.get("source") for v in limits.values())


def test_init_refuses_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InitError, match="not an empty folder"):
        init_project(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_run_finds_builtin_and_project_suites_and_the_project_testbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_testbed() == DEFAULT_TESTBED  # no project here
    init_project(tmp_path / "p")
    monkeypatch.chdir(tmp_path / "p")
    folders = suite_folders()
    assert {"link", "cabling", "collective", "site_optics"} <= set(folders)
    assert folders["site_optics"] == (tmp_path / "p" / "suites" / "site_optics").resolve()
    assert default_testbed() == Path("testbed.yaml")


def test_a_suite_defined_twice_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "suites" / "link").mkdir(parents=True)
    (tmp_path / "suites" / "link" / "test_mine.py").write_text("def test_x():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RunError, match="suite 'link' is defined twice"):
        suite_folders()


def test_init_cli_then_run_the_project_suite(tmp_path: Path) -> None:
    made = subprocess.run([sys.executable, "-m", "labtest.cli", "init", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    again = subprocess.run([sys.executable, "-m", "labtest.cli", "init", "demo"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "not an empty folder" in again.stderr
    ran = subprocess.run([sys.executable, "-m", "labtest.cli", "run", "--suite", "site_optics"],
                         cwd=tmp_path / "demo", capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "site_optics" in ran.stdout and (tmp_path / "demo/reports/allure-results").is_dir()


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    """`labtest testbed check ... | head -1`: the pipe closes under the summary."""
    done = subprocess.run(
        f"{sys.executable} -m labtest.cli testbed check {DEFAULT_TESTBED} | head -1",
        shell=True, capture_output=True, text=True, timeout=60)
    assert "testbed 'emulated-leafspine'" in done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
