"""Parsers for Cisco NX-OS text output.

NX-OS prints fixed-width tables framed by rules of dashes, and splits wide
counter sets into several narrow "Port  A  B" tables that share the port
column; those are merged per port. ``--`` and ``N/A`` mean "not applicable"
and become ``None``. Samples under ``tests/drivers/samples/nxos``.

Every parser checks before it reads: output that another command prints is
refused by name (``show interface status`` given as counters), a row with fewer
cells than its header, a port listed twice in one table and a value cut to a
non-number are refused with the line they are on.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from labtest.capabilities.switch import (
    Facts,
    InterfaceCounters,
    InterfaceStatus,
    LldpNeighbor,
    PfcCounters,
)
from labtest.capabilities.transceiver import Threshold, Transceiver
from labtest.drivers.common.cells import (
    NA_NXOS,
    cell_int,
    cell_text,
    header_columns,
    in_field_unit,
    lane_doms,
    row_cells,
)
from labtest.drivers.common.lldp import newest_per_port
from labtest.parsing import F, checked
from labtest.parsing import Garbled as _Garbled

DRIVER = "nxos"


def _int(cell: str | None) -> int | None:
    return cell_int(cell, NA_NXOS, signed=False)  # NX-OS counters carry no sign


def _text(cell: str | None) -> str | None:
    return cell_text(cell, NA_NXOS)


#: text only one command prints -> that command, to name a wrong capture
_SIGNATURES = [
    (re.compile(r"Cisco Nexus Operating System"), "show version"),
    (re.compile(r"^Port\s+Name\s+Status\s", re.M), "show interface status"),
    (re.compile(r"^Port\s+Mode\s+Oper", re.M), "show interface priority-flow-control"),
    (re.compile(r"^Device ID\s+Local Intf", re.M), "show lldp neighbors"),
    (re.compile(r"transceiver is (?:not )?present"), "show interface transceiver details"),
    (
        re.compile(r"^Port\s+(?:InOctets|InUcastPkts|OutOctets|InPkts)\s", re.M),
        "show interface counters",
    ),
    (re.compile(r"^Port\s+Align-Err\s", re.M), "show interface counters errors"),
]
#: commands one parser reads (the counters parser reads both counter commands)
_SAME = {"show interface counters errors": "show interface counters"}


def _check_command(command: str, text: str) -> None:
    own = _SAME.get(command, command)
    seen = [c for rx, c in _SIGNATURES if rx.search(text)]
    if seen and all(_SAME.get(c, c) != own for c in seen):
        raise _Garbled(
            f"this looks like '{seen[0]}' output, not '{command}'", expected=f"'{command}' output"
        )


def _nxos(*commands: str) -> Callable[[F], F]:
    return checked(DRIVER, *commands, before=_check_command)


_RULE = re.compile(r"^\s*[-=]{10,}\s*$")
#: an interface name as NX-OS prints it: Eth1/1, Ethernet1/1.100, mgmt0, Po10, Vlan2, Eth105/1/1
_PORT_NAME = re.compile(r"[A-Za-z][A-Za-z-]*\d+(?:[/.:]\d+)*")
_PROMPT = re.compile(r"^\S+#")


# --- facts -------------------------------------------------------------------


@_nxos("show version")
def parse_version(text: str) -> Facts:
    version = re.search(r"^\s*(?:NXOS|system):\s+version\s+(\S+)", text, re.M)
    if "Cisco Nexus Operating System" not in text or not version:
        raise _Garbled("not an NX-OS 'show version' (no NXOS/system version line)")
    chassis = re.search(r"^\s*cisco (Nexus\S*\s+\S+)\s+Chassis", text, re.M)
    serial = re.search(r"Processor Board ID (\S+)", text)
    name = re.search(r"Device name:\s*(\S+)", text)
    up = re.search(
        r"Kernel uptime is (\d+) day\(s\), (\d+) hour\(s\), (\d+) minute\(s\), (\d+) second",
        text,
    )
    uptime = None
    if up:
        d, h, m, s = (int(x) for x in up.groups())
        uptime = float(d * 86400 + h * 3600 + m * 60 + s)
    return Facts(
        vendor="Cisco",
        model=chassis.group(1) if chassis else None,
        os_version=version.group(1),
        serial=serial.group(1) if serial else None,
        hostname=name.group(1) if name else None,
        uptime_s=uptime,
    )


# --- interfaces --------------------------------------------------------------

_ADMIN_DOWN = {"disabled", "adminDown"}
_ADMIN_UP = {"connected", "notconnec", "notconnect", "xcvrAbsen", "sfpAbsent", "noOperMem"}


def _speed_gbps(cell: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(G?)", cell.strip())
    if not m:
        return None  # "auto"
    return float(m.group(1)) if m.group(2) else float(m.group(1)) / 1000  # bare numbers are Mb/s


@_nxos("show interface status", "show interfaces status")
def parse_interface_status(text: str) -> dict[str, InterfaceStatus]:
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+Name\s+Status", ln)), None)
    if header is None:
        raise _Garbled("no 'Port Name Status ...' header")
    if re.search(r"\bFlags\s+Encapsulation\b", lines[header]):
        raise _Garbled(
            "this looks like Arista EOS 'show interfaces status' output (Flags/Encapsulation "
            "columns), not NX-OS 'show interface status'",
            line=header + 1,
            expected="Port Name Status Vlan Duplex Speed Type",
        )
    columns = header_columns(lines[header])
    out: dict[str, InterfaceStatus] = {}
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if _RULE.match(row):
            continue
        if not row.strip() or _PROMPT.match(row):
            break
        cells = row_cells(row, columns)
        port, status = cells["Port"], cells["Status"]
        if not _PORT_NAME.fullmatch(port):
            raise _Garbled(
                f"row {row.strip()!r} has no port name",
                line=number,
                expected="PORT NAME STATUS VLAN DUPLEX SPEED TYPE",
            )
        if not status or not all(cells.get(c) for c in ("Duplex", "Speed")):
            raise _Garbled(
                f"row {row.strip()!r} stops before its Duplex/Speed cells",
                line=number,
                expected="PORT NAME STATUS VLAN DUPLEX SPEED TYPE",
            )
        if port in out:
            raise _Garbled(f"port {port} listed twice", line=number, expected="one row per port")
        out[port] = InterfaceStatus(
            name=port,
            admin_up=False if status in _ADMIN_DOWN else True if status in _ADMIN_UP else None,
            oper_up=status == "connected" if status in _ADMIN_DOWN | _ADMIN_UP else None,
            speed_gbps=_speed_gbps(cells.get("Speed", "")),
            type=_text(cells.get("Type")),
            vlan=_text(cells.get("Vlan")),
            description=_text(cells.get("Name")),
            state=status,
        )
    if not out:
        raise _Garbled("status table has no rows")
    return out


def _port_tables(text: str) -> dict[str, dict[str, str]]:
    """Merge every ``Port  COL  COL`` table into ``{port: {column: cell}}`` (one pass)."""
    merged: dict[str, dict[str, str]] = {}
    headers: list[str] | None = None  # the open table's header, None between tables
    seen: set[str] = set()
    for number, row in enumerate(text.splitlines(), start=1):
        if re.match(r"^Port\s+\S", row):
            headers, seen = row.split(), set()
            continue
        if headers is None or _RULE.match(row):
            continue
        if not row.strip() or _PROMPT.match(row):
            headers = None  # end of this table
            continue
        tokens = row.split()
        if len(tokens) != len(headers):
            raise _Garbled(
                f"row {row.strip()!r} has {len(tokens)} cells, its header {len(headers)}",
                line=number,
                expected=" ".join(headers),
            )
        if not _PORT_NAME.fullmatch(tokens[0]):
            raise _Garbled(
                f"row {row.strip()!r} has no port name", line=number, expected=" ".join(headers)
            )
        if tokens[0] in seen:
            raise _Garbled(
                f"port {tokens[0]} listed twice", line=number, expected="one row per port"
            )
        seen.add(tokens[0])
        merged.setdefault(tokens[0], {}).update(zip(headers[1:], tokens[1:], strict=True))
    return merged


_COUNTERS = {
    "InOctets": "rx_octets",
    "InUcastPkts": "rx_unicast_packets",
    "InMcastPkts": "rx_multicast_packets",
    "InBcastPkts": "rx_broadcast_packets",
    "OutOctets": "tx_octets",
    "OutUcastPkts": "tx_unicast_packets",
    "OutMcastPkts": "tx_multicast_packets",
    "OutBcastPkts": "tx_broadcast_packets",
    "InPkts": "rx_packets",
    "OutPkts": "tx_packets",
    "Rcv-Err": "rx_errors",
    "Xmit-Err": "tx_errors",
    "InDiscards": "rx_discards",
    "OutDiscards": "tx_discards",
    "FCS-Err": "rx_fcs_errors",
    "Align-Err": "rx_alignment_errors",
    "Symbol-Err": "rx_symbol_errors",
    "Runts": "rx_runts",
    "Giants": "rx_giants",
}


def _sum(*values: int | None) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


@_nxos("show interface counters", "show interface counters errors")
def parse_interface_counters(text: str) -> dict[str, InterfaceCounters]:
    merged = _port_tables(text)
    out: dict[str, InterfaceCounters] = {}
    for port, cells in merged.items():
        values = {field: _int(cells[col]) for col, field in _COUNTERS.items() if col in cells}
        if not values:
            continue
        # a sub-interface's InPkts is not the sum of its cast counters (genie's
        # Eth1/1.1 sample: 1778 against 0+0+0), so only a main port's total is summed
        derive = "." not in port
        for way in ("rx", "tx") if derive else ():
            if f"{way}_packets" not in values and f"{way}_unicast_packets" in values:
                values[f"{way}_packets"] = _sum(
                    values[f"{way}_unicast_packets"],
                    values.get(f"{way}_multicast_packets"),
                    values.get(f"{way}_broadcast_packets"),
                )
        out[port] = InterfaceCounters(**values)
    if not out:
        raise _Garbled("no 'Port ...' counter table")
    return out


# --- transceivers ------------------------------------------------------------

_DOM_ROW = re.compile(r"^\s+(Temperature|Voltage|Current|Tx Power|Rx Power)\s+((?:N/A|[-+]?\d).*)$")
_QUANTITY = {
    "Temperature": "temperature_c",
    "Voltage": "voltage_v",
    "Current": "tx_bias_ma",
    "Tx Power": "tx_power_dbm",
    "Rx Power": "rx_power_dbm",
}
_FLAG_LEVEL = {"++": "high_alarm", "+": "high_warn", "--": "low_alarm", "-": "low_warn"}
_UNITS = {"C", "V", "mA", "dBm", "mW"}
_INFO = re.compile(r"^\s+(type|name|part number|serial number|firmware version) is (.*?)\s*$")


def _dom_values(rest: str, quantity: str) -> tuple[list[float | None], str | None]:
    """``-14.05 dBm --  1.69 dBm -11.30 dBm ...`` -> ([current, hi-alarm, lo-alarm,
    hi-warn, lo-warn], flag), each value in the unit ``quantity`` carries (a power in
    mW becomes dBm; a unit that is not the quantity's is refused)."""
    values: list[float | None] = []
    printed: list[float | None] = []  # the number as printed, before its unit
    flag = None
    for token in rest.split():
        if token in _UNITS:
            if printed and printed[-1] is not None:
                values[-1] = in_field_unit(printed[-1], token, quantity)
                printed[-1] = None  # one unit per value
            continue
        if token in _FLAG_LEVEL:
            flag = token
        elif token == "N/A":
            values.append(None)
            printed.append(None)
        else:
            values.append(float(token))
            printed.append(values[-1])
    if len(values) != 5:
        raise _Garbled(f"DOM row with {len(values)} values: {rest.strip()!r}")
    return values, flag


@_nxos("show interface transceiver details", "show interface transceiver detail")
def parse_transceiver_details(text: str) -> dict[str, Transceiver]:
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"^(Ethernet|Eth)\S+\s*$", line):
            if line.strip() in blocks:
                raise _Garbled(
                    f"port {line.strip()} listed twice", line=number, expected="one block per port"
                )
            current = blocks.setdefault(line.strip(), [])
        elif current is not None:
            current.append(line)
    if not blocks:
        raise _Garbled("no 'EthernetX/Y' block")
    return {port: _transceiver(lines) for port, lines in blocks.items()}


