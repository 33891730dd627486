"""What the fault-detection matrix injects into the emulated lab, and whom it blames.

``DOMAINS``: per fault kind of the catalogue, the valid domain the matrix draws from
(``labtest.matrix.draws``): which targets (classes read from the testbed: switch ports of
every vendor, host links, leaf-spine links, devices) and which parameter ranges the
catching suite's limit can see, each bound with its reason. Whom a failure may blame is
derived from the drawn target (``labtest.matrix.draws.blame``), not written here.

``CI_PLAN``: the draws CI runs (a fixed seed: about one draw per kind, forced extras for
the placements the issues name, two combined rows, healthy rows) — under ~35 min on two
cores. More: ``python -m labtest.matrix --random --seed N --draws K``.

``CASES``: the previous matrix's fixed placements (one per kind), kept for
``python -m labtest.matrix --fixed`` and as known-good injections.
"""

from __future__ import annotations

from typing import Any

from labtest.emulation.model.faults import load_catalogue
from labtest.matrix import Case
from labtest.matrix.draws import Choice, Domain, FloatRange, IntRange, Placement, Plan

CATALOGUE = load_catalogue()


def case(kind: str, target: str, culprits: tuple[str, ...], note: str,
         params: dict[str, Any] | None = None, **kw: Any) -> Case:
    """A case whose catching suite is the catalogue's ``caught_by`` for ``kind``."""
    fault = {"kind": kind, "target": target, "params": params or {}}
    return Case(name=kind, faults=(fault,), catches=(CATALOGUE[kind].caught_by,),
                culprits=culprits, note=note, **kw)


LEAF1_SPINE1 = "leaf1:Ethernet0--spine1:Ethernet0"
LEAF2_SPINE1 = "leaf2:Ethernet0--spine1:Ethernet8"
LEAF4_SPINE1 = "leaf4:Ethernet0--spine1:Ethernet24"
#: optics faults need virtual time to show (laser drift, module heating), as in
#: tests/suites/conftest.py's optic_faults lab
OPTICS_TIME_SCALE = 10.0

