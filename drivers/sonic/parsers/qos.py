"""SONiC PFC frames, queue counters and the PFC watchdog (stats and config)."""

from __future__ import annotations

import re

from labtest.capabilities.switch import (
    PfcCounters,
    PfcWatchdogConfig,
    PfcWatchdogState,
    QueueCounter,
    QueueCounters,
)
from labtest.drivers.common.cells import cell_int as _int
from labtest.drivers.common.cells import cell_text as _text
from labtest.drivers.sonic.parsers._common import (
    _keyed,
    _sonic,
    _Table,
    _tables,
    _tables_named,
    _unique,
)
from labtest.parsing import Garbled as _Garbled

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
