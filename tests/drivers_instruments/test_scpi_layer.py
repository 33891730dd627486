"""The declarative SCPI layer on its own: checks, steps, limits, conversions, statistics."""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest

from labtest.capabilities.instruments import BERT_PATTERNS, ber_upper_bound, bits_required
from labtest.drivers.instruments.bert import PATTERN_TOKENS, parse_bit_count
from labtest.drivers.instruments.scpi import (
    BoolSetting,
    EnumSetting,
    FloatSetting,
    IntSetting,
    Limits,
    Measurement,
    Parameter,
    ScpiInstrument,
    SettingRefused,
    steps,
)
from labtest.emulation.scpi_instruments import BERT_SEQUENCES, match_header, split_args
from labtest.errors import ProtocolError
from labtest.registry import capabilities_of, driver_class
from labtest.testbed.model import Device, VisaSettings


class ScriptedTransport:
    """Stands in for VisaTransport: logs every exchange, answers queries from a dict."""

    def __init__(self, replies: dict[str, str] | None = None) -> None:
        self.replies = replies or {}
        self.log: list[str] = []
        self.settings = VisaSettings(resource="TCPIP0::192.0.2.1::5025::SOCKET")

    def write(self, command: str) -> None:
        self.log.append(command)

    def query(self, command: str, timeout_s: float | None = None) -> str:
        self.log.append(command)
        return self.replies[command]

    def close(self) -> None:
        pass


class Toy(ScpiInstrument):
    level = FloatSetting(get="LEV{ch}?", set="LEV{ch} {value}", unit="dB",
                         minimum=0.0, maximum=20.0, max_step=3.0, doc="A level.")
    wavelength_nm = FloatSetting(get="WAV?", set="WAV {value}", unit="nm", scale=1e-9,
                                 minimum=1200.0, maximum=1700.0, doc="A wavelength.")
    port = IntSetting(get="PORT?", set="PORT {value}", unit="", minimum=1, maximum=8,
                      doc="A port.")
    enabled = BoolSetting(get="EN?", set="EN {value}", doc="On or off.")
    mode = EnumSetting(get="MODE?", set="MODE {value}", choices={"fast": "FAST", "slow": "SLOW"},
                       doc="A mode.")
    reading = Measurement(get="READ?", unit="dBm", doc="A reading.")


def toy(replies: dict[str, str] | None = None, **vars_: Any) -> tuple[Toy, ScriptedTransport]:
    transport = ScriptedTransport(replies)
    device = Device(role="toy", driver="toy", visa=transport.settings, vars=vars_)
    instrument = Toy("toy1", device, transport=transport)  # type: ignore[arg-type]
    instrument.indices = {"ch": range(1, 3)}
    return instrument, transport


# --- steps and limits -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("present", "target", "max_step", "expected"),
    [
        (0.0, 10.0, 3.0, [3.0, 6.0, 9.0, 10.0]),
        (10.0, 0.0, 3.0, [7.0, 4.0, 1.0, 0.0]),
        (0.0, 9.0, 3.0, [3.0, 6.0, 9.0]),
        (5.0, 5.0, 3.0, [5.0]),
        (0.0, 0.5, 3.0, [0.5]),
    ],
)
def test_steps_never_exceed_the_maximum(
    present: float, target: float, max_step: float, expected: list[float]
) -> None:
    values = steps(present, target, max_step)
    assert values == pytest.approx(expected)
    jumps = [abs(b - a) for a, b in zip([present, *values], values, strict=False)]
    assert max(jumps) <= max_step + 1e-9


def test_limits_can_only_be_narrowed() -> None:
    declared = Limits(0.0, 60.0, 3.0)
    assert declared.narrowed(5.0, 30.0, 1.0) == Limits(5.0, 30.0, 1.0)
    assert declared.narrowed(-10.0, 99.0, 10.0) == declared


# --- explicit I/O and refusals ----------------------------------------------------------------


def test_attribute_access_does_no_io() -> None:
    instrument, transport = toy()
    handle = instrument.level
    assert "toy1.level" in repr(handle)
    assert isinstance(Toy.level, Parameter)
    assert transport.log == []


def test_large_change_is_stepped_from_the_present_value() -> None:
    instrument, transport = toy({"LEV1?": "+2.00000000E+00"})
    instrument.level.set(9.5, ch=1)
    assert transport.log == [
        "LEV1?", "LEV1 5.000000E+00", "LEV1 8.000000E+00", "LEV1 9.500000E+00",
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [("level", 20.5), ("level", -1.0), ("level", math.nan), ("level", "3"), ("level", True),
     ("port", 9), ("port", 2.0), ("enabled", 1), ("mode", "medium")],
)
def test_out_of_range_values_are_refused_before_any_io(name: str, value: Any) -> None:
    instrument, transport = toy({"LEV1?": "0"})
    with pytest.raises(SettingRefused) as caught:
        getattr(instrument, name).set(value, ch=1)
    assert transport.log == []
    assert caught.value.device == "toy1" and name in str(caught.value)


def test_an_index_outside_the_declared_ones_is_refused() -> None:
    instrument, transport = toy()
    with pytest.raises(SettingRefused, match=r"ch = 3 refused: allowed 1\.\.2"):
        instrument.level.get(ch=3)
    assert transport.log == []


