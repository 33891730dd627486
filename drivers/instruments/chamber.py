"""Thermal chamber: a generic SCPI chamber with ESPEC's operating model.

ESPEC controllers (EHS/SH/PL series) speak their own ASCII protocol
(``1,MON?`` -> ``"24.1,100,CONSTANT,0"``: temperature, humidity, operating
mode, alarms; modes OFF / STANDBY / CONSTANT / RUN; ESPEC EHS-211
communication manual, https://www.easymanua.ls/espec/ehs-211/manual?p=24),
and Thermotron 8200/8800 controllers another one, so neither fits a SCPI
error-queue transport. This driver speaks a small generic SCPI set that keeps
ESPEC's concepts: constant mode runs at a setpoint with a ramp rate, standby
stops control.

- ``:SOURce:TEMPerature <c>`` / ``?``: setpoint in deg C;
- ``:SOURce:TEMPerature:RAMP <c_per_min>`` / ``?``: ramp rate;
- ``:MEASure:TEMPerature?``: air temperature in the chamber;
- ``:CONTrol:MODE CONSTANT|STANDBY`` / ``?``: run / stop.

A bridge to an ESPEC or Thermotron controller can present this set. Testbed
``vars.limits`` narrows the setpoint to what the DUT tolerates.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from labtest.capabilities.instruments import ChamberStatus
from labtest.drivers.instruments.scpi import EnumSetting, FloatSetting, Measurement, ScpiInstrument
from labtest.errors import InfraError

MODES = {"constant": "CONSTANT", "standby": "STANDBY"}


class ThermalChamber(ScpiInstrument):
    family = "Generic SCPI thermal chamber (ESPEC operating model)"

    setpoint = FloatSetting(
        get=":SOUR:TEMP?", set=":SOUR:TEMP {value}", unit="degC", minimum=-70.0, maximum=180.0,
        doc="Temperature the chamber controls to in constant mode.")
    ramp_rate = FloatSetting(
        get=":SOUR:TEMP:RAMP?", set=":SOUR:TEMP:RAMP {value}", unit="degC/min",
        minimum=0.1, maximum=30.0,
        doc="How fast the air temperature may move towards the setpoint.")
    temperature: Measurement[float] = Measurement(
        get=":MEAS:TEMP?", unit="degC", doc="Air temperature measured in the chamber.")
    mode = EnumSetting(get=":CONT:MODE?", set=":CONT:MODE {value}", choices=MODES,
                       doc="constant = running at the setpoint; standby = not controlling.")

    def set_setpoint_c(self, setpoint_c: float) -> None:
        self.setpoint.set(setpoint_c)

    def set_ramp_rate_c_per_min(self, ramp_rate_c_per_min: float) -> None:
        self.ramp_rate.set(ramp_rate_c_per_min)

    def temperature_c(self) -> float:
        return self.temperature.get()

    def run(self) -> None:
        self.mode.set("constant")

    def stop(self) -> None:
        self.mode.set("standby")

    def status(self) -> ChamberStatus:
        return ChamberStatus(
            temperature_c=self.temperature.get(),
            setpoint_c=self.setpoint.get(),
            ramp_rate_c_per_min=self.ramp_rate.get(),
            running=self.mode.get() == "constant",
        )

    def wait_for_temperature(
        self,
        target_c: float,
        tolerance_c: float = 0.5,
        timeout_s: float = 3600.0,
        poll_s: float = 10.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> float:
        """Poll until the air is within ``tolerance_c`` of ``target_c``; bounded by ``timeout_s``.

        A chamber that cannot get there is broken infrastructure (``InfraError``).
        """
        deadline = clock() + timeout_s
        while True:
            actual_c = self.temperature.get()
            if abs(actual_c - target_c) <= tolerance_c:
                return actual_c
            if clock() >= deadline:
                raise InfraError(
                    self.name,
                    f"chamber at {actual_c:.2f} degC, not within {tolerance_c} of "
                    f"{target_c} degC after {timeout_s:g} s",
                )
            sleep(poll_s)
