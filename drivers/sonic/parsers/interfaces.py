"""SONiC facts, interface status and counters, FEC counters and histogram, PRBS."""

from __future__ import annotations

import re

from labtest.capabilities.switch import (
    Facts,
    FecHistogram,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
    PlatformSummary,
    PrbsResult,
)
from labtest.drivers.common.cells import cell_float as _float
from labtest.drivers.common.cells import cell_int as _int
from labtest.drivers.common.cells import cell_text as _text
from labtest.drivers.sonic.parsers._common import (
    UNKNOWN_PORT,
    _key_values,
    _keyed,
    _sonic,
    _tables,
    _tables_named,
    _updown,
)
from labtest.parsing import Garbled as _Garbled

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


@_sonic("show interfaces flap", "show interface flap")
def parse_interfaces_flap(text: str) -> dict[str, int]:
    """Oper-status changes per port (``Flap Count``; ``Never`` is none): orchagent counts
    each change, down and up, in APPL_DB's PORT_TABLE (sonic-utilities PR 3724)."""
    out: dict[str, int] = {}
    for table in _tables_named(text, "Interface", "Flap Count"):
        for i, (port, row) in enumerate(_keyed(table, "Interface", out)):
            cell = _text(table.cell(row, "Flap Count"))
            count = 0 if cell == "Never" else _int(cell, signed=False)
            if count is None:
                raise _Garbled(f"{port}: no flap count", line=table.lines[i],
                               expected="a number or Never")
            out[port] = count
    return out


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
