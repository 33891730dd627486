"""The kernel lab's plan and configuration text, and the frr parsers on real captures.

No root needed: the samples were captured from FRR 8.4.4, lldpd 1.0.16 and iproute2 6.1
(Debian 12) in a kernel lab on this project's CI image.
"""

from __future__ import annotations

import json

import pytest
from kernel_helpers import KERNEL_TESTBED, ROOT, SAMPLES

from labtest.drivers.frr import parsers as p
from labtest.emulation.kernel import plan as pl
from labtest.emulation.kernel.prereq import INSTALL, PROGRAMS
from labtest.errors import ParseError
from labtest.testbed import load_testbed


def _plan() -> pl.LabPlan:
    return pl.make_plan(load_testbed(KERNEL_TESTBED), "lt-kT-")


def test_plan_addresses_every_link_with_a_31_from_the_benchmark_range() -> None:
    plan = _plan()
    seen = set()
    for v in plan.veths:
        a, b = v.a_address.split("/")[0], v.b_address.split("/")[0]
        assert v.a_address.endswith("/31") and a.startswith("198.18.")
        assert int(b.rsplit(".", 1)[1]) == int(a.rsplit(".", 1)[1]) + 1
        seen |= {a, b}
    assert len(seen) == 2 * len(plan.veths) == 16


def test_plan_peers_switches_over_their_links_with_distinct_private_asns() -> None:
    plan = _plan()
    leaf1 = plan.nodes["leaf1"]
    asns = {n.asn for n in plan.nodes.values() if n.kind == "switch"}
    assert len(asns) == 4 and all(64512 <= a <= 65534 for a in asns)
    assert sorted(port for _, _, port in leaf1.neighbours) == ["Ethernet0", "Ethernet4"]
    assert {asn for _, asn, _ in leaf1.neighbours} == {
        plan.nodes["spine1"].asn,
        plan.nodes["spine2"].asn,
    }
    assert plan.nodes["host1"].gateway == plan.nodes["leaf1"].ports["Ethernet16"].split("/")[0]
    assert plan.nodes["tg1"].kind == "tg" and set(plan.nodes["tg1"].ports) == {"p1", "p2"}


def test_frr_configs_carry_the_testbeds_bfd_timers_and_ecmp() -> None:
    plan = pl.make_plan(
        load_testbed(KERNEL_TESTBED),
        "lt-kT-",
        {"detect_multiplier": 5, "receive_interval_ms": 300, "transmit_interval_ms": 200},
    )
    conf = pl.frr_configs(plan.nodes["leaf1"], plan.bfd)
    assert "  detect-multiplier 5\n  receive-interval 300\n  transmit-interval 200" in conf["bfdd"]
    assert "maximum-paths 4" in conf["bgpd"] and "multipath-relax" in conf["bgpd"]
    assert conf["bgpd"].count("bfd profile fast") == 2
    assert "no zebra nexthop kernel enable" in conf["zebra"]


def test_unsupported_devices_are_named_and_long_port_names_refused() -> None:
    tb = load_testbed(KERNEL_TESTBED)
    dev = tb.devices["spine1"].model_copy(update={"driver": "sonic"})
    plan = pl.make_plan(tb.model_copy(update={"devices": {**tb.devices, "spine1": dev}}), "x-")
    assert "sonic" in plan.unsupported["spine1"]
    assert not any("spine1" in (v.a_device, v.b_device) for v in plan.veths)
    link = tb.links[0].model_copy(update={"a": "leaf1:Ethernet0-too-long-name"})
    with pytest.raises(pl.PlanError, match="longer than 15"):
        pl.make_plan(tb.model_copy(update={"links": [link, *tb.links[1:]]}), "x-")


def test_install_line_names_every_debian_package() -> None:
    for pkg in ("frr", "lldpd", "snmpd", "snmp", "openssh-server", "iproute2", "nftables"):
        assert pkg in PROGRAMS.values() and f" {pkg}" in INSTALL


