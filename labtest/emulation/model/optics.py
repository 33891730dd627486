"""Optical modules: the catalogue, DOM records, thresholds and latched flags.

The catalogue holds what a datasheet says about each module type (power
ranges, sensitivity, LOS level, thresholds) plus the few calibration choices
the emulator makes (nominal launch power, implementation penalty) so that a
healthy short link lands where real ones do: a few dB of margin, pre-FEC BER
far below the KP4 threshold. Sources are in comments; "[emulator]" marks a
calibration choice, "[UNVERIFIED]" a typical value without a public source.

Flags follow CMIS: each (quantity, level) flag is independent (above the
high alarm both high flags are set), latched when the condition is seen and
cleared when read; a condition still present is reported again by the next
read (shared/design/reference/domain-methodology.md section 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

# --- thresholds ------------------------------------------------------------

LEVELS = ("high_alarm", "high_warning", "low_warning", "low_alarm")


@dataclass(frozen=True, slots=True)
class Threshold:
    high_alarm: float
    high_warning: float
    low_warning: float
    low_alarm: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.high_alarm, self.high_warning, self.low_warning, self.low_alarm)


@dataclass(frozen=True, slots=True)
class DomThresholds:
    """Alarm/warning thresholds of one part number (module page 03h / CMIS page 02h)."""

    temperature_c: Threshold
    voltage_v: Threshold
    tx_power_dbm: Threshold
    rx_power_dbm: Threshold
    bias_ma: Threshold


#: order of the DOM quantities in the model's arrays; the first two are per module
QUANTITIES = ("temperature_c", "voltage_v", "tx_power_dbm", "rx_power_dbm", "bias_ma")
MODULE_QUANTITIES = frozenset({"temperature_c", "voltage_v"})
#: per-lane status conditions latched alongside the threshold flags
CONDITIONS = ("rx_los", "rx_lol", "tx_los")
FLAG_KINDS: tuple[tuple[str, str], ...] = tuple(
    (q, lvl) for q in QUANTITIES for lvl in LEVELS
) + tuple((c, "asserted") for c in CONDITIONS)

# Module-level thresholds from a published SONiC transceiver readout
# (AsterNOS docs, "show interface transceiver ... eeprom detail"): temperature
# 75/70/0/-5 C, Vcc 3.63/3.465/3.135/2.97 V (3.135..3.465 V is also the
# operating envelope on the Ascent 800G-DR8 datasheet).
_TEMP = Threshold(75.0, 70.0, 0.0, -5.0)
_VCC = Threshold(3.63, 3.465, 3.135, 2.97)
# Bias for an EML lane [UNVERIFIED typical]; the warning sits below the APC limit.
_BIAS = Threshold(120.0, 110.0, 20.0, 15.0)


# --- catalogue -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpticSpec:
    name: str  # catalogue key, as written in a testbed's `optic:`
    standard: str
    form_factor: str
    connector: str
    speed_gbps: float
    lanes: int
    wavelengths_nm: tuple[float, ...]
    parallel_fibre: bool  # MPO, one fibre per lane (a speck hits single lanes)
    tx_oma_nom_dbm: float
    extinction_ratio_db: float
    rx_sensitivity_oma_dbm: float
    penalty_db: float  # Tx/channel implementation penalty (TDECQ-like) [emulator]
    los_assert_dbm: float
    connector_loss_db: float  # per mated pair; a link has two
    fibre_loss_db_per_km: float
    bias_nom_ma: float
    bias_apc_max_ma: float  # the laser control loop cannot drive more than this
    self_heat_c: float  # case temperature above ambient, idle
    load_heat_c: float  # extra at full load
    power_w: float
    thresholds: DomThresholds
    vendor: str = "LT Photonics"
    vendor_oui: str = "02-4c-54"
    part_number: str = ""
    hardware_rev: str = "A1"
    firmware_version: str = "3.2.1"


# 400G-DR4: Tx avg -2.9..4.0, Tx OMA -0.8..4.2, Rx avg -5.9..4.0 dBm, Rx sensitivity
# OMA -4.4 dBm, damage 5 dBm, LOS assert -15 dBm (Edgecore ET7502-DR4 datasheet).
_DR4 = OpticSpec(
    name="400G-DR4",
    standard="400GBASE-DR4",
    form_factor="QSFP-DD",
    connector="MPO-12",
    speed_gbps=400.0,
    lanes=4,
    wavelengths_nm=(1311.0,) * 4,
    parallel_fibre=True,
    tx_oma_nom_dbm=1.0,  # [emulator] inside -0.8..4.2
    extinction_ratio_db=4.5,  # [emulator] spec minimum 3.5 dB (Edgecore)
    rx_sensitivity_oma_dbm=-4.4,
    # [emulator] a healthy 30 m link then has ~2.9 dB margin (BER ~1e-11) and a
    # 3 dB dirty connector takes it to ~3e-4, as in the 3.8 dB field case
    # (atlasofengineering.com, via the reference section 2).
    penalty_db=1.9,
    los_assert_dbm=-15.0,
    connector_loss_db=0.3,  # [UNVERIFIED typical MPO mated pair]
    fibre_loss_db_per_km=0.4,  # [UNVERIFIED typical G.652 at 1310 nm]
    bias_nom_ma=55.0,  # [UNVERIFIED typical EML]
    bias_apc_max_ma=115.0,
    self_heat_c=20.0,
    load_heat_c=3.0,
    power_w=12.0,  # "maximum power consumption 12 W" on 400G QSFP-DD datasheets
    thresholds=DomThresholds(
        temperature_c=_TEMP,
        voltage_v=_VCC,
        # warnings at the datasheet's Tx/Rx average ranges, alarms 3 dB beyond
        # (Rx high alarm at the 5 dBm damage level)
        tx_power_dbm=Threshold(7.0, 4.0, -2.9, -5.9),
        rx_power_dbm=Threshold(5.0, 4.0, -5.9, -8.9),
        bias_ma=_BIAS,
    ),
    part_number="LTP-400G-DR4",
)

OPTICS: dict[str, OpticSpec] = {
    "400G-DR4": _DR4,
    # 400G-FR4: CWDM 1271..1331 nm on duplex LC; Tx avg -3.3..3.5, Tx OMA -0.3..3.7,
    # Rx avg -7.3..3.5 dBm, sensitivity OMA -4.6 dBm, damage 4.5 dBm (Edgecore ET7502-FR4).
    "400G-FR4": OpticSpec(
        name="400G-FR4",
        standard="400GBASE-FR4",
        form_factor="QSFP-DD",
        connector="LC",
        speed_gbps=400.0,
        lanes=4,
        wavelengths_nm=(1271.0, 1291.0, 1311.0, 1331.0),
        parallel_fibre=False,
        tx_oma_nom_dbm=1.5,  # [emulator] inside -0.3..3.7
        extinction_ratio_db=4.5,
        rx_sensitivity_oma_dbm=-4.6,
        penalty_db=2.5,  # [emulator] ~2.9 dB healthy margin, like DR4
        los_assert_dbm=-15.0,
        connector_loss_db=0.3,
        fibre_loss_db_per_km=0.4,
        bias_nom_ma=60.0,
        bias_apc_max_ma=115.0,
        self_heat_c=22.0,
        load_heat_c=3.0,
        power_w=12.0,
        thresholds=DomThresholds(
            temperature_c=_TEMP,
            voltage_v=_VCC,
            tx_power_dbm=Threshold(6.5, 3.5, -3.3, -6.3),
            rx_power_dbm=Threshold(4.5, 3.5, -7.3, -10.3),
            bias_ma=_BIAS,
        ),
        part_number="LTP-400G-FR4",
    ),
    # 800G-DR8: Tx avg -2.9..4.0, Tx OMA -0.8..4.2 dBm (Trixon 800G DR8), the same as DR4; so
    # the optical budget, bias and thresholds are DR4's (Rx numbers assumed equal to DR4's
    # [UNVERIFIED]); 1e-15 post-FEC, host FEC (Ascent DR8). Eight lanes run hotter, draw more.
    "800G-DR8": replace(
        _DR4,
        name="800G-DR8",
        standard="800GBASE-DR8",
        form_factor="OSFP",
        connector="MPO-16",
        speed_gbps=800.0,
        lanes=8,
        wavelengths_nm=(1311.0,) * 8,
        self_heat_c=25.0,
        load_heat_c=4.0,
        power_w=16.0,
        part_number="LTP-800G-DR8",
    ),
}

#: module temperature follows its target with this first-order time constant [emulator]
THERMAL_TAU_S = 120.0
#: laser bias rises with case temperature at fixed output (APC) [UNVERIFIED typical]
BIAS_TEMPCO_PER_C = 0.005
BIAS_REF_TEMP_C = 45.0
#: what a DOM reads for a disabled laser or a dark receiver
DARK_DBM = -40.0
VCC_NOM_V = 3.30


def optic_for(name: str | None, speed_gbps: float | None) -> tuple[OpticSpec, str | None]:
    """The catalogue entry for a link; falls back by speed with a warning text."""
    if name in OPTICS:
        return OPTICS[name], None
    fallback = OPTICS["800G-DR8"] if (speed_gbps or 400.0) >= 800 else OPTICS["400G-DR4"]
    if name is None:
        return fallback, None
    return fallback, f"optic {name!r} is not in the catalogue; modelled as {fallback.name}"


# --- records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransceiverInventory:
    device: str
    port: str
    present: bool
    optic: str = ""  # catalogue name, e.g. "400G-DR4"
    standard: str = ""
    form_factor: str = ""
    connector: str = ""
    vendor: str = ""
    vendor_oui: str = ""
    part_number: str = ""
    serial: str = ""
    hardware_rev: str = ""
    firmware_version: str = ""
    date_code: str = ""
    lanes: int = 0
    wavelengths_nm: tuple[float, ...] = ()
    power_w: float = 0.0


@dataclass(frozen=True, slots=True)
class LaneDom:
    lane: int  # 1-based
    tx_power_dbm: float
    rx_power_dbm: float
    bias_ma: float


@dataclass(frozen=True, slots=True)
class TransceiverDom:
    device: str
    port: str
    temperature_c: float
    voltage_v: float
    lanes: tuple[LaneDom, ...]
    time_s: float  # virtual time of the reading


@dataclass(frozen=True, slots=True)
class DomFlag:
    """A latched flag: set since the last read, or still asserted now."""

    quantity: str  # one of QUANTITIES or CONDITIONS
    level: str  # one of LEVELS, or "asserted" for a condition
    lane: int | None  # 1-based; None for a module-level quantity
    active: bool  # the condition holds at read time
    set_count: int  # times it was raised since the module was built
    first_set_s: float
    last_set_s: float


# --- flag bank -------------------------------------------------------------


def threshold_array(th: DomThresholds) -> np.ndarray:
    """(quantities, 4 levels) array in QUANTITIES x LEVELS order."""
    return np.array([getattr(th, q).as_tuple() for q in QUANTITIES], dtype=float)


def threshold_levels(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Which flags a reading raises.

    ``values``: (P, Q, L); ``thresholds``: (P, Q, 4). Returns (P, Q, L, 4) booleans.
    """
    th = thresholds[:, :, None, :]
    return np.stack(
        [
            values >= th[..., 0],
            values >= th[..., 1],
            values <= th[..., 2],
            values <= th[..., 3],
        ],
        axis=-1,
    )


