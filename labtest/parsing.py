"""The parser registry behind ``labtest parse DRIVER "COMMAND" FILE``.

Every parser is a plain function from device text to a typed record. Driver
packages register theirs with :func:`parser`; the CLI finds a driver's parser
module through the ``labtest.parsers`` entry-point group, so field engineers
can paste captured output into any parser without a lab.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import math
from collections.abc import Callable
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import BaseModel

Parser = Callable[[str], Any]

_registry: dict[tuple[str, str], Parser] = {}


def normalise(command: str) -> str:
    return " ".join(command.split())


def parser(driver: str, *commands: str) -> Callable[[Parser], Parser]:
    """Register ``fn`` as the parser of each of ``commands`` for ``driver``."""

    def register(fn: Parser) -> Parser:
        for command in commands:
            _registry[(driver, normalise(command))] = fn
        return fn

    return register


def load_driver_parsers(driver: str) -> None:
    for ep in entry_points(group="labtest.parsers"):
        if ep.name == driver:
            importlib.import_module(ep.value)
            return
    known = sorted(ep.name for ep in entry_points(group="labtest.parsers"))
    raise LookupError(f"no parsers for driver {driver!r}; known drivers: {', '.join(known)}")


def lookup(driver: str, command: str) -> Parser:
    load_driver_parsers(driver)
    key = (driver, normalise(command))
    if key in _registry:
        return _registry[key]
    # the longest registered command that prefixes what was typed ("ib_write_bw -d mlx5_0")
    matches = [c for (d, c) in _registry if d == driver and key[1].startswith(c + " ")]
    if not matches:  # a wrapper in front: "mpirun -np 8 ... all_reduce_perf -b 8"
        words = key[1].split()
        matches = [
            c
            for (d, c) in _registry
            if d == driver
            and c.split()[0] in words[1:]
            and " ".join(words[words.index(c.split()[0]) :]).startswith(c)
        ]
    if matches:
        return _registry[(driver, max(matches, key=len))]
    known = sorted(c for (d, c) in _registry if d == driver)
    raise LookupError(
        f"driver {driver!r} has no parser for {command!r}; it parses: " + "; ".join(known)
    )


def commands(driver: str) -> list[str]:
    load_driver_parsers(driver)
    return sorted(c for (d, c) in _registry if d == driver)


def to_jsonable(record: Any) -> Any:
    """Records (dataclasses, pydantic models, enums, paths) as plain JSON values."""
    if isinstance(record, BaseModel):
        return to_jsonable(record.model_dump())
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: to_jsonable(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, dict):
        return {str(k): to_jsonable(v) for k, v in record.items()}
    if isinstance(record, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in record]
    if isinstance(record, enum.Enum):
        return record.value
    if isinstance(record, Path | datetime):
        return str(record)
    if isinstance(record, float) and not math.isfinite(record):
        return None if math.isnan(record) else ("-inf" if record < 0 else "inf")
    return record
