"""ip -j link, rdma link / statistic, show_gids, show_counters and ibv_devinfo parsers."""

from __future__ import annotations

import pytest

from labtest.drivers.linux.parsers.iproute import parse_ip_link
from labtest.drivers.linux.parsers.rdma import (
    parse_ibv_devinfo,
    parse_rdma_link,
    parse_rdma_statistic,
    parse_show_counters,
    parse_show_gids,
)
from labtest.errors import ParseError
from labtest.parsing import lookup


def _by(items, attr, value):
    return next(i for i in items if getattr(i, attr) == value)


# --- ip -j link ------------------------------------------------------------------


def test_ip_json_addr_superset(sample):
    links = parse_ip_link(sample("ip_link/netplan_status_fixture_ip_d_j_addr.txt"))
    assert [x.ifname for x in links] == ["lo", "enp0s31f6", "wlan0", "wg0", "wwan0", "tun0"]
    eth = _by(links, "ifname", "enp0s31f6")
    assert (eth.ifindex, eth.mtu_bytes, eth.operstate, eth.mac) == (
        2,
        1500,
        "UP",
        "54:e1:ad:5f:24:b4",
    )
    assert eth.lower_up
    wwan = _by(links, "ifname", "wwan0")
    assert wwan.operstate == "DOWN" and not wwan.lower_up
    assert _by(links, "ifname", "wg0").mac is None
    assert _by(links, "ifname", "tun0").link_type == "sit"


def test_ip_json_after_a_shell_prompt(sample):
    links = parse_ip_link(sample("ip_link/netdev_ip_s_s_j_link_veth.txt"))
    assert [(x.ifname, x.mtu_bytes, x.operstate) for x in links] == [
        ("lo", 65536, "UNKNOWN"),
        ("veth2", 1500, "UP"),
    ]
    assert links[1].mac == "8e:c0:a5:7d:87:ad"
    # the second -s prints each netdev's carrier changes; one -s (or none) does not
    assert [x.carrier_changes for x in links] == [0, 2]


def test_carrier_changes_absent_is_unknown_and_garbled_is_refused(sample):
    plain = parse_ip_link(sample("ip_link/netdev_ip_s_s_j_link_veth.txt").replace(
        ',"carrier_changes":2', ""))
    assert plain[1].carrier_changes is None  # not printed: unknown, never 0
    with pytest.raises(ParseError, match="carrier_changes"):
        parse_ip_link(sample("ip_link/netdev_ip_s_s_j_link_veth.txt").replace(
            '"carrier_changes":2', '"carrier_changes":"2"'))


def test_ip_json_ipoib_ports(sample):
    links = parse_ip_link(sample("ip_link/gcm_ib_interfaces.txt"))
    assert len(links) == 8
    assert all(x.mtu_bytes == 2044 and x.link_type == "infiniband" for x in links)
    last = links[-1]
    assert (last.ifname, last.ifindex) == ("ibp204s0", 14)
    assert last.mac == "00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:74:7a:3e"


@pytest.mark.parametrize(
    "text, message",
    [
        ('Device "ens9" does not exist.\n', "no JSON array"),
        ('[{"ifindex":1,"ifname":"lo"', "not valid JSON"),
        ('[{"ifindex":1}]', "not a list of interfaces"),
    ],
)
def test_ip_garbage_raises(text, message):
    with pytest.raises(ParseError, match=message) as info:
        parse_ip_link(text)
    assert info.value.raw == text


# --- rdma link -------------------------------------------------------------------


def test_rdma_link_old_iproute2_format(sample):
    links = parse_rdma_link(sample("rdma/rdma_link_old_format_i40iw.txt"))
    assert [(x.name, x.port, x.state) for x in links] == [
        ("i40iw0", 1, "DOWN"),
        ("i40iw1", 1, "ACTIVE"),
        ("mlx5_0", 1, "DOWN"),
        ("mlx5_1", 1, "ACTIVE"),
    ]
    assert links[0].netdev is None and links[0].physical_state == "NOP"
    assert (links[3].physical_state, links[3].netdev) == ("LINK_UP", "ens803f1")


