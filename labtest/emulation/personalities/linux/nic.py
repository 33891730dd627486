"""What an emulated RoCE host knows about its NICs, printed the way Linux tools print it.

One :class:`NicPort` per cabled (or declared) port of the host: the netdev is
the testbed's port name (``eth0``), the RDMA device is ``vars.rdma_device`` for
the first port and ``mlx5_N`` otherwise, one IB port each (an mlx5 function per
port, as ConnectX cards expose them). The data-plane IPv4 is ``vars.rdma_address``
for the first port, else the address the traffic model gave the port (10.0.0.N).

Every renderer reads the fabric at call time: link state, negotiated speed and
MTU (faults included) from the traffic model's port view, traffic, pause, ECN
and CNP counters from the traffic model, LLDP and FCS counts from the fabric,
module inventory and DOM from the optics model. Formats, with their sources:

- ``ip -j link`` / ``ip -j addr``: iproute2 JSON keys as in the published
  captures under tests/drivers_linux/samples/ip_link;
- ``ethtool -S``: mlx5 counter names (Linux Documentation/networking/
  device_drivers/ethernet/mellanox/mlx5/counters.rst; en_stats.c), five spaces
  of indent after ``NIC statistics:`` as in the mlx5 sample;
- ``ethtool -m``: in module_eeprom.py;
- ``rdma link`` / ``rdma statistic``: iproute2 rdma tool, one line per port
  (samples rdma_link_*, rdma_stat_show_*); ``-p`` one counter per tab-indented
  line (Leon Romanovsky's cover letter);
- ``ibv_devinfo [-v]``: rdma-core's tab layout (samples ibv_devinfo_*);
- ``show_gids``: mlnx-tools' tab-separated table (samples show_gids_*);
- sysfs: ``/sys/class/net/DEV/{speed,mtu,operstate,address,carrier}``, and
  ``/sys/class/infiniband/DEV/ports/1/{state,phys_state,rate,gids,
  gid_attrs/types,gid_attrs/ndevs,hw_counters}``; an unpopulated GID entry
  answers EINVAL like the kernel.
"""

from __future__ import annotations

import ipaddress
import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.physics import CODEWORD_BITS
from labtest.emulation.personalities._text import natural_key
from labtest.testbed.model import Device

PRIORITIES = 8
GID_TABLE_LEN = 255  # mlx5 RoCE ports (ibv_devinfo gid_tbl_len)
ROCE_PRIORITY = 3  # the traffic model runs RoCE on priority 3
PAUSE_QUANTA_BITS = 65535 * 512  # one XOFF at the largest quanta
FW_DEFAULT = "28.39.1002"  # a ConnectX-7 firmware line (NVIDIA MLNX_OFED release notes)
VENDOR_PART_ID = 4129  # ConnectX-7 (pci.ids 15b3:1021)
BOARD_ID = "MT_0000000838"
IB_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
IB_SPEED_ENUM = {2.5: 1, 5.0: 2, 10.0: 4, 14.0: 8, 25.0: 32, 50.0: 64, 100.0: 128, 200.0: 256}


@dataclass(frozen=True)
class NicPort:
    port: str  # the testbed's port name
    netdev: str
    rdma: str
    ib_port: int
    endpoint: str  # "host:port" in the fabric
    ifindex: int
    mac: str
    ipv4: str | None
    cabled: bool


@dataclass(frozen=True)
class PortNow:
    """One NIC port at one instant."""

    nic: NicPort
    admin_up: bool
    oper_up: bool
    speed_gbps: float  # negotiated; 0 when down
    mtu_bytes: int
    roce_mtu_bytes: int
    carrier_changes: int = 0  # each carrier loss and each return, as the kernel counts