def _transceiver(lines: list[str]) -> Transceiver:
    if any("transceiver is not present" in ln for ln in lines):
        return Transceiver(present=False)
    if not any("transceiver is present" in ln for ln in lines):
        raise _Garbled("block without a 'transceiver is ...' line")
    info: dict[str, str] = {}
    module: dict[str, float | None] = {}
    lanes: dict[int, dict[str, float | None]] = {}
    thresholds: dict[str, Threshold] = {}
    flags: dict[str, bool] = {}
    lane = 1
    for line in lines:
        if m := _INFO.match(line):
            info.setdefault(m.group(1), m.group(2))
        elif m := re.match(r"^Lane Number:(\d+)", line):
            lane = int(m.group(1))
        elif m := _DOM_ROW.match(line):
            quantity = _QUANTITY[m.group(1)]
            values, flag = _dom_values(m.group(2), quantity)
            current, hi_alarm, lo_alarm, hi_warn, lo_warn = values
            thresholds.setdefault(quantity, Threshold(lo_alarm, lo_warn, hi_warn, hi_alarm))
            per_lane = quantity in ("tx_bias_ma", "tx_power_dbm", "rx_power_dbm")
            if per_lane:
                lanes.setdefault(lane, {})[quantity] = current
            else:
                module.setdefault(quantity, current)
            if flag:
                prefix = f"lane{lane}_" if per_lane else ""
                flags[f"{prefix}{quantity}_{_FLAG_LEVEL[flag]}"] = True
    return Transceiver(
        temperature_c=module.get("temperature_c"),
        voltage_v=module.get("voltage_v"),
        lanes=lane_doms(lanes),
        thresholds=thresholds,
        vendor=_text(info.get("name")),
        part_number=_text(info.get("part number")),
        serial=_text(info.get("serial number")),
        firmware=_text(info.get("firmware version")),
        media_type=_text(info.get("type")),
        flags=flags,
    )


