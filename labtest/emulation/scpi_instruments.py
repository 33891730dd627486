"""Emulated lab instruments: SCPI handlers for ``ScpiServer`` (the PDU's MIB: ``pdu_mib``).

Each emulator answers the command set its driver documents (Keysight N774xC
power meter, N77xx attenuator, N773x switch, M8040A BERT, a generic SCPI
chamber), keeps state, and behaves over time: BERT bits and errors accumulate
from a BER, the chamber air follows its setpoint at the ramp rate. Time comes
from ``clock`` (``time.monotonic`` by default; pass the lab's virtual clock or
a fake one in tests), and is evaluated when asked, so nothing runs in the
background.

Bad commands behave as on real instruments: no reply, a SCPI-99 error in the
queue (-113 unknown header, -114 bad suffix, -222 out of range, -224 illegal
value, -109 missing parameter).

The emulated-lab integrator wires instruments into the fabric model through a
small ``InstrumentHooks`` object (this module imports nothing from the model):
an attenuation change, a switch route, an outlet change call back; a BERT lane
and a power meter port can take their BER / power from it.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labtest.emulation.scpiserver import (
    DATA_TYPE_ERROR,
    HEADER_SUFFIX_OUT_OF_RANGE,
    ILLEGAL_PARAMETER_VALUE,
    UNDEFINED_HEADER,
    ScpiCommandError,
    ScpiServer,
    boolean,
    in_range,
    match_header,
    need,
    nr3,
    number,
    split_args,
    suffix,
    unquote,
)

Clock = Callable[[], float]


@dataclass
class InstrumentHooks:
    """Callbacks into the emulated lab; every one is optional.

    Channels, lanes and outlets are 1-based. ``ber_source`` returns None for
    "no signal" (the detector loses sync); ``power_source`` returns dBm
    (``-inf`` for dark).
    """

    on_attenuation_db: Callable[[int, float], None] | None = None
    on_voa_output: Callable[[int, bool], None] | None = None
    on_route: Callable[[int, str, int | None], None] | None = None
    on_outlet: Callable[[int, bool], None] | None = None
    ber_source: Callable[[int], float | None] | None = None
    power_source: Callable[[int], float] | None = None


Handler = Callable[[list[int | None], list[str]], str | None]


class ScpiEmulator:
    """Base of the SCPI emulators: a command table, a lock, ``idn`` and ``server()``.

    Subclasses fill ``commands`` with (pattern, handler) pairs; a handler gets
    the header's numeric suffixes and the parameters.
    """

    idn = "LabTest,Emulated,EMU0001,1.0"

    def __init__(self, clock: Clock = time.monotonic, hooks: InstrumentHooks | None = None) -> None:
        self.clock = clock
        self.hooks = hooks or InstrumentHooks()
        self.lock = threading.RLock()
        self.commands: list[tuple[str, Handler]] = []

    def handle(self, command: str) -> str | None:
        header, _, argument = command.strip().partition(" ")
        args = split_args(argument)
        for pattern, handler in self.commands:
            found = match_header(pattern, header)
            if found is not None:
                with self.lock:
                    return handler(found, args)
        raise ScpiCommandError(*UNDEFINED_HEADER)

    def server(self, **server_options: Any) -> ScpiServer:
        """An ``ScpiServer`` for this instrument on 127.0.0.1, not yet started:
        ``with voa.server() as srv: ...`` starts and stops it."""
        return ScpiServer(self, idn=self.idn, **server_options)


# --- optical power meter (Keysight N774xC) --------------------------------------------


@dataclass
class _MeterPort:
    wavelength_m: float = 1550e-9
    averaging_time_s: float = 1e-3
    unit_watts: bool = False
    input_power_dbm: float = -3.0


class EmulatedPowerMeter(ScpiEmulator):
    """N774xC-style meter: ``:READ[n]:POW?``, ``:SENS[n]:POW:WAV|ATIM|UNIT``.

    A port reads ``hooks.power_source(port)`` when wired, else the power set
    with ``set_input_power_dbm``; below the noise floor (or dark) it reads the
    floor, as a real meter does.
    """

    idn = "Keysight Technologies,N7744C,EMU00001,1.0"
    NOISE_FLOOR_DBM = -90.0

    def __init__(self, channels: int = 4, *, clock: Clock = time.monotonic,
                 hooks: InstrumentHooks | None = None) -> None:
        super().__init__(clock, hooks)
        self.channel_count = channels
        self.ports = {n: _MeterPort() for n in range(1, channels + 1)}
        self.commands = [
            ("READ:POWer?", self._read_power),
            ("FETCh:POWer?", self._read_power),
            ("SENSe:POWer:WAVelength", self._set_wavelength),
            ("SENSe:POWer:WAVelength?", lambda s, a: nr3(self._port(s).wavelength_m)),
            ("SENSe:POWer:ATIMe", self._set_atime),
            ("SENSe:POWer:ATIMe?", lambda s, a: nr3(self._port(s).averaging_time_s)),
            ("SENSe:POWer:UNIT", self._set_unit),
            ("SENSe:POWer:UNIT?", lambda s, a: "+1" if self._port(s).unit_watts else "+0"),
        ]

    def set_input_power_dbm(self, channel: int, power_dbm: float) -> None:
        with self.lock:
            self.ports[channel].input_power_dbm = power_dbm

    def reset(self) -> None:
        with self.lock:
            for port in self.ports.values():
                port.wavelength_m, port.averaging_time_s, port.unit_watts = 1550e-9, 1e-3, False

    def _port(self, suffixes: list[int | None]) -> _MeterPort:
        return self.ports[suffix(suffixes[0], self.ports)]

    def _read_power(self, suffixes: list[int | None], args: list[str]) -> str:
        channel = suffix(suffixes[0], self.ports)
        port = self.ports[channel]
        source = self.hooks.power_source
        power_dbm = source(channel) if source else port.input_power_dbm
        power_dbm = max(power_dbm, self.NOISE_FLOOR_DBM)  # -inf (dark) reads the floor
        return nr3(10 ** (power_dbm / 10) / 1000 if port.unit_watts else power_dbm)

    def _set_wavelength(self, suffixes: list[int | None], args: list[str]) -> None:
        self._port(suffixes).wavelength_m = in_range(number(need(args, 1)[0]), 1250e-9, 1650e-9)

    def _set_atime(self, suffixes: list[int | None], args: list[str]) -> None:
        self._port(suffixes).averaging_time_s = in_range(number(need(args, 1)[0]), 1e-4, 10.0)

    def _set_unit(self, suffixes: list[int | None], args: list[str]) -> None:
        value = need(args, 1)[0].upper()
        if value not in ("0", "1", "DBM", "W", "WATT"):
            raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)
        self._port(suffixes).unit_watts = value in ("1", "W", "WATT")


# --- variable optical attenuator (Keysight N77xx) ---------------------------------------


@dataclass
class _VoaChannel:
    attenuation_db: float = 0.0
    wavelength_m: float = 1550e-9
    output: bool = True


class EmulatedAttenuator(ScpiEmulator):
    """N77xx-style VOA: ``:INP[n]:CHAN[m]:ATT|WAV``, ``:OUTP[n]:CHAN[m]:STAT``.

    Every accepted attenuation calls ``hooks.on_attenuation_db(n, dB)``, so the
    fabric model sees each step the driver sends; ``history_db`` keeps them.
    """

    idn = "Keysight Technologies,N7764A,EMU00002,1.0"

    def __init__(self, channels: int = 1, *, max_attenuation_db: float = 60.0,
                 clock: Clock = time.monotonic, hooks: InstrumentHooks | None = None) -> None:
        super().__init__(clock, hooks)
        self.max_attenuation_db = max_attenuation_db
        self.voas = {n: _VoaChannel() for n in range(1, channels + 1)}
        self.history_db: dict[int, list[float]] = {n: [] for n in self.voas}
        for prefix in ("INPut:CHANnel:", "INPut:"):  # [:CHANnel[m]] is optional
            self.commands += [
                (prefix + "ATTenuation", self._set_attenuation),
                (prefix + "ATTenuation?", lambda s, a: nr3(self._voa(s).attenuation_db)),
                (prefix + "WAVelength", self._set_wavelength),
                (prefix + "WAVelength?", lambda s, a: nr3(self._voa(s).wavelength_m)),
            ]
        for prefix in ("OUTPut:CHANnel:STATe", "OUTPut:STATe", "OUTPut"):
            self.commands += [(prefix, self._set_output),
                              (prefix + "?", lambda s, a: "1" if self._voa(s).output else "0")]

    def reset(self) -> None:
        with self.lock:
            for n in self.voas:
                self.voas[n] = _VoaChannel()

    def attenuation_db(self, channel: int = 1) -> float:
        with self.lock:
            return self.voas[channel].attenuation_db

    def _voa(self, suffixes: list[int | None]) -> _VoaChannel:
        if len(suffixes) > 2 and suffixes[1] not in (None, 1):
            raise ScpiCommandError(*HEADER_SUFFIX_OUT_OF_RANGE)
        return self.voas[suffix(suffixes[0], self.voas)]

    def _set_attenuation(self, suffixes: list[int | None], args: list[str]) -> None:
        voa = self._voa(suffixes)
        text = need(args, 1)[0].upper()
        limits = {"MIN": 0.0, "DEF": 0.0, "MAX": self.max_attenuation_db}
        value = limits[text] if text in limits else number(text)
        voa.attenuation_db = in_range(value, 0.0, self.max_attenuation_db)
        channel = suffix(suffixes[0], self.voas)
        self.history_db[channel].append(voa.attenuation_db)
        if self.hooks.on_attenuation_db:
            self.hooks.on_attenuation_db(channel, voa.attenuation_db)

    def _set_wavelength(self, suffixes: list[int | None], args: list[str]) -> None:
        self._voa(suffixes).wavelength_m = in_range(number(need(args, 1)[0]), 1200e-9, 1700e-9)

    def _set_output(self, suffixes: list[int | None], args: list[str]) -> None:
        voa = self._voa(suffixes)
        voa.output = boolean(need(args, 1)[0])
        if self.hooks.on_voa_output:
            self.hooks.on_voa_output(suffix(suffixes[0], self.voas), voa.output)


# --- optical switch (Keysight N773x) -------------------------------------------------------


class EmulatedOpticalSwitch(ScpiEmulator):
    """N773x-style switch: ``:ROUT[n]:CHAN[m] A,<out>`` and ``?`` -> ``A,<out>``.

    Output 0 is the dark park position (a cable pull); ``hooks.on_route`` gets
    ``(channel, input, output)`` with None for parked.
    """

    idn = "Keysight Technologies,N7734A,EMU00003,1.0"

    def __init__(self, channels: int = 1, *, inputs: Iterable[str] = ("A",), outputs: int = 4,
                 slot: int = 1, clock: Clock = time.monotonic,
                 hooks: InstrumentHooks | None = None) -> None:
        super().__init__(clock, hooks)
        self.slot = slot
        self.inputs = tuple(i.upper() for i in inputs)
        self.output_count = outputs
        self.routes = dict.fromkeys(range(1, channels + 1), 1)
        self.commands = [
            ("ROUTe:CHANnel", self._set_route), ("ROUTe:CHANnel?", self._get_route),
            ("ROUTe", self._set_route), ("ROUTe?", self._get_route),
        ]

    def reset(self) -> None:
        with self.lock:
            for channel in self.routes:
                self._apply(channel, self.inputs[0], 1)

    def route_of(self, channel: int = 1) -> int:
        with self.lock:
            return self.routes[channel]

    def _channel(self, suffixes: list[int | None]) -> int:
        suffix(suffixes[0], (self.slot,))
        return suffix(suffixes[1] if len(suffixes) > 1 else None, self.routes)

    def _set_route(self, suffixes: list[int | None], args: list[str]) -> None:
        channel = self._channel(suffixes)
        input_port, output_text = need(args, 2)[:2]
        if input_port.upper() not in self.inputs:
            raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)
        output = number(output_text)
        if output != int(output):
            raise ScpiCommandError(*DATA_TYPE_ERROR)
        self._apply(channel, input_port.upper(), int(in_range(output, 0, self.output_count)))

    def _apply(self, channel: int, input_port: str, output: int) -> None:
        self.routes[channel] = output
        if self.hooks.on_route:
            self.hooks.on_route(channel, input_port, output or None)

    def _get_route(self, suffixes: list[int | None], args: list[str]) -> str:
        return f"{self.inputs[0]},{self.routes[self._channel(suffixes)]}"


# --- BERT (Keysight M8040A, M8070B SCPI) ----------------------------------------------------

#: M8070 sequence arguments -> pattern name (see drivers/instruments/bert.py)
BERT_SEQUENCES = {
    "PRBS,2^7-1": "PRBS7", "PRBS,2^9-1": "PRBS9", "QPRBS,2^13-1": "PRBS13Q",
    "PRBS,2^15-1": "PRBS15", "PRBS,2^23-1": "PRBS23", "PRBS,2^31-1": "PRBS31",
    "QPRBS,2^31-1": "PRBS31Q",
}
_SEQUENCE_OF = {name: seq for seq, name in BERT_SEQUENCES.items()}
_LOCATION = re.compile(r"^M(\d+)\.Data(In|Out)(\d+)$", re.IGNORECASE)


@dataclass
class _Lane:
    generator: str = "PRBS31"
    detector: str = "PRBS31"
    output: bool = True
    gate: bool = False
    bits: float = 0.0
    errors: int = 0
    ber: float = 0.0
    last_s: float = 0.0


class EmulatedBert(ScpiEmulator):
    """M8040A-style BERT lanes whose bits and errors accumulate while the gate is open.

    Bits grow at ``lane_rate_gbps``; errors are Poisson with mean bits x BER,
    where BER is ``hooks.ber_source(lane)`` when wired, else ``set_ber``. The
    detector is in sync only with the output on, matching patterns, a signal
    and a BER below ``SYNC_LOSS_BER``; out of sync it counts nothing.
    """

    idn = "Keysight Technologies,M8040A,EMU00004,1.0"
    SYNC_LOSS_BER = 1e-3

    def __init__(self, lanes: int = 4, *, module: int = 1, lane_rate_gbps: float = 106.25,
                 seed: int = 0, clock: Clock = time.monotonic,
                 hooks: InstrumentHooks | None = None) -> None:
        super().__init__(clock, hooks)
        self.module = module
        self.lane_rate_gbps = lane_rate_gbps
        self.rng = np.random.default_rng(seed)
        now = clock()
        self.lanes = {n: _Lane(last_s=now) for n in range(1, lanes + 1)}
        self.commands = [
            ("DATA:SEQuence:SET", self._set_sequence), ("DATA:SEQuence:SET?", self._get_sequence),
            ("OUTPut:STATe", self._set_output), ("OUTPut:STATe?", self._get_output),
            ("SENSe:GATE:STATe", self._set_gate), ("SENSe:GATE:STATe?", self._get_gate),
            ("FETCh:BCOunt?", self._bit_count),
            ("STATus:INSTrument:SLOSs?", self._sync_loss),
        ]

    # --- lab-side API -------------------------------------------------------------

    def set_ber(self, lane: int, ber: float) -> None:
        with self.lock:
            self._advance(lane)
            self.lanes[lane].ber = ber

    def counts(self, lane: int) -> tuple[int, int]:
        with self.lock:
            self._advance(lane)
            return round(self.lanes[lane].bits), self.lanes[lane].errors

    def reset(self) -> None:
        with self.lock:
            now = self.clock()
            for n in self.lanes:
                self.lanes[n] = _Lane(last_s=now, ber=self.lanes[n].ber)

    # --- the physics -----------------------------------------------------------------

    def _ber(self, lane: int) -> float | None:
        source = self.hooks.ber_source
        return source(lane) if source else self.lanes[lane].ber

    def _locked(self, lane: int) -> bool:
        state, ber = self.lanes[lane], self._ber(lane)
        return (state.output and state.generator == state.detector
                and ber is not None and ber < self.SYNC_LOSS_BER)

    def _advance(self, lane: int) -> None:
        state, now = self.lanes[lane], self.clock()
        elapsed_s, state.last_s = max(0.0, now - state.last_s), now
        if not (state.gate and elapsed_s and self._locked(lane)):
            return
        bits = elapsed_s * self.lane_rate_gbps * 1e9
        ber = self._ber(lane) or 0.0
        state.bits += bits
        state.errors += int(self.rng.poisson(bits * ber)) if ber > 0 else 0

    # --- SCPI --------------------------------------------------------------------------

    def _location(self, text: str, direction: str) -> int:
        found = _LOCATION.match(unquote(text))
        if (found is None or int(found[1]) != self.module or found[2].upper() != direction.upper()
                or int(found[3]) not in self.lanes):
            raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)
        lane = int(found[3])
        self._advance(lane)
        return lane

    def _either(self, text: str) -> tuple[int, str]:
        found = _LOCATION.match(unquote(text))
        direction = found[2] if found else ""
        return self._location(text, direction or "Out"), direction.upper()

    def _set_sequence(self, suffixes: list[int | None], args: list[str]) -> None:
        lane, direction = self._either(need(args, 3)[0])
        name = BERT_SEQUENCES.get(",".join(unquote(a).upper() for a in args[1:3]))
        if name is None:
            raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)
        if direction == "OUT":
            self.lanes[lane].generator = name
        else:
            self.lanes[lane].detector = name

    def _get_sequence(self, suffixes: list[int | None], args: list[str]) -> str:
        lane, direction = self._either(need(args, 1)[0])
        state = self.lanes[lane]
        pattern = state.generator if direction == "OUT" else state.detector
        kind, poly = _SEQUENCE_OF[pattern].split(",")
        return f"{kind},'{poly}'"

    def _set_output(self, suffixes: list[int | None], args: list[str]) -> None:
        lane = self._location(need(args, 2)[0], "Out")
        self.lanes[lane].output = boolean(args[1])

    def _get_output(self, suffixes: list[int | None], args: list[str]) -> str:
        return "1" if self.lanes[self._location(need(args, 1)[0], "Out")].output else "0"

    def _set_gate(self, suffixes: list[int | None], args: list[str]) -> None:
        lane = self._location(need(args, 2)[0], "In")
        state, opening = self.lanes[lane], boolean(args[1])
        if opening and not state.gate:
            state.bits, state.errors = 0.0, 0
        state.gate = opening

    def _get_gate(self, suffixes: list[int | None], args: list[str]) -> str:
        return "1" if self.lanes[self._location(need(args, 1)[0], "In")].gate else "0"

    def _bit_count(self, suffixes: list[int | None], args: list[str]) -> str:
        location = unquote(need(args, 1)[0])
        state = self.lanes[self._location(location, "In")]
        bits = round(state.bits)
        ones, err_ones = bits // 2, state.errors // 2
        return (f'({time.time():.3f},"{location}",{ones:.12e},{bits - ones:.12e},'
                f"{err_ones:.12e},{state.errors - err_ones:.12e})")

    def _sync_loss(self, suffixes: list[int | None], args: list[str]) -> str:
        lane = self._location(need(args, 1)[0], "In")
        return "0" if self._locked(lane) else "1"


# --- thermal chamber (generic SCPI, ESPEC operating model) ------------------------------------


class EmulatedChamber(ScpiEmulator):
    """Chamber air that follows the setpoint at the ramp rate while in CONSTANT mode.

    In STANDBY the air drifts back to ``ambient_c`` at ``drift_c_per_min``.
    """

    idn = "LabTest,SCPI-Chamber,EMU00005,1.0"
    SETPOINT_C = (-70.0, 180.0)
    RAMP_C_PER_MIN = (0.1, 30.0)

    def __init__(self, *, ambient_c: float = 25.0, drift_c_per_min: float = 0.5,
                 clock: Clock = time.monotonic, hooks: InstrumentHooks | None = None) -> None:
        super().__init__(clock, hooks)
        self.ambient_c = ambient_c
        self.drift_c_per_min = drift_c_per_min
        self.air_c = ambient_c
        self.setpoint_c = ambient_c
        self.ramp_c_per_min = 1.0
        self.running = False
        self._last_s = clock()
        self.commands = [
            ("SOURce:TEMPerature", self._set_setpoint),
            ("SOURce:TEMPerature?", lambda s, a: f"{self.setpoint_c:.2f}"),
            ("SOURce:TEMPerature:RAMP", self._set_ramp),
            ("SOURce:TEMPerature:RAMP?", lambda s, a: f"{self.ramp_c_per_min:.3f}"),
            ("MEASure:TEMPerature?", lambda s, a: f"{self.temperature_c():.2f}"),
            ("CONTrol:MODE", self._set_mode),
            ("CONTrol:MODE?", lambda s, a: "CONSTANT" if self.running else "STANDBY"),
        ]

    def temperature_c(self) -> float:
        with self.lock:
            self._advance()
            return self.air_c

    def reset(self) -> None:
        with self.lock:
            self._advance()
            self.setpoint_c, self.ramp_c_per_min, self.running = self.ambient_c, 1.0, False

    def _advance(self) -> None:
        now = self.clock()
        elapsed_min, self._last_s = max(0.0, now - self._last_s) / 60.0, now
        target, rate = ((self.setpoint_c, self.ramp_c_per_min) if self.running
                        else (self.ambient_c, self.drift_c_per_min))
        gap = target - self.air_c
        self.air_c += math.copysign(min(abs(gap), rate * elapsed_min), gap)

    def _set_setpoint(self, suffixes: list[int | None], args: list[str]) -> None:
        self._advance()
        self.setpoint_c = in_range(number(need(args, 1)[0]), *self.SETPOINT_C)

    def _set_ramp(self, suffixes: list[int | None], args: list[str]) -> None:
        self._advance()
        self.ramp_c_per_min = in_range(number(need(args, 1)[0]), *self.RAMP_C_PER_MIN)

    def _set_mode(self, suffixes: list[int | None], args: list[str]) -> None:
        mode = need(args, 1)[0].upper()
        if mode not in ("CONSTANT", "CONST", "STANDBY", "STAND"):
            raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)
        self._advance()
        self.running = mode.startswith("CONST")


# --- record and replay ---------------------------------------------------------------------------


@dataclass
class ScpiRecording:
    """A recorded SCPI session: pass ``recording.record`` as a ``VisaTransport`` recorder.

    Saved as JSON lines ``{"command": ..., "reply": ...}`` (reply null for a
    setting); ``ReplayInstrument`` serves it back so a session captured on a
    real lab becomes a CI fixture.
    """

    exchanges: list[tuple[str, str | None]] = field(default_factory=list)

    def record(self, command: str, reply: str | None) -> None:
        self.exchanges.append((command, reply))

    def save(self, path: Path) -> None:
        lines = (json.dumps({"command": c, "reply": r}) for c, r in self.exchanges)
        path.write_text("".join(f"{line}\n" for line in lines))

    @classmethod
    def load(cls, path: Path) -> ScpiRecording:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return cls([(row["command"], row["reply"]) for row in rows])


class ReplayInstrument:
    """Answers each query with the replies recorded for it, in order (the last one repeats).

    Settings that were recorded are accepted, anything else is -113; the error
    queue and ``*IDN?`` belong to the ``ScpiServer``, so they are not replayed.
    """

    def __init__(self, recording: ScpiRecording) -> None:
        self._replies: dict[str, list[str]] = {}
        self._settings: set[str] = set()
        for command, reply in recording.exchanges:
            if command.upper().startswith(("SYST:ERR", "*IDN")):
                continue
            if reply is None:
                self._settings.add(command)
            else:
                self._replies.setdefault(command, []).append(reply)
        self._lock = threading.Lock()

    def handle(self, command: str) -> str | None:
        with self._lock:
            if command in self._settings:
                return None
            replies = self._replies.get(command)
            if not replies:
                raise ScpiCommandError(*UNDEFINED_HEADER)
            return replies.pop(0) if len(replies) > 1 else replies[0]


__all__ = [
    "BERT_SEQUENCES",
    "EmulatedAttenuator",
    "EmulatedBert",
    "EmulatedChamber",
    "EmulatedOpticalSwitch",
    "EmulatedPowerMeter",
    "InstrumentHooks",
    "ReplayInstrument",
    "ScpiEmulator",
    "ScpiRecording",
    "match_header",
    "split_args",
]
