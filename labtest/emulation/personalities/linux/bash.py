"""The slice of a POSIX shell an emulated Linux host needs to understand its callers.

Drivers talk to a Linux host through ``bash -c`` (one SSH exec per command
line), so what arrives is shell syntax: ``nohup stdbuf -oL -eL ib_write_bw ...
> /tmp/x.log 2>&1 < /dev/null & echo $!``, ``cd DIR && grep -H . *``,
``ethtool -S eth0 | grep pause``. This module turns such a line into steps
(pipelines joined by ``;``, ``&&``, ``||`` or ``&``) of simple commands with
their redirections, with bash's quoting rules, and holds the pure text
filters (grep, head, tail, wc) a pipeline may end in. What each command does
lives with the host (``session``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ">>", ">&", ";", "&", "|", ">", "<")
_SEPARATORS = (";", "&&", "||", "&")
_REDIRECTS = (">", ">>", "<", ">&")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class ShellSyntaxError(ValueError):
    """A line bash would refuse; the message is bash's own wording."""


@dataclass(frozen=True)
class Word:
    text: str
    glob: bool = False  # an unquoted * or ? that the shell expands against files
    literal: bool = False  # had a '...' part: no $ expansion


@dataclass(frozen=True)
class Redirect:
    fd: int  # 0 stdin, 1 stdout, 2 stderr
    op: str  # ">", ">>", "<" or ">&" (duplicate: target is a descriptor number)
    target: str


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> list[str]:
        return [w.text for w in self.words]

    def empty(self) -> bool:
        return not self.words and not self.redirects and not self.env


@dataclass
class Step:
    pipeline: list[Command]
    then: str = ""  # the separator after it: ";", "&&", "||", "&" or "" at the end


@dataclass(frozen=True)
class _Op:
    text: str
    fd: int | None = None


def tokenize(line: str) -> list[Word | _Op]:
    """Words and operators with bash's quoting: '...' literal, "..." with \\ escapes."""
    tokens: list[Word | _Op] = []
    buf: list[str] | None = None
    glob = quoted = single = False
    i, n = 0, len(line)

    def flush() -> None:
        nonlocal buf, glob, quoted, single
        if buf is not None:
            tokens.append(Word("".join(buf), glob, single))
        buf, glob, quoted, single = None, False, False, False

    while i < n:
        c = line[i]
        if c in " \t\r\n":
            flush()
            i += 1
        elif c == "#" and buf is None:
            break  # a comment runs to the end of the line
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching `''")
            buf = (buf or []) + list(line[i + 1 : end])
            quoted, single, i = True, True, end + 1
        elif c == '"':
            chars, i = _double_quoted(line, i + 1)
            buf = (buf or []) + chars
            quoted = True
        elif c == "\\" and i + 1 < n:
            buf = (buf or []) + [line[i + 1]]
            quoted, i = True, i + 2
        elif (op := next((o for o in _OPERATORS if line.startswith(o, i)), None)) is not None:
            fd = None
            if op[0] in "<>" and buf is not None and not quoted and "".join(buf).isdigit():
                fd, buf = int("".join(buf)), None  # "2>" : the digits name a descriptor
            flush()
            tokens.append(_Op(op, fd))
            i += len(op)
        else:
            glob = glob or c in "*?"
            buf = (buf or []) + [c]
            i += 1
    flush()
    return tokens


def _double_quoted(line: str, i: int) -> tuple[list[str], int]:
    chars: list[str] = []
    while i < len(line):
        c = line[i]
        if c == '"':
            return chars, i + 1
        if c == "\\" and i + 1 < len(line) and line[i + 1] in '"\\$`':
            chars.append(line[i + 1])
            i += 2
            continue
        chars.append(c)
        i += 1
    raise ShellSyntaxError("unexpected EOF while looking for matching `\"'")


def parse(line: str) -> list[Step]:
    """Steps of a command line; raises ShellSyntaxError where bash would."""
    steps: list[Step] = []
    pipeline: list[Command] = []
    current = Command()
    pending: _Op | None = None
    for token in tokenize(line):
        if isinstance(token, Word):
            if pending is not None:
                default_fd = 0 if pending.text == "<" else 1
                fd = pending.fd if pending.fd is not None else default_fd
                current.redirects.append(Redirect(fd, pending.text, token.text))
                pending = None
            elif not current.words and _ASSIGNMENT.match(token.text):
                name, _, value = token.text.partition("=")
                current.env[name] = value
            else:
                current.words.append(token)
            continue
        if pending is not None:
            raise ShellSyntaxError(f"syntax error near unexpected token `{token.text}'")
        if token.text in _REDIRECTS:
            pending = token
        elif token.text == "|":
            if current.empty():
                raise ShellSyntaxError("syntax error near unexpected token `|'")
            pipeline.append(current)
            current = Command()
        else:  # a separator
            if current.empty():
                raise ShellSyntaxError(f"syntax error near unexpected token `{token.text}'")
            steps.append(Step([*pipeline, current], token.text))
            pipeline, current = [], Command()
    if pending is not None:
        raise ShellSyntaxError("syntax error near unexpected token `newline'")
    if not current.empty():
        steps.append(Step([*pipeline, current]))
    elif pipeline:
        raise ShellSyntaxError("syntax error: unexpected end of file")
    return steps