# --- LLDP --------------------------------------------------------------------


@_nxos("show lldp neighbors")
def parse_lldp_neighbors(text: str) -> dict[str, LldpNeighbor]:
    """Rows are read right-anchored on the hold time, because long device IDs
    wrap onto their own line and IDs may contain spaces. The table prints no age, so the
    first neighbour seen on a port wins and the others are named (``older_neighbours``)."""
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if ln.startswith("Device ID")), None)
    if header is None:
        raise _Garbled("no 'Device ID  Local Intf ...' header")
    rows: list[tuple[str, LldpNeighbor, None]] = []
    pending: str | None = None
    for row in lines[header + 1 :]:
        if not row.strip() or row.startswith("Total entries"):
            continue
        tokens = row.split()
        hold = next((i for i in range(1, len(tokens)) if tokens[i].isdigit()), None)
        if hold is None:  # a wrapped device ID, the rest follows on the next line
            pending = row.strip()
            continue
        device = " ".join(tokens[: hold - 1]) or pending
        local = tokens[hold - 1]
        rest = tokens[hold + 1 :]
        caps = []
        while len(rest) > 1 and re.fullmatch(r"[RBTCWPSO](?:,[RBTCWPSO])*|[RBTCWPSO]+", rest[0]):
            caps.append(rest.pop(0))
        if not device or not rest:
            raise _Garbled(f"LLDP row {row!r}")
        rows.append(
            (
                local,
                LldpNeighbor(
                    remote_system=device,
                    remote_port=" ".join(rest),
                    capabilities=" ".join(caps) or None,
                    ttl_s=int(tokens[hold]),
                ),
                None,  # the hold time printed is the neighbour's TTL, not its age
            )
        )
        pending = None
    if not rows:
        raise _Garbled("LLDP table has no rows")
    return newest_per_port(rows)