def test_rdma_link_aligned_columns(sample):
    links = parse_rdma_link(sample("rdma/rdma_link_dgx_spark_gx10.txt"))
    assert [(x.name, x.netdev) for x in links] == [
        ("rocep1s0f0", "enp1s0f0np0"),
        ("rocep1s0f1", "enp1s0f1np1"),
        ("roceP2p1s0f0", "enP2p1s0f0np0"),
        ("roceP2p1s0f1", "enP2p1s0f1np1"),
    ]


def test_rdma_link_with_elision_line(sample):
    links = parse_rdma_link(sample("rdma/rdma_link_spiderpool_cx5.txt"))
    assert [(x.name, x.netdev, x.state) for x in links] == [
        ("mlx5_0", "ens6f0np0", "ACTIVE"),
        ("mlx5_1", "ens6f1np1", "ACTIVE"),
    ]


# --- rdma statistic / show_counters ------------------------------------------------


def test_rdma_statistic_four_ports(sample):
    stats = parse_rdma_statistic(sample("rdma/rdma_stat_show_four_links.txt"))
    assert [(s.device, s.port) for s in stats] == [(f"mlx5_{n}", 1) for n in range(4)]
    first = stats[0]
    assert (first.out_of_buffer, first["resp_cqe_error"], first["req_cqe_error"]) == (135, 1009, 22)
    assert first["req_cqe_flush_error"] == 11 and len(first) == 29
    assert (first.np_cnp_sent, first.rp_cnp_handled, first.np_ecn_marked_roce_packets) == (0, 0, 0)
    assert "rx_dct_connect" in first and dict(first)["rx_dct_connect"] == 0


def test_rdma_statistic_wrapped_line(sample):
    (stat,) = parse_rdma_statistic(sample("rdma/rdma_stat_show_link_patch_wrapped.txt"))
    assert (stat.device, stat["rx_write_requests"], stat["rx_read_requests"]) == ("mlx5_2", 8, 4)
    assert len(stat) == 23
    assert stat.roce_adp_retrans is None  # not exposed by this firmware/kernel


def test_rdma_statistic_optional_counter(sample):
    (stat,) = parse_rdma_statistic(sample("rdma/rdma_stat_show_optional_set.txt"))
    assert stat.device == "rocep8s0f0" and stat["cc_rx_ce_pkts"] == 0
    assert stat.roce_adp_retrans == 0 and "Optional-set:" not in stat


def test_rdma_statistic_pretty_format(sample):
    (stat,) = parse_rdma_statistic(sample("rdma/rdma_stat_show_pretty_patch.txt"))
    assert (stat.device, stat.port, len(stat)) == ("mlx5_0", 1, 21)
    assert stat.np_cnp_sent == 0 and stat.out_of_sequence is None


def test_show_counters_with_cnp_and_ecn(sample):
    c = parse_show_counters(sample("rdma/show_counters_mlx5_bond_cnp.txt"))
    assert (c.port, c.np_cnp_sent, c.np_ecn_marked_roce_packets) == (1, 1052612505, 21278189006)
    assert (c.out_of_sequence, c.rp_cnp_handled, c["rx_write_requests"]) == (1811101, 0, 2402134794)
    assert c["resp_cqe_error"] == 3293504


@pytest.mark.parametrize(
    "fn, text",
    [
        (parse_rdma_link, "Error: RDMA subsystem is not available\n"),
        (parse_rdma_statistic, "link mlx5_0/1\n"),
        (parse_show_counters, "Valid command is: show_rdma_counters <rdma_device_name>\n"),
        (parse_show_gids, "DEV\tPORT\tINDEX\tGID\nn_gids_found=0\n"),
        (parse_ibv_devinfo, "No IB devices found\n"),
    ],
)
def test_rdma_garbage_raises(fn, text):
    with pytest.raises(ParseError) as info:
        fn(text)
    assert info.value.raw == text


