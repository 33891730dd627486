"""Optical switch: Keysight N773x / 8159x switch modules (``ROUTe`` subsystem).

The Keysight optical switches (N7731C..N7734C, 8163 mainframe modules 81591B/
81594B/81595B) route with ``:ROUTe[n][:CHANnel[m]] <input>,<output>``, e.g.
``:ROUT1:CHAN1 A,3``, and ``:ROUTe[n][:CHANnel[m]]?`` answers ``A,3``
(driver practice for the N7734A: ``:ROUTe{slot} {route}``). ``n`` is the
module slot, ``m`` the switch inside it; inputs are letters, outputs numbers.

A 1xN switch has no "open" position, so a *disconnect* (a cable pull) routes
the input to a park output that goes nowhere: ``vars.park_output`` (0 by
default, which the emulated switch treats as dark; on a real switch set it to
a spare, unconnected output). Testbed ``vars``: ``slot`` (1), ``channels``
(1), ``inputs`` (``["A"]``), ``outputs`` (4), ``park_output`` (0).
"""

from __future__ import annotations

from labtest.drivers.instruments.scpi import IntSetting, ScpiInstrument, SettingRefused
from labtest.testbed.model import Device, Testbed
from labtest.transports.visa import VisaTransport


def _output_of(reply: str) -> int:
    """``A,3`` -> 3."""
    _, _, output = reply.partition(",")
    return int(output)


class OpticalSwitch(ScpiInstrument):
    family = "Keysight N773x / 8159x optical switch"

    output = IntSetting(
        get=":ROUT{slot}:CHAN{channel}?", set=":ROUT{slot}:CHAN{channel} {input},{value}",
        unit="", minimum=1, maximum=64, parse=_output_of,
        doc="The output port the input is routed to.")
    park = IntSetting(
        get=None, set=":ROUT{slot}:CHAN{channel} {input},{value}",
        unit="", minimum=0, maximum=64,
        doc="The dark output a disconnected input is parked on.")

    def __init__(self, name: str, device: Device, testbed: Testbed | None = None, *,
                 transport: VisaTransport | None = None) -> None:
        super().__init__(name, device, testbed, transport=transport)
        vars_ = device.vars
        self.slot = int(vars_.get("slot", 1))
        self.inputs = tuple(str(i) for i in vars_.get("inputs", ["A"]))
        self.output_count = int(vars_.get("outputs", 4))
        self.park_output = int(vars_.get("park_output", 0))
        self.indices = {
            "slot": (self.slot,),
            "channel": range(1, int(vars_.get("channels", 1)) + 1),
            "input": self.inputs,
        }
        self.narrow("output", maximum=self.output_count)

    def route(self, input_port: str, output_port: int, channel: int = 1) -> None:
        if output_port == self.park_output:
            raise SettingRefused(self.name, "output", output_port,
                                 f"1..{self.output_count}; use disconnect() to park")
        self.output.set(output_port, slot=self.slot, channel=channel, input=input_port)

    def route_of(self, channel: int = 1) -> int | None:
        output = self.output.get(slot=self.slot, channel=channel)
        return None if output == self.park_output else output

    def disconnect(self, channel: int = 1) -> None:
        self.park.set(self.park_output, slot=self.slot, channel=channel, input=self.inputs[0])
