"""NX-OS BGP and BFD text and the interface addresses behind them, from the fabric's
routing model (``personalities/_routing.py``: the same sessions, /31s, AS numbers and BFD
timers the SONiC and EOS personalities print).

Layouts are those of the driver's format sources (samples under
``tests/drivers/samples/nxos``): ``show ip bgp summary vrf all`` as ntc-templates'
four-VRF capture (a "BGP summary information for VRF V, address family IPv4 Unicast"
section, its header lines, the "Neighbor V AS ..." table; Up/Down ``HH:MM:SS`` below a day,
then ``3d03h``, ``10w4d``, ``2y11w``), ``show bfd neighbors details`` as genieparser's
golden outputs (a header and row per session, then its detail lines; intervals in µs),
``show ip interface vrf all`` as ntc-templates' three-VRF capture.
"""

from __future__ import annotations

import ipaddress
import zlib

from labtest.emulation.personalities import _routing
from labtest.emulation.personalities.nxos.base import NxosCommands, short_name

#: ntc-templates' four-VRF capture: "8 network entries and 8 paths using 1152 bytes"
BYTES_PER_PATH = 144
_BGP_HEADER = "Neighbor        V    AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd"
_BFD_HEADER = (
    "OurAddr         NeighAddr       LD/RD                 RH/RS           Holdown(mult)     "
    "State       Int               Vrf                       Type"
)
_DAY, _WEEK, _YEAR = 86400, 7 * 86400, 365 * 86400


def up_down(seconds: float) -> str:
    """The Up/Down cell: ``00:20:33``, ``3d03h``, ``10w4d``, ``2y11w``."""
    s = int(max(seconds, 0.0))
    if s < _DAY:
        return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    if s < _WEEK:
        return f"{s // _DAY}d{s % _DAY // 3600:02d}h"
    if s < _YEAR:
        return f"{s // _WEEK}w{s % _WEEK // _DAY}d"
    return f"{s // _YEAR}y{s % _YEAR // _WEEK}w"


def discriminator(device: str, address: str) -> int:
    """A session's local discriminator, stable per end (both ends compute the other's)."""
    return zlib.crc32(f"{device}:{address}".encode()) & 0x7FFFFFFF or 1


def _duration(seconds: float) -> str:
    s = int(max(seconds, 0.0))
    return f"{s // _DAY} days {s % _DAY // 3600} hrs {s % 3600 // 60} mins {s % 60} secs"