_CASES = [
    # --- link ------------------------------------------------------------------------------
    case("dirty_connector", LEAF1_SPINE1, ("spine1:Ethernet0", "leaf1:Ethernet0", LEAF1_SPINE1),
         "3 dB at leaf1's connector: spine1:Ethernet0's Rx falls, its PRBS and pre-FEC BER fail",
         params={"loss_db": 3}),
    case("marginal_lane", "leaf2:Ethernet0", ("leaf2:Ethernet0", LEAF2_SPINE1),
         "lane 1 of leaf2:Ethernet0 keeps 1 dB of margin (BER ~6.5e-6): PRBS fails on that lane",
         params={"lane": 1, "margin_db": 1.0}),
    case("flapping_link", LEAF4_SPINE1, ("leaf4:Ethernet0", "spine1:Ethernet24", LEAF4_SPINE1),
         "1 s of darkness every 10 s: the link-stability watch sees it go down. Not run "
         "beside it: collective (the dark second kills the NCCL job; nccl-tests exits with a "
         "network error, which the collective suite reports as broken without naming the "
         "link: a known gap). The transceiver suite may fail too, at the flapping port: a "
         "DOM read in the dark second spoils its stability watch there",
         params={"period_s": 10, "down_s": 1}, also=("transceiver",), not_run=("collective",)),
    case("unreachable_device", "leaf3", ("leaf3",),
         "leaf3's management plane is dead: every test that asks it is broken, none failed",
         unreachable="leaf3",
         # short SSH timeouts keep the run quick; the emulator replaces port and password
         devices={"leaf3": {"address": "127.0.0.1",
                            "ssh": {"username": "admin", "password": "replaced-by-the-emulator",
                                    "timeout_s": 2, "command_timeout_s": 2}}},
         pytest_args=("--no-inventory",)),
    # --- transceiver -----------------------------------------------------------------------
    case("failing_laser", "host1:eth0", ("host1:eth0", "leaf1:Ethernet16"),
         "10 dB/h of laser efficiency lost: the bias climbs within the DOM stability watch",
         params={"drift_db_per_hour": 10}, time_scale=OPTICS_TIME_SCALE),
    case("hot_module", "leaf2:Ethernet8", ("leaf2:Ethernet8",),
         "30 C hotter: the temperature climbs (stability) or crosses the module's warning",
         params={"delta_c": 30}, time_scale=OPTICS_TIME_SCALE),
    case("unapproved_optic", "leaf4:Ethernet0", ("leaf4:Ethernet0",),
         "a generic part number that is not on the approved list"),
    case("firmware_mismatch", "spine1:Ethernet8", ("spine1:Ethernet8",),
         "the module reports firmware 0.9.7 instead of the fleet's",
         params={"version": "0.9.7"}),
    # --- cabling ---------------------------------------------------------------------------
    case("miswired", "host3:eth0--leaf2:Ethernet16",
         ("leaf2:Ethernet16", "leaf2:Ethernet24", "host3:eth0--leaf2:Ethernet16",
          "host4:eth0--leaf2:Ethernet24"),
         "host3 and host4 swapped on leaf2: LLDP hears the other host on both ports",
         params={"other": "host4:eth0--leaf2:Ethernet24"}),
    # --- roce ------------------------------------------------------------------------------
    case("degraded_nic", "host8", ("host8",),
         "host8's NIC links at 200G: every pair with host8 misses 90% of line rate",
         params={"speed_gbps": 200}),
    case("mtu_mismatch", "host1:eth0", ("host1:eth0", "host1"),
         "host1's NIC at MTU 1500: the link's ends disagree, its RoCE MTU falls to 1024 B",
         params={"mtu": 1500}),
    # --- congestion ------------------------------------------------------------------------
    case("pfc_disabled", "leaf2", ("leaf2",),
         "leaf2 sends no PFC on priority 3: incasts into its hosts tail-drop",
         params={"priority": 3}),
    case("ecn_disabled", "leaf4", ("leaf4",),
         "leaf4 marks no ECN: incasts into its hosts see no ECN marks and no CNPs"),
    case("ecn_thresholds", "leaf1", ("leaf1",),
         "leaf1 marks ECN only from 8 MB to 32 MB: its incast queues stand deep and the "
         "latency flow's p99 under load inflates",
         params={"kmin_kb": 8000, "kmax_kb": 32000}),
    case("shallow_buffer", "leaf1", ("leaf1",),
         "leaf1's lossless PGs pause at 200 KB, below ECN Kmin: an incast into host2 pauses "
         "the spines, and the latency flow to host1 waits behind it (LAT-1.3)",
         params={"xoff_kb": 200}),
    case("pfc_storm", "host3", ("host3", "leaf2:Ethernet16", "host3:eth0"),
         "host3's NIC pauses priority 3 without end: pause frames on an idle fabric",
         params={"priority": 3}),
    case("pfcwd_disabled", "leaf2", ("leaf2",),
         "leaf2's PFC watchdog is off: its lossless queues are not armed"),
    case("ecmp_polarisation", "", ("leaf1", "leaf2", "leaf3", "leaf4", "spine1", "spine2"),
         "every switch hashes on IPs only, with one seed: QPs of a pair share one uplink",
         params={"seed": 0}),
    # --- failover --------------------------------------------------------------------------
    case("slow_convergence", "leaf4", ("leaf4",),
         "leaf4 takes 2 s longer to reroute: the loss window of its uplink failures grows",
         params={"extra_ms": 2000}),
    # --- collective ------------------------------------------------------------------------
    case("straggler_link", "leaf1:Ethernet0", ("leaf1:Ethernet0", "spine1:Ethernet0",
                                               LEAF1_SPINE1),
         "leaf1-spine1 carries half its speed: the ring slows and the localiser names it",
         params={"rate_fraction": 0.5}),
    # --- paths: gray failures ------------------------------------------------------------
    case("lossy_link", "leaf3:Ethernet1/1--spine1:Ethernet16",
         ("leaf3:Ethernet1/1", "spine1:Ethernet16", "leaf3:Ethernet1/1--spine1:Ethernet16"),
         "leaf3-spine1 (EOS-SONiC, no TG path) loses 0.5% of its frames: PATHS-2.1 names it",
         params={"loss": 0.005}),
    case("silent_drop", "leaf2:Ethernet8--spine2:Ethernet2/1",
         ("spine2:Ethernet2/1", "leaf2:Ethernet8", "leaf2:Ethernet8--spine2:Ethernet2/1"),
         "spine2 -> leaf2 drops 1% silently: PATHS-2.1 names the sending port",
         params={"loss": 0.01, "direction": "ba"}),
    case("ecmp_blackhole", "leaf4:Ethernet8--spine2:Ethernet4/1",
         ("leaf4:Ethernet8", "spine2:Ethernet4/1", "leaf4:Ethernet8--spine2:Ethernet4/1"),
         "leaf4's member to spine2 blackholes 20% of the hash space: PATHS-2.1 names it",
         params={"flow_fraction": 0.2}),
]

