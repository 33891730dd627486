"""EOS facts, interface status, MTUs and counters (JSON and text), PHY FEC and the clock."""

from __future__ import annotations

import math
import re
from typing import Any

from labtest.capabilities.switch import (
    Facts,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
)
from labtest.drivers.common.cells import status_header, status_table
from labtest.drivers.eos.parsers._common import (
    _PROMPT,
    DRIVER,
    _as_json,
    _entries,
    _eos,
    _int,
    _looks_like,
    _not_json,
    _num,
    _object,
    _own_key,
    _require_json,
    _str,
    long_name,
)
from labtest.parsing import Garbled as _Garbled
from labtest.parsing import checked

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


def _rule(row: str) -> bool:
    """EOS rules the header off with dashes (cut at the column gaps)."""
    return set(row.strip()) <= {"-", " "}


def _status_row(number: int, row: str, cells: dict[str, str]) -> InterfaceStatus:
    """One text row: an EOS port and link status word, then every column the header has."""
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
    admin, oper = _admin_oper(status)
    return InterfaceStatus(
        name=port,
        admin_up=admin,
        oper_up=oper,
        speed_gbps=_speed_gbps_text(cells.get("Speed", "")),
        type=_str(cells.get("Type")),
        vlan=_str(cells.get("Vlan")),
        description=_str(cells.get("Name")),
        state=status,
    )


def _status_text(text: str) -> dict[str, InterfaceStatus]:
    lines = text.splitlines()
    return status_table(lines, status_header(lines), _status_row, prompt=_PROMPT, rule=_rule)


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
        raise _Garbled(
            "expected JSON output (run 'show interfaces | json')",
            line=1,
            expected="a JSON document",
        )
    _own_key(doc, "show interfaces", "interfaces")
    out: dict[str, int] = {}
    for port, entry in _entries(doc, "interfaces").items():
        if "mtu" in entry:
            mtu = _int(entry["mtu"])
            if mtu is None or mtu <= 0:
                raise _Garbled(
                    f"interfaces.{port}.mtu is {entry['mtu']!r}, not a positive number of bytes",
                    expected="mtu in bytes",
                )
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
        link_status_changes=_int(c.get("linkStatusChanges")),
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
                symbol_errors=(None if not lane_counts or None in lane_counts
                               else sum(c for c in lane_counts if c is not None)),
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


# --- show interfaces as text -----------------------------------------------------------

_N = r"(\d+)"
#: counter lines of one ``show interfaces`` block -> the fields their numbers fill
_COUNTER_LINES = [
    (re.compile(rf"^\s+{_N} link status changes since last clear$"), ("link_status_changes",)),
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