def nic_ports(fabric: Fabric, name: str, device: Device) -> tuple[NicPort, ...]:
    traffic = fabric.traffic
    rdma_first = str(device.vars.get("rdma_device") or "mlx5_0")
    out: list[NicPort] = []
    names = sorted(fabric.ports(name), key=natural_key)
    rdma_names = [rdma_first]
    k = 0
    while len(rdma_names) < len(names):
        candidate = f"mlx5_{k}"
        k += 1
        if candidate not in rdma_names:
            rdma_names.append(candidate)
    for i, port in enumerate(names):
        endpoint = f"{name}:{port}"
        st = fabric.interface(name, port)
        ipv4 = None
        if i == 0 and device.vars.get("rdma_address"):
            ipv4 = str(device.vars["rdma_address"])
        elif st.link is not None:
            ipv4 = traffic.topo.ip_text(traffic.topo.port(endpoint))
        out.append(
            NicPort(
                port, port, rdma_names[i], 1, endpoint, i + 2, st.mac, ipv4, st.link is not None
            )
        )
    return tuple(out)


def roce_mtu(netdev_mtu: int) -> int:
    """The RoCE MTU for a netdev MTU (fits 44 B of IP/UDP/BTH/ICRC): 9000 -> 4096."""
    fits = [m for m in IB_MTU_ENUM if m + 44 <= netdev_mtu]
    return fits[-1] if fits else 256


def port_now(fabric: Fabric, host: str, nic: NicPort) -> PortNow:
    st = fabric.interface(host, nic.port)
    speed, mtu = st.speed_gbps, st.mtu_bytes
    if nic.cabled:
        pc = fabric.traffic.port_counters(nic.endpoint)
        speed, mtu = pc.speed_gbps, pc.mtu
    drops = fabric.counters(host, nic.port).oper_down_count
    changes = 2 * drops - int(drops > 0 and not st.oper_up)  # a dark port has not come back
    return PortNow(nic, st.admin_up, st.oper_up, speed if st.oper_up else 0.0, mtu, roce_mtu(mtu),
                   changes)


# --- identities ---------------------------------------------------------------


def _eui64(mac: str) -> bytes:
    b = bytes(int(x, 16) for x in mac.split(":"))
    return bytes([b[0] ^ 0x02, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]])


def node_guid(mac: str) -> str:
    e = _eui64(mac).hex()
    return ":".join(e[i : i + 4] for i in range(0, 16, 4))


def gid_table(nic: NicPort) -> list[tuple[int, ipaddress.IPv6Address, str]]:
    """(index, GID, type): link-local v1/v2, then the IPv4-mapped v1/v2 (mlx5's order)."""
    link_local = ipaddress.IPv6Address(b"\xfe\x80" + b"\x00" * 6 + _eui64(nic.mac))
    gids = [(0, link_local, "RoCE v1"), (1, link_local, "RoCE v2")]
    if nic.ipv4:
        mapped = ipaddress.IPv6Address(f"::ffff:{nic.ipv4}")
        gids += [(2, mapped, "RoCE v1"), (3, mapped, "RoCE v2")]
    return gids


def gid_text(gid: ipaddress.IPv6Address) -> str:
    """A GID as inet_ntop prints it (rdma-core): IPv4-mapped ones end in dotted quad."""
    return f"::ffff:{gid.ipv4_mapped}" if gid.ipv4_mapped else str(gid)


def gid_bytes_text(gid: ipaddress.IPv6Address) -> str:
    """perftest's GID_FMT: 16 bytes in %02d, colon-separated."""
    return ":".join(f"{b:02d}" for b in gid.packed)


def firmware(fabric: Fabric, host: str, device: Device) -> str:
    return str(
        device.vars.get("nic_firmware") or fabric.device_facts(host).firmware_version or FW_DEFAULT
    )


# --- ip -j link / addr --------------------------------------------------------------


