"""NIC PHY error counters: a host NIC's own receiver, read like a switch port's FEC.

A marginal lane at a host NIC's receiver shows nowhere else: its Rx power can
look normal and the switch at the far end sees a clean link. mlx5/ConnectX
NICs count, since the driver loaded, the bits received at the PHY and the bits
RS-FEC corrected (``ethtool -S``: ``rx_bits_phy``, ``rx_corrected_bits_phy``,
``rx_err_lane_<n>_phy``); the pre-FEC BER over an interval is the growth of
the one over the growth of the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class NicPhyErrors:
    """Cumulative PHY counters of one NIC port (since the driver loaded or a clear)."""

    ifname: str
    rx_bits: int
    rx_corrected_bits: int
    lane_corrected_bits: tuple[int, ...] = ()  # per lane, lane 0 first; () if not counted
    rx_uncorrected_symbols: int | None = None  # not corrected (or FEC off)


@runtime_checkable
class NicFec(Protocol):
    def nic_phy_errors(self, ifname: str | None = None) -> NicPhyErrors:
        """The port's PHY bit and corrected-bit counters (``ifname``: the host's netdev)."""
        ...
