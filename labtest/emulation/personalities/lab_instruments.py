"""Lab instruments in the emulated lab: the emulated SCPI/SNMP instruments, wired to the fabric.

Where an instrument sits is testbed data (device ``vars``):

- ``voa``: ``link: "leaf1:Ethernet0"`` — attenuation is added in the fibre that
  leaves that port, so the far end's Rx power drops by the same dB;
- ``optical-switch``: ``links: [...]`` — channel *n* carries ``links[n-1]``;
  parking a channel (output 0) is a cable pull: the link loses light;
- ``opm``: ``taps: [...]`` — port *n* reads the total Rx power of ``taps[n-1]``;
- ``bert``: ``port: "leaf4:Ethernet8"`` — lane BER comes from that port's receiver;
- ``chamber``: ``devices: [...]`` (default: every device) — the air around them
  follows the chamber;
- ``pdu``: ``feeds: {1: spine1, ...}`` — an outlet off powers the device down:
  it stops answering and its ports go dark.
"""

from __future__ import annotations

import math
import threading

from labtest.emulation.lab import Served
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.pdu_mib import PduMib
from labtest.emulation.scpi_instruments import (
    EmulatedAttenuator,
    EmulatedBert,
    EmulatedChamber,
    EmulatedOpticalSwitch,
    EmulatedPowerMeter,
    InstrumentHooks,
)
from labtest.testbed.model import Device

#: an optical switch parked on its dark output leaves the link this much loss
CABLE_PULL_DB = 30.0


class _LinkLoss:
    """Extra loss on one link, kept as a single fault so each new value replaces the last."""

    def __init__(self, fabric: Fabric, port: str) -> None:
        self.fabric = fabric
        self.port = port
        self.fault_id: str | None = None

    def set(self, loss_db: float) -> None:
        if self.fault_id is not None:
            self.fabric.clear(self.fault_id)
            self.fault_id = None
        if loss_db > 0:
            self.fault_id = self.fabric.inject(
                "dirty_connector", self.port, loss_db=min(loss_db, 30.0), direction="tx"
            )


def serve_attenuator(fabric: Fabric, name: str, device: Device) -> Served:
    loss = _LinkLoss(fabric, str(device.vars["link"]))
    state = {"db": 0.0, "on": True}

    def apply() -> None:
        loss.set(state["db"] if state["on"] else CABLE_PULL_DB)

    def on_db(_channel: int, db: float) -> None:
        state["db"] = db
        apply()

    def on_output(_channel: int, on: bool) -> None:
        state["on"] = on
        apply()

    hooks = InstrumentHooks(on_attenuation_db=on_db, on_voa_output=on_output)
    voa = EmulatedAttenuator(channels=1, clock=fabric.now_s, hooks=hooks)
    return Served(scpi=voa, idn=voa.idn)


def serve_optical_switch(fabric: Fabric, name: str, device: Device) -> Served:
    links = [str(x) for x in device.vars.get("links", [])]
    losses = {n: _LinkLoss(fabric, port) for n, port in enumerate(links, 1)}

    def on_route(channel: int, _input: str, output: int | None) -> None:
        if channel in losses:
            losses[channel].set(CABLE_PULL_DB if output is None else 0.0)

    osw = EmulatedOpticalSwitch(
        channels=max(1, len(links)), clock=fabric.now_s, hooks=InstrumentHooks(on_route=on_route)
    )
    return Served(scpi=osw, idn=osw.idn)


def serve_power_meter(fabric: Fabric, name: str, device: Device) -> Served:
    taps = [fabric.resolve_port(str(x)) for x in device.vars.get("taps", [])]

    def power(port: int) -> float:
        if not 1 <= port <= len(taps):
            return -math.inf
        dom = fabric.dom(*taps[port - 1])
        total_mw = sum(
            10 ** (ln.rx_power_dbm / 10) for ln in dom.lanes if ln.rx_power_dbm is not None
        )
        return 10 * math.log10(total_mw) if total_mw > 0 else -math.inf

    opm = EmulatedPowerMeter(
        channels=max(1, len(taps)), clock=fabric.now_s, hooks=InstrumentHooks(power_source=power)
    )
    return Served(scpi=opm, idn=opm.idn)


def serve_bert(fabric: Fabric, name: str, device: Device) -> Served:
    where = fabric.resolve_port(str(device.vars["port"]))

    def ber(lane: int) -> float | None:
        link = fabric.link_of(*where)
        if link is None or not fabric.link_up(link):
            return None
        lanes = fabric.ber(*where)
        return float(lanes[lane - 1]) if 1 <= lane <= len(lanes) else None

    bert = EmulatedBert(
        lanes=len(fabric.ber(*where)),
        seed=fabric.seed,
        clock=fabric.now_s,
        hooks=InstrumentHooks(ber_source=ber),
    )
    return Served(scpi=bert, idn=bert.idn)


def serve_chamber(fabric: Fabric, name: str, device: Device) -> Served:
    devices = device.vars.get("devices")
    chamber = EmulatedChamber(
        ambient_c=fabric.ambient_c(next(iter(fabric.testbed.devices))), clock=fabric.now_s
    )
    stop = threading.Event()

    def follow() -> None:  # the air around the devices follows the chamber's air
        while not stop.wait(0.2):
            fabric.set_ambient_c(chamber.temperature_c(), devices)

    thread = threading.Thread(target=follow, name=f"chamber-{name}", daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(2.0)

    return Served(scpi=chamber, idn=chamber.idn, stop=halt)


def serve_pdu(fabric: Fabric, name: str, device: Device) -> Served:
    outlets = {int(n): str(dev) for n, dev in device.vars.get("feeds", {}).items()}
    saved: dict[str, dict[str, bool]] = {}

    def on_outlet(outlet: int, on: bool) -> None:
        target = outlets.get(outlet)
        if target is None:
            return
        if not on:
            saved[target] = {i.port: i.admin_up for i in fabric.interfaces(target)}
            for port in saved[target]:
                fabric.set_admin(target, port, False)
            fabric.set_reachable(target, False)
            return
        for port, admin_up in saved.pop(target, {}).items():
            fabric.set_admin(target, port, admin_up)
        fabric.set_reachable(target, True)

    names = {n: dev for n, dev in outlets.items()}
    mib = PduMib(
        outlets=max([8, *outlets]),
        names=names,
        clock=fabric.now_s,
        hooks=InstrumentHooks(on_outlet=on_outlet),
    )
    return Served(mib=mib)
