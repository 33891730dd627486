"""Instrument capabilities: optical power meter, attenuator, switch, BERT, chamber, PDU.

One small Protocol per instrument family, so a suite asks for "an Attenuator"
and never for a vendor's SCPI. Channels, lanes and outlets are 1-based as the
instruments number them. Records carry units in their field names.

A BERT reports per lane with the same ``PrbsResult`` record a switch's PRBS
checker returns, so one BER check judges both. ``ber_upper_bound`` and
``bits_required`` give the statistical confidence of a BER measurement: with
``E`` errors in ``N`` bits, the BER is below ``chi2_CL(2(E+1)) / (2N)`` with
confidence CL (Poisson/chi-square bound; for E = 0 and CL = 95 % that is the
familiar N = 3 / BER rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from labtest.capabilities.switch import PrbsResult
from labtest.stats import ber_upper_bound, bits_required

__all__ = [
    "BERT_PATTERNS",
    "Attenuator",
    "AttenuatorState",
    "Bert",
    "ChamberStatus",
    "OpticalSwitch",
    "OutletStatus",
    "Pdu",
    "PowerMeter",
    "PowerReading",
    "PrbsResult",
    "ThermalChamber",
    "ber_upper_bound",
    "bits_required",
]

#: the patterns a BERT driver must accept (IEEE 802.3 names; "Q" = PAM4 variants, 802.3bs 120.5.11)
BERT_PATTERNS = ("PRBS7", "PRBS9", "PRBS13Q", "PRBS15", "PRBS23", "PRBS31", "PRBS31Q")

# --- records -----------------------------------------------------------------


@dataclass(frozen=True)
class PowerReading:
    channel: int
    power_dbm: float
    wavelength_nm: float | None = None
    averaging_time_s: float | None = None


@dataclass(frozen=True)
class AttenuatorState:
    channel: int
    attenuation_db: float
    output_enabled: bool
    wavelength_nm: float | None = None


@dataclass(frozen=True)
class ChamberStatus:
    temperature_c: float
    setpoint_c: float
    ramp_rate_c_per_min: float
    running: bool


@dataclass(frozen=True)
class OutletStatus:
    """One PDU outlet; ``None`` where the PDU model does not meter it."""

    outlet: int
    on: bool
    name: str | None = None
    load_a: float | None = None
    power_w: float | None = None


# --- capabilities ----------------------------------------------------------------


@runtime_checkable
class PowerMeter(Protocol):
    def power_dbm(self, channel: int = 1) -> float: ...

    def read(self, channel: int = 1) -> PowerReading: ...

    def set_wavelength_nm(self, wavelength_nm: float, channel: int = 1) -> None: ...

    def set_averaging_time_s(self, averaging_time_s: float, channel: int = 1) -> None: ...


@runtime_checkable
class Attenuator(Protocol):
    def set_attenuation_db(self, attenuation_db: float, channel: int = 1) -> None:
        """Refused before anything is sent when out of range; large changes are stepped."""

    def attenuation_db(self, channel: int = 1) -> float: ...

    def set_output(self, enabled: bool, channel: int = 1) -> None: ...

    def state(self, channel: int = 1) -> AttenuatorState: ...


@runtime_checkable
class OpticalSwitch(Protocol):
    def route(self, input_port: str, output_port: int, channel: int = 1) -> None: ...

    def route_of(self, channel: int = 1) -> int | None:
        """The output the input is routed to; None when disconnected (parked)."""

    def disconnect(self, channel: int = 1) -> None:
        """A cable pull: the input goes to no connected output."""


@runtime_checkable
class Bert(Protocol):
    def set_pattern(self, pattern: str, lanes: list[int] | None = None) -> None:
        """Generator and checker of each lane (all lanes when None), one of ``BERT_PATTERNS``."""

    def start(self, lanes: list[int] | None = None) -> None:
        """Clear the counters and start accumulating."""

    def stop(self, lanes: list[int] | None = None) -> None: ...

    def results(self, lanes: list[int] | None = None) -> list[PrbsResult]: ...


@runtime_checkable
class ThermalChamber(Protocol):
    def set_setpoint_c(self, setpoint_c: float) -> None: ...

    def set_ramp_rate_c_per_min(self, ramp_rate_c_per_min: float) -> None: ...

    def temperature_c(self) -> float: ...

    def run(self) -> None: ...

    def stop(self) -> None:
        """Stop controlling (standby); the chamber drifts back towards ambient."""

    def status(self) -> ChamberStatus: ...


@runtime_checkable
class Pdu(Protocol):
    def outlets(self) -> dict[int, OutletStatus]: ...

    def set_outlet(self, outlet: int, on: bool) -> None: ...

    def cycle_outlet(self, outlet: int) -> None:
        """Off, then on again after the PDU's reboot duration."""


# --- BER statistics --------------------------------------------------------------
# One implementation (scipy's chi-square) in labtest.stats; re-exported for BERT users.
