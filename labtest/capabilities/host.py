"""Host capability: what a RoCE host (Linux + RDMA NIC) offers a suite.

Records carry units in their field names. Parsed values keep what the tool
printed (``bw_average`` in ``bw_unit``) next to the normalised figure
(``bw_average_gbps``), so a report can always show the raw number it judged.
The Protocols are deliberately small: a suite asks for the one it needs and is
skipped where the testbed's hosts do not offer it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from labtest.capabilities.transceiver import Transceiver

# --- RDMA devices and links --------------------------------------------------


@dataclass(frozen=True)
class GidEntry:
    """One GID table entry; ``type`` as the tools print it: ``RoCE v1``, ``RoCE v2``, ``IB``."""

    index: int
    gid: str
    type: str | None = None
    ipv4: str | None = None  # the address a RoCE GID maps, if it maps one
    netdev: str | None = None


@dataclass(frozen=True)
class RdmaDevice:
    """One port of an RDMA device (``mlx5_0`` port 1) and the netdev behind it."""

    name: str
    port: int
    state: str | None = None  # ACTIVE / DOWN (rdma link) or PORT_ACTIVE (ibv_devinfo)
    physical_state: str | None = None  # LINK_UP, DISABLED, ...
    netdev: str | None = None
    link_layer: str | None = None  # Ethernet (RoCE) or InfiniBand
    active_mtu_bytes: int | None = None
    active_speed_gbps: float | None = None  # per lane, as ibv_devinfo prints it
    active_width: str | None = None  # e.g. "4X"
    fw_version: str | None = None
    gids: list[GidEntry] = field(default_factory=list)

    @property
    def active(self) -> bool | None:
        """Whether the port is up for RDMA traffic; None where the tool gave no state."""
        return None if self.state is None else self.state in ("ACTIVE", "PORT_ACTIVE")

    @property
    def negotiated_gbps(self) -> float | None:
        """Per-lane speed x lanes (``4X``), as ibv_devinfo says; None where it said none."""
        if self.active_speed_gbps is None:
            return None
        return self.active_speed_gbps * int((self.active_width or "1X").upper().rstrip("X") or 1)

    def roce_v2_gid(self, ipv4: bool = True) -> GidEntry | None:
        """The GID index perftest/NCCL want on a routed RoCE fabric: RoCE v2, IPv4-mapped."""
        for gid in self.gids:
            if gid.type == "RoCE v2" and (gid.ipv4 is not None or not ipv4):
                return gid
        return None


@dataclass(frozen=True)
class LinkInfo:
    """One interface from ``ip -j link``."""

    ifname: str
    ifindex: int | None
    mtu_bytes: int | None
    operstate: str | None  # UP, DOWN, UNKNOWN, ...
    mac: str | None  # the link-layer address as printed (20 bytes on IPoIB)
    link_type: str | None = None  # ether, infiniband, loopback, none, ...
    flags: list[str] = field(default_factory=list)
    #: carrier up/down transitions since the netdev appeared (``ip -s -s``; None: not printed)
    carrier_changes: int | None = None

    @property
    def lower_up(self) -> bool:
        return "LOWER_UP" in self.flags


@dataclass(frozen=True)
class PcieLink:
    """A NIC's PCIe link: what it trained to (current) against what both ends can do (max).

    Speeds are the per-lane transfer rate in GT/s as the kernel reports them;
    None where the kernel says ``Unknown`` (no link trained) or does not say.
    """

    address: str | None  # PCI address (BDF), e.g. 0000:3b:00.0
    speed_gts: float | None
    width_lanes: int | None
    max_speed_gts: float | None
    max_width_lanes: int | None

    @property
    def data_rate_gbps(self) -> float | None:
        """The trained link's data rate per direction after line coding (see ``pcie_gbps``)."""
        return pcie_gbps(self.speed_gts, self.width_lanes)

    @property
    def max_data_rate_gbps(self) -> float | None:
        return pcie_gbps(self.max_speed_gts, self.max_width_lanes)

    @property
    def downgraded(self) -> bool:
        """Trained slower or narrower than its capability (lspci's "(downgraded)")."""
        pairs = ((self.speed_gts, self.max_speed_gts), (self.width_lanes, self.max_width_lanes))
        return any(c is not None and m is not None and c < m for c, m in pairs)


