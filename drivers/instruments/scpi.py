"""The small declarative layer SCPI instrument drivers are written in.

A driver class declares each SCPI quantity once, as a typed descriptor with its
command templates, unit, allowed range or values and a docstring::

    class Voa(ScpiInstrument):
        attenuation_db = FloatSetting(
            get=":INP{slot}:CHAN{channel}:ATT?", set=":INP{slot}:CHAN{channel}:ATT {value}",
            unit="dB", minimum=0.0, maximum=60.0, max_step=3.0,
            doc="Attenuation factor.")

``voa.attenuation_db`` is a bound handle and does no I/O; reading and writing
are explicit calls, ``voa.attenuation_db.get(slot=1, channel=1)`` and
``.set(12.5, slot=1, channel=1)`` (QCoDeS style: no I/O hidden in attribute
access, unlike pymeasure properties). Before anything is sent, the value and
every index are checked; a refusal is ``SettingRefused`` and the server sees
nothing. A setting with ``max_step`` reads the present value and walks to the
target in steps no larger than that, so a VOA never jumps 20 dB at once.

Limits can be narrowed per instrument (never widened), e.g. from the testbed:
``vars: {limits: {attenuation_db: {min: 5, max: 30, max_step: 1}}}``, which is
how a lab protects a receiver from overload. Values go out in SCPI NR3 form
(``1.250000E+01``): every instrument accepts it and so does pyvisa-sim.

Errors the instrument queues after a setting come back from the transport as
``ScpiInstrumentError`` with the instrument's own message.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, TypeVar

from labtest import connect
from labtest.errors import ConfigError, LabtestError, ProtocolError
from labtest.testbed.model import Device, Testbed
from labtest.transports.closing import ClosedOnExit
from labtest.transports.visa import Recorder, VisaTransport

T = TypeVar("T")


class SettingRefused(LabtestError, ValueError):
    """A value or index outside what the instrument (or the lab) allows; nothing was sent."""

    def __init__(self, device: str, name: str, value: object, allowed: str) -> None:
        self.device = device
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"[{device}] {name} = {value!r} refused: allowed {allowed}")


@dataclass(frozen=True)
class Limits:
    """Numeric bounds of a setting; ``max_step`` is the largest change sent at once."""

    minimum: float | None = None
    maximum: float | None = None
    max_step: float | None = None
    step_delay_s: float = 0.0

    def narrowed(self, minimum: float | None, maximum: float | None,
                 max_step: float | None) -> Limits:
        """Tighter limits; asking for wider ones keeps the declared bound (safety first)."""
        return replace(
            self,
            minimum=_tighter(self.minimum, minimum, max),
            maximum=_tighter(self.maximum, maximum, min),
            max_step=_tighter(self.max_step, max_step, min),
        )

    def describe(self) -> str:
        low = "-inf" if self.minimum is None else f"{self.minimum:g}"
        high = "inf" if self.maximum is None else f"{self.maximum:g}"
        return f"[{low}, {high}]"


def _tighter(
    declared: float | None, wanted: float | None, pick: Callable[..., float]
) -> float | None:
    if wanted is None:
        return declared
    return wanted if declared is None else pick(declared, wanted)


def _unscale(value: float, scale: float) -> float:
    """Instrument unit -> driver unit, without binary noise (1.31e-06 m -> 1310.0 nm)."""
    return value if scale == 1.0 else float(f"{value / scale:.12g}")


def nr3(value: float) -> str:
    """SCPI NR3 text of a float: ``12.5`` -> ``"1.250000E+01"``."""
    return f"{value:.6E}"


def parse_bool(reply: str) -> bool:
    """``1``/``ON`` -> True, ``0``/``OFF`` -> False (IEEE 488.2 boolean replies)."""
    text = reply.strip().upper()
    if text in ("1", "ON", "+1"):
        return True
    if text in ("0", "OFF", "+0"):
        return False
    raise ValueError(f"not a boolean: {reply!r}")


# --- descriptors --------------------------------------------------------------------


class Parameter(Generic[T]):
    """Base of every declared SCPI quantity. Subclasses say how to check and convert."""

    def __init__(self, *, get: str | None, set: str | None, unit: str, doc: str) -> None:
        self.get_cmd = get
        self.set_cmd = set
        self.unit = unit
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instrument: ScpiInstrument | None, owner: type) -> Any:
        if instrument is None:
            return self
        return Bound(self, instrument)

    # what subclasses provide
    def check(self, instrument: ScpiInstrument, value: T) -> T:
        return value

    def encode(self, value: T) -> str:
        return str(value)

    def decode(self, reply: str) -> T:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} [{self.unit}]" if self.unit else self.name

    def write(self, instrument: ScpiInstrument, value: T, index: Mapping[str, Any]) -> None:
        assert self.set_cmd is not None
        instrument.transport.write(self.set_cmd.format(value=self.encode(value), **index))


class Measurement(Parameter[T]):
    """A read-only quantity; ``parse`` turns the reply into the value (float by default)."""

    def __init__(self, *, get: str, unit: str, doc: str,
                 parse: Callable[[str], T] = float, scale: float = 1.0) -> None:  # type: ignore[assignment]
        super().__init__(get=get, set=None, unit=unit, doc=doc)
        self.parse = parse
        self.scale = scale

    def decode(self, reply: str) -> T:
        value = self.parse(reply)
        return _unscale(value, self.scale) if isinstance(value, float) else value  # type: ignore[return-value]


class FloatSetting(Parameter[float]):
    """A number with bounds, an optional maximum step and a scale to the instrument's unit.

    ``scale`` converts the driver's unit to the instrument's: wavelengths are
    handled in nm and sent in metres with ``scale=1e-9``.
    """

    def __init__(self, *, get: str | None, set: str, unit: str, doc: str,
                 minimum: float | None = None, maximum: float | None = None,
                 max_step: float | None = None, step_delay_s: float = 0.0,
                 scale: float = 1.0) -> None:
        super().__init__(get=get, set=set, unit=unit, doc=doc)
        self.limits = Limits(minimum, maximum, max_step, step_delay_s)
        self.scale = scale

    def check(self, instrument: ScpiInstrument, value: float) -> float:
        limits = instrument.limits_of(self)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value):
            raise SettingRefused(instrument.name, self.describe(), value, "a finite number")
        low, high = limits.minimum, limits.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            raise SettingRefused(instrument.name, self.describe(), value, limits.describe())
        return float(value)

    def encode(self, value: float) -> str:
        return nr3(value * self.scale)

    def decode(self, reply: str) -> float:
        return _unscale(float(reply), self.scale)

    def write(self, instrument: ScpiInstrument, value: float, index: Mapping[str, Any]) -> None:
        limits = instrument.limits_of(self)
        if limits.max_step is None or self.get_cmd is None:
            super().write(instrument, value, index)
            return
        present = self.decode(instrument.transport.query(self.get_cmd.format(**index)))
        for step_value in steps(present, value, limits.max_step):
            super().write(instrument, step_value, index)
            if limits.step_delay_s and step_value != value:
                time.sleep(limits.step_delay_s)


def wavelength_setting(command: str, *, minimum: float, maximum: float, doc: str) -> FloatSetting:
    """A wavelength setting at ``command`` (read back as ``command?``): drivers speak nm,
    the Keysight optical modules take metres, so that conversion is written here once."""
    return FloatSetting(get=f"{command}?", set=f"{command} {{value}}", unit="nm",
                        minimum=minimum, maximum=maximum, scale=1e-9, doc=doc)


class IntSetting(Parameter[int]):
    """An integer with bounds; ``parse`` reads it out of a structured reply if needed."""

    def __init__(self, *, get: str | None, set: str, unit: str, doc: str,
                 minimum: int | None = None, maximum: int | None = None,
                 parse: Callable[[str], int] = int) -> None:
        super().__init__(get=get, set=set, unit=unit, doc=doc)
        self.limits = Limits(minimum, maximum)
        self.parse = parse

    def check(self, instrument: ScpiInstrument, value: int) -> int:
        limits = instrument.limits_of(self)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SettingRefused(instrument.name, self.describe(), value, "an integer")
        low, high = limits.minimum, limits.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            raise SettingRefused(instrument.name, self.describe(), value, limits.describe())
        return value

    def encode(self, value: int) -> str:
        return str(value)

    def decode(self, reply: str) -> int:
        return self.parse(reply)


class BoolSetting(Parameter[bool]):
    """ON/OFF, sent as ``1``/``0``."""

    def __init__(self, *, get: str | None, set: str, doc: str) -> None:
        super().__init__(get=get, set=set, unit="", doc=doc)

    def check(self, instrument: ScpiInstrument, value: bool) -> bool:
        if not isinstance(value, bool):
            raise SettingRefused(instrument.name, self.describe(), value, "True or False")
        return value

    def encode(self, value: bool) -> str:
        return "1" if value else "0"

    def decode(self, reply: str) -> bool:
        return parse_bool(reply)


class EnumSetting(Parameter[str]):
    """One of named choices; ``choices`` maps the driver's name to the instrument's token."""

    def __init__(self, *, get: str | None, set: str, doc: str, choices: Mapping[str, str]) -> None:
        super().__init__(get=get, set=set, unit="", doc=doc)
        self.choices = dict(choices)
        self._names = {_norm(token): name for name, token in self.choices.items()}

    def check(self, instrument: ScpiInstrument, value: str) -> str:
        if value not in self.choices:
            allowed = f"one of {sorted(self.choices)}"
            raise SettingRefused(instrument.name, self.name, value, allowed)
        return value

    def encode(self, value: str) -> str:
        return self.choices[value]

    def decode(self, reply: str) -> str:
        try:
            return self._names[_norm(reply)]
        except KeyError:
            raise ValueError(f"unknown {self.name} {reply!r}") from None


def _norm(token: str) -> str:
    return token.upper().replace(" ", "").replace("'", "").replace('"', "")


def steps(present: float, target: float, max_step: float) -> list[float]:
    """The values to send to go from ``present`` to ``target`` in steps <= ``max_step``."""
    if max_step <= 0:
        raise ValueError("max_step must be > 0")
    count = max(1, math.ceil(round(abs(target - present) / max_step, 9)))
    direction = 1.0 if target >= present else -1.0
    values = [present + direction * max_step * i for i in range(1, count)]
    return [*values, target]


# --- the bound handle and the instrument base --------------------------------------


class Bound(Generic[T]):
    """A parameter of one instrument: ``get()`` and ``set()`` are its only I/O."""

    def __init__(self, parameter: Parameter[T], instrument: ScpiInstrument) -> None:
        self.parameter = parameter
        self.instrument = instrument

    def __repr__(self) -> str:
        return f"<{self.instrument.name}.{self.parameter.describe()}>"

    def get(self, timeout_s: float | None = None, **index: Any) -> T:
        parameter, instrument = self.parameter, self.instrument
        if parameter.get_cmd is None:
            raise TypeError(f"{parameter.name} cannot be read")
        command = parameter.get_cmd.format(**instrument.checked_index(index))
        reply = instrument.transport.query(command, timeout_s)
        try:
            return parameter.decode(reply)
        except (ValueError, IndexError) as exc:
            raise ProtocolError(
                instrument.name, f"{command!r}: cannot read {parameter.name}: {exc}", raw=reply
            ) from None

    def check(self, value: T) -> T:
        """Refuse ``value`` as ``set`` would, without any I/O."""
        return self.parameter.check(self.instrument, value)

    def set(self, value: T, **index: Any) -> None:
        parameter, instrument = self.parameter, self.instrument
        if parameter.set_cmd is None:
            raise TypeError(f"{parameter.name} is read-only")
        checked_index = instrument.checked_index(index)  # refuse before anything is sent
        checked = parameter.check(instrument, value)
        parameter.write(instrument, checked, checked_index)


class ScpiInstrument(ClosedOnExit):
    """Base of the SCPI drivers: a VISA transport, declared indices and per-lab limits.

    ``indices`` maps each template field (``slot``, ``channel``, ``lane`` ...)
    to its allowed values; a call with anything else is refused before I/O.
    """

    #: the real instrument family whose programming guide the command set follows
    family: ClassVar[str] = ""

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: VisaTransport | None = None, recorder: Recorder | None = None) -> None:
        self.name = name
        self.device = device
        self.testbed = testbed
        if transport is None:
            if device.visa is None:
                problem = "visa: required by an SCPI instrument driver"
                raise ConfigError(f"device {name!r}", [problem])
            # through connect: the device's circuit breaker guards it like SSH and SNMP
            transport = connect.visa(name, device, recorder=recorder)
        self.transport = transport
        self.indices: dict[str, Collection[Any]] = {}
        self._limits: dict[str, Limits] = {}
        self._apply_limits(device.vars.get("limits", {}))

    # --- limits and indices ---------------------------------------------------------

    def limits_of(self, parameter: Parameter[Any]) -> Limits:
        declared: Limits = getattr(parameter, "limits", Limits())
        return self._limits.get(parameter.name, declared)

    def narrow(self, name: str, *, minimum: float | None = None, maximum: float | None = None,
               max_step: float | None = None, step_delay_s: float | None = None) -> None:
        """Tighten a setting's limits for this instrument (wider values are ignored)."""
        parameter = getattr(type(self), name, None)
        if not isinstance(parameter, FloatSetting | IntSetting):
            raise ConfigError(f"device {self.name!r}", [f"limits.{name}: not a numeric setting"])
        limits = self.limits_of(parameter).narrowed(minimum, maximum, max_step)
        if step_delay_s is not None:
            limits = replace(limits, step_delay_s=max(0.0, step_delay_s))
        self._limits[name] = limits

    def _apply_limits(self, spec: Mapping[str, Mapping[str, float]]) -> None:
        for name, values in spec.items():
            self.narrow(name, minimum=values.get("min"), maximum=values.get("max"),
                        max_step=values.get("max_step"), step_delay_s=values.get("step_delay_s"))

    def checked_index(self, index: Mapping[str, Any]) -> dict[str, Any]:
        for key, value in index.items():
            allowed = self.indices.get(key)
            if allowed is not None and value not in allowed:
                raise SettingRefused(self.name, key, value, _describe_collection(allowed))
        return dict(index)

    # --- common commands -------------------------------------------------------------

    def identify(self) -> str:
        """``*IDN?``: manufacturer, model, serial, firmware."""
        return self.transport.query("*IDN?")

    def reset(self) -> None:
        self.transport.write("*RST")

    def close(self) -> None:
        self.transport.close()


def _describe_collection(allowed: Collection[Any]) -> str:
    if isinstance(allowed, range) and allowed.step == 1 and len(allowed):
        return f"{allowed.start}..{allowed.stop - 1}"
    return f"one of {list(allowed)}"
