"""Production's noise on an emulated lab (``emulation.noise``): a device that answers late,
probe answers lost at random; and a typo in it refused with its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtest.emulation.lab import EmulatedLab, Served, register_personality
from labtest.emulation.model import gray
from labtest.emulation.sshserver import FunctionHandler
from labtest.errors import ConfigError
from labtest.registry import register_driver
from labtest.testbed import load_testbed
from labtest.transports.ssh import SshTransport

TESTBED = """\
name: noisy
devices:
  sw1: {{role: leaf, driver: noise-toy, address: 10.0.0.1, ssh: {{username: admin, password: x}}}}
  sw2: {{role: leaf, driver: noise-toy, address: 10.0.0.1, ssh: {{username: admin, password: x}}}}
links:
  - {{a: "sw1:Ethernet0", b: "sw2:Ethernet0", speed_gbps: 400, optic: 400G-DR4}}
  - {{a: "sw1:Ethernet8", b: "sw2:Ethernet8", speed_gbps: 400, optic: 400G-DR4}}
emulation:
  time_scale: 10
  noise: {noise}
"""


def _toy(fabric, name, device) -> Served:
    return Served(cli=lambda: FunctionHandler(lambda c: f"{fabric.clock.now_s():.3f}\n",
                                              prompt=f"{name}# "))


register_personality("noise-toy", _toy)
register_driver("noise-toy", type("_Driverless", (), {}))


def _load(tmp_path: Path, noise: str):
    path = tmp_path / "tb.yaml"
    path.write_text(TESTBED.format(noise=noise))
    return load_testbed(path)


def test_a_late_device_answers_after_its_delay_and_the_others_on_time(tmp_path: Path) -> None:
    testbed = _load(tmp_path, '{answer_delay_s: {sw1: 20}}')
    lab = EmulatedLab(testbed, workdir=tmp_path / "lab", elastic=False)
    emulated = lab.start()
    try:
        waits = {}
        for name in ("sw1", "sw2"):
            with SshTransport(name, "127.0.0.1", emulated.devices[name].ssh) as t:
                took = []
                for _ in range(6):
                    before = lab.fabric.clock.now_s()
                    answered = float(t.exec("show clock").stdout)
                    took.append(answered - before)
                waits[name] = took
    finally:
        lab.stop()
    # sw1: a uniform 0..20 s each (six draws: their mean above 3 s but for 1 in 10^4)
    assert sum(waits["sw1"]) / 6 > 3.0, waits
    assert max(waits["sw1"]) <= 20.0 + 2.0, waits
    assert max(waits["sw2"]) < 1.0, waits  # not named, no "*": on time


def test_probe_loss_drops_answers_on_no_link_and_is_no_fault(tmp_path: Path) -> None:
    testbed = _load(tmp_path, "{probe_loss: 0.02}")
    lab = EmulatedLab(testbed, workdir=tmp_path / "lab")
    lab.start()
    try:
        fabric = lab.fabric
        assert fabric.testbed.emulation.noise.probe_loss == 0.02
        for link in fabric.link_names():  # the links themselves lose nothing
            for direction in ("ab", "ba"):
                assert gray.frame_loss(fabric, link, direction, 7) == 0.0
        assert fabric.active_faults() == []
    finally:
        lab.stop()


@pytest.mark.parametrize(("noise", "where", "says"), [
    ("{answer_delay_s: {sw3: 5}}", "answer_delay_s", "unknown device 'sw3'"),
    ("{answer_delay_s: {sw1: 900}}", "answer_delay_s", "0..600"),
    ("{probe_loss: 0.5}", "probe_loss", "less than or equal to 0.05"),
    ("{jitter: 1}", "noise.jitter", "unknown field"),
    ("{probe_loss: 1.0e-3}\n  backend: kernel", "emulation.noise", "model backend's"),
])
def test_noise_typos_are_refused_with_their_place(tmp_path: Path, noise: str, where: str,
                                                  says: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, noise)
    assert where in str(err.value) and says in str(err.value), str(err.value)
