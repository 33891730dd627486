"""``labtest init DIR``: start a lab's own test project on top of the installed labtest.

The project holds what a lab owns — its testbed, its limits, its own suites — and pins
the labtest it was made with; labtest's suites, drivers and fixtures stay in the package,
so upgrading labtest upgrades them.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from labtest import __version__
from labtest.run import DEFAULT_TESTBED, SUITES_DIR

TEMPLATE = resources.files("labtest") / "project_template"
#: the limits profile a new project starts from, and the limit its example suite adds
BASE_LIMITS = SUITES_DIR / "limits" / "acceptance-400g.yaml"
EXAMPLE_LIMIT = {
    "site.module_temperature_c": {
        "low": 0,
        "high": 70,
        "unit": "C",
        "source": "example: this site's policy; replace with your own and cite it "
                  "(SFF-8636/CMIS modules are commercial-temperature parts, 0-70 C case)",
    },
}
EXIT_OK, EXIT_USAGE = 0, 2


class InitError(Exception):
    """The project could not be created (target not empty, bad name)."""


def init_project(target: Path) -> list[Path]:
    """Write a new lab project into ``target`` (created; must be absent or empty)."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InitError(f"{target} exists and is not an empty folder")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", target.resolve().name).strip("-") or "lab"
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path | list[Path]] = [_copy_template(TEMPLATE, target, name)]
    written.append(_write(target / "limits.yaml", _limits_text()))
    written.append(_write(target / "testbed.yaml", _testbed_text()))
    return [p for group in written for p in (group if isinstance(group, list) else [group])]


def _copy_template(src: Any, dst: Path, name: str) -> list[Path]:
    out: list[Path] = []
    for entry in src.iterdir():
        if entry.name in ("__pycache__",):
            continue
        target = dst / entry.name.removesuffix(".tmpl")
        text = "" if entry.is_dir() else entry.read_text(encoding="utf-8")
        if entry.is_dir():
            target.mkdir(exist_ok=True)
            out += _copy_template(entry, target, name)
        elif entry.name.endswith(".tmpl"):  # {name} and {version} filled in
            out.append(_write(target, text.format(name=name, version=__version__)))
        else:
            out.append(_write(target, text))
    return out


def _limits_text() -> str:
    """The base profile with this project's limits first under its ``limits:`` mapping."""
    base = BASE_LIMITS.read_text(encoding="utf-8")
    extra = yaml.safe_dump(EXAMPLE_LIMIT, sort_keys=False, allow_unicode=True)
    own = "  # --- this project's own limits ---\n" + "".join(
        f"  {line}\n" for line in extra.splitlines()
    )
    text, n = re.subn(r"(?m)^limits:[ \t]*\n", lambda m: m.group(0) + own, base, count=1)
    if n != 1:
        raise InitError(f"{BASE_LIMITS}: expected a top-level 'limits:' mapping")
    note = f"# Started from labtest {__version__}'s acceptance-400g profile by `labtest init`.\n"
    return note + text


def _testbed_text() -> str:
    text = DEFAULT_TESTBED.read_text(encoding="utf-8")
    text, n = re.subn(r"(?m)^limits:.*$", "limits: limits.yaml", text)
    if n != 1:
        raise InitError(f"{DEFAULT_TESTBED}: expected one top-level 'limits:' line, found {n}")
    return (
        f"# Started from labtest {__version__}'s emulated leaf-spine lab by `labtest init`:\n"
        "# describe your own lab here (see the labtest docs: testbed.md, real-lab.md).\n" + text
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "init", help="start a lab project: testbed, limits, an example suite, pinned labtest",
        description="Create DIR with a testbed (from the emulated leaf-spine lab), a copy of "
                    "the acceptance limits, an example suite and a README; then `cd DIR && "
                    "labtest run` runs the built-in suites and the project's own.",
    )
    ap.add_argument("dir", type=Path, help="the new project's folder (absent or empty)")
    ap.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    try:
        written = init_project(args.dir)
    except (InitError, OSError) as exc:
        print(f"labtest init: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for path in written:
        print(f"  wrote {path}")
    print(f"labtest init: next: cd {shlex.quote(str(args.dir))} && labtest run --suite site_optics")
    return EXIT_OK


__all__ = ["InitError", "init_project", "register"]
