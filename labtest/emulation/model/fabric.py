"""The fabric model: every port, module and link of a testbed, in virtual time.

``Fabric(testbed)`` builds the model from any testbed file: interfaces from
the devices' ports and the cabling plan, one optical module at each end of a
link, the physical channel between them, and the faults listed under
``emulation.faults``. Device emulators read it (interfaces, counters, DOM,
FEC, PRBS, LLDP) to print what a real switch or host would; the traffic model
(``fabric.traffic``) reads link state through the ``LinkView`` methods.

Time is lazy: nothing runs in the background. Every read first integrates the
model from the last time it was brought up to date to ``clock.now_s()``: in
steps of at most ``MAX_STEP_S``, split at scheduled events (faults starting or
ending), with counts drawn from distributions for the whole step. A 72-hour
burn-in sampled every minute is 4320 small numpy steps, not 1e13 codewords.

State lives in numpy arrays indexed by *module* (one per link end), so one
step updates every port at once; ``ModuleArrays`` is what fault effects in
``catalogue.py`` change.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from labtest.emulation.model import physics
from labtest.emulation.model.clock import VirtualClock
from labtest.emulation.model.faults import (
    CATALOGUE,
    FaultError,
    FaultInstance,
    load_catalogue,
    parse_params,
)
from labtest.emulation.model.optics import (
    BIAS_REF_TEMP_C,
    BIAS_TEMPCO_PER_C,
    CONDITIONS,
    DARK_DBM,
    LEVELS,
    QUANTITIES,
    THERMAL_TAU_S,
    VCC_NOM_V,
    DomFlag,
    DomThresholds,
    FlagBank,
    LaneDom,
    OpticSpec,
    TransceiverDom,
    TransceiverInventory,
    optic_for,
    threshold_array,
    threshold_levels,
)
from labtest.emulation.model.physics import FecStats, PrbsLane
from labtest.emulation.model.traffic import TrafficModel
from labtest.testbed.model import Emulation, Endpoint, Link, Testbed

MAX_LANES = 8
LLDP_INTERVAL_S = 30.0  # LLDP transmit interval (IEEE 802.1AB default msgTxInterval)
LLDP_TTL_S = 120
LLDP_FRAME_BYTES = 256
HOST_ROLES = frozenset({"host"})

#: DOM read noise (1 sigma) [emulator]: small enough to stay well inside LSB-level jitter
NOISE = {"temperature_c": 0.1, "voltage_v": 0.002, "power_dbm": 0.05, "bias_ma": 0.2}

CounterSource = Callable[[str, str], Mapping[str, int]]
COUNTER_FIELDS = (
    "rx_octets",
    "rx_packets",
    "tx_octets",
    "tx_packets",
    "rx_errors",
    "tx_errors",
    "rx_drops",
    "tx_drops",
)


class ModelError(LookupError):
    """A device, port or link the model does not have, or a call it cannot honour."""


# --- records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InterfaceStatus:
    device: str
    port: str
    admin_up: bool
    oper_up: bool
    speed_gbps: float
    mtu_bytes: int
    lanes: int
    mac: str
    link: str | None  # Link.name in the cabling plan
    optic: str  # catalogue name of the module, "" when none


@dataclass(frozen=True, slots=True)
class IfCounters:
    """One port's interface counters as the fabric keeps them (the truth a driver's
    ``InterfaceCounters`` reading is checked against)."""

    device: str
    port: str
    rx_octets: int
    rx_packets: int
    tx_octets: int
    tx_packets: int
    rx_errors: int  # includes FCS errors
    tx_errors: int
    rx_drops: int
    tx_drops: int
    rx_fcs_errors: int  # frames hit by an uncorrectable codeword
    oper_down_count: int  # link-down transitions seen by this port
    time_s: float


@dataclass(frozen=True, slots=True)
class LldpAdvert:
    """What the peer on ``local_port`` advertises (the truth a driver's ``LldpNeighbor``
    reading is checked against)."""

    local_port: str
    chassis_id: str  # the neighbour's base MAC
    system_name: str
    port_id: str
    port_description: str
    management_address: str | None
    ttl_s: int


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    name: str
    role: str
    driver: str
    serial: str
    base_mac: str
    firmware_version: str | None  # None: the emulator's default for its OS
    reachable: bool


# --- internal state ----------------------------------------------------------


@dataclass
class _Port:
    device: str
    port: str
    mac: str
    speed_gbps: float
    mtu_bytes: int
    link: int | None = None  # index into Fabric._links
    module: int | None = None
    admin_up: bool = True
    load: float = 0.0
    extra: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTER_FIELDS, 0))
    base: dict[str, int] = field(default_factory=dict)  # snapshot at the last clear


@dataclass
class _Flap:
    """A flapping link: down for ``down_s`` at the start of every ``period_s``."""

    start_s: float
    period_s: float
    down_s: float
    end_s: float = math.inf

    def _cum_down(self, t: float) -> float:
        t = min(max(t, self.start_s), self.end_s) - self.start_s
        k = math.floor(t / self.period_s)
        return k * self.down_s + min(self.down_s, t - k * self.period_s)

    def down_s_in(self, t0: float, t1: float) -> float:
        return self._cum_down(t1) - self._cum_down(t0)

    def _starts_before(self, t: float) -> int:
        if t <= self.start_s:
            return 0
        n = math.ceil((t - self.start_s) / self.period_s)
        if math.isfinite(self.end_s):
            n = min(n, math.ceil((self.end_s - self.start_s) / self.period_s))
        return n

    def drops_in(self, t0: float, t1: float) -> int:
        """Link-down events in [t0, t1): consecutive steps count each drop once."""
        return self._starts_before(t1) - self._starts_before(t0)

    def is_down(self, t: float) -> bool:
        if not self.start_s <= t < self.end_s:
            return False
        return (t - self.start_s) % self.period_s < self.down_s

    def edges(self, t0: float, t1: float, limit: int = 10000) -> list[float]:
        if t1 < self.start_s:
            return []
        k0 = max(0, math.floor((t0 - self.start_s) / self.period_s))
        out: list[float] = []
        k = k0
        while len(out) < limit:
            down = self.start_s + k * self.period_s
            if down > t1 or down >= self.end_s:
                break
            for edge in (down, min(down + self.down_s, self.end_s)):
                if t0 <= edge <= t1:
                    out.append(edge)
            k += 1
        return out


@dataclass
class ModuleArrays:
    """Per-module state, indexed [module] or [module, lane]; fault effects edit these."""

    n: int
    lanes: np.ndarray  # (M,) lanes each module has
    mask: np.ndarray  # (M, L) lane exists
    tx_oma_nom_dbm: np.ndarray
    er_db: np.ndarray  # (M,)
    sens_oma_dbm: np.ndarray  # (M,)
    penalty_db: np.ndarray  # (M, L) receiver-side: implementation penalty + marginal lanes
    los_dbm: np.ndarray  # (M,)
    path_loss_db: np.ndarray  # (M, L) from this module's Tx to the far connector
    dirty_tx_db: np.ndarray  # (M, L) extra loss at this end, on light it sends
    dirty_rx_db: np.ndarray  # (M, L) extra loss at this end, on light it receives
    bias_nom_ma: np.ndarray  # (M, L)
    bias_max_ma: np.ndarray  # (M,)
    vcc_v: np.ndarray  # (M,)
    laser_loss_db: np.ndarray  # (M, L) efficiency lost so far (failing laser)
    laser_drift_db_per_s: np.ndarray  # (M, L)
    temp_c: np.ndarray  # (M,)
    self_heat_c: np.ndarray
    load_heat_c: np.ndarray
    hot_c: np.ndarray  # (M,) extra heat from a hot_module fault
    peer: np.ndarray  # (M,) physical peer module (the cabling plan, unless miswired)
    line_rate_gbps: np.ndarray  # (M,)
    thresholds: np.ndarray  # (M, Q, 4)
    gen_pattern: list[str | None]
    chk_pattern: list[str | None]

    @property
    def lane_rate_bps(self) -> np.ndarray:
        return self.line_rate_gbps * 1e9 / self.lanes


@dataclass
class _OpticalState:
    """Noise-free optics of every module at one instant (flaps not applied)."""

    tx_avg_dbm: np.ndarray
    tx_oma_dbm: np.ndarray
    bias_ma: np.ndarray
    rx_avg_dbm: np.ndarray
    margin_db: np.ndarray
    ber: np.ndarray  # (M, L), 0 on absent lanes
    los: np.ndarray  # (M, L)
    lol: np.ndarray  # (M, L) receiver cannot lock (LOS or BER above lock)


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


def _mac(device: str, index: int = 0) -> str:
    h = _crc(device)
    octets = [0x02, (h >> 24) & 0xFF, (h >> 16) & 0xFF, (h >> 8) & 0xFF, h & 0xFF, index & 0xFF]
    return ":".join(f"{o:02x}" for o in octets)


# --- the model ---------------------------------------------------------------


class Fabric:
    """The emulated lab's single source of truth; see the module docstring."""

    MAX_STEP_S = 3600.0

    def __init__(
        self,
        testbed: Testbed,
        seed: int | None = None,
        time_scale: float | None = None,
        *,
        realtime: bool = False,
    ) -> None:
        emu = testbed.emulation or Emulation()
        self.testbed = testbed
        self.seed = emu.seed if seed is None else seed
        self.clock = VirtualClock(time_scale or emu.time_scale, realtime=realtime)
        self.rng = np.random.default_rng(self.seed)
        self.warnings: list[str] = []
        self.faults: dict[str, FaultInstance] = {}
        self._lock = threading.RLock()
        self._t_s = self.clock.now_s()  # the model is integrated up to here
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._fault_ids = itertools.count(1)
        self._busy = False  # inside an integration or an event: nested syncs are no-ops
        self._view_t_s: float | None = None  # when set, link_up() answers for this instant
        self._ambient_c = {name: emu.ambient_c for name in testbed.devices}
        self._unreachable: set[str] = set()
        self._firmware: dict[str, str | None] = {
            name: (str(d.vars["firmware_version"]) if "firmware_version" in d.vars else None)
            for name, d in testbed.devices.items()
        }
        self._rate_fraction: dict[str, float] = {}
        self._counter_sources: list[CounterSource] = []
        self._links: list[Link] = list(testbed.links)
        self._link_index = {lk.name: i for i, lk in enumerate(self._links)}
        self._flaps: list[list[_Flap]] = [[] for _ in self._links]
        self._history: list[list[tuple[float, bool]]] = [[] for _ in self._links]
        self._ports: dict[tuple[str, str], _Port] = {}
        self._module_port: list[_Port] = []
        self._build_ports()
        self.modules = self._build_modules()
        self.inventory: list[TransceiverInventory] = self._build_inventory()
        self._ma, self._mb = self._link_ends()
        self._link_of = np.array([p.link for p in self._module_port], dtype=np.int64)
        self._init_counters()
        self._static_up = np.zeros(len(self._links), dtype=bool)
        self._state: _OpticalState = self._optical_state()
        self._cache: dict[str, Any] = {}  # derived from _state; emptied whenever it changes
        self._refresh(self._t_s, first=True)
        load_catalogue()
        self.traffic = self._make_traffic()
        self._changed()
        for spec in emu.faults:
            self.inject(
                spec.kind, spec.target, at_s=spec.at_s, duration_s=spec.duration_s, **spec.params
            )

    # --- construction --------------------------------------------------------

    def _build_ports(self) -> None:
        for name, dev in self.testbed.devices.items():
            for port in dev.ports:
                self._add_port(name, port)
        for li, lk in enumerate(self._links):
            for end in lk.ends:
                p = self._add_port(end.device, end.port)
                if p.link is not None:
                    raise ModelError(f"port {end} is cabled more than once")
                p.link = li
                if lk.speed_gbps:
                    p.speed_gbps = lk.speed_gbps

    def _add_port(self, device: str, port: str) -> _Port:
        key = (device, port)
        if key not in self._ports:
            dev = self.testbed.devices.get(device)
            role = dev.role if dev else ""
            default_mtu = 9000 if role in HOST_ROLES else 9100
            mtu = int(dev.vars.get("mtu_bytes", default_mtu)) if dev else default_mtu
            index = sum(1 for d, _ in self._ports if d == device) + 1
            self._ports[key] = _Port(device, port, _mac(device, index), 400.0, mtu)
        return self._ports[key]

    def _build_modules(self) -> ModuleArrays:
        specs: list[OpticSpec] = []
        m_of_end: dict[tuple[int, int], int] = {}
        for li, lk in enumerate(self._links):
            spec, warning = optic_for(lk.optic, lk.speed_gbps)
            if warning:
                self.warnings.append(f"{lk.name}: {warning}")
            for e, end in enumerate(lk.ends):
                port = self._ports[(end.device, end.port)]
                port.module = len(specs)
                m_of_end[(li, e)] = port.module
                self._module_port.append(port)
                specs.append(spec)
        n = len(specs)
        shape = (n, MAX_LANES)
        lanes = np.array([s.lanes for s in specs], dtype=np.int64)
        mask = np.arange(MAX_LANES)[None, :] < lanes[:, None]
        arr = ModuleArrays(
            n=n,
            lanes=lanes,
            mask=mask,
            tx_oma_nom_dbm=np.zeros(shape),
            er_db=np.array([s.extinction_ratio_db for s in specs]),
            sens_oma_dbm=np.array([s.rx_sensitivity_oma_dbm for s in specs]),
            penalty_db=np.repeat(np.array([[s.penalty_db] for s in specs]), MAX_LANES, axis=1)
            if n
            else np.zeros(shape),
            los_dbm=np.array([s.los_assert_dbm for s in specs]),
            path_loss_db=np.zeros(shape),
            dirty_tx_db=np.zeros(shape),
            dirty_rx_db=np.zeros(shape),
            bias_nom_ma=np.zeros(shape),
            bias_max_ma=np.array([s.bias_apc_max_ma for s in specs]),
            vcc_v=np.zeros(n),
            laser_loss_db=np.zeros(shape),
            laser_drift_db_per_s=np.zeros(shape),
            temp_c=np.zeros(n),
            self_heat_c=np.array([s.self_heat_c for s in specs]),
            load_heat_c=np.array([s.load_heat_c for s in specs]),
            hot_c=np.zeros(n),
            peer=np.full(n, -1, dtype=np.int64),
            line_rate_gbps=np.zeros(n),
            thresholds=np.array([threshold_array(s.thresholds) for s in specs]).reshape(
                n, len(QUANTITIES), 4
            ),
            gen_pattern=[None] * n,
            chk_pattern=[None] * n,
        )
        self._specs = specs
        for li, lk in enumerate(self._links):
            ma, mb = m_of_end[(li, 0)], m_of_end[(li, 1)]
            arr.peer[ma], arr.peer[mb] = mb, ma
            for m in (ma, mb):
                spec = specs[m]
                port = self._module_port[m]
                port.speed_gbps = lk.speed_gbps or spec.speed_gbps
                # module-to-module spread, stable per port whatever else is in the testbed
                g = np.random.default_rng([self.seed, _crc(f"{port.device}:{port.port}")])
                arr.tx_oma_nom_dbm[m] = spec.tx_oma_nom_dbm + np.clip(
                    g.normal(0.0, 0.1, MAX_LANES), -0.25, 0.25
                )
                spread = np.clip(g.normal(0.0, 0.04, MAX_LANES), -0.1, 0.1)
                arr.bias_nom_ma[m] = spec.bias_nom_ma * (1.0 + spread)
                arr.vcc_v[m] = VCC_NOM_V + float(np.clip(g.normal(0, 0.01), -0.03, 0.03))
                fibre_db = (lk.length_m or 0.0) / 1000.0 * spec.fibre_loss_db_per_km
                arr.path_loss_db[m] = fibre_db + 2 * spec.connector_loss_db
                arr.line_rate_gbps[m] = port.speed_gbps * physics.LINE_RATE_FACTOR
        arr.tx_oma_nom_dbm[~arr.mask] = 0.0
        arr.temp_c[:] = self._temp_target(arr)
        return arr

    def _build_inventory(self) -> list[TransceiverInventory]:
        out = []
        for m, spec in enumerate(self._specs):
            port = self._module_port[m]
            h = _crc(f"{port.device}:{port.port}")
            out.append(
                TransceiverInventory(
                    device=port.device,
                    port=port.port,
                    present=True,
                    optic=spec.name,
                    standard=spec.standard,
                    form_factor=spec.form_factor,
                    connector=spec.connector,
                    vendor=spec.vendor,
                    vendor_oui=spec.vendor_oui,
                    part_number=spec.part_number,
                    serial=f"LT{h % 10**9:09d}",
                    hardware_rev=spec.hardware_rev,
                    firmware_version=spec.firmware_version,
                    date_code=f"20{22 + h % 3}-{1 + h % 12:02d}-{1 + h % 28:02d}",
                    lanes=spec.lanes,
                    wavelengths_nm=spec.wavelengths_nm,
                    power_w=spec.power_w,
                )
            )
        return out

    def _init_counters(self) -> None:
        n = self.modules.n
        self._up_s = np.zeros(n)  # seconds the link was up, per module
        self._cw_done = np.zeros(n, dtype=np.int64)
        self._fec_bins = np.zeros((n, physics.FEC_BINS), dtype=np.int64)
        self._fec_unc = np.zeros(n, dtype=np.int64)
        self._fec_base_bins = np.zeros_like(self._fec_bins)
        self._fec_base_unc = np.zeros_like(self._fec_unc)
        self._down_count = np.zeros(n, dtype=np.int64)
        self._prbs_locked_s = np.zeros((n, MAX_LANES))
        self._prbs_errors = np.zeros((n, MAX_LANES), dtype=np.int64)
        self._prbs_lol = np.zeros((n, MAX_LANES), dtype=np.int64)
        self._prbs_lock = np.zeros((n, MAX_LANES), dtype=bool)
        self.flags = FlagBank(self.modules.mask)

    def _make_traffic(self) -> Any:
        rng = np.random.default_rng([self.seed, 0x7AF1C])  # its own stream: draws don't interleave
        return TrafficModel(testbed=self.testbed, links=self, rng=rng)

    # --- time ------------------------------------------------------------------

    def now_s(self) -> float:
        """Virtual time the model is up to (== clock.now_s() after any read)."""
        with self._lock:
            self._sync()
            return self._t_s

    def advance(self, dt_s: float) -> float:
        """Move the clock and bring the model up to date (pure-model runs)."""
        with self._lock:
            self.clock.advance(dt_s)
            self._sync()
            return self._t_s

    def schedule(self, at_s: float, action: Callable[[], None]) -> None:
        """Run ``action`` when the model reaches virtual time ``at_s`` (now if past)."""
        with self._lock:
            heapq.heappush(self._events, (max(at_s, self._t_s), next(self._seq), action))
            self._sync()

    def _sync(self) -> None:
        if self._busy:
            return
        now = self.clock.now_s()
        if now == self._t_s and not (self._events and self._events[0][0] <= now):
            return  # already up to date (many reads at one instant)
        self._busy = True
        try:
            self._advance_to(now)
        finally:
            self._busy = False

    def _advance_to(self, t_s: float) -> None:
        while True:
            next_event = self._events[0][0] if self._events else math.inf
            self._integrate_until(min(t_s, next_event))
            if next_event > t_s:
                return
            _, _, action = heapq.heappop(self._events)
            action()
            self._refresh(self._t_s)

    def _integrate_until(self, t_s: float) -> None:
        while self._t_s < t_s:
            t1 = min(t_s, self._t_s + self.MAX_STEP_S)
            self._step(self._t_s, t1)
            self._t_s = t1

    # --- physics -----------------------------------------------------------------

    def _temp_target(self, arr: ModuleArrays) -> np.ndarray:
        ambient = np.array([self._ambient_c.get(p.device, 25.0) for p in self._module_port])
        load = np.array([p.load for p in self._module_port])
        if arr.n == 0:
            return np.zeros(0)
        return ambient + arr.self_heat_c + arr.load_heat_c * load + arr.hot_c

    def _optical_state(self) -> _OpticalState:
        a = self.modules
        tx_on = np.array([p.admin_up for p in self._module_port], dtype=bool)
        temp_factor = 1.0 + BIAS_TEMPCO_PER_C * (a.temp_c - BIAS_REF_TEMP_C)
        need_ma = a.bias_nom_ma * temp_factor[:, None] * physics.db_to_linear(a.laser_loss_db)
        bias = np.minimum(need_ma, a.bias_max_ma[:, None])
        shortfall_db = 10.0 * np.log10(need_ma / bias)  # what the APC loop could not make up
        tx_oma = a.tx_oma_nom_dbm - shortfall_db
        tx_avg = tx_oma - (physics.oma_dbm_from_avg(0.0, a.er_db)[:, None])
        tx_avg = np.where(tx_on[:, None], tx_avg, DARK_DBM)
        bias = np.where(tx_on[:, None], bias, 0.0)
        peer = a.peer
        has_peer = peer >= 0
        src = np.where(has_peer, peer, 0)
        rx_avg = tx_avg[src] - a.path_loss_db[src] - a.dirty_tx_db[src] - a.dirty_rx_db
        rx_avg = np.where(has_peer[:, None], np.maximum(rx_avg, DARK_DBM), DARK_DBM)
        rx_oma = physics.oma_dbm_from_avg(rx_avg, a.er_db[src][:, None])
        margin = rx_oma - a.penalty_db - a.sens_oma_dbm[:, None]
        los = (rx_avg < a.los_dbm[:, None]) & a.mask
        ber = np.where(los, 0.5, physics.ber_from_margin_db(margin))
        ber = np.where(a.mask, ber, 0.0)
        lol = (los | (ber > physics.LOCK_MAX_BER)) & a.mask
        tx_avg = np.where(a.mask, tx_avg, DARK_DBM)
        bias = np.where(a.mask, bias, 0.0)
        return _OpticalState(tx_avg, tx_oma, bias, rx_avg, margin, ber, los, lol)

    def _link_ends(self) -> tuple[np.ndarray, np.ndarray]:
        ends = [[self._ports[(e.device, e.port)].module for e in lk.ends] for lk in self._links]
        arr = np.array(ends, dtype=np.int64).reshape(len(self._links), 2)
        return arr[:, 0], arr[:, 1]

    def _prbs_lock_now(self, st: _OpticalState) -> np.ndarray:
        a = self.modules
        if all(c is None for c in a.chk_pattern):
            return np.zeros_like(a.mask)
        ok = np.zeros(a.n, dtype=bool)
        for m in range(a.n):
            p = a.peer[m]
            pattern = a.chk_pattern[m]
            ok[m] = pattern is not None and p >= 0 and a.gen_pattern[p] == pattern
        return ok[:, None] & ~st.lol & a.mask

    def _step(self, t0: float, t1: float) -> None:
        """Integrate every module from t0 to t1 (one vectorised step)."""
        a = self.modules
        dt = t1 - t0
        if a.n == 0:
            self._drive_traffic(t0, t1)
            return
        target = self._temp_target(a)
        a.temp_c[:] = target + (a.temp_c - target) * math.exp(-dt / THERMAL_TAU_S)
        a.laser_loss_db += a.laser_drift_db_per_s * dt
        st = self._optical_state()
        link_of = self._link_of
        flap_down = np.array([sum(f.down_s_in(t0, t1) for f in fl) for fl in self._flaps])
        drops = np.array([sum(f.drops_in(t0, t1) for f in fl) for fl in self._flaps], np.int64)
        light_frac = (1.0 - np.minimum(flap_down, dt) / dt)[link_of] if len(link_of) else 0.0
        up_s = dt * self._static_up[link_of] * light_frac
        # FEC: whole codewords counted while the link is up, drawn per port
        self._up_s += up_s
        cw_total = np.floor(physics.codewords_per_s(a.line_rate_gbps) * self._up_s).astype(np.int64)
        n_cw = cw_total - self._cw_done
        self._cw_done = cw_total
        live = np.nonzero(n_cw > 0)[0]
        if live.size:
            ser = physics.symbol_error_ratio(st.ber[live])
            ser_port = (ser * a.mask[live]).sum(axis=1) / a.lanes[live]
            bins, unc = physics.sample_codewords(self.rng, n_cw[live], ser_port)
            self._fec_bins[live] += bins
            self._fec_unc[live] += unc
        # PRBS: checkers count bits and errors from the same per-lane BER
        lock = self._prbs_lock_now(st) & self._prbs_lock
        if lock.any():
            locked_s = dt * lock * np.asarray(light_frac)[:, None]
            self._prbs_locked_s += locked_s
            bits = locked_s * a.lane_rate_bps[:, None]
            self._prbs_errors += physics.sample_bit_errors(self.rng, bits, st.ber)
            self._prbs_lol += lock * drops[link_of][:, None]
        # flaps: each drop is a link-down event and a latched LOS at both ends
        dark_now = np.array([any(f.is_down(t1) for f in fl) for fl in self._flaps], dtype=bool)
        flapped = (drops > 0)[link_of] | dark_now[link_of]
        self._down_count += drops[link_of] * self._static_up[link_of]
        self.flags.carry()
        self._observe_flags(t1, st, extra_los=flapped)
        self._drive_traffic(t0, t1)
        self._refresh(t1, st)

    def _refresh(
        self, t_s: float, st: _OpticalState | None = None, *, first: bool = False
    ) -> None:
        """Re-evaluate link state and PRBS lock after a step or a change."""
        if st is None:
            st = self._optical_state()
        self._state = st
        self._cache.clear()
        if not self._links:
            return
        a = self.modules
        ma, mb = self._ma, self._mb
        admin = np.array([p.admin_up for p in self._module_port], dtype=bool)
        pairs = zip(a.gen_pattern, a.chk_pattern, strict=True)
        prbs = np.array([g is not None or c is not None for g, c in pairs], dtype=bool)
        bad = st.lol.any(axis=1) | prbs | ~admin
        up = ~bad[ma] & ~bad[mb]
        changed = up != self._static_up
        for li in np.nonzero(changed | first)[0]:
            self._history[li].append((t_s, bool(up[li])))
            if not up[li] and not first:
                self._down_count[[ma[li], mb[li]]] += 1
        self._static_up = up
        lock_now = self._prbs_lock_now(st)
        self._prbs_lol += self._prbs_lock & ~lock_now & self._checker_on()[:, None]
        self._prbs_lock = lock_now

    def _checker_on(self) -> np.ndarray:
        return np.array([c is not None for c in self.modules.chk_pattern], dtype=bool)

    def _dom_values(self, st: _OpticalState) -> np.ndarray:
        """(M, Q, L) array of DOM values in QUANTITIES order (module values in every lane)."""
        a = self.modules
        module = np.stack([a.temp_c, a.vcc_v], axis=1)[:, :, None]
        module = np.repeat(module, MAX_LANES, axis=2)
        lanes = np.stack([st.tx_avg_dbm, st.rx_avg_dbm, st.bias_ma], axis=1)
        return np.concatenate([module, lanes], axis=1)

    def _observe_flags(
        self, t_s: float, st: _OpticalState, extra_los: np.ndarray | None = None
    ) -> None:
        """The modules sample their monitors: threshold flags and LOS/LOL conditions."""
        mask = self.modules.mask
        levels = threshold_levels(self._dom_values(st), self.modules.thresholds)  # (M,Q,L,4)
        n = levels.shape[0]
        levels = levels.transpose(0, 1, 3, 2).reshape(n, len(QUANTITIES) * len(LEVELS), MAX_LANES)
        admin = np.array([p.admin_up for p in self._module_port], dtype=bool)
        rx_los, rx_lol = st.los.copy(), st.lol.copy()
        if extra_los is not None:
            rx_los |= extra_los[:, None] & mask
            rx_lol |= extra_los[:, None] & mask
        tx_los = np.broadcast_to(~admin[:, None], rx_los.shape) & mask
        conditions = np.stack([rx_los, rx_lol, tx_los], axis=1)
        assert conditions.shape[1] == len(CONDITIONS)
        self.flags.observe(t_s, np.concatenate([levels, conditions], axis=1))

    def _changed(self) -> None:
        """Call after changing state outside a step: link state follows at once."""
        self._refresh(self._t_s)
        self._observe_flags(self._t_s, self._read_state())
        if getattr(self, "traffic", None) is not None:
            self._run_traffic(self._t_s, self._t_s)  # it sees the change at this instant

    def _drive_traffic(self, t0: float, t1: float) -> None:
        """Run the traffic model over [t0, t1], stopping at every flap edge in between.

        The traffic model reads ``link_up`` when an ``advance_to`` call starts, so it
        is run up to each change with the state that held before it; the next call
        then sees the new state at the exact instant (failover timing depends on it).
        """
        if getattr(self, "traffic", None) is None:
            return
        edges = {e for fl in self._flaps for f in fl for e in f.edges(t0, t1) if t0 < e < t1}
        prev = t0
        for t in [*sorted(edges), t1]:
            self._run_traffic(prev, t)
            prev = t

    def _run_traffic(self, view_t_s: float, to_s: float) -> None:
        was_busy, self._busy = self._busy, True
        self._view_t_s = view_t_s
        try:
            self.traffic.advance_to(to_s)
        finally:
            self._view_t_s = None
            self._busy = was_busy

    # --- lookups -------------------------------------------------------------------

    def _port(self, device: str, port: str) -> _Port:
        try:
            return self._ports[(device, port)]
        except KeyError:
            raise ModelError(f"no port {device}:{port} in the model") from None

    def _module(self, device: str, port: str) -> int:
        p = self._port(device, port)
        if p.module is None:
            raise ModelError(f"{device}:{port} has no transceiver")
        return p.module

    def module_index(self, device: str, port: str) -> int:
        """Index into ``modules`` arrays of the transceiver at ``device:port``."""
        return self._module(device, port)

    def resolve_link(self, target: str) -> int:
        """A link index from a link name (``a--b``) or either of its ``device:port`` ends."""
        if target in self._link_index:
            return self._link_index[target]
        if ":" in target:
            device, _, port = target.partition(":")
            p = self._ports.get((device, port))
            if p is not None and p.link is not None:
                return p.link
        raise FaultError(f"{target!r} is not a link or a cabled port of the testbed")

    def resolve_port(self, target: str) -> tuple[str, str]:
        device, sep, port = target.partition(":")
        if not sep or (device, port) not in self._ports:
            raise FaultError(f"{target!r} is not a 'device:port' of the testbed")
        return device, port

    def link(self, index: int) -> Link:
        return self._links[index]

    def ports(self, device: str) -> list[str]:
        if device not in self.testbed.devices and not any(d == device for d, _ in self._ports):
            raise ModelError(f"no device {device!r} in the model")
        return [p for d, p in self._ports if d == device]

    # --- LinkView (consumed by the traffic model) -------------------------------------

    def link_names(self) -> list[str]:
        return [lk.name for lk in self._links]

    def link_up(self, link_name: str) -> bool:
        with self._lock:
            self._sync()
            li = self._link_id(link_name)
            return bool(self._static_up[li]) and self._link_lit(li)

    def link_rate_fraction(self, link_name: str) -> float:
        self._link_id(link_name)
        return self._rate_fraction.get(link_name, 1.0)

    def set_link_rate_fraction(self, link_name: str, fraction: float | None) -> None:
        """Override a link's usable rate (a straggler); ``None`` restores 1.0."""
        self._link_id(link_name)
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
            return [self._links[li].name for li, fl in enumerate(self._flaps) if fl]

    def link_transitions(
        self, link_name: str, t0_s: float, t1_s: float
    ) -> list[tuple[float, bool]]:
        """Oper-state changes ``(time_s, up)`` of a link in [t0, t1], flaps included."""
        with self._lock:
            self._sync()
            li = self._link_id(link_name)
            hist = self._history[li]
            candidates = {t for t, _ in hist if t0_s <= t <= t1_s}
            for f in self._flaps[li]:
                candidates.update(f.edges(t0_s, t1_s))
            out: list[tuple[float, bool]] = []
            before = self._up_at(li, t0_s - 1e-9) if t0_s > 0 else None
            for t in sorted(candidates):
                up = self._up_at(li, t)
                if up != before:
                    out.append((t, up))
                before = up
            return out

    def _up_at(self, li: int, t: float) -> bool:
        static = False
        for ts, up in self._history[li]:
            if ts > t:
                break
            static = up
        return static and not any(f.is_down(t) for f in self._flaps[li])

    def _link_id(self, link_name: str) -> int:
        try:
            return self._link_index[link_name]
        except KeyError:
            raise ModelError(f"no link {link_name!r} in the model") from None

    # --- interfaces and counters ---------------------------------------------------------

    def interfaces(self, device: str) -> list[InterfaceStatus]:
        return [self.interface(device, port) for port in self.ports(device)]

    def interface(self, device: str, port: str) -> InterfaceStatus:
        with self._lock:
            self._sync()
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

    def _raw_counters(self, p: _Port) -> dict[str, int]:
        raw = dict(p.extra)
        raw["rx_fcs_errors"] = 0
        raw["oper_down_count"] = 0
        if p.module is not None:
            m = p.module
            lldp = int(self._up_s[m] // LLDP_INTERVAL_S)
            for side in ("rx", "tx"):
                raw[f"{side}_packets"] += lldp
                raw[f"{side}_octets"] += lldp * LLDP_FRAME_BYTES
            fcs = int(self._fec_unc[m])
            raw["rx_fcs_errors"] = fcs
            raw["rx_errors"] += fcs
            raw["oper_down_count"] = int(self._down_count[m])
        for source in self._counter_sources:
            for key, value in source(p.device, p.port).items():
                raw[key] = raw.get(key, 0) + int(value)
        return raw

    def counters(self, device: str, port: str) -> IfCounters:
        with self._lock:
            self._sync()
            p = self._port(device, port)
            raw = self._raw_counters(p)
            now = {k: v - p.base.get(k, 0) for k, v in raw.items()}
            return IfCounters(
                device=device,
                port=port,
                rx_octets=now["rx_octets"],
                rx_packets=now["rx_packets"],
                tx_octets=now["tx_octets"],
                tx_packets=now["tx_packets"],
                rx_errors=now["rx_errors"],
                tx_errors=now["tx_errors"],
                rx_drops=now["rx_drops"],
                tx_drops=now["tx_drops"],
                rx_fcs_errors=now["rx_fcs_errors"],
                oper_down_count=now["oper_down_count"],
                time_s=self._t_s,
            )

    def clear_counters(self, device: str, port: str | None = None) -> None:
        """Zero interface and FEC counters of one port or a whole device."""
        with self._lock:
            self._sync()
            for name in [port] if port else self.ports(device):
                p = self._port(device, name)
                p.base = self._raw_counters(p)
                if p.module is not None:
                    self._fec_base_bins[p.module] = self._fec_bins[p.module]
                    self._fec_base_unc[p.module] = self._fec_unc[p.module]

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
            self._sync()
            m = self._module(device, port)
            n = int(self.modules.lanes[m])
            v = self._cached("dom_values", lambda: self._dom_values(self._read_state()))[m]
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
                time_s=self._t_s,
            )

    def dom_flags(self, device: str, port: str, clear: bool = True) -> list[DomFlag]:
        """Latched flags (and those still asserted); reading clears the latches."""
        with self._lock:
            self._sync()
            return self.flags.read(self._module(device, port), clear=clear)

    def _cached(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _read_state(self) -> _OpticalState:
        """The optical state now, with a flapping link's dark periods applied."""
        return self._cached("read_state", self._flapped_state)

    def _link_lit(self, li: int) -> bool:
        t = self._t_s if self._view_t_s is None else self._view_t_s
        return not any(f.is_down(t) for f in self._flaps[li])

    def _flapped_state(self) -> _OpticalState:
        st = self._state
        dark = [li for li, fl in enumerate(self._flaps) if any(f.is_down(self._t_s) for f in fl)]
        if not dark:
            return st
        link_of = self._link_of
        hit = np.isin(link_of, dark)[:, None] & self.modules.mask
        return replace(
            st,
            rx_avg_dbm=np.where(hit, DARK_DBM, st.rx_avg_dbm),
            ber=np.where(hit, 0.5, st.ber),
            los=st.los | hit,
            lol=st.lol | hit,
        )

    # --- FEC and PRBS ---------------------------------------------------------------------

    def fec(self, device: str, port: str) -> FecStats:
        with self._lock:
            self._sync()
            m = self._module(device, port)
            bins = (self._fec_bins[m] - self._fec_base_bins[m]).tolist()
            unc = int(self._fec_unc[m] - self._fec_base_unc[m])
            n = int(self.modules.lanes[m])
            lane_bits = float(self.modules.line_rate_gbps[m]) * 1e9 / n  # one second per lane
            li = self._module_port[m].link
            if li is not None and self._static_up[li] and self._link_lit(li):
                # like a device's FEC BER readout: errors in the last second, refreshed per step
                errs = self._cached("errors_1s", self._errors_last_second)[m, :n].tolist()
                lanes_ber = tuple(e / lane_bits for e in errs)
                pre = sum(errs) / (lane_bits * n)
            else:
                lanes_ber, pre = (0.0,) * n, 0.0
            return FecStats(
                device=device,
                port=port,
                mode="rs544",
                total_codewords=sum(bins) + unc,
                corrected_codewords=sum(bins[1:]),
                uncorrectable_codewords=unc,
                symbol_errors=sum(k * b for k, b in enumerate(bins)),
                bins=tuple(bins),
                pre_fec_ber=pre,
                lanes_pre_fec_ber=lanes_ber,
            )

    def _errors_last_second(self) -> np.ndarray:
        return self.rng.poisson(self._state.ber * self.modules.lane_rate_bps[:, None])

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
                self._prbs_reset(m)
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
            self._prbs_reset(self._module(device, port))

    def _prbs_reset(self, m: int) -> None:
        self._prbs_locked_s[m] = 0.0
        self._prbs_errors[m] = 0
        self._prbs_lol[m] = 0

    def prbs_read(self, device: str, port: str) -> list[PrbsLane]:
        with self._lock:
            self._sync()
            m = self._module(device, port)
            a = self.modules
            lock = self._prbs_lock_now(self._read_state())[m]
            out = []
            for i in range(int(a.lanes[m])):
                locked_s = float(self._prbs_locked_s[m, i])
                bits = int(locked_s * float(a.lane_rate_bps[m]))
                errors = int(self._prbs_errors[m, i])
                out.append(
                    PrbsLane(
                        lane=i + 1,
                        pattern=a.chk_pattern[m] or "",
                        enabled=a.chk_pattern[m] is not None,
                        locked=bool(lock[i]),
                        bits=bits,
                        errors=errors,
                        ber=errors / bits if bits else 0.0,
                        loss_of_lock_count=int(self._prbs_lol[m, i]),
                        locked_s=locked_s,
                    )
                )
            return out

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
            self._sync()
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
                        chassis_id=_mac(peer.device),
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
            serial=f"EMU{_crc(device) % 10**8:08d}",
            base_mac=_mac(device),
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
        """Every device an unreachable_device fault holds now (one model step for all)."""
        with self._lock:
            self._sync()
            return frozenset(self._unreachable)

    def set_reachable(self, device: str, reachable: bool) -> None:
        if device not in self.testbed.devices:
            raise ModelError(f"no device {device!r} in the model")
        (self._unreachable.discard if reachable else self._unreachable.add)(device)
        # a client waiting on a dark device waits on the wall clock (its transport's
        # timeout): the elastic clock must not skip time under it
        self.clock.set_hold(bool(self._unreachable))

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

    def add_flap(self, link: int, flap: _Flap) -> _Flap:
        self._flaps[link].append(flap)
        return flap

    def new_flap(self, period_s: float, down_s: float) -> _Flap:
        return _Flap(start_s=self._t_s, period_s=period_s, down_s=down_s)

    @property
    def model_time_s(self) -> float:
        """Current model time without syncing (for fault effects, which run mid-sync)."""
        return self._t_s

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