def test_testbed_limits_narrow_a_setting() -> None:
    limits = {"level": {"min": 2.0, "max": 8.0, "max_step": 1.0}}
    instrument, transport = toy({"LEV1?": "2.0"}, limits=limits)
    with pytest.raises(SettingRefused, match=r"\[2, 8\]"):
        instrument.level.set(9.0, ch=1)
    instrument.level.set(4.0, ch=1)
    assert transport.log[1:] == ["LEV1 3.000000E+00", "LEV1 4.000000E+00"]


def test_conversions_to_and_from_the_instrument() -> None:
    instrument, transport = toy({"WAV?": "+1.31000000E-06", "EN?": "ON", "MODE?": "SLOW",
                                 "READ?": "-3.5", "PORT?": "4"})
    instrument.wavelength_nm.set(1550.0)
    instrument.enabled.set(False)
    instrument.mode.set("fast")
    assert transport.log == ["WAV 1.550000E-06", "EN 0", "MODE FAST"]
    assert instrument.wavelength_nm.get() == 1310.0
    assert instrument.enabled.get() is True
    assert instrument.mode.get() == "slow"
    assert instrument.reading.get() == -3.5
    assert instrument.port.get() == 4


def test_an_unreadable_reply_is_a_protocol_error_with_the_raw_text() -> None:
    instrument, _ = toy({"MODE?": "TURBO"})
    with pytest.raises(ProtocolError) as caught:
        instrument.mode.get()
    assert caught.value.raw == "TURBO" and caught.value.device == "toy1"


# --- every shipped driver ---------------------------------------------------------------------

DRIVERS = {
    "opm": "PowerMeter", "voa": "Attenuator", "optical-switch": "OpticalSwitch",
    "bert": "Bert", "chamber": "ThermalChamber", "pdu": "Pdu",
}


@pytest.mark.parametrize(("name", "capability"), sorted(DRIVERS.items()))
def test_entry_point_resolves_to_a_driver_with_its_capability(name: str, capability: str) -> None:
    cls = driver_class(name)
    assert capabilities_of(cls) == [capability]
    module = importlib.import_module(cls.__module__)
    vendor = cls.family.split()[0].lower()  # the family the command set follows is named
    assert module.__doc__ and vendor in module.__doc__.lower()


@pytest.mark.parametrize("name", sorted(set(DRIVERS) - {"pdu"}))
def test_every_declared_parameter_has_a_docstring(name: str) -> None:
    cls = driver_class(name)
    declared = [v for v in vars(cls).values() if isinstance(v, Parameter)]
    assert declared
    for parameter in declared:
        assert parameter.__doc__ and parameter.__doc__.endswith("."), parameter.name


# --- BERT helpers -----------------------------------------------------------------------------


def test_bit_count_reply_of_the_programming_guide_is_parsed() -> None:
    # the example reply printed in the Keysight M8070A programming guide (p. 273)
    reply = '(1.366014336e9,"M1.DataIn1",1.2222e10,1.112345e10,5.1e1,7.2e2)'
    assert parse_bit_count(reply) == (23_345_450_000, 771)
    with pytest.raises(ValueError):
        parse_bit_count("1.2e10")


def test_driver_and_emulator_agree_on_every_pattern() -> None:
    assert set(PATTERN_TOKENS) == set(BERT_PATTERNS) == set(BERT_SEQUENCES.values())
    for name, token in PATTERN_TOKENS.items():
        assert BERT_SEQUENCES[token.replace("'", "")] == name


def test_ber_confidence_bounds() -> None:
    # zero errors: N = -ln(1 - CL) / BER, the "3 / BER" rule at 95 %
    assert bits_required(1e-12) == pytest.approx(-math.log(0.05) / 1e-12, rel=1e-9)
    # one error at 95 %: chi2.ppf(0.95, 4) / 2 = 4.7439
    assert bits_required(1e-12, errors=1) / 1e12 == pytest.approx(4.7439, abs=1e-4)
    bound = ber_upper_bound(bits_required(1e-9, errors=3, confidence=0.9), 3, 0.9)
    assert bound == pytest.approx(1e-9, rel=1e-6)
    # many errors: the bound stays above the observed rate (a Poisson sum underflowed here)
    assert ber_upper_bound(5e8, 1200) > 1200 / 5e8
    assert ber_upper_bound(0, 0) == math.inf  # no bits compared proves nothing
    with pytest.raises(ValueError):
        ber_upper_bound(1e9, -1)


# --- emulator-side parsing --------------------------------------------------------------------


def test_headers_match_with_numeric_suffixes_in_short_and_long_form() -> None:
    assert match_header("INPut:CHANnel:ATTenuation?", ":inp2:chan1:att?") == [2, 1, None]
    assert match_header("READ:POWer?", "READ:POWER?") == [None, None]
    assert match_header("READ:POWer?", ":READ1:POW") is None
    assert match_header("SENSe:POWer:WAVelength", ":SENS1:POW:WAVE") is None


def test_parameters_split_outside_quotes() -> None:
    assert split_args("'M1.DataOut1',PRBS,'2^31-1'") == ["'M1.DataOut1'", "PRBS", "'2^31-1'"]
    assert split_args('"a,b", 3') == ['"a,b"', "3"]
    assert split_args("") == []
