"""NIC PHY error counters (``NicFec``): mlx5 names through the flavour table, absent or
unreadable counters refused."""

from __future__ import annotations

import pytest

from labtest.capabilities.nic_fec import NicPhyErrors
from labtest.drivers.linux.counters import flavour, nic_phy_errors
from labtest.errors import CapabilityAbsent, ConfigError, ParseError

MLX5 = flavour("mlx5", {}, device="host1")


def test_reads_bits_corrected_bits_and_lanes() -> None:
    stats = {"rx_bits_phy": 8_000_000_000, "rx_corrected_bits_phy": 12, "rx_pcs_symbol_err_phy": 1,
             "rx_err_lane_0_phy": 0, "rx_err_lane_1_phy": 9, "rx_err_lane_2_phy": 3,
             "rx_err_lane_3_phy": 0, "rx_packets": 5}
    e = nic_phy_errors("eth0", stats, MLX5, "host1")
    assert e == NicPhyErrors("eth0", 8_000_000_000, 12, (0, 9, 3, 0), 1)


def test_a_nic_without_phy_bit_counters_is_absent_not_zero() -> None:
    with pytest.raises(CapabilityAbsent, match="rx_bits_phy"):
        nic_phy_errors("eth0", {"rx_corrected_bits_phy": 3}, MLX5, "host1")


def test_a_gap_in_the_lane_counters_is_refused() -> None:
    stats = {"rx_bits_phy": 10, "rx_corrected_bits_phy": 0, "rx_err_lane_0_phy": 0,
             "rx_err_lane_2_phy": 0}
    with pytest.raises(ParseError, match="a lane is missing"):
        nic_phy_errors("eth0", stats, MLX5, "host1")


def test_other_names_per_device_and_the_lane_placeholder_is_checked() -> None:
    nic = flavour("mlx5", {"rx_bits_phy": "phy_rx_bits", "rx_lane_corrected_bits": "l{lane}"},
                  device="host1")
    e = nic_phy_errors("eth0", {"phy_rx_bits": 100, "rx_corrected_bits_phy": 1, "l0": 1},
                       nic, "host1")
    assert (e.rx_bits, e.lane_corrected_bits) == (100, (1,))
    with pytest.raises(ConfigError, match=r"\{lane\}"):
        flavour("mlx5", {"rx_lane_corrected_bits": "lane_errors"}, device="host1")

