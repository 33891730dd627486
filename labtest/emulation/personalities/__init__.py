"""Device personalities of the emulated lab, and the state an emulated switch keeps.

A personality (``sonic.serve``, ``eos.serve``, ``nxos.serve``) turns one testbed
device into what the lab serves: a CLI handler factory, a MIB, a banner. Everything a
switch *is* lives in the fabric model (ports, optics, counters, QoS); what only the
switch's software knows lives here, in :class:`SwitchState`, shared by every
SSH session and the SNMP agent of that switch: its uptime and reboots, the
config files it saved, its PFC watchdog timers, and the ifIndex of each port.
:class:`SwitchDevice` adds what the CLI sessions of one switch share (counter
samples for rates); each OS's personality package extends it with what its
tools keep (``sonic.SonicDevice``, ``eos.EosDevice``, ``nxos.NxosDevice``).

Mutations of the traffic model go through ``fabric.schedule`` so they run under
the fabric's lock, in the same lock order as the fault catalogue (fabric, then
traffic); calling the traffic model directly from an SSH thread could deadlock
against a clock step running on another thread.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from labtest.emulation.model import LldpAdvert
from labtest.emulation.model.clock import VirtualTimer
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.traffic.records import QueueTraffic
from labtest.emulation.model.traffic.topology import device_settings
from labtest.emulation.personalities._text import natural_key
from labtest.testbed.model import Device

STARTUP = "startup"  # key of the config a (re)boot loads
DEFAULT_REBOOT_DOWN_S = 3.0  # a reboot keeps the device dark this long (lab seconds)
REBOOT_DELAY_S = 0.2  # lets the reboot command's own answer leave before the silence
PRIORITIES = 8
SWITCH_DRIVERS = ("sonic", "eos", "nxos")  # the families served with a switch personality
PEER_DESCRIPTIONS = {  # LLDP system description by family (anything else: a Linux host)
    "sonic": "SONiC Software Version: SONiC (emulated)",
    "eos": "Arista Networks EOS (emulated)",
    "nxos": "Cisco Nexus Operating System (NX-OS) Software (emulated)",
}
IfIndexRule = Callable[[str], int | None]


@dataclass(frozen=True)
class CounterDelta:
    """How far one port's counters moved between two samples (all 0 without an earlier one)."""

    interval_s: float
    rx_octets: int
    tx_octets: int
    rx_packets: int
    tx_packets: int

    def per_s(self, count: int) -> float:
        return count / self.interval_s if self.interval_s else 0.0


@dataclass(frozen=True)
class PortView:
    """One switch port as its CLI and MIB show it, read from the fabric at one instant."""

    name: str
    if_index: int
    admin_up: bool
    oper_up: bool
    speed_gbps: float
    mtu_bytes: int
    mac: str
    cabled: bool
    optic: str  # catalogue name, "" without a module
    rx_packets: int = 0
    tx_packets: int = 0
    rx_octets: int = 0
    tx_octets: int = 0
    rx_errors: int = 0
    tx_errors: int = 0
    rx_discards: int = 0
    tx_discards: int = 0
    rx_fcs_errors: int = 0
    link_down_count: int = 0
    pfc_rx_frames: tuple[int, ...] = (0,) * PRIORITIES
    pfc_tx_frames: tuple[int, ...] = (0,) * PRIORITIES
    queues: tuple[QueueTraffic, ...] = ()  # the traffic model's, per priority
    time_s: float = 0.0

    @property
    def status_changes(self) -> int:
        """Oper-status changes as a switch counts them: each drop and each return (a port
        dark now has not come back from its last drop)."""
        return 2 * self.link_down_count - int(self.link_down_count > 0 and not self.oper_up)


@dataclass
class PfcwdConfig:
    """PFC watchdog settings as ``pfcwd start`` sets them (SONiC defaults: 200/200/200 ms)."""

    action: str = "drop"
    detection_ms: int = 200
    restoration_ms: int = 200
    poll_ms: int = 200


