"""A Linux host driver on scripted answers, for the driver's tests."""

from __future__ import annotations

from labtest.drivers.linux.driver import LinuxHost
from labtest.testbed.model import Testbed


def linux_host(runner: object) -> LinuxHost:
    """One Linux host (``host1``, netdev ``eth0``) whose shell answers through ``runner``
    (a stand-in with the transport's ``run``): the driver's own code on scripted answers."""
    tb = Testbed.model_validate({
        "name": "t",
        "devices": {"host1": {"role": "host", "driver": "linux", "address": "127.0.0.1",
                              "ssh": {"username": "root", "password": "unused"},
                              "vars": {"netdev": "eth0"}}},
        "links": [],
    })
    host = LinuxHost("host1", tb.devices["host1"], tb)
    host.shell.runner = runner  # type: ignore[assignment]
    return host
