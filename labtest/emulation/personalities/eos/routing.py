"""EOS BGP and BFD documents and the interface addresses behind them, from the fabric's
routing model (``personalities/_routing.py``: the same sessions, /31s and BFD timers the
SONiC personality prints through FRR).

Keys follow the public fixtures the EOS parsers name: ``show ip bgp summary vrf all`` and
``show ip interface`` napalm's mocked EOS answers, ``show bfd peers detail`` ANTA's (its
revision 1 layout: ``peerStats`` keyed by the local interface; intervals in microseconds).
"""

from __future__ import annotations

import zlib
from typing import Any

from labtest.emulation.personalities import _routing
from labtest.emulation.personalities._clock import epoch_s
from labtest.emulation.personalities.eos.base import EosCommands


class RoutingCommands(EosCommands):
    """``show ip bgp summary vrf all``, ``show bfd peers detail``, ``show ip interface``."""

    def _sessions(self) -> list[_routing.Session]:
        return _routing.sessions(self.dev.fabric, self.state.name)

    # keys: show_ip_bgp_summary_vrf_all_json__napalm_normal
    def bgp_summary_json(self) -> dict[str, Any]:
        fabric, name = self.dev.fabric, self.state.name
        now = epoch_s(fabric)
        others = len(_routing._switches(fabric)) - 1  # each switch's loopback
        peers = {
            s.peer_ip: {
                "version": 4,
                "msgReceived": 0,
                "msgSent": 0,
                "inMsgQueue": 0,
                "outMsgQueue": 0,
                "asn": str(_routing._asn(fabric, s.peer_device)),
                "prefixAccepted": others if s.up else 0,
                "prefixReceived": others if s.up else 0,
                "upDownTime": round(now - s.uptime_s, 6),
                "underMaintenance": False,
                "peerState": "Established" if s.up else "Active",
            }
            for s in self._sessions()
        }
        if not peers:
            return {"vrfs": {}}
        return {
            "vrfs": {
                "default": {
                    "vrf": "default",
                    "routerId": _routing.router_id(fabric, name),
                    "asn": str(_routing._asn(fabric, name)),
                    "peers": peers,
                }
            }
        }

    # keys: show_bfd_peers_detail_json__anta_single_hop (revision 1; µs intervals; the
    # detection time is the peer's multiplier times the agreed interval, RFC 5880 6.8.4)
    def bfd_detail_json(self) -> dict[str, Any]:
        fabric, name = self.dev.fabric, self.state.name
        mult, interval = _routing._timers(fabric, name)
        neighbors: dict[str, Any] = {}
        for s in self._sessions():
            peer_mult, peer_interval = _routing._timers(fabric, s.peer_device)
            agreed_us = max(interval, peer_interval) * 1000
            remote = zlib.crc32(f"{s.peer_device}:{s.peer_ip}".encode())
            neighbors[s.peer_ip] = {
                "peerStats": {
                    s.port: {
                        "status": "up" if s.up else "down",
                        "remoteDisc": remote if s.up else 0,
                        "l3intf": s.port,
                        "peerStatsDetail": {
                            "operTxInterval": agreed_us,
                            "operRxInterval": agreed_us,
                            "detectMult": mult,
                            "detectTime": peer_mult * agreed_us,
                        },
                    }
                }
            }
        return {"vrfs": {"default": {"ipv4Neighbors": neighbors, "ipv6Neighbors": {}}}}

    # keys: show_ip_interface_json__napalm_normal (routed fabric ports with their /31)
    def ip_interface_json(self) -> dict[str, Any]:
        fabric, name = self.dev.fabric, self.state.name
        out: dict[str, Any] = {}
        for s in self._sessions():
            st = fabric.interface(name, s.port)
            out[s.port] = {
                "interfaceAddress": {
                    "secondaryIpsOrderedList": [],
                    "broadcastAddress": "255.255.255.255",
                    "secondaryIps": {},
                    "primaryIp": {"maskLen": 31, "address": s.local_ip},
                    "virtualIp": {"maskLen": 0, "address": "0.0.0.0"},
                },
                "name": s.port,
                "urpf": "disable",
                "interfaceStatus": "connected" if st.oper_up else "notconnect",
                "enabled": bool(st.admin_up),
                "mtu": st.mtu_bytes,
                "vrf": "default",
                "localProxyArp": False,
                "proxyArp": False,
                "lineProtocolStatus": "up" if st.oper_up else "down",
                "description": self.state.descriptions.get(s.port, ""),
            }
        return {"interfaces": out}
