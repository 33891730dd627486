"""The fabric model behind the emulated lab: optics, link physics, faults, virtual time.

``Fabric(testbed)`` is the entry point; device emulators read it, the traffic
model (``labtest.emulation.model.traffic``) builds on its link view, and the
fault catalogue (``faults.CATALOGUE``) changes it.
"""

from labtest.emulation.model.clock import VirtualClock
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.fabric_records import (
    DeviceFacts,
    IfCounters,
    InterfaceStatus,
    LldpAdvert,
    ModelError,
)
from labtest.emulation.model.faults import CATALOGUE, FaultError, describe, load_catalogue
from labtest.emulation.model.optics import (
    OPTICS,
    DomFlag,
    DomThresholds,
    LaneDom,
    TransceiverDom,
    TransceiverInventory,
)
from labtest.emulation.model.physics import FecStats, PrbsLane

__all__ = [
    "CATALOGUE",
    "OPTICS",
    "DeviceFacts",
    "DomFlag",
    "DomThresholds",
    "Fabric",
    "FaultError",
    "FecStats",
    "IfCounters",
    "InterfaceStatus",
    "LaneDom",
    "LldpAdvert",
    "ModelError",
    "PrbsLane",
    "TransceiverDom",
    "TransceiverInventory",
    "VirtualClock",
    "describe",
    "load_catalogue",
]
