"""``Any`` in labtest/ has a budget that only goes down (issue 38: 762 uses when it was
filed). A change that adds one must type it instead; a change that removes some lowers the
budget here, so the next cannot spend them again."""

from __future__ import annotations

import ast
from pathlib import Path

LABTEST = Path(__file__).resolve().parents[2] / "labtest"

#: uses of ``typing.Any`` in labtest/ (names in code and annotations), 2026-12-05
ANY_BUDGET = 737


def any_uses(root: Path) -> dict[Path, int]:
    """Per file, the ``Any`` names (``Any``, ``typing.Any``) its code and annotations use."""
    found: dict[Path, int] = {}
    for path in sorted(root.rglob("*.py")):
        n = 0
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            bare = isinstance(node, ast.Name) and node.id == "Any"
            dotted = (isinstance(node, ast.Attribute) and node.attr == "Any"
                      and isinstance(node.value, ast.Name) and node.value.id == "typing")
            n += bare or dotted
        if n:
            found[path] = n
    return found


def test_any_stays_within_its_budget_and_the_budget_follows_it_down() -> None:
    uses = any_uses(LABTEST)
    total = sum(uses.values())
    worst = ", ".join(f"{p.relative_to(LABTEST.parent)} {n}"
                      for p, n in sorted(uses.items(), key=lambda kv: -kv[1])[:5])
    assert total <= ANY_BUDGET, (
        f"{total} uses of Any in labtest/, over the budget of {ANY_BUDGET}: type what was "
        f"added (most: {worst})")
    assert total == ANY_BUDGET, (
        f"{total} uses of Any, under the budget of {ANY_BUDGET}: lower ANY_BUDGET to {total} "
        "in this file, so the budget only goes down")


def test_the_count_sees_both_spellings(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import typing\nfrom typing import Any\n\ndef f(x: Any) -> typing.Any:\n"
        "    return x\n")
    (tmp_path / "b.py").write_text("def g(x: int) -> int:\n    return x\n")
    assert any_uses(tmp_path) == {tmp_path / "a.py": 2}  # the uses, not the import
