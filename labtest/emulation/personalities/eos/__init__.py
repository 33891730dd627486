"""Arista EOS personality: the EOS CLI of one switch, with ``| json`` as EOS renders it.

JSON documents carry the keys of real EOS answers (the samples under
``tests/drivers/samples/eos`` name their sources; each renderer says which one
it follows). Text forms exist for ``show version``, ``show interfaces status``,
``show interfaces transceiver [detail]``, ``show lldp neighbors`` and ``show
running-config``; a command outside the set answers ``% Invalid input`` like
EOS does for an unknown keyword.

FEC counters and pre-FEC BER (``show interfaces phy detail``), PFC frames
(``show priority-flow-control counters``), egress queue drops (``show
interfaces counters queue detail``) and ECN marks (``show qos interfaces ecn
counters queue``) come from the same fabric-model values the SONiC personality
prints, so a fault on an EOS port shows in EOS's counters.

The session starts in privileged mode (an account with privilege 15).
``configure`` enters config mode (``spine1(config)#``), ``interface X`` an
interface (``spine1(config-if-Et1/1)#``), where ``shutdown`` / ``no shutdown``
/ ``mtu`` / ``description`` apply at once; ``exit``/``end`` leave. Keywords may
be abbreviated to a unique prefix (``sh int status``). Snapshots use EOS's own
mechanism: ``copy running-config flash:NAME`` and ``configure replace flash:NAME``.
"""

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.personalities import SwitchState
from labtest.emulation.personalities.eos.base import (
    DEFAULT_MODEL,
    DEFAULT_VERSION,
    SYS_OBJECT_ID,
    EosDevice,
    dotted_mac,
    eos_if_index,
    short_name,
)
from labtest.emulation.personalities.eos.cli import EosCli
from labtest.emulation.personalities.switch_mib import SwitchMib
from labtest.testbed.model import Device

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_VERSION",
    "SYS_OBJECT_ID",
    "EosCli",
    "EosDevice",
    "dotted_mac",
    "eos_if_index",
    "serve",
    "short_name",
    "sys_descr",
]


def sys_descr(dev: EosDevice) -> str:
    return f"Arista Networks EOS version {dev.version()} running on an Arista {dev.model()}"


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """The lab's entry point (``PERSONALITIES["eos"]``)."""
    state = SwitchState(fabric, name, device, eos_if_index)
    dev = EosDevice(state)
    mib = SwitchMib(state, sys_descr=lambda: sys_descr(dev), sys_object_id=SYS_OBJECT_ID)
    return Served(cli=lambda: EosCli(dev), mib=mib, banner="", stop=state.stop)