def pcie_gbps(speed_gts: float | None, width_lanes: int | None) -> float | None:
    """PCIe data rate per direction: GT/s x lanes x line-coding efficiency.

    PCI Express Base Specification: 2.5 and 5.0 GT/s (Gen1/2) use 8b/10b; 8, 16
    and 32 GT/s (Gen3-5) 128b/130b; 64 GT/s (Gen6) runs in Flit mode, 242 of every
    256 bytes carrying TLPs and DLLPs (236 + 6; the rest is CRC and FEC).
    """
    if speed_gts is None or not width_lanes:
        return None
    if speed_gts <= 5.0:
        coding = 8 / 10
    elif speed_gts <= 32.0:
        coding = 128 / 130
    else:
        coding = 242 / 256
    return speed_gts * width_lanes * coding


# --- perftest ----------------------------------------------------------------


@dataclass(frozen=True)
class PerftestBwRow:
    bytes: int
    iterations: int
    bw_peak: float  # as printed, in the record's bw_unit
    bw_average: float
    msg_rate_mpps: float
    bw_peak_gbps: float | None  # None when the printed unit cannot be trusted (see warnings)
    bw_average_gbps: float | None
    bw_from_msg_rate_gbps: float  # bytes x message rate: independent of the printed unit


@dataclass(frozen=True)
class PerftestBandwidth:
    test: str  # the banner, e.g. "RDMA_Write BW Test"
    device: str | None
    link_type: str | None
    qps: int | None
    mtu_bytes: int | None
    bw_unit: str  # as printed: "Gb/sec", "MB/sec", "MiB/sec"
    rows: list[PerftestBwRow]
    warnings: list[str] = field(default_factory=list)
    gid_index: int | None = None
    connection_type: str | None = None
    bidirectional: bool = False
    server_side: bool = False  # True when the "Waiting for client" banner was printed

    @property
    def best_average_gbps(self) -> float | None:
        values = [r.bw_average_gbps for r in self.rows if r.bw_average_gbps is not None]
        return max(values) if values else None


@dataclass(frozen=True)
class PerftestLatRow:
    bytes: int
    iterations: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None  # the median
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p99_9_us: float | None = None
    tps_average: float | None = None  # duration mode (-D) only


@dataclass(frozen=True)
class PerftestLatency:
    test: str
    device: str | None
    rows: list[PerftestLatRow]
    link_type: str | None = None
    mtu_bytes: int | None = None
    warnings: list[str] = field(default_factory=list)
    server_side: bool = False


@dataclass(frozen=True)
class PerftestSpec:
    """One perftest run. ``size_bytes=None`` sweeps all sizes (``-a``)."""

    test: str = "ib_write_bw"
    device: str | None = None
    ib_port: int | None = None
    gid_index: int | None = None
    qps: int = 1
    size_bytes: int | None = 65536
    duration_s: float | None = None  # -D; None runs iterations
    iterations: int | None = None
    tcp_port: int = 18515
    bidirectional: bool = False
    report_gbits: bool = True
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class PerftestBandwidthPair:
    client: PerftestBandwidth
    server: PerftestBandwidth | None  # some versions print no table on the server side


@dataclass(frozen=True)
class PerftestLatencyPair:
    client: PerftestLatency
    server: PerftestLatency | None


# --- nccl-tests ----------------------------------------------------------------


@dataclass(frozen=True)
class NcclTiming:
    time_us: float | None
    algbw_gbs: float | None  # GB/s (bytes), as nccl-tests prints it
    busbw_gbs: float | None
    wrong: int | None  # corrupted elements (#wrong); None where printed N/A or not printed
    error: float | None = None  # older layout: max relative error instead of a count


@dataclass(frozen=True)
class NcclRow:
    size_bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: NcclTiming
    in_place: NcclTiming


@dataclass(frozen=True)
class NcclNetworkError:
    """Why a collective died on the data plane, as NCCL (or the verbs layer) printed it."""

    signature: str  # which known signature matched (the driver's table of them)
    line: str  # the line that matched, as printed
    wc_status: int | None = None  # ibv_wc_status of a completion error, e.g. 12
    wc_status_name: str | None = None  # e.g. IBV_WC_RETRY_EXC_ERR
    peer: str | None = None  # the address the failed completion came from, as printed


