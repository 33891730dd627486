"""Helpers for the instrument tests: devices pointing at emulated or simulated instruments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labtest.emulation.scpiserver import ScpiServer
from labtest.testbed.model import Device, VisaSettings

SIM_DIR = Path(__file__).parent / "sim"
#: an answer's bound: generous, as a loaded machine (the test command beside a kernel lab)
#: answered a BERT query after more than 0.5 s; a test of the timeout itself passes its own
TIMEOUT_S = 5.0


class FakeClock:
    """A clock the test moves by hand: emulators read it, nothing sleeps."""

    def __init__(self, start_s: float = 1000.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


def visa_device(server: ScpiServer, driver: str, timeout_s: float = TIMEOUT_S,
                **vars_: Any) -> Device:
    """A testbed device whose VISA resource is a running emulated instrument."""
    settings = VisaSettings(resource=server.resource, timeout_s=timeout_s)
    return Device(role="instrument", driver=driver, visa=settings, vars=vars_)


def sim_device(yaml_name: str, address: str, driver: str, **vars_: Any) -> Device:
    """A testbed device answered by one of the pyvisa-sim definitions shipped in ``sim/``."""
    settings = VisaSettings(
        resource=f"TCPIP0::{address}::5025::SOCKET",
        backend=f"{(SIM_DIR / yaml_name).resolve()}@sim",
        timeout_s=TIMEOUT_S,
    )
    return Device(role="instrument", driver=driver, visa=settings, vars=vars_)


def sent(server: ScpiServer) -> list[str]:
    """The commands a server received, without the transport's error-queue reads."""
    return [c for c in server.received if c != "SYST:ERR?"]
