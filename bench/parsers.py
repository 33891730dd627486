"""Parser throughput on 10 MB captures, one line per parser (issue 15: >= 5 MB/s each).

Each parser reachable from ``labtest parse`` gets its largest stored real sample
grown to ``--mb`` megabytes: result rows repeated with new sizes (perftest,
nccl-tests), or the whole capture repeated with its ports and counters renamed
per copy (Ethernet0 -> Ethernet1000, rx_bytes -> rx_bytes_c1), so the input is
as valid as the sample. Inputs the parser still refuses (a second JSON
document, a second perftest banner) are timed too: a refusal must be as quick.
Printed: MB, seconds, MB/s and what came out.

    python bench/parsers.py [--mb 10] [--only sonic] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

from corpus import Sample, samples  # noqa: E402

from labtest.errors import LabtestError  # noqa: E402
from labtest.parsing import lookup  # noqa: E402

TARGET_MB_S = 5.0
_ROW = re.compile(r"^(\s*)(\d+)(\s+\d+\s.*)$", re.M)
_PORT = re.compile(r"\b(Ethernet-BP|Ethernet|Eth|eth|mlx5_|Port-Channel|PortChannel)(\d+)")
_PROMPT = re.compile(r"^\S*@\S*?[#$]|^\S*[#$]\s|^#\s*(?:ethtool|show)\b")
_COUNTER = re.compile(r"^(\s+)([A-Za-z_][\w.\-\[\]]*)(:\s)", re.M)


def _rows_grown(text: str, size: int) -> str | None:
    """Perftest / nccl-tests: the result rows repeated with fresh first-column values."""
    rows = list(_ROW.finditer(text))
    if len(rows) < 1:
        return None
    head, tail = text[: rows[0].start()], text[rows[-1].end() :]
    block = [m.group(0) for m in rows]
    out, n, total = [], 0, len(head) + len(tail)
    while total < size:
        for line in block:
            m = _ROW.match(line)
            assert m is not None
            n += 1
            row = f"{m.group(1)}{n}{m.group(3)}"
            out.append(row)
            total += len(row) + 1
    return head + "\n".join(out) + tail


def _copies_grown(text: str, size: int, rename_counters: bool) -> str:
    """The whole capture repeated, ports (and ethtool counters) renamed per copy."""
    text = "".join(ln for ln in text.splitlines(keepends=True) if not _PROMPT.match(ln))
    parts, total, k = [], 0, 0
    while total < size:
        copy = _PORT.sub(lambda m, k=k: f"{m.group(1)}{int(m.group(2)) + 1000 * k}", text)
        if rename_counters and k:
            copy = _COUNTER.sub(lambda m, k=k: f"{m.group(1)}{m.group(2)}_c{k}{m.group(3)}", copy)
        parts.append(copy.rstrip("\n") + "\n\n")  # copies apart, as separate captures
        total += len(parts[-1])
        k += 1
    return "".join(parts)


def grown(sample: Sample, size: int) -> str:
    if sample.command.startswith(("ib_", "all_", "alltoall", "broadcast", "reduce")):
        text = _rows_grown(sample.text, size)
        if text is not None:
            return text
    return _copies_grown(sample.text, size, rename_counters=sample.command.startswith("ethtool"))


def outcome(record: object) -> str:
    if isinstance(record, dict | list):
        return f"parsed, {len(record)} records"
    rows = getattr(record, "rows", None)
    return f"parsed, {len(rows)} rows" if rows is not None else "parsed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--only", help="driver family (sonic, linux, eos, nxos)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs")
    args = ap.parse_args()
    size = int(args.mb * 1_000_000)
    largest: dict[tuple[str, str], Sample] = {}
    for s in samples():
        key = (s.driver, s.command)
        if (not args.only or s.driver == args.only) and len(s.text) > len(
            largest.get(key, s).text if key in largest else ""
        ):
            largest[key] = s
    print(f"{'parser':<58} {'MB':>6} {'s':>7} {'MB/s':>8}  result")
    slow = 0
    for (driver, command), sample in sorted(largest.items()):
        text = grown(sample, size)
        parse = lookup(driver, command)
        best, result = float("inf"), ""
        for _ in range(args.repeat):
            start = time.perf_counter()
            try:
                result = outcome(parse(text))
            except LabtestError as exc:
                result = f"refused: {str(exc).splitlines()[0][:70]}"
            best = min(best, time.perf_counter() - start)
        mb = len(text.encode()) / 1e6
        rate = mb / best if best > 0 else float("inf")
        slow += rate < TARGET_MB_S
        flag = "" if rate >= TARGET_MB_S else "  << below target"
        name = f"{driver} {command!r}"
        print(f"{name:<58} {mb:6.1f} {best:7.2f} {rate:8.1f}  {result}{flag}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{len(largest)} parsers, {slow} below {TARGET_MB_S:g} MB/s (load average {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
