"""The Routing capabilities: BGP and BFD sessions as a switch reports them.

A fabric link that is up but passes no packets (a silent drop) is invisible to
link state and LLDP (a switch's CPU may still hear its neighbour), but its BGP
and BFD sessions go down. And how fast a silent failure is noticed is set by the
BFD timers. Sessions are keyed by the peer's address and carry the local port
they run over, so a suite can judge them per cabled link.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class BgpSession:
    peer_address: str
    local_port: str | None  # the port whose subnet holds the peer; None: none does
    state: str  # RFC 4271 state as printed: "Established", "Active", "Idle", ...
    uptime_s: float | None
    prefixes_received: int | None
    remote_as: int | None = None
    peer_hostname: str | None = None

    @property
    def established(self) -> bool:
        return self.state == "Established"


@dataclass(frozen=True)
class BfdSession:
    """One single-hop BFD session. The ``remote_*`` fields are what the peer last sent."""

    peer_address: str
    local_port: str | None
    status: str  # "up", "down", "init", "adminDown" (lower-cased)
    detect_multiplier: int | None
    receive_interval_ms: int | None  # local required min Rx
    transmit_interval_ms: int | None  # local desired min Tx
    remote_detect_multiplier: int | None = None
    remote_transmit_interval_ms: int | None = None
    #: the detection time the device reports itself (EOS ``detectTime``), where it does
    reported_detection_time_ms: float | None = None

    @property
    def up(self) -> bool:
        return self.status == "up"

    @property
    def detection_time_ms(self) -> float | None:
        """How long this end takes to declare the peer dead (RFC 5880 section 6.8.4,
        asynchronous mode): the peer's Detect Mult times the agreed interval, the greater
        of our required min Rx and the peer's desired min Tx. None if a factor is unread.
        A device that reports its own detection time (EOS) is taken at its word."""
        if self.reported_detection_time_ms is not None:
            return self.reported_detection_time_ms
        mult, rx = self.remote_detect_multiplier, self.receive_interval_ms
        tx = self.remote_transmit_interval_ms
        if mult is None or rx is None or tx is None:
            return None
        return float(mult * max(rx, tx))


@runtime_checkable
class BgpSessions(Protocol):
    def bgp_sessions(self) -> dict[str, BgpSession]:
        """Peer address -> its BGP session (IPv4 unicast)."""
        ...


@runtime_checkable
class BfdSessions(Protocol):
    def bfd_sessions(self) -> dict[str, BfdSession]:
        """Peer address -> its single-hop BFD session."""
        ...