#: fault kind -> case (every catalogue fault has exactly one)
CASES: dict[str, Case] = {c.name: c for c in _CASES}


# --- the random matrix: each fault kind's domain ------------------------------------------

#: the DR4/FR4 modules of the lab have 4 lanes (1-based, as CMIS and SONiC count them)
LANES = IntRange(1, 4, "400G-DR4/FR4 modules carry 4 lanes of 100G PAM4")
PORTS = ("fabric_port", "host_facing_port", "host_port")
LINKS = ("fabric_link", "host_link")
#: the traffic suites a reduced row leaves out unless its fault spoils them (``spoils``:
#: the consequences seen on full rows, which must each name the culprit)
TRAFFIC = ("roce", "congestion", "latency", "failover")
WHY_PORTS = ("any cabled optical port: switch ports of every vendor (fabric and host-facing) "
             "and host NIC ports; TG ports are the instrument's, not the unit under test's")
WHY_LINKS = ("any leaf-spine link (SONiC-SONiC, SONiC-EOS, EOS-EOS) and any host link; "
             "TG links are the instrument's")

_DOMAINS = [
    # --- link ------------------------------------------------------------------------------
    Domain(
        "dirty_connector",
        (Placement(LINKS, {
            "loss_db": FloatRange(2.0, 4.0, "healthy DR4 lanes keep 2.7-3.1 dB of Rx OMA "
                                  "margin in the model: 2 dB leaves <= 1.1 dB (pre-FEC BER >= "
                                  "3e-6, 6x link.prbs_target_ber 5e-7; also above the connector "
                                  "allowance an optical budget check uses, IEC 61753-1 grade "
                                  "C/D: <= 0.5/1.0 dB max per mated pair); 4 dB leaves "
                                  "about -1 dB (BER ~2.5e-3, past the "
                                  "KP4 FEC limit 2.4e-4): dimmer is a dark lane, not a dirty "
                                  "connector"),
            "end": Choice(("a", "b"), "either end's ferrule"),
            "direction": Choice(("tx", "rx"), "the speck dims what leaves (the far end sees "
                                "it) or what enters (this end sees it)"),
        }, WHY_LINKS),),
        catches=("link", "transceiver"), catch_any=True, also=("paths",),
        note="the link suite (PRBS, FEC) on a switch-switch link; the optical budget "
             "(DOM Tx vs Rx) on a host link, where neither PRBS nor FEC is read"),
    Domain(
        "marginal_lane",
        (Placement(("fabric_port",), {
            "lane": LANES,
            "margin_db": FloatRange(0.0, 1.2, "1.2 dB of margin is a BER of ~2.8e-6, 5.6x "
                                    "link.prbs_target_ber 5e-7: decided within the 10 s PRBS "
                                    "budget (link.prbs_max_s); 0 dB is the KP4 FEC limit 2.4e-4 "
                                    "(below it the lane is failing, not marginal)"),
        }, "a switch port's receiver on a fabric link (every vendor): LINK-1 proves the worst "
           "lane there (PRBS, BERT or FEC counters). Not host-facing ports (known gap): on a host "
           "link only the port's 4-lane pre-FEC BER is judged (LINK-3.1), which a single marginal "
           "lane leaves MARGINAL, not failed (seen: 2.3e-5 against 2.4e-5)", unseen={
            "fabric_port/nxos": "the NX-OS driver reads no PRBS and no FEC counters (no public "
                                "sample of either): a lane at its receiver cannot be judged, "
                                "the cell is not proven there (waived on the NX-OS lab)"}),),
        catches=("link",), also=("paths",)),
    Domain(
        "flapping_link",
        (Placement(LINKS, {
            "period_s": FloatRange(5.0, 20.0, "the 12 s link watch (link.watch_s, wall) spans "
                                   "120 model seconds at the lab's time_scale 10: >= 6 flaps "
                                   "at 20 s; 5 s is a link that is barely up"),
            "down_s": FloatRange(0.5, 2.0, "0.5 model s (0.05 s wall) is latched by LOS and "
                                 "the link-down counters even between oper-state samples; "
                                 "2 s is issue 23's host-link case; longer is a down link"),
        }, WHY_LINKS),),
        catches=("link",), also=("transceiver", "cabling", "collective", "paths", "routing"),
        spoils=TRAFFIC,
        note="the dark moments may spoil a DOM read, an LLDP read, the NCCL job, a TG path's "
             "delivery or a BGP/BFD session: those suites may fail too, naming the link"),
    Domain(
        "unreachable_device",
        (Placement(("switch",), {}, "any switch, either vendor: the link, transceiver and "
                   "cabling suites ask every switch; a host's dead management plane would "
                   "only show in the RoCE/collective suites, which a reduced row does not run"),),
        catches=("link",), unreachable=True, combinable=False,
        note="every suite that asks the device is broken naming it: it would hide the other "
             "fault of a combined row"),
    # --- transceiver -----------------------------------------------------------------------
    Domain(
        "failing_laser",
        (Placement(PORTS, {
            "drift_db_per_hour": FloatRange(10.0, 20.0, "at time_scale 10, 10 dB/h moved the "
                                            "bias 15% within the DOM stability watch "
                                            "(transceiver.tx_bias_change <= 10%); below ~7 dB/h "
                                            "it sits at the limit. 20 dB/h reaches the APC "
                                            "ceiling within the run: Tx and the far end's Rx "
                                            "fall too, still this port's failure"),
        }, WHY_PORTS),),
        catches=("transceiver",), also=("link",), time_scale=10.0,
        spoils=TRAFFIC),  # past the APC ceiling the far end's Rx falls: frames are lost
    Domain(
        "hot_module",
        (Placement((*PORTS, "switch"), {
            "delta_c": FloatRange(25.0, 40.0, "30 C moved the case temperature 5.0 C within "
                                  "the DOM watch (transceiver.temperature_change_c <= 3 C); "
                                  "25 C gives ~4.2 C. 40 C puts a 35-45 C module past the 70 C "
                                  "case limit (optics.temperature_c), which names it too"),
        }, WHY_PORTS + "; or a switch (every module of it)"),),
        catches=("transceiver",), time_scale=10.0),
    Domain(
        "unapproved_optic",
        (Placement(PORTS, {
            "part_number": Choice(("GEN-QDD-400G-X", "QDD-400G-DR4-S", "OPT-400G-DR4-C"),
                                  "none is on suites/transceiver/approved-optics.yaml"),
            "vendor": Choice(("Generic Optics", "FS", "Unbranded"),
                             "none is on suites/transceiver/approved-optics.yaml"),
        }, WHY_PORTS),),
        catches=("transceiver",)),
    Domain(
        "firmware_mismatch",
        (Placement(("fabric_port", "host_facing_port"), {
            "version": Choice(("0.9.7", "3.1.9", "3.2.0", "3.3.0"),
                              "a module firmware other than the qualified 3.2.1 "
                              "(approved-optics.yaml): older, newer, a patch apart"),
        }, "switch ports whose driver reads the module firmware", unseen={
            f"{cls}/eos": "EOS answers carry no module firmware (transceiver deviation "
                          "eos-no-optic-firmware): TRANSCEIVER-1.2 is not proven there"
            for cls in ("fabric_port", "host_facing_port")}),
         Placement(("host_port",), {
             "version": Choice(("0.9.7", "3.1.9", "3.3.0"),
                               "a module firmware whose major.minor differs from the "
                               "qualified 3.2.1: ethtool -m prints CMIS firmware as "
                               "major.minor (deviation ethtool-firmware-major-minor), so a "
                               "build apart cannot be seen on a host"),
         }, "host NIC ports (ethtool -m)"),
         Placement(("pair_group_switch", "switch"), {
             "version": Choice(("4.1.0", "4.2.0", "4.3.0"),
                               "a switch OS other than the fleet's 4.2.1 (testbed vars)"),
         }, "a switch's own firmware; pair_group_switch: a vendor group of two (EOS here), "
            "where a majority vote cannot decide (issue 23): only the faulty one may fail")),
        catches=("transceiver",)),
    # --- cabling ---------------------------------------------------------------------------
    Domain(
        "miswired",
        (Placement(("host_link",), {}, "two host links' switch ends swapped (on one leaf or "
                   "across leaves)"),
         Placement(("fabric_link",), {}, "two leaf-spine links' spine ends swapped; a host "
                   "link crossed with a fabric link is left out: it puts a host on a spine, "
                   "which every traffic suite fails as collateral")),
        catches=("cabling",), also=("link", "transceiver", "collective", "paths", "routing"),
        peer=True,
        combinable=False,
        note="a swapped cable also changes which ends a PRBS or a ring meets: those suites may "
             "fail, naming the swapped links; not combined, as it moves traffic everywhere"),
    # --- roce ------------------------------------------------------------------------------
    Domain(
        "degraded_nic",
        (Placement(("host",), {
            "speed_gbps": Choice((100, 200), "the NIC trains at a lower IEEE rate: <= 0.5 of "
                                 "400G, far below roce.bw_fraction_of_line 0.9"),
        }, "any host's NIC"),
         Placement(("host",), {
             "pcie_gbps": FloatRange(64.0, 300.0, "64 Gb/s is PCIe Gen4 x4; 300 Gb/s stays "
                                     "under 0.9 x 400G after PCIe/TLP overhead (~0.8-0.9 of "
                                     "raw); a 400G NIC needs Gen5 x16 (512 Gb/s)"),
         }, "any host's NIC, on a narrowed PCIe link (issue 14 case 6)")),
        catches=("roce",), also=("collective",),
        spoils=("congestion",)),  # the incast into its host runs short
    Domain(
        "mtu_mismatch",
        (Placement(PORTS, {
            "mtu": IntRange(1280, 4000, "1280 is the IPv6 minimum link MTU (RFC 8200), below "
                            "which a host's stack is broken outright; 4000 is under "
                            "roce.port_mtu_bytes 4140 (4096-byte RoCE MTU + 44 B headers) with "
                            "room for the vendors' L2/L3 MTU conventions"),
        }, WHY_PORTS + " (issue 23: a switch port)"),),
        catches=("roce",), also=("collective", "paths"),
        spoils=("congestion", "latency"),  # RoCE frames over the MTU are dropped
        note="frames above the port's MTU are dropped: RDMA and NCCL on the hosts behind it "
             "may fail too, naming the port or its link"),
    # --- congestion ------------------------------------------------------------------------
    Domain(
        "pfc_disabled",
        (Placement(("leaf",), {
            "priority": Choice((3,), "the RoCE priority the incasts run on (congestion "
                               "settings); priority 4 is lossless too but carries no test "
                               "traffic"),
        }, "a leaf of either vendor: the incasts' congestion point is the receiver's leaf "
           "port; a spine never congests in them"),),
        catches=("congestion",)),
    Domain(
        "ecn_disabled",
        (Placement(("pfc_queues_leaf",), {}, "a leaf whose per-queue ECN counters labtest "
                   "reads: ECN is marked where the incast queues build, at the receiver's leaf "
                   "port. Not EOS (known gap): there the incasts fail on the senders' CNP "
                   "counters but name no switch port (EOS per-queue ECN is not read)"),),
        catches=("congestion",),
        spoils=("latency",)),  # its queues grow unmarked: the loaded tail
    Domain(
        "ecn_thresholds",
        (Placement(("leaf",), {
            "kmin_kb": IntRange(2400, 8000, "the latency suite measured p99 >= 103 us (limit "
                                "75 us) from kmin 2400 kB; 1600 kB was marginal (~80 us); "
                                "8000 kB is the fault's default"),
            "kmax_kb": IntRange(9600, 32000, "at least 4x the lowest kmin (the suite's own "
                                "fault runs use kmax = 4 kmin); 32000 kB is the default"),
        }, "a leaf of either vendor: the latency suite's incasts congest the receiver's leaf "
           "port; a spine downlink carries only half an incast"),),
        catches=("latency",),
        spoils=("congestion",)),  # late marks: the incast's queue deepens
    Domain(
        "shallow_buffer",
        (Placement(("leaf",), {
            "xoff_kb": IntRange(100, 200, "the latency suite's head-of-line check (LAT-1.3): "
                                "the worst QP's p99 over idle measured 20-48 us from 100-400 KB "
                                "in the model over 16 sender orders (limit 16 us; healthy <= "
                                "1 us); the absolute p99 (limit 26 us) fell to 24.8 us with the "
                                "incast on one spine; below Kmin (800 KB) by design"),
        }, "a leaf of either vendor: LAT-1.3's incast into the server's neighbour congests a "
           "leaf port, whose ingress PGs then pause the spines the latency flow crosses"),),
        catches=("latency",), combinable=False,
        spoils=("congestion",),  # early pauses under the incast
        note="not combined: its pauses reach the spines every other suite's incasts cross, "
             "so a second fault's suite could rightly see them"),
    Domain(
        "pfc_storm",
        (Placement(("host",), {
            "priority": Choice((3,), "the RoCE priority; the suite's storm watch and the "
                               "watchdog act on it"),
        }, "any host's NIC"),),
        catches=("congestion",), combinable=False,
        spoils=("roce", "latency"),  # the paused queue stalls what shares it
        note="the storm pauses the host's leaf port, which every incast through it feels: "
             "not combined"),
    Domain(
        "pfcwd_disabled",
        (Placement(("pfc_queues_switch",), {}, "any switch whose watchdog state labtest "
                   "reads: it must be armed on every lossless queue (congestion.pfcwd_unarmed_"
                   "queues). Not EOS: no public format of its watchdog state exists, so that "
                   "cell is not proven there (waived in the default lab) and the fault cannot "
                   "be seen"),),
        catches=("congestion",)),
    Domain(
        "ecmp_polarisation",
        (Placement(("fabric",), {
            "seed": IntRange(0, 65535, "any hash seed: with IP-only fields every QP of a pair "
                             "hashes alike, whatever the seed"),
        }, "every switch (the fault's own empty target)"),
         Placement(("leaf",), {
            "seed": IntRange(0, 65535, "any hash seed: one host pair's streams hash alike"),
        }, "one leaf, either vendor: PATHS-2.2 puts one host pair's 128 streams on its uplinks "
           "(max/mean 2.0 against 1.25). Not a spine: in a two-tier fabric a spine reaches each "
           "leaf over one link, nothing to polarise")),
        catches=("roce", "paths"), catch_any=True, combinable=False,
        note="every switch is a culprit: combined, it would name the other fault's device"),
    # --- failover --------------------------------------------------------------------------
    Domain(
        "slow_convergence",
        (Placement(("switch",), {
            "extra_ms": FloatRange(800.0, 5000.0, "the healthy lab loses ~650 ms (limit "
                                   "failover.convergence_ms 1000): +800 ms is 45% over the "
                                   "limit at 0.1 ms probe resolution; 5 s stays inside the "
                                   "host streams' 60 s (FAIL-1.2) and the 120 s recovery bound"),
        }, "any switch, either vendor, leaves without a TG port included: every switch shuts "
           "a port under traffic (FAIL-1.1 over the TG's paths, FAIL-1.2 carried by hosts)"),),
        catches=("failover",), also=("routing",)),
    # --- collective ------------------------------------------------------------------------
    Domain(
        "straggler_link",
        (Placement(LINKS, {
            "rate_fraction": FloatRange(0.5, 0.8, "a ring runs at its slowest link: 0.8 is 5 "
                                        "points under collective.busbw_fraction_of_ceiling "
                                        "0.85 (busbw noise is ~1-2%); 0.5 is the old fixed "
                                        "row's"),
        }, WHY_LINKS + " (issue 14 case 5: a host link)"),),
        catches=("collective",), also=("paths",),
        spoils=("roce", "congestion")),  # its host's pairs and incast run slow
    # --- paths: gray failures ------------------------------------------------------------
    Domain(
        "lossy_link",
        (Placement(("fabric_link",), {
            "loss": FloatRange(5e-4, 0.05, "paths.member_loss_ratio 1e-4: 5e-4 is 5x the limit "
                               "(a 128-stream load puts ~64,000 frames a direction on a member: "
                               "~30 lost); 5% is gross (go-back-N RoCE keeps ~0.2% of its rate)",
                               digits=4),
            "direction": Choice(("both", "ab", "ba"), "either way or one direction"),
        }, "any leaf-spine link (SONiC-SONiC, SONiC-EOS, EOS-EOS), leaves with and without a TG "
           "port: PATHS-2.1's host streams load every fabric link both ways. Host links: known "
           "gap (no member loss is judged there)"),),
        catches=("paths",), also=("roce", "collective", "latency", "congestion", "failover",
                                  "link"),
        note="every suite whose traffic crosses the link may lose throughput or frames there"),
    Domain(
        "silent_drop",
        (Placement(("fabric_link",), {
            "loss": FloatRange(5e-4, 1.0, "5x paths.member_loss_ratio 1e-4 up to a dead "
                               "direction (link up, nothing forwarded)", digits=4),
            "direction": Choice(("ab", "ba"), "one direction: the fault's definition"),
        }, "any leaf-spine link, every vendor end, either direction (PATHS-2.1 judges both)"),),
        catches=("paths",), also=("roce", "collective", "latency", "congestion", "failover"),
        note="every suite whose traffic crosses that direction may lose frames there"),
    Domain(
        "ecmp_blackhole",
        (Placement(("fabric_link",), {
            "flow_fraction": FloatRange(0.05, 1.0, "5% of the hash space is ~3 of the ~64 "
                                        "streams a member carries in PATHS-2.1 (a 5% member "
                                        "loss, 500x paths.member_loss_ratio); 1.0 blackholes "
                                        "every flow hashed onto the member"),
            "direction": Choice(("ab", "ba", "both"), "the member as one end's next hop"),
            "salt": IntRange(0, 65535, "which part of the hash space"),
        }, "any leaf-spine link as an ECMP member, every vendor end"),),
        catches=("paths",), also=("roce", "collective", "latency", "congestion", "failover"),
        note="every suite with a flow hashed into the hole may lose it"),
]

