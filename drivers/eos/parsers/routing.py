"""EOS BGP and BFD sessions, and the interface addresses that place a peer on a port (JSON).

Sources (facts only: keys, nesting, units):

- ``show ip bgp summary vrf all | json``: github.com/napalm-automation/napalm
  ``test/eos/mocked_data/test_get_bgp_neighbors/{normal,issue1759,nopeers,nobgp}/
  show_ip_bgp_summary_vrf_all.json`` (@ee70e634): ``vrfs.<vrf>.peers.<address>`` with
  ``peerState``, ``prefixReceived``, ``asn`` (a string, asdot ``"65001.1028"`` for 4-byte
  ASNs), ``upDownTime`` (epoch seconds of the last state change); an IPv6 link-local peer
  carries its interface after ``%`` (``fe80::...%Et3``); ``{"vrfs": {}}`` without BGP.
- ``show ip interface | json``: the same repository, ``test/eos/mocked_data/
  test_get_interfaces_ip/normal/show_ip_interface.json``: ``interfaces.<port>.
  interfaceAddress.primaryIp.{address,maskLen}`` and ``secondaryIpsOrderedList``.
- ``show bfd peers detail | json``: github.com/aristanetworks/anta ``tests/units/
  anta_tests/test_bfd.py`` (@68667e0e): ``vrfs.<vrf>.ipv4Neighbors.<peer>.peerStats.
  <interface or "">`` with ``status``, ``l3intf`` and ``peerStatsDetail.{operTxInterval,
  operRxInterval, detectMult, detectTime}`` in microseconds (ANTA divides by 1000 for
  ms). ANTA asks for revision 1; a newer revision nests ``peers.<interface>.types.<type>.
  peerStats.<source>`` (ANTA's older fixtures): both are read.

Reading rules: a BGP peer's local port is the interface after ``%`` where the key has
one, else the driver's (the port whose connected subnet holds the peer, from ``show ip
interface``). A BFD session's local port is its ``peerStats`` key or ``l3intf``; its
detection time is EOS's own ``detectTime``.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from labtest.capabilities.routing import BfdSession, BgpSession
from labtest.drivers.eos.parsers._common import (
    DRIVER,
    _eos,
    _int,
    _looks_like,
    _num,
    _object,
    _require_json,
    _str,
    long_name,
)
from labtest.parsing import Garbled as _Garbled
from labtest.parsing import checked

# --- BGP ---------------------------------------------------------------------------------


def _asn(value: Any, where: str) -> int | None:
    """``"65002"``, ``"65001.1028"`` (asdot: high.low) or a number."""
    if value is None:
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str):
        raise _Garbled(f"{where}: asn {value!r}", expected="an AS number")
    high, dot, low = text.partition(".")
    if not high.isdigit() or (dot and not low.isdigit()):
        raise _Garbled(f"{where}: asn {value!r}", expected="an AS number (asplain or asdot)")
    return int(high) * 65536 + int(low) if dot else int(high)


def _peer_port(key: str) -> str | None:
    """``fe80::1%Et3`` -> ``Ethernet3``: the interface of a link-local peer."""
    _, sep, intf = key.partition("%")
    return long_name(intf) if sep and intf else None


_BGP = "show ip bgp summary vrf all"
_BFD = "show bfd peers detail"


@_eos("show ip bgp summary vrf all", "show ip bgp summary")
def parse_bgp_summary(text: str) -> dict[str, BgpSession]:
    """IPv4 unicast BGP peers of every VRF, keyed by address (``ADDRESS vrf NAME`` outside
    the default VRF). Uptime is left to the driver (EOS prints the epoch of the last state
    change, ``upDownTime``, not a duration)."""
    doc = _require_json(text, "show ip bgp summary vrf all", "vrfs")
    out: dict[str, BgpSession] = {}
    for vrf, body in doc["vrfs"].items():
        entry = _object(body, f"vrfs.{vrf}")
        peers = entry.get("peers")
        if not isinstance(peers, dict) or _looks_like(doc) not in (_BGP, "another command"):
            raise _Garbled(f"vrfs.{vrf}: no BGP 'peers' object ({_looks_like(doc)} | json?)",
                           expected="vrfs.<vrf>.peers.<address>.peerState")
        for key, raw in peers.items():
            where = f"{vrf} peer {key}"
            peer = _object(raw, where)
            state = _str(peer.get("peerState"))
            if state is None:
                raise _Garbled(f"{where}: no peerState", expected="a 'peerState' string")
            address = key.partition("%")[0]
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise _Garbled(f"{where}: not an address", expected="a peer address") from None
            received = _int(peer.get("prefixReceived"))
            if received is not None and received < 0:
                raise _Garbled(f"{where}: prefixReceived {received}", expected=">= 0")
            name = key if vrf == "default" else f"{key} vrf {vrf}"
            out[name] = BgpSession(
                peer_address=address,
                local_port=_peer_port(key),
                state=state,
                uptime_s=None,
                prefixes_received=received,
                remote_as=_asn(peer.get("asn"), where),
            )
    return out


@checked(DRIVER, "show ip bgp summary vrf all", register=False)
def bgp_state_changed_at(text: str) -> dict[str, float]:
    """Peer key (as :func:`parse_bgp_summary` names it) -> ``upDownTime`` (epoch seconds)."""
    doc = _require_json(text, "show ip bgp summary vrf all", "vrfs")
    out: dict[str, float] = {}
    for vrf, body in doc["vrfs"].items():
        for key, peer in (_object(body, vrf).get("peers") or {}).items():
            at = _num(_object(peer, key).get("upDownTime"))
            if at is not None:
                out[key if vrf == "default" else f"{key} vrf {vrf}"] = at
    return out


@_eos("show ip interface")
def parse_ip_interfaces(text: str) -> dict[str, list[str]]:
    """Port -> its IPv4 interface addresses (``a.b.c.d/len``), primary first; a port with
    no address (``0.0.0.0/0``) is left out."""
    doc = _require_json(text, "show ip interface", "interfaces")
    out: dict[str, list[str]] = {}
    for port, raw in doc["interfaces"].items():
        entry = _object(raw, port)
        addr = entry.get("interfaceAddress")
        if not isinstance(addr, dict):
            raise _Garbled(
                f"interfaces.{port} has no interfaceAddress: not 'show ip interface | json'",
                expected="interfaces.<port>.interfaceAddress",
            )
        found = []
        rows = [addr.get("primaryIp"), *(addr.get("secondaryIpsOrderedList") or [])]
        for row in rows:
            ip = _object(row, f"{port} address")
            ip_text, mask = _str(ip.get("address")), _int(ip.get("maskLen"))
            if ip_text is None or mask is None:
                raise _Garbled(f"{port}: address without address/maskLen",
                               expected="address and maskLen")
            try:
                iface = ipaddress.IPv4Interface(f"{ip_text}/{mask}")
            except ValueError:
                raise _Garbled(f"{port}: address {ip_text}/{mask}",
                               expected="an IPv4 address and mask length") from None
            if mask:
                found.append(str(iface))
        if found:
            out[port] = found
    return out




# --- BFD ---------------------------------------------------------------------------------


def _ms(value: Any, where: str) -> int | None:
    """EOS's microseconds as milliseconds (a whole number when EOS's value is)."""
    us = _int(value)
    if us is None:
        return None
    if us < 0:
        raise _Garbled(f"{where}: interval {us}", expected="microseconds >= 0")
    return us // 1000 if us % 1000 == 0 else round(us / 1000)


def _stats(peer: dict[str, Any], where: str) -> list[tuple[str, dict[str, Any]]]:
    """(interface key, session entry) of a peer, in either revision's nesting."""
    if "peerStats" in peer:
        stats = _object(peer["peerStats"], where)
        return [(k, _object(v, f"{where} {k!r}")) for k, v in stats.items()]
    if "peers" in peer:
        out = []
        for intf, raw in _object(peer["peers"], where).items():
            for kind, typed in _object(_object(raw, where).get("types"), where).items():
                stats = _object(_object(typed, f"{where} {kind}").get("peerStats"), kind)
                out += [(intf, _object(v, f"{where} {kind}")) for v in stats.values()]
        return out
    raise _Garbled(f"{where}: no peerStats", expected="<peer>.peerStats")


