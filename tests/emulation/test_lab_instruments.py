"""Instruments in the emulated lab act on the fabric, seen through the real drivers."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.emulation.lab import EmulatedLab
from labtest.registry import open_driver
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lab():
    testbed = load_testbed(ROOT / "testbeds/emulated/leafspine.yaml")
    lab = EmulatedLab(testbed)
    emulated = lab.start()
    drivers: dict[str, object] = {}

    def driver(name: str):
        if name not in drivers:
            drivers[name] = open_driver(name, emulated)
        return drivers[name]

    yield lab, driver
    for d in drivers.values():
        d.close()
    lab.stop()


def far_rx_dbm(lab: EmulatedLab) -> list[float]:
    # voa1 sits in the fibre leaving leaf1:Ethernet0; spine1:Ethernet0 receives it
    return [ln.rx_power_dbm for ln in lab.fabric.dom("spine1", "Ethernet0").lanes]


def test_voa_step_lowers_far_rx_power_by_the_same_db(lab) -> None:
    lab, driver = lab
    voa = driver("voa1")
    before = far_rx_dbm(lab)
    voa.set_attenuation_db(4.0)
    after = far_rx_dbm(lab)
    assert voa.attenuation_db() == pytest.approx(4.0)
    for b, a in zip(before, after, strict=True):
        # each DOM reading carries ~0.05 dB of noise: a difference of two, 0.3 dB is ~4 sigma
        assert b - a == pytest.approx(4.0, abs=0.3)
    voa.set_attenuation_db(0.0)
    # back up by the same 4 dB; compared step by step, since the modules still warm up
    # after the lab starts and Tx power drifts by a tenth of a dB over the whole test
    for a, r in zip(after, far_rx_dbm(lab), strict=True):
        assert r - a == pytest.approx(4.0, abs=0.3)


def test_optical_switch_disconnect_is_a_cable_pull(lab) -> None:
    lab, driver = lab
    osw = driver("osw1")
    link = lab.fabric.link_of("leaf2", "Ethernet0")
    assert lab.fabric.link_up(link)
    osw.disconnect()
    assert not lab.fabric.link_up(link)
    osw.route("A", 1)
    assert lab.fabric.link_up(link)


def test_power_meter_reads_the_tapped_port(lab) -> None:
    lab, driver = lab
    opm = driver("opm1")
    reading = opm.power_dbm(1)
    assert -10.0 < reading < 8.0  # four DR4 lanes of ~0 dBm each: about +6 dBm in total


def test_pdu_outlet_off_powers_the_switch_down(lab) -> None:
    lab, driver = lab
    pdu = driver("pdu1")
    pdu.set_outlet(4, False)  # outlet 4 feeds leaf2
    assert not lab.fabric.reachable("leaf2")
    assert not lab.fabric.link_up(lab.fabric.link_of("leaf2", "Ethernet8"))
    pdu.set_outlet(4, True)
    assert lab.fabric.reachable("leaf2")
    assert lab.fabric.link_up(lab.fabric.link_of("leaf2", "Ethernet8"))
