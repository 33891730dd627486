"""The NIC's PCIe link status from sysfs, against real published outputs."""

from __future__ import annotations

import pytest

from labtest.capabilities.host import PcieLink, pcie_gbps
from labtest.drivers.linux.parsers.pcie import parse_pcie_sysfs
from labtest.errors import ParseError


def test_a_link_trained_narrower_than_its_capability(sample):
    link = parse_pcie_sysfs(sample("pcie/sysfs_gb10_gen1_x1_of_x16.txt"))
    assert link == PcieLink(None, 2.5, 1, 2.5, 16)
    assert link.downgraded
    assert link.data_rate_gbps == pytest.approx(2.0)  # 2.5 GT/s, 8b/10b
    assert link.max_data_rate_gbps == pytest.approx(32.0)


def test_unknown_speed_and_zero_width_are_no_link_not_numbers(sample):
    link = parse_pcie_sysfs(sample("pcie/sysfs_root_port_unknown.txt"))
    assert (link.speed_gts, link.width_lanes) == (None, None)
    assert (link.max_speed_gts, link.max_width_lanes) == (32.0, 16)
    assert link.data_rate_gbps is None and not link.downgraded


def test_grep_h_output_with_the_address_and_the_old_kernel_spelling():
    text = (
        "current_link_speed:8 GT/s\ncurrent_link_width:8\nmax_link_speed:8 GT/s\n"
        "max_link_width:16\nuevent:DRIVER=mlx5_core\nuevent:PCI_SLOT_NAME=0000:3B:00.1\n"
    )
    link = parse_pcie_sysfs(text)
    assert link == PcieLink("0000:3b:00.1", 8.0, 8, 8.0, 16)
    assert link.data_rate_gbps == pytest.approx(8 * 8 * 128 / 130)


@pytest.mark.parametrize(
    "text",
    [
        "current_link_speed:32.0 GT/s PCIe\ncurrent_link_width:16\n",  # max_* missing
        "current_link_speed:fast\ncurrent_link_width:16\nmax_link_speed:32.0 GT/s PCIe\n"
        "max_link_width:16\n",
        "current_link_speed:32.0 GT/s PCIe\ncurrent_link_width:x16\nmax_link_speed:32.0 GT/s PCIe\n"
        "max_link_width:16\n",
        "current_link_width:16\ncurrent_link_width:8\n",  # two answers for one file
        "current_link_speed:32.0 GT/s PCIe\ncurrent_link_width:16\nmax_link_speed:32.0 GT/s"
        " PCIe\nmax_link_width:1",  # cut in the middle of "16"
    ],
)
def test_what_it_cannot_read_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_pcie_sysfs(text)


def test_data_rates_from_the_pcie_generations():
    assert pcie_gbps(32.0, 16) == pytest.approx(504.1, abs=0.1)  # Gen5 x16
    assert pcie_gbps(16.0, 16) == pytest.approx(252.1, abs=0.1)  # Gen4 x16
    assert pcie_gbps(5.0, 8) == pytest.approx(32.0)  # Gen2 x8, 8b/10b
    assert pcie_gbps(64.0, 16) == pytest.approx(968.0)  # Gen6 x16, Flit mode
    assert pcie_gbps(None, 16) is None and pcie_gbps(32.0, None) is None
