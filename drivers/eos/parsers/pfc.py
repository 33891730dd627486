"""EOS PFC per priority and the PFC pause watchdog: counters (JSON) and configuration (text).

Sources (facts only: the keys, their nesting and units; no capture of a real switch was
published for either JSON document, so the samples under ``tests/drivers/samples/eos`` are
built from exactly the keys public code reads, and say so):

- ``show interfaces priority-flow-control counters detail | json``: github.com/facebook/
  DNE-TaaC ``taac/health_checks/dsf_health_checks/dsf_pfc_health_check.py``
  (``_get_eos_pfc_counters``, @407a4855) reads ``interfaces.<port>.priorities.<n>`` with
  ``rxFrames``/``txFrames``, for ``show interface <port> priority-flow-control counters
  detail | json``; the same command without a port covers every interface.
- ``show priority-flow-control counters watchdog | json``: the same repository,
  ``taac/health_checks/device_health_checks/pfc_wd_health_check.py``
  (``_get_eos_pfc_wd_counters``, @407a4855) reads ``interfaces.<port>.txQueues.<queue>``
  with ``stuckCount`` and ``recoveryCount``, and notes that EOS answers ``{"interfaces":
  {}}`` before any watchdog event and leaves a port out until its first event.
- the watchdog configuration is the running-config's ``priority-flow-control pause
  watchdog default timeout|recovery-time|polling-interval SECONDS`` and ``... pause
  watchdog action drop|no-drop`` lines, with ``priority-flow-control on`` and
  ``priority-flow-control priority N no-drop`` under each interface: github.com/
  aristanetworks/avd ``.../j2templates/eos/priority-flow-control.j2`` and its molecule
  ``intended/configs`` (the lines EOS prints), timers in seconds.

Reading rules: a watchdog counter is a count of events since the last clear; a queue is
"stormed" while it has been found stuck more often than it has recovered (each stuck
event ends in one recovery), "operational" otherwise. Numbers come only from the keys
named above; a port or queue the document does not carry is not invented here (the
driver combines the configuration and the counters, see ``drivers/eos/driver.py``).
"""

from __future__ import annotations

import re
from typing import Any

from labtest.capabilities.switch import PfcCounters, PfcWatchdogConfig, PfcWatchdogState
from labtest.drivers.eos.parsers._common import (
    DRIVER,
    _entries,
    _eos,
    _int,
    _looks_like,
    _object,
    _require_json,
)
from labtest.parsing import Garbled as _Garbled
from labtest.parsing import checked

PRIORITIES = 8


def _count(entry: dict[str, Any], key: str, where: str) -> int:
    """A counter the document must carry: a non-negative integer."""
    if key not in entry:
        raise _Garbled(f"{where}: no {key!r}", expected=f"a {key!r} count")
    value = _int(entry[key])
    if value is None or value < 0 or value != entry[key]:
        raise _Garbled(f"{where}: {key} = {entry[key]!r}", expected="a non-negative integer")
    return value


def _own_entries(doc: dict[str, Any], inner: str, command: str) -> dict[str, dict[str, Any]]:
    """``doc.interfaces`` whose every port carries ``inner`` (an object): another command's
    ``interfaces`` (``show interfaces``, the other PFC document) is refused by name."""
    ports = _entries(doc, "interfaces")
    for port, entry in ports.items():
        if not isinstance(entry.get(inner), dict):
            looks = _looks_like(doc)
            what = f"this looks like '{looks} | json' output" if looks != "another command" \
                else f"interfaces.{port} has no {inner!r} object"
            raise _Garbled(f"{what}, not '{command} | json'", expected=f"interfaces.<port>.{inner}")
    return ports


# --- PFC frames per priority ---------------------------------------------------------------

_DETAIL = "show interfaces priority-flow-control counters detail"


@_eos(_DETAIL, "show priority-flow-control counters detail")
def parse_pfc_counters_detail(text: str) -> dict[str, PfcCounters]:
    """Rx and Tx PFC frames per priority and port (``priorities.<n>.rxFrames/txFrames``).
    A priority the port's entry does not list is ``None`` (not read), never 0."""
    doc = _require_json(text, _DETAIL, "interfaces")
    out: dict[str, PfcCounters] = {}
    for port, entry in _own_entries(doc, "priorities", _DETAIL).items():
        rx: list[int | None] = [None] * PRIORITIES
        tx: list[int | None] = [None] * PRIORITIES
        for prio, counts in entry["priorities"].items():
            if not prio.isdigit() or int(prio) >= PRIORITIES:
                raise _Garbled(f"{port}: priority {prio!r}", expected="a priority 0..7")
            where = f"{port} priority {prio}"
            c = _object(counts, where)
            rx[int(prio)] = _count(c, "rxFrames", where)
            tx[int(prio)] = _count(c, "txFrames", where)
        if all(v is None for v in rx):
            raise _Garbled(f"{port}: no priority counted", expected="priorities 0..7")
        out[port] = PfcCounters(rx=rx, tx=tx)
    return out


# --- the watchdog's counters ---------------------------------------------------------------

_WATCHDOG = "show priority-flow-control counters watchdog"


