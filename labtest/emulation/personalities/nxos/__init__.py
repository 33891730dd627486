"""Cisco NX-OS personality: the NX-OS CLI of one switch, in the text the NX-OS driver reads.

The driver (``drivers/nxos``) parses NX-OS text, not ``| json``, so this personality prints
text laid out as the public captures its parsers were built from (the samples under
``tests/drivers/samples/nxos`` name their sources; each renderer says which one it
follows): ``show version``, ``show interface status``, ``show interface counters [errors]``,
``show interface transceiver details``, ``show lldp neighbors``, ``show interface
priority-flow-control``, ``show ip bgp summary vrf all``, ``show bfd neighbors details``,
``show ip interface vrf all`` and ``show running-config``. Every value is the fabric
model's, as the SONiC and EOS personalities print it, so a fault on an NX-OS port shows in
its counters, DOM, LLDP, PFC frames and BGP/BFD state.

The session starts in privileged EXEC (``leaf2#``). ``configure terminal`` enters config
mode (``leaf2(config)#``), ``interface X`` an interface (``leaf2(config-if)#``), where
``shutdown`` / ``no shutdown`` / ``mtu`` / ``description`` apply at once; ``exit``/``end``
leave. Keywords may be abbreviated to a unique prefix (``sh int status``); ``| include``,
``| exclude`` and ``| grep`` filter a text answer. Snapshots use NX-OS checkpoints:
``checkpoint NAME`` (at most ten, names unique), ``rollback running-config checkpoint
NAME``, ``no checkpoint NAME``. Anything else (``| json`` too: the driver never asks for
it) answers ``% Invalid command at '^' marker.`` under a caret, as NX-OS answers bad input.

Not served, because the NX-OS driver reads none of it (no public capture of the output was
found, docs/drivers.md): FEC counters, PRBS, queue counters, the PFC watchdog, a clock.
"""

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import SwitchState
from labtest.emulation.personalities.nxos.base import (
    DEFAULT_CHASSIS,
    DEFAULT_VERSION,
    SYS_OBJECT_ID,
    NxosDevice,
    nxos_if_index,
    short_name,
)
from labtest.emulation.personalities.nxos.cli import MAX_CHECKPOINTS, NxosCli
from labtest.emulation.personalities.switch_mib import SwitchMib
from labtest.testbed.model import Device

__all__ = [
    "DEFAULT_CHASSIS",
    "DEFAULT_VERSION",
    "MAX_CHECKPOINTS",
    "SYS_OBJECT_ID",
    "NxosCli",
    "NxosDevice",
    "nxos_if_index",
    "serve",
    "short_name",
    "sys_descr",
]


def sys_descr(dev: NxosDevice) -> str:
    """sysDescr in the form of LibreNMS's NX-OS snmprec (``tests/snmpsim/nxos_lag-mib``)."""
    return (
        f"Cisco NX-OS(tm) Nexus9000 {dev.chassis()}, Software (NXOS 64-bit), Version "
        f"{dev.version()}, RELEASE SOFTWARE Copyright (c) 2002-2025 by Cisco Systems, Inc."
    )


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point (``PERSONALITIES["nxos"]``)."""
    state = SwitchState(fabric, name, device, nxos_if_index)
    dev = NxosDevice(state)
    mib = SwitchMib(state, sys_descr=lambda: sys_descr(dev), sys_object_id=SYS_OBJECT_ID)
    return Served(cli=lambda: NxosCli(dev), mib=mib, banner="", stop=state.stop)
