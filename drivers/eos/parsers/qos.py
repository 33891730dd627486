"""EOS PFC frames, egress queue drops and ECN marks per queue (JSON only)."""

from __future__ import annotations

import re
from typing import Any

from labtest.capabilities.switch import (
    PfcCounters,
    QueueCounter,
    QueueCounters,
)
from labtest.drivers.eos.parsers._common import _entries, _eos, _int, _object, _require_json
from labtest.parsing import Garbled as _Garbled

# --- PFC and queues ------------------------------------------------------------------


@_eos("show priority-flow-control counters")
def parse_pfc_counters(text: str) -> dict[str, PfcCounters]:
    """PFC frames per port (``rxFrames``/``txFrames``): EOS totals the priorities,
    so ``rx``/``tx`` stay lists of ``None`` and the totals carry the counts."""
    doc = _require_json(text, "show priority-flow-control counters", "interfaceCounters")
    out: dict[str, PfcCounters] = {}
    for port, c in _entries(doc, "interfaceCounters").items():
        if "rxFrames" not in c or "txFrames" not in c:
            raise _Garbled(f"{port}: no rxFrames/txFrames", expected="rxFrames and txFrames")
        out[port] = PfcCounters(
            rx=[None] * 8, tx=[None] * 8, rx_total=_int(c["rxFrames"]), tx_total=_int(c["txFrames"])
        )
    return out


def _queue_drops(port: str, kind: str, queues: Any) -> list[QueueCounter]:
    classes = _object(_object(queues, f"{port}.{kind}").get("trafficClasses"), port)
    out = []
    for tc, detail in classes.items():
        m = re.fullmatch(r"TC(\d+)", tc)
        if not m:
            raise _Garbled(f"{port}: traffic class {tc!r}", expected="TC<n>")
        precedences = _object(_object(detail, f"{port}.{tc}").get("dropPrecedences"), tc)
        drops = [
            _int(_object(dp, f"{port}.{tc}.{name}").get("droppedPackets"))
            for name, dp in precedences.items()
        ]
        prefix, label = ("UC", "unicast") if kind == "ucastQueues" else ("MC", "multicast")
        out.append(
            QueueCounter(
                queue=f"{prefix}{m.group(1)}",
                kind=label,
                index=int(m.group(1)),
                drop_packets=None if not drops or None in drops else sum(drops),  # type: ignore[arg-type]
            )
        )
    return out


@_eos("show interfaces counters queue detail")
def parse_queue_drops(text: str) -> dict[str, QueueCounters]:
    """Egress drops per traffic class (``UC<n>`` unicast, ``MC<n>`` multicast), summed
    over drop precedences; the command's JSON as ANTA reads it carries drops only."""
    doc = _require_json(text, "show interfaces counters queue detail", "egressQueueCounters")
    if not isinstance(doc["egressQueueCounters"].get("interfaces"), dict):
        raise _Garbled("no egressQueueCounters.interfaces", expected="per-interface queues")
    return {
        port: QueueCounters(
            queues=_queue_drops(port, "ucastQueues", q.get("ucastQueues"))
            + _queue_drops(port, "mcastQueues", q.get("mcastQueues"))
        )
        for port, q in _entries(doc["egressQueueCounters"], "interfaces").items()
    }


@_eos("show qos interfaces ecn counters queue")
def parse_ecn_counters(text: str) -> dict[str, dict[int, int | None]]:
    """ECN-marked packets per port and queue; EOS prints them as strings and ``-``
    where ECN is not configured on the queue (``None`` here)."""
    doc = _require_json(text, "show qos interfaces ecn counters queue", "intfQueueCounters")
    out: dict[str, dict[int, int | None]] = {}
    for port, entry in _entries(doc, "intfQueueCounters").items():
        counters = entry.get("queueCounters")
        if not isinstance(counters, dict):
            raise _Garbled(f"{port}: no queueCounters", expected="a 'queueCounters' object")
        row: dict[int, int | None] = {}
        for queue, value in counters.items():
            if not queue.isdigit() or not isinstance(value, str):
                raise _Garbled(
                    f"{port}: queue {queue!r} = {value!r}", expected='"<queue>": "<count>" or "-"'
                )
            if value != "-" and not value.isdigit():
                raise _Garbled(f"{port}: queue {queue} count {value!r}", expected="digits or -")
            row[int(queue)] = None if value == "-" else int(value)
        out[port] = row
    return out
