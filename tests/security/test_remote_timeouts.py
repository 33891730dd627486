"""Issue 37 item 10: a command that timed out does not keep running on the device.

Over SSH ``exec`` no terminal is allocated, so closing the channel does not stop
the command. A driver whose device runs commands in a POSIX shell declares it
(``CliSwitch.posix_shell``, ``connect.cli(posix_shell=True)``) and the transport
then kills the timed-out command's process group on the device. ``linux`` did;
``frr`` (a Linux box: every command is a shell line) now does too. The other
drivers, and why they cannot, are listed in docs/drivers.md.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from labtest.emulation.kernel import why_not
from labtest.errors import TransportTimeout
from labtest.testbed import load_testbed

KERNEL_TESTBED = """\
name: sec-timeouts
devices:
  leaf1: {role: leaf, driver: frr}
  host1: {role: host, driver: linux, vars: {netdev: eth0}}
links:
  - {a: "host1:eth0", b: "leaf1:Ethernet0", speed_gbps: 10}
emulation:
  backend: kernel
"""


def test_which_drivers_kill_a_timed_out_command() -> None:
    """The drivers whose devices run a POSIX shell ask for it; switch CLIs cannot."""
    from labtest.drivers.common.cli import CliSwitch
    from labtest.drivers.eos.driver import EosSwitch
    from labtest.drivers.frr.driver import FrrSwitch
    from labtest.drivers.nxos.driver import NxosSwitch
    from labtest.drivers.sonic.driver import SonicSwitch

    assert FrrSwitch.posix_shell is True
    assert CliSwitch.posix_shell is False
    for cls in (EosSwitch, NxosSwitch, SonicSwitch):  # docs/drivers.md says why, per driver
        assert cls.posix_shell is False
    docs = (Path(__file__).parents[2] / "docs" / "drivers.md").read_text()
    for driver in ("linux", "frr", "sonic", "eos", "nxos", "snmp-switch", "snappi-tg",
                   "scapy-tg"):
        assert f"| `{driver}` |" in docs, driver


def _survivors(tag: str) -> list[str]:
    done = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if "pgrep" not in line]


@pytest.mark.skipif(why_not() is not None, reason=f"kernel lab: {why_not()}")
def test_a_timed_out_frr_command_is_killed_on_the_device(tmp_path: Path) -> None:
    from labtest.emulation.kernel import KernelLab
    from labtest.lab import Lab

    tb_path = tmp_path / "tb.yaml"
    tb_path.write_text(KERNEL_TESTBED)
    tag = "3737.25"  # a sleep nobody else runs: its survivors are ours
    lab = KernelLab(load_testbed(tb_path))
    testbed = lab.start()
    try:
        devices = Lab(testbed)
        switch = devices.device("leaf1")
        try:
            assert switch.facts().hostname == "leaf1"  # the marker leaves answers unchanged
            with pytest.raises(TransportTimeout) as info:
                switch.run(f"sleep {tag}; echo never", timeout_s=2.0)
            deadline = time.monotonic() + 10
            while _survivors(tag) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _survivors(tag) == []
            assert "stopped its process group" in str(info.value), str(info.value)
        finally:
            devices.close()
    finally:
        for line in _survivors(tag):  # ours only: nobody else sleeps 3737.25 s
            subprocess.run(["kill", "-KILL", line.split()[0]], check=False)
        lab.stop()
