"""Parsers for Arista EOS output: ``| json`` first, text where a field engineer pastes it.

EOS renders the same model as text or JSON; the JSON keys are stable across
releases, so each parser reads JSON when the text is JSON and falls back to the
text table for the few commands where that is useful (version, interface
status, LLDP). Both ``"show version"`` and ``"show version | json"`` reach the
same parser. Records and ``None`` conventions follow ``labtest.capabilities.switch``;
samples under ``tests/drivers/samples/eos``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from labtest.capabilities.switch import Facts, InterfaceCounters, InterfaceStatus, LldpNeighbor
from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.errors import ParseError
from labtest.parsing import parser

DRIVER = "eos"
PARSE_DEVICE = "<parse>"

F = TypeVar("F", bound=Callable[..., Any])


class _Garbled(ValueError):
    """Raised inside a parser; the registration wrapper turns it into ParseError."""


def _eos(*commands: str) -> Callable[[F], F]:
    """Register ``fn`` for each command and its ``| json`` form, with the ParseError contract."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(text: str, *args: Any, device: str = PARSE_DEVICE, **kwargs: Any) -> Any:
            try:
                return fn(text, *args, **kwargs)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                raise ParseError(device, f"{commands[0]}: {exc}", raw=text) from exc

        parser(DRIVER, *commands, *(f"{c} | json" for c in commands))(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


_PROMPT = re.compile(r"^\S+[#>]")  # "switch#show version | json" echoed before the output


def _as_json(text: str) -> dict[str, Any] | None:
    """The JSON document in ``text`` (leading prompt/comment lines allowed), else None."""
    lines = text.strip().splitlines()
    while (
        lines
        and not lines[0].lstrip().startswith("{")
        and (_PROMPT.match(lines[0]) or lines[0].startswith("#"))
    ):
        lines.pop(0)
    body = "\n".join(lines).strip()
    if not body.startswith("{"):
        return None
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        raise _Garbled(f"broken JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _Garbled("JSON output is not an object")
    return doc


def _require_json(text: str, command: str) -> dict[str, Any]:
    doc = _as_json(text)
    if doc is None:
        raise _Garbled(f"expected JSON output (run '{command} | json')")
    return doc


def _str(value: Any) -> str | None:
    if value is None:
        return None
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
        if "version" not in doc or "modelName" not in doc:
            raise _Garbled("no 'version'/'modelName' keys")
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
    for row in lines[header + 1 :]:
        if not row.strip():
            break
        if set(row.strip()) <= {"-", " "}:
            continue
        cells = {
            name: row[start : starts[i + 1] if i + 1 < len(starts) else None].strip()
            for i, (name, start) in enumerate(zip(names, starts, strict=True))
        }
        port, status = long_name(cells["Port"]), cells["Status"]
        if not port or not status:
            raise _Garbled(f"row without port or status: {row!r}")
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
    statuses = doc["interfaceStatuses"]
    out: dict[str, InterfaceStatus] = {}
    for name, st in statuses.items():
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
    doc = _require_json(text, "show interfaces")
    if "interfaceErrorCounters" in doc:
        return {p: _counters(c) for p, c in doc["interfaceErrorCounters"].items()}
    out: dict[str, InterfaceCounters] = {}
    for port, entry in doc["interfaces"].items():
        counters = entry.get("interfaceCounters", entry if "inOctets" in entry else None)
        if counters is not None:  # Loopback/Vlan interfaces carry no counters
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
    doc = _require_json(text, "show interfaces transceiver")
    out: dict[str, Transceiver] = {}
    for port, t in doc["interfaces"].items():
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
            if (levels := (t.get("details") or {}).get(key))
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
    out: dict[str, LldpNeighbor] = {}
    for row in lines[header + 1 :]:
        if not row.strip() or set(row.strip()) <= {"-", " "}:
            continue
        tokens = row.split()
        if len(tokens) < 4 or not tokens[-1].isdigit():
            raise _Garbled(f"LLDP row {row!r}")
        out.setdefault(
            long_name(tokens[0]),
            LldpNeighbor(
                remote_system=" ".join(tokens[1:-2]),
                remote_port=tokens[-2],
                ttl_s=int(tokens[-1]),
            ),
        )
    return out


@_eos("show lldp neighbors", "show lldp neighbors detail")
def parse_lldp_neighbors(text: str) -> dict[str, LldpNeighbor]:
    doc = _as_json(text)
    if doc is None:
        return _lldp_text(text)
    neighbors = doc["lldpNeighbors"]
    out: dict[str, LldpNeighbor] = {}
    if isinstance(neighbors, list):  # "show lldp neighbors | json"
        for n in neighbors:
            out.setdefault(
                n["port"],
                LldpNeighbor(
                    remote_system=_str(n.get("neighborDevice")),
                    remote_port=_unquote(n.get("neighborPort")),
                    ttl_s=_int(n.get("ttl")),
                ),
            )
        return out
    for port, entry in neighbors.items():  # "show lldp neighbors detail | json"
        infos = entry["lldpNeighborInfo"]
        if not infos:
            continue
        n = infos[0]
        iface = n.get("neighborInterfaceInfo") or {}
        mgmt = n.get("managementAddresses") or []
        caps = [k for k, on in (n.get("systemCapabilities") or {}).items() if on]
        out[port] = LldpNeighbor(
            remote_system=_str(n.get("systemName")),
            remote_port=_unquote(iface.get("interfaceId")),
            remote_port_description=_unquote(iface.get("interfaceDescription")),
            remote_chassis_id=_str(n.get("chassisId")),
            capabilities=",".join(caps) or None,
            ttl_s=_int(n.get("ttl")),
            remote_mgmt_address=_str(mgmt[0].get("address")) if mgmt else None,
        )
    return out
