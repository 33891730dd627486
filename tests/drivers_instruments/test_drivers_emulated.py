"""Dynamic behaviour: the SCPI drivers against the emulated instruments over real sockets."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from instrument_helpers import FakeClock, sent, visa_device

from labtest.capabilities.instruments import ber_upper_bound
from labtest.drivers.instruments.attenuator import Attenuator
from labtest.drivers.instruments.bert import Bert
from labtest.drivers.instruments.chamber import ThermalChamber
from labtest.drivers.instruments.optical_switch import OpticalSwitch
from labtest.drivers.instruments.power_meter import PowerMeter
from labtest.drivers.instruments.scpi import ScpiInstrument, SettingRefused
from labtest.emulation.scpi_instruments import (
    EmulatedAttenuator,
    EmulatedBert,
    EmulatedChamber,
    EmulatedOpticalSwitch,
    EmulatedPowerMeter,
    InstrumentHooks,
    ReplayInstrument,
    ScpiEmulator,
    ScpiRecording,
)
from labtest.emulation.scpiserver import ScpiServer
from labtest.errors import InfraError, TransportTimeout
from labtest.transports.visa import ScpiInstrumentError

LANE_RATE_GBPS = 106.25

# --- refusals: nothing reaches the instrument -------------------------------------------------

REFUSALS: list[tuple[str, Callable[[], ScpiEmulator], type[ScpiInstrument], dict[str, Any],
                     Callable[[Any], None]]] = [
    ("voa above range", EmulatedAttenuator, Attenuator, {}, lambda d: d.set_attenuation_db(60.5)),
    ("voa below lab minimum", EmulatedAttenuator, Attenuator,
     {"limits": {"attenuation": {"min": 3.0}}}, lambda d: d.set_attenuation_db(1.0)),
    ("voa missing channel", EmulatedAttenuator, Attenuator, {}, lambda d: d.set_output(False, 2)),
    ("opm wavelength", EmulatedPowerMeter, PowerMeter, {}, lambda d: d.set_wavelength_nm(850.0)),
    ("opm averaging", EmulatedPowerMeter, PowerMeter, {},
     lambda d: d.set_averaging_time_s(30.0)),
    ("switch output", EmulatedOpticalSwitch, OpticalSwitch, {"outputs": 4},
     lambda d: d.route("A", 7)),
    ("bert pattern", EmulatedBert, Bert, {}, lambda d: d.set_pattern("PRBS11")),
    ("bert lane", EmulatedBert, Bert, {}, lambda d: d.start([1, 5])),
    ("chamber setpoint", EmulatedChamber, ThermalChamber, {}, lambda d: d.set_setpoint_c(250.0)),
    ("chamber ramp", EmulatedChamber, ThermalChamber, {},
     lambda d: d.set_ramp_rate_c_per_min(0.0)),
]


@pytest.mark.parametrize(("emulator", "driver", "vars_", "call"),
                         [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_a_refused_setting_sends_nothing(
    emulator: Callable[[], ScpiEmulator], driver: type[ScpiInstrument],
    vars_: dict[str, Any], call: Callable[[Any], None],
) -> None:
    with emulator().server() as server, driver("i1", visa_device(server, "x", **vars_)) as inst:
        inst.identify()  # the session is open: a refusal is not a connection artefact
        server.received.clear()
        with pytest.raises(SettingRefused) as caught:
            call(inst)
        assert list(server.received) == []
        assert caught.value.device == "i1"


# --- the instrument's own errors --------------------------------------------------------------


def test_instrument_range_error_propagates_with_its_message() -> None:
    voa = EmulatedAttenuator(max_attenuation_db=40.0)  # a 40 dB model; the driver allows 60
    with voa.server() as server, Attenuator("voa1", visa_device(server, "voa")) as driver:
        with pytest.raises(ScpiInstrumentError) as caught:
            driver.set_attenuation_db(45.0)
        error = caught.value
        assert (error.code, error.instrument_message) == (-222, "Data out of range")
        assert error.device == "voa1" and "Data out of range" in str(error)
        assert voa.attenuation_db() == 39.0  # the ramp stopped at the last accepted step
        driver.transport.check_errors()  # the queue was drained


def test_bert_lane_the_instrument_lacks_is_an_illegal_parameter() -> None:
    with (
        EmulatedBert(lanes=2).server() as server,
        Bert("bert1", visa_device(server, "bert", lanes=4)) as bert,
    ):
        bert.start([1, 2])
        with pytest.raises(ScpiInstrumentError) as caught:
            bert.start([3])
    assert (caught.value.code, caught.value.instrument_message) == (-224, "Illegal parameter value")


# --- timeouts and reconnects ------------------------------------------------------------------


SILENT_TIMEOUT_S = 0.5  # the bound this test measures


def test_silent_instrument_times_out_within_the_bound_and_recovers() -> None:
    with (
        EmulatedPowerMeter().server() as server,
        PowerMeter("opm1", visa_device(server, "opm", timeout_s=SILENT_TIMEOUT_S)) as opm,
    ):
        assert opm.power_dbm(1) == -3.0
        server.set_mode("silent")
        started = time.monotonic()
        with pytest.raises(TransportTimeout, match="opm1"):
            opm.power_dbm(1)
        assert SILENT_TIMEOUT_S * 0.9 <= time.monotonic() - started < SILENT_TIMEOUT_S + 0.5
        server.set_mode("normal")
        assert opm.power_dbm(1) == -3.0


def test_driver_reconnects_when_the_instrument_comes_back() -> None:
    chamber = EmulatedChamber()
    first = chamber.server().start()
    port = first.port
    try:
        driver = ThermalChamber("ch1", visa_device(first, "chamber"))
        driver.set_setpoint_c(40.0)
    finally:
        first.stop()
    with pytest.raises(InfraError, match="ch1"):  # powered off: refused or closed, typed
        driver.temperature_c()
    with ScpiServer(chamber, idn=chamber.idn, port=port):  # back on the same address
        assert driver.status().setpoint_c == 40.0
    driver.close()


# --- dynamic behaviour ------------------------------------------------------------------------


def test_voa_steps_are_what_the_lab_sees() -> None:
    steps_seen: list[tuple[int, float]] = []
    hooks = InstrumentHooks(on_attenuation_db=lambda c, v: steps_seen.append((c, v)))
    voa = EmulatedAttenuator(hooks=hooks)
    with voa.server() as server:
        device = visa_device(server, "voa", limits={"attenuation": {"max_step": 2.5}})
        with Attenuator("voa1", device) as driver:
            driver.set_attenuation_db(10.0)
            assert [v for _, v in steps_seen] == [2.5, 5.0, 7.5, 10.0]
            steps_seen.clear()
            driver.set_attenuation_db(4.0)
            assert steps_seen == [(1, 7.5), (1, 5.0), (1, 4.0)]
            assert sent(server)[-1] == ":INP1:CHAN1:ATT 4.000000E+00"


def test_a_voa_step_moves_the_power_meter_by_the_same_db() -> None:
    """A VOA and a power meter on one emulated link, wired through the hooks only."""
    link = {"tx_dbm": 1.5, "loss_db": 0.0}
    hooks = InstrumentHooks(
        on_attenuation_db=lambda _c, db: link.update(loss_db=db),
        power_source=lambda _c: link["tx_dbm"] - link["loss_db"],
    )
    with (
        EmulatedAttenuator(hooks=hooks).server() as voa_server,
        EmulatedPowerMeter(hooks=hooks).server() as opm_server,
        Attenuator("voa1", visa_device(voa_server, "voa")) as voa,
        PowerMeter("opm1", visa_device(opm_server, "opm")) as opm,
    ):
        before = opm.power_dbm(1)
        voa.set_attenuation_db(7.25)
        assert before - opm.power_dbm(1) == pytest.approx(7.25)


def test_dark_input_reads_the_noise_floor() -> None:
    hooks = InstrumentHooks(power_source=lambda _c: -math.inf)
    with (
        EmulatedPowerMeter(hooks=hooks).server() as server,
        PowerMeter("opm1", visa_device(server, "opm")) as opm,
    ):
        assert opm.power_dbm(3) == EmulatedPowerMeter.NOISE_FLOOR_DBM


def test_switch_routes_and_cable_pull_reach_the_lab() -> None:
    routes: list[tuple[int, str, int | None]] = []
    hooks = InstrumentHooks(on_route=lambda *route: routes.append(route))
    switch = EmulatedOpticalSwitch(outputs=4, hooks=hooks)
    with switch.server() as server, OpticalSwitch("osw1", visa_device(server, "osw")) as driver:
        driver.route("A", 2)
        driver.disconnect()
        assert driver.route_of() is None
        driver.route("A", 4)
        assert driver.route_of() == 4
    assert routes == [(1, "A", 2), (1, "A", None), (1, "A", 4)]


def test_chamber_reaches_its_setpoint_at_the_ramp_rate(clock: FakeClock) -> None:
    chamber = EmulatedChamber(ambient_c=25.0, drift_c_per_min=0.5, clock=clock)
    with (
        chamber.server() as server,
        ThermalChamber("ch1", visa_device(server, "chamber")) as driver,
    ):
        driver.set_setpoint_c(85.0)
        driver.set_ramp_rate_c_per_min(5.0)
        clock.advance(600)
        assert driver.temperature_c() == 25.0  # standby: nothing happens
        driver.run()
        clock.advance(6 * 60)
        assert driver.temperature_c() == pytest.approx(55.0)
        clock.advance(6 * 60)
        assert driver.temperature_c() == pytest.approx(85.0)
        clock.advance(60 * 60)
        assert driver.status().temperature_c == pytest.approx(85.0)  # holds, no overshoot
        driver.stop()
        clock.advance(10 * 60)
        assert driver.temperature_c() == pytest.approx(80.0)  # drifting back to ambient


def test_wait_for_temperature_is_bounded(clock: FakeClock) -> None:
    chamber = EmulatedChamber(clock=clock)
    with (
        chamber.server() as server,
        ThermalChamber("ch1", visa_device(server, "chamber")) as driver,
    ):
        driver.set_setpoint_c(35.0)
        driver.set_ramp_rate_c_per_min(2.0)
        driver.run()
        reached = driver.wait_for_temperature(35.0, 0.5, timeout_s=600, poll_s=30,
                                              clock=clock, sleep=clock.advance)
        assert abs(reached - 35.0) <= 0.5
        driver.set_setpoint_c(-40.0)
        with pytest.raises(InfraError, match="not within"):
            driver.wait_for_temperature(-40.0, 0.5, timeout_s=300, poll_s=30,
                                        clock=clock, sleep=clock.advance)


def test_bert_bits_and_errors_accumulate_from_the_ber(clock: FakeClock) -> None:
    bert = EmulatedBert(lanes=4, lane_rate_gbps=LANE_RATE_GBPS, clock=clock, seed=7)
    bert.set_ber(1, 1e-6)
    bert.set_ber(2, 1e-9)
    with bert.server() as server, Bert("bert1", visa_device(server, "bert")) as driver:
        driver.set_pattern("PRBS31Q")
        driver.start()
        clock.advance(2.0)
        first = {r.lane: r for r in driver.results()}
        clock.advance(2.0)
        second = {r.lane: r for r in driver.results()}
        driver.stop()
        clock.advance(5.0)
        stopped = {r.lane: r for r in driver.results()}
    bits = round(2.0 * LANE_RATE_GBPS * 1e9)
    expected_errors = bits * 1e-6
    assert first[1].bits == bits and first[1].locked and first[1].pattern == "PRBS31Q"
    assert abs(first[1].errors - expected_errors) < 5 * math.sqrt(expected_errors)
    assert abs(first[2].errors - bits * 1e-9) < 5 * math.sqrt(bits * 1e-9) + 1
    assert first[3].errors == 0 and first[3].ber == 0.0
    assert second[1].bits == 2 * bits and second[1].errors > first[1].errors
    assert stopped[1] == second[1]  # gate closed: counters frozen
    assert ber_upper_bound(second[3].bits, 0) < 1e-11  # 425 Gbit error-free proves < 1e-11


def test_bert_detector_out_of_sync_counts_nothing(clock: FakeClock) -> None:
    signal = {1: 1e-12, 2: None, 3: 0.05}  # good, no signal (cable pulled), hopeless BER
    bert = EmulatedBert(lanes=4, clock=clock, hooks=InstrumentHooks(ber_source=signal.get))
    with bert.server() as server, Bert("bert1", visa_device(server, "bert")) as driver:
        driver.start()
        driver.generator_pattern.set("PRBS7", module=1, lane=4)  # lane 4: pattern mismatch
        clock.advance(1.0)
        results = {r.lane: r for r in driver.results()}
    assert results[1].locked and results[1].bits > 0
    for lane in (2, 3, 4):
        assert not results[lane].locked and results[lane].bits == 0, lane


# --- record and replay ------------------------------------------------------------------------


def test_recorded_session_replays_against_the_same_driver(tmp_path: Path) -> None:
    recording = ScpiRecording()
    with EmulatedAttenuator().server() as server:
        device = visa_device(server, "voa")
        with Attenuator("voa1", device) as driver:
            driver.transport.recorder = recording.record
            driver.set_attenuation_db(5.0)
            live = driver.state()
    path = tmp_path / "voa1.scpi.jsonl"
    recording.save(path)
    replay = ReplayInstrument(ScpiRecording.load(path))
    with ScpiServer(replay) as server, Attenuator("voa1", visa_device(server, "voa")) as driver:
        driver.set_attenuation_db(5.0)
        assert driver.state() == live
        with pytest.raises(ScpiInstrumentError):
            driver.set_attenuation_db(6.0)  # never recorded: the replay refuses it
