"""fixtures/snapshot.py: destructive tests restore what they touched — after a pass, a
failure, Ctrl-C or SIGTERM — and a restore that does not take is reported broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtest.fixtures.snapshot import config_difference

CONFTEST = '''
import json
import secrets
from pathlib import Path

from labtest.registry import register_driver


class FakeSnap:
    """A device whose running config is a JSON file; restore can be made not to take."""

    def __init__(self, name, device, testbed):
        self.path = Path(device.vars["state"])
        self.broken_restore = bool(device.vars.get("broken_restore"))

    def _load(self):
        return json.loads(self.path.read_text())

    def _save(self, doc):
        self.path.write_text(json.dumps(doc))

    def set(self, key, value):
        doc = self._load()
        doc["running"][key] = value
        self._save(doc)

    def running_config(self):
        return json.dumps(self._load()["running"], sort_keys=True)

    def snapshot(self):
        doc = self._load()
        token = "labtest-20250101T000000Z-" + secrets.token_hex(3)
        doc["snapshots"][token] = dict(doc["running"])
        self._save(doc)
        return token

    def restore(self, token):
        doc = self._load()
        if not self.broken_restore:
            doc["running"] = dict(doc["snapshots"][token])
        doc["restores"] = doc.get("restores", 0) + 1
        self._save(doc)

    def close(self):
        pass


register_driver("fakesnap", FakeSnap)
'''

TESTS = '''
import os
import signal
import time

import pytest


@pytest.mark.destructive
def test_changes_and_passes(config_guard, device):
    config_guard.touch("d1")
    device("d1").set("mtu", "1500")


@pytest.mark.destructive
def test_changes_and_fails(config_guard, device):
    config_guard.touch("d1", "d2")
    device("d1").set("admin", "down")
    device("d2").set("pfc", "off")
    assert False, "the product failed"


@pytest.mark.destructive
def test_restore_does_not_take(config_guard, device):
    config_guard.touch("d3")
    device("d3").set("prbs", "on")


def test_not_marked_destructive(config_guard):
    pass


@pytest.mark.destructive
def test_interrupted_by_ctrl_c(config_guard, device):
    config_guard.touch("d1")
    device("d1").set("admin", "down")
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background by a shell without job control: SIGINT arrives ignored,
        # and Python then leaves it so; a terminal's Ctrl-C reaches a foreground pytest
        signal.signal(signal.SIGINT, signal.default_int_handler)
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(1000):  # the signal is delivered between two of these sleeps
        time.sleep(0.01)
    raise AssertionError("the signal never arrived")


@pytest.mark.destructive
def test_interrupted_by_sigterm(config_guard, device):
    config_guard.touch("d2")
    device("d2").set("admin", "down")
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):  # the signal is delivered between two of these sleeps
        time.sleep(0.01)
    raise AssertionError("the signal never arrived")
'''


@pytest.fixture
def lab_dir(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    devices = {}
    for name in ("d1", "d2", "d3"):
        state = root / f"{name}.json"
        state.write_text(json.dumps({"running": {"admin": "up"}, "snapshots": {}}))
        devices[name] = {"role": "leaf", "driver": "fakesnap",
                         "vars": {"state": str(state), "broken_restore": name == "d3"}}
    (root / "testbed.yaml").write_text(json.dumps({"name": "snap", "devices": devices}))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=TESTS)
    return root


def _running(root: Path, name: str) -> dict[str, str]:
    return json.loads((root / f"{name}.json").read_text())["running"]


def _run(pytester: pytest.Pytester, root: Path, k: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--testbed", str(root / "testbed.yaml"), "--destructive", "-p", "no:labtest_reports",
        "-k", k, timeout=120,
    )


def test_restored_after_pass_and_failure_and_broken_when_restore_does_not_take(
    pytester: pytest.Pytester, lab_dir: Path
) -> None:
    result = _run(pytester, lab_dir, "passes or fails or take or not_marked")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("failed") == 1, result.stdout.str()
    assert _running(lab_dir, "d1") == {"admin": "up"}
    assert _running(lab_dir, "d2") == {"admin": "up"}
    out = result.stdout.str()
    # d3 came back different: the teardown is broken infrastructure, naming the device
    assert "ERROR at teardown of test_restore_does_not_take" in out
    assert "SnapshotRestoreError" in out and "[d3] state not restored" in out and "prbs" in out
    assert "uses config_guard but is not marked destructive" in out


@pytest.mark.parametrize("which", ["ctrl_c", "sigterm"])
def test_restored_when_interrupted(pytester: pytest.Pytester, lab_dir: Path, which: str) -> None:
    result = _run(pytester, lab_dir, which)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    device = "d1" if which == "ctrl_c" else "d2"
    assert _running(lab_dir, device) == {"admin": "up"}
    assert json.loads((lab_dir / f"{device}.json").read_text())["restores"] == 1


def test_config_difference() -> None:
    assert config_difference('{"a": 1, "b": 2}', '{"b": 2, "a": 1}') is None
    assert config_difference("hostname x\nmtu 9100\n", "hostname x\nmtu 9100  \n") is None
    diff = config_difference("hostname x\nmtu 9100", "hostname x\nmtu 1500")
    assert diff is not None and "-mtu 9100" in diff and "+mtu 1500" in diff
