"""A device under test whose management is dead fails the run (issue 39: a placed fault is
never INCOMPLETE), when the lab reached the other devices; a lab that reached nothing, or
a refusal that is the lab's configuration, stays a hole."""

from __future__ import annotations

import random
from typing import Any

import pytest

from labtest.measure.coverage import run_verdict
from labtest.measure.management import unmanaged
from tests.core.test_coverage import FAB1, healthy_doc, measurement, test_doc

#: what each transport says when its device is silent (DeviceDown by its first failure)
SILENT = [
    "labtest.errors.ConnectionRefused: [{d}] connection refused by 127.0.0.1:2201",
    "labtest.errors.TransportTimeout: [{d}] no answer in 30 s",
    "labtest.errors.ProtocolError: [{d}] SSH handshake failed: Error reading SSH banner",
    "labtest.errors.DeviceDown: [{d}] down since ProtocolError: SSH handshake failed",
    "labtest.errors.DeviceDown: [{d}] down since TransportTimeout: no answer in 30 s",
]
#: refusals that are the lab's configuration, not the device's silence
LAB_SIDE = [
    "labtest.errors.AuthFailed: [{d}] authentication failed for admin",
    "labtest.errors.HostKeyMismatch: [{d}] host key differs from known_hosts",
    "labtest.errors.DeviceDown: [{d}] down since AuthFailed: authentication failed",
]
DEVICES = ("spine1", "leaf1", "leaf3")


def _doc_with_silent(device: str, message: str, others_answer: bool = True) -> dict[str, Any]:
    """The healthy run without the links ``device`` ends (never read), its own check
    broken by ``message``, each other device's check passed (or broken the same way)."""
    doc = healthy_doc()
    doc["tests"] = [t for t in doc["tests"] if f"{device}:" not in t["name"] and others_answer]
    doc["tests"].append(test_doc(f"test_fec[{device}]", "broken", device=device,
                                 message=message.format(d=device)))
    for d in DEVICES:
        if d != device and others_answer:
            doc["tests"].append(test_doc(f"test_fec[{d}]", "passed", device=d, measurements=[
                measurement("link.fec_ber", device=d)]))
        elif d != device:
            doc["tests"].append(test_doc(f"test_fec[{d}]", "broken", device=d,
                                         message=message.format(d=d)))
    return doc


@pytest.mark.parametrize("message", SILENT)
def test_a_silent_device_fails_the_run_and_is_named(message: str) -> None:
    device = random.choice(DEVICES)
    verdict = run_verdict(_doc_with_silent(device, message))
    assert verdict.verdict == "FAIL", (device, message)
    assert verdict.reasons[0].startswith(f"{device}'s management did not answer"), verdict.reasons
    assert verdict.coverage.cells  # the holes it leaves stay listed ("also ...")
    assert device in verdict.headline()


@pytest.mark.parametrize("message", SILENT[:2])
def test_a_lab_that_reached_nothing_is_incomplete_not_a_device_failure(message: str) -> None:
    device = random.choice(DEVICES)
    verdict = run_verdict(_doc_with_silent(device, message, others_answer=False))
    assert verdict.verdict == "INCOMPLETE", verdict.reasons


@pytest.mark.parametrize("message", LAB_SIDE)
def test_credentials_and_host_keys_are_the_labs_not_the_devices(message: str) -> None:
    verdict = run_verdict(_doc_with_silent(random.choice(DEVICES), message))
    assert verdict.verdict == "INCOMPLETE", verdict.reasons


def test_a_device_that_answered_another_check_is_not_called_dead() -> None:
    """Broken once, read elsewhere in the run (a measurement labelled with it): its
    management works; the broken test is a hole, not a dead device."""
    doc = healthy_doc()  # FAB1's leaf1 end was read
    doc["tests"].append(test_doc("test_fec[leaf1]", "broken", device="leaf1",
                                 message=SILENT[1].format(d="leaf1")))
    assert unmanaged(doc["tests"], DEVICES) == {}
    assert run_verdict(doc).verdict == "INCOMPLETE"


def test_only_the_silent_devices_are_named() -> None:
    doc = _doc_with_silent("leaf3", SILENT[0])
    assert list(unmanaged(doc["tests"], DEVICES)) == ["leaf3"]
    assert FAB1 not in run_verdict(doc).reasons[0]


@pytest.mark.parametrize("equipment", ["tg1", "opm1"])
def test_the_labs_own_equipment_gone_silent_is_a_hole_not_a_device_failure(
        equipment: str) -> None:
    """A traffic generator or a power meter that stops answering is the lab's, not a
    device under test: INCOMPLETE, whatever else answered."""
    doc = healthy_doc()
    doc["tests"].append(test_doc(f"test_loss[{equipment}]", "broken", device=equipment,
                                 message=random.choice(SILENT).format(d=equipment)))
    verdict = run_verdict(doc)
    assert verdict.verdict == "INCOMPLETE", verdict.reasons
