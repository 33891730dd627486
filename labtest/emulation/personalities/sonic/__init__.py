"""SONiC personality: the sonic-utilities CLI of one switch, printed from the fabric model.

Every command prints in the layout of the real tool; the comment above each
renderer names the real output it copies (the samples kept under
``tests/drivers/samples/sonic`` and ``tests/drivers/driver_samples/sonic``).
sonic-utilities prints python-tabulate tables (see ``_text.table``) with
thousands separators in counters.

Privilege works as on a real box: ``config``, ``pfcwd`` and ``reboot`` need
``sudo`` ("Root privileges are required for this operation"); an unknown
``show`` subcommand gets click's usage error (exit 2), an unknown program
bash's "command not found" (exit 127). Command words may be abbreviated as
SONiC's aliased click groups allow (``show int counters``).

Device-level state (saved config files, the ``sonic-clear`` baselines, PRBS
runs, rate samples) lives in :class:`SonicDevice`, shared by all sessions.
"""

from __future__ import annotations

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import SwitchState
from labtest.emulation.personalities.sonic.base import (
    DEFAULT_ASIC,
    DEFAULT_HWSKU,
    DEFAULT_MODEL,
    DEFAULT_PLATFORM,
    DEFAULT_VERSION,
    PrbsRun,
    SonicDevice,
    sonic_if_index,
)
from labtest.emulation.personalities.sonic.cli import SonicCli, config_db
from labtest.emulation.personalities.switch_mib import SwitchMib
from labtest.testbed.model import Device

SYS_OBJECT_ID = (1, 3, 6, 1, 4, 1, 8072, 3, 2, 10)  # net-snmp "linux", what SONiC reports

__all__ = [
    "BANNER",
    "DEFAULT_ASIC",
    "DEFAULT_HWSKU",
    "DEFAULT_MODEL",
    "DEFAULT_PLATFORM",
    "DEFAULT_VERSION",
    "SYS_OBJECT_ID",
    "PrbsRun",
    "SonicCli",
    "SonicDevice",
    "config_db",
    "serve",
    "sonic_if_index",
    "sys_descr",
]


def sys_descr(dev: SonicDevice) -> str:
    """sysDescr as sonic-snmpagent builds it from the version file."""
    return (
        f"SONiC Software Version: {dev.version()} - HwSku: "
        f"{dev.state.var('hwsku', DEFAULT_HWSKU)} - Distribution: Debian 12.11 - "
        f"Kernel: 6.1.0-29-2-amd64"
    )


BANNER = (
    "You are on\n"
    "  ____   ___  _   _ _  ____\n"
    " / ___| / _ \\| \\ | (_)/ ___|\n"
    " \\___ \\| | | |  \\| | | |\n"
    "  ___) | |_| | |\\  | | |___\n"
    " |____/ \\___/|_| \\_|_|\\____|\n\n"
    "-- Software for Open Networking in the Cloud --\n\n"
    "Unauthorized access and/or use are prohibited.\n"
    "All access and/or use are subject to monitoring.\n\n"
    "Help:    https://sonic-net.github.io/SONiC/\n\n"
)


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point (``PERSONALITIES["sonic"]``)."""
    state = SwitchState(fabric, name, device, sonic_if_index)
    dev = SonicDevice(state)
    mib = SwitchMib(state, sys_descr=lambda: sys_descr(dev), sys_object_id=SYS_OBJECT_ID)
    return Served(
        cli=lambda: SonicCli(dev),
        mib=mib,
        banner=BANNER,
        stop=state.stop,
    )
