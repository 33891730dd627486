"""perftest (linux-rdma/perftest) bandwidth and latency output.

Formats follow the tools' own printing (perftest_parameters.c / perftest_resources.c):
a banner (``RDMA_Write BW Test``), ``Key : value`` settings, one table. Real
outputs carry noise the parser skips: CPU-frequency warnings inside the table,
the server's ``Waiting for client`` box, shell prompts, driver banners, tabs.

Bandwidth is printed in ``MB/sec`` (really MiB/s, 2**20 bytes; newer versions say
``MiB/sec``) or ``Gb/sec`` with ``--report_gbits``. The message-rate column is
independent of that unit, so every row is cross-checked against
bytes x rate: a server run without ``--report_gbits`` whose client had it prints
Gb/s values under an ``MB/sec`` header. Such rows get a warning and no
normalised figure instead of a silently wrong one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from labtest.capabilities.host import (
    PerftestBandwidth,
    PerftestBwRow,
    PerftestLatency,
    PerftestLatRow,
)
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import fingerprint, parser

_MIB_PER_S_IN_GBPS = 2**20 * 8 / 1e9
_GBPS_PER_UNIT = {
    "Gb/sec": 1.0,
    "Gbit/sec": 1.0,
    "MB/sec": _MIB_PER_S_IN_GBPS,
    "MiB/sec": _MIB_PER_S_IN_GBPS,
}
_REL_TOLERANCE = 0.10  # printed BW vs bytes x message rate
_MIN_CHECKED_GBPS = 0.05  # below this, two-decimal rounding dominates the check

_BANNER = re.compile(r"^\s*(\S.*?(?:BW|Latency) Test)\s*$", re.MULTILINE)
_SERVER_BANNER = "Waiting for client to connect"
_CPU_FREQ_WARNING = "Conflicting CPU frequency values detected"
_DASHES = re.compile(r"^\s*-{20,}\s*$")

_BW_HEADER = re.compile(
    r"^\s*#bytes\s+#?iterations\s+BW.peak\[(?P<unit>[^\]]+)\]\s+BW.average\[(?P<avg>[^\]]+)\]",
    re.MULTILINE,
)
_NUM = r"(-?\d+(?:\.\d+)?)"
_BW_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+{_NUM}\s+{_NUM}\s+{_NUM}(?:\s|$)")

# Latency columns in the order perftest may print them; the header decides which exist.
_LAT_COLUMNS = (
    (r"#bytes", "bytes"),
    (r"#iterations", "iterations"),
    (r"t_min\[", "t_min_us"),
    (r"t_max\[", "t_max_us"),
    (r"t_typical\[", "t_typical_us"),
    (r"t_avg\[", "t_avg_us"),
    (r"t_stdev\[", "t_stdev_us"),
    (r"(?<![.\d])99% percentile", "p99_us"),
    (r"99\.9% percentile", "p99_9_us"),
    (r"tps average", "tps_average"),
)
_LAT_ROW = re.compile(r"^\s*\d+\s+\d+\s+\d")
_GLUED = re.compile(r"\d+\.\d{2}")  # latency columns are printed "%.2f"


def _setting(text: str, pattern: str) -> str | None:
    match = re.search(pattern + r"\s*:\s*(\S+)", text)
    return match.group(1) if match else None


def _int_setting(text: str, pattern: str) -> int | None:
    value = _setting(text, pattern)
    digits = re.match(r"\d+", value or "")
    return int(digits.group()) if digits else None


def _banner(text: str) -> str:
    banners = _BANNER.findall(text)
    if not banners:
        raise parse_error("no perftest banner (e.g. 'RDMA_Write BW Test') found", text)
    if len(banners) > 1:
        raise parse_error(
            f"{len(banners)} perftest runs in one output ({', '.join(banners)}); "
            "parse each side separately",
            text,
        )
    return banners[0].strip()


def _tool_warnings(text: str) -> list[str]:
    """The tool's own warnings, kept because they explain a poor figure."""
    warnings = [line.strip() for line in text.splitlines() if line.strip().startswith("WARNING")]
    cpu = text.count(_CPU_FREQ_WARNING)
    if cpu:
        warnings.append(f"perftest reported conflicting CPU frequencies {cpu} time(s)")
    return warnings


def _table_lines(text: str, header_end: int) -> list[str]:
    """Lines after the header up to the closing dashes (or the end)."""
    lines: list[str] = []
    for line in text[header_end:].splitlines()[1:]:
        if _DASHES.match(line):
            break
        lines.append(line)
    return lines


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL_TOLERANCE * max(abs(a), abs(b))


# --- bandwidth ---------------------------------------------------------------