@dataclass
class FlagBank:
    """Latched, clear-on-read flags for every module, vectorised over ports.

    Flags are indexed (port, FLAG_KINDS, lane). Module-level quantities live in
    lane 0; ``lane_mask`` hides lanes a module does not have.
    """

    lane_mask: np.ndarray  # (P, L) bool
    latched: np.ndarray = field(init=False)
    current: np.ndarray = field(init=False)
    set_count: np.ndarray = field(init=False)
    first_s: np.ndarray = field(init=False)
    last_s: np.ndarray = field(init=False)
    valid: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        p, lanes = self.lane_mask.shape
        shape = (p, len(FLAG_KINDS), lanes)
        self.latched = np.zeros(shape, dtype=bool)
        self.current = np.zeros(shape, dtype=bool)
        self.set_count = np.zeros(shape, dtype=np.int64)
        self.first_s = np.full(shape, np.nan)
        self.last_s = np.full(shape, np.nan)
        self.valid = np.broadcast_to(self.lane_mask[:, None, :], shape).copy()
        module_rows = [i for i, (q, _) in enumerate(FLAG_KINDS) if q in MODULE_QUANTITIES]
        self.valid[:, module_rows, 1:] = False

    def observe(self, t_s: float, asserted: np.ndarray, ports: np.ndarray | None = None) -> None:
        """Record a sample: ``asserted`` is (P, FLAGS, L), or (len(ports), ...) for a subset."""
        idx = slice(None) if ports is None else ports
        now = asserted & self.valid[idx]
        if ports is None and np.array_equal(now, self.current):  # nothing rose or fell
            held = np.flatnonzero(now)
            self.last_s.ravel()[held] = t_s
            self.latched.ravel()[held] = True
            return
        rising = now & ~self.current[idx]
        self.set_count[idx] += rising
        first = self.first_s[idx]
        first[now & np.isnan(first)] = t_s
        self.first_s[idx] = first
        last = self.last_s[idx]
        last[now] = t_s
        self.last_s[idx] = last
        self.latched[idx] |= now
        self.current[idx] = now

    def carry(self) -> None:
        """Time passes: a condition that held at the last sample held into the interval.

        Quantities move monotonically within a model step (thermal lag, drift),
        so the two ends of a step bound its extremes.
        """
        self.latched |= self.current

    def read(self, port: int, clear: bool = True) -> list[DomFlag]:
        shown = self.latched[port] | self.current[port]
        if not shown.any():
            return []
        flags = []
        for k, lane in zip(*np.nonzero(shown), strict=True):
            quantity, level = FLAG_KINDS[k]
            flags.append(
                DomFlag(
                    quantity=quantity,
                    level=level,
                    lane=None if quantity in MODULE_QUANTITIES else int(lane) + 1,
                    active=bool(self.current[port, k, lane]),
                    set_count=int(self.set_count[port, k, lane]),
                    first_set_s=float(self.first_s[port, k, lane]),
                    last_set_s=float(self.last_s[port, k, lane]),
                )
            )
        if clear:
            self.latched[port] = False
        return flags
