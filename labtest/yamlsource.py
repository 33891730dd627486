"""YAML loading that remembers where every value came from.

Every user-facing file (testbed, limits, station) is read through here, so
each error can name ``file:line:column`` and the field path, and all errors
of a file are reported at once. What YAML allows but a config file must not
hold is a located error too, never a traceback: bytes that are not UTF-8, an
alias that contains itself, a list or mapping used as a key, and a document
whose aliases expand past ``MAX_ALIASED_NODES`` (an "alias bomb"), a document of
more than ``MAX_NODES`` values, a file over ``MAX_BYTES`` (refused before it is
parsed), and a tag that is not a plain YAML type (``!!python/object``, ``!!binary``,
``!custom``): labtest never builds objects from a file, and a tag it ignored would
make the file mean something else to another reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from labtest.errors import ConfigError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)

#: the most nodes a document may expand to, aliases counted at each use; a
#: 2000-device testbed is ~200 000, a 9-line alias bomb is 10**9
MAX_NODES = 1_000_000
#: the most nodes built again through aliases (a ``<<: *host`` merge per device
#: of a large lab is a few thousand)
MAX_ALIASED_NODES = 100_000
#: the deepest nesting a document may have (YAML and the builder recurse)
MAX_DEPTH = 200
#: the largest file read at all (checked before parsing: pure-Python YAML takes about a
#: second per megabyte; a 2000-device testbed is well under 1 MB)
MAX_BYTES = 8 * 1024 * 1024
#: the tags a config file may carry, explicitly (``!!str 01``) or as YAML resolves them
PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}"
    for t in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")
)


@dataclass
class Source:
    """Parsed YAML plus a map from field path to (line, column), 1-based."""

    path: Path
    data: Any
    marks: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    nodes: int = 0  # built so far, aliases counted at each use
    aliased: int = 0  # of those, built again through an alias
    built: set[int] = field(default_factory=set)  # ids of nodes built at least once

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


class _TooBig(Exception):
    """The document expands past MAX_NODES; building stops at once."""


def decode_text(path: Path, data: bytes) -> str:
    """UTF-8 text of a config file, or ConfigError at the first byte that is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = data[exc.start : exc.start + 1].hex()
        raise ConfigError(
            str(path),
            [
                f"{path}:{line}:{col}: not UTF-8 (byte 0x{byte}); save the file as UTF-8 "
                "(a latin-1 file: iconv -f latin1 -t utf-8)"
            ],
        ) from None


def read(path: Path) -> Source:
    """Parse ``path``; syntax errors and duplicate keys raise ``ConfigError``."""
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = b"" if size > MAX_BYTES else fh.read(MAX_BYTES + 1)  # +1: a pipe's size is 0
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(str(path), [f"{path}: cannot read: {reason}"]) from None
    if size > MAX_BYTES or len(data) > MAX_BYTES:
        shown = f"{size / 2**20:.1f} MB" if size > MAX_BYTES else "more than that"
        raise ConfigError(str(path), [
            f"{path}:1:1: the file is {shown}; a config file may be at most "
            f"{MAX_BYTES // 2**20} MB (is this the file you meant?)"
        ])
    text = decode_text(path, data)
    src = Source(path=path, data=None)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise ConfigError(str(path), [f"{path}:{line}:{col}: YAML syntax: {exc.problem}"]) from None
    except yaml.YAMLError as exc:  # the reader: a control character, a NUL
        mark = getattr(exc, "position", None)
        where = _position(text, mark) if isinstance(mark, int) else "1:1"
        reason = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise ConfigError(str(path), [f"{path}:{where}: YAML: {reason}"]) from None
    except RecursionError:
        raise ConfigError(str(path), [f"{path}:1:1: nested too deeply for a config file"]) from None
    if node is None:
        raise ConfigError(str(path), [f"{path}:1:1: the file is empty"])
    try:
        nodes, distinct = _expanded_size(node, {}, set())
        if nodes > MAX_NODES or nodes - distinct > MAX_ALIASED_NODES:  # before building any
            src.nodes, src.aliased = nodes, nodes - distinct
            raise _TooBig
        src.data = _build(node, (), src, ())
    except _TooBig:
        where = f"{path}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"
        if src.aliased > MAX_ALIASED_NODES:
            src.problems.append(
                f"{where}: the document expands to more than {MAX_ALIASED_NODES} values "
                "through its aliases (an alias bomb?)"
            )
        else:
            src.problems.append(
                f"{where}: the document holds more than {MAX_NODES} values; "
                "a config file is not that big"
            )
    src.raise_if_problems()
    return src