# --- PFC ---------------------------------------------------------------------

_PFC_ROW = re.compile(
    r"^(?P<port>\S+)\s+(?P<mode>\S+)\s+(?P<oper>On|Off)\s*(?:\((?P<bmap>[0-9a-fA-F]+)\))?"
    r"\s+(?P<rx>\d+)\s+(?P<tx>\d+)\s*$"
)


@_nxos("show interface priority-flow-control")
def parse_priority_flow_control(text: str) -> dict[str, PfcCounters]:
    """NX-OS gives PFC frames per port, not per priority: ``rx``/``tx`` stay ``None``
    lists and the totals carry RxPPP/TxPPP; the VL bitmap gives the enabled priorities."""
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if re.match(r"^Port\s+Mode\s+Oper", ln)), None)
    if header is None:
        raise _Garbled("no 'Port  Mode Oper(VL bmap)  RxPPP  TxPPP' header")
    out: dict[str, PfcCounters] = {}
    for number, row in enumerate(lines[header + 1 :], start=header + 2):
        if not row.strip() or _RULE.match(row):
            continue
        if _PROMPT.match(row):
            break
        m = _PFC_ROW.match(row)
        if not m or not _PORT_NAME.fullmatch(m["port"]):
            raise _Garbled(
                f"PFC row {row.strip()!r}", line=number, expected="PORT MODE OPER RXPPP TXPPP"
            )
        if m["port"] in out:
            raise _Garbled(
                f"port {m['port']} listed twice", line=number, expected="one row per port"
            )
        bmap = int(m["bmap"], 16) if m["bmap"] else None
        out[m["port"]] = PfcCounters(
            rx=[None] * 8,
            tx=[None] * 8,
            rx_total=int(m["rx"]),
            tx_total=int(m["tx"]),
            mode=m["mode"],
            oper=m["oper"],
            enabled_priorities=[p for p in range(8) if bmap >> p & 1] if bmap is not None else [],
        )
    if not out:
        raise _Garbled("PFC table has no rows")
    return out
