"""The parser registry behind ``labtest parse DRIVER "COMMAND" FILE``.

Every parser is a plain function from device text to a typed record. Driver
packages register theirs with :func:`parser`; the CLI finds a driver's parser
module through the ``labtest.parsers`` entry-point group, so field engineers
can paste captured output into any parser without a lab.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import math
import re
from collections.abc import Callable
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from labtest.errors import LabtestError, ParseError

Parser = Callable[..., Any]
F = TypeVar("F", bound=Parser)

_registry: dict[tuple[str, str], Parser] = {}

PARSE_DEVICE = "<parse>"  # device name in errors when a parser runs outside a driver


# --- decoding policy ----------------------------------------------------------------


class InputError(LabtestError):
    """A file could not be read at all (missing, a directory, no permission): one line."""


def decode(data: bytes, source: str = "<input>") -> tuple[str, str | None]:
    """Bytes as text under the one policy labtest applies to every input.

    UTF-8 (a BOM is dropped); anything else is decoded with U+FFFD in place of
    each undecodable byte and a warning naming the first one. Replacement rather
    than latin-1 because a wrong byte then stays visible: a parser refuses a
    capture holding U+FFFD (or a control character) at its line and column
    instead of returning a plausible but wrong value; a loader reports it as a
    located error. A latin-1 file is converted first (``iconv -f latin1 -t utf-8``).
    """
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        byte = data[exc.start : exc.start + 1].hex()
        text = data.decode("utf-8-sig", errors="replace")
        return text, (
            f"{source}:{line}:{col}: not UTF-8 (byte 0x{byte}); undecodable bytes read as "
            "U+FFFD, which a parser refuses where it finds one"
        )


def read_input(path: str | Path) -> tuple[str, str | None]:
    """A file's text and the decoding warning, or InputError with a one-line reason."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return decode(data, str(path))


# --- command fingerprints -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """Text that only one command (family) prints, e.g. perftest's ``RDMA_Read BW Test``."""

    label: str  # the command as a user would name it
    pattern: re.Pattern[str]
    commands: frozenset[tuple[str, str]]  # (driver, normalised command) it belongs to
    strength: int  # 2: names the command (a banner); 1: a header only it prints


_fingerprints: list[Fingerprint] = []


def fingerprint(driver: str, label: str, pattern: str, *commands: str, strength: int = 1) -> None:
    """Declare that text matching ``pattern`` is output of ``commands`` (``label``).

    The strongest level at which any fingerprint matches decides: if none of
    the requested command's fingerprints match there, the text is refused as
    the other command's output.
    """
    _fingerprints.append(
        Fingerprint(
            label,
            re.compile(pattern, re.MULTILINE),
            frozenset((driver, normalise(c)) for c in commands or (label,)),
            strength,
        )
    )


#: fingerprints are looked for in the head of a capture, where banners and table
#: headers are; scanning 10 MB forty times would cost more than parsing it
FINGERPRINT_WINDOW = 256_000


def _check_fingerprint(key: tuple[str, str], command: str, text: str) -> None:
    text = text[:FINGERPRINT_WINDOW]
    matching = [f for f in _fingerprints if f.pattern.search(text)]
    if not matching:
        return
    top = max(f.strength for f in matching)
    matching = [f for f in matching if f.strength == top]
    if any(key in f.commands for f in matching):
        return
    for f in matching:
        if key not in f.commands:
            m = f.pattern.search(text)
            line = text.count("\n", 0, m.start()) + 1 if m else None
            raise ParseError(
                PARSE_DEVICE,
                f"this looks like {f.label!r} output, not {command!r}",
                raw=text,
                command=command,
                line=line,
                expected=f"{command!r} output",
            )


# --- the contract every parser gets ------------------------------------------------
#
# One error type raised inside a parser (Garbled), one check of the bytes, one check
# of a cut last line, one wrapper that turns all of it into a located ParseError. The
# drivers' parsers register through :func:`checked`; ``labtest parse`` adds the
# command fingerprints on top (:func:`guarded`).

