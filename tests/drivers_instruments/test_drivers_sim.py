"""Static behaviour: each SCPI driver against the pyvisa-sim definition shipped in ``sim/``."""

from __future__ import annotations

import pytest
from instrument_helpers import sim_device

import labtest.capabilities.instruments as caps
from labtest.drivers.instruments.attenuator import Attenuator
from labtest.drivers.instruments.bert import Bert
from labtest.drivers.instruments.chamber import ThermalChamber
from labtest.drivers.instruments.optical_switch import OpticalSwitch
from labtest.drivers.instruments.power_meter import PowerMeter
from labtest.drivers.instruments.scpi import SettingRefused
from labtest.transports.visa import ScpiInstrumentError


def test_power_meter_reads_each_port_with_its_own_settings() -> None:
    with PowerMeter("opm1", sim_device("power_meter.yaml", "192.0.2.21", "opm")) as opm:
        assert isinstance(opm, caps.PowerMeter)
        assert opm.identify().startswith("Keysight Technologies,N7744C")
        opm.set_wavelength_nm(1310.0, channel=2)
        opm.set_averaging_time_s(0.01, channel=2)
        assert opm.read(2) == caps.PowerReading(2, -7.04, 1310.0, 0.01)
        assert opm.read(1) == caps.PowerReading(1, -3.215, 1550.0, 1e-3)
        assert opm.power_dbm(4) == -90.0
        with pytest.raises(SettingRefused):
            opm.set_wavelength_nm(980.0)
        with pytest.raises(SettingRefused, match="slot = 5"):
            opm.power_dbm(5)


def test_attenuator_steps_and_surfaces_the_instruments_refusal() -> None:
    with Attenuator("voa1", sim_device("attenuator.yaml", "192.0.2.22", "voa")) as voa:
        assert isinstance(voa, caps.Attenuator)
        voa.set_attenuation_db(10.0)
        voa.set_output(False)
        assert voa.state() == caps.AttenuatorState(1, 10.0, False, 1550.0)
        # 50 dB is inside the driver's generic range but beyond this model's 45 dB:
        # the ramp stops at the first step the instrument refuses, with its message
        with pytest.raises(ScpiInstrumentError) as caught:
            voa.set_attenuation_db(50.0)
        assert caught.value.code == -113
        assert caught.value.command == ":INP1:CHAN1:ATT 4.600000E+01"
        assert voa.attenuation_db() == 43.0
        with pytest.raises(SettingRefused):
            voa.set_attenuation_db(61.0)


def test_optical_switch_routes_and_parks() -> None:
    device = sim_device("optical_switch.yaml", "192.0.2.23", "optical-switch", outputs=4)
    with OpticalSwitch("osw1", device) as osw:
        assert isinstance(osw, caps.OpticalSwitch)
        assert osw.route_of() == 1
        osw.route("A", 3)
        assert osw.route_of() == 3
        osw.disconnect()
        assert osw.route_of() is None
        with pytest.raises(SettingRefused):
            osw.route("A", 5)
        with pytest.raises(SettingRefused):
            osw.route("B", 2)


def test_bert_reads_per_lane_counters_in_the_guides_format() -> None:
    with Bert("bert1", sim_device("bert.yaml", "192.0.2.24", "bert", lanes=4)) as bert:
        assert isinstance(bert, caps.Bert)
        bert.set_pattern("PRBS13Q", lanes=[2])
        bert.start()
        results = {r.lane: r for r in bert.results()}
    assert results[1] == caps.PrbsResult(1, "PRBS31", True, 1_000_000_000_000, 0, 0.0)
    assert results[2].pattern == "PRBS13Q"
    assert (results[2].bits, results[2].errors) == (23_345_450_000, 771)
    assert results[3].locked is False and results[3].ber is None
    assert results[4].ber == pytest.approx(5e-10)


def test_chamber_settings_round_trip_and_the_chambers_own_range() -> None:
    with ThermalChamber("ch1", sim_device("chamber.yaml", "192.0.2.25", "chamber")) as chamber:
        assert isinstance(chamber, caps.ThermalChamber)
        chamber.set_setpoint_c(85.0)
        chamber.set_ramp_rate_c_per_min(3.0)
        chamber.run()
        status = chamber.status()
        assert (status.setpoint_c, status.ramp_rate_c_per_min, status.running) == (85.0, 3.0, True)
        assert status.temperature_c == 23.5
        chamber.stop()
        assert chamber.status().running is False
        with pytest.raises(ScpiInstrumentError):
            chamber.set_setpoint_c(170.0)  # driver allows 180, this chamber only 150
        with pytest.raises(SettingRefused):
            chamber.set_setpoint_c(200.0)
