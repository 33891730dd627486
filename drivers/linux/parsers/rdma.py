"""RDMA device tools: ``rdma link``, ``rdma statistic``, mlnx-tools ``show_gids`` /
``show_counters`` and ``ibv_devinfo``.

``rdma statistic`` prints one line per port, ``-p`` one counter per line, and mail
or narrow terminals wrap the long line; so counters are read as name/value
token pairs belonging to the last ``link DEV/PORT`` seen. The same hardware
counters are what ``show_counters`` reads from sysfs.
"""

from __future__ import annotations

import ipaddress
import re

from labtest.capabilities.host import GidEntry, RdmaDevice, RdmaHwCounters
from labtest.drivers.linux.parsers._common import parse_error
from labtest.parsing import fingerprint, parser

# --- rdma link -----------------------------------------------------------------

# "link mlx5_0/1 state ..." or, from older iproute2, "2/1: mlx5_0/1: state ..."
_LINK = re.compile(r"^\s*(?:link\s+|\d+/\d+:\s+)(\S+?)/(\d+):?\s+(.*)$")


def _attributes(rest: str) -> dict[str, str]:
    tokens = rest.split()
    return {tokens[i]: tokens[i + 1] for i in range(0, len(tokens) - 1, 2)}


@parser("linux", "rdma link", "rdma link show", "rdma dev link")
def parse_rdma_link(text: str) -> list[RdmaDevice]:
    """Every RDMA port: state, physical state and the netdev it sits on."""
    devices = []
    seen: set[tuple[str, int]] = set()
    for line in text.splitlines():
        match = _LINK.match(line)
        if not match:
            continue
        attrs = _attributes(match.group(3))
        if (match.group(1), int(match.group(2))) in seen:
            raise parse_error(
                f"port {match.group(1)}/{match.group(2)} twice", text, expected="each port once"
            )
        seen.add((match.group(1), int(match.group(2))))
        devices.append(
            RdmaDevice(
                name=match.group(1),
                port=int(match.group(2)),
                state=attrs.get("state"),
                physical_state=attrs.get("physical_state"),
                netdev=attrs.get("netdev"),
            )
        )
    if not devices:
        raise parse_error("no 'link DEV/PORT state ...' lines in rdma link output", text)
    return devices


# --- rdma statistic / show_counters ------------------------------------------------


@parser("linux", "rdma statistic", "rdma stat", "rdma statistic show", "rdma stat show")
def parse_rdma_statistic(text: str) -> list[RdmaHwCounters]:
    """Hardware counters per port, whichever way the output was printed or wrapped."""
    records: list[tuple[str, int, dict[str, int]]] = []
    seen: set[tuple[str, int]] = set()
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        if tokens[0] == "link" and len(tokens) > 1 and "/" in tokens[1]:
            device, _, port = tokens[1].partition("/")
            if (device, int(port)) in seen:
                raise parse_error(f"port {tokens[1]} twice", text, expected="each port once")
            seen.add((device, int(port)))
            records.append((device, int(port), {}))
            tokens = tokens[2:]
        if not records:
            continue  # a prompt or banner before the first port
        counters = records[-1][2]
        i = 0
        while i < len(tokens) - 1:
            if re.fullmatch(r"\d+", tokens[i + 1]) and not tokens[i].endswith(":"):
                if tokens[i] in counters:
                    raise parse_error(f"counter {tokens[i]!r} twice for one port", text)
                counters[tokens[i]] = int(tokens[i + 1])
                i += 2
            else:
                i += 1  # "Optional-set:" labels, prompt words
    records = [r for r in records if r[2]]
    if not records:
        raise parse_error("no 'link DEV/PORT name value ...' counters in rdma statistic", text)
    return [RdmaHwCounters.from_counters(dev, port, counters) for dev, port, counters in records]


_HW_COUNTER = re.compile(r"^\s*([a-z][a-z0-9_]*):\s*(\d+)\s*$")
_PORT_HEADER = re.compile(r"^\s*Port\s+(\d+)\s+hw counters:", re.MULTILINE)


@parser("linux", "show_counters")
def parse_show_counters(text: str) -> RdmaHwCounters:
    """mlnx-tools ``show_counters DEV``: the port's sysfs hw_counters as ``name: value``."""
    port = _PORT_HEADER.search(text)
    if port is None:
        raise parse_error(
            "no 'Port N hw counters:' header in show_counters output",
            text,
            expected="show_counters output",
        )
    counters: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if m := _HW_COUNTER.match(line):
            if m.group(1) in counters:
                raise parse_error(f"counter {m.group(1)!r} twice", text, line=n)
            counters[m.group(1)] = int(m.group(2))
    if not counters:
        raise parse_error("no 'name: value' hardware counters in show_counters output", text)
    return RdmaHwCounters.from_counters(None, int(port.group(1)) if port else None, counters)


_SYSFS_COUNTER = re.compile(r"^([a-z][a-z0-9_]*):(\d+)$")


def parse_sysfs_hw_counters(text: str, port: int | None = None) -> RdmaHwCounters:
    """``grep -H . *`` in a port's sysfs ``hw_counters`` folder: one ``file:value`` per line.

    The driver's fallback where ``rdma statistic`` is unsupported; unlike ``show_counters``
    there is no header, so every non-blank line must be a counter."""
    counters: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        m = _SYSFS_COUNTER.match(line.strip())
        if m is None:
            raise parse_error(f"not a 'counter:value' line: {line.strip()[:60]!r}", text, line=n,
                              expected="grep -H . output of a hw_counters folder")
        if m.group(1) in counters:
            raise parse_error(f"counter {m.group(1)!r} twice", text, line=n)
        counters[m.group(1)] = int(m.group(2))
    if not counters:
        raise parse_error("no 'counter:value' lines in the hw_counters listing", text)
    return RdmaHwCounters.from_counters(None, port, counters)


