"""Imports go downwards only: every module of every layer, read statically (docs/architecture.md).

Layers, low to high: the core (capabilities, transports, testbed, parsing, measure, ...),
the emulated lab and the drivers beside each other on top of it, the fixtures, the
suites, and the applications (plugins, reports, CLI, run, matrix, burn-in, doctor, db).
An import inside a function counts as much as one at the top of a module. The few
upward edges that remain are listed with the reason; a new one fails this test.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("labtest", "drivers", "fixtures", "suites")

APPS = {"plugin", "reports", "run", "runner_cli", "matrix", "cli",
        "burnin", "doctor", "db", "project", "reservation", "reservation_plugin",
        "project_template"}

#: layer -> the layers it may import (besides its own)
MAY_IMPORT = {
    "core": set(),
    "emulation": {"core"},
    "drivers": {"core"},
    "fixtures": {"core"},
    "suites": {"core", "fixtures"},
    "app": {"core", "emulation", "drivers", "fixtures", "suites"},
}

#: (importing module prefix, imported module prefix) -> why the upward edge is there
EXCEPTIONS = {
    ("labtest.testbed.loader", "labtest.emulation.model.faults"):
        "a testbed's emulation faults are validated against the fault catalogue at load",
    ("labtest.testbed.loader", "labtest.emulation.kernel.faults"):
        "a kernel-lab testbed's faults are validated against the kernel lab's at load",
    ("labtest.fixtures.suite_data", "labtest.suites"):
        "the suites' settings files are found through the suites package's folder",
    ("labtest.suites", "labtest.plugin"):
        "pytest_generate_tests reads the session's testbed and lab (testbed_of, lab_of)",
    ("labtest.suites", "labtest.reports.attach"):
        "suites attach evidence (plots, tables) to the Allure report",
    ("labtest.suites", "labtest.reports"):
        "suites attach evidence (plots, tables) to the Allure report",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] != "labtest":
        parts.insert(0, "labtest")  # drivers/, fixtures/, suites/ are imported under labtest
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    part = module.split(".")[1] if "." in module else ""
    if part in ("emulation", "drivers", "fixtures", "suites"):
        return part
    return "app" if part in APPS else "core"


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in found if n == "labtest" or n.startswith("labtest.")}


def _excepted(module: str, imported: str) -> bool:
    return any(module.startswith(a) and (imported == b or imported.startswith(b + "."))
               for a, b in EXCEPTIONS)


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_every_layer_has_modules() -> None:
    """The check reads every layer: a layer that moved would otherwise pass unread."""
    seen = {layer(module_name(p)) for p in _sources()}
    assert seen == set(MAY_IMPORT)


def violations(modules: list[tuple[str, Path]]) -> list[str]:
    """Every import of ``modules`` (name, file) that goes up a layer and is not excepted."""
    wrong = []
    for module, path in modules:
        source = layer(module)
        allowed = MAY_IMPORT[source] | {source}
        for imported in sorted(imports(path)):
            target = layer(imported)
            # "from labtest import plugin" names the package; its members are checked
            if imported == "labtest" or target in allowed or _excepted(module, imported):
                continue
            wrong.append(f"{path.name}: {module} ({source}) imports {imported} ({target})")
    return wrong


@pytest.mark.parametrize("source_layer", sorted(MAY_IMPORT))
def test_imports_go_downwards(source_layer: str) -> None:
    modules = [(module_name(p), p) for p in _sources()]
    wrong = violations([(m, p) for m, p in modules if layer(m) == source_layer])
    assert not wrong, "\n".join(wrong)


def test_the_rules_name_an_upward_import(tmp_path: Path) -> None:
    """Not vacuous: a driver importing a suite, or the emulation importing a driver, is named."""
    driver = tmp_path / "driver.py"
    driver.write_text("from labtest.suites.link import link_watch\n", encoding="utf-8")
    emulator = tmp_path / "emulator.py"
    emulator.write_text("def f():\n    import labtest.drivers.sonic.parsers\n", encoding="utf-8")
    wrong = violations([("labtest.drivers.fake.driver", driver),
                        ("labtest.emulation.fake", emulator)])
    assert len(wrong) >= 2 and "(suites)" in wrong[0] and "(drivers)" in wrong[-1]