#: fault kind -> its domain (every catalogue fault has one)
DOMAINS: dict[str, Domain] = {d.kind: d for d in _DOMAINS}

#: CI's draws at the NX-OS ends (testbeds/emulated/leafspine-nxos.yaml, leaf2 on NX-OS): one
#: draw per kind that has an NX-OS target (a leaf-spine link with an NX-OS end counts), and a
#: healthy row of that lab (issue 35: the default lab has no NX-OS device)
NXOS_TESTBED = "testbeds/emulated/leafspine-nxos.yaml"
NXOS_PLAN = Plan(seed=1423, draws=1, healthy=1, vendor="nxos")

#: CI's draws: fixed seed, one draw per kind, the placements the issues name as extras,
#: two combined rows, three healthy rows (29 rows, about 30 min at 2 rows at a time)
CI_PLAN = Plan(
    seed=1423,
    draws=1,
    extra=(
        ("flapping_link", "host_link"),           # issue 23 case 2
        ("firmware_mismatch", "pair_group_switch"),  # issue 23 case 1
        ("mtu_mismatch", "host_facing_port"),     # issue 23 case 3
        ("dirty_connector", "fabric_link/eos"),   # issue 14 case 1 (an EOS end)
        ("marginal_lane", "fabric_port/eos"),     # issue 14 case 2 (an EOS port)
        ("straggler_link", "host_link"),          # issue 14 case 5
    ),
    combined=2,
    healthy=3,
)
