"""YAML loading that remembers where every value came from.

Every user-facing file (testbed, limits, station) is read through here, so
each error can name ``file:line:column`` and the field path, and all errors
of a file are reported at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from labtest.errors import ConfigError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass
class Source:
    """Parsed YAML plus a map from field path to (line, column), 1-based."""

    path: Path
    data: Any
    marks: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def where(self, loc: Iterable[str | int]) -> tuple[str, str]:
        """``file:line:col`` of the deepest known part of ``loc``, and the dotted path."""
        parts = tuple(loc)
        for cut in range(len(parts), -1, -1):
            if parts[:cut] in self.marks:
                line, col = self.marks[parts[:cut]]
                break
        else:
            line, col = 1, 1
        return f"{self.path}:{line}:{col}", dotted(parts)

    def problem(self, loc: Iterable[str | int], message: str) -> None:
        place, path = self.where(loc)
        self.problems.append(f"{place}: {path or '<file>'}: {message}")

    def raise_if_problems(self) -> None:
        if self.problems:
            raise ConfigError(str(self.path), self.problems)


def dotted(loc: Iterable[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read(path: Path) -> Source:
    """Parse ``path``; syntax errors and duplicate keys raise ``ConfigError``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(str(path), [f"{path}: cannot read: {exc.strerror}"]) from None
    src = Source(path=path, data=None)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ConfigError(str(path), [f"{path}:{line}:{col}: YAML syntax: {exc.problem}"]) from None
    if node is None:
        raise ConfigError(str(path), [f"{path}:1:1: the file is empty"])
    src.data = _build(node, (), src)
    src.raise_if_problems()
    return src


_scalars = yaml.SafeLoader("")
MERGE = "tag:yaml.org,2002:merge"


def _build(node: yaml.Node, loc: Loc, src: Source) -> Any:
    src.marks[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        return _build_mapping(node, loc, src)
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*loc, i), src) for i, item in enumerate(node.value)]
    return _scalars.construct_object(node, deep=True)


def _build_mapping(node: yaml.MappingNode, loc: Loc, src: Source) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    merged: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if key_node.tag == MERGE:  # '<<: *anchor' — explicit keys win over merged ones
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source in sources:
                built = _build(source, loc, src)
                if isinstance(built, dict):
                    merged.update({k: v for k, v in built.items() if k not in merged})
            continue
        key = _scalars.construct_object(key_node, deep=True)
        child = (*loc, key)
        key_mark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        if isinstance(key, str | int) and key in out:
            src.marks[child] = key_mark
            src.problem(child, "duplicate key")
            continue
        out[key] = _build(value_node, child, src)
        src.marks[child] = key_mark  # point at the key: where a person looks for a field
    src.marks[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    return {**{k: v for k, v in merged.items() if k not in out}, **out}


def validate(src: Source, model: type[M], secret_keys: frozenset[str] = frozenset()) -> M | None:
    """Validate into ``model``; each pydantic error becomes a located problem."""
    try:
        return model.model_validate(src.data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
            msg = err["msg"]
            if err["type"] == "missing":
                src.problem(loc, "required field is missing")
                continue
            if err["type"] == "extra_forbidden":
                src.problem(loc, "unknown field (check the spelling)")
                continue
            secret = bool(loc) and loc[-1] in secret_keys
            found = "<secret>" if secret else _short(err.get("input"))
            src.problem(loc, f"{msg}; found {found}")
        return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
