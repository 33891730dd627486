"""Parsers for SONiC CLI output (the sonic-utilities ``show`` commands).

Most SONiC show commands print python-tabulate tables: a header line, a line of
dash groups (one group per column) and rows; cells are separated by two or
more spaces and a cell may be blank. The dash line is the ground truth for the
columns, so rows are read against it rather than split on whitespace.

Every parser takes the text a field engineer pastes (a leading prompt line,
"Last cached time ..." banners and trailing prompts are tolerated) and returns
typed records keyed by port. Output it cannot read raises ``ParseError`` with
the raw text; numbers lose their thousands separators, ``N/A`` becomes
``None``. Formats checked against the samples under ``tests/drivers/samples/sonic``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from labtest.capabilities.switch import (
    Facts,
    FecHistogram,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
    PfcWatchdogConfig,
    PfcWatchdogState,
    PlatformSummary,
    PmParameter,
    PrbsResult,
    QueueCounter,
    QueueCounters,
    TransceiverPm,
)
from labtest.capabilities.transceiver import Threshold, Transceiver
from labtest.drivers.common.cells import NA as _NA
from labtest.drivers.common.cells import cell_float as _float
from labtest.drivers.common.cells import cell_int as _int
from labtest.drivers.common.cells import cell_text as _text
from labtest.drivers.common.cells import in_field_unit, lane_doms
from labtest.drivers.common.lldp import newest_per_port
from labtest.parsing import F, checked, fingerprint
from labtest.parsing import Garbled as _Garbled

DRIVER = "sonic"
UNKNOWN_PORT = "unknown"  # key used when the output itself does not name the port


def _sonic(*commands: str) -> Callable[[F], F]:
    """Register a parser for ``commands`` with the ParseError contract. The byte and
    cut-line checks are ``labtest parse``'s here (:func:`labtest.parsing.guarded`)."""
    return checked(DRIVER, *commands, damage=False, cut=False)


def _updown(cell: str | None) -> bool | None:
    value = (cell or "").strip().lower()
    return {"up": True, "down": False}.get(value)


# --- tabulate tables ---------------------------------------------------------

_CELL = re.compile(r"\S+(?: \S+)*")  # a cell: words joined by single spaces
_SEPARATOR = re.compile(r"^\s*-+(?: +-+)+\s*$")  # two or more dash groups
_RULE = re.compile(r"^\s*-+\s*$")  # a single long rule ends a table
_PROMPT = re.compile(r"^\S+@\S*?[#$]")  # "admin@sonic:~$" / "root@sonic:~#" after a capture


@dataclass
class _Table:
    headers: list[str]
    rows: list[dict[str, str | None]]
    title: str | None  # the non-blank line just above the header, if any
    lines: list[int]  # 1-based line number of each row in the text

    def __post_init__(self) -> None:
        self._lower = {h.lower(): h for h in self.headers}
        self._found: dict[tuple[str, ...], str | None] = {}

    def column(self, *names: str) -> str | None:
        """The first of ``names`` present (case-insensitive), else None."""
        if names in self._found:
            return self._found[names]
        found = next((self._lower[n.lower()] for n in names if n.lower() in self._lower), None)
        self._found[names] = found
        return found

    def cell(self, row: dict[str, str | None], *names: str) -> str | None:
        """``row``'s value in the first of ``names`` present; None if no such column."""
        column = self.column(*names)
        return row[column] if column else None


def _columns(line: str, spans: list[tuple[int, int]]) -> list[str | None]:
    """Cells of ``line`` assigned to the columns whose dash spans they overlap."""
    words = _CELL.findall(line)
    if len(words) == len(spans):  # the common case; also survives hand-aligned docs
        return words
    cells = [(m.start(), m.end(), m.group()) for m in _CELL.finditer(line)]
    out: list[str | None] = [None] * len(spans)
    for start, end, value in cells:

        def score(i: int, start: int = start, end: int = end) -> tuple[int, float]:
            s, e = spans[i]
            overlap = min(end, e) - max(start, s)
            return overlap, -abs((start + end) / 2 - (s + e) / 2)

        best = max(range(len(spans)), key=score)
        out[best] = value if out[best] is None else f"{out[best]} {value}"
    return out