def parse_watchdog_counts(text: str) -> dict[str, dict[int, tuple[int, int]]]:
    """Port -> tx-queue -> (stuckCount, recoveryCount), as the document carries them (a port
    without a watchdog event yet is absent: EOS leaves it out)."""
    doc = _require_json(text, _WATCHDOG, "interfaces")
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for port, entry in _own_entries(doc, "txQueues", _WATCHDOG).items():
        queues: dict[int, tuple[int, int]] = {}
        for queue, counts in entry["txQueues"].items():
            if not queue.isdigit():
                raise _Garbled(f"{port}: tx queue {queue!r}", expected="a queue number")
            where = f"{port} tx queue {queue}"
            c = _object(counts, where)
            queues[int(queue)] = (_count(c, "stuckCount", where), _count(c, "recoveryCount", where))
        if not queues:
            raise _Garbled(f"{port}: no tx queue", expected="txQueues.<queue>")
        out[port] = queues
    return out


@_eos(_WATCHDOG)
def parse_pfc_watchdog_counters(text: str) -> dict[str, PfcWatchdogState]:
    """``PORT:QUEUE`` -> the queue's watchdog state, for each queue the document carries:
    stuckCount as storms detected, recoveryCount as storms restored; status "stormed"
    while stuck more often than recovered, else "operational"."""
    out: dict[str, PfcWatchdogState] = {}
    for port, queues in parse_watchdog_counts(text).items():
        for queue, (stuck, recovered) in queues.items():
            out[f"{port}:{queue}"] = PfcWatchdogState(
                port=port,
                queue=queue,
                status=watchdog_status(stuck, recovered),
                storms_detected=stuck,
                storms_restored=recovered,
            )
    return out


def watchdog_status(stuck: int, recovered: int) -> str:
    """The queue's state behind its two counts: stuck and not yet recovered is a storm."""
    return "stormed" if stuck > recovered else "operational"


# --- the watchdog's configuration (running-config) -------------------------------------------

_WD_LINE = re.compile(
    r"priority-flow-control pause watchdog "
    r"(?:default (?P<timer>timeout|recovery-time|polling-interval) (?P<seconds>\S+)"
    r"|action (?P<action>\S+))"
)
_NO_DROP = re.compile(r"priority-flow-control priority (\d+) no-drop")


def _ms(seconds: str, line: int) -> int:
    if not re.fullmatch(r"\d+(?:\.\d+)?", seconds):
        raise _Garbled(f"watchdog timer {seconds!r}", line=line, expected="seconds, e.g. 0.2")
    return round(float(seconds) * 1000)


@checked(DRIVER, "show running-config", register=False)
def parse_pfc_config(text: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """(global watchdog settings, port -> no-drop priorities of each ``priority-flow-control
    on`` interface) from ``show running-config``, which must end with ``end``."""
    lines = text.splitlines()
    body = [ln.rstrip() for ln in lines if ln.strip()]
    if not body or body[-1].strip() != "end":
        raise _Garbled("running-config does not end with 'end' (cut?)", expected="end")
    wd: dict[str, Any] = {}
    pfc_on: dict[str, bool] = {}
    no_drop: dict[str, list[int]] = {}
    port: str | None = None
    for i, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("!"):
            continue
        indented = raw.startswith(" ")
        line = raw.strip()
        if not indented:
            port = None
            m = re.fullmatch(r"interface (\S+)", line)
            if m:
                port = m.group(1)
                if port in pfc_on:
                    raise _Garbled(f"interface {port} twice", line=i, expected="each once")
                pfc_on[port] = False
                continue
            w = _WD_LINE.fullmatch(line)
            if w and w.group("timer"):
                wd[w.group("timer")] = _ms(w.group("seconds"), i)
            elif w:
                wd["action"] = w.group("action")
            continue
        if port is None:
            continue
        if line in ("priority-flow-control on", "priority-flow-control mode on"):
            pfc_on[port] = True
        n = _NO_DROP.fullmatch(line)
        if n:
            if int(n.group(1)) >= PRIORITIES:
                raise _Garbled(f"{port}: priority {n.group(1)}", line=i, expected="0..7")
            no_drop.setdefault(port, []).append(int(n.group(1)))
    if not pfc_on:
        raise _Garbled("no interface stanza", expected="'interface <port>' lines")
    ports = {p: sorted(no_drop.get(p, [])) for p, on in pfc_on.items() if on}
    return wd, ports


@_eos("show running-config")
def parse_pfc_watchdog_config(text: str) -> dict[str, PfcWatchdogConfig]:
    """The watchdog of each port with PFC on and a lossless priority, once the running-config
    sets a watchdog timeout (without one EOS watches nothing: the port is left out).
    Timers are EOS's seconds in milliseconds; the action as EOS prints it ("drop",
    "no-drop"), ``None`` where the config does not say."""
    wd, ports = parse_pfc_config(text)
    if "timeout" not in wd:
        return {}
    return {
        port: PfcWatchdogConfig(
            action=wd.get("action"),
            detection_time_ms=wd["timeout"],
            restoration_time_ms=wd.get("recovery-time"),
            poll_interval_ms=wd.get("polling-interval"),
        )
        for port, prios in ports.items()
        if prios
    }
