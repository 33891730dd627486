"""Helpers of the scale tests: a small SONiC leaf/spine testbed, built in code."""

from __future__ import annotations

from typing import Any

from labtest.testbed.model import Testbed

#: short timeouts: a silent emulated switch must be given up on quickly
SSH = {"username": "admin", "timeout_s": 3.0, "command_timeout_s": 2.0}


def leaf_spine(
    leaves: int = 2, spines: int = 2, parallel: int = 1, name: str = "scale", **extra: Any
) -> Testbed:
    """``leaves`` x ``spines`` SONiC switches, each leaf cabled ``parallel`` times to each spine."""
    devices: dict[str, Any] = {}
    for i in range(1, leaves + 1):
        devices[f"leaf{i}"] = {"role": "leaf", "driver": "sonic", "ssh": SSH}
    for i in range(1, spines + 1):
        devices[f"spine{i}"] = {"role": "spine", "driver": "sonic", "ssh": SSH}
    links = []
    for leaf in range(leaves):
        for spine in range(spines):
            for k in range(parallel):
                links.append(
                    {
                        "a": f"leaf{leaf + 1}:Ethernet{(spine * parallel + k) * 8}",
                        "b": f"spine{spine + 1}:Ethernet{(leaf * parallel + k) * 8}",
                        "speed_gbps": 400,
                        "optic": "400G-DR4",
                        "length_m": 30,
                    }
                )
    return Testbed.model_validate({"name": name, "devices": devices, "links": links, **extra})