# --- parsers on captured output ------------------------------------------------------------


def test_links_with_speeds() -> None:
    text = (SAMPLES / "ip_link_detail.json").read_text() + "\n--- speed\n"
    text += (SAMPLES / "sys_speed.txt").read_text()
    links = p.parse_links(text)
    assert sorted(links) == ["Ethernet0", "Ethernet16", "Ethernet32", "Ethernet4"]
    e0 = links["Ethernet0"]
    assert (e0.admin_up, e0.oper_up, e0.speed_gbps, e0.type, e0.fec) == (
        True,
        True,
        10.0,
        "veth",
        None,
    )


def test_link_stats() -> None:
    stats = p.parse_link_stats((SAMPLES / "ip_link_stats.json").read_text())
    e0 = stats["Ethernet0"]
    assert e0.rx_packets is not None and e0.rx_packets > 0 and e0.tx_octets is not None
    assert "lo" not in stats
    assert e0.link_status_changes is None  # one -s prints no carrier_changes: unknown, not 0


def test_link_stats_with_two_s_count_carrier_changes() -> None:
    # captured here: a veth pair in a namespace, the peer set down and up once
    stats = p.parse_link_stats((SAMPLES / "ip_link_stats_ss_flapped.json").read_text())
    assert stats["Ethernet0"].link_status_changes == 4 and "lo" not in stats


def test_link_stats_without_s_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="stats64"):
        p.parse_link_stats((SAMPLES / "ip_link_detail.json").read_text(), device="leaf1")


def test_lldp_neighbours_and_the_newest_row_after_a_recable() -> None:
    heard = p.parse_lldp_neighbors((SAMPLES / "lldp_neighbors.json").read_text())
    assert (heard["Ethernet0"].remote_system, heard["Ethernet0"].remote_port) == (
        "spine1",
        "Ethernet0",
    )
    assert heard["Ethernet32"].remote_system == "tg1"
    recabled = p.parse_lldp_neighbors((SAMPLES / "lldp_neighbors_recabled.json").read_text())
    e0 = recabled["Ethernet0"]
    assert (e0.remote_system, e0.remote_port) == ("spine1", "Ethernet4")  # the newer row
    assert e0.older_neighbours == ("spine1:Ethernet0",)


def test_bgp_and_bfd() -> None:
    bgp = p.parse_bgp_summary((SAMPLES / "bgp_summary.json").read_text())
    assert {x.state for x in bgp.values()} == {"Established"} and len(bgp) == 2
    bfd = p.parse_bfd_peers((SAMPLES / "bfd_peers.json").read_text())
    assert {(x.status, x.detect_multiplier, x.receive_interval_ms) for x in bfd.values()} == {
        ("up", 3, 100)
    }


def _with_addresses(sample: str) -> str:
    addrs = (SAMPLES / "ip_addr4.json").read_text()  # leaf: .0/31 Ethernet0, .2/31 Ethernet4
    return f"{(SAMPLES / sample).read_text()}\n{p.ADDRESSES_MARK}\n{addrs}"


def test_bgp_sessions_know_their_local_port_from_the_connected_subnets() -> None:
    bgp = p.parse_bgp_sessions(_with_addresses("bgp_summary.json"))
    seen = {ip: (s.local_port, s.state, s.prefixes_received, s.uptime_s) for ip, s in bgp.items()}
    assert seen == {
        "198.18.0.1": ("Ethernet0", "Established", 5, 2.0),
        "198.18.0.3": ("Ethernet4", "Established", 5, 2.0),
    }