@_eos("show bfd peers detail", "show bfd peers")
def parse_bfd_peers(text: str) -> dict[str, BfdSession]:
    """BFD sessions of every VRF keyed by peer address (``ADDRESS vrf NAME`` outside the
    default VRF; ``ADDRESS%PORT`` for a second session to the same address): status,
    multiplier, operational Rx/Tx intervals and EOS's detection time, in ms."""
    doc = _require_json(text, "show bfd peers detail", "vrfs")
    out: dict[str, BfdSession] = {}
    for vrf, body in doc["vrfs"].items():
        entry = _object(body, f"vrfs.{vrf}")
        families = [entry[k] for k in ("ipv4Neighbors", "ipv6Neighbors") if k in entry]
        if not families or _looks_like(doc) not in (_BFD, "another command"):
            raise _Garbled(f"vrfs.{vrf}: no BFD neighbors ({_looks_like(doc)} | json?)",
                           expected="vrfs.<vrf>.ipv4Neighbors")
        for family in families:
            for peer, raw in _object(family, vrf).items():
                where = f"{vrf} peer {peer}"
                try:
                    ipaddress.ip_address(peer)
                except ValueError:
                    raise _Garbled(f"{where}: not an address", expected="a peer address") from None
                for intf, s in _stats(_object(raw, where), where):
                    status = _str(s.get("status"))
                    if status is None:
                        raise _Garbled(f"{where}: no status", expected="a 'status' string")
                    detail = _object(s.get("peerStatsDetail"), where)
                    port = _str(intf) or _str(s.get("l3intf"))
                    name = peer if vrf == "default" else f"{peer} vrf {vrf}"
                    if name in out:
                        name = f"{name}%{port}"
                    detect = _ms(detail.get("detectTime"), where)
                    out[name] = BfdSession(
                        peer_address=peer,
                        local_port=long_name(port) if port else None,
                        status=status.lower() if status != "adminDown" else status,
                        detect_multiplier=_int(detail.get("detectMult")),
                        receive_interval_ms=_ms(detail.get("operRxInterval"), where),
                        transmit_interval_ms=_ms(detail.get("operTxInterval"), where),
                        reported_detection_time_ms=None if detect is None else float(detect),
                    )
    return out
