"""Parsers of the Linux + FRR switch: iproute2 JSON, lldpcli JSON, vtysh JSON and text.

Every parser raises ParseError on input it cannot read; none returns a number it
did not read. Registered for ``labtest parse frr COMMAND FILE``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from labtest.capabilities.routing import BfdSession, BgpSession
from labtest.capabilities.switch import Facts, InterfaceCounters, InterfaceStatus, LldpNeighbor
from labtest.drivers.common.lldp import newest_per_port
from labtest.drivers.common.subnets import port_of
from labtest.errors import ParseError
from labtest.parsing import parser

DRIVER = "frr"
PARSE_DEVICE = "<parse>"
SPEED_MARK = "--- speed"  # separates ``ip -j -d link`` from the sysfs speeds in one answer

F = TypeVar("F", bound=Callable[..., Any])


def _frr(*commands: str) -> Callable[[F], F]:
    """Register a parser for ``commands`` with the ParseError contract."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(text: str, *args: Any, device: str = PARSE_DEVICE, **kwargs: Any) -> Any:
            try:
                return fn(text, *args, **kwargs)
            except ParseError:
                raise
            except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                raise ParseError(
                    device, f"{commands[0]}: {exc}", raw=text, command=commands[0]
                ) from exc

        parser(DRIVER, *commands)(wrapper)
        return wrapper  # type: ignore[return-value]

    return decorate


def _json(text: str, kind: type) -> Any:
    data = json.loads(text)
    if not isinstance(data, kind):
        raise ValueError(f"expected a JSON {kind.__name__}, got {type(data).__name__}")
    return data


# --- records the Interfaces/Lldp capabilities do not cover ----------------------------------


@dataclass(frozen=True)
class BgpPeer:
    peer: str
    remote_as: int | None
    state: str  # "Established", "Active", "Idle", ...
    uptime_ms: int | None
    prefixes_received: int | None
    hostname: str | None = None
    #: FRR's ``"idType": "interface"``: an unnumbered peer, keyed by its local interface
    interface_peer: bool = False


@dataclass(frozen=True)
class BfdPeer:
    peer: str
    status: str  # "up", "down", "init"
    interface: str | None
    detect_multiplier: int | None
    receive_interval_ms: int | None
    transmit_interval_ms: int | None
    uptime_s: int | None = None
    downtime_s: int | None = None
    remote_detect_multiplier: int | None = None
    remote_transmit_interval_ms: int | None = None


# --- facts -------------------------------------------------------------------------------

_VERSION = re.compile(r"^FRRouting (?P<ver>\S+) \((?P<host>[^)]*)\)", re.MULTILINE)


@_frr("vtysh -c 'show version'", "show version")
def parse_version(text: str) -> Facts:
    """``show version``; a ``hostname X`` line after it (from the running-config) is FRR's
    configured name, which wins over the kernel's host name in the banner."""
    m = _VERSION.search(text)
    configured = re.search(r"^hostname (\S+)$", text, re.MULTILINE)
    if m is None:
        raise ValueError("no 'FRRouting VERSION (HOST)' line")
    return Facts(
        vendor="FRRouting",
        model="Linux+FRR",
        os_version=m["ver"],
        serial=None,
        hostname=configured[1] if configured else m["host"] or None,
    )


# --- interfaces --------------------------------------------------------------------------


def _links(text: str) -> list[dict[str, Any]]:
    rows = _json(text, list)
    for row in rows:
        if not isinstance(row, dict) or "ifname" not in row:
            raise ValueError("a link without 'ifname'")
    return [r for r in rows if r.get("link_type") != "loopback"]


@_frr("ip -j -d link show")
def parse_links(text: str) -> dict[str, InterfaceStatus]:
    """``ip -j -d link show``, optionally followed by ``--- speed`` and ``grep -H`` of the
    ``/sys/class/net/*/speed`` files (Mb/s; absent or -1 when the link is down)."""
    body, _, speeds_text = text.partition(SPEED_MARK)
    speeds: dict[str, float] = {}
    for line in speeds_text.splitlines():
        m = re.match(r"^/sys/class/net/([^/]+)/speed:(-?\d+)$", line.strip())
        if m and int(m[2]) > 0:
            speeds[m[1]] = int(m[2]) / 1000
    out = {}
    for row in _links(body):
        flags = row.get("flags") or []
        name = row["ifname"]
        out[name] = InterfaceStatus(
            name=name,
            admin_up="UP" in flags,
            oper_up=row.get("operstate") == "UP",
            speed_gbps=speeds.get(name),
            mtu_bytes=row.get("mtu"),
            fec=None,  # a Linux netdev (veth) has no FEC
            type=(row.get("linkinfo") or {}).get("info_kind"),
            alias=row.get("ifalias"),
            state=row.get("operstate"),
        )
    return out


