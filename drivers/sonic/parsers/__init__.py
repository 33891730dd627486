"""Parsers for SONiC CLI output (the sonic-utilities ``show`` commands).

Most SONiC show commands print python-tabulate tables: a header line, a line of
dash groups (one group per column) and rows; cells are separated by two or
more spaces and a cell may be blank. The dash line is the ground truth for the
columns, so rows are read against it rather than split on whitespace.

Every parser takes the text a field engineer pastes (a leading prompt line,
"Last cached time ..." banners and trailing prompts are tolerated) and returns
typed records keyed by port. Output it cannot read raises ``ParseError`` with
the raw text; numbers lose their thousands separators, ``N/A`` becomes
``None``. Formats checked against the samples under ``tests/drivers/samples/sonic``.

The parsers live by area (``interfaces``, ``transceivers``, ``lldp``, ``qos``; the
table reader in ``_common``, what each output looks like in ``fingerprints``); importing
this package registers them all.
"""

from labtest.drivers.sonic.parsers import fingerprints  # noqa: F401  (registers them)
from labtest.drivers.sonic.parsers._common import DRIVER, UNKNOWN_PORT
from labtest.drivers.sonic.parsers.interfaces import (
    COUNTERS_COMMANDS,
    parse_fec_histogram,
    parse_fec_stats,
    parse_interface_counters,
    parse_interfaces_flap,
    parse_interfaces_status,
    parse_platform_summary,
    parse_prbs_status,
    parse_version,
    uptime_seconds,
)
from labtest.drivers.sonic.parsers.lldp import parse_lldp_table
from labtest.drivers.sonic.parsers.qos import (
    parse_pfc_counters,
    parse_pfcwd_config,
    parse_pfcwd_stats,
    parse_queue_counters,
)
from labtest.drivers.sonic.parsers.transceivers import (
    parse_transceiver_eeprom,
    parse_transceiver_pm,
)

__all__ = [
    "COUNTERS_COMMANDS",
    "DRIVER",
    "UNKNOWN_PORT",
    "parse_fec_histogram",
    "parse_fec_stats",
    "parse_interface_counters",
    "parse_interfaces_flap",
    "parse_interfaces_status",
    "parse_lldp_table",
    "parse_pfc_counters",
    "parse_pfcwd_config",
    "parse_pfcwd_stats",
    "parse_platform_summary",
    "parse_prbs_status",
    "parse_queue_counters",
    "parse_transceiver_eeprom",
    "parse_transceiver_pm",
    "parse_version",
    "uptime_seconds",
]
