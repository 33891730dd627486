"""Imports go downwards only, and no modules import each other in a circle: every module of
every layer, read statically (docs/architecture.md).

Layers, low to high: the core (capabilities, transports, testbed, parsing, measure, ...),
the emulated lab and the drivers beside each other on top of it, the fixtures, the
suites, and the applications (plugins, reports, CLI, run, matrix, burn-in, doctor, db).
An import inside a function counts as much as one at the top of a module. The few
upward edges that remain are listed with the reason; a new one fails this test.

Circles are read from the same imports, module by module: ``from labtest.a.b import c``
is an arrow to ``labtest.a.b`` (to ``labtest.a.b.c`` where that is a module) and to every
package above it that the importing module is not inside (its ``__init__`` runs first).
A lower module must not import a higher one: move the shared type down, or hand the
higher one in (a Protocol, a callable); an import moved into a function is still an arrow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("labtest", "drivers", "fixtures", "suites")

APPS = {"plugin", "reports", "run", "runner_cli", "config_cli", "matrix", "cli",
        "burnin", "doctor", "db", "project", "reservation",
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


# --- circles -----------------------------------------------------------------------------

#: circles still standing, each with why (a circle not listed, or one that changed, fails)
KNOWN_CIRCLES: dict[frozenset[str], str] = {}  # none left (issue 38): keep it so


def arrows_of(path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``path`` names in an import, anywhere in it."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:  # "from pkg import sub" names the module pkg.sub
                sub = f"{node.module}.{alias.name}"
                named.add(sub if sub in modules else node.module)
    return {n for n in named if n in modules}


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (see the module's docstring)."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        arrows: set[str] = set()
        for imported in arrows_of(path, modules):
            arrows.add(imported)
            parts = imported.split(".")
            for i in range(1, len(parts)):
                package = ".".join(parts[:i])
                inside = module == package or module.startswith(package + ".")
                if package in modules and not inside:
                    arrows.add(package)
        arrows.discard(module)
        graph[module] = arrows
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, arrows = work[-1]
            for nxt in arrows:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def describe_circle(circle: frozenset[str], graph: Mapping[str, Iterable[str]]) -> str:
    arrows = [f"  {a} -> {b}" for a in sorted(circle) for b in sorted(graph[a]) if b in circle]
    return f"circle of {len(circle)}: {', '.join(sorted(circle))}\n" + "\n".join(arrows)


def test_no_new_import_circles() -> None:
    modules = {module_name(p): p for p in _sources()}
    graph = import_graph(modules)
    found = circles(graph)
    unknown = [describe_circle(c, graph) for c in found if c not in KNOWN_CIRCLES]
    assert not unknown, "modules that import each other:\n" + "\n".join(unknown)
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"circles cut or changed: take them off KNOWN_CIRCLES: {gone}"


def test_a_circle_is_named_with_its_arrows(tmp_path: Path) -> None:
    """Not vacuous: a function-local import back up, and one through a package's
    ``__init__``, are circles; a module importing its own package's parts is none."""
    files = {
        "labtest.low": "def f():\n    from labtest.high import g\n",
        "labtest.high": "from labtest import low\n",
        "labtest.pkg": "from labtest.pkg.part import h\n",
        "labtest.pkg.part": "from labtest.pkg import base\nfrom labtest.user import u\n",
        "labtest.pkg.base": "k = 1\n",
        "labtest.user": "from labtest.pkg.base import k\n",
    }
    modules = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        modules[name] = path
    graph = import_graph(modules)
    found = circles(graph)
    assert set(found) == {frozenset({"labtest.low", "labtest.high"}),
                          frozenset({"labtest.pkg", "labtest.pkg.part", "labtest.user"})}
    text = describe_circle(frozenset({"labtest.low", "labtest.high"}), graph)
    assert "labtest.low -> labtest.high" in text and "labtest.high -> labtest.low" in text


def test_the_loader_checks_faults_through_entry_points_and_says_when_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader finds each backend's fault declarations by entry point (so it imports no
    emulation); the built-in backends are declared, and a missing declaration is a located
    problem, never a testbed whose faults go unchecked."""
    from labtest import installed
    from labtest.errors import ConfigError
    from labtest.testbed import load_testbed

    assert "link_down" in (installed.fault_declarations("kernel") or {})
    assert "silent_drop" in (installed.fault_declarations("model") or {})
    path = tmp_path / "tb.yaml"
    path.write_text(
        "name: t\ndevices:\n  sw1: {role: leaf, driver: sonic, address: 127.0.0.1}\n"
        "links: []\nemulation:\n  faults:\n    - {kind: silent_drop, target: sw1:Ethernet0}\n")
    monkeypatch.setattr(installed, "FAULT_BACKENDS", "labtest.no_such_group")
    with pytest.raises(ConfigError) as refused:
        load_testbed(path)
    assert any("emulation.backend" in p and "no installed package declares" in p
               for p in refused.value.problems), refused.value.problems