@_frr("ip -s -s -j link show", "ip -s -j link show")
def parse_link_stats(text: str) -> dict[str, InterfaceCounters]:
    """The kernel's counters; ``carrier_changes`` (every carrier up/down, printed with the
    second ``-s``) is the port's oper-status change count."""
    out = {}
    for row in _links(text):
        stats = row.get("stats64") or row.get("stats")
        if not isinstance(stats, dict) or "rx" not in stats or "tx" not in stats:
            raise ValueError(f"{row['ifname']}: no stats64 (was -s given?)")
        rx, tx = stats["rx"], stats["tx"]
        out[row["ifname"]] = InterfaceCounters(
            rx_packets=int(rx["packets"]),
            rx_octets=int(rx["bytes"]),
            rx_errors=int(rx["errors"]),
            rx_discards=int(rx["dropped"]),
            rx_overruns=int(rx["over_errors"]) if "over_errors" in rx else None,
            rx_multicast_packets=int(rx["multicast"]) if "multicast" in rx else None,
            tx_packets=int(tx["packets"]),
            tx_octets=int(tx["bytes"]),
            tx_errors=int(tx["errors"]),
            tx_discards=int(tx["dropped"]),
            link_status_changes=int(tx["carrier_changes"]) if "carrier_changes" in tx else None,
        )
    return out


# --- LLDP --------------------------------------------------------------------------------

_AGE = re.compile(r"^(?P<d>\d+) days?, (?P<h>\d+):(?P<m>\d+):(?P<s>\d+)$")


def _age_s(text: str | None) -> int | None:
    m = _AGE.match((text or "").strip())
    return (
        None
        if m is None
        else ((int(m["d"]) * 24 + int(m["h"])) * 60 + int(m["m"])) * 60 + int(m["s"])
    )


@_frr("lldpcli -f json show neighbors", "lldpcli show neighbors -f json")
def parse_lldp_neighbors(text: str) -> dict[str, LldpNeighbor]:
    """lldpd's JSON: ``lldp.interface`` is one object per port, or a list of them when a
    port or the table has several rows; the newest row (smallest age) is judged."""
    data = _json(text, dict)
    lldp = data.get("lldp")
    if lldp is None:
        raise ValueError("no 'lldp' object")
    iface = (lldp or {}).get("interface") or [] if isinstance(lldp, dict) else []
    items = iface if isinstance(iface, list) else [{k: v} for k, v in iface.items()]
    rows = []
    for item in items:
        for port, info in item.items():
            chassis = info.get("chassis") or {}
            if len(chassis) != 1:
                raise ValueError(f"{port}: expected one chassis, got {len(chassis)}")
            system, cinfo = next(iter(chassis.items()))
            pinfo = info.get("port") or {}
            pid = (pinfo.get("id") or {}).get("value")
            mgmt = cinfo.get("mgmt-ip")
            caps = cinfo.get("capability")
            cap_list = caps if isinstance(caps, list) else [caps] if caps else []
            neighbour = LldpNeighbor(
                remote_system=system,
                remote_port=pid,
                remote_port_description=pinfo.get("descr"),
                remote_chassis_id=(cinfo.get("id") or {}).get("value"),
                capabilities=",".join(c["type"] for c in cap_list if c.get("enabled")) or None,
                ttl_s=int(pinfo["ttl"]) if "ttl" in pinfo else None,
                remote_mgmt_address=mgmt[0] if isinstance(mgmt, list) else mgmt,
            )
            age = _age_s(info.get("age"))
            rows.append((port, neighbour, None if age is None else -age))
    return newest_per_port(rows)


# --- BGP and BFD -------------------------------------------------------------------------


@_frr("vtysh -c 'show bgp summary json'", "show bgp summary json")
def parse_bgp_summary(text: str) -> dict[str, BgpPeer]:
    data = _json(text, dict)
    if not data:
        return {}  # no BGP instance: no peers (FRR prints {})
    af = data.get("ipv4Unicast")
    if af is None:
        raise ValueError("no 'ipv4Unicast' section")
    out = {}
    for ip, p in (af.get("peers") or {}).items():
        out[ip] = BgpPeer(
            peer=ip,
            remote_as=p.get("remoteAs"),
            state=str(p["state"]),
            uptime_ms=p.get("peerUptimeMsec"),
            prefixes_received=p.get("pfxRcd"),
            hostname=p.get("hostname"),
            interface_peer=p.get("idType") == "interface",
        )
    return out


@_frr("vtysh -c 'show bfd peers json'", "show bfd peers json")
def parse_bfd_peers(text: str) -> dict[str, BfdPeer]:
    out = {}
    for p in _json(text, list):
        peer = str(p["peer"])
        out[peer] = BfdPeer(
            peer=peer,
            status=str(p["status"]),
            interface=p.get("interface"),
            detect_multiplier=p.get("detect-multiplier"),
            receive_interval_ms=p.get("receive-interval"),
            transmit_interval_ms=p.get("transmit-interval"),
            uptime_s=p.get("uptime"),
            downtime_s=p.get("downtime"),
            remote_detect_multiplier=p.get("remote-detect-multiplier"),
            remote_transmit_interval_ms=p.get("remote-transmit-interval"),
        )
    return out


