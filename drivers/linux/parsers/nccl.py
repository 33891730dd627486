"""nccl-tests (NVIDIA/nccl-tests, also rccl-tests) result tables.

The column header decides the layout, because it changed over the years:
current versions print ``size count type redop root`` then two groups of
``time algbw busbw #wrong`` (out-of-place, in-place); older ones printed an
``error`` column (max relative error) instead of ``#wrong``, and the oldest had
no ``redop``/``root`` for collectives without them. ``#wrong`` counts get printed
in %g notation once large (``1.04858e+06``) and as ``N/A`` where a collective
has no in-place variant. NCCL INFO lines, plugin chatter and shell prompts
inside the table are skipped. The data-corruption gate is ``# Out of bounds
values : N OK|FAILED`` plus any non-zero ``#wrong``.
"""

from __future__ import annotations

import re

from labtest.capabilities.host import NcclResult, NcclRow, NcclTiming
from labtest.drivers.linux.parsers._common import parse_error, to_int
from labtest.parsing import fingerprint, parser

_COLLECTIVES = (
    "all_reduce_perf",
    "all_gather_perf",
    "broadcast_perf",
    "reduce_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "scatter_perf",
    "gather_perf",
    "sendrecv_perf",
    "hypercube_perf",
)
_PREFIX_COLUMNS = ("size", "count", "type", "redop", "root")
_GROUP = ("time", "algbw", "busbw")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", re.M)
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.eE+-]+)", re.M)
_COLLECTIVE = re.compile(r"^#\s*Collective test starting:\s*(\S+)", re.M)
_FAILURE = re.compile(r"^.*Test (?:CUDA |NCCL |HIP )?failure.*$", re.M)


def _columns(line: str) -> list[str] | None:
    """Column names of a table header line, or None if it is not one."""
    names = line.lstrip("#").split()
    if names[:3] != ["size", "count", "type"] or "time" not in names:
        return None
    return [n.lstrip("#") for n in names]


def _layout(columns: list[str], text: str) -> tuple[list[str], str]:
    """Prefix columns and the per-group check column ("wrong" or "error")."""
    first_time = columns.index("time")
    prefix = columns[:first_time]
    groups = columns[first_time:]
    check = groups[3] if len(groups) == 8 else None
    if (
        any(c not in _PREFIX_COLUMNS for c in prefix)
        or check not in ("wrong", "error")
        or groups != [*_GROUP, check, *_GROUP, check]
    ):
        raise parse_error(f"unknown nccl-tests column layout: {' '.join(columns)}", text)
    return prefix, check


def _float(token: str) -> float | None:
    return None if token == "N/A" else float(token)


def _timing(tokens: list[str], check: str) -> NcclTiming:
    time_us, algbw, busbw, last = tokens
    if check == "wrong":
        return NcclTiming(
            _float(time_us), _float(algbw), _float(busbw), None if last == "N/A" else to_int(last)
        )
    return NcclTiming(_float(time_us), _float(algbw), _float(busbw), None, _float(last))


def _row(tokens: list[str], prefix: list[str], check: str) -> NcclRow | None:
    """A data row, or None if the line is noise that happens to have the right width."""
    width = len(prefix)
    if not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    head = dict(zip(prefix, tokens[:width], strict=True))
    try:
        out_of_place = _timing(tokens[width : width + 4], check)
        in_place = _timing(tokens[width + 4 : width + 8], check)
        root = int(head["root"]) if "root" in head else None
    except ValueError:
        return None
    return NcclRow(
        size_bytes=int(head["size"]),
        count=int(head["count"]),
        type=head["type"],
        redop=head.get("redop"),
        root=root,
        out_of_place=out_of_place,
        in_place=in_place,
    )


@parser("linux", *_COLLECTIVES)
def parse_nccl_tests(text: str) -> NcclResult:
    """One nccl-tests run (any collective, current or older layout)."""
    headers = [(i, cols) for i, line in enumerate(text.splitlines()) if (cols := _columns(line))]
    if not headers:
        raise parse_error("no nccl-tests table header (# size count type ... time algbw)", text)
    if len(headers) > 1:
        raise parse_error(f"{len(headers)} nccl-tests tables in one output; split the runs", text)
    start, columns = headers[0]
    prefix, check = _layout(columns, text)
    rows: list[NcclRow] = []
    seen: set[tuple[str, ...]] = set()
    width = len(prefix) + 8
    for line in text.splitlines()[start + 1 :]:
        tokens = line.split()
        if line.startswith("#") or len(tokens) < width:
            continue
        if len(tokens) > width:
            if _row(tokens[-width:], prefix, check) is not None:  # a lost line end
                raise parse_error(f"a result row is glued to other text: {line.strip()!r}",
                                  text, expected="each result row on a line of its own")
            continue
        row = _row(tokens, prefix, check)
        if row is not None:
            # rows of one size may repeat (tiny sizes on many ranks), never to the digit
            if tuple(tokens) in seen:
                raise parse_error(
                    f"row repeated: {line.strip()!r}", text, expected="each result row once"
                )
            seen.add(tuple(tokens))
            rows.append(row)
    if not rows:
        raise parse_error("nccl-tests table has no result rows (the run failed?)", text)
    bounds = _OUT_OF_BOUNDS.search(text)
    avg = _AVG_BUSBW.search(text)
    collective = _COLLECTIVE.search(text)
    return NcclResult(
        rows=rows,
        avg_busbw_gbs=float(avg.group(1)) if avg else None,
        out_of_bounds=int(bounds.group(1)) if bounds else None,
        collective=collective.group(1) if collective else None,
        layout=check,
        # each failing rank once: a line pasted twice is not a second failure
        failures=list(dict.fromkeys(m.group().strip() for m in _FAILURE.finditer(text))),
    )


# The collective named in the output (the command line echoed, "Collective test
# starting: X") decides first; the redop column tells reductions from the rest.
_REDUCING = ("all_reduce_perf", "reduce_perf", "reduce_scatter_perf")
for _name in _COLLECTIVES:
    fingerprint("linux", _name, rf"(?<![\w]){_name}\b", strength=2)
fingerprint(
    "linux",
    "a reduction (all_reduce_perf, reduce_perf, reduce_scatter_perf)",
    r"^\s*\d+\s+\d+\s+\w+\s+(?:sum|prod|min|max|avg|premulsum)\s",
    *_REDUCING,
)
fingerprint(
    "linux",
    "a collective without reduction (all_gather, alltoall, broadcast, ...)",
    r"^\s*\d+\s+\d+\s+\w+\s+none\s",
    *(c for c in _COLLECTIVES if c not in _REDUCING),
)