def ip_json(ports: list[PortNow], addresses: bool, stats: Mapping[str, dict[str, Any]]) -> str:
    """``ip -j link`` (``addresses``: ``ip -j addr``); ``stats`` adds stats64 per netdev."""
    lo: dict[str, Any] = {
        "ifindex": 1,
        "ifname": "lo",
        "flags": ["LOOPBACK", "UP", "LOWER_UP"],
        "mtu": 65536,
        "qdisc": "noqueue",
        "operstate": "UNKNOWN",
        "linkmode": "DEFAULT",
        "group": "default",
        "txqlen": 1000,
        "link_type": "loopback",
        "address": "00:00:00:00:00:00",
        "broadcast": "00:00:00:00:00:00",
    }
    if "lo" in stats:
        lo["stats64"] = stats["lo"]
    if addresses:
        lo["addr_info"] = [
            _addr("inet", "127.0.0.1", 8, "host", "lo"),
            _addr("inet6", "::1", 128, "host", None),
        ]
    out = [lo]
    for p in ports:
        flags = ["BROADCAST", "MULTICAST"]
        if p.admin_up:
            flags = (
                ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
                if p.oper_up
                else ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
            )
        entry: dict[str, Any] = {
            "ifindex": p.nic.ifindex,
            "ifname": p.nic.netdev,
            "flags": flags,
            "mtu": p.mtu_bytes,
            "qdisc": "mq",
            "operstate": "UP" if p.oper_up else "DOWN",
            "linkmode": "DEFAULT",
            "group": "default",
            "txqlen": 1000,
            "link_type": "ether",
            "address": p.nic.mac,
            "broadcast": "ff:ff:ff:ff:ff:ff",
        }
        if p.nic.netdev in stats:
            entry["stats64"] = stats[p.nic.netdev]
        if addresses:
            info = []
            if p.nic.ipv4:
                net = ipaddress.IPv4Network(f"{p.nic.ipv4}/24", strict=False)
                inet = _addr("inet", p.nic.ipv4, 24, "global", p.nic.netdev)
                inet["broadcast"] = str(net.broadcast_address)
                info.append(inet)
            link_local = gid_table(p.nic)[0][1]
            info.append(_addr("inet6", str(link_local), 64, "link", None))
            entry["addr_info"] = info
        out.append(entry)
    return json.dumps(out, separators=(",", ":")) + "\n"


def _addr(family: str, local: str, prefix: int, scope: str, label: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"family": family, "local": local, "prefixlen": prefix, "scope": scope}
    if label:
        entry["label"] = label
    entry["valid_life_time"] = 4294967295
    entry["preferred_life_time"] = 4294967295
    return entry


def stats64(counters: Mapping[str, int], carrier_changes: int | None = None) -> dict[str, Any]:
    """``ip -s -j link``: the kernel's netdev counters (RDMA traffic bypasses them); a
    second ``-s`` adds ``carrier_changes``."""
    zero_rx = ("errors", "dropped", "over_errors", "multicast")
    zero_tx = ("errors", "dropped", "carrier_errors", "collisions")
    more = {} if carrier_changes is None else {"carrier_changes": carrier_changes}
    return {
        "rx": {
            "bytes": counters["rx_bytes"],
            "packets": counters["rx_packets"],
            **dict.fromkeys(zero_rx, 0),
        },
        "tx": {
            "bytes": counters["tx_bytes"],
            "packets": counters["tx_packets"],
            **dict.fromkeys(zero_tx, 0),
            **more,
        },
    }


# --- counters -------------------------------------------------------------------


