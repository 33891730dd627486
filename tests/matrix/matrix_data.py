"""What the fault-detection matrix injects into the default emulated lab, and whom it blames.

One case per fault in the catalogue: a target on ``testbeds/emulated/leafspine.yaml``,
parameters strong enough for the catching suite to see within its run (taken from
the suites' own fault tests under ``tests/suites/``), and the names a correct
failure message may blame: the faulty port, its link, the far end that sees it.
"""

from __future__ import annotations

from typing import Any

from labtest.emulation.model.faults import load_catalogue
from labtest.matrix import Case

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
]

#: fault kind -> case (every catalogue fault has exactly one)
CASES: dict[str, Case] = {c.name: c for c in _CASES}
