"""The fabric model's own faults: optics, physical links, cabling, inventory, reachability.

Each effect changes the model's state and returns the undo. Targets are
``device:port`` for a module, a link name (``a--b``) or either end of it for a
link, a device name for a device: each fault declares which (``targets=``,
checked when a testbed is loaded, ``labtest.testbed.faultcheck``). Lanes are
1-based, as CMIS and SONiC count them. The traffic model's faults (congestion, ECMP, RoCE) are in
``labtest.emulation.model.traffic.faults``; both families are registered in one place,
``faults.FAULT_MODULES`` (imported by ``load_catalogue``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from labtest.emulation.model.faults import FaultError, FaultParams, fault
from labtest.emulation.model.modules import MAX_LANES

if TYPE_CHECKING:
    from labtest.emulation.model.fabric import Fabric

Undo = Callable[[], None]
#: a lane number, 1-based; the module's own count (4 on DR4/FR4) is checked on injection
Lane = Annotated[int, Field(ge=1, le=MAX_LANES)]


def _module_at(fabric: Fabric, target: str) -> int:
    device, port = fabric.resolve_port(target)
    return fabric.module_index(device, port)


def _lane_index(fabric: Fabric, m: int, lanes: list[int] | None) -> np.ndarray:
    n = int(fabric.modules.lanes[m])
    if lanes is None:
        return np.arange(n)
    bad = [lane for lane in lanes if not 1 <= lane <= n]
    if bad:
        raise FaultError(f"lanes {bad} outside 1..{n} of this module")
    return np.array(sorted(set(lanes))) - 1


def _added(arr: np.ndarray, index: tuple[int, np.ndarray] | list[int], amount: float) -> Undo:
    """Add ``amount`` at ``index``; the undo takes off only that, so faults stacked on one
    module come off independently."""
    arr[index] += amount

    def undo() -> None:
        arr[index] -= amount

    return undo


def _modules_of(fabric: Fabric, target: str) -> list[int]:
    """One module for ``device:port``, every module of a device for a device name."""
    if target in fabric.testbed.devices:
        ms = [fabric.module_index(target, p) for p in fabric.ports(target)
              if fabric.transceiver(target, p).present]
        if not ms:
            raise FaultError(f"device {target!r} has no transceivers")
        return ms
    return [_module_at(fabric, target)]


# --- optics and physical link ----------------------------------------------------


class DirtyConnector(FaultParams):
    loss_db: float = Field(3.0, gt=0, le=30)
    end: Literal["a", "b"] = "a"
    lanes: list[Lane] | None = None  # None: every lane
    direction: Literal["tx", "rx", "both"] = "tx"


@fault(
    "dirty_connector",
    DirtyConnector,
    "adds loss_db at one end's connector on the given lanes (every wavelength on LC optics): "
    "the far end's Rx power falls, its pre-FEC BER and FEC tail rise; local Tx is unchanged",
    caught_by="link",
    targets=("link",),
)
def dirty_connector(fabric: Fabric, target: str, p: DirtyConnector) -> Undo:
    li = fabric.resolve_link(target)
    if ":" in target and target not in fabric.link_names():
        m = _module_at(fabric, target)  # a port target names the end itself
    else:
        end = fabric.link(li).ends[0 if p.end == "a" else 1]
        m = fabric.module_index(end.device, end.port)
    spec_parallel = fabric.inventory[m].connector.startswith("MPO")
    # a speck on an LC ferrule dims all four CWDM wavelengths (reference section 2)
    lanes = _lane_index(fabric, m, p.lanes if spec_parallel else None)
    arrays = []
    if p.direction in ("tx", "both"):
        arrays.append(fabric.modules.dirty_tx_db)
    if p.direction in ("rx", "both"):
        arrays.append(fabric.modules.dirty_rx_db)
    undos = [_added(arr, (m, lanes), p.loss_db) for arr in arrays]

    def undo() -> None:
        for each in undos:
            each()

    return undo


class FailingLaser(FaultParams):
    drift_db_per_hour: float = Field(0.5, gt=0, le=100)
    lanes: list[Lane] | None = None


@fault(
    "failing_laser",
    FailingLaser,
    "the port's laser loses drift_db_per_hour of efficiency: bias climbs while the APC loop "
    "holds Tx power, then at its limit Tx power and the far end's Rx power fall",
    caught_by="transceiver",
    targets=("port",),
)
def failing_laser(fabric: Fabric, target: str, p: FailingLaser) -> Undo:
    m = _module_at(fabric, target)
    lanes = _lane_index(fabric, m, p.lanes)
    drift = _added(fabric.modules.laser_drift_db_per_s, (m, lanes),
                   p.drift_db_per_hour / 3600.0)

    def undo() -> None:  # the laser is replaced: drift and damage go
        drift()
        fabric.modules.laser_loss_db[m, lanes] = 0.0

    return undo


class MarginalLane(FaultParams):
    lane: int = Field(1, ge=1, le=MAX_LANES)
    margin_db: float = Field(1.0, ge=-5, le=10)


@fault(
    "marginal_lane",
    MarginalLane,
    "one lane of the port's receiver keeps only margin_db of Rx OMA margin above sensitivity "
    "(1 dB ~ BER 6.5e-6, 0 dB = 2.4e-4): PRBS, FEC bins and pre-FEC BER show it",
    caught_by="link",
    targets=("port",),
)
def marginal_lane(fabric: Fabric, target: str, p: MarginalLane) -> Undo:
    device, port = fabric.resolve_port(target)
    m = fabric.module_index(device, port)
    (lane,) = _lane_index(fabric, m, [p.lane])
    extra = fabric.margin_db(device, port)[lane] - p.margin_db
    return _added(fabric.modules.penalty_db, (m, lane), extra)


class FlappingLink(FaultParams):
    period_s: float = Field(10.0, gt=0)
    down_s: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _down_shorter_than_period(self) -> FlappingLink:
        if self.down_s >= self.period_s:
            raise ValueError("down_s must be shorter than period_s")
        return self


@fault(
    "flapping_link",
    FlappingLink,
    "the link loses light for down_s at the start of every period_s: oper down, LOS latched "
    "at both ends, PRBS loss of lock, link-down counters climb",
    caught_by="link",
    targets=("link",),
)
def flapping_link(fabric: Fabric, target: str, p: FlappingLink) -> Undo:
    return fabric.flap_link(target, p.period_s, p.down_s)


# --- cabling ---------------------------------------------------------------------------


class Miswired(FaultParams):
    other: str  # the second link (name or either end)


@fault(
    "miswired",
    Miswired,
    "swaps the far (b) ends of the target link and `other`: both links come up, but LLDP "
    "shows neighbours that differ from the cabling plan",
    caught_by="cabling",
    targets=("link",),
    refs={"other": ("link",)},
)
def miswired(fabric: Fabric, target: str, p: Miswired) -> Undo:
    la, lb = fabric.resolve_link(target), fabric.resolve_link(p.other)
    if la == lb:
        raise FaultError("miswired needs two different links")
    optic_a, optic_b = fabric.link(la).optic, fabric.link(lb).optic
    if optic_a != optic_b:
        raise FaultError(f"cannot cross {optic_a} and {optic_b} cables: connectors differ")
    fabric.swap_far_ends(la, lb)
    return lambda: fabric.swap_far_ends(la, lb)


# --- inventory -------------------------------------------------------------------------


def _inventory_set(fabric: Fabric, target: str, **fields: str) -> Undo:
    """Make the module at ``target`` report other inventory ``fields``; the undo puts back
    only those, so an inventory fault and a firmware fault on one module come off apart."""
    device, port = fabric.resolve_port(target)
    old = fabric.set_inventory(device, port, **fields)  # raises where the port has no module
    was: dict[str, object] = {name: getattr(old, name) for name in fields}

    def undo() -> None:
        fabric.set_inventory(device, port, **was)

    return undo


class UnapprovedOptic(FaultParams):
    part_number: str = "GEN-QDD-400G-X"
    vendor: str = "Generic Optics"


@fault(
    "unapproved_optic",
    UnapprovedOptic,
    "the module at the port reports another vendor and part number (not on an approved list); "
    "optics behave as before",
    caught_by="transceiver",
    targets=("port",),
)
def unapproved_optic(fabric: Fabric, target: str, p: UnapprovedOptic) -> Undo:
    return _inventory_set(fabric, target, part_number=p.part_number, vendor=p.vendor)


class FirmwareMismatch(FaultParams):
    version: str = "0.9.7"


@fault(
    "firmware_mismatch",
    FirmwareMismatch,
    "the module at device:port (or, for a device target, the device itself) reports "
    "firmware `version` instead of the fleet's",
    caught_by="transceiver",
    targets=("port", "device"),
)
def firmware_mismatch(fabric: Fabric, target: str, p: FirmwareMismatch) -> Undo:
    if target in fabric.testbed.devices:
        old_fw = fabric.set_firmware(target, p.version)

        def undo_device() -> None:
            fabric.set_firmware(target, old_fw)

        return undo_device
    return _inventory_set(fabric, target, firmware_version=p.version)


class HotModule(FaultParams):
    delta_c: float = Field(30.0, gt=0, le=100)


@fault(
    "hot_module",
    HotModule,
    "the module (or every module of a device) runs delta_c hotter, reached with the thermal "
    "lag: temperature warning/alarm flags, bias rises with temperature",
    caught_by="transceiver",
    targets=("port", "switch", "host"),
)
def hot_module(fabric: Fabric, target: str, p: HotModule) -> Undo:
    return _added(fabric.modules.hot_c, _modules_of(fabric, target), p.delta_c)


# --- management ------------------------------------------------------------------------


class UnreachableDevice(FaultParams):
    pass


@fault(
    "unreachable_device",
    UnreachableDevice,
    "the device's management plane stops answering (fabric.reachable() is False; emulators "
    "drop SSH/SNMP); forwarding is untouched, so suites report it broken, not failed",
    caught_by="link",
    targets=("device",),
)
def unreachable_device(fabric: Fabric, target: str, p: UnreachableDevice) -> Undo:
    if target not in fabric.testbed.devices:
        raise FaultError(f"unreachable_device needs a device name, got {target!r}")
    fabric.set_reachable(target, False)
    return lambda: fabric.set_reachable(target, True)