def ethtool_counters(
    fabric: Fabric, host: str, now: PortNow, pfc: tuple[int, ...]
) -> dict[str, int]:
    """mlx5 ``ethtool -S`` counters of one port, in the driver's order (abridged)."""
    nic = now.nic
    fc = fabric.counters(host, nic.port)
    lldp_rx, lldp_tx = fc.rx_packets, fc.tx_packets
    c: dict[str, int] = {
        "rx_packets": lldp_rx,
        "rx_bytes": fc.rx_octets,
        "tx_packets": lldp_tx,
        "tx_bytes": fc.tx_octets,
    }
    traffic = fabric.traffic
    rdma = {"rx_p": 0, "rx_b": 0, "tx_p": 0, "tx_b": 0, "disc": 0}
    rx_prio = tx_prio = [(0, 0)] * PRIORITIES
    pause_rx = pause_tx = (0,) * PRIORITIES
    if nic.cabled:
        pc = traffic.port_counters(nic.endpoint)
        rc = traffic.roce_counters(nic.endpoint)
        peer = traffic.topo.ports[traffic.topo.ports[traffic.topo.port(nic.endpoint)].peer]
        peer_pc = traffic.port_counters(peer.endpoint)
        rdma = {
            "rx_p": pc.rx_packets,
            "rx_b": pc.rx_bytes,
            "tx_p": pc.tx_packets,
            "tx_b": pc.tx_bytes,
            "disc": rc.rx_discards_phy,
        }
        tx_prio = [(q.tx_bytes, q.tx_packets) for q in pc.queues]
        rx_prio = [(q.tx_bytes, q.tx_packets) for q in peer_pc.queues]
        pause_rx, pause_tx = rc.rx_prio_pause, rc.tx_prio_pause
    fec = fabric.fec(host, nic.port) if nic.cabled else None
    c |= {
        "rx_out_of_buffer": 0,
        "rx_vport_unicast_packets": 0,
        "rx_vport_unicast_bytes": 0,
        "tx_vport_unicast_packets": 0,
        "tx_vport_unicast_bytes": 0,
        "rx_vport_multicast_packets": lldp_rx,
        "rx_vport_multicast_bytes": fc.rx_octets,
        "tx_vport_multicast_packets": lldp_tx,
        "tx_vport_multicast_bytes": fc.tx_octets,
        "rx_vport_rdma_unicast_packets": rdma["rx_p"],
        "rx_vport_rdma_unicast_bytes": rdma["rx_b"],
        "tx_vport_rdma_unicast_packets": rdma["tx_p"],
        "tx_vport_rdma_unicast_bytes": rdma["tx_b"],
        "tx_packets_phy": rdma["tx_p"] + lldp_tx + sum(pause_tx),
        "rx_packets_phy": rdma["rx_p"] + lldp_rx + sum(pause_rx),
        "rx_crc_errors_phy": fc.rx_fcs_errors,
        "tx_bytes_phy": rdma["tx_b"] + fc.tx_octets + 64 * sum(pause_tx),
        "rx_bytes_phy": rdma["rx_b"] + fc.rx_octets + 64 * sum(pause_rx),
        "tx_multicast_phy": lldp_tx + sum(pause_tx),
        "rx_multicast_phy": lldp_rx + sum(pause_rx),
        "tx_mac_control_phy": sum(pause_tx),
        "rx_mac_control_phy": sum(pause_rx),
        "rx_in_range_len_errors_phy": 0,
        "rx_out_of_range_len_phy": 0,
        "rx_oversize_pkts_phy": 0,
        "rx_symbol_err_phy": 0,
        "rx_unsupported_op_phy": 0,
        "rx_pause_ctrl_phy": sum(pause_rx),
        "tx_pause_ctrl_phy": sum(pause_tx),
        "rx_discards_phy": rdma["disc"],
        "tx_discards_phy": 0,
        "tx_errors_phy": 0,
        "rx_undersize_pkts_phy": 0,
        "rx_fragments_phy": 0,
        "rx_jabbers_phy": 0,
        "link_down_events_phy": fc.oper_down_count,
        "rx_pcs_symbol_err_phy": fec.uncorrectable_codewords if fec else 0,
        "rx_corrected_bits_phy": fec.symbol_errors if fec else 0,
        "rx_bits_phy": fec.total_codewords * CODEWORD_BITS if fec else 0,
    }
    lane_ber = fabric.ber(host, nic.port) if fec else (0.0,) * 4  # an uncabled port: 4 zeros
    for lane, errors in enumerate(split(fec.symbol_errors if fec else 0, lane_ber)):
        c[f"rx_err_lane_{lane}_phy"] = errors
    c["rx_buffer_passed_thres_phy"] = 0
    for p in range(PRIORITIES):
        c[f"rx_prio{p}_bytes"], c[f"rx_prio{p}_packets"] = rx_prio[p]
        c[f"rx_prio{p}_discards"] = rdma["disc"] if p == ROCE_PRIORITY else 0
        c[f"tx_prio{p}_bytes"], c[f"tx_prio{p}_packets"] = tx_prio[p]
    # XOFF time per frame: a sender refreshes its pause at half the quanta it asked for
    quanta_us = PAUSE_QUANTA_BITS / max(now.speed_gbps, 1.0) / 1e3 / 2
    for p in pfc:  # mlx5 lists the pause counters of PFC-enabled priorities only
        c[f"rx_prio{p}_pause"] = pause_rx[p]
        c[f"rx_prio{p}_pause_duration"] = round(pause_rx[p] * quanta_us)
        c[f"tx_prio{p}_pause"] = pause_tx[p]
        c[f"tx_prio{p}_pause_duration"] = round(pause_tx[p] * quanta_us)
        c[f"rx_prio{p}_pause_transition"] = pause_rx[p]
    c |= {
        "tx_pause_storm_warning_events": 0,
        "tx_pause_storm_error_events": 0,
        "module_unplug": 0,
        "module_bus_stuck": 0,
        "module_high_temp": 0,
        "module_bad_shorted": 0,
    }
    return c


