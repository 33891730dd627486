"""The fabric model: every port, module and link of a testbed, in virtual time.

``Fabric(testbed)`` builds the model from any testbed file: interfaces from
the devices' ports and the cabling plan, one optical module at each end of a
link, the physical channel between them, and the faults listed under
``emulation.faults``. Device emulators read it (interfaces, counters, DOM,
FEC, PRBS, LLDP) to print what a real switch or host would; the traffic model
(``fabric.traffic``) reads link state through the ``LinkView`` methods.

The parts: ``fabric_core`` (the state and its lazy integration in virtual
time), ``fabric_records`` (the records handed out, the port table), ``modules``
(module arrays and the optics computed from them; ``ModuleArrays`` is what
fault effects in ``catalogue.py`` change), ``flaps`` (flapping links, link
history), ``linkcounts`` (FEC, PRBS and link-drop counters). ``Fabric`` is
what everything else talks to.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from labtest.emulation.model.fabric_core import STEP_EVERY_READ, FabricCore
from labtest.emulation.model.fabric_records import (
    COUNTER_FIELDS,
    IF_COUNTER_FIELDS,
    CounterSource,
    DeviceFacts,
    IfCounters,
    InterfaceStatus,
    LldpAdvert,
    ModelError,
    PortState,
    crc,
    mac_of,
)
from labtest.emulation.model.faults import (
    CATALOGUE,
    FaultError,
    FaultInstance,
    load_catalogue,
    parse_params,
)
from labtest.emulation.model.flaps import Flap
from labtest.emulation.model.modules import (
    MAX_LANES,
    ModuleArrays,
    dom_values,
    prbs_lock,
)
from labtest.emulation.model.optics import (
    DARK_DBM,
    DomFlag,
    DomThresholds,
    LaneDom,
    TransceiverDom,
    TransceiverInventory,
)
from labtest.emulation.model.physics import FecStats, PrbsLane
from labtest.emulation.model.traffic import TrafficModel
from labtest.testbed.model import Emulation, Endpoint, Testbed

__all__ = [  # the records live in fabric_records; importable from here as before
    "COUNTER_FIELDS",
    "MAX_LANES",
    "CounterSource",
    "DeviceFacts",
    "Fabric",
    "Flap",
    "IfCounters",
    "InterfaceStatus",
    "LldpAdvert",
    "ModelError",
    "ModuleArrays",
]

LLDP_INTERVAL_S = 30.0  # LLDP transmit interval (IEEE 802.1AB default msgTxInterval)
LLDP_TTL_S = 120
LLDP_FRAME_BYTES = 256

#: DOM read noise (1 sigma) [emulator]: small enough to stay well inside LSB-level jitter
NOISE = {"temperature_c": 0.1, "voltage_v": 0.002, "power_dbm": 0.05, "bias_ma": 0.2}


class Fabric(FabricCore):
    """The emulated lab's single source of truth; see the module docstring."""

    def __init__(
        self,
        testbed: Testbed,
        seed: int | None = None,
        time_scale: float | None = None,
        *,
        realtime: bool = False,
    ) -> None:
        super().__init__(testbed, seed, time_scale, realtime=realtime)
        self._names_key: tuple[str, ...] = ()  # link_states' cached name order
        self._names_idx = np.zeros(0, dtype=np.int64)
        self._names_gbps: list[float] = []
        load_catalogue()
        rng = np.random.default_rng([self.seed, 0x7AF1C])  # its own stream: draws don't interleave
        self.traffic = TrafficModel(testbed=testbed, links=self, rng=rng)
        self.traffic.catch_up = self.now_s  # a read of traffic sees now (steps only if needed)
        if realtime:  # a lab: readers wait on an advance, so it has a wall budget
            self.traffic.wall_budget_s = self.traffic.ADVANCE_WALL_BUDGET_S
        self._changed()
        for i, spec in enumerate((testbed.emulation or Emulation()).faults):
            try:
                self.inject(
                    spec.kind, spec.target, at_s=spec.at_s, duration_s=spec.duration_s,
                    **spec.params,
                )
            except (FaultError, ModelError) as exc:  # name the entry: the error can locate it
                raise FaultError(f"fault {i + 1} ({spec.kind} at {spec.target!r}): {exc}",
                                 index=i) from None

    # --- LinkView (consumed by the traffic model) -------------------------------------

    def link_names(self) -> list[str]:
        return [lk.name for lk in self._links]

    def link_up(self, link_name: str) -> bool:
        with self._lock:
            t = self._light_now()
            li = self._link_id(link_name)
            return bool(self._static_up[li]) and self._link_lit(li, t)

    def link_states(self, names: list[str]) -> list[tuple[bool, float, float]]:
        """``(up, speed_gbps, rate_fraction)`` of each named link: the traffic model's bulk read."""
        with self._lock:
            t = self._light_now()
            key = tuple(names)
            if self._names_key != key:
                idx = [self._link_id(n) for n in names]
                self._names_key, self._names_idx = key, np.array(idx, dtype=np.int64)
                self._names_gbps = [self.link_speed_gbps(n) for n in names]
            up = self._static_up.copy()
            up[self._timeline.dark_links(t)] = False
            if self._rate_fraction:
                fractions = [self._rate_fraction.get(n, 1.0) for n in names]
            else:
                fractions = [1.0] * len(names)
            return list(zip(up[self._names_idx].tolist(), self._names_gbps, fractions, strict=True))

    def link_rate_fraction(self, link_name: str) -> float:
        self._link_id(link_name)
        return self._rate_fraction.get(link_name, 1.0)

    def set_link_rate_fraction(self, link_name: str, fraction: float | None) -> None:
        """Override a link's usable rate (a straggler); ``None`` restores 1.0."""
        self._link_id(link_name)
        with self._lock:  # the traffic model runs up to now at the old rate first
            self._sync()
            self._bump()
        if fraction is None:
            self._rate_fraction.pop(link_name, None)
        else:
            self._rate_fraction[link_name] = float(fraction)

    def link_speed_gbps(self, link_name: str) -> float:
        lk = self._links[self._link_id(link_name)]
        end = lk.ends[0]
        return self._ports[(end.device, end.port)].speed_gbps

    def link_of(self, device: str, port: str) -> str | None:
        p = self._port(device, port)
        return None if p.link is None else self._links[p.link].name

    def flapping_links(self) -> list[str]:
        """Links with a flap on them: dark and lit in turn, whatever their state now."""
        with self._lock:
            return [self._links[li].name for li in self._timeline.flapping()]

    def link_transitions(
        self, link_name: str, t0_s: float, t1_s: float
    ) -> list[tuple[float, bool]]:
        """Oper-state changes ``(time_s, up)`` of a link in [t0, t1], flaps included."""
        with self._lock:
            self._light_now()  # history changes only in steps and changes; flaps: closed form
            return self._timeline.transitions(self._link_id(link_name), t0_s, t1_s)

    # --- interfaces and counters ---------------------------------------------------------

    def interfaces(self, device: str) -> list[InterfaceStatus]:
        return [self.interface(device, port) for port in self.ports(device)]

    def interface(self, device: str, port: str) -> InterfaceStatus:
        with self._lock:
            self._light_now()
            p = self._port(device, port)
            link = None if p.link is None else self._links[p.link].name
            oper = bool(link and p.admin_up and self.link_up(link))
            return InterfaceStatus(
                device=device,
                port=port,
                admin_up=p.admin_up,
                oper_up=oper,
                speed_gbps=p.speed_gbps,
                mtu_bytes=p.mtu_bytes,
                lanes=0 if p.module is None else int(self.modules.lanes[p.module]),
                mac=p.mac,
                link=link,
                optic="" if p.module is None else self.inventory[p.module].optic,
            )

    def set_admin(self, device: str, port: str, up: bool) -> None:
        """Admin up/down; a disabled port turns its laser off (the far end sees LOS)."""
        with self._lock:
            self._sync()
            self._port(device, port).admin_up = bool(up)
            self._changed()

    def set_mtu(self, device: str, port: str, mtu_bytes: int) -> None:
        with self._lock:
            self._port(device, port).mtu_bytes = int(mtu_bytes)

    def set_port_load(self, device: str, port: str, load_fraction: float) -> None:
        """Traffic load 0..1 on a port; module temperature follows it."""
        with self._lock:
            self._sync()
            self._port(device, port).load = min(max(float(load_fraction), 0.0), 1.0)
            self._bump()

    def add_port_counters(self, device: str, port: str, **deltas: int) -> None:
        """Add traffic-driven counts (``rx_octets=...``, see COUNTER_FIELDS)."""
        with self._lock:
            p = self._port(device, port)
            for key, value in deltas.items():
                if key not in p.extra:
                    raise ModelError(f"unknown counter {key!r}; known: {', '.join(COUNTER_FIELDS)}")
                p.extra[key] += int(value)

    def add_counter_source(self, source: CounterSource) -> None:
        """Register ``source(device, port) -> {counter: cumulative value}``, read lazily."""
        with self._lock:
            self._counter_sources.append(source)

    def _raw_counters(self, p: PortState, t_s: float | None = None) -> dict[str, int]:
        raw = dict(p.extra)
        raw["rx_fcs_errors"] = 0
        raw["oper_down_count"] = 0
        if p.module is not None:
            m = p.module
            lldp = int(self.counts.up_s[m] // LLDP_INTERVAL_S)
            for side in ("rx", "tx"):
                raw[f"{side}_packets"] += lldp
                raw[f"{side}_octets"] += lldp * LLDP_FRAME_BYTES
            fcs = int(self.counts.fec_unc[m])
            raw["rx_fcs_errors"] = fcs
            raw["rx_errors"] += fcs
            raw["oper_down_count"] = int(self.counts.down_count[m])
            if t_s is not None:  # read between steps: the flaps' drops since, in closed form
                raw["oper_down_count"] += self._pending_drops(m, t_s)
        for source in self._counter_sources:
            for key, value in source(p.device, p.port).items():
                raw[key] = raw.get(key, 0) + int(value)
        return raw

    def counters(self, device: str, port: str) -> IfCounters:
        with self._lock:
            p = self._port(device, port)
            t = self._light_count(p.module)
            raw = self._raw_counters(p, t)
            since_clear = {k: raw[k] - p.base.get(k, 0) for k in IF_COUNTER_FIELDS}
            return IfCounters(device=device, port=port, time_s=t, **since_clear)

    def clear_counters(self, device: str, port: str | None = None) -> None:
        """Zero interface and FEC counters of one port or a whole device."""
        with self._lock:
            self._sync()
            for name in [port] if port else self.ports(device):
                p = self._port(device, name)
                p.base = self._raw_counters(p)
                if p.module is not None:
                    self.counts.clear_fec(p.module)

    # --- transceivers -----------------------------------------------------------------

    def transceiver(self, device: str, port: str) -> TransceiverInventory:
        with self._lock:
            p = self._port(device, port)
            if p.module is None:
                return TransceiverInventory(device=device, port=port, present=False)
            return self.inventory[p.module]

    def set_inventory(self, device: str, port: str, **fields: Any) -> TransceiverInventory:
        """Change inventory fields (a fault swapping an optic); returns the previous record."""
        with self._lock:
            m = self._module(device, port)
            old = self.inventory[m]
            self.inventory[m] = replace(old, **fields)
            return old

    def dom_thresholds(self, device: str, port: str) -> DomThresholds:
        with self._lock:
            return self._specs[self._module(device, port)].thresholds

    def dom(self, device: str, port: str) -> TransceiverDom:
        """A DOM reading: the model's values plus small measurement noise.

        Flags are raised by the module's own sampling (every model step and every
        change), not by this read, so reading never changes what a flag says.
        """
        with self._lock:
            t = self._light_now()
            m = self._module(device, port)
            n = int(self.modules.lanes[m])
            st = self._read_state(t)
            v = self._cached(f"dom_values{id(st)}", lambda: dom_values(self.modules, st))[m]
            temp, vcc = float(v[0, 0]), float(v[1, 0])
            tx, rx, bias = v[2, :n].tolist(), v[3, :n].tolist(), v[4, :n].tolist()
            z = self.rng.standard_normal(2 + 3 * n).tolist()
            sp, sb = NOISE["power_dbm"], NOISE["bias_ma"]
            lanes = tuple(
                LaneDom(
                    lane=i + 1,
                    # no noise on a dark reading or a disabled laser
                    tx_power_dbm=round(tx[i] + sp * z[2 + i], 2) if tx[i] > DARK_DBM else DARK_DBM,
                    rx_power_dbm=round(rx[i] + sp * z[2 + n + i], 2)
                    if rx[i] > DARK_DBM
                    else DARK_DBM,
                    bias_ma=round(max(bias[i] + sb * z[2 + 2 * n + i], 0.0), 3)
                    if bias[i] > 0
                    else 0.0,
                )
                for i in range(n)
            )
            return TransceiverDom(
                device=device,
                port=port,
                temperature_c=round(temp + NOISE["temperature_c"] * z[0], 2),
                voltage_v=round(vcc + NOISE["voltage_v"] * z[1], 4),
                lanes=lanes,
                time_s=t,
            )

    def dom_flags(self, device: str, port: str, clear: bool = True) -> list[DomFlag]:
        """Latched flags (and those still asserted); reading clears the latches."""
        with self._lock:
            self._sync()
            return self.flags.read(self._module(device, port), clear=clear)

    # --- FEC and PRBS ---------------------------------------------------------------------

    def fec(self, device: str, port: str) -> FecStats:
        with self._lock:
            self._sync()
            m = self._module(device, port)
            li = self._module_port[m].link
            errors_1s = None
            if li is not None and self._static_up[li] and self._link_lit(li):
                # like a device's FEC BER readout: errors in the last second, refreshed per step
                n = int(self.modules.lanes[m])
                errors_1s = self._cached("errors_1s", self._errors_last_second)[m, :n].tolist()
            return self.counts.fec_stats(device, port, m, self.modules, errors_1s)

    def ber(self, device: str, port: str) -> tuple[float, ...]:
        """The model's true pre-FEC BER per lane at this receiver (no counting noise)."""
        with self._lock:
            self._sync()
            m = self._module(device, port)
            return tuple(float(b) for b in self._read_state().ber[m, : self.modules.lanes[m]])

    def margin_db(self, device: str, port: str) -> tuple[float, ...]:
        """Rx OMA margin above sensitivity per lane (what the BER is computed from)."""
        with self._lock:
            self._sync()
            m = self._module(device, port)
            return tuple(float(x) for x in self._state.margin_db[m, : self.modules.lanes[m]])

    def prbs_start(
        self,
        device: str,
        port: str,
        pattern: str = "PRBS31Q",
        *,
        generator: bool = True,
        checker: bool = True,
    ) -> None:
        """Start the PRBS generator and/or checker; the link leaves service meanwhile."""
        with self._lock:
            self._sync()
            m = self._module(device, port)
            if generator:
                self.modules.gen_pattern[m] = pattern
            if checker:
                self.modules.chk_pattern[m] = pattern
                self.counts.reset_prbs(m)
            self._changed()

    def prbs_stop(self, device: str, port: str) -> None:
        with self._lock:
            self._sync()
            m = self._module(device, port)
            self.modules.gen_pattern[m] = None
            self.modules.chk_pattern[m] = None
            self._changed()

    def prbs_clear(self, device: str, port: str) -> None:
        with self._lock:
            self._sync()
            self.counts.reset_prbs(self._module(device, port))

    def prbs_read(self, device: str, port: str) -> list[PrbsLane]:
        with self._lock:
            self._sync()
            m = self._module(device, port)
            lock = prbs_lock(self.modules, self._read_state())[m]
            return self.counts.prbs_lanes(m, self.modules, lock)

    # --- cabling, devices, environment -------------------------------------------------------

    def physical_peer(self, device: str, port: str) -> Endpoint | None:
        """What ``device:port`` is really plugged into (differs from the plan when miswired)."""
        p = self._port(device, port)
        if p.module is None:
            return None
        peer = self._module_port[int(self.modules.peer[p.module])]
        return Endpoint(device=peer.device, port=peer.port)

    def swap_far_ends(self, link_a: int, link_b: int) -> None:
        """Miswire: link_a's a-end now reaches link_b's b-end and vice versa."""
        ma = self._ports[(self._links[link_a].ends[0].device, self._links[link_a].ends[0].port)]
        mb = self._ports[(self._links[link_b].ends[0].device, self._links[link_b].ends[0].port)]
        a, b = ma.module, mb.module
        assert a is not None and b is not None
        peer = self.modules.peer
        fa, fb = int(peer[a]), int(peer[b])
        peer[a], peer[fb] = fb, a
        peer[b], peer[fa] = fa, b

    def lldp_neighbours(self, device: str) -> list[LldpAdvert]:
        """Neighbours heard on each oper-up port, from the physical cabling."""
        with self._lock:
            self._light_now()
            out = []
            for port in self.ports(device):
                p = self._ports[(device, port)]
                if p.module is None or not self.interface(device, port).oper_up:
                    continue
                peer = self._module_port[int(self.modules.peer[p.module])]
                peer_dev = self.testbed.devices.get(peer.device)
                out.append(
                    LldpAdvert(
                        local_port=port,
                        chassis_id=mac_of(peer.device),
                        system_name=peer.device,
                        port_id=peer.port,
                        port_description=peer.port,
                        management_address=peer_dev.address if peer_dev else None,
                        ttl_s=LLDP_TTL_S,
                    )
                )
            return out

    def device_facts(self, device: str) -> DeviceFacts:
        dev = self.testbed.devices.get(device)
        if dev is None:
            raise ModelError(f"no device {device!r} in the model")
        return DeviceFacts(
            name=device,
            role=dev.role,
            driver=dev.driver,
            serial=f"EMU{crc(device) % 10**8:08d}",
            base_mac=mac_of(device),
            firmware_version=self._firmware.get(device),
            reachable=self.reachable(device),
        )

    def set_firmware(self, device: str, version: str | None) -> str | None:
        """Set a device's firmware version; returns the previous one."""
        if device not in self.testbed.devices:
            raise ModelError(f"no device {device!r} in the model")
        old = self._firmware.get(device)
        self._firmware[device] = version
        return old

    def reachable(self, device: str) -> bool:
        """False while an unreachable_device fault holds: emulators stop answering."""
        return device not in self.unreachable()

    def unreachable(self) -> frozenset[str]:
        """Every device an unreachable_device fault holds now.

        Only a fault's start or end changes it: without one due, no step.
        """
        with self._lock:
            if STEP_EVERY_READ or (self._events and self._events[0][0] <= self.clock.now_s()):
                self._sync()
            return frozenset(self._unreachable)

    def refusing(self) -> frozenset[str]:
        """The unreachable devices that refuse connections (rebooting) rather than hang
        (``set_reachable`` keeps them a subset of the unreachable ones)."""
        with self._lock:
            return frozenset(self._refusing)

    def set_reachable(self, device: str, reachable: bool, *, refusing: bool = False) -> None:
        """``refusing``: the device is dark the way a rebooting box is (connections refused
        at once), not the way a hung one is (connections time out)."""
        if device not in self.testbed.devices:
            raise ModelError(f"no device {device!r} in the model")
        (self._unreachable.discard if reachable else self._unreachable.add)(device)
        (self._refusing.add if refusing and not reachable else self._refusing.discard)(device)
        # No clock hold here: a client waiting on a hung device waits on the wall clock (its
        # transport's timeout), so the emulators hold ``serving`` while one does (a silent
        # SSH, SNMP, SCPI or OTG server, until its client gives up). Held for the whole
        # fault, the clock lost its idle skips for the rest of the run though the clients
        # (circuit breaker: labtest.transports.breaker) had stopped asking (issue 36).

    def ambient_c(self, device: str) -> float:
        return self._ambient_c[device]

    def set_ambient_c(self, temp_c: float, devices: list[str] | None = None) -> None:
        """Set the air temperature around devices (a chamber); modules follow with a lag."""
        with self._lock:
            self._sync()
            for name in devices if devices is not None else list(self.testbed.devices):
                if name not in self._ambient_c:
                    raise ModelError(f"no device {name!r} in the model")
                self._ambient_c[name] = float(temp_c)
            self._bump()

    def flap_link(self, target: str, period_s: float, down_s: float) -> Callable[[], None]:
        """The link goes dark for ``down_s`` at the start of every ``period_s`` from now;
        returns the undo (the flapping ends then). The effect of both flap faults, the
        acceptance catalogue's ``flapping_link`` and the doctor's hourly ``intermittent_flap``,
        which differ only in their defaults."""
        flap = self._timeline.add(
            self.resolve_link(target), Flap(start_s=self._t_s, period_s=period_s, down_s=down_s)
        )

        def undo() -> None:
            flap.end_s = self.model_time_s

        return undo

    # --- faults --------------------------------------------------------------------------------

    def inject(
        self,
        kind: str,
        target: str = "",
        *,
        at_s: float | None = None,
        duration_s: float | None = None,
        **params: Any,
    ) -> str:
        """Inject a catalogue fault now (or at virtual ``at_s``); returns its id."""
        with self._lock:
            self._sync()
            parsed = parse_params(kind, params)
            self._check_target(target)
            start = self._t_s if at_s is None else max(float(at_s), self._t_s)
            fault = FaultInstance(
                id=f"f{next(self._fault_ids)}",
                kind=kind,
                target=target,
                params=parsed,
                at_s=start,
                duration_s=duration_s,
            )
            self.faults[fault.id] = fault
            if start <= self._t_s:
                self._apply(fault)
            else:
                heapq.heappush(self._events, (start, next(self._seq), lambda: self._apply(fault)))
            return fault.id

    def clear(self, kind_or_id: str) -> int:
        """Clear one fault by id, or every fault of a kind; returns how many."""
        with self._lock:
            self._sync()
            hits = [
                f
                for f in self.faults.values()
                if f.state != "cleared" and kind_or_id in (f.id, f.kind)
            ]
            for f in hits:
                self._undo(f)
            return len(hits)

    def active_faults(self) -> list[FaultInstance]:
        with self._lock:
            self._sync()
            return [f for f in self.faults.values() if f.state == "active"]

    def _check_target(self, target: str) -> None:
        if not target:
            return
        if target in self.testbed.devices or target in self._link_index:
            return
        device, sep, port = target.partition(":")
        if sep and (device, port) in self._ports:
            return
        raise FaultError(f"fault target {target!r} is not a device, port or link of the testbed")

    def _apply(self, fault: FaultInstance) -> None:
        if fault.state != "scheduled":
            return
        was_busy, self._busy = self._busy, True
        try:
            fault.undo = CATALOGUE[fault.kind].effect(self, fault.target, fault.params)
        finally:
            self._busy = was_busy
        fault.state = "active"
        self._changed()
        if fault.duration_s is not None:
            end = self._t_s + fault.duration_s
            heapq.heappush(self._events, (end, next(self._seq), lambda: self._undo(fault)))

    def _undo(self, fault: FaultInstance) -> None:
        if fault.state == "cleared":
            return  # cleared by hand before its duration ran out
        if fault.state == "active" and fault.undo is not None:
            was_busy, self._busy = self._busy, True
            try:
                fault.undo()
            finally:
                self._busy = was_busy
        fault.state = "cleared"
        fault.cleared_at_s = self._t_s
        self._changed()
