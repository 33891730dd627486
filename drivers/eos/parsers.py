"""Parsers for Arista EOS output: ``| json`` first, text where a field engineer pastes it.

EOS renders the same model as text or JSON; the JSON keys are stable across
releases, so each parser reads JSON when the text is JSON and falls back to the
text table where EOS prints one (version, interface status, LLDP, transceiver
DOM and thresholds). Both ``"show version"`` and ``"show version | json"`` reach
the same parser. Records and ``None`` conventions follow
``labtest.capabilities.switch``; samples under ``tests/drivers/samples/eos``.

Every parser checks before it reads: a JSON document must close, hold no
duplicated key and be the answer of its own command (``show interfaces | json``
given as transceiver data is refused, naming what it looks like); a text row
must carry every column its header promises. What fails is a ParseError naming
the command and, where there is one, the line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from labtest.capabilities.switch import (
    Facts,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
    QueueCounter,
    QueueCounters,
)
from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.drivers.common.cells import in_field_unit
from labtest.drivers.common.lldp import newest_per_port
from labtest.parsing import F, checked
from labtest.parsing import Garbled as _Garbled

DRIVER = "eos"


def _eos(*commands: str) -> Callable[[F], F]:
    """Register ``fn`` for each command and its ``| json`` form, with the ParseError
    contract; a JSON document is checked by closing, text by its last line."""
    return checked(
        DRIVER,
        *commands,
        aliases=tuple(f"{c} | json" for c in commands),
        cut=_not_json,
    )


def _not_json(text: str) -> bool:
    """Text is checked for a cut last line; a JSON document is checked by closing."""
    return not text.rstrip().endswith("}")


_PROMPT = re.compile(r"^\S+[#>]")  # "switch#show version | json" echoed before the output


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json`` keeps the last of two equal keys silently; EOS never prints one twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Garbled(f"duplicated key {key!r}", expected="each key once")
        out[key] = value
    return out


def _as_json(text: str) -> dict[str, Any] | None:
    """The JSON document in ``text`` (leading prompt/comment lines allowed), else None.

    The whole rest must be that one document: a second document, a cut one or a
    duplicated key is refused with the line it happens on."""
    lines = text.splitlines()
    skipped = 0
    while skipped < len(lines) and (
        not lines[skipped].strip()
        or (
            not lines[skipped].lstrip().startswith("{")
            and (_PROMPT.match(lines[skipped]) or lines[skipped].startswith("#"))
        )
    ):
        skipped += 1
    body = "\n".join(lines[skipped:]).rstrip()
    if not body.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(body, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        what = "a JSON document that closes" if exc.pos >= len(body) else "one JSON document"
        raise _Garbled(
            f"broken JSON: {exc.msg}", line=exc.lineno + skipped, expected=what
        ) from None
    if not isinstance(doc, dict):
        raise _Garbled("JSON output is not an object", expected="a JSON object")
    return doc


#: top-level key -> the command whose answer carries it, to name a wrong capture
_JSON_KEYS = {
    "modelName": "show version",
    "interfaceStatuses": "show interfaces status",
    "interfaceErrorCounters": "show interfaces counters errors",
    "lldpNeighbors": "show lldp neighbors",
    "interfacePhyStatuses": "show interfaces phy detail",
    "egressQueueCounters": "show interfaces counters queue detail",
    "intfQueueCounters": "show qos interfaces ecn counters queue",
    "interfaceCounters": "show priority-flow-control counters",
    "xcvrSlots": "show inventory",
    "utcTime": "show clock",
}
_TRANSCEIVER_KEYS = {
    "txPower",
    "rxPower",
    "temperature",
    "voltage",
    "txBias",
    "vendorSn",
    "mediaType",
    "updateTime",
}


def _looks_like(doc: dict[str, Any]) -> str:
    """The command ``doc`` most likely answers, for a refusal message."""
    for key, command in _JSON_KEYS.items():
        if key in doc:
            return command
    entries = doc.get("interfaces")
    if isinstance(entries, dict):
        first = next((e for e in entries.values() if isinstance(e, dict) and e), {})
        if "interfaceCounters" in first or "lineProtocolStatus" in first:
            return "show interfaces"
        if "inOctets" in first:
            return "show interfaces counters"
        if _TRANSCEIVER_KEYS & set(first):
            return "show interfaces transceiver"
    return "another command"


def _require_json(
    text: str, command: str, key: str, kind: type | tuple[type, ...] = dict
) -> dict[str, Any]:
    """The JSON answer of ``command``, which must carry ``key`` of type ``kind``."""
    doc = _as_json(text)
    if doc is None:
        raise _Garbled(
            f"expected JSON output (run '{command} | json')", line=1, expected="a JSON document"
        )
    _own_key(doc, command, key, kind)
    return doc


def _own_key(doc: dict[str, Any], command: str, key: str, kind: Any = dict) -> None:
    if not isinstance(doc.get(key), kind):
        looks = _looks_like(doc)
        name = getattr(kind, "__name__", "value")
        raise _Garbled(
            f"this looks like '{looks} | json' output, not '{command} | json'"
            if looks != command
            else f"no {key!r} {name}",
            expected=f"a {key!r} {name}",
        )


def _object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is an object, ``{}`` when absent; anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Garbled(f"{where} is {type(value).__name__}, not an object")
    return value


def _entries(doc: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """``doc[key]`` as port -> object; a non-object entry is refused."""
    out = doc[key]
    for port, entry in out.items():
        if not isinstance(entry, dict):
            raise _Garbled(f"{key}.{port} is {type(entry).__name__}, not an object")
    return out


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Garbled(f"expected a string, got {value!r}")
    value = str(value).strip()
    return value or None


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Garbled(f"expected a number, got {value!r}")
    return int(value)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Garbled(f"expected a number, got {value!r}")
    return float(value)


_SHORT_NAMES = {"Et": "Ethernet", "Po": "Port-Channel", "Ma": "Management", "Lo": "Loopback"}


def long_name(name: str) -> str:
    """Text tables abbreviate (``Et1``); JSON and config use ``Ethernet1``."""
    m = re.fullmatch(r"([A-Z][a-z])(\d[\d/.]*)", name)
    if m and m.group(1) in _SHORT_NAMES:
        return _SHORT_NAMES[m.group(1)] + m.group(2)
    return name


# --- facts -------------------------------------------------------------------


def uptime_seconds(text: str) -> float | None:
    """``1 day, 16 hours and 45 minutes`` -> seconds."""
    units = {"week": 604800, "day": 86400, "hour": 3600, "minute": 60, "second": 1}
    found = re.findall(r"(\d+)\s+(week|day|hour|minute|second)s?", text)
    return float(sum(int(n) * units[u] for n, u in found)) if found else None


@_eos("show version")
def parse_version(text: str) -> Facts:
    doc = _as_json(text)
    if doc is not None:
        _own_key(doc, "show version", "modelName", str)
        if not isinstance(doc.get("version"), str):
            raise _Garbled("no 'version' string", expected="a 'version' string")
        return Facts(
            vendor=_str(doc.get("mfgName")) or "Arista",
            model=_str(doc["modelName"]),
            os_version=_str(doc["version"]),
            serial=_str(doc.get("serialNumber")),
            uptime_s=_num(doc.get("uptime")),
            hardware_rev=_str(doc.get("hardwareRevision")),
            mac=_str(doc.get("systemMacAddress")),
        )
    model = re.search(r"^Arista (\S+)", text, re.M)
    version = re.search(r"^Software image version:\s*(\S+)", text, re.M)
    if not model or not version:
        raise _Garbled("no 'Arista <model>' / 'Software image version' lines")

    def line(label: str) -> str | None:
        m = re.search(rf"^{label}:\s*(.*)$", text, re.M)
        return _str(m.group(1)) if m else None

    return Facts(
        vendor="Arista",
        model=model.group(1),
        os_version=version.group(1),
        serial=line("Serial number"),
        uptime_s=uptime_seconds(line("Uptime") or ""),
        hardware_rev=line("Hardware version"),
        mac=line("System MAC address"),
    )


# --- interfaces --------------------------------------------------------------


def _admin_oper(link_status: str | None) -> tuple[bool | None, bool | None]:
    """EOS folds admin and oper state into one word: disabled = shut, connected = up."""
    if not link_status:
        return None, None
    status = link_status.lower()
    return status != "disabled", status == "connected"


_PORT = re.compile(r"(?:Et|Ethernet|Po|Port-Channel|Ma|Management|Lo|Loopback|Vl|Vlan)\d[\d/.]*")
#: EOS link status words (``show interfaces status``; errdisabled etc. as printed)
_LINK_STATUSES = {
    "connected",
    "notconnect",
    "disabled",
    "errdisabled",
    "inactive",
    "sfpAbsent",
    "xcvrAbsent",
    "monitoring",
    "linkwait",
    "notpresent",
    "adminDown",
}


def _speed_gbps_text(cell: str) -> float | None:
    m = re.fullmatch(r"(?:a-)?(\d+(?:\.\d+)?)([GM])", cell.strip())
    if not m:
        return None  # "auto", "unconf"
    return float(m.group(1)) if m.group(2) == "G" else float(m.group(1)) / 1000


def _status_text(text: str) -> dict[str, InterfaceStatus]:
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+Name\s+Status", ln)), None)
    if header is None:
        raise _Garbled("no 'Port Name Status ...' header")
    names = re.findall(r"\S+", lines[header])
    starts = [m.start() for m in re.finditer(r"\S+", lines[header])]
    out: dict[str, InterfaceStatus] = {}
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if not row.strip() or _PROMPT.match(row):
            break
        if set(row.strip()) <= {"-", " "}:
            continue
        cells = {
            name: row[start : starts[i + 1] if i + 1 < len(starts) else None].strip()
            for i, (name, start) in enumerate(zip(names, starts, strict=True))
        }
        port, status = long_name(cells["Port"]), cells["Status"]
        if not _PORT.fullmatch(cells["Port"]) or status not in _LINK_STATUSES:
            raise _Garbled(
                f"row {row.strip()!r} has no port and link status",
                line=number,
                expected="PORT [NAME] STATUS VLAN DUPLEX SPEED TYPE",
            )
        if not all(cells.get(c) for c in ("Duplex", "Speed", "Type") if c in cells):
            raise _Garbled(
                f"row {row.strip()!r} stops before its Duplex/Speed/Type cells",
                line=number,
                expected="every column of the header",
            )
        if port in out:
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        admin, oper = _admin_oper(status)
        out[port] = InterfaceStatus(
            name=port,
            admin_up=admin,
            oper_up=oper,
            speed_gbps=_speed_gbps_text(cells.get("Speed", "")),
            type=_str(cells.get("Type")),
            vlan=_str(cells.get("Vlan")),
            description=_str(cells.get("Name")),
            state=status,
        )
    if not out:
        raise _Garbled("status table has no rows")
    return out


@_eos("show interfaces status")
def parse_interfaces_status(text: str) -> dict[str, InterfaceStatus]:
    doc = _as_json(text)
    if doc is None:
        return _status_text(text)
    _own_key(doc, "show interfaces status", "interfaceStatuses")
    out: dict[str, InterfaceStatus] = {}
    for name, st in _entries(doc, "interfaceStatuses").items():
        admin, oper = _admin_oper(st.get("linkStatus"))
        vlan_info = st.get("vlanInformation") or {}
        vlan = vlan_info.get("vlanId", vlan_info.get("interfaceMode"))
        bandwidth = _num(st.get("bandwidth"))
        out[name] = InterfaceStatus(
            name=name,
            admin_up=admin,
            oper_up=oper,
            speed_gbps=bandwidth / 1e9 if bandwidth else None,
            type=_str(st.get("interfaceType")),
            vlan=_str(vlan),
            description=_str(st.get("description")),
            state=_str(st.get("linkStatus")),
        )
    return out


# not registered: 'show interfaces' parses to counters
@checked(DRIVER, "show interfaces", register=False, cut=_not_json)
def parse_interface_mtus(text: str) -> dict[str, int]:
    """Each port's L2 MTU from ``show interfaces | json`` (``show interfaces status`` has none).

    A port whose entry carries no ``mtu`` is left out (its MTU stays unknown), never guessed."""
    doc = _as_json(text)
    if doc is None:
        raise _Garbled("expected JSON output (run 'show interfaces | json')", line=1,
                       expected="a JSON document")
    _own_key(doc, "show interfaces", "interfaces")
    out: dict[str, int] = {}
    for port, entry in _entries(doc, "interfaces").items():
        if "mtu" in entry:
            mtu = _int(entry["mtu"])
            if mtu is None or mtu <= 0:
                raise _Garbled(f"interfaces.{port}.mtu is {entry['mtu']!r}, not a positive "
                               "number of bytes", expected="mtu in bytes")
            out[port] = mtu
    return out


def _counters(c: dict[str, Any]) -> InterfaceCounters:
    """One interface from ``show interfaces`` (interfaceCounters), ``show interfaces
    counters`` or ``show interfaces counters errors`` (interfaceErrorCounters)."""
    rx_in = c.get("inputErrorsDetail") or {}
    tx_out = c.get("outputErrorsDetail") or {}

    def total(prefix: str) -> int | None:
        if f"{prefix}TotalPkts" in c:
            return _int(c[f"{prefix}TotalPkts"])
        parts = [c.get(f"{prefix}{k}Pkts") for k in ("Ucast", "Multicast", "Broadcast")]
        return None if any(p is None for p in parts) else sum(_int(p) or 0 for p in parts)

    return InterfaceCounters(
        rx_packets=total("in"),
        rx_errors=_int(c.get("totalInErrors", c.get("inErrors"))),
        rx_discards=_int(c.get("inDiscards")),
        tx_packets=total("out"),
        tx_errors=_int(c.get("totalOutErrors", c.get("outErrors"))),
        tx_discards=_int(c.get("outDiscards")),
        rx_octets=_int(c.get("inOctets")),
        tx_octets=_int(c.get("outOctets")),
        rx_unicast_packets=_int(c.get("inUcastPkts")),
        rx_multicast_packets=_int(c.get("inMulticastPkts")),
        rx_broadcast_packets=_int(c.get("inBroadcastPkts")),
        tx_unicast_packets=_int(c.get("outUcastPkts")),
        tx_multicast_packets=_int(c.get("outMulticastPkts")),
        tx_broadcast_packets=_int(c.get("outBroadcastPkts")),
        rx_fcs_errors=_int(rx_in.get("fcsErrors", c.get("fcsErrors"))),
        rx_alignment_errors=_int(rx_in.get("alignmentErrors", c.get("alignmentErrors"))),
        rx_symbol_errors=_int(rx_in.get("symbolErrors", c.get("symbolErrors"))),
        rx_runts=_int(rx_in.get("runtFrames", c.get("frameTooShorts"))),
        rx_giants=_int(rx_in.get("giantFrames", c.get("frameTooLongs"))),
        rx_pause_frames=_int(rx_in.get("rxPause")),
        tx_pause_frames=_int(tx_out.get("txPause")),
    )


@_eos("show interfaces", "show interfaces counters", "show interfaces counters errors")
def parse_interface_counters(text: str) -> dict[str, InterfaceCounters]:
    doc = _as_json(text)
    if doc is None:
        if re.search(r"^\S+ is (?:up|down|administratively down), line protocol is", text, re.M):
            return _interfaces_text(text)
        raise _Garbled(
            "expected JSON output (run 'show interfaces | json') or 'show interfaces' text",
            line=1,
            expected="a JSON document",
        )
    if "interfaceErrorCounters" in doc:
        _own_key(doc, "show interfaces counters errors", "interfaceErrorCounters")
        return {p: _counters(c) for p, c in _entries(doc, "interfaceErrorCounters").items()}
    _own_key(doc, "show interfaces", "interfaces")
    if _looks_like(doc) == "show interfaces transceiver":
        raise _Garbled(
            "this looks like 'show interfaces transceiver | json' output, not "
            "'show interfaces | json'",
            expected="interfaces with counters",
        )
    out: dict[str, InterfaceCounters] = {}
    for port, entry in _entries(doc, "interfaces").items():
        counters = entry.get("interfaceCounters", entry if "inOctets" in entry else None)
        if counters is not None:  # Loopback/Vlan interfaces carry no counters
            if not isinstance(counters, dict):
                raise _Garbled(f"interfaces.{port}.interfaceCounters is not an object")
            out[port] = _counters(counters)
    if not out:
        raise _Garbled("no interface carries counters")
    return out


# --- transceivers ------------------------------------------------------------

_DETAIL_QUANTITY = {
    "temperature": "temperature_c",
    "voltage": "voltage_v",
    "txBias": "tx_bias_ma",
    "txPower": "tx_power_dbm",
    "rxPower": "rx_power_dbm",
}


@_eos("show interfaces transceiver", "show interfaces transceiver detail")
def parse_transceivers(text: str) -> dict[str, Transceiver]:
    """One record per EOS interface; EOS lists each lane of a breakout/multi-lane
    optic as its own interface (Ethernet1/1..1/4), so every record has lane 1."""
    doc = _as_json(text)
    if doc is None:
        return _transceiver_text(text)
    _own_key(doc, "show interfaces transceiver", "interfaces")
    looks = _looks_like(doc)
    if looks not in ("show interfaces transceiver", "another command"):
        raise _Garbled(
            f"this looks like '{looks} | json' output, not 'show interfaces transceiver | json'",
            expected="transceiver DOM entries",
        )
    out: dict[str, Transceiver] = {}
    for port, t in _entries(doc, "interfaces").items():
        if t and not _TRANSCEIVER_KEYS & set(t):
            raise _Garbled(
                f"interfaces.{port} carries no transceiver reading",
                expected="txPower/rxPower/temperature/vendorSn keys",
            )
        if not any(k in t for k in ("temperature", "txPower", "rxPower", "vendorSn")):
            out[port] = Transceiver(present=False)
            continue
        thresholds = {
            quantity: Threshold(
                low_alarm=_num(levels.get("lowAlarm")),
                low_warn=_num(levels.get("lowWarn")),
                high_warn=_num(levels.get("highWarn")),
                high_alarm=_num(levels.get("highAlarm")),
            )
            for key, quantity in _DETAIL_QUANTITY.items()
            if (levels := _object(t.get("details"), f"{port}.details").get(key))
        }
        out[port] = Transceiver(
            temperature_c=_num(t.get("temperature")),
            voltage_v=_num(t.get("voltage")),
            lanes=[
                LaneDom(
                    lane=1,
                    tx_bias_ma=_num(t.get("txBias")),
                    tx_power_dbm=_num(t.get("txPower")),
                    rx_power_dbm=_num(t.get("rxPower", t.get("totalRxPower"))),
                )
            ],
            thresholds=thresholds,
            vendor=_str(t.get("vendorName")),
            part_number=_str(t.get("vendorPn")),
            serial=_str(t.get("vendorSn")),
            media_type=_str(t.get("mediaType")),
        )
    return out


# --- LLDP --------------------------------------------------------------------


def _unquote(value: Any) -> str | None:
    text = _str(value)
    return text.strip('"') if text else None


def _lldp_text(text: str) -> dict[str, LldpNeighbor]:
    lines = text.splitlines()
    header = next(
        (i for i, ln in enumerate(lines) if re.match(r"^Port\s+Neighbor Device", ln)), None
    )
    if header is None:
        raise _Garbled("no 'Port  Neighbor Device ID ...' header")
    rows: list[tuple[str, LldpNeighbor, int]] = []
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if _PROMPT.match(row):
            break
        if not row.strip() or set(row.strip()) <= {"-", " "}:
            continue
        tokens = row.split()
        if len(tokens) < 4 or not tokens[-1].isdigit() or not _PORT.fullmatch(tokens[0]):
            raise _Garbled(
                f"LLDP row {row.strip()!r}",
                line=number,
                expected="PORT NEIGHBOR-DEVICE NEIGHBOR-PORT TTL",
            )
        rows.append(
            (
                long_name(tokens[0]),
                LldpNeighbor(
                    remote_system=" ".join(tokens[1:-2]),
                    remote_port=tokens[-2],
                    ttl_s=int(tokens[-1]),
                ),
                int(tokens[-1]),  # the TTL left: the newest neighbour has the most
            )
        )
    return newest_per_port(rows)


@_eos("show lldp neighbors", "show lldp neighbors detail")
def parse_lldp_neighbors(text: str) -> dict[str, LldpNeighbor]:
    doc = _as_json(text)
    if doc is None:
        return _lldp_text(text)
    _own_key(doc, "show lldp neighbors", "lldpNeighbors", list | dict)
    neighbors = doc["lldpNeighbors"]
    rows: list[tuple[str, LldpNeighbor, Any]] = []
    if isinstance(neighbors, list):  # "show lldp neighbors | json"
        for n in neighbors:
            ttl = _int(n.get("ttl"))
            neighbour = LldpNeighbor(
                remote_system=_str(n.get("neighborDevice")),
                remote_port=_unquote(n.get("neighborPort")),
                ttl_s=ttl,
            )
            rows.append((n["port"], neighbour, ttl))  # the TTL left: newest has the most
        return newest_per_port(rows)
    for port, entry in neighbors.items():  # "show lldp neighbors detail | json"
        for n in entry["lldpNeighborInfo"] or []:
            iface = n.get("neighborInterfaceInfo") or {}
            mgmt = n.get("managementAddresses") or []
            caps = [k for k, on in (n.get("systemCapabilities") or {}).items() if on]
            neighbour = LldpNeighbor(
                remote_system=_str(n.get("systemName")),
                remote_port=_unquote(iface.get("interfaceId")),
                remote_port_description=_unquote(iface.get("interfaceDescription")),
                remote_chassis_id=_str(n.get("chassisId")),
                capabilities=",".join(caps) or None,
                ttl_s=_int(n.get("ttl")),
                remote_mgmt_address=_str(mgmt[0].get("address")) if mgmt else None,
            )
            # newest: the latest contact (epoch seconds), else the most TTL left
            contact = n.get("lastContactTime")
            fresh = float(contact) if isinstance(contact, int | float) else _int(n.get("ttl"))
            rows.append((port, neighbour, fresh))
    return newest_per_port(rows)


# --- transceivers as text ------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _cell(token: str, number: int) -> float | None:
    if token in ("N/A", "NA"):
        return None
    if not _NUMBER.fullmatch(token):
        raise _Garbled(f"{token!r} is not a number or N/A", line=number, expected="a reading")
    return float(token)


#: the columns of ``show interfaces transceiver`` text, by the record field they fill
_TEXT_FIELDS = ("temperature_c", "voltage_v", "tx_bias_ma", "tx_power_dbm", "rx_power_dbm")


def _in_unit(value: float | None, unit: str | None, field: str) -> float | None:
    """A reading in the unit its column header printed, as the unit ``field`` carries."""
    return None if value is None else in_field_unit(value, unit, field)


def _transceiver_text(text: str) -> dict[str, Transceiver]:
    """``show interfaces transceiver`` (one DOM row per port) or ``... detail`` (one
    table per quantity with its four thresholds), as EOS prints them as text."""
    lines = text.splitlines()
    if any(re.match(r"^\s+High Alarm\s+High Warn", ln) for ln in lines):
        return _transceiver_detail_text(lines)
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+\(Celsius\)", ln)), None)
    if header is None:
        raise _Garbled(
            "no 'Port (Celsius) (Volts) (mA) (dBm) (dBm) Last Update' header",
            expected="'show interfaces transceiver' text or JSON",
        )
    units = re.findall(r"\(([^)]+)\)", lines[header])
    if len(units) != len(_TEXT_FIELDS):
        raise _Garbled(
            f"header names {len(units)} units, not {len(_TEXT_FIELDS)}",
            line=header + 1,
            expected="(Celsius) (Volts) (mA) (dBm) (dBm)",
        )
    out: dict[str, Transceiver] = {}
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if _PROMPT.match(row) or not row.strip():
            break
        if set(row.strip()) <= {"-", " "}:
            continue
        tokens = row.split()
        updated = " ".join(tokens[6:])
        if (
            len(tokens) < 7
            or not _PORT.fullmatch(tokens[0])
            or not (updated in ("N/A", "never") or updated.endswith(" ago"))
        ):
            raise _Garbled(
                f"row {row.strip()!r} is not a complete DOM row",
                line=number,
                expected="PORT TEMP VOLTAGE BIAS TX-POWER RX-POWER LAST-UPDATE",
            )
        port = long_name(tokens[0])
        if port in out:
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        temp, volt, bias, tx, rx = (
            _in_unit(_cell(t, number), unit, field)
            for t, unit, field in zip(tokens[1:6], units, _TEXT_FIELDS, strict=True)
        )
        if all(v is None for v in (temp, volt, bias, tx, rx)):
            out[port] = Transceiver(lanes=[LaneDom(lane=1)])  # no DOM readout on this port
            continue
        out[port] = Transceiver(
            temperature_c=temp,
            voltage_v=volt,
            lanes=[LaneDom(lane=1, tx_bias_ma=bias, tx_power_dbm=tx, rx_power_dbm=rx)],
        )
    if not out:
        raise _Garbled("transceiver table has no rows", expected="one row per port")
    return out


_DETAIL_TEXT_QUANTITY = {
    "Temperature": "temperature_c",
    "Voltage": "voltage_v",
    "Current": "tx_bias_ma",
    "Tx Power": "tx_power_dbm",
    "Rx Power": "rx_power_dbm",
}


def _transceiver_detail_text(lines: list[str]) -> dict[str, Transceiver]:
    """One table per quantity: ``PORT VALUE HIGH-ALARM HIGH-WARN LOW-ALARM LOW-WARN``."""
    readings: dict[str, dict[str, float | None]] = {}
    limits: dict[str, dict[str, Threshold]] = {}
    quantity: str | None = None
    unit: str | None = None  # the unit the table's "Port (unit) ..." row prints
    in_rows = False
    for number, line in enumerate(lines, start=1):
        if _PROMPT.match(line):
            break
        if m := re.match(r"^\s+(Temperature|Voltage|Current|Tx Power|Rx Power)\s+Threshold", line):
            quantity, unit, in_rows = _DETAIL_TEXT_QUANTITY[m.group(1)], None, False
            continue
        if quantity is not None and re.match(r"^Port\s", line):
            printed = set(re.findall(r"\(([^)]+)\)", line))
            if len(printed) > 1:
                raise _Garbled(f"one table in units {sorted(printed)}", line=number,
                               expected="one unit per quantity")
            unit = printed.pop() if printed else None
            continue
        if quantity is None or re.match(r"^\s", line) or not line.strip():
            continue
        if set(line.strip()) <= {"-", " "}:
            in_rows = True
            continue
        tokens = line.split()
        flag = tokens.pop(2) if len(tokens) == 7 and tokens[2] in ("++", "+", "-", "--") else None
        if not in_rows or len(tokens) != 6 or not _PORT.fullmatch(tokens[0]):
            raise _Garbled(
                f"row {line.strip()!r} is not a complete threshold row",
                line=number,
                expected="PORT VALUE HIGH-ALARM HIGH-WARN LOW-ALARM LOW-WARN",
            )
        del flag  # the level is recomputed from the thresholds by Threshold.state
        port = long_name(tokens[0])
        value, hi_alarm, hi_warn, lo_alarm, lo_warn = (
            _in_unit(_cell(t, number), unit, quantity) for t in tokens[1:]
        )
        if quantity in readings.setdefault(port, {}):
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        readings[port][quantity] = value
        limits.setdefault(port, {})[quantity] = Threshold(lo_alarm, lo_warn, hi_warn, hi_alarm)
    if not readings:
        raise _Garbled("no threshold table rows", expected="'show interfaces transceiver detail'")
    return {
        port: Transceiver(
            temperature_c=r.get("temperature_c"),
            voltage_v=r.get("voltage_v"),
            lanes=[
                LaneDom(
                    lane=1,
                    tx_bias_ma=r.get("tx_bias_ma"),
                    tx_power_dbm=r.get("tx_power_dbm"),
                    rx_power_dbm=r.get("rx_power_dbm"),
                )
            ],
            thresholds=limits[port],
        )
        for port, r in readings.items()
    }


# --- FEC -----------------------------------------------------------------------------


def _attr_value(entry: dict[str, Any], key: str, where: str) -> Any:
    """EOS PHY attributes are ``{"value": V, "changes": N, "lastChange": T}``."""
    attr = entry.get(key)
    if attr is None:
        return None
    return _object(attr, f"{where}.{key}").get("value")


@_eos("show interfaces phy detail")
def parse_phy_detail(text: str) -> dict[str, FecStats]:
    """FEC codeword counters and pre-FEC BER per port, from the PHY that terminates
    the line side (the ``fec`` of the first ``phyStatuses`` entry that has one, as
    ANTA's VerifyInterfacesBER reads it). Symbol errors are the sum of the per-lane
    ``correctedSymbols`` where EOS prints them. EOS prints no codeword histogram
    here: ``bins`` stays empty."""
    doc = _require_json(text, "show interfaces phy detail", "interfacePhyStatuses")
    out: dict[str, FecStats] = {}
    for port, entry in _entries(doc, "interfacePhyStatuses").items():
        statuses = entry.get("phyStatuses")
        if not isinstance(statuses, list):
            raise _Garbled(f"{port}: no phyStatuses list", expected="a 'phyStatuses' list")
        for i, status in enumerate(statuses):
            where = f"{port}.phyStatuses[{i}]"
            fec = _object(_object(status, where).get("fec"), f"{where}.fec")
            corrected = _int(_attr_value(fec, "correctedCodewords", where))
            uncorrected = _int(_attr_value(fec, "uncorrectedCodewords", where))
            if corrected is None and uncorrected is None:
                continue
            symbols = _object(fec.get("correctedSymbols"), f"{where}.fec.correctedSymbols")
            lane_counts = [_int(_attr_value(symbols, lane, where)) for lane in sorted(symbols)]
            out[port] = FecStats(
                corrected_cw=corrected,
                uncorrectable_cw=uncorrected,
                symbol_errors=sum(c or 0 for c in lane_counts) if lane_counts else None,
                pre_fec_ber=_num(_attr_value(status, "preFecBer", where)),
                state=_str(fec.get("encoding")),
            )
            break
    return out


# --- clock ----------------------------------------------------------------------------


@_eos("show clock")
def parse_clock(text: str) -> float:
    """The switch's clock, ``utcTime`` (epoch seconds with a fraction), for windows the
    counters were kept over. JSON only: the text form prints local time to the second."""
    doc = _require_json(text, "show clock", "utcTime", (int, float))
    raw = doc["utcTime"]
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise _Garbled(f"utcTime {raw!r} is not a number", expected="epoch seconds")
    if not math.isfinite(raw) or raw <= 0:
        raise _Garbled(f"utcTime {raw!r} is not a time", expected="epoch seconds")
    return float(raw)


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


# --- inventory -----------------------------------------------------------------------


def _module(vendor: Any, model: Any, serial: Any) -> Transceiver:
    vendor, model = _str(vendor), _str(model)
    if vendor is None or vendor == "Not Present" or model is None:
        return Transceiver(present=False)
    return Transceiver(vendor=vendor, part_number=model, serial=_str(serial))


def _inventory_text(text: str) -> dict[str, Transceiver]:
    """The ``System has N transceiver slots`` table: PORT MANUFACTURER... MODEL SERIAL REV
    (the manufacturer may hold spaces, so the row is read from both ends)."""
    lines = text.splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if re.match(r"^System has \d+ transceiver slots", ln)),
        None,
    )
    if start is None:
        raise _Garbled("no 'System has N transceiver slots' table", expected="'show inventory'")
    out: dict[str, Transceiver] = {}
    for number, row in enumerate(lines[start + 1 :], start=start + 2):
        tokens = row.split()
        if not tokens or row.startswith("System has") or _PROMPT.match(row):
            break
        if tokens[0] == "Port" or set(row.strip()) <= {"-", " "}:
            continue
        if not re.fullmatch(r"\d+(?:/\d+)*", tokens[0]):
            raise _Garbled(
                f"slot row {row.strip()!r}",
                line=number,
                expected="SLOT MANUFACTURER MODEL SERIAL REV",
            )
        if tokens[0] in out:
            raise _Garbled(
                f"slot {tokens[0]} listed twice", line=number, expected="one row per slot"
            )
        if len(tokens) == 1 or tokens[1:] == ["Not", "Present"]:
            out[tokens[0]] = Transceiver(present=False)
            continue
        if len(tokens) < 5:
            raise _Garbled(
                f"slot row {row.strip()!r} stops early",
                line=number,
                expected="SLOT MANUFACTURER MODEL SERIAL REV",
            )
        out[tokens[0]] = _module(" ".join(tokens[1:-3]), tokens[-3], tokens[-2])
    return out


@_eos("show inventory")
def parse_inventory(text: str) -> dict[str, Transceiver]:
    """Transceiver slots (vendor, part number, serial) keyed by slot as EOS numbers them
    (``"3"``, ``"2/1"`` on a modular chassis); :func:`slot_of` maps a port to its slot."""
    doc = _as_json(text)
    if doc is None:
        return _inventory_text(text)
    _own_key(doc, "show inventory", "xcvrSlots")
    return {
        slot: _module(x.get("mfgName"), x.get("modelName"), x.get("serialNum"))
        for slot, x in _entries(doc, "xcvrSlots").items()
    }


def slot_of(port: str, slots: dict[str, Any]) -> str | None:
    """The transceiver slot of ``port``: ``Ethernet3/1/1`` -> ``"3/1"`` when a modular
    chassis has it, ``Ethernet3/1`` (lane 1 of slot 3) -> ``"3"``, ``Ethernet52`` -> ``"52"``."""
    m = re.fullmatch(r"Ethernet(\d+(?:/\d+)*)", port)
    if not m:
        return None
    numbers = m.group(1).split("/")
    for cut in (len(numbers), len(numbers) - 1):
        slot = "/".join(numbers[:cut])
        if cut and slot in slots:
            return slot
    return None


# --- show interfaces as text -----------------------------------------------------------

_N = r"(\d+)"
#: counter lines of one ``show interfaces`` block -> the fields their numbers fill
_COUNTER_LINES = [
    (re.compile(rf"^\s+{_N} packets input, {_N} bytes$"), ("rx_packets", "rx_octets")),
    (
        re.compile(rf"^\s+Received {_N} broadcasts, {_N} multicast$"),
        ("rx_broadcast_packets", "rx_multicast_packets"),
    ),
    (re.compile(rf"^\s+{_N} runts, {_N} giants$"), ("rx_runts", "rx_giants")),
    (
        re.compile(
            rf"^\s+{_N} input errors, {_N} CRC, {_N} alignment, {_N} symbol, {_N} input discards$"
        ),
        ("rx_errors", "rx_fcs_errors", "rx_alignment_errors", "rx_symbol_errors", "rx_discards"),
    ),
    (re.compile(rf"^\s+{_N} PAUSE input$"), ("rx_pause_frames",)),
    (re.compile(rf"^\s+{_N} packets output, {_N} bytes$"), ("tx_packets", "tx_octets")),
    (
        re.compile(rf"^\s+Sent {_N} broadcasts, {_N} multicast$"),
        ("tx_broadcast_packets", "tx_multicast_packets"),
    ),
    (re.compile(rf"^\s+{_N} output errors, {_N} collisions$"), ("tx_errors", None)),
    (
        re.compile(rf"^\s+{_N} late collision, {_N} deferred, {_N} output discards$"),
        (None, None, "tx_discards"),
    ),
    (re.compile(rf"^\s+{_N} PAUSE output$"), ("tx_pause_frames",)),
]
_BLOCK = re.compile(r"^(\S+) is (?:up|down|administratively down), line protocol is")


def _interfaces_text(text: str) -> dict[str, InterfaceCounters]:
    """One block per interface; Vlan/Vxlan/Loopback blocks carry no counters and are
    left out, like their JSON entries without ``interfaceCounters``."""
    blocks: dict[str, dict[str, int | None]] = {}
    current: dict[str, int | None] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if m := _BLOCK.match(line):
            if m.group(1) in blocks:
                raise _Garbled(
                    f"interface {m.group(1)} listed twice",
                    line=number,
                    expected="one block per interface",
                )
            current = blocks[m.group(1)] = {}
            continue
        if current is None:
            continue
        for rx, fields in _COUNTER_LINES:
            if not (c := rx.match(line)):
                continue
            for field, value in zip(fields, c.groups(), strict=True):
                if field is None:
                    continue
                if field in current:
                    raise _Garbled(
                        f"{field} printed twice in one block",
                        line=number,
                        expected="each counter line once",
                    )
                current[field] = int(value)
            break
    out = {port: InterfaceCounters(**values) for port, values in blocks.items() if values}
    if not out:
        raise _Garbled("no interface block with counters", expected="'show interfaces' text")
    return out