@dataclass(frozen=True)
class NcclResult:
    rows: list[NcclRow]
    avg_busbw_gbs: float | None
    out_of_bounds: int | None
    collective: str | None = None  # from "# Collective test starting: ..." when printed
    layout: str = "wrong"  # "wrong" (#wrong column) or "error" (older error column)
    failures: list[str] = field(default_factory=list)  # "Test failure ..." lines
    # the run died of a network error (rows: what completed before, often none): a
    # product fault of the fabric, not a tool that could not run
    network_error: NcclNetworkError | None = None

    @property
    def corrupted(self) -> bool:
        """The data-corruption gate: any out-of-bounds value or a non-zero #wrong."""
        if self.out_of_bounds:
            return True
        return any((t.wrong or 0) > 0 for r in self.rows for t in (r.out_of_place, r.in_place))


@dataclass(frozen=True)
class NcclSpec:
    collective: str = "all_reduce_perf"
    min_bytes: int = 8
    max_bytes: int = 128 * 2**20
    step_factor: int = 2
    iterations: int = 20
    warmup_iterations: int = 5
    gpus_per_rank: int = 1
    check: bool = True  # -c 1: validate data, so #wrong means something
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. NCCL_TESTS_SPLIT


# --- counters --------------------------------------------------------------


_NAMED_HW_COUNTERS = (
    "np_cnp_sent",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "np_ecn_marked_roce_packets",
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "out_of_buffer",
    "rnr_nak_retry_err",
)


@dataclass(frozen=True)
class RdmaHwCounters(Mapping[str, int]):
    """RDMA port hardware counters: a read-only dict of every counter the driver
    exposes, plus named fields for the ones congestion and loss suites judge
    (None where this NIC does not expose the counter)."""

    device: str | None
    port: int | None
    counters: dict[str, int]
    np_cnp_sent: int | None = None
    rp_cnp_handled: int | None = None
    rp_cnp_ignored: int | None = None
    np_ecn_marked_roce_packets: int | None = None
    out_of_sequence: int | None = None
    packet_seq_err: int | None = None
    local_ack_timeout_err: int | None = None
    roce_adp_retrans: int | None = None
    roce_adp_retrans_to: int | None = None
    out_of_buffer: int | None = None
    rnr_nak_retry_err: int | None = None

    @classmethod
    def from_counters(
        cls, device: str | None, port: int | None, counters: dict[str, int]
    ) -> RdmaHwCounters:
        named = {name: counters.get(name) for name in _NAMED_HW_COUNTERS}
        return cls(device=device, port=port, counters=dict(counters), **named)

    def __getitem__(self, key: str) -> int:
        return self.counters[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.counters)

    def __len__(self) -> int:
        return len(self.counters)


# --- the Protocols ---------------------------------------------------------


@runtime_checkable
class RdmaDevices(Protocol):
    def rdma_devices(self) -> list[RdmaDevice]: ...

    def links(self) -> list[LinkInfo]: ...


@runtime_checkable
class NicCounters(Protocol):
    def ethtool_stats(self, ifname: str) -> dict[str, int]: ...

    def rdma_hw_counters(self, device: str, port: int = 1) -> RdmaHwCounters: ...


@runtime_checkable
class PcieLinks(Protocol):
    """The PCIe link status of the NIC behind a netdev (None: the host's test port)."""

    def pcie_link(self, ifname: str | None = None) -> PcieLink: ...


@runtime_checkable
class ModuleDom(Protocol):
    def module_dom(self, ifname: str) -> Transceiver: ...


@runtime_checkable
class Perftest(Protocol):
    """This host is the client; ``server`` runs the server side, which is always
    stopped afterwards, also when the client fails. ``server_address`` None: the
    server's own RDMA address."""

    def perftest_bandwidth(
        self, server: Perftest, server_address: str | None, spec: PerftestSpec, *,
        timeout_s: float
    ) -> PerftestBandwidthPair: ...

    def perftest_latency(
        self, server: Perftest, server_address: str | None, spec: PerftestSpec, *,
        timeout_s: float
    ) -> PerftestLatencyPair: ...


@runtime_checkable
class PerftestPairs(Protocol):
    """Several (client, server, spec) pairs at once (incast, bisection): every server
    listens before any client starts, so all clients run together."""

    def perftest_pairs(
        self, pairs: Sequence[tuple[Perftest, Perftest, PerftestSpec]], *, timeout_s: float
    ) -> list[PerftestBandwidthPair | PerftestLatencyPair]: ...


@runtime_checkable
class Collectives(Protocol):
    """This host launches ``mpirun`` across ``hosts`` (itself included or not)."""

    def nccl_test(
        self, spec: NcclSpec, hosts: Sequence[str], *, timeout_s: float
    ) -> NcclResult: ...
