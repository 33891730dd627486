"""Typed device access: ``lab.device(name, Capability)`` is the capability or a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.capabilities.host import RdmaDevices
from labtest.capabilities.routing import BgpSessions
from labtest.errors import CapabilityAbsent
from labtest.lab import Lab
from labtest.registry import register_driver
from labtest.testbed import load_testbed

TESTBED = """\
name: typed
devices:
  sw1: {role: leaf, driver: typed-bgp-switch, address: 127.0.0.1}
  sw2: {role: leaf, driver: typed-plain-switch, address: 127.0.0.1}
"""


class BgpSwitch:
    def __init__(self, name, device, testbed):
        self.name = name

    def bgp_sessions(self):
        return []


class PlainSwitch:
    def __init__(self, name, device, testbed):
        self.name = name


register_driver("typed-bgp-switch", BgpSwitch)
register_driver("typed-plain-switch", PlainSwitch)


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED)
    return Lab(load_testbed(path))


def test_a_capability_the_driver_offers_is_the_same_open_driver(lab: Lab) -> None:
    bgp = lab.device("sw1", BgpSessions)
    assert bgp.bgp_sessions() == [] and bgp is lab.device("sw1")


def test_a_capability_the_driver_lacks_is_refused_before_anything_opens(lab: Lab) -> None:
    with pytest.raises(CapabilityAbsent, match=r"\[sw2\] driver 'typed-plain-switch' does not "
                       r"offer BgpSessions"):
        lab.device("sw2", BgpSessions)
    with pytest.raises(CapabilityAbsent, match="RdmaDevices"):
        lab.device("sw1", RdmaDevices)
    assert lab._open == {}


def test_an_unknown_device_names_the_known_ones(lab: Lab) -> None:
    with pytest.raises(KeyError, match="no device 'sw3'; known: sw1, sw2"):
        lab.device("sw3", BgpSessions)