# --- GIDs ---------------------------------------------------------------------------


def test_show_gids_bond_picks_roce_v2_ipv4(sample):
    (dev,) = parse_show_gids(sample("rdma/show_gids_mlx5_bond.txt"))
    assert (dev.name, dev.port, dev.netdev, len(dev.gids)) == ("mlx5_bond_0", 1, "bond0", 4)
    gid = dev.roce_v2_gid()
    assert (gid.index, gid.ipv4, gid.type) == (3, "10.96.83.26", "RoCE v2")
    assert dev.gids[0].type == "RoCE v1" and dev.gids[0].ipv4 is None


def test_show_gids_in_a_pod(sample):
    (dev,) = parse_show_gids(sample("rdma/show_gids_openshift_net1.txt"))
    assert (dev.name, dev.netdev, dev.roce_v2_gid().index, dev.roce_v2_gid().ipv4) == (
        "mlx5_3",
        "net1",
        3,
        "192.168.10.2",
    )


def test_show_gids_ib_port_without_netdev(sample):
    devs = parse_show_gids(sample("rdma/show_gids_ib_port_spaces.txt"))
    assert [(d.name, d.netdev, len(d.gids)) for d in devs] == [
        ("mlx5_0", "ens11f0", 2),
        ("mlx5_1", None, 1),
    ]
    assert devs[0].roce_v2_gid() is None  # link-local only: not routable
    assert devs[0].roce_v2_gid(ipv4=False).index == 1


def test_ibv_devinfo_verbose_rxe(sample):
    (port,) = parse_ibv_devinfo(sample("rdma/ibv_devinfo_v_rxe0.txt"))
    assert (port.name, port.port, port.state, port.physical_state) == (
        "rxe0",
        1,
        "PORT_ACTIVE",
        "LINK_UP",
    )
    assert (port.link_layer, port.active_mtu_bytes, port.active_speed_gbps, port.active_width) == (
        "Ethernet",
        1024,
        2.5,
        "1X",
    )
    assert [(g.index, g.type) for g in port.gids] == [
        (0, "RoCE v2"),
        (1, "RoCE v2"),
        (2, "RoCE v2"),
    ]
    assert port.roce_v2_gid().ipv4 == "10.0.0.1"


def test_ibv_devinfo_mlx5_bond_maps_both_gid_spellings(sample):
    (port,) = parse_ibv_devinfo(sample("rdma/ibv_devinfo_vv_mlx5_bond.txt"))
    assert (port.fw_version, port.active_speed_gbps, port.active_width) == (
        "22.36.1010",
        50.0,
        "2X",
    )
    assert port.gids[2].ipv4 == "27.105.179.3" and port.gids[2].type == "RoCE v1"  # long form
    assert port.roce_v2_gid().index == 3 and port.roce_v2_gid().gid == "::ffff:27.105.179.3"


def test_ibv_devinfo_two_ports(sample):
    ports = parse_ibv_devinfo(sample("rdma/ibv_devinfo_mlx4_two_ports.txt"))
    assert [(p.port, p.state, p.link_layer, p.active_mtu_bytes) for p in ports] == [
        (1, "PORT_ACTIVE", "InfiniBand", 4096),
        (2, "PORT_DOWN", "Ethernet", 1024),
    ]
    assert all(p.fw_version == "2.42.5000" and p.gids == [] for p in ports)


def test_lookup_as_typed():
    assert lookup("linux", "ip -j link show dev ens1f0np0").__wrapped__ is parse_ip_link
    assert lookup("linux", "rdma statistic show link mlx5_0/1").__wrapped__ is parse_rdma_statistic
    assert lookup("linux", "ibv_devinfo -v -d mlx5_0").__wrapped__ is parse_ibv_devinfo
    assert lookup("linux", "show_gids mlx5_0").__wrapped__ is parse_show_gids
