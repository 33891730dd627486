"""The optical modules of the fabric as arrays, and the optics computed from them.

One module sits at each end of a link; its state lives in numpy arrays indexed
[module] or [module, lane] (``ModuleArrays``), so one step updates every port at
once. ``optical_state`` turns the arrays into powers, margins, BER and LOS/LOL
(``OpticalState``); fault effects in ``catalogue.py`` edit the arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from labtest.emulation.model import physics
from labtest.emulation.model.fabric_records import PortState, crc
from labtest.emulation.model.optics import (
    BIAS_REF_TEMP_C,
    BIAS_TEMPCO_PER_C,
    CONDITIONS,
    DARK_DBM,
    LEVELS,
    QUANTITIES,
    VCC_NOM_V,
    OpticSpec,
    TransceiverInventory,
    optic_for,
    threshold_array,
    threshold_levels,
)
from labtest.testbed.model import Link

MAX_LANES = 8


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
class OpticalState:
    """Noise-free optics of every module at one instant (flaps not applied)."""

    tx_avg_dbm: np.ndarray
    tx_oma_dbm: np.ndarray
    bias_ma: np.ndarray
    rx_avg_dbm: np.ndarray
    margin_db: np.ndarray
    ber: np.ndarray  # (M, L), 0 on absent lanes
    los: np.ndarray  # (M, L)
    lol: np.ndarray  # (M, L) receiver cannot lock (LOS or BER above lock)


@dataclass
class Modules:
    """The modules of a fabric: their arrays, specs, and the port each one sits in."""

    arrays: ModuleArrays
    specs: list[OpticSpec]
    port: list[PortState]  # [module] -> the port it is plugged into


def build_modules(
    links: list[Link],
    ports: Mapping[tuple[str, str], PortState],
    seed: int,
    ambient_c: Mapping[str, float],
    warnings: list[str],
) -> Modules:
    """One module per link end, from the link's optic (a warning when it is guessed)."""
    specs: list[OpticSpec] = []
    module_port: list[PortState] = []
    m_of_end: dict[tuple[int, int], int] = {}
    for li, lk in enumerate(links):
        spec, warning = optic_for(lk.optic, lk.speed_gbps)
        if warning:
            warnings.append(f"{lk.name}: {warning}")
        for e, end in enumerate(lk.ends):
            port = ports[(end.device, end.port)]
            port.module = len(specs)
            m_of_end[(li, e)] = port.module
            module_port.append(port)
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
    for li, lk in enumerate(links):
        ma, mb = m_of_end[(li, 0)], m_of_end[(li, 1)]
        arr.peer[ma], arr.peer[mb] = mb, ma
        for m in (ma, mb):
            spec = specs[m]
            port = module_port[m]
            port.speed_gbps = lk.speed_gbps or spec.speed_gbps
            # module-to-module spread, stable per port whatever else is in the testbed
            g = np.random.default_rng([seed, crc(f"{port.device}:{port.port}")])
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
    arr.temp_c[:] = temp_target(arr, module_port, ambient_c)
    return Modules(arr, specs, module_port)


def build_inventory(modules: Modules) -> list[TransceiverInventory]:
    """The EEPROM identity of every module (serials and date codes stable per port)."""
    out = []
    for m, spec in enumerate(modules.specs):
        port = modules.port[m]
        h = crc(f"{port.device}:{port.port}")
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


# --- optics of every module at once -------------------------------------------------


def temp_target(
    arr: ModuleArrays, module_port: list[PortState], ambient_c: Mapping[str, float]
) -> np.ndarray:
    """The temperature each module settles at: air, its own heat, its load, a fault's heat."""
    ambient = np.array([ambient_c.get(p.device, 25.0) for p in module_port])
    load = np.array([p.load for p in module_port])
    return settled_temp_c(arr, ambient, load)


def settled_temp_c(arr: ModuleArrays, ambient_c: np.ndarray, load: np.ndarray) -> np.ndarray:
    """``temp_target`` from per-module air temperature and load arrays (a caller that caches
    them per configuration skips rebuilding them)."""
    if arr.n == 0:
        return np.zeros(0)
    return ambient_c + arr.self_heat_c + arr.load_heat_c * load + arr.hot_c


def optical_state(a: ModuleArrays, tx_on: np.ndarray) -> OpticalState:
    """Noise-free optics now: the APC loop's bias, Tx power, what the peer receives, BER."""
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
    return OpticalState(tx_avg, tx_oma, bias, rx_avg, margin, ber, los, lol)


def dom_values(a: ModuleArrays, st: OpticalState) -> np.ndarray:
    """(M, Q, L) array of DOM values in QUANTITIES order (module values in every lane)."""
    module = np.stack([a.temp_c, a.vcc_v], axis=1)[:, :, None]
    module = np.repeat(module, MAX_LANES, axis=2)
    lanes = np.stack([st.tx_avg_dbm, st.rx_avg_dbm, st.bias_ma], axis=1)
    return np.concatenate([module, lanes], axis=1)


def prbs_lock(a: ModuleArrays, st: OpticalState) -> np.ndarray:
    """(M, L) lanes whose PRBS checker locks: its pattern comes from the peer's generator."""
    if a.chk_pattern.count(None) == len(a.chk_pattern):  # no checker running
        return np.zeros_like(a.mask)
    ok = np.zeros(a.n, dtype=bool)
    for m in range(a.n):
        p = a.peer[m]
        pattern = a.chk_pattern[m]
        ok[m] = pattern is not None and p >= 0 and a.gen_pattern[p] == pattern
    return ok[:, None] & ~st.lol & a.mask


def monitor_levels(a: ModuleArrays, st: OpticalState) -> np.ndarray:
    """(M, Q*levels, L) threshold flags the DOM values raise (``monitor_sample``'s first part)."""
    levels = threshold_levels(dom_values(a, st), a.thresholds)  # (M,Q,L,4)
    n = levels.shape[0]
    return levels.transpose(0, 1, 3, 2).reshape(n, len(QUANTITIES) * len(LEVELS), MAX_LANES)


def monitor_sample(
    a: ModuleArrays,
    st: OpticalState,
    tx_on: np.ndarray,
    extra_los: np.ndarray | None,
    levels: np.ndarray | None = None,
) -> np.ndarray:
    """What each module's monitors see now: (M, flags, L) threshold levels then conditions.

    ``extra_los``: (M,) receivers a flap held dark (LOS and LOL latch though the
    optics between steps say lit).
    """
    mask = a.mask
    if levels is None:  # kept by the caller while the optics do not move
        levels = monitor_levels(a, st)
    rx_los, rx_lol = st.los.copy(), st.lol.copy()
    if extra_los is not None:
        rx_los |= extra_los[:, None] & mask
        rx_lol |= extra_los[:, None] & mask
    tx_los = np.broadcast_to(~tx_on[:, None], rx_los.shape) & mask
    conditions = np.stack([rx_los, rx_lol, tx_los], axis=1)
    assert conditions.shape[1] == len(CONDITIONS)
    return np.concatenate([levels, conditions], axis=1)