def split(total: int, weights: tuple[float, ...]) -> list[int]:
    """``total`` shared out in proportion to ``weights`` (largest remainder; sums to it)."""
    w = sum(weights)
    if w <= 0:
        return [total] + [0] * (len(weights) - 1) if weights else []
    share = [total * x / w for x in weights]
    out = [math.floor(s) for s in share]
    for i in sorted(range(len(share)), key=lambda i: out[i] - share[i])[: total - sum(out)]:
        out[i] += 1
    return out


def ethtool_stats_text(counters: Mapping[str, int]) -> str:
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in counters.items())


HW_COUNTERS = (
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "rx_dct_connect",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_ignored",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rx_icrc_encapsulated",
)


def hw_counters(fabric: Fabric, now: PortNow) -> dict[str, int]:
    """The port's RDMA hw_counters (mlx5 names, ``rdma statistic`` order).

    CNP and ECN counts come from the traffic model; ``out_of_sequence`` counts the
    RoCE packets dropped on their way to this receiver (the last-hop switch egress
    toward it, and its own buffer discards): every loss shows up as a gap there.
    Frames the wire lost (lossy link, silent drop, blackhole) add to
    ``out_of_sequence`` here as responder and to ``packet_seq_err`` and
    ``local_ack_timeout_err`` as requester (``TrafficModel.roce_retransmissions``).
    """
    c = dict.fromkeys(HW_COUNTERS, 0)
    traffic = fabric.traffic
    if now.nic.cabled:
        rc = traffic.roce_counters(now.nic.endpoint)
        topo = traffic.topo
        peer = topo.ports[topo.ports[topo.port(now.nic.endpoint)].peer]
        lost = traffic.port_counters(peer.endpoint).queues[ROCE_PRIORITY].drop_packets
        c["rx_write_requests"] = traffic.port_counters(now.nic.endpoint).rx_packets
        c["out_of_sequence"] = lost + rc.rx_discards_phy
        # frames the wire lost (gray faults, traffic/wireloss.py): go-back-N's traces
        for name, n in traffic.roce_retransmissions(now.nic.endpoint).items():
            c[name] += n
        c["rp_cnp_handled"] = rc.rp_cnp_handled
        c["np_cnp_sent"] = rc.np_cnp_sent
        c["np_ecn_marked_roce_packets"] = rc.np_ecn_marked_roce_packets
    return c


def rdma_statistic_text(rows: list[tuple[NicPort, dict[str, int]]], pretty: bool) -> str:
    out = []
    for nic, counters in rows:
        head = f"link {nic.rdma}/{nic.ib_port}"
        if pretty:
            out.append(head + "\n" + "".join(f"\t{k} {v}\n" for k, v in counters.items()))
        else:
            out.append(head + "".join(f" {k} {v}" for k, v in counters.items()) + "\n")
    return "".join(out)


def _states(now: PortNow) -> tuple[str, str]:
    """(state, physical_state) as ``rdma link`` prints them."""
    if not now.admin_up:
        return "DOWN", "DISABLED"
    return ("ACTIVE", "LINK_UP") if now.oper_up else ("DOWN", "POLLING")