_CUT = object()
_BAD_CHAR = re.compile("[\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

#: what a parser raises besides Garbled when a capture is not what it reads; the
#: wrapper names the exception (a bug in a parser still surfaces, as a located refusal)
_READ_ERRORS = (ValueError, KeyError, IndexError, TypeError, AttributeError)


class Garbled(ValueError):
    """Raised inside a parser: what is wrong, the 1-based ``line`` and what was ``expected``.

    The wrapper (:func:`checked`, :func:`guarded`) turns it into a ParseError naming the
    device and the command, which a parser body does not know.
    """

    def __init__(self, message: str, line: int | None = None, expected: str | None = None):
        super().__init__(message)
        self.line = line
        self.expected = expected


def parse_error(device: str, command: str, exc: BaseException, raw: str) -> ParseError:
    """The ParseError for ``exc`` raised while reading ``raw`` as ``command``'s output."""
    if isinstance(exc, Garbled):
        return ParseError(device, f"{command}: {exc}", raw=raw, command=command,
                          line=exc.line, expected=exc.expected)
    return ParseError(device, f"{command}: {exc!r}", raw=raw, command=command)


def check_damage(text: str) -> None:
    """Refuse a capture holding an undecodable byte (U+FFFD) or a control character.

    Not only in the values read: a damaged byte in a label the parser looks for
    ("Waiting for client", "Model Number") changes a value without appearing in it.
    """
    if m := _BAD_CHAR.search(text):
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        what = (
            "an undecodable byte (U+FFFD)"
            if m.group() == "\ufffd"
            else f"control character U+{ord(m.group()):04X}"
        )
        raise Garbled(
            f"line {line} column {col} holds {what}; the capture is damaged or "
            "not UTF-8 (a latin-1 file: iconv -f latin1 -t utf-8)",
            line=line,
            expected="UTF-8 text",
        )


#: per (driver, command): the form of a last line that is whole even without its line
#: end (a value followed by its unit cannot have been cut inside the value)
_complete: dict[tuple[str, str], re.Pattern[str]] = {}


def complete_line(driver: str, pattern: str, *commands: str) -> None:
    """Declare that a last line matching ``pattern`` is whole (``ethtool -m``'s
    ``... : 0.2042 mW / -6.90 dBm``), so a capture saved without a final newline is read."""
    for command in commands:
        _complete[(driver, normalise(command))] = re.compile(pattern)


def check_cut(text: str, record: Any, again: Callable[[str], Any],
              key: tuple[str, str] | None = None) -> None:
    """A capture whose last line has no line end may be cut mid-line: that line
    must not have contributed anything (a cut ``out_octets: 5834192580`` reads 5),
    unless it has the command's whole form (:func:`complete_line`)."""
    if not text or text.endswith(("\n", "\r")):
        return
    start = max(text.rfind("\n"), text.rfind("\r")) + 1
    last = text[start:]
    if not last.strip():
        return
    whole = _complete.get(key) if key is not None else None
    if whole is not None and whole.search(last):
        return
    try:
        without = again(text[:start])
    except (LabtestError, *_READ_ERRORS):
        # needed: a closing bracket is complete; a data line may be cut
        if not re.search(r"[A-Za-z0-9]", last):
            return
        without = _CUT
    if without is _CUT or to_jsonable(without) != to_jsonable(record):
        raise Garbled(
            f"the last line {last.strip()[:60]!r} has no line end; the capture "
            "looks cut mid-line",
            line=text.count("\n") + 1,
            expected="a complete last line",
        )


def checked(
    driver: str,
    *commands: str,
    aliases: tuple[str, ...] = (),
    damage: bool = True,
    cut: bool | Callable[[str], bool] = True,
    before: Callable[[str, str], None] | None = None,
    register: bool = True,
) -> Callable[[F], F]:
    """Register a driver's parser for ``commands`` (and ``aliases``) with the ParseError
    contract: ``before(command, text)`` and the byte check run first, a cut last line is
    refused where ``cut`` says so (a predicate on the text, e.g. "not a closed JSON
    document"), and Garbled or any read error becomes a ParseError naming ``device=``.
    ``register=False``: the contract only, for a parser ``labtest parse`` must not offer.
    """

    def decorate(fn: F) -> F:
        command = commands[0]

        @functools.wraps(fn)
        def wrapper(text: str, *args: Any, device: str = PARSE_DEVICE, **kwargs: Any) -> Any:
            try:
                if damage:
                    check_damage(text)
                if before is not None:
                    before(command, text)
                record = fn(text, *args, **kwargs)
                if cut is True or (callable(cut) and cut(text)):
                    check_cut(text, record, lambda rest: fn(rest, *args, **kwargs),
                              (driver, normalise(command)))
                return record
            except _READ_ERRORS as exc:
                raise parse_error(device, command, exc, text) from exc

        if register:
            parser(driver, *commands, *aliases)(wrapper)
        return wrapper  # type: ignore[return-value]  # same signature, plus device=

    return decorate


def guarded(driver: str, command: str, fn: Parser) -> Parser:
    """``fn`` with the contract of ``labtest parse``: bytes decoded by the policy,
    another command's output refused, a cut last line refused, no undecodable
    value returned, and any unexpected exception turned into a ParseError."""
    key = (driver, normalise(command))

    @functools.wraps(fn)
    def run(text: str | bytes, *args: Any, **kwargs: Any) -> Any:
        if isinstance(text, bytes):
            text, _ = decode(text)
        _refuse_as_parse_error(command, text, check_damage, text)
        _check_fingerprint(key, command, text)

        def call(t: str) -> Any:
            try:
                return fn(t, *args, **kwargs)
            except LabtestError:
                raise
            except _READ_ERRORS as exc:
                raise parse_error(kwargs.get("device", PARSE_DEVICE), command, exc, t) from exc
            except RecursionError:
                raise ParseError(
                    PARSE_DEVICE, f"{command}: input nested too deeply", raw=t, command=command
                ) from None

        record = call(text)
        _refuse_as_parse_error(command, text, check_cut, text, record, call, key)
        return record

    return run


def _refuse_as_parse_error(command: str, raw: str, check: Callable[..., None], *args: Any) -> None:
    try:
        check(*args)
    except Garbled as exc:
        raise parse_error(PARSE_DEVICE, command, exc, raw) from None


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
    found = False
    for ep in entry_points(group="labtest.parsers"):
        # every family's fingerprints, so another driver's output is recognised too
        try:
            importlib.import_module(ep.value)
        except Exception:
            if ep.name == driver:
                raise
            continue
        found = found or ep.name == driver
    if found:
        return
    known = sorted(ep.name for ep in entry_points(group="labtest.parsers"))
    raise LookupError(f"no parsers for driver {driver!r}; known drivers: {', '.join(known)}")


def lookup(driver: str, command: str) -> Parser:
    load_driver_parsers(driver)
    key = (driver, normalise(command))
    if key in _registry:
        return guarded(driver, key[1], _registry[key])
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
        best = max(matches, key=len)
        return guarded(driver, best, _registry[(driver, best)])
    known = sorted(c for (d, c) in _registry if d == driver)
    raise LookupError(
        f"driver {driver!r} has no parser for {command!r}; it parses: " + "; ".join(known)
    )


def commands(driver: str) -> list[str]:
    load_driver_parsers(driver)
    return sorted(c for (d, c) in _registry if d == driver)


def drivers() -> list[str]:
    """Driver families with parsers (the ``labtest.parsers`` entry points)."""
    return sorted(ep.name for ep in entry_points(group="labtest.parsers"))


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
