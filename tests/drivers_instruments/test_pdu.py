"""The PDU driver over SNMP against the emulated APC PowerNet-MIB agent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from instrument_helpers import FakeClock
from pydantic import SecretStr

from labtest.capabilities.instruments import OutletStatus
from labtest.capabilities.instruments import Pdu as PduCapability
from labtest.drivers.instruments.pdu import OUTLET_COMMAND, Pdu
from labtest.drivers.instruments.scpi import SettingRefused
from labtest.emulation.pdu_mib import PduMib
from labtest.emulation.scpi_instruments import InstrumentHooks
from labtest.emulation.snmpagent import SnmpAgent
from labtest.errors import ProtocolError, TransportTimeout
from labtest.testbed.model import Device, SnmpSettings
from labtest.transports.mibs import Oid

COMMUNITY = "private"  # APC's default read-write community


class SwappableMib:
    """One agent for the module (a pysnmp engine takes ~0.3 s to start), a fresh PDU per test."""

    def __init__(self) -> None:
        self.target: PduMib | None = None

    def get(self, oid: Oid) -> Any | None:
        assert self.target is not None
        return self.target.get(oid)

    def next(self, oid: Oid) -> tuple[Oid, Any] | None:
        assert self.target is not None
        return self.target.next(oid)

    def write(self, oid: Oid, value: Any) -> None:
        assert self.target is not None
        self.target.write(oid, value)


@pytest.fixture(scope="module")
def swappable() -> SwappableMib:
    return SwappableMib()


@pytest.fixture(scope="module")
def agent(swappable: SwappableMib) -> Iterator[SnmpAgent]:
    with SnmpAgent(swappable, community=COMMUNITY) as running:
        yield running


def pdu_device(agent: SnmpAgent, **vars_: object) -> Device:
    settings = SnmpSettings(port=agent.port, community=SecretStr(COMMUNITY), timeout_s=2.0,
                            retries=0)
    return Device(role="pdu", driver="pdu", address="127.0.0.1", snmp=settings, vars=vars_)


@pytest.fixture(scope="module")
def pdu(agent: SnmpAgent) -> Iterator[Pdu]:
    driver = Pdu("pdu1", pdu_device(agent))
    yield driver
    driver.close()


@pytest.fixture
def outlet_events() -> list[tuple[int, bool]]:
    return []


@pytest.fixture
def mib(
    swappable: SwappableMib, clock: FakeClock, outlet_events: list[tuple[int, bool]]
) -> Iterator[PduMib]:
    hooks = InstrumentHooks(on_outlet=lambda n, on: outlet_events.append((n, on)))
    swappable.target = PduMib(outlets=8, load_w={3: 460.0}, voltage_v=230.0,
                              reboot_duration_s=5.0, clock=clock, hooks=hooks)
    yield swappable.target
    swappable.target = None


def test_outlets_report_state_load_and_power(pdu: Pdu, mib: PduMib) -> None:
    assert isinstance(pdu, PduCapability)
    assert pdu.outlet_count() == 8
    outlets = pdu.outlets()
    assert sorted(outlets) == list(range(1, 9))
    assert outlets[3] == OutletStatus(outlet=3, on=True, name="Outlet 3", load_a=2.0, power_w=460.0)
    assert outlets[1].power_w == 120.0 and outlets[1].load_a == 0.5


def test_outlet_off_and_on_change_state_and_draw(
    pdu: Pdu, mib: PduMib, outlet_events: list[tuple[int, bool]]
) -> None:
    pdu.set_outlet(3, False)
    assert pdu.outlets()[3] == OutletStatus(3, False, "Outlet 3", 0.0, 0.0)
    assert pdu.outlet_power_w(3) == 0.0
    pdu.set_outlet(3, True)
    assert pdu.outlet_power_w(3) == 460.0
    assert outlet_events == [(3, False), (3, True)]
    assert mib.writes == [(f"{OUTLET_COMMAND}.3", 2), (f"{OUTLET_COMMAND}.3", 1)]


def test_cycle_turns_the_outlet_off_for_the_reboot_duration(
    pdu: Pdu, mib: PduMib, clock: FakeClock, outlet_events: list[tuple[int, bool]]
) -> None:
    pdu.cycle_outlet(5)
    assert pdu.outlets()[5].on is False
    clock.advance(4.9)
    assert pdu.outlets()[5].on is False
    clock.advance(0.2)
    assert pdu.outlets()[5].on is True
    assert pdu.outlet_power_w(5) == 120.0
    assert outlet_events == [(5, False), (5, True)]


@pytest.mark.parametrize("outlet", [0, 9, -1, True])
def test_an_outlet_the_pdu_lacks_is_refused_before_any_set(
    pdu: Pdu, mib: PduMib, outlet: int
) -> None:
    with pytest.raises(SettingRefused, match=r"1\.\.8"):
        pdu.set_outlet(outlet, False)
    assert mib.writes == []
    assert all(status.on for status in pdu.outlets().values())


def test_agent_refusals_are_typed_protocol_errors(pdu: Pdu, mib: PduMib) -> None:
    with pytest.raises(ProtocolError, match="wrongValue"):
        pdu.transport.set(f"{OUTLET_COMMAND}.1", 9)
    with pytest.raises(ProtocolError, match="notWritable"):
        pdu.transport.set("1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.1", 2)  # status is read-only


def test_silent_pdu_times_out_within_the_bound(agent: SnmpAgent, pdu: Pdu, mib: PduMib) -> None:
    agent.silent = True
    try:
        started = time.monotonic()
        with pytest.raises(TransportTimeout, match="pdu1"):
            pdu.set_outlet(1, False)
        assert time.monotonic() - started < pdu.transport.request_bound_s + 1.0
    finally:
        agent.silent = False
    pdu.set_outlet(1, False)  # the agent is back: the same driver carries on
    assert pdu.outlets()[1].on is False
