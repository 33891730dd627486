"""The fabric's eBGP and BFD sessions, as FRR prints them (SONiC's routing is FRR).

The model runs no routing protocol: a session over a switch-to-switch link is
Established/Up while both ends are oper up and the cable reaches the planned peer
(a miswired cable joins two different /31 subnets: no session). Addresses are a
``/31`` per fabric link from 198.18.0.0/15 (RFC 2544, never routed) and one
private AS per switch, as the kernel lab plans them. BFD timers are each switch's
``vars`` (``bfd_interval_ms``, ``bfd_multiplier``: the traffic model's, so the
detection time it uses to reroute is the one the switch reports).

Formats: ``show bgp summary json`` and ``show bfd peers json`` of FRR 8.4,
``ip -j -4 addr show`` of iproute2 6.1 (captures in tests/kernel/samples).
"""

from __future__ import annotations

import ipaddress
import json
import zlib
from dataclasses import dataclass
from typing import Any

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.traffic.topology import ENDPOINT_ROLES, TrafficSettings
from labtest.emulation.personalities._clock import epoch_s

BASE = ipaddress.IPv4Address("198.18.0.0")
LOOPBACKS = ipaddress.IPv4Address("198.19.255.0")
FIRST_ASN = 65101
FOREVER = 4294967295
#: FRR 8.4's memory per RIB entry and per peer, as its summary prints them (capture:
#: tests/kernel/samples/bgp_summary.json, 15 entries in 2880 bytes, 2 peers in 1482928)
RIB_ENTRY_BYTES = 192
PEER_BYTES = 741464


@dataclass(frozen=True)
class Session:
    port: str
    local_ip: str
    peer_ip: str
    peer_device: str
    up: bool
    uptime_s: float


def _switches(fabric: Fabric) -> list[str]:
    tb = fabric.testbed
    cabled = {e.device for lk in tb.links for e in lk.ends}
    return [n for n, d in tb.devices.items() if n in cabled and d.role not in ENDPOINT_ROLES]


def _asn(fabric: Fabric, device: str) -> int:
    return FIRST_ASN + _switches(fabric).index(device)


def router_id(fabric: Fabric, device: str) -> str:
    """A switch's loopback, its BGP router-id (what answers a probe from no interface address)."""
    return str(LOOPBACKS + 1 + _switches(fabric).index(device))


def sessions(fabric: Fabric, device: str) -> list[Session]:
    """One session per fabric link of ``device``, in cabling order."""
    switches = set(_switches(fabric))
    now = fabric.now_s()
    out = []
    k = 0
    for lk in fabric.testbed.links:
        a, b = lk.ends
        if a.device not in switches or b.device not in switches:
            continue
        ips = (str(BASE + 2 * k), str(BASE + 2 * k + 1))
        k += 1
        for me, peer, mine, theirs in ((a, b, ips[0], ips[1]), (b, a, ips[1], ips[0])):
            if me.device != device:
                continue
            wired = fabric.physical_peer(me.device, me.port) == peer
            up = wired and fabric.link_up(lk.name)
            changes = fabric.link_transitions(lk.name, 0.0, now)
            since = changes[-1][0] if changes else 0.0
            out.append(Session(me.port, mine, theirs, peer.device, up, max(now - since, 0.0)))
    return out


def _timers(fabric: Fabric, device: str) -> tuple[int, int]:
    s = TrafficSettings.model_validate(dict(fabric.testbed.devices[device].vars or {}))
    return s.bfd_multiplier, round(s.bfd_interval_ms)


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def bgp_summary_json(fabric: Fabric, device: str) -> str:
    mine = sessions(fabric, device)
    others = len(_switches(fabric)) - 1  # each switch's loopback, learnt over every path
    peers: dict[str, Any] = {}
    for s in mine:
        peers[s.peer_ip] = {
            "hostname": s.peer_device,
            "remoteAs": _asn(fabric, s.peer_device),
            "localAs": _asn(fabric, device),
            "version": 4,
            "msgRcvd": 0,
            "msgSent": 0,
            "tableVersion": 0,
            "outq": 0,
            "inq": 0,
            "peerUptime": _hms(s.uptime_s) if s.up else "never",
            "peerUptimeMsec": round(s.uptime_s * 1000) if s.up else 0,
            "peerUptimeEstablishedEpoch": round(epoch_s(fabric) - s.uptime_s) if s.up else 0,
            "pfxRcd": others if s.up else 0,
            "pfxSnt": others if s.up else 0,
            "state": "Established" if s.up else "Active",
            "peerState": "OK",
            "connectionsEstablished": 1,
            "connectionsDropped": 0,
            "idType": "ipv4",
        }
    if not peers:
        return "{\n}"
    summary = {
        "ipv4Unicast": {
            "routerId": router_id(fabric, device),
            "as": _asn(fabric, device),
            "vrfId": 0,
            "vrfName": "default",
            "tableVersion": others + 1,
            "ribCount": others + 1,
            "ribMemory": (others + 1) * RIB_ENTRY_BYTES,
            "peerCount": len(peers),
            "peerMemory": len(peers) * PEER_BYTES,
            "peers": peers,
            "failedPeers": sum(1 for s in mine if not s.up),
            "displayedPeers": len(peers),
            "totalPeers": len(peers),
            "dynamicPeers": 0,
            "bestPath": {"multiPathRelax": "true"},
        }
    }
    return json.dumps(summary, indent=2)