def _tables(text: str) -> list[_Table]:
    """Every tabulate table, in one pass over the lines (O(n): no list copies)."""
    lines = text.splitlines()
    tables: list[_Table] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if i == 0 or "-" not in line or not _SEPARATOR.match(line):
            i += 1
            continue
        if i >= 2 and lines[i - 2].strip() and lines[i - 2].strip() == lines[i - 1].strip():
            raise _Garbled("table header repeated", line=i, expected="one header line")
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", line)]
        headers = [h or "" for h in _columns(lines[i - 1], spans)]
        rows: list[dict[str, str | None]] = []
        numbers: list[int] = []
        j = i + 1
        while j < len(lines):
            row = lines[j]
            if not row.strip() or _RULE.match(row) or _SEPARATOR.match(row) or _PROMPT.match(row):
                break
            rows.append(dict(zip(headers, _columns(row, spans), strict=True)))
            numbers.append(j + 1)
            j += 1
        tables.append(_Table(headers, rows, _title_above(lines, i - 1), numbers))
        i = max(j, i + 1)
    return tables


def _title_above(lines: list[str], header: int, reach: int = 64) -> str | None:
    """The nearest non-blank line above ``header`` (bounded look-back keeps _tables linear)."""
    for k in range(header - 1, max(-1, header - 1 - reach), -1):
        if lines[k].strip():
            return lines[k].strip()
    return None


def _unique(seen: dict[Any, Any], key: Any, table: _Table, index: int) -> None:
    """Refuse a row whose key an earlier row already gave (the last one would win)."""
    if key in seen:
        raise _Garbled(
            f"duplicated row for {key!r}",
            line=table.lines[index],
            expected="one row per key",
        )


def _keyed(
    table: _Table, column: str, seen: dict[Any, Any] | None
) -> Iterator[tuple[str, dict[str, str | None]]]:
    """``table``'s rows with their key (the ``column`` cell): a row without one is refused
    at its line, and so is a key ``seen`` already holds (None: keys may repeat)."""
    for i, row in enumerate(table.rows):
        key = _text(row[column])
        if not key:
            raise _Garbled(f"row without a {column}", line=table.lines[i])
        if seen is not None:
            _unique(seen, key, table, i)
        yield key, row


def _tables_named(text: str, first_header: str, *must_have: str) -> list[_Table]:
    """Tables whose first column is ``first_header`` and that have ``must_have``."""
    found = [
        t
        for t in _tables(text)
        if t.headers
        and t.headers[0].lower() == first_header.lower()
        and all(t.column(m) for m in must_have)
    ]
    if not found:
        need = ", ".join((first_header, *must_have))
        raise _Garbled(f"no table with columns {need}")
    return found


# --- key: value blocks -------------------------------------------------------

_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][\w ./()&-]*?)\s*:\s?(?P<value>.*)$")