def test_bfd_sessions_and_the_rfc5880_detection_time() -> None:
    bfd = p.parse_bfd_sessions(_with_addresses("bfd_peers.json"))
    assert {ip: (s.local_port, s.up, s.detection_time_ms) for ip, s in bfd.items()} == {
        "198.18.0.1": ("Ethernet0", True, 300.0),
        "198.18.0.3": ("Ethernet4", True, 300.0),
    }
    # the peer's multiplier and the slower of our Rx and its Tx set our detection time
    slow = (SAMPLES / "bfd_peers.json").read_text().replace(
        '"remote-transmit-interval":100', '"remote-transmit-interval":300'
    ).replace('"remote-detect-multiplier":3', '"remote-detect-multiplier":10')
    text = f"{slow}\n{p.ADDRESSES_MARK}\n{(SAMPLES / 'ip_addr4.json').read_text()}"
    assert {s.detection_time_ms for s in p.parse_bfd_sessions(text).values()} == {3000.0}


def test_sessions_without_the_addresses_are_a_parse_error() -> None:
    with pytest.raises(ParseError, match="addr"):
        p.parse_bgp_sessions((SAMPLES / "bgp_summary.json").read_text())


def test_version() -> None:
    facts = p.parse_version((SAMPLES / "show_version.txt").read_text() + "hostname leaf1\n")
    assert (facts.vendor, facts.os_version, facts.hostname) == ("FRRouting", "8.4.4", "leaf1")
    with pytest.raises(ParseError):
        p.parse_version("% Unknown command", device="leaf1")


@pytest.mark.parametrize(
    "text", ["", "{", "[]", '{"lldp": {"interface": {"Ethernet0": {"chassis": {}}}}}']
)
def test_garbled_lldp_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        p.parse_lldp_neighbors(text, device="leaf1")


def test_restore_undoes_a_shutdown_and_an_added_neighbour() -> None:
    saved = (SAMPLES / "running_config.txt").read_text()
    current = saved.replace("!\nrouter bgp", "interface Ethernet0\n shutdown\nexit\n!\nrouter bgp")
    current = current.replace(
        " timers bgp 3 9\n", " timers bgp 3 9\n neighbor 198.18.0.99 remote-as 65999\n"
    )
    undo = p.undo_commands(saved, current)
    assert undo[:3] == ["interface Ethernet0", "no shutdown", "exit"]
    bgp = undo.index(next(x for x in undo if x.startswith("router bgp")))
    assert undo[bgp + 1] == "no neighbor 198.18.0.99 remote-as 65999"
    assert p.undo_commands(saved, saved) == []