# --- sessions per local port (the Routing capabilities) ----------------------------------

#: separates a vtysh JSON answer from ``ip -j -4 addr show`` in one parser input
ADDRESSES_MARK = "--- ip -j -4 addr show"


def _subnets(text: str) -> dict[str, list[ipaddress.IPv4Interface]]:
    """``ip -j -4 addr show``: port -> its IPv4 interface addresses."""
    out: dict[str, list[ipaddress.IPv4Interface]] = {}
    for row in _json(text, list):
        name = str(row["ifname"])
        for a in row.get("addr_info") or []:
            if a.get("family") == "inet":
                out.setdefault(name, []).append(
                    ipaddress.IPv4Interface(f"{a['local']}/{a['prefixlen']}")
                )
    return out


def _port_of(
    peer: str, subnets: dict[str, list[ipaddress.IPv4Interface]], interface_peer: bool = False
) -> str | None:
    """The port whose connected subnet holds ``peer``. An unnumbered peer (``neighbor
    Ethernet0 interface``) is keyed by its interface, which FRR says (``idType``); any other
    key that is no address (a peer-group, a hostname) names no port: ``None``, never a guess."""
    return peer if interface_peer else port_of(peer, subnets)


def _split(text: str) -> tuple[str, dict[str, list[ipaddress.IPv4Interface]]]:
    body, mark, addrs = text.partition(ADDRESSES_MARK)
    if not mark:
        raise ValueError(f"no '{ADDRESSES_MARK}' section (the ports' addresses)")
    return body, _subnets(addrs)


@_frr("show bgp summary json + ip -j -4 addr show")
def parse_bgp_sessions(text: str) -> dict[str, BgpSession]:
    """``show bgp summary json``, then ``ADDRESSES_MARK`` and ``ip -j -4 addr show``, which
    tells each peer's local port."""
    body, subnets = _split(text)
    out = {}
    for ip, peer in parse_bgp_summary(body).items():
        out[ip] = BgpSession(
            peer_address=ip,
            local_port=_port_of(ip, subnets, peer.interface_peer),
            state=peer.state,
            uptime_s=None if peer.uptime_ms is None else peer.uptime_ms / 1000.0,
            prefixes_received=peer.prefixes_received,
            remote_as=peer.remote_as,
            peer_hostname=peer.hostname,
        )
    return out


@_frr("show bfd peers json + ip -j -4 addr show")
def parse_bfd_sessions(text: str) -> dict[str, BfdSession]:
    """``show bfd peers json`` (its ``interface`` where given, else the port from the
    addresses), then ``ADDRESSES_MARK`` and ``ip -j -4 addr show``."""
    body, subnets = _split(text)
    return {
        peer: BfdSession(
            peer_address=peer,
            local_port=p.interface or _port_of(peer, subnets),
            status=p.status.lower(),
            detect_multiplier=p.detect_multiplier,
            receive_interval_ms=p.receive_interval_ms,
            transmit_interval_ms=p.transmit_interval_ms,
            remote_detect_multiplier=p.remote_detect_multiplier,
            remote_transmit_interval_ms=p.remote_transmit_interval_ms,
        )
        for peer, p in parse_bfd_peers(body).items()
    }


# --- running-config: what restoring a snapshot must undo ----------------------------------


def config_blocks(text: str) -> dict[str, list[str]]:
    """A running-config as ``{context: [lines]}``; top-level lines sit under ``""``.

    A context is a top-level line that is followed by indented lines (``interface X``,
    ``router bgp N``); nested blocks keep their indentation, so a line is compared
    within its context.
    """
    blocks: dict[str, list[str]] = {"": []}
    context = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if (
            not line
            or line.startswith("!")
            or line in ("end", "exit")
            or line.startswith(
                ("Building configuration", "Current configuration", "frr version", "frr defaults")
            )
        ):
            if line == "exit":
                context = ""
            continue
        if line[0] != " ":
            context = line
            blocks.setdefault(context, [])
            continue
        blocks.setdefault(context, []).append(line)
    return blocks


def undo_commands(saved: str, current: str) -> list[str]:
    """vtysh configuration lines that remove what ``current`` has and ``saved`` lacks
    (re-applying ``saved`` afterwards puts back what was removed)."""
    before, now = config_blocks(saved), config_blocks(current)
    out: list[str] = []
    for context, lines in now.items():
        if context and context not in before and not context.startswith("interface "):
            out.append(f"no {context}")  # an interface is the kernel's: only its settings go
            continue
        old = set(before.get(context, []))
        # only a block's own lines are negated; a nested setting (a BFD profile's timer)
        # is overwritten when ``saved`` is applied again
        extra = [
            ln.strip()
            for ln in lines
            if ln not in old
            and not ln.startswith("  ")
            and not ln.strip().startswith(("exit", "!"))
        ]
        if not extra:
            continue
        if context:
            out.append(context)
        out += [f"no {ln}" if not ln.startswith("no ") else ln[3:] for ln in extra]
        if context:
            out.append("exit")
    return out