def rdma_link_text(ports: list[PortNow]) -> str:
    return "".join(
        f"link {p.nic.rdma}/{p.nic.ib_port} state {_states(p)[0]} physical_state "
        f"{_states(p)[1]} netdev {p.nic.netdev}\n"
        for p in ports
    )


def rdma_dev_text(ports: list[PortNow], fw: str) -> str:
    return "".join(
        f"{i}: {p.nic.rdma}: node_type ca fw {fw} node_guid {node_guid(p.nic.mac)} "
        f"sys_image_guid {node_guid(p.nic.mac)}\n"
        for i, p in enumerate(ports)
    )


# --- ibv_devinfo / show_gids ---------------------------------------------------------


def _width_speed(speed_gbps: float) -> tuple[str, str]:
    """ibv_devinfo's active_width / active_speed for an Ethernet speed (4 lanes)."""
    lane = speed_gbps / 4 if speed_gbps else 0.0
    enum = IB_SPEED_ENUM.get(lane, 0)
    return "4X (2)", f"{lane:.1f} Gbps ({enum})"


def ibv_devinfo_text(ports: list[PortNow], fw: str, verbose: bool, device: str | None) -> str:
    out = []
    for p in ports:
        nic = p.nic
        if device and nic.rdma != device:
            continue
        guid = node_guid(nic.mac)
        lines = [
            f"hca_id:\t{nic.rdma}",
            "\ttransport:\t\t\tInfiniBand (0)",
            f"\tfw_ver:\t\t\t\t{fw}",
            f"\tnode_guid:\t\t\t{guid}",
            f"\tsys_image_guid:\t\t\t{guid}",
            "\tvendor_id:\t\t\t0x02c9",
            f"\tvendor_part_id:\t\t\t{VENDOR_PART_ID}",
            "\thw_ver:\t\t\t\t0x0",
            f"\tboard_id:\t\t\t{BOARD_ID}",
            "\tphys_port_cnt:\t\t\t1",
        ]
        if verbose:
            lines += [
                "\tmax_mr_size:\t\t\t0xffffffffffffffff",
                "\tpage_size_cap:\t\t\t0xfffffffffffff000",
                "\tmax_qp:\t\t\t\t131072",
                "\tmax_qp_wr:\t\t\t32768",
                "\tmax_sge:\t\t\t30",
                "\tmax_cq:\t\t\t\t16777216",
                "\tmax_cqe:\t\t\t4194303",
                "\tmax_mr:\t\t\t\t16777216",
                "\tmax_pd:\t\t\t\t8388608",
                "\thca_core_clock:\t\t\t1000000kHZ",
                "\tnum_comp_vectors:\t\t63",
            ]
        state = "PORT_ACTIVE (4)" if p.oper_up else "PORT_DOWN (1)"
        lines += [
            f"\t\tport:\t{nic.ib_port}",
            f"\t\t\tstate:\t\t\t{state}",
            "\t\t\tmax_mtu:\t\t4096 (5)",
            f"\t\t\tactive_mtu:\t\t{p.roce_mtu_bytes} ({IB_MTU_ENUM[p.roce_mtu_bytes]})",
            "\t\t\tsm_lid:\t\t\t0",
            "\t\t\tport_lid:\t\t0",
            "\t\t\tport_lmc:\t\t0x00",
            "\t\t\tlink_layer:\t\tEthernet",
        ]
        if verbose:
            width, speed = _width_speed(p.speed_gbps)
            phys = {"ACTIVE": "LINK_UP (5)", "DOWN": "POLLING (2)"}[_states(p)[0]]
            if not p.admin_up:
                phys = "DISABLED (3)"
            lines += [
                "\t\t\tmax_msg_sz:\t\t0x40000000",
                "\t\t\tport_cap_flags:\t\t0x04010000",
                "\t\t\tport_cap_flags2:\t0x0000",
                "\t\t\tmax_vl_num:\t\tinvalid value (0)",
                "\t\t\tbad_pkey_cntr:\t\t0x0",
                "\t\t\tqkey_viol_cntr:\t\t0x0",
                "\t\t\tsm_sl:\t\t\t0",
                "\t\t\tpkey_tbl_len:\t\t1",
                f"\t\t\tgid_tbl_len:\t\t{GID_TABLE_LEN}",
                "\t\t\tsubnet_timeout:\t\t0",
                "\t\t\tinit_type_reply:\t0",
                f"\t\t\tactive_width:\t\t{width}",
                f"\t\t\tactive_speed:\t\t{speed}",
                f"\t\t\tphys_state:\t\t{phys}",
            ]
            lines += [
                f"\t\t\tGID[{i:3d}]:\t\t{gid_text(gid)}, {kind}" for i, gid, kind in gid_table(nic)
            ]
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def show_gids_text(ports: list[PortNow]) -> str:
    head = (
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    )
    rows = []
    for p in ports:
        for i, gid, kind in gid_table(p.nic):
            full = ":".join(gid.exploded.split(":"))
            ipv4 = f"{gid.ipv4_mapped}  " if gid.ipv4_mapped else "\t"
            ver = "v2" if kind.endswith("v2") else "v1"
            rows.append(
                f"{p.nic.rdma}\t{p.nic.ib_port}\t{i}\t{full}\t{ipv4}\t{ver}\t{p.nic.netdev}\n"
            )
    return head + "".join(rows) + f"n_gids_found={len(rows)}\n"


