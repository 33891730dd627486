"""A wired link's far end loses carrier when the near end is shut, as on a cable.

Three bare namespaces stand for a link's ends and its wire (``KernelLab.through_wire``);
the relay is exercised with iproute2 alone, no daemons.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from labtest import netns as ns
from labtest.emulation.kernel.carrier import CarrierRelay, End, admin_up

NEEDS_ROOT = pytest.mark.skipif(not ns.is_root(), reason="network namespaces need root")
BOUND_S = 5.0


def test_admin_state_is_read_from_monitor_lines_of_the_port_only() -> None:
    down = "2: Ethernet0@if2: <BROADCAST,MULTICAST> mtu 1500 qdisc noqueue state DOWN"
    no_carrier = "2: Ethernet0@if2: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 state DOWN"
    assert admin_up(down, "Ethernet0") is False
    assert admin_up(no_carrier, "Ethernet0") is True  # shut is admin, not carrier
    assert admin_up(no_carrier, "Ethernet4") is None
    assert admin_up("Deleted 2: Ethernet0@if2: <BROADCAST,MULTICAST> mtu 1500", "Ethernet0") is None
    assert admin_up("3: Ethernet04@if2: <BROADCAST,MULTICAST,UP> mtu 1500", "Ethernet0") is None


def _oper(netns: str, port: str) -> str:
    return ns.ip("-br", "link", "show", "dev", port, netns=netns).split()[1]


def _until(netns: str, port: str, state: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while _oper(netns, port) != state:
        assert time.monotonic() < deadline, f"{netns}:{port} never {state}"
        time.sleep(0.05)


@pytest.fixture
def wired() -> Iterator[tuple[str, str, str]]:
    with contextlib.ExitStack() as stack:
        a, wire, b = (stack.enter_context(ns.namespace()) for _ in range(3))
        ns.ip("link", "add", "name", "Ethernet0", "netns", a, "type", "veth", "peer", "name",
              "wa", "netns", wire)  # fmt: skip
        ns.ip("link", "add", "name", "wb", "netns", wire, "type", "veth", "peer", "name",
              "Ethernet4", "netns", b)  # fmt: skip
        for netns, port in ((a, "Ethernet0"), (wire, "wa"), (wire, "wb"), (b, "Ethernet4")):
            ns.ip("link", "set", port, "up", netns=netns)
        yield a, wire, b


@NEEDS_ROOT
def test_shutting_either_end_takes_the_far_end_down_and_back(
    wired: tuple[str, str, str],
) -> None:
    a, wire, b = wired
    _until(b, "Ethernet4", "UP")
    # without the relay the far end stays up: the defect it exists for
    ns.ip("link", "set", "Ethernet0", "down", netns=a)
    time.sleep(0.3)
    assert _oper(b, "Ethernet4") == "UP"
    relay = CarrierRelay(wire, End(a, "Ethernet0"), End(b, "Ethernet4"), "wa", "wb")
    relay.start()  # it reads the state the ends are in when it starts
    try:
        _until(b, "Ethernet4", "DOWN")
        ns.ip("link", "set", "Ethernet0", "up", netns=a)
        _until(b, "Ethernet4", "UP")
        _until(a, "Ethernet0", "UP")
        ns.ip("link", "set", "Ethernet4", "down", netns=b)
        _until(a, "Ethernet0", "DOWN")
        ns.ip("link", "set", "Ethernet0", "down", netns=a)  # both shut: none may stick
        ns.ip("link", "set", "Ethernet4", "up", netns=b)
        ns.ip("link", "set", "Ethernet0", "up", netns=a)
        _until(a, "Ethernet0", "UP")
        _until(b, "Ethernet4", "UP")
    finally:
        relay.stop()
    assert all(not ns.pids_in_netns({ns.netns_id(n)}) for n in (a, wire, b))