def _bw_row(
    bytes_: int, iterations: int, peak: float, avg: float, rate: float, unit: str
) -> tuple[PerftestBwRow, str | None]:
    """One row with normalised figures, plus a warning when the unit is contradicted."""
    from_rate = bytes_ * rate * 8e-3  # B x Mpps -> Gb/s
    factor = _GBPS_PER_UNIT.get(unit)
    warning = None
    trusted = factor is not None
    checkable = factor is not None and avg > 0 and from_rate >= _MIN_CHECKED_GBPS
    if checkable and factor is not None and not _close(avg * factor, from_rate):
        other = 1.0 if factor != 1.0 else _MIB_PER_S_IN_GBPS
        if _close(avg * other, from_rate):
            trusted = False
            looks_like = "Gb/sec" if other == 1.0 else "MB/sec"
            warning = (
                f"{bytes_} B: printed unit {unit} contradicts the message rate "
                f"({bytes_} B x {rate} Mpps = {from_rate:.2f} Gb/s, printed {avg}); "
                f"the values look like {looks_like} (known server-side quirk), "
                "bw_*_gbps left empty"
            )
        else:
            warning = (
                f"{bytes_} B: BW average {avg} {unit} disagrees with the message rate "
                f"({from_rate:.2f} Gb/s)"
            )
    gbps = factor if (trusted and factor is not None) else None
    row = PerftestBwRow(
        bytes=bytes_,
        iterations=iterations,
        bw_peak=peak,
        bw_average=avg,
        msg_rate_mpps=rate,
        bw_peak_gbps=round(peak * gbps, 6) if gbps is not None else None,
        bw_average_gbps=round(avg * gbps, 6) if gbps is not None else None,
        bw_from_msg_rate_gbps=round(from_rate, 6),
    )
    return row, warning


@parser("linux", "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw")
def parse_perftest_bw(text: str) -> PerftestBandwidth:
    """A bandwidth run, client or server side, text or ``--out_json`` output."""
    header = _BW_HEADER.search(text)
    if header is None and text.lstrip().startswith("{"):
        return _parse_bw_json(text)
    if header is None:
        hint = " (this is latency output)" if "t_avg[usec]" in text else ""
        raise parse_error("no perftest bandwidth table header (#bytes ... BW peak)" + hint, text)
    test = _banner(text)
    unit = header.group("unit")
    warnings = _tool_warnings(text)
    if unit not in _GBPS_PER_UNIT:
        warnings.append(f"unknown bandwidth unit {unit!r}; bw_*_gbps left empty")
    rows: list[PerftestBwRow] = []
    sizes: set[int] = set()
    for line in _table_lines(text, header.start()):
        match = _BW_ROW.match(line)
        if not match:
            continue
        if int(match[1]) in sizes:
            raise parse_error(
                f"two result rows for {match[1]} B", text, expected="one row per message size"
            )
        sizes.add(int(match[1]))
        row, warning = _bw_row(
            int(match[1]), int(match[2]), float(match[3]), float(match[4]), float(match[5]), unit
        )
        rows.append(row)
        if warning:
            warnings.append(warning)
    if not rows:
        raise parse_error("perftest bandwidth table has no result rows (the run failed?)", text)
    return PerftestBandwidth(
        test=test,
        device=_setting(text, r"Device"),
        link_type=_setting(text, r"Link type"),
        qps=_int_setting(text, r"Number of qps"),
        mtu_bytes=_int_setting(text, r"Mtu"),
        bw_unit=unit,
        rows=rows,
        warnings=warnings,
        gid_index=_int_setting(text, r"GID index"),
        connection_type=_setting(text, r"Connection type"),
        bidirectional="Bidirectional" in test,
        server_side=_SERVER_BANNER in text,
    )


def _lenient_json(text: str) -> Any:
    """perftest's --out_json is not always valid JSON (bare words, trailing commas)."""
    body = text.lstrip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        fixed = re.sub(r"(:\s*)([A-Za-z_][\w.\-/]*)(\s*[,}\n])", r'\1"\2"\3', body)
        fixed = re.sub(r",(\s*[}\]])", r"\1", fixed)
        try:
            return json.loads(fixed)
        except json.JSONDecodeError as exc:
            raise parse_error(f"perftest --out_json output is not JSON: {exc}", text) from exc


def _infer_unit(size: int, rate: float, avg: float) -> str:
    from_rate = size * rate * 8e-3
    if _close(avg, from_rate):
        return "Gb/sec"
    if _close(avg * _MIB_PER_S_IN_GBPS, from_rate):
        return "MiB/sec"
    return "unknown"


