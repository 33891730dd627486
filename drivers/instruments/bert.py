"""BERT: Keysight M8040A high-performance BERT, programmed through M8070B (SCPI).

Every command addresses a *location* string, ``'M<module>.DataOut<lane>'``
(pattern generator) or ``'M<module>.DataIn<lane>'`` (error detector), as in
the *Keysight M8070A/B Programming Guide*. From the guide:

- ``:FETCh:BCOunt? 'M1.DataIn1'`` answers
  ``(timestamp,"M1.DataIn1",counted1s,counted0s,erroneous1s,erroneous0s)``
  since the start of the accumulation period (https://manualshive.com/en/
  manual/keysight-technologies/j-bert-m8020a/1961837?page=272 and ?page=273);
- ``:STATus:INSTrument:SLOSs? '<in>'`` is 1 while the detector has lost sync;
- ``:DATA:SEQuence:SET '<loc>',PRBS,'2^31-1'`` selects a PRBS polynomial and
  ``:OUTPut:STATe '<out>',1`` enables an output (M8070A driver practice,
  github.com/mikef5410/gpib ``Keysight_M8070A_32G.pm``).

Modelled, not confirmed in a guide excerpt (check against your M8070B
release): the PAM4 patterns as ``QPRBS,'2^13-1'`` / ``QPRBS,'2^31-1'``, the
query form ``:DATA:SEQuence:SET? '<loc>'``, and the accumulation gate
``:SENSe:GATE:STATe '<in>',1|0`` (named after the J-BERT N4903B gate; opening
the gate clears the counters). Testbed ``vars``: ``module`` (1), ``lanes`` (4).
"""

from __future__ import annotations

import re

from labtest.capabilities.instruments import BERT_PATTERNS, PrbsResult
from labtest.drivers.instruments.scpi import BoolSetting, EnumSetting, Measurement, ScpiInstrument
from labtest.testbed.model import Device, Testbed
from labtest.transports.visa import VisaTransport

#: pattern name -> M8070 sequence arguments (``PRBS`` polynomials as the guide writes them)
PATTERN_TOKENS = {
    "PRBS7": "PRBS,'2^7-1'",
    "PRBS9": "PRBS,'2^9-1'",
    "PRBS13Q": "QPRBS,'2^13-1'",
    "PRBS15": "PRBS,'2^15-1'",
    "PRBS23": "PRBS,'2^23-1'",
    "PRBS31": "PRBS,'2^31-1'",
    "PRBS31Q": "QPRBS,'2^31-1'",
}
assert set(PATTERN_TOKENS) == set(BERT_PATTERNS)

_BCOUNT = re.compile(r'^\(?\s*([^,]+),\s*"([^"]*)",\s*([^,]+),\s*([^,]+),\s*([^,]+),\s*([^,)]+)')


def parse_bit_count(reply: str) -> tuple[int, int]:
    """``(ts,"M1.DataIn1",ones,zeros,err1,err0)`` -> (compared bits, errored bits)."""
    match = _BCOUNT.match(reply.strip())
    if match is None:
        raise ValueError("expected (timestamp,\"location\",ones,zeros,errored ones,errored zeros)")
    ones, zeros, err_ones, err_zeros = (round(float(match[i])) for i in range(3, 7))
    return ones + zeros, err_ones + err_zeros


class Bert(ScpiInstrument):
    family = "Keysight M8040A BERT (M8070B SCPI)"

    generator_pattern = EnumSetting(
        get=":DATA:SEQ:SET? 'M{module}.DataOut{lane}'",
        set=":DATA:SEQ:SET 'M{module}.DataOut{lane}',{value}",
        choices=PATTERN_TOKENS, doc="Pattern the generator of a lane sends.")
    detector_pattern = EnumSetting(
        get=":DATA:SEQ:SET? 'M{module}.DataIn{lane}'",
        set=":DATA:SEQ:SET 'M{module}.DataIn{lane}',{value}",
        choices=PATTERN_TOKENS, doc="Pattern the error detector of a lane expects.")
    output = BoolSetting(
        get=":OUTP:STAT? 'M{module}.DataOut{lane}'",
        set=":OUTP:STAT 'M{module}.DataOut{lane}',{value}",
        doc="Generator output of a lane on/off.")
    gate = BoolSetting(
        get=":SENS:GATE:STAT? 'M{module}.DataIn{lane}'",
        set=":SENS:GATE:STAT 'M{module}.DataIn{lane}',{value}",
        doc="Accumulation gate of a lane's detector; opening it clears the counters.")
    bit_count = Measurement(
        get=":FETC:BCO? 'M{module}.DataIn{lane}'", unit="bits", parse=parse_bit_count,
        doc="Compared and errored bits since the gate opened.")
    sync_loss = Measurement(
        get=":STAT:INST:SLOS? 'M{module}.DataIn{lane}'", unit="", parse=lambda r: int(r) != 0,
        doc="True while the detector has no pattern lock.")

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: VisaTransport | None = None) -> None:
        super().__init__(name, device, testbed, transport=transport)
        self.module = int(device.vars.get("module", 1))
        self.lanes = range(1, int(device.vars.get("lanes", 4)) + 1)
        self.indices = {"module": (self.module,), "lane": self.lanes}

    def _lanes(self, lanes: list[int] | None) -> list[int]:
        chosen = list(self.lanes) if lanes is None else list(lanes)
        for lane in chosen:  # refuse the whole request before the first command
            self.checked_index({"lane": lane})
        return chosen

    def set_pattern(self, pattern: str, lanes: list[int] | None = None) -> None:
        chosen = self._lanes(lanes)
        self.generator_pattern.check(pattern)
        for lane in chosen:
            self.generator_pattern.set(pattern, module=self.module, lane=lane)
            self.detector_pattern.set(pattern, module=self.module, lane=lane)

    def set_output(self, enabled: bool, lanes: list[int] | None = None) -> None:
        for lane in self._lanes(lanes):
            self.output.set(enabled, module=self.module, lane=lane)

    def start(self, lanes: list[int] | None = None) -> None:
        for lane in self._lanes(lanes):
            self.gate.set(False, module=self.module, lane=lane)
            self.gate.set(True, module=self.module, lane=lane)

    def stop(self, lanes: list[int] | None = None) -> None:
        for lane in self._lanes(lanes):
            self.gate.set(False, module=self.module, lane=lane)

    def results(self, lanes: list[int] | None = None) -> list[PrbsResult]:
        out = []
        for lane in self._lanes(lanes):
            bits, errors = self.bit_count.get(module=self.module, lane=lane)
            out.append(PrbsResult(
                lane=lane,
                pattern=self.detector_pattern.get(module=self.module, lane=lane),
                locked=not self.sync_loss.get(module=self.module, lane=lane),
                bits=bits,
                errors=errors,
                ber=errors / bits if bits else None,
            ))
        return out
