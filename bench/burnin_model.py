"""A 72-hour virtual burn-in of a 4-leaf, 2-spine, 8-host fabric model, timed.

Samples DOM and FEC on every cabled port every 60 virtual seconds, as a burn-in
monitor would, and prints the wall time and the speed-up over real time.
Target (issue 3): under 60 s of wall time.

    python bench/burnin_model.py [--hours 72] [--interval-s 60] [--fault KIND:TARGET]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from labtest.emulation.model import Fabric
from labtest.testbed.model import Device, Emulation, Link, Testbed

#: the lab's two cables, (speed Gb/s, optic, length m): leaf-spine and host-leaf
FABRIC_CABLE = (800, "800G-DR8", 30)
HOST_CABLE = (400, "400G-DR4", 3)


def _cable(a: str, b: str, cable: tuple[int, str, int]) -> Link:
    """A link of the cabling plan, of one of the lab's two cables."""
    speed_gbps, optic, length_m = cable
    return Link(a=a, b=b, speed_gbps=speed_gbps, optic=optic, length_m=length_m)


def build_testbed(seed: int) -> Testbed:
    devices: dict[str, Device] = {}
    links: list[Link] = []
    for s in (1, 2):
        devices[f"spine{s}"] = Device(role="spine", driver="sonic")
    for lf in range(1, 5):
        devices[f"leaf{lf}"] = Device(role="leaf", driver="sonic")
        for s in (1, 2):
            links.append(_cable(f"leaf{lf}:Ethernet{8 * (s - 1)}",
                                f"spine{s}:Ethernet{8 * (lf - 1)}", FABRIC_CABLE))
    for h in range(1, 9):
        devices[f"host{h}"] = Device(role="host", driver="linux")
        leaf = (h - 1) // 2 + 1
        links.append(_cable(f"host{h}:eth0", f"leaf{leaf}:Ethernet{16 + 8 * ((h - 1) % 2)}",
                            HOST_CABLE))
    return Testbed(
        name="burnin-4x2x8",
        devices=devices,
        links=links,
        emulation=Emulation(seed=seed, time_scale=1000.0),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=72.0)
    ap.add_argument("--interval-s", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fault", action="append", default=[], help="KIND:TARGET, repeatable")
    args = ap.parse_args()

    wall0 = time.perf_counter()
    fabric = Fabric(build_testbed(args.seed))
    for spec in args.fault:
        kind, _, target = spec.partition(":")
        fabric.inject(kind, target)
    ports = [(e.device, e.port) for lk in fabric.testbed.links for e in lk.ends]
    steps = round(args.hours * 3600 / args.interval_s)
    first_rx = last_rx = None
    max_pre_ber = 0.0
    flags = 0
    for _ in range(steps):
        fabric.advance(args.interval_s)
        rx = []
        for device, port in ports:
            dom = fabric.dom(device, port)
            fec = fabric.fec(device, port)
            flags += len(fabric.dom_flags(device, port))
            rx.append([lane.rx_power_dbm for lane in dom.lanes][:4])
            max_pre_ber = max(max_pre_ber, fec.pre_fec_ber)
        last_rx = np.array(rx)
        if first_rx is None:
            first_rx = last_rx
    wall = time.perf_counter() - wall0

    unc = sum(fabric.fec(d, p).uncorrectable_codewords for d, p in ports)
    cw = sum(fabric.fec(d, p).total_codewords for d, p in ports)
    virtual = steps * args.interval_s
    print(f"ports sampled: {len(ports)}, samples per port: {steps}, interval {args.interval_s:g} s")
    print(f"virtual time: {virtual / 3600:.1f} h, wall time: {wall:.2f} s, "
          f"speed-up: {virtual / wall:,.0f}x")
    print(f"codewords: {cw:.3e}, uncorrectable: {unc}, max pre-FEC BER (1 s reads): "
          f"{max_pre_ber:.2e}, flags read: {flags}")
    drift = np.abs(last_rx - first_rx).max() if first_rx is not None else 0.0
    print(f"largest Rx power drift over the run: {drift:.2f} dB")


if __name__ == "__main__":
    main()
