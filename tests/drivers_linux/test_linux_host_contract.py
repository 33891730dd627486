"""The Host capability contract: Protocols and the dict-like hardware-counter record."""

from __future__ import annotations

from labtest.capabilities.host import (
    Collectives,
    LinkInfo,
    ModuleDom,
    NcclResult,
    NcclRow,
    NcclTiming,
    NicCounters,
    Perftest,
    RdmaDevice,
    RdmaDevices,
    RdmaHwCounters,
)
from labtest.capabilities.transceiver import Transceiver
from labtest.parsing import commands, to_jsonable


class _CountersOnly:
    def ethtool_stats(self, ifname: str) -> dict[str, int]:
        return {"rx_prio3_pause": 1}

    def rdma_hw_counters(self, device: str, port: int = 1) -> RdmaHwCounters:
        return RdmaHwCounters.from_counters(device, port, {"np_cnp_sent": 2})


class _DomOnly:
    def module_dom(self, ifname: str) -> Transceiver:
        return Transceiver()


def test_protocols_tell_capabilities_apart():
    assert isinstance(_CountersOnly(), NicCounters)
    assert not isinstance(_CountersOnly(), ModuleDom)
    assert isinstance(_DomOnly(), ModuleDom)
    for protocol in (RdmaDevices, Perftest, Collectives):
        assert not isinstance(_DomOnly(), protocol)


def test_hw_counters_are_a_mapping_with_named_fields():
    c = RdmaHwCounters.from_counters("mlx5_0", 1, {"np_cnp_sent": 7, "vendor_specific": 3})
    assert c.np_cnp_sent == 7 and c.rp_cnp_handled is None
    assert dict(c) == {"np_cnp_sent": 7, "vendor_specific": 3} and c.get("missing") is None
    data = to_jsonable(c)
    assert data["counters"]["vendor_specific"] == 3 and data["np_cnp_sent"] == 7


def test_roce_v2_gid_and_link_helpers():
    assert RdmaDevice(name="mlx5_0", port=1).roce_v2_gid() is None
    link = LinkInfo("ens1", 3, 9000, "UP", "aa:bb:cc:dd:ee:ff", "ether", ["UP", "LOWER_UP"])
    assert link.lower_up


def test_corruption_gate_reads_wrong_counts_and_bounds():
    clean = NcclTiming(1.0, 1.0, 1.0, 0)
    bad = NcclTiming(1.0, 1.0, 1.0, 5)
    row = NcclRow(8, 2, "float", "sum", -1, clean, bad)
    assert NcclResult([row], 1.0, 0).corrupted
    assert not NcclResult([NcclRow(8, 2, "float", "sum", -1, clean, clean)], 1.0, 0).corrupted
    assert NcclResult([NcclRow(8, 2, "float", "sum", -1, clean, clean)], 1.0, 3).corrupted


def test_linux_driver_registers_every_documented_command():
    registered = set(commands("linux"))
    for command in (
        "ib_write_bw",
        "ib_read_bw",
        "ib_send_bw",
        "ib_write_lat",
        "ib_send_lat",
        "ib_read_lat",
        "all_reduce_perf",
        "alltoall_perf",
        "ethtool -S",
        "ethtool -m",
        "ip -j link",
        "rdma link",
        "rdma statistic show",
        "ibv_devinfo",
        "show_gids",
        "show_counters",
    ):
        assert command in registered, command