class RoutingCommands(NxosCommands):
    """``show ip bgp summary vrf all``, ``show bfd neighbors details``, ``show ip interface
    vrf all``."""

    def _sessions(self) -> list[_routing.Session]:
        return _routing.sessions(self.dev.fabric, self.state.name)

    def bgp_summary_text(self) -> str:
        fabric, name = self.dev.fabric, self.state.name
        sessions = self._sessions()
        if not sessions:
            return ""
        others = len(_routing._switches(fabric)) - 1  # each other switch's loopback
        up = [s for s in sessions if s.up]
        paths = 1 + others * len(up)
        rows = []
        for s in sessions:
            admin_up = fabric.interface(name, s.port).admin_up
            state = str(others) if s.up else "Active" if admin_up else "Idle"
            rows.append(
                f"{s.peer_ip:<16}4 {_routing._asn(fabric, s.peer_device):>6}"
                f"{0:>8}{0:>8}{others + 1:>9}{0:>5}{0:>5} {up_down(s.uptime_s):>8} {state}"
            )
        return "\n".join([
            "BGP summary information for VRF default, address family IPv4 Unicast",
            f"BGP router identifier {_routing.router_id(fabric, name)}, "
            f"local AS number {_routing._asn(fabric, name)}",
            f"BGP table version is {others + 1}, IPv4 Unicast config peers {len(sessions)}, "
            f"capable peers {len(up)}",
            f"{others + 1} network entries and {paths} paths using "
            f"{paths * BYTES_PER_PATH} bytes of memory",
            "",
            _BGP_HEADER,
            *rows,
            "",
        ]) + "\n"

    def bfd_details_text(self) -> str:
        """One block per fabric session; a session down keeps what the peer sent last (as
        genieparser's AdminDown capture does) and counts its Downtime."""
        fabric, name = self.dev.fabric, self.state.name
        mult, interval_ms = _routing._timers(fabric, name)
        out: list[str] = []
        for s in self._sessions():
            peer_mult, peer_ms = _routing._timers(fabric, s.peer_device)
            agreed_ms = max(interval_ms, peer_ms)
            state = "Up" if s.up else "Down"
            mine = discriminator(name, s.local_ip)
            theirs = discriminator(s.peer_device, s.peer_ip)
            hold = f"{peer_mult * agreed_ms}({peer_mult})" if s.up else f"N/A({peer_mult})"
            hellos = int(s.uptime_s * 1000 // agreed_ms) if s.up else 0
            out += [
                "",
                _BFD_HEADER,
                f"{s.local_ip:<16}{s.peer_ip:<16}{f'{mine}/{theirs if s.up else 0}':<22}"
                f"{state:<16}{hold:<18}{state:<12}{short_name(s.port):<18}{'default':<26}SH",
                "",
                f"Session state is {state} and not using echo function",
                "",
                "Session type: Singlehop",
                f"Local Diag: {0 if s.up else 1}, Demand mode: 0, Poll bit: 0, "
                "Authentication: None",
                f"MinTxInt: {interval_ms * 1000} us, MinRxInt: {interval_ms * 1000} us, "
                f"Multiplier: {mult}",
                f"Received MinRxInt: {peer_ms * 1000} us, Received Multiplier: {peer_mult}",
                f"Holdown (hits): {peer_mult * agreed_ms} ms (0), "
                f"Hello (hits): {agreed_ms} ms ({hellos})",
                "Registered protocols:  bgp",
                f"{'Uptime' if s.up else 'Downtime'}: {_duration(s.uptime_s)}",
                f"Last packet: Version: 1                - Diagnostic: {0 if s.up else 1}",
                f"             State bit: {state:<15}- Demand bit: 0",
                "             Poll bit: 0               - Final bit: 0",
                f"             Multiplier: {peer_mult:<14}- Length: 24",
                f"             My Discr.: {theirs:<15}- Your Discr.: {mine}",
                f"             Min tx interval: {peer_ms * 1000:<9}"
                f"- Min rx interval: {peer_ms * 1000}",
                "             Min Echo interval: 0      - Authentication bit: 0",
                "             C bit : 1",
                "Hosting LC: 1, Down reason: "
                f"{'None' if s.up else 'Control Detection Time Expired'}, "
                "Reason not-hosted: None, Offloaded: No",
                "",
            ]
        return "\n".join(out) + "\n"

    def ip_interface_text(self) -> str:
        """VRF default: the loopback (router-id /32), then each fabric port and its /31."""
        fabric, name = self.dev.fabric, self.state.name
        rid = _routing.router_id(fabric, name)
        out = ['IP Interface Status for VRF "default"(1)']
        out += _ip_block("loopback0", "protocol-up/link-up/admin-up", 1, rid, rid, 32, 1500)
        for iod, s in enumerate(self._sessions(), start=2):
            st = fabric.interface(name, s.port)
            status = "/".join([
                "protocol-up" if st.oper_up else "protocol-down",
                "link-up" if st.oper_up else "link-down",
                "admin-up" if st.admin_up else "admin-down",
            ])
            subnet = ipaddress.IPv4Interface(f"{s.local_ip}/31").network.network_address
            out += _ip_block(s.port, status, iod, s.local_ip, str(subnet), 31, st.mtu_bytes)
        return "\n".join([*out, ""]) + "\n"


def _ip_block(port: str, status: str, iod: int, address: str, subnet: str, length: int,
              mtu: int) -> list[str]:
    return [
        f"{port}, Interface status: {status}, iod: {iod},",
        f"  IP address: {address}, IP subnet: {subnet}/{length}",
        "  IP broadcast address: 255.255.255.255",
        f"  IP MTU: {mtu} bytes (using link MTU)",
        "  IP primary address route-preference: 0, tag: 0",
        "  IP proxy ARP : disabled",
        "  IP unicast reverse path forwarding: none",
    ]
