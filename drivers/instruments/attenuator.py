"""Variable optical attenuator: Keysight N77xx VOAs (N7752A, N7762A, N7764A) and 8157x modules.

Command set from the *Keysight 8163A/B, 8164A/B & 8166A/B Mainframes
Programming Guide*, "Signal Conditioning" (the N77xx attenuators use the same
INPut/OUTPut subsystem, ``n`` = slot or VOA number):

- ``:INPut[n][:CHANnel[m]]:ATTenuation <value>[dB]`` and ``...:ATTenuation?``
  (https://manualshive.com/en/manual/keysight-technologies/8163a-b/
  8163a-b_programming-manual_1961928-182.html),
- ``:INPut[n][:CHANnel[m]]:WAVelength <value>`` in metres,
- ``:OUTPut[n][:CHANnel[m]][:STATe] ON|OFF``: the shutter.

Attenuation is range-checked before anything is sent and large changes are
stepped (``max_step``, 3 dB by default), so a link under test sees a ramp and
never a 20 dB jump. Testbed ``vars``: ``channels`` (default 1) and ``limits``,
e.g. ``{attenuation_db: {min: 2, max: 25, max_step: 0.5, step_delay_s: 0.2}}``.
"""

from __future__ import annotations

from labtest.capabilities.instruments import AttenuatorState
from labtest.drivers.instruments.scpi import (
    BoolSetting,
    FloatSetting,
    ScpiInstrument,
    wavelength_setting,
)
from labtest.testbed.model import Device, Testbed
from labtest.transports.visa import VisaTransport


class Attenuator(ScpiInstrument):
    family = "Keysight N77xx / 8157x variable optical attenuator"

    attenuation = FloatSetting(
        get=":INP{slot}:CHAN1:ATT?", set=":INP{slot}:CHAN1:ATT {value}", unit="dB",
        minimum=0.0, maximum=60.0, max_step=3.0,
        doc="Attenuation factor (filter attenuation plus offset).")
    wavelength_nm = wavelength_setting(
        ":INP{slot}:CHAN1:WAV", minimum=1200.0, maximum=1700.0,
        doc="Wavelength the attenuation is calibrated for.")
    output = BoolSetting(
        get=":OUTP{slot}:CHAN1:STAT?", set=":OUTP{slot}:CHAN1:STAT {value}",
        doc="Shutter: False blocks the light entirely.")

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: VisaTransport | None = None) -> None:
        super().__init__(name, device, testbed, transport=transport)
        self.indices = {"slot": range(1, int(device.vars.get("channels", 1)) + 1)}

    def set_attenuation_db(self, attenuation_db: float, channel: int = 1) -> None:
        self.attenuation.set(attenuation_db, slot=channel)

    def attenuation_db(self, channel: int = 1) -> float:
        return self.attenuation.get(slot=channel)

    def set_output(self, enabled: bool, channel: int = 1) -> None:
        self.output.set(enabled, slot=channel)

    def set_wavelength_nm(self, wavelength_nm: float, channel: int = 1) -> None:
        self.wavelength_nm.set(wavelength_nm, slot=channel)

    def state(self, channel: int = 1) -> AttenuatorState:
        return AttenuatorState(
            channel=channel,
            attenuation_db=self.attenuation.get(slot=channel),
            output_enabled=self.output.get(slot=channel),
            wavelength_nm=self.wavelength_nm.get(slot=channel),
        )