# --- ethtool (settings, driver) -------------------------------------------------------


def ethtool_settings_text(now: PortNow) -> str:
    speed = f"{round(now.speed_gbps * 1000)}Mb/s" if now.oper_up else "Unknown!"
    return (
        f"Settings for {now.nic.netdev}:\n"
        "\tSupported ports: [ FIBRE ]\n"
        "\tSupported link modes:   400000baseDR4/Full\n"
        "\tSupported pause frame use: Symmetric\n"
        "\tSupports auto-negotiation: Yes\n"
        "\tSupported FEC modes: None\t RS\n"
        "\tAdvertised link modes:  400000baseDR4/Full\n"
        "\tAdvertised FEC modes: RS\n"
        f"\tSpeed: {speed}\n"
        f"\tDuplex: {'Full' if now.oper_up else 'Unknown! (255)'}\n"
        "\tAuto-negotiation: on\n"
        "\tPort: FIBRE\n"
        "\tPHYAD: 0\n"
        "\tTransceiver: internal\n"
        "\tSupports Wake-on: d\n"
        "\tWake-on: d\n"
        "\tCurrent message level: 0x00000004 (4)\n"
        "\t\t\t       link\n"
        f"\tLink detected: {'yes' if now.oper_up else 'no'}\n"
    )


def ethtool_driver_text(now: PortNow, fw: str) -> str:
    bus = f"0000:{0x17 + now.nic.ifindex:02x}:00.0"
    return (
        "driver: mlx5_core\nversion: 6.8.0-45-generic\n"
        f"firmware-version: {fw} ({BOARD_ID})\nexpansion-rom-version: \n"
        f"bus-info: {bus}\nsupports-statistics: yes\nsupports-test: yes\n"
        "supports-eeprom-access: no\nsupports-register-dump: no\nsupports-priv-flags: yes\n"
    )


# --- sysfs ----------------------------------------------------------------------


PCIE_SPEED_GTS, PCIE_WIDTH_LANES = 32.0, 16  # a 400G NIC in a Gen5 x16 slot
PCIE_CODING = 128 / 130  # Gen3-5 line coding


def pcie_trained(fabric: Fabric, host: str) -> tuple[float, int]:
    """The NIC's trained PCIe link (GT/s, lanes): Gen5 x16, unless the model caps the
    host's PCIe bandwidth (``degraded_nic`` ``pcie_gbps``): then the widest width that
    fits the cap, as a link that trained down in width (or a card in a narrower slot)."""
    traffic = fabric.traffic
    cap = traffic.pcie_gbps.get(host)
    width = PCIE_WIDTH_LANES
    while cap is not None and width > 1 and PCIE_SPEED_GTS * width * PCIE_CODING > cap * 1.05:
        width //= 2
    return PCIE_SPEED_GTS, width


