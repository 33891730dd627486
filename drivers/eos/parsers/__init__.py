"""Parsers for Arista EOS output: ``| json`` first, text where a field engineer pastes it.

EOS renders the same model as text or JSON; the JSON keys are stable across
releases, so each parser reads JSON when the text is JSON and falls back to the
text table where EOS prints one (version, interface status, LLDP, transceiver
DOM and thresholds). Both ``"show version"`` and ``"show version | json"`` reach
the same parser. Records and ``None`` conventions follow
``labtest.capabilities.switch``; samples under ``tests/drivers/samples/eos``.

Every parser checks before it reads: a JSON document must close, hold no
duplicated key and be the answer of its own command (``show interfaces | json``
given as transceiver data is refused, naming what it looks like); a text row
must carry every column its header promises. What fails is a ParseError naming
the command and, where there is one, the line.

The parsers live by area (``interfaces``, ``transceivers``, ``lldp``, ``qos``, ``pfc``,
``routing``; the JSON kit in ``_common``); importing this package registers them all.
"""

from labtest.drivers.eos.parsers._common import DRIVER, long_name
from labtest.drivers.eos.parsers.interfaces import (
    parse_clock,
    parse_interface_counters,
    parse_interface_mtus,
    parse_interfaces_status,
    parse_phy_detail,
    parse_version,
    uptime_seconds,
)
from labtest.drivers.eos.parsers.lldp import parse_lldp_neighbors
from labtest.drivers.eos.parsers.pfc import (
    parse_pfc_config,
    parse_pfc_counters_detail,
    parse_pfc_watchdog_config,
    parse_pfc_watchdog_counters,
    watchdog_status,
)
from labtest.drivers.eos.parsers.qos import (
    parse_ecn_counters,
    parse_pfc_counters,
    parse_queue_drops,
)
from labtest.drivers.eos.parsers.routing import (
    bgp_state_changed_at,
    parse_bfd_peers,
    parse_bgp_summary,
    parse_ip_interfaces,
)
from labtest.drivers.eos.parsers.transceivers import parse_inventory, parse_transceivers, slot_of

__all__ = [
    "DRIVER",
    "bgp_state_changed_at",
    "long_name",
    "parse_bfd_peers",
    "parse_bgp_summary",
    "parse_clock",
    "parse_ecn_counters",
    "parse_interface_counters",
    "parse_interface_mtus",
    "parse_interfaces_status",
    "parse_inventory",
    "parse_ip_interfaces",
    "parse_lldp_neighbors",
    "parse_pfc_config",
    "parse_pfc_counters",
    "parse_pfc_counters_detail",
    "parse_pfc_watchdog_config",
    "parse_pfc_watchdog_counters",
    "parse_phy_detail",
    "parse_queue_drops",
    "parse_transceivers",
    "parse_version",
    "slot_of",
    "uptime_seconds",
    "watchdog_status",
]