def load_data(path: str | Path) -> Any:
    """Plain data of a YAML file with every ``read`` guard (settings, overrides)."""
    return read(Path(path)).data


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _expanded_size(node: yaml.Node, sizes: dict[int, int], path: set[int]) -> tuple[int, int]:
    """(values the builder would make, aliases counted at each use; distinct nodes), counted
    once per distinct node: a billion laughs is measured in microseconds, never expanded.
    Counts what :func:`_build` counts (mapping values, merge sources, list items); a node
    that contains itself counts once (the builder reports it)."""
    key = id(node)
    if key in sizes:
        return sizes[key], 0
    if key in path or len(path) > MAX_DEPTH:
        return 1, 0
    path.add(key)
    total, distinct = 1, 1
    if isinstance(node, yaml.MappingNode):
        children = [v for k, v in node.value if k.tag != MERGE]
        for k, v in node.value:
            if k.tag == MERGE:
                children += v.value if isinstance(v, yaml.SequenceNode) else [v]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
    else:
        children = []
    for child in children:
        size, new = _expanded_size(child, sizes, path)
        total, distinct = total + size, distinct + new
        if total > MAX_NODES:  # enough to refuse; stop counting
            break
    path.discard(key)
    sizes[key] = total
    return total, distinct


_scalars = yaml.SafeLoader("")
MERGE = "tag:yaml.org,2002:merge"


def _build(node: yaml.Node, loc: Loc, src: Source, parents: tuple[int, ...]) -> Any:
    """The value of ``node``; ``parents`` (node ids on the way down) catch an alias
    that contains itself, which YAML allows and a config file cannot mean."""
    src.marks[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    src.nodes += 1
    if id(node) in src.built:  # a node built before: this is an alias expanding again
        src.aliased += 1
    src.built.add(id(node))
    if src.nodes > MAX_NODES or src.aliased > MAX_ALIASED_NODES:
        raise _TooBig
    if id(node) in parents:
        src.problem(loc, "an alias refers to the node that contains it (recursive YAML)")
        return None
    if len(parents) > MAX_DEPTH:
        src.problem(loc, f"nested deeper than {MAX_DEPTH} levels")
        return None
    if node.tag not in PLAIN_TAGS:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        src.problem(
            loc, f"the tag {tag} is not allowed: a config file holds plain values only "
            "(mappings, lists, strings, numbers, booleans, null, dates)",
        )
        return None
    inner = (*parents, id(node))
    if isinstance(node, yaml.MappingNode):
        return _build_mapping(node, loc, src, inner)
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*loc, i), src, inner) for i, item in enumerate(node.value)]
    try:
        return _scalars.construct_object(node, deep=True)
    except yaml.YAMLError as exc:  # an unknown tag (!!python/object, ...)
        src.problem(loc, f"cannot read this value: {getattr(exc, 'problem', None) or exc}")
        return None


def _build_mapping(
    node: yaml.MappingNode, loc: Loc, src: Source, parents: tuple[int, ...]
) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    merged: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if key_node.tag == MERGE:  # '<<: *anchor' — explicit keys win over merged ones
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source in sources:
                built = _build(source, loc, src, parents)
                if isinstance(built, dict):
                    merged.update({k: v for k, v in built.items() if k not in merged})
            continue
        key_mark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
        if not isinstance(key_node, yaml.ScalarNode):
            src.marks[(*loc, "<key>")] = key_mark
            src.problem(
                (*loc, "<key>"), "a mapping key must be a plain value, not a list or mapping"
            )
            continue
        if key_node.tag not in PLAIN_TAGS:
            src.marks[(*loc, "<key>")] = key_mark
            tag = key_node.tag.replace("tag:yaml.org,2002:", "!!")
            src.problem((*loc, "<key>"), f"the tag {tag} is not allowed on a key")
            continue
        try:
            key = _scalars.construct_object(key_node, deep=True)
        except yaml.YAMLError as exc:
            src.marks[(*loc, "<key>")] = key_mark
            src.problem((*loc, "<key>"), f"cannot read this key: {getattr(exc, 'problem', exc)}")
            continue
        child = (*loc, key)
        if isinstance(key, str | int) and key in out:
            src.marks[child] = key_mark
            src.problem(child, "duplicate key")
            continue
        out[key] = _build(value_node, child, src, parents)
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