# --- text filters ------------------------------------------------------------


@dataclass
class Ctx:
    """What one command gets besides its words: its stdin and ``VAR=value`` prefixes."""

    stdin: str = ""
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Output:
    stdout: str = ""
    stderr: str = ""
    status: int = 0


Reader = Callable[[str], tuple[str | None, str]]  # file name -> (text, or None and why not)


def grep(argv: list[str], stdin: str, read: Reader) -> Output:
    """grep over its FILE arguments (``read`` opens them) or stdin.

    Options: -i -v -c -o -q -h -H -E -F -w -e PATTERN (several). An unreadable
    file is reported (``grep: NAME: WHY``) and turns the status into 2.
    """
    opts, patterns, rest = _grep_options(argv)
    if patterns is None:
        if not rest:
            return Output(stderr="Usage: grep [OPTION]... PATTERNS [FILE]...\n", status=2)
        patterns = [rest.pop(0)]
    flags = re.IGNORECASE if "i" in opts else 0
    try:
        compiled = [_grep_regex(p, opts, flags) for p in patterns]
    except re.error as exc:
        return Output(stderr=f"grep: {exc}\n", status=2)
    sources = [(name, *read(name)) for name in rest] if rest else [(None, stdin, "")]
    prefix = ("H" in opts or len(sources) > 1) and "h" not in opts
    out, err, found, failed = [], [], False, False
    for name, text, why in sources:
        if text is None:
            err.append(f"grep: {name}: {why}\n")
            failed = True
            continue
        hits = [
            ln for ln in text.splitlines() if any(rx.search(ln) for rx in compiled) != ("v" in opts)
        ]
        found = found or bool(hits)
        lead = f"{name}:" if prefix and name is not None else ""
        if "c" in opts:
            out.append(f"{lead}{len(hits)}")
        elif "o" in opts and "v" not in opts:
            out.extend(
                f"{lead}{m.group()}" for ln in hits for rx in compiled for m in rx.finditer(ln)
            )
        else:
            out.extend(f"{lead}{ln}" for ln in hits)
    status = 2 if failed else (0 if found else 1)
    if "q" in opts:
        return Output(status=0 if found else status)
    return Output("".join(f"{ln}\n" for ln in out), "".join(err), status)


def _grep_options(argv: list[str]) -> tuple[set[str], list[str] | None, list[str]]:
    opts: set[str] = set()
    patterns: list[str] | None = None
    rest: list[str] = []
    i = 1  # argv[0] is the tool's name
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1 and not rest:
            letters = arg[1:]
            for k, ch in enumerate(letters):
                if ch == "e":
                    value = letters[k + 1 :] or (argv[i + 1] if i + 1 < len(argv) else "")
                    i += 0 if letters[k + 1 :] else 1
                    patterns = [*(patterns or []), value]
                    break
                opts.add(ch)
        else:
            rest.append(arg)
        i += 1
    return opts, patterns, rest


def _grep_regex(pattern: str, opts: set[str], flags: int) -> re.Pattern[str]:
    if "F" in opts:
        body = re.escape(pattern)
    elif "E" in opts:
        body = pattern
    else:  # basic regex: \| \( \) are the operators, bare | ( ) are literals
        body = re.sub(r"\\([|()+?{}])|([|()+?{}])", lambda m: m[1] or "\\" + m[2], pattern)
    if "w" in opts:
        body = rf"\b(?:{body})\b"
    return re.compile(body, flags)


def head_tail(argv: list[str], text: str, tail: bool) -> Output:
    """``head``/``tail`` with -n N (also -N and -nN)."""
    count = 10
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-n" and i + 1 < len(argv):
            count, i = int(argv[i + 1].lstrip("+-") or 10), i + 1
        elif arg.startswith("-n"):
            count = int(arg[2:].lstrip("+-"))
        elif arg[1:].isdigit():
            count = int(arg[1:])
        i += 1
    lines = text.splitlines(keepends=True)
    picked = lines[-count:] if tail and count else ([] if tail else lines[:count])
    return Output("".join(picked))


def wc(argv: list[str], text: str) -> Output:
    lines, words, chars = text.count("\n"), len(text.split()), len(text)
    if "-l" in argv:
        return Output(f"{lines}\n")
    if "-w" in argv:
        return Output(f"{words}\n")
    if "-c" in argv:
        return Output(f"{chars}\n")
    return Output(f"{lines:7d} {words:7d} {chars:7d}\n")
