"""The netns lab of the traffic generator tests: a TG host and a switch between its ports.

    namespace "tg"                 namespace "sw"
    p1 (TG port 1) ---- veth ---- e1 \\
                                      bridge  (+ nftables: CE-mark UDP to port 5002)
    p2 (TG port 2) ---- veth ---- e2 /

The bridge is created before the veths on purpose: a veth whose ifindex
equals its peer's (likely when each namespace numbers its interfaces from 2)
does not count as a stacked device for the kernel's link watcher, so its
carrier-up event waits for the watcher's 1-second rate limit and a 50 ms
outage on it lasts about a second.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from labtest import netns
from labtest.testbed.model import Testbed

CE_MARKED_UDP_PORT = 5002

NEEDS_ROOT = pytest.mark.skipif(
    not netns.is_root() or shutil.which("ip") is None,
    reason="needs root and iproute2 to create network namespaces, veth pairs and raw sockets",
)

_NFT_RULES = f"""
table bridge labtest_sw {{
  chain ce_marker {{
    type filter hook forward priority 0; policy accept;
    udp dport {CE_MARKED_UDP_PORT} ip ecn set ce
  }}
}}
"""


@dataclass(frozen=True)
class TgLab:
    tg_netns: str
    sw_netns: str
    interfaces: dict[str, str]  # TG port -> interface in tg_netns
    switch_ports: dict[str, str]  # TG port -> the switch interface it is cabled to
    ce_marking: bool  # the switch marks CE on UDP port 5002 (needs nftables)

    def testbed(self) -> Testbed:
        return Testbed.model_validate(
            {
                "name": "tg-lab",
                "devices": {
                    "tg": {
                        "role": "traffic-generator",
                        "driver": "scapy-tg",
                        "packet": {"interfaces": self.interfaces, "netns": self.tg_netns},
                    }
                },
            }
        )


@contextlib.contextmanager
def tg_lab() -> Iterator[TgLab]:
    """Build the lab; remove every namespace (and so every interface) when the block ends."""
    base = netns.unique_name()
    tg_ns, sw_ns = f"{base}t", f"{base}s"
    created: list[str] = []
    try:
        for name in (tg_ns, sw_ns):
            created.append(netns.create_netns(name))
        netns.ip("link", "add", "br0", "type", "bridge", netns=sw_ns)  # first: see the docstring
        interfaces, switch_ports = {}, {}
        for n in (1, 2):
            tg_if, sw_if = f"{base}p{n}", f"{base}e{n}"
            netns.add_veth(tg_if, sw_if, tg_ns, sw_ns)
            netns.ip("link", "set", sw_if, "master", "br0", netns=sw_ns)
            interfaces[f"p{n}"], switch_ports[f"p{n}"] = tg_if, sw_if
        netns.ip("link", "set", "br0", "up", netns=sw_ns)
        ce_marking = _install_ce_marker(sw_ns)
        yield TgLab(tg_ns, sw_ns, interfaces, switch_ports, ce_marking)
    finally:
        for name in created:
            netns.delete_netns(name)


def _install_ce_marker(sw_ns: str) -> bool:
    if shutil.which("nft") is None:
        return False
    done = subprocess.run(
        ["ip", "netns", "exec", sw_ns, "nft", "-f", "-"],
        input=_NFT_RULES, capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    return done.returncode == 0
