"""Allure's ``environment.properties`` and ``categories.json``.

Categories keep three kinds of red apart, in this order (Allure uses the first
category that matches):

1. *Emulation deviations*: a test marked ``emulation_deviation`` failed on the
   emulated lab, where the emulator is known not to model what it checks;
2. *Broken infrastructure*: an ``InfraError`` (transport errors, timeouts,
   parse errors, instrument errors) — the lab could not be asked;
3. *Product failures*: the product answered and missed a limit
   (``LimitFailure``) or an assertion;
4. *Test defects*: any other exception, i.e. a bug in the test or a fixture.

Messages are matched from their start (``^...[\\s\\S]*``) so the same regex
works in Allure 2 (Java full match) and Allure 3 (JavaScript search).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from labtest.errors import InfraError, LimitFailure
from labtest.outcome import qualified_name
from labtest.reports import CATEGORIES_FILE, ENVIRONMENT_FILE
from labtest.reports.files import write_atomic

EMULATION_DEVIATIONS = "Emulation deviations"
BROKEN_INFRASTRUCTURE = "Broken infrastructure"
PRODUCT_FAILURES = "Product failures"
TEST_DEFECTS = "Test defects"


def infra_error_names() -> list[str]:
    """Every ``InfraError`` subclass imported so far (drivers may add their own)."""
    found: list[type] = []
    todo = [InfraError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted({qualified_name(c) for c in found})


def _starts_with(names: list[str]) -> str:
    alternatives = "|".join(re.escape(n) for n in names)
    return rf"^(?:{alternatives}):[\s\S]*"


def categories(deviation_error: type) -> list[dict[str, Any]]:
    """The categories, in matching order (see the module docstring)."""
    return [
        {
            "name": EMULATION_DEVIATIONS,
            "description": "failed on the emulated lab where the emulator is known to deviate",
            "matchedStatuses": ["failed", "broken"],
            "messageRegex": _starts_with([qualified_name(deviation_error)]),
        },
        {
            "name": BROKEN_INFRASTRUCTURE,
            "description": "the lab could not be asked: transport, timeout, parse, instrument",
            "matchedStatuses": ["broken"],
            "messageRegex": _starts_with(infra_error_names()),
        },
        {
            "name": PRODUCT_FAILURES,
            "description": f"a measurement missed its limit ({LimitFailure.__name__}) "
            "or an assertion failed",
            "matchedStatuses": ["failed"],
        },
        {
            "name": TEST_DEFECTS,
            "description": "an unexpected exception in a test or fixture",
            "matchedStatuses": ["broken"],
        },
    ]


def match_category(rules: list[dict[str, Any]], status: str, message: str) -> str | None:
    """The category Allure would pick for a result (used by tests and the sign-off)."""
    for rule in rules:
        if status not in rule.get("matchedStatuses", [status]):
            continue
        regex = rule.get("messageRegex")
        if regex is None or re.search(regex, message or ""):
            return str(rule["name"])
    return None


def write_categories(results_dir: Path, rules: list[dict[str, Any]]) -> Path:
    path = results_dir / CATEGORIES_FILE
    write_atomic(path, json.dumps(rules, indent=2) + "\n")
    return path


def properties_text(props: Mapping[str, object]) -> str:
    """Java ``.properties`` text (what Allure 2 and 3 both parse), one key a line."""
    lines = [f"{_escape(k, key=True)}={_escape(_text(v))}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def write_environment(results_dir: Path, props: Mapping[str, object]) -> Path:
    path = results_dir / ENVIRONMENT_FILE
    write_atomic(path, properties_text(props))
    return path


def _text(value: object) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _escape(text: str, key: bool = False) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        out = re.sub(r"([=: #!])", r"\\\1", out)
    return out