def initial_uptime_s(name: str) -> float:
    """A switch in a lab has been up for a while: 3..10 days, stable per name."""
    return 3 * 86400 + zlib.crc32(name.encode()) % (7 * 86400)


def assign_if_indexes(ports: list[str], rule: IfIndexRule) -> dict[str, int]:
    """ifIndex per port by the OS's own rule; clashes and odd names get free numbers."""
    out: dict[str, int] = {}
    taken: set[int] = set()
    for port in ports:
        index = rule(port)
        if index is not None and index > 0 and index not in taken:
            out[port] = index
            taken.add(index)
    spare = max(taken, default=0) + 1
    for port in ports:
        if port not in out:
            out[port] = spare
            spare += 1
    return out


@dataclass
class SwitchState:
    """What one emulated switch keeps beyond the fabric (see the module docstring)."""

    fabric: Fabric
    name: str
    device: Device
    if_index_rule: IfIndexRule
    ports: list[str] = field(init=False)
    if_index: dict[str, int] = field(init=False)
    pfcwd: PfcwdConfig = field(init=False)
    saved: dict[str, dict[str, Any]] = field(init=False)
    descriptions: dict[str, str] = field(init=False)  # port -> description (ifAlias)
    boots: int = field(default=0, init=False)
    _boot_s: float = field(init=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False)
    _timers: list[threading.Timer | VirtualTimer] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.ports = sorted(self.fabric.ports(self.name), key=natural_key)
        self.if_index = assign_if_indexes(self.ports, self.if_index_rule)
        self.pfcwd = _watchdog_defaults(self.fabric, self.name, self.device)
        given = self.device.vars.get("port_descriptions")
        self.descriptions = (
            {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
        )
        self._boot_s = self.fabric.now_s() - initial_uptime_s(self.name)
        self.saved = {STARTUP: self.running_config()}

    # --- time and identity -------------------------------------------------------

    def uptime_s(self) -> float:
        return max(self.fabric.now_s() - self._boot_s, 0.0)

    def boot_epoch_s(self) -> float:
        """Wall-clock time of the last boot (EOS ``bootupTimestamp``)."""
        return time.time() - self.uptime_s()

    def var(self, key: str, default: str) -> str:
        return str(self.device.vars.get(key, default))

    # --- ports -------------------------------------------------------------------

    def port_view(self, port: str) -> PortView:
        fabric = self.fabric
        st = fabric.interface(self.name, port)
        view = PortView(
            name=port,
            if_index=self.if_index[port],
            admin_up=st.admin_up,
            oper_up=st.oper_up,
            speed_gbps=st.speed_gbps,
            mtu_bytes=st.mtu_bytes,
            mac=st.mac,
            cabled=st.link is not None,
            optic=st.optic,
        )
        c = fabric.counters(self.name, port)
        totals: dict[str, Any] = {
            "rx_packets": c.rx_packets,
            "tx_packets": c.tx_packets,
            "rx_octets": c.rx_octets,
            "tx_octets": c.tx_octets,
            "rx_errors": c.rx_errors,
            "tx_errors": c.tx_errors,
            "rx_discards": c.rx_drops,
            "tx_discards": c.tx_drops,
            "rx_fcs_errors": c.rx_fcs_errors,
            "link_down_count": c.oper_down_count,
            "time_s": c.time_s,
        }
        if view.cabled:
            t = fabric.traffic.port_counters(f"{self.name}:{port}")
            totals["rx_packets"] += t.rx_packets
            totals["tx_packets"] += t.tx_packets
            totals["rx_octets"] += t.rx_bytes
            totals["tx_octets"] += t.tx_bytes
            totals["rx_discards"] += t.rx_discards
            totals["tx_discards"] += t.tx_drops
            totals["rx_errors"] += t.rx_fcs_errors  # frames the wire corrupted (gray faults)
            totals["rx_fcs_errors"] += t.rx_fcs_errors
            totals["pfc_rx_frames"] = tuple(t.pfc_rx_frames)
            totals["pfc_tx_frames"] = tuple(t.pfc_tx_frames)
            totals["queues"] = tuple(t.queues)
        return PortView(**{**view.__dict__, **totals})

    def views(self) -> list[PortView]:
        return [self.port_view(p) for p in self.ports]

    def has_port(self, port: str) -> bool:
        return port in self.if_index

    # --- LLDP peers ----------------------------------------------------------------

    def is_switch(self, device: str) -> bool:
        """A neighbour that bridges and routes (a switch of the testbed), for LLDP's
        capability fields."""
        peer = self.fabric.testbed.devices.get(device)
        return peer is not None and peer.driver in SWITCH_DRIVERS

    def peer_description(self, device: str) -> str:
        """The system description a neighbour advertises, by its family."""
        peer = self.fabric.testbed.devices.get(device)
        return PEER_DESCRIPTIONS.get(peer.driver if peer is not None else "", "Linux (emulated)")

    # --- QoS state ---------------------------------------------------------------

    def pfc_priorities(self) -> list[int]:
        """Lossless priorities (PFC on), as the traffic model holds them (faults included)."""
        return sorted(self.fabric.traffic.qos[self.name].pfc)

    def pfcwd_enabled(self) -> bool:
        return bool(self.fabric.traffic.qos[self.name].pfcwd)

    def _in_model(self, action: Callable[[], object]) -> None:
        """Run ``action`` under the fabric's lock (see the module docstring)."""

        def run() -> None:
            action()

        self.fabric.schedule(0.0, run)

    def set_pfc(self, priority: int, enabled: bool) -> None:
        traffic = self.fabric.traffic
        if (priority in self.pfc_priorities()) != enabled:
            self._in_model(lambda: traffic.set_pfc(self.name, priority, enabled))

    def set_pfcwd(self, enabled: bool) -> None:
        traffic = self.fabric.traffic
        if self.pfcwd_enabled() != enabled:
            self._in_model(lambda: traffic.set_pfcwd(self.name, enabled))

    # --- configuration -----------------------------------------------------------

    def running_config(self) -> dict[str, Any]:
        """The part of the configuration the emulator models, as plain data."""
        admin, mtu = {}, {}
        for port in self.ports:
            st = self.fabric.interface(self.name, port)
            admin[port], mtu[port] = st.admin_up, st.mtu_bytes
        wd = self.pfcwd
        return {
            "admin": admin,
            "mtu": mtu,
            "description": dict(self.descriptions),
            "pfc": self.pfc_priorities(),
            "pfcwd": {
                "enabled": self.pfcwd_enabled(),
                "action": wd.action,
                "detection_ms": wd.detection_ms,
                "restoration_ms": wd.restoration_ms,
                "poll_ms": wd.poll_ms,
            },
        }

    def apply_config(self, config: dict[str, Any]) -> None:
        """Make the running state what ``config`` says (a replace, not a merge)."""
        with self._lock:
            for port, up in config["admin"].items():
                if self.has_port(port) and self.fabric.interface(self.name, port).admin_up != up:
                    self.fabric.set_admin(self.name, port, up)
            for port, mtu in config["mtu"].items():
                if self.has_port(port):
                    self.fabric.set_mtu(self.name, port, mtu)
            self.descriptions = dict(config["description"])
            for priority in range(PRIORITIES):
                self.set_pfc(priority, priority in config["pfc"])
            wd = config["pfcwd"]
            self.pfcwd = PfcwdConfig(
                wd["action"], wd["detection_ms"], wd["restoration_ms"], wd["poll_ms"]
            )
            self.set_pfcwd(wd["enabled"])

    def save(self, key: str) -> None:
        with self._lock:
            self.saved[key] = self.running_config()

    def load(self, key: str) -> bool:
        """Apply a saved config; False when there is no such file."""
        with self._lock:
            config = self.saved.get(key)
        if config is None:
            return False
        self.apply_config(config)
        return True

    # --- reboot ------------------------------------------------------------------

    def reboot(self, down_s: float | None = None) -> None:
        """Go silent on every protocol shortly, come back ``down_s`` later booted afresh."""
        down = float(self.device.vars.get("reboot_down_s", DEFAULT_REBOOT_DOWN_S))
        down = down if down_s is None else down_s
        self._after(REBOOT_DELAY_S, partial(self.fabric.set_reachable, self.name, False,
                                            refusing=True))
        self._after(REBOOT_DELAY_S + down, self._booted)

    def _booted(self) -> None:
        with self._lock:
            self.load(STARTUP)
            self.fabric.clear_counters(self.name)
            self._boot_s = self.fabric.now_s()
            self.boots += 1
        self.fabric.set_reachable(self.name, True)

    def _after(self, delay_s: float, action: Callable[[], None]) -> None:
        """``action`` after ``delay_s`` at the lab's pace (virtual: an elastic clock skips idle)."""
        clock = self.fabric.clock
        if clock.realtime:
            timer: threading.Timer | VirtualTimer = clock.call_later(
                delay_s * clock.time_scale, action
            )
        else:
            timer = threading.Timer(delay_s, action)
            timer.daemon = True
            timer.start()
        with self._lock:
            self._timers = [t for t in self._timers if t.is_alive()]
            self._timers.append(timer)

    @property
    def rebooting(self) -> bool:
        """A reboot step is still pending."""
        with self._lock:
            return any(t.is_alive() for t in self._timers)

    def stop(self) -> None:
        """Cancel pending reboot steps (the lab calls it through ``Served.stop``)."""
        with self._lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        for timer in timers:
            timer.join(1.0)


def _watchdog_defaults(fabric: Fabric, name: str, device: Device) -> PfcwdConfig:
    """Watchdog timers from the device's traffic ``vars``; vars the traffic model refuses
    are a ConfigError naming the device's var, not silent defaults."""
    where = str(fabric.testbed.source or fabric.testbed.name)
    s = device_settings(where, name, dict(device.vars or {}))
    return PfcwdConfig(
        s.pfcwd_action, int(s.pfcwd_detect_ms), int(s.pfcwd_restore_ms), int(s.pfcwd_poll_ms)
    )


@dataclass
class SwitchDevice:
    """One switch as all its CLI sessions share it: the :class:`SwitchState` plus the
    counter samples its rate columns are computed from; each OS adds what its tools keep."""

    state: SwitchState
    rates: dict[str, tuple[float, PortView]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def fabric(self) -> Fabric:
        return self.state.fabric

    def since_last(self, view: PortView, min_interval_s: float) -> CounterDelta:
        """Counter movement since the port's previous sample, for the rate columns; a sample
        is kept only ``min_interval_s`` after the kept one, as the OS's rate poller does.
        Counters that went back (cleared, rebooted) count as no movement."""
        with self.lock:
            previous = self.rates.get(view.name)
            if previous is None or view.time_s - previous[0] >= min_interval_s:
                self.rates[view.name] = (view.time_s, view)
        if previous is None or view.time_s <= previous[0]:
            return CounterDelta(0.0, 0, 0, 0, 0)
        old = previous[1]
        return CounterDelta(
            interval_s=view.time_s - previous[0],
            rx_octets=max(view.rx_octets - old.rx_octets, 0),
            tx_octets=max(view.tx_octets - old.tx_octets, 0),
            rx_packets=max(view.rx_packets - old.rx_packets, 0),
            tx_packets=max(view.tx_packets - old.tx_packets, 0),
        )

    def lldp_neighbours(self) -> list[LldpAdvert]:
        """What the switch heard, in ifIndex order (how both OSes list their table)."""
        return sorted(
            self.fabric.lldp_neighbours(self.name),
            key=lambda n: self.state.if_index[n.local_port],
        )
