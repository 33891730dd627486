"""Optical power meter: Keysight N774xC multiport power meters (N7744C, N7745C).

Command set from the *Keysight N774xC Series Multiport Power Meter Programming
Guide* (also valid for 8163B/8164B power-meter modules, where ``n`` is the
slot): one port per ``n`` suffix,

- ``:READ[n]:POWer?`` reads power, triggering a measurement itself (guide,
  "Measurement Operations & Settings"; https://www.easymanua.ls/keysight/
  n774-c-series/manual/1367079?p=69),
- ``:SENSe[n]:POWer:WAVelength <value>`` in metres, ``:SENSe[n]:POWer:UNIT``
  0 = dBm, 1 = W (https://manualshive.com/en/manual/keysight/n774-c-series/
  1961374?page=88),
- ``:SENSe[n]:POWer:ATIMe <value>`` averaging time in seconds (8163A/B
  programming guide, the same SENSe subsystem; https://manualsdump.com/en/
  manuals/agilent_technologies-b-8166a-8163a-8164a/281227/102).

The driver sets dBm once per port before the first reading, and waits for a
reading for the transport timeout plus the averaging time it last set.
Testbed ``vars``: ``channels`` (ports, default 4).
"""

from __future__ import annotations

from labtest.capabilities.instruments import PowerReading
from labtest.drivers.instruments.scpi import (
    FloatSetting,
    IntSetting,
    Measurement,
    ScpiInstrument,
    wavelength_setting,
)
from labtest.testbed.model import Device, Testbed
from labtest.transports.visa import VisaTransport

UNIT_DBM = 0


class PowerMeter(ScpiInstrument):
    family = "Keysight N774xC multiport optical power meter"

    power: Measurement[float] = Measurement(
        get=":READ{slot}:POW?", unit="dBm",
        doc="Optical power of a port, as the meter reads it now.")
    wavelength_nm = wavelength_setting(
        ":SENS{slot}:POW:WAV", minimum=1250.0, maximum=1650.0,
        doc="Calibration wavelength of the port (InGaAs sensor band).")
    power_unit = IntSetting(
        get=":SENS{slot}:POW:UNIT?", set=":SENS{slot}:POW:UNIT {value}", unit="",
        minimum=0, maximum=1, doc="Unit of the readings: 0 = dBm, 1 = W.")
    averaging_time = FloatSetting(
        get=":SENS{slot}:POW:ATIM?", set=":SENS{slot}:POW:ATIM {value}", unit="s",
        minimum=1e-4, maximum=10.0,
        doc="Averaging time of a reading; a reading takes at least this long.")

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: VisaTransport | None = None) -> None:
        super().__init__(name, device, testbed, transport=transport)
        self.channel_count = int(device.vars.get("channels", 4))
        self.indices = {"slot": range(1, self.channel_count + 1)}
        self._averaging_time_s: dict[int, float] = {}
        self._unit_set: set[int] = set()

    # --- PowerMeter capability --------------------------------------------------------

    def power_dbm(self, channel: int = 1) -> float:
        self._ensure_dbm(channel)
        wait_s = self.transport.settings.timeout_s + self._averaging_time_s.get(channel, 0.0)
        return self.power.get(timeout_s=wait_s, slot=channel)

    def read(self, channel: int = 1) -> PowerReading:
        power_dbm = self.power_dbm(channel)
        return PowerReading(
            channel=channel,
            power_dbm=power_dbm,
            wavelength_nm=self.wavelength_nm.get(slot=channel),
            averaging_time_s=self.averaging_time.get(slot=channel),
        )

    def set_wavelength_nm(self, wavelength_nm: float, channel: int = 1) -> None:
        self.wavelength_nm.set(wavelength_nm, slot=channel)

    def set_averaging_time_s(self, averaging_time_s: float, channel: int = 1) -> None:
        self.averaging_time.set(averaging_time_s, slot=channel)
        self._averaging_time_s[channel] = averaging_time_s

    # --- internals --------------------------------------------------------------------

    def _ensure_dbm(self, channel: int) -> None:
        """Readings are in dBm only after ``:SENS:POW:UNIT 0``; a reset meter may be in W."""
        if channel in self._unit_set:
            return
        self.power_unit.set(UNIT_DBM, slot=channel)
        self._unit_set.add(channel)

    def reset(self) -> None:
        super().reset()
        self._unit_set.clear()
        self._averaging_time_s.clear()