# --- GIDs: ibv_devinfo and show_gids --------------------------------------------------


def _mapped_ipv4(gid: str) -> str | None:
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped else None


_GID_ROW = re.compile(
    r"^(?P<dev>\S+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+(?P<gid>[0-9a-fA-F:]{15,})"
    r"\s+(?:(?P<ipv4>\d+\.\d+\.\d+\.\d+)\s+)?(?P<ver>v\d)(?:\s+(?P<netdev>\S+))?\s*$"
)


@parser("linux", "show_gids")
def parse_show_gids(text: str) -> list[RdmaDevice]:
    """mlnx-tools ``show_gids``: the GID table of every port, with RoCE version and netdev."""
    ports: dict[tuple[str, int], list[GidEntry]] = {}
    gids_seen: set[tuple[str, str, str]] = set()
    for line in text.splitlines():
        match = _GID_ROW.match(line.strip())
        if not match:
            continue
        gid_key = (match["dev"], match["port"], match["index"])
        if gid_key in gids_seen:
            raise parse_error(f"GID {'/'.join(gid_key)} twice", text, expected="each GID once")
        gids_seen.add(gid_key)
        ports.setdefault((match["dev"], int(match["port"])), []).append(
            GidEntry(
                index=int(match["index"]),
                gid=match["gid"],
                type=f"RoCE {match['ver']}",
                ipv4=match["ipv4"] or _mapped_ipv4(match["gid"]),
                netdev=match["netdev"],
            )
        )
    if not ports:
        raise parse_error("no 'DEV PORT INDEX GID ...' rows in show_gids output", text)
    return [
        RdmaDevice(
            name=dev, port=port, netdev=next((g.netdev for g in gids if g.netdev), None), gids=gids
        )
        for (dev, port), gids in ports.items()
    ]


_DEVINFO_PORT_FIELDS = {
    "state": re.compile(r"^\s*state:\s*(\S+)"),
    "physical_state": re.compile(r"^\s*phys_state:\s*(\S+)"),
    "link_layer": re.compile(r"^\s*link_layer:\s*(\S+)"),
    "active_mtu_bytes": re.compile(r"^\s*active_mtu:\s*(\d+)"),
    "active_speed_gbps": re.compile(r"^\s*active_speed:\s*([\d.]+)\s*Gbps"),
    "active_width": re.compile(r"^\s*active_width:\s*(\S+)"),
}
_DEVINFO_CONVERT = {"active_mtu_bytes": int, "active_speed_gbps": float}
_DEVINFO_GID = re.compile(r"^\s*GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:,\s*(.+?))?\s*$")


@parser("linux", "ibv_devinfo")
def parse_ibv_devinfo(text: str) -> list[RdmaDevice]:
    """Every port of every HCA; GIDs appear with ``ibv_devinfo -v``."""
    ports: list[dict] = []
    seen: set[tuple[str, int]] = set()
    gids_seen: set[tuple[int, int]] = set()
    hca: str | None = None
    fw: str | None = None
    for line in text.splitlines():
        if match := re.match(r"^\s*hca_id:\s*(\S+)", line):
            hca, fw = match.group(1), None
        elif match := re.match(r"^\s*fw_ver:\s*(\S+)", line):
            fw = match.group(1)
        elif (match := re.match(r"^\s*port:\s*(\d+)", line)) and hca:
            if (hca, int(match.group(1))) in seen:
                raise parse_error(f"port {hca}/{match.group(1)} twice", text)
            seen.add((hca, int(match.group(1))))
            ports.append({"name": hca, "port": int(match.group(1)), "fw_version": fw, "gids": []})
        elif ports and (match := _DEVINFO_GID.match(line)):
            if (len(ports), int(match.group(1))) in gids_seen:
                raise parse_error(f"GID[{match.group(1)}] twice on one port", text)
            gids_seen.add((len(ports), int(match.group(1))))
            gid = match.group(2)
            ports[-1]["gids"].append(
                GidEntry(int(match.group(1)), gid, match.group(3), _mapped_ipv4(gid))
            )
        elif ports:
            for key, pattern in _DEVINFO_PORT_FIELDS.items():
                if (found := pattern.match(line)) and key not in ports[-1]:
                    ports[-1][key] = _DEVINFO_CONVERT.get(key, str)(found.group(1))
    if not ports:
        raise parse_error("no 'hca_id:' with a 'port:' section in ibv_devinfo output", text)
    return [RdmaDevice(**port) for port in ports]


fingerprint(
    "linux",
    "rdma link",
    r"^\s*(?:link\s+|\d+/\d+:\s+)\S+/\d+:?\s+state\s",
    "rdma link",
    "rdma link show",
    "rdma dev link",
)
fingerprint(
    "linux",
    "rdma statistic",
    r"^\s*link\s+\S+/\d+\s+(?!state\b)[a-z_]+\s+\d+",
    "rdma statistic",
    "rdma stat",
    "rdma statistic show",
    "rdma stat show",
)
fingerprint("linux", "show_counters", r"^\s*Port\s+\d+\s+hw counters:", "show_counters")
fingerprint("linux", "show_gids", r"^\s*DEV\s+PORT\s+INDEX\s+GID", "show_gids")
fingerprint("linux", "ibv_devinfo", r"^\s*hca_id:\s*\S+", "ibv_devinfo")
