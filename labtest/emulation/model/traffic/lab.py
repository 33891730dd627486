"""Small building blocks to use the traffic model on its own: a link table and a Clos builder.

``DictLinkView`` is a plain table of link states (the physical half of the
fabric provides the real one); ``clos_testbed`` builds a leaf-spine testbed in
code, which tests and examples use instead of YAML.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labtest.testbed.model import Device, Link, Testbed


@dataclass
class LinkState:
    up: bool = True
    speed_gbps: float = 400.0
    rate_fraction: float = 1.0


@dataclass
class DictLinkView:
    """A ``LinkView`` over a dict of link name -> state; edit it to fail or slow a link."""

    state: dict[str, LinkState] = field(default_factory=dict)

    @classmethod
    def of(cls, testbed: Testbed, default_gbps: float = 400.0) -> DictLinkView:
        return cls(
            {lk.name: LinkState(True, lk.speed_gbps or default_gbps) for lk in testbed.links}
        )

    def link_up(self, link_name: str) -> bool:
        return self.state[link_name].up

    def link_rate_fraction(self, link_name: str) -> float:
        return self.state[link_name].rate_fraction

    def link_speed_gbps(self, link_name: str) -> float:
        return self.state[link_name].speed_gbps

    def link_names(self) -> list[str]:
        return list(self.state)


def clos_testbed(
    spines: int = 2,
    leaves: int = 4,
    hosts_per_leaf: int = 2,
    speed_gbps: float = 400.0,
    tg_ports: int = 0,
    uplinks_per_spine: int = 1,
    name: str = "clos",
    host_vars: dict[str, object] | None = None,
    switch_vars: dict[str, object] | None = None,
) -> Testbed:
    """A two-tier leaf-spine: ``spineN``, ``leafN``, ``hostN`` (eth0), ``tg1`` ports on leaves."""
    devices: dict[str, Device] = {}
    links: list[Link] = []
    sw = dict(switch_vars or {})

    def cable(a: str, b: str, length_m: float) -> None:  # every link runs at the one speed
        links.append(Link(a=a, b=b, speed_gbps=speed_gbps, length_m=length_m))

    for s in range(1, spines + 1):
        devices[f"spine{s}"] = Device(role="spine", driver="sonic", vars=sw)
    h = 0
    for lf in range(1, leaves + 1):
        leaf = f"leaf{lf}"
        devices[leaf] = Device(role="leaf", driver="sonic", vars=sw)
        port = 0
        for s in range(1, spines + 1):
            for u in range(uplinks_per_spine):
                cable(f"{leaf}:Ethernet{port}",
                      f"spine{s}:Ethernet{(lf - 1) * uplinks_per_spine + u}", 30)
                port += 8
        for _ in range(hosts_per_leaf):
            h += 1
            devices[f"host{h}"] = Device(role="host", driver="linux", vars=dict(host_vars or {}))
            cable(f"host{h}:eth0", f"{leaf}:Ethernet{port}", 3)
            port += 8
    if tg_ports:
        devices["tg1"] = Device(role="tg", driver="scapy-tg")
        for t in range(1, tg_ports + 1):
            leaf = f"leaf{(t - 1) % leaves + 1}"
            cable(f"tg1:p{t}", f"{leaf}:Ethernet{200 + 8 * t}", 3)
    return Testbed(name=name, devices=devices, links=links)