def pci_address(nic: NicPort) -> str:
    """A stable PCI address per NIC port (two ports of one card: functions 0 and 1)."""
    return f"0000:{0x3B + nic.ifindex // 2:02x}:00.{nic.ifindex % 2}"


def sysfs_files(
    ports: list[PortNow],
    counters: Mapping[str, dict[str, int]],
    pcie: tuple[float, int] = (PCIE_SPEED_GTS, PCIE_WIDTH_LANES),
) -> dict[str, str | None]:
    """Path -> content of the host's sysfs files; None reads as EINVAL (an empty GID slot).

    PCIe link files as the kernel prints them (``pci_speed_string()``, Linux 5.4+).
    """
    files: dict[str, str | None] = {}
    for p in ports:
        nic = p.nic
        net = f"/sys/class/net/{nic.netdev}"
        dev = f"{net}/device"
        files |= {
            f"{dev}/current_link_speed": f"{pcie[0]:.1f} GT/s PCIe\n",
            f"{dev}/current_link_width": f"{pcie[1]}\n",
            f"{dev}/max_link_speed": f"{PCIE_SPEED_GTS:.1f} GT/s PCIe\n",
            f"{dev}/max_link_width": f"{PCIE_WIDTH_LANES}\n",
            f"{dev}/uevent": (
                "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_ID=15B3:1021\n"
                f"PCI_SUBSYS_ID=15B3:0023\nPCI_SLOT_NAME={pci_address(nic)}\n"
                "MODALIAS=pci:v000015B3d00001021sv000015B3sd00000023bc02sc00i00\n"
            ),
        }
        files |= {
            f"{net}/speed": f"{round(p.speed_gbps * 1000) if p.oper_up else -1}\n",
            f"{net}/mtu": f"{p.mtu_bytes}\n",
            f"{net}/operstate": "up\n" if p.oper_up else "down\n",
            f"{net}/carrier": "1\n" if p.oper_up else "0\n",
            f"{net}/address": f"{nic.mac}\n",
            f"{net}/ifindex": f"{nic.ifindex}\n",
        }
        ib = f"/sys/class/infiniband/{nic.rdma}/ports/{nic.ib_port}"
        state, phys = _states(p)
        state_num = {"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN"}[state]
        phys_num = {"LINK_UP": "5: LinkUp", "POLLING": "2: Polling", "DISABLED": "3: Disabled"}
        lane = p.speed_gbps / 4 if p.oper_up else 0
        files |= {
            f"{ib}/state": f"{state_num}\n",
            f"{ib}/phys_state": f"{phys_num[phys]}\n",
            f"{ib}/rate": f"{round(p.speed_gbps)} Gb/sec (4X {_ndr(lane)})\n",
            f"{ib}/link_layer": "Ethernet\n",
        }
        table = {i: (gid, kind) for i, gid, kind in gid_table(nic)}
        for i in range(GID_TABLE_LEN):
            gid, kind = table.get(i, (None, None))
            files[f"{ib}/gids/{i}"] = (gid.exploded if gid else "0000:" * 7 + "0000") + "\n"
            files[f"{ib}/gid_attrs/types/{i}"] = (
                f"{'IB/RoCE v1' if kind == 'RoCE v1' else kind}\n" if kind else None
            )
            files[f"{ib}/gid_attrs/ndevs/{i}"] = f"{nic.netdev}\n" if kind else None
        hw = dict(counters.get(nic.rdma, {}))
        hw["lifespan"] = 10
        for name in sorted(hw):
            files[f"{ib}/hw_counters/{name}"] = f"{hw[name]}\n"
    return files


def _ndr(lane_gbps: float) -> str:
    return {100.0: "NDR", 50.0: "HDR", 25.0: "EDR"}.get(lane_gbps, "")


def stable_int(*parts: object, modulo: int = 1 << 24) -> int:
    """A value that looks random but is the same on every run (QPNs, PIDs)."""
    return zlib.crc32("/".join(map(str, parts)).encode()) % modulo