def _key_values(text: str) -> dict[str, str]:
    """``Key: value`` lines at the left margin (show version, platform summary)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("Docker images"):
            break
        m = _KEY_VALUE.match(line)
        if m and not line.startswith(" "):
            out.setdefault(m["key"].strip(), m["value"].strip())
    return out


# --- facts -------------------------------------------------------------------

_PLATFORM_VENDORS = {
    "mlnx": "Mellanox",
    "nvidia": "NVIDIA",
    "arista": "Arista",
    "nokia": "Nokia",
    "cel": "Celestica",
    "accton": "Accton",
    "dellemc": "Dell EMC",
    "dell": "Dell",
    "cisco": "Cisco",
    "kvm": "KVM",
}


def _vendor_from_platform(platform: str | None) -> str | None:
    """``x86_64-mlnx_msn2700-r0`` -> ``Mellanox``: SONiC names the ODM in the platform."""
    if not platform or "-" not in platform:
        return None
    token = platform.split("-", 1)[1].split("_", 1)[0]
    return _PLATFORM_VENDORS.get(token.lower(), token)


def uptime_seconds(line: str) -> float | None:
    """Seconds from a ``uptime`` line: ``... up 19 days,  3:33,  1 user, ...``."""
    m = re.search(r"\bup\s+(.*?),\s+\d+\s+users?", line) or re.search(
        r"\bup\s+(.*?),\s+load average", line
    )
    if not m:
        return None
    span = m.group(1)
    seconds = 0.0
    if d := re.search(r"(\d+)\s+days?", span):
        seconds += int(d.group(1)) * 86400
    if hm := re.search(r"(\d+):(\d+)", span):
        seconds += int(hm.group(1)) * 3600 + int(hm.group(2)) * 60
    if mins := re.search(r"(\d+)\s+min", span):
        seconds += int(mins.group(1)) * 60
    return seconds


def _hardware_rev(kv: dict[str, str]) -> str | None:
    return _text(kv.get("Hardware Rev") or kv.get("Hardware Revision"))


@_sonic("show version")
def parse_version(text: str) -> Facts:
    kv = _key_values(text)
    if "SONiC Software Version" not in kv:
        raise _Garbled("no 'SONiC Software Version' line")
    platform = _text(kv.get("Platform"))
    model = _text(kv.get("Model Number"))
    if model is None and "Uptime" in kv:  # the capture got past where Model Number is printed
        model = _text(kv.get("HwSKU"))
    return Facts(
        vendor=_vendor_from_platform(platform),
        model=model,
        os_version=kv["SONiC Software Version"],
        serial=_text(kv.get("Serial Number")),
        hostname=None,
        uptime_s=uptime_seconds(kv.get("Uptime", "")),
        platform=platform,
        hwsku=_text(kv.get("HwSKU")),
        asic=_text(kv.get("ASIC")),
        hardware_rev=_hardware_rev(kv),
    )


@_sonic("show platform summary")
def parse_platform_summary(text: str) -> PlatformSummary:
    kv = _key_values(text)
    if "Platform" not in kv:
        raise _Garbled("no 'Platform:' line")
    return PlatformSummary(
        platform=_text(kv["Platform"]),
        hwsku=_text(kv.get("HwSKU")),
        asic=_text(kv.get("ASIC")),
        asic_count=_int(kv.get("ASIC Count")),
        serial=_text(kv.get("Serial Number")),
        model=_text(kv.get("Model Number")),
        hardware_rev=_hardware_rev(kv),
    )


# --- interfaces --------------------------------------------------------------


def _speed_gbps(cell: str | None) -> float | None:
    value = _text(cell)
    if value is None:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([GM])", value)
    if not m:
        raise _Garbled(f"speed {value!r}")
    number = float(m.group(1))
    return number if m.group(2) == "G" else number / 1000


def _lanes(cell: str | None) -> list[int]:
    value = _text(cell)
    return [int(x) for x in value.split(",")] if value else []


@_sonic("show interfaces status", "show interface status")
def parse_interfaces_status(text: str) -> dict[str, InterfaceStatus]:
    out: dict[str, InterfaceStatus] = {}
    for table in _tables_named(text, "Interface", "Oper", "Admin"):
        for name, row in _keyed(table, "Interface", out):
            out[name] = InterfaceStatus(
                name=name,
                admin_up=_updown(table.cell(row, "Admin")),
                oper_up=_updown(table.cell(row, "Oper")),
                speed_gbps=_speed_gbps(table.cell(row, "Speed")),
                mtu_bytes=_int(table.cell(row, "MTU")),
                fec=_text(table.cell(row, "FEC")),
                type=_text(table.cell(row, "Type")),
                alias=_text(table.cell(row, "Alias")),
                lanes=_lanes(table.cell(row, "Lanes")),
                vlan=_text(table.cell(row, "Vlan")),
            )
    return out


_COUNTER_COLUMNS = {
    "RX_OK": "rx_packets",
    "RX_ERR": "rx_errors",
    "RX_DRP": "rx_discards",
    "RX_OVR": "rx_overruns",
    "TX_OK": "tx_packets",
    "TX_ERR": "tx_errors",
    "TX_DRP": "tx_discards",
    "TX_OVR": "tx_overruns",
}


#: every spelling of the interface-counters command (SONiC accepts both plural forms)
COUNTERS_COMMANDS = (
    "show interfaces counters",
    "show interfaces counters -a",
    "show interfaces counters --printall",
    "show interfaces counters errors",
    "show interface counters",
    "show interface counters errors",
    "portstat",
)


@_sonic(*COUNTERS_COMMANDS)
def parse_interface_counters(text: str) -> dict[str, InterfaceCounters]:
    out: dict[str, InterfaceCounters] = {}
    for table in _tables_named(text, "IFACE", "RX_ERR"):
        present = {c: f for c, f in _COUNTER_COLUMNS.items() if table.column(c)}
        for port, row in _keyed(table, "IFACE", out):
            out[port] = InterfaceCounters(**{f: _int(row[c]) for c, f in present.items()})
    return out


# --- PFC and queues ----------------------------------------------------------

_PFC = [f"PFC{i}" for i in range(8)]


@_sonic("show pfc counters", "pfcstat")
def parse_pfc_counters(text: str) -> dict[str, PfcCounters]:
    """Rx and Tx pause frames per priority. A capture holding only one of the two
    tables (``| grep Rx -A10``, or cut after the Rx table) gives that direction
    and ``None`` per priority for the other: missing, not zero."""
    per_dir: dict[str, dict[str, list[int | None]]] = {"rx": {}, "tx": {}}
    for table in _tables(text):
        first = table.headers[0].lower() if table.headers else ""
        if first not in ("port rx", "port tx"):
            continue
        if not all(table.column(p) for p in _PFC):
            raise _Garbled(f"{table.headers[0]} table lacks PFC0..PFC7", expected="PFC0..PFC7")
        direction = first[-2:]
        for port, row in _keyed(table, table.headers[0], per_dir[direction]):
            per_dir[direction][port] = [_int(row[p]) for p in _PFC]
    if not per_dir["rx"] and not per_dir["tx"]:
        raise _Garbled("no 'Port Rx' or 'Port Tx' table", expected="a 'Port Rx  PFC0 ...' table")
    missing: list[int | None] = [None] * len(_PFC)
    ports = list(dict.fromkeys([*per_dir["rx"], *per_dir["tx"]]))
    return {
        p: PfcCounters(rx=per_dir["rx"].get(p, missing), tx=per_dir["tx"].get(p, missing))
        for p in ports
    }


_QUEUE_KINDS = {"UC": "unicast", "MC": "multicast", "ALL": "all"}


_QUEUE_COLUMNS = {
    "Counter/pkts": "tx_packets",
    "Counter/bytes": "tx_bytes",
    "Drop/pkts": "drop_packets",
    "Drop/bytes": "drop_bytes",
    "EcnMarked/pkts": "ecn_marked_packets",
    "EcnMarked/bytes": "ecn_marked_bytes",
    "WredDrp/pkts": "wred_drop_packets",
    "WredDrp/bytes": "wred_drop_bytes",
}


@_sonic("show queue counters", "show queue wredcounters", "queuestat")
def parse_queue_counters(text: str) -> dict[str, QueueCounters]:
    """Per-queue packets/bytes/drops, or WRED drops and ECN marks (``wredcounters``)."""
    queues: dict[str, list[QueueCounter]] = {}
    seen: dict[tuple[str, str, str], bool] = {}
    for table in _tables_named(text, "Port", "TxQ"):
        present = {c: f for c, f in _QUEUE_COLUMNS.items() if table.column(c)}
        if not present:
            raise _Garbled(f"queue table without counter columns: {table.headers}")
        for i, row in enumerate(table.rows):
            port, txq = _text(row["Port"]), _text(row["TxQ"])
            m = re.fullmatch(r"(UC|MC|ALL)(\d+)", txq or "")
            if not port or not m:
                raise _Garbled(f"queue row {port!r} {txq!r}", line=table.lines[i])
            key = (port, m.group(0), table.headers[2])  # m.group(0) is the whole TxQ cell
            _unique(seen, key, table, i)
            seen[key] = True
            queues.setdefault(port, []).append(
                QueueCounter(
                    queue=m.group(0),
                    kind=_QUEUE_KINDS[m.group(1)],
                    index=int(m.group(2)),
                    **{f: _int(table.cell(row, c)) for c, f in present.items()},
                )
            )
    return {port: QueueCounters(queues=qs) for port, qs in queues.items()}


# --- FEC ---------------------------------------------------------------------


def _flr(cell: str | None) -> float | None:
    """``7.81e-10 (89%)`` -> 7.81e-10 (the accuracy is dropped)."""
    value = _text(cell)
    return _float(value.split()[0]) if value else None


@_sonic("show interfaces counters fec-stats", "portstat -f")
def parse_fec_stats(text: str) -> dict[str, FecStats]:
    out: dict[str, FecStats] = {}
    for table in _tables_named(text, "IFACE", "FEC_CORR", "FEC_UNCORR"):
        for port, row in _keyed(table, "IFACE", out):
            out[port] = FecStats(
                corrected_cw=_int(table.cell(row, "FEC_CORR")),
                uncorrectable_cw=_int(table.cell(row, "FEC_UNCORR")),
                symbol_errors=_int(table.cell(row, "FEC_SYMBOL_ERR")),
                pre_fec_ber=_float(table.cell(row, "FEC_PRE_BER")),
                post_fec_ber=_float(table.cell(row, "FEC_POST_BER")),
                pre_fec_ber_max=_float(table.cell(row, "FEC_PRE_BER_MAX")),
                flr_observed=_flr(table.cell(row, "FLR(O)")),
                flr_predicted=_flr(table.cell(row, "FLR(P) (Accuracy)", "FLR(P)")),
                state=_text(table.cell(row, "STATE")),
            )
    return out


_BIN = re.compile(r"BIN(\d+)")
_PORTLIKE = re.compile(r"[A-Za-z][\w/.:-]*(?: (?:Line|System))?")


def _bins(pairs: list[tuple[str, str | None]]) -> list[int | None]:
    numbered = {}
    for name, value in pairs:
        m = _BIN.fullmatch(name.strip())
        if not m:
            raise _Garbled(f"unexpected histogram bin {name!r}")
        numbered[int(m.group(1))] = _int(value)
    if sorted(numbered) != list(range(len(numbered))):
        raise _Garbled(f"histogram bins not contiguous from BIN0: {sorted(numbered)}")
    return [numbered[i] for i in range(len(numbered))]


@_sonic("show interfaces counters fec-histogram", "portstat -fh")
def parse_fec_histogram(text: str, port: str | None = None) -> dict[str, FecHistogram]:
    """Per-port bins. The single-port form does not print the port: it is taken
    from ``port``, a section title ("Ethernet0 Line"), or the echoed command."""
    out: dict[str, FecHistogram] = {}
    echoed = re.search(r"fec-histogram\s+(\S+)", text)
    for table in _tables(text):
        if table.headers and table.headers[0].lower() == "symbol errors per codeword":
            value_column = table.headers[1]
            bins = _bins([(r[table.headers[0]] or "", r[value_column]) for r in table.rows])
            title = table.title if table.title and _PORTLIKE.fullmatch(table.title) else None
            key = port or title or (echoed.group(1) if echoed else UNKNOWN_PORT)
            out[key] = FecHistogram(bins=bins)
        elif table.headers and table.headers[0] == "IFACE" and table.column("BIN0"):
            bin_columns = [h for h in table.headers if _BIN.fullmatch(h)]
            for name, row in _keyed(table, "IFACE", out):
                out[name] = FecHistogram(bins=_bins([(c, row[c]) for c in bin_columns]))
    if not out:
        raise _Garbled("no 'Symbol Errors Per Codeword' or IFACE/BIN table")
    return out


# --- LLDP --------------------------------------------------------------------


@_sonic("show lldp table")
def parse_lldp_table(text: str) -> dict[str, LldpNeighbor]:
    """A port may list two neighbours while an old one's hold time runs out (the table
    prints no age): the first row is kept and the other named (``older_neighbours``)."""
    rows = []
    for table in _tables_named(text, "LocalPort", "RemoteDevice", "RemotePortID"):
        for local, row in _keyed(table, "LocalPort", None):
            neighbour = LldpNeighbor(
                remote_system=_text(row["RemoteDevice"]),
                remote_port=_text(row["RemotePortID"]),
                remote_port_description=_text(table.cell(row, "RemotePortDescr")),
                capabilities=_text(table.cell(row, "Capability")),
            )
            rows.append((local, neighbour, None))
    return newest_per_port(rows)


# --- PFC watchdog ------------------------------------------------------------


def _pair(
    table: _Table, row: dict[str, str | None], combined: str, first: str, second: str
) -> tuple[int | None, int | None]:
    """``1/0`` in a combined "A/B" column, or two separate columns (older releases)."""
    if table.column(combined):
        value = _text(table.cell(row, combined))
        if value is None:
            return None, None
        a, _, b = value.partition("/")
        return _int(a), _int(b)
    return _int(table.cell(row, first)), _int(table.cell(row, second))


@_sonic("show pfcwd stats", "pfcwd show stats")
def parse_pfcwd_stats(text: str) -> dict[str, PfcWatchdogState]:
    out: dict[str, PfcWatchdogState] = {}
    for table in _tables_named(text, "QUEUE", "STATUS"):
        for i, row in enumerate(table.rows):
            key = _text(row["QUEUE"]) or ""
            port, sep, queue = key.rpartition(":")
            if not sep or not queue.isdigit():
                raise _Garbled(
                    f"queue {key!r} is not PORT:QUEUE", line=table.lines[i], expected="PORT:QUEUE"
                )
            _unique(out, key, table, i)
            detected, restored = _pair(
                table, row, "STORM DETECTED/RESTORED", "STORM DETECTED", "STORM RESTORED"
            )
            tx_ok, tx_drop = _pair(table, row, "TX OK/DROP", "TX OK", "TX DROP")
            rx_ok, rx_drop = _pair(table, row, "RX OK/DROP", "RX OK", "RX DROP")
            tx_lok, tx_ldrop = _pair(table, row, "TX LAST OK/DROP", "TX LAST OK", "TX LAST DROP")
            rx_lok, rx_ldrop = _pair(table, row, "RX LAST OK/DROP", "RX LAST OK", "RX LAST DROP")
            out[key] = PfcWatchdogState(
                port=port,
                queue=int(queue),
                status=_text(row["STATUS"]),
                storms_detected=detected,
                storms_restored=restored,
                tx_ok=tx_ok,
                tx_drop=tx_drop,
                rx_ok=rx_ok,
                rx_drop=rx_drop,
                tx_last_ok=tx_lok,
                tx_last_drop=tx_ldrop,
                rx_last_ok=rx_lok,
                rx_last_drop=rx_ldrop,
            )
    return out


@_sonic("show pfcwd config", "pfcwd show config")
def parse_pfcwd_config(text: str) -> dict[str, PfcWatchdogConfig]:
    poll = re.search(r"polling interval to (\d+)\s*ms", text)
    poll_ms = int(poll.group(1)) if poll else None
    out: dict[str, PfcWatchdogConfig] = {}
    for table in _tables_named(text, "PORT", "ACTION", "DETECTION TIME"):
        for port, row in _keyed(table, "PORT", out):
            hist = _text(table.cell(row, "HISTORY"))
            out[port] = PfcWatchdogConfig(
                action=_text(row["ACTION"]),
                detection_time_ms=_int(table.cell(row, "DETECTION TIME")),
                restoration_time_ms=_int(table.cell(row, "RESTORATION TIME")),
                history={"enable": True, "disable": False}.get(hist or ""),
                poll_interval_ms=poll_ms,
            )
    return out


# --- transceivers ------------------------------------------------------------

_PORT_HEADER = re.compile(r"^(?P<port>\S+): SFP (?P<rest>.*)$")
_INDENTED_KV = re.compile(r"^(?P<indent>\s+)(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$")
_MEASURE = re.compile(
    r"^(?P<num>[-+]?(?:inf|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))\s*(?P<unit>dBm|mW|mA|C|Volts|V)?$"
)
_LANE_KEY = re.compile(r"^(RX|TX)(\d+)(Power|Bias)$")
_THRESHOLD_KEY = re.compile(r"^(RxPower|TxPower|TxBias|Temp|Vcc)(High|Low)(Alarm|Warning)$")
_THRESHOLD_QUANTITY = {
    "RxPower": "rx_power_dbm",
    "TxPower": "tx_power_dbm",
    "TxBias": "tx_bias_ma",
    "Temp": "temperature_c",
    "Vcc": "voltage_v",
}
_SECTIONS = {
    "ChannelMonitorValues",
    "ChannelThresholdValues",
    "ModuleMonitorValues",
    "ModuleThresholdValues",
}


def _measure(value: str, field: str) -> float | None:
    """``-1.1936dBm`` / ``3.2824Volts`` / ``-infdBm`` / ``N/A`` as ``field``'s value or None;
    a power printed in mW is converted to the dBm the field carries."""
    if value.strip() in _NA:
        return None
    m = _MEASURE.match(value.strip())
    if not m:
        raise _Garbled(f"unreadable DOM value {value!r}")
    return in_field_unit(float(m["num"]), m["unit"], field)


@dataclass
class _Module:
    present: bool
    info: dict[str, str]
    lanes: dict[int, dict[str, float | None]]
    thresholds: dict[str, dict[str, float | None]]
    temperature_c: float | None = None
    voltage_v: float | None = None


def _module_record(m: _Module) -> Transceiver:
    if not m.present:
        return Transceiver(present=False)
    info = m.info
    if not any(info.get(k) for k in ("Vendor Name", "Vendor PN", "Vendor SN")) and not m.lanes:
        raise _Garbled("module reported present but no inventory or DOM lines were read")
    media = next(
        (
            _text(info.get(k))
            for k in ("10/40G Ethernet Compliance Code", "Extended Specification Compliance")
            if _text(info.get(k)) and info.get(k) != "Extended"
        ),
        None,
    )
    thresholds = {
        quantity: Threshold(
            low_alarm=levels.get("LowAlarm"),
            low_warn=levels.get("LowWarning"),
            high_warn=levels.get("HighWarning"),
            high_alarm=levels.get("HighAlarm"),
        )
        for quantity, levels in m.thresholds.items()
    }
    lanes = lane_doms(m.lanes)
    return Transceiver(
        temperature_c=m.temperature_c,
        voltage_v=m.voltage_v,
        lanes=lanes,
        thresholds=thresholds,
        vendor=_text(info.get("Vendor Name")),
        part_number=_text(info.get("Vendor PN")),
        serial=_text(info.get("Vendor SN")),
        firmware=_text(info.get("Active Firmware")),
        media_type=media,
        identifier=_text(info.get("Identifier")),
    )


def _read_dom_line(module: _Module, section: str, key: str, value: str) -> None:
    if section == "ChannelMonitorValues":
        m = _LANE_KEY.match(key)
        if not m:
            raise _Garbled(f"unexpected channel value {key!r}")
        field = {"RXPower": "rx_power_dbm", "TXPower": "tx_power_dbm", "TXBias": "tx_bias_ma"}[
            m.group(1) + m.group(3)
        ]
        module.lanes.setdefault(int(m.group(2)), {})[field] = _measure(value, field)
    elif section == "ModuleMonitorValues":
        if key == "Temperature":
            module.temperature_c = _measure(value, "temperature_c")
        elif key == "Vcc":
            module.voltage_v = _measure(value, "voltage_v")
    else:  # a threshold section
        m = _THRESHOLD_KEY.match(key)
        if not m:
            raise _Garbled(f"unexpected threshold {key!r}")
        quantity = _THRESHOLD_QUANTITY[m.group(1)]
        module.thresholds.setdefault(quantity, {})[m.group(2) + m.group(3)] = _measure(
            value, quantity
        )


@_sonic(
    "show interfaces transceiver eeprom --dom",
    "show interfaces transceiver eeprom -d",
    "show interfaces transceiver eeprom",
    "sfputil show eeprom -d",
    "sfputil show eeprom",
)
def parse_transceiver_eeprom(text: str) -> dict[str, Transceiver]:
    """Inventory and DOM per port, from both the SFF-8636 and the CMIS layouts."""
    modules: dict[str, _Module] = {}
    current: _Module | None = None
    section: str | None = None
    section_indent = 0
    for line in text.splitlines():
        header = _PORT_HEADER.match(line)
        if header:
            rest = header["rest"].lower()
            present = "detected" in rest and "not" not in rest
            current = _Module(present, {}, {}, {})
            if header["port"] in modules:
                raise _Garbled(f"port {header['port']!r} twice", expected="one block per port")
            modules[header["port"]] = current
            section = None
            continue
        kv = _INDENTED_KV.match(line)
        if current is None or not kv:
            continue
        indent, key, value = len(kv["indent"]), kv["key"], kv["value"]
        if key in _SECTIONS:
            section, section_indent = key, indent
        elif section and indent > section_indent:
            _read_dom_line(current, section, key, value)
        else:
            section = None
            current.info.setdefault(key, value)
    if not modules:
        raise _Garbled("no 'PORT: SFP ...' header")
    return {port: _module_record(m) for port, m in modules.items()}


def _alert(cell: str | None) -> bool | None:
    return {"True": True, "False": False}.get((cell or "").strip())


def _pm_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


@_sonic("show interfaces transceiver pm")
def parse_transceiver_pm(text: str) -> dict[str, TransceiverPm]:
    """Coherent-module PM (min/avg/max with thresholds), one table per port.

    A module without PM (anything but C-CMIS) is one line, ``Ethernet0: Transceiver
    performance monitoring not applicable`` (sonic-utilities sfpshow): an empty record.
    """
    out: dict[str, TransceiverPm] = {}
    without_pm: set[str] = set()
    port: str | None = None
    in_rows = False
    for n, line in enumerate(text.splitlines(), start=1):
        if m := re.match(r"^\s*(\S+):\s*Transceiver performance monitoring not applicable", line):
            out[m.group(1)], port = TransceiverPm(params={}), None
            without_pm.add(m.group(1))
            continue
        if m := re.match(r"^\s*(\S+):\s*$", line):
            port, in_rows = m.group(1), False
            if port in out:
                raise _Garbled(f"port {port!r} twice", line=n, expected="one PM block per port")
            out[port] = TransceiverPm(params={})
            continue
        if port is None:
            continue
        if _SEPARATOR.match(line):
            in_rows = True
            continue
        if not line.strip():
            in_rows = False  # a blank line ends the table, as in every tabulate output
            continue
        if not in_rows:
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != 11:
            raise _Garbled(
                f"PM row with {len(cells)} cells: {line.strip()!r}", line=n, expected="11 cells"
            )
        if _pm_key(cells[0]) in out[port].params:
            raise _Garbled(f"{port}: PM parameter {cells[0]!r} twice", line=n)
        out[port].params[_pm_key(cells[0])] = PmParameter(
            unit=_text(cells[1]),
            min=_float(cells[2]),
            avg=_float(cells[3]),
            max=_float(cells[4]),
            high_alarm=_float(cells[5]),
            high_warn=_float(cells[6]),
            high_alert=_alert(cells[7]),
            low_alarm=_float(cells[8]),
            low_warn=_float(cells[9]),
            low_alert=_alert(cells[10]),
        )
    if not out or not all(pm.params for p, pm in out.items() if p not in without_pm):
        raise _Garbled("no PM table under a 'PORT:' line")
    return out


# --- PRBS --------------------------------------------------------------------

_SUPERSCRIPT = str.maketrans(
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a", "0123456789-+"
)
_PRBS_HEADER = re.compile(r"^Interface:\s*(?P<port>\S+)\s*\|(?P<rest>.*)$", re.M)
_PRBS_NO_RESULTS = ("No PRBS result data available", "does not capture PRBS results")


def _ber(cell: str | None) -> float | None:
    """``0`` / ``1.00e+00`` / ``1.38 x 10^-11`` as the CLI prints it (a multiplication
    sign and superscript digits) as a float."""
    value = _text(cell)
    if value is None:
        return None
    m = re.fullmatch(r"([\d.]+)\s*[\u00d7x]\s*10([\u2070-\u207b\u00b2\u00b3\u00b9]+)", value)
    if m:
        return float(m.group(1)) * 10.0 ** int(m.group(2).translate(_SUPERSCRIPT))
    return _float(value)


@_sonic("show interfaces prbs status", "show interface prbs status")
def parse_prbs_status(text: str) -> dict[str, list[PrbsResult]]:
    """Per-lane results of ``show interfaces prbs status -i PORT`` (SONiC PRBS HLD).

    SONiC captures results when PRBS is disabled, so a running or TX-only test
    gives an empty list. Lanes are renumbered from 1, like DOM lanes, although
    the CLI counts them from 0.
    """
    header = _PRBS_HEADER.search(text)
    if not header:
        raise _Garbled("no 'Interface: PORT | Mode: ... | Pattern: ...' line")
    port = header["port"]
    fields = dict(
        (k.strip().lower(), v.strip())
        for k, _, v in (part.partition(":") for part in header["rest"].split("|"))
    )
    pattern = fields.get("pattern") or ""
    tables = [t for t in _tables(text) if t.headers and t.headers[0] == "Lane"]
    if not tables:
        if any(note in text for note in _PRBS_NO_RESULTS):
            return {port: []}
        raise _Garbled("no 'Lane  Lock  RX Status ...' table and no 'no results' note")
    table = tables[0]
    out: list[PrbsResult] = []
    for row in table.rows:
        lane = _int(row["Lane"])
        if lane is None:
            raise _Garbled("lane row without a lane number")
        status = (_text(table.cell(row, "RX Status")) or "").upper()
        lock = (_text(table.cell(row, "Lock")) or "").lower()
        out.append(
            PrbsResult(
                lane=lane + 1,
                pattern=pattern,
                locked=lock == "locked" or status in ("OK", "LOCK_WITH_ERRORS"),
                bits=None,
                errors=_int(table.cell(row, "Errors")),
                ber=_ber(table.cell(row, "BER")),
            )
        )
    return {port: out}


# --- what each command's output looks like (labtest parse refuses another's) -----------

for _label, _pattern, _commands in (
    (
        "show platform summary",
        r"^Platform:\s*\S+\s*\n(?:.*\n)?HwSKU:",
        ("show platform summary",),
    ),
    (
        "show interfaces status",
        r"^\s*Interface\s+Lanes\s+Speed\s+MTU",
        ("show interfaces status", "show interface status"),
    ),
    (
        "show interfaces counters",
        r"^\s*IFACE\s+STATE\s+RX_(?:OK|ERR)\b",
        COUNTERS_COMMANDS,
    ),
    ("show pfc counters", r"^\s*Port (?:Rx|Tx)\s+PFC0", ("show pfc counters", "pfcstat")),
    (
        "show queue counters",
        r"^\s*Port\s+TxQ\s+(?:Counter|WredDrp|EcnMarked)/",
        ("show queue counters", "show queue wredcounters", "queuestat"),
    ),
    (
        "show interfaces counters fec-stats",
        r"^\s*IFACE\s+STATE\s+FEC_CORR",
        ("show interfaces counters fec-stats", "portstat -f"),
    ),
    (
        "show interfaces counters fec-histogram",
        r"^\s*(?:Symbol Errors Per Codeword|IFACE\s+STATE\s+BIN0|IFACE\s+BIN0)",
        ("show interfaces counters fec-histogram", "portstat -fh"),
    ),
    ("show lldp table", r"^\s*LocalPort\s+RemoteDevice", ("show lldp table",)),
    (
        "show pfcwd stats",
        r"^\s*QUEUE\s+STATUS\s+STORM",
        ("show pfcwd stats", "pfcwd show stats"),
    ),
    (
        "show pfcwd config",
        r"^\s*PORT\s+ACTION\s+DETECTION TIME",
        ("show pfcwd config", "pfcwd show config"),
    ),
    (
        "show interfaces transceiver eeprom",
        r"^\S+: SFP (?:EEPROM )?(?:is )?(?:not )?detected",
        (
            "show interfaces transceiver eeprom --dom",
            "show interfaces transceiver eeprom -d",
            "show interfaces transceiver eeprom",
            "sfputil show eeprom -d",
            "sfputil show eeprom",
        ),
    ),
    (
        "show interfaces transceiver pm",
        r"^\s*Parameter\s+Unit\s+Min\s+Avg\s+Max|Transceiver performance monitoring",
        ("show interfaces transceiver pm",),
    ),
    (
        "show interfaces prbs status",
        r"^Interface:\s*\S+\s*\|",
        ("show interfaces prbs status", "show interface prbs status"),
    ),
):
    fingerprint(DRIVER, _label, _pattern, *_commands)
fingerprint(DRIVER, "show version", r"^SONiC Software Version:", "show version", strength=2)