def bfd_peers_json(fabric: Fabric, device: str) -> str:
    mult, interval = _timers(fabric, device)
    rows = []
    for s in sessions(fabric, device):
        peer_mult, peer_interval = _timers(fabric, s.peer_device)
        row: dict[str, Any] = {
            "multihop": False,
            "peer": s.peer_ip,
            "local": s.local_ip,
            "vrf": "default",
            "interface": s.port,
            "id": zlib.crc32(f"{device}:{s.port}".encode()),
            "remote-id": zlib.crc32(f"{s.peer_device}:{s.peer_ip}".encode()) if s.up else 0,
            "passive-mode": False,
            "status": "up" if s.up else "down",
            "diagnostic": "ok" if s.up else "control detection time expired",
            "remote-diagnostic": "ok",
            "receive-interval": interval,
            "transmit-interval": interval,
            "echo-receive-interval": 50,
            "echo-transmit-interval": 0,
            "detect-multiplier": mult,
        }
        row["uptime" if s.up else "downtime"] = int(s.uptime_s)
        row.update({  # what the peer sent last (while down: before it went down)
            "remote-receive-interval": peer_interval,
            "remote-transmit-interval": peer_interval,
            "remote-echo-receive-interval": 50,
            "remote-detect-multiplier": peer_mult,
            "rtt-min": 0,
            "rtt-avg": 0,
            "rtt-max": 0,
        })
        rows.append(row)
    return json.dumps(rows, indent=2)


def ip_addr_json(fabric: Fabric, device: str) -> str:
    """``ip -j -4 addr show``: lo, then each fabric port with its /31."""
    rows: list[dict[str, Any]] = [_addr_row(1, "lo", "127.0.0.1", 8, "host", True, 65536)]
    rows[0]["addr_info"].append(_info(router_id(fabric, device), 32, "global", "lo"))
    for i, s in enumerate(sessions(fabric, device), start=2):
        up = fabric.interface(device, s.port).oper_up
        rows.append(_addr_row(i, s.port, s.local_ip, 31, "global", bool(up), 9100))
    return json.dumps(rows)


def _info(ip: str, plen: int, scope: str, label: str) -> dict[str, Any]:
    return {"family": "inet", "local": ip, "prefixlen": plen, "scope": scope, "label": label,
            "valid_life_time": FOREVER, "preferred_life_time": FOREVER}


def _addr_row(index: int, name: str, ip: str, plen: int, scope: str, up: bool, mtu: int
              ) -> dict[str, Any]:
    loop = name == "lo"
    flags = ["LOOPBACK", "UP", "LOWER_UP"] if loop else (
        ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"] if up else ["BROADCAST", "MULTICAST", "UP"])
    return {"ifindex": index, "ifname": name, "flags": flags, "mtu": mtu,
            "qdisc": "noqueue" if loop else "mq",
            "operstate": "UNKNOWN" if loop else ("UP" if up else "DOWN"),
            "group": "default", "txqlen": 1000, "addr_info": [_info(ip, plen, scope, name)]}


VTYSH = {"show bgp summary json": bgp_summary_json, "show bfd peers json": bfd_peers_json}


def routing_command(fabric: Fabric, device: str, words: list[str]) -> tuple[str, str, int]:
    """``vtysh -c 'CMD'`` (the two JSON shows) and ``ip -j -4 addr show``: (out, err, status)."""
    if words[0] == "vtysh":
        if len(words) != 3 or words[1] != "-c":
            return "", "vtysh: this lab answers only: vtysh -c 'COMMAND'\n", 1
        show = VTYSH.get(" ".join(words[2].split()))
        if show is None:
            return f"% Unknown command: {words[2]}\n", "", 1
        return show(fabric, device) + "\n", "", 0
    if words[1:] in (["-j", "-4", "addr", "show"], ["-j", "-4", "address", "show"]):
        return ip_addr_json(fabric, device) + "\n", "", 0
    return "", f'Object "{" ".join(words[1:])}" is unknown, try "ip help".\n', 255