def _parse_bw_json(text: str) -> PerftestBandwidth:
    data = _lenient_json(text)
    if not isinstance(data, dict) or "results" not in data:
        raise parse_error("perftest JSON has no 'results' object", text)
    info = data.get("test_info") or {}
    results = data["results"]
    results = results if isinstance(results, list) else [results]
    warnings = ["bw_unit inferred from the message rate: --out_json carries no unit"]
    rows: list[PerftestBwRow] = []
    units: list[str] = []
    try:
        for res in results:
            size, rate = int(res["MsgSize"]), float(res["MsgRate"])
            avg, peak = float(res["BW_average"]), float(res["BW_peak"])
            unit = _infer_unit(size, rate, avg)
            if unit == "unknown":
                warnings.append(f"{size} B: BW average {avg} matches no unit at {rate} Mpps")
            units.append(unit)
            row, warning = _bw_row(size, int(res["n_iterations"]), peak, avg, rate, unit)
            rows.append(row)
            if warning:
                warnings.append(warning)
    except (KeyError, TypeError, ValueError) as exc:
        raise parse_error(f"perftest JSON result lacks a field: {exc}", text) from exc
    if not rows:
        raise parse_error("perftest JSON has no result rows", text)
    test = str(info.get("test", ""))
    return PerftestBandwidth(
        test=test,
        device=info.get("Device"),
        link_type=info.get("Link_type"),
        qps=info.get("Number_of_qps"),
        mtu_bytes=info.get("Mtu"),
        bw_unit=units[0] if len(set(units)) == 1 else "mixed",
        rows=rows,
        warnings=warnings,
        gid_index=info.get("GID_index"),
        connection_type=info.get("Connection_type"),
        bidirectional="Bidirectional" in test,
    )


# --- latency -------------------------------------------------------------------


def _lat_header(text: str) -> tuple[int, list[str]]:
    """Position of the latency header line and the record fields of its columns."""
    for match in re.finditer(r"^.*#bytes.*$", text, re.MULTILINE):
        line = match.group()
        found = [(m.start(), name) for pat, name in _LAT_COLUMNS for m in re.finditer(pat, line)]
        fields = [name for _, name in sorted(found)]
        if "t_avg_us" in fields or "t_typical_us" in fields:
            return match.start(), fields
    hint = " (this is bandwidth output)" if _BW_HEADER.search(text) else ""
    raise parse_error("no perftest latency table header (#bytes ... t_avg[usec])" + hint, text)


def _lat_values(line: str, expected: int, text: str) -> tuple[list[str], bool]:
    """Row tokens; splits columns perftest printed without a space ("2465.901216.65")."""
    tokens = line.split()
    if len(tokens) == expected:
        return tokens, False
    split: list[str] = []
    for token in tokens:
        parts = _GLUED.findall(token)
        glued = token.count(".") > 1 and "".join(parts) == token
        split.extend(parts if glued else [token])
    if len(split) != expected:
        raise parse_error(
            f"latency row has {len(tokens)} values, the header has {expected} columns: "
            f"{line.strip()!r}",
            text,
        )
    return split, True


@parser("linux", "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat")
def parse_perftest_lat(text: str) -> PerftestLatency:
    """A latency run: iteration mode (min/max/typical/avg/stdev/percentiles) or -D mode."""
    start, fields = _lat_header(text)
    test = _banner(text)
    warnings = _tool_warnings(text)
    rows: list[PerftestLatRow] = []
    sizes: set[int] = set()
    for line in _table_lines(text, start):
        if not _LAT_ROW.match(line):
            continue
        values, glued = _lat_values(line, len(fields), text)
        record: dict[str, Any] = {}
        for name, value in zip(fields, values, strict=True):
            record[name] = int(value) if name in ("bytes", "iterations") else float(value)
        if record["bytes"] in sizes:
            raise parse_error(
                f"two result rows for {record['bytes']} B", text, expected="one row per size"
            )
        sizes.add(record["bytes"])
        if glued:
            warnings.append(f"{record['bytes']} B: columns printed without a space were split")
        rows.append(PerftestLatRow(**record))
    if not rows:
        raise parse_error("perftest latency table has no result rows (the run failed?)", text)
    return PerftestLatency(
        test=test,
        device=_setting(text, r"Device"),
        rows=rows,
        link_type=_setting(text, r"Link type"),
        mtu_bytes=_int_setting(text, r"Mtu"),
        warnings=warnings,
        server_side=_SERVER_BANNER in text,
    )


# The banner names the operation: ib_read_lat output is not ib_write_lat's.
for _tool, _op in (
    ("ib_write", "RDMA_Write"),
    ("ib_read", "RDMA_Read"),
    ("ib_send", "Send"),
    ("ib_atomic", "Atomic"),
):
    fingerprint(
        "linux",
        f"{_tool}_bw",
        rf"^\s*{_op}\b[^\n]*\bBW Test\s*$|\"test\":\s*\"{_op}_[^\"]*BW",
        strength=2,
    )
    fingerprint("linux", f"{_tool}_lat", rf"^\s*{_op}\b[^\n]*\bLatency Test\s*$", strength=2)