def test_without_root_or_packages_the_lab_refuses_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from labtest.emulation.kernel import KernelLab, KernelLabUnavailable, prereq

    monkeypatch.setattr(prereq.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(
        prereq, "_present", lambda program: "frr" not in program and "lldp" not in program
    )
    reason = prereq.why_not()
    assert reason is not None and "needs root" in reason
    assert "missing Debian packages: frr lldpd (apt-get install" in reason
    with pytest.raises(KernelLabUnavailable, match="frr lldpd"):
        KernelLab(load_testbed(KERNEL_TESTBED)).start()


# --- BGP unnumbered (emulation.bgp: unnumbered) ---------------------------------------------


def test_unnumbered_fabric_links_have_no_ipv4_and_peer_on_the_interface() -> None:
    plan = pl.make_plan(load_testbed(KERNEL_TESTBED), "lt-kT-", unnumbered=True)
    fabric = [v for v in plan.veths if v.a_device.startswith("leaf")
              and v.b_device.startswith("spine")]
    assert fabric and all(v.a_address == v.b_address == "" for v in fabric)
    host = next(v for v in plan.veths if v.a_device == "host1")  # hosts and TG stay numbered
    assert host.a_address.endswith("/31") and host.b_address.endswith("/31")
    leaf1 = plan.nodes["leaf1"]
    assert [(peer, port) for peer, _asn, port in leaf1.neighbours] == [
        ("Ethernet0", "Ethernet0"), ("Ethernet4", "Ethernet4")]
    bgpd = pl.frr_configs(leaf1, plan.bfd)["bgpd"]
    assert " neighbor Ethernet0 interface remote-as external" in bgpd.splitlines()
    assert " neighbor Ethernet4 bfd profile fast" in bgpd.splitlines()
    assert "remote-as 651" not in bgpd  # no numbered session left


def _unnumbered(sample: str) -> str:
    addrs = (SAMPLES / "ip_addr4_unnumbered.json").read_text()  # fabric ports: no IPv4
    return f"{(SAMPLES / sample).read_text()}\n{p.ADDRESSES_MARK}\n{addrs}"


def test_an_unnumbered_peer_is_its_interface() -> None:
    # captured from leaf1 of an unnumbered kernel lab: BGP keys the peers by interface,
    # BFD runs on IPv6 link-local addresses and names the interface
    bgp = p.parse_bgp_sessions(_unnumbered("bgp_summary_unnumbered.json"))
    assert {k: (s.local_port, s.state, s.peer_hostname) for k, s in bgp.items()} == {
        "Ethernet0": ("Ethernet0", "Established", "spine1"),
        "Ethernet4": ("Ethernet4", "Established", "spine2"),
    }
    bfd = p.parse_bfd_sessions(_unnumbered("bfd_peers_unnumbered.json"))
    assert sorted((s.local_port, s.up, s.detection_time_ms) for s in bfd.values()) == [
        ("Ethernet0", True, 300.0), ("Ethernet4", True, 300.0)]
    assert all(peer.startswith("fe80::") for peer in bfd)


def test_a_peer_key_that_is_neither_an_address_nor_an_interface_peer_names_no_port() -> None:
    # a peer-group or hostname key without FRR's idType "interface": no port is guessed
    doc = json.loads((SAMPLES / "bgp_summary_unnumbered.json").read_text())
    peers = doc["ipv4Unicast"]["peers"]
    peers["SPINES"] = {**peers.pop("Ethernet4"), "idType": "peerGroup"}
    addrs = (SAMPLES / "ip_addr4_unnumbered.json").read_text()
    bgp = p.parse_bgp_sessions(f"{json.dumps(doc)}\n{p.ADDRESSES_MARK}\n{addrs}")
    assert bgp["Ethernet0"].local_port == "Ethernet0"
    assert bgp["SPINES"].local_port is None


def test_the_kernel_straggler_is_slower_than_the_paths_load_it_must_fail() -> None:
    """The default straggler rate and the kernel lab's paths load are set in two places; a
    rate near what the suite offers per path would be a straggler nobody can catch: it
    must carry at most half of what must be delivered."""
    import yaml

    from labtest.emulation.kernel.faults import STRAGGLER_RATE_MBIT
    from labtest.measure import load_limits

    settings = yaml.safe_load((KERNEL_TESTBED.parent / "suite-settings.yaml").read_text())
    paths = settings["paths"]
    offered_mbit = paths["load"]["pps"] * paths["probe"]["frame_size_bytes"] * 8 / 1e6
    floor = load_limits(ROOT / "suites/limits/acceptance-400g.yaml").get(
        "paths.delivered_ratio").low
    assert floor is not None
    assert floor * offered_mbit / 2 > STRAGGLER_RATE_MBIT, (STRAGGLER_RATE_MBIT, offered_mbit)


@pytest.mark.parametrize(("fraction", "rule"), [
    (0.55, "jhash k mod 1000 seed 0x2f5c < 550"),
    (1.0, ""),  # the whole: no condition (nft refuses "< 1000" on a 0-999 value)
    (0.9996, ""),
    (0.0004, "jhash k mod 1000 seed 0x2f5c < 0"),
])
def test_a_dropped_share_is_an_nft_condition_nft_accepts(fraction: float, rule: str) -> None:
    """A kernel matrix draw of flow_fraction 1.0 left the lab unstarted (Value 1000 exceeds
    valid range 0-999): every share of the hash space, the whole included, is a rule."""
    from labtest.emulation.kernel.faults import _share

    assert _share("jhash k", fraction, seed=0x2F5C) == rule
    assert _share("numgen random", 1.0) == ""
