"""How fast can the Scapy traffic generator send while measuring every frame exactly?

    sudo python3 bench/tg_rate.py [--size-bytes 64] [--duration-s 1] [--max-pps 1000000]

Builds a namespace with a veth pair (TG port p1 cabled to TG port p2), then
sends one flow at increasing rates. A step passes when the measurement is
exact: the sender kept the rate (>= 99 %), the receiver counted every frame
itself (no socket drops, so no fallback to interface counters), and saw no
loss, reordering or duplicate. The highest passing rate is the per-port
rate with zero measurement error; its frame interval is the resolution of a
loss duration (one lost frame = 1 / rate). Steps above it are reported too:
up to the sender's own limit, counts stay exact through the kernel's
interface counters, but order and latency are only sampled there.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass

from labtest import netns
from labtest.capabilities.traffic import Ethernet, Flow, Ipv4, Port, TrafficConfig, Udp
from labtest.drivers.tg.scapy_tg import ScapyTrafficGenerator
from labtest.testbed.model import Testbed

STEPS_PPS = [10_000, 25_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000, 400_000,
             600_000, 800_000, 1_000_000]  # fmt: skip


@dataclass(frozen=True)
class Step:
    target_pps: int
    achieved_pps: float
    frames_tx: int
    frames_rx: int | None
    method: str | None
    socket_drops: int
    out_of_order: int | None
    tx_max_lag_us: float | None

    @property
    def sender_kept_up(self) -> bool:
        return self.achieved_pps >= 0.99 * self.target_pps

    @property
    def exact(self) -> bool:
        return (
            self.sender_kept_up
            and self.method == "signature"
            and self.frames_rx == self.frames_tx
            and self.out_of_order == 0
        )


def run_step(tg: ScapyTrafficGenerator, rate_pps: int, size_bytes: int, duration_s: float) -> Step:
    flow = Flow(
        name="bench",
        tx_port="p1",
        rx_ports=["p2"],
        packet=[Ethernet(), Ipv4(src="198.18.0.1", dst="198.18.0.2"), Udp(dst_port=5001)],
        size_bytes=size_bytes,
        rate_pps=rate_pps,
        duration_s=duration_s,
    )
    ports = [Port(name="p1", location="p1"), Port(name="p2", location="p2")]
    tg.set_config(TrafficConfig(ports=ports, flows=[flow]))
    tg.start_traffic()
    if not tg.wait_done(timeout_s=duration_s * 5 + 5):
        tg.stop_traffic()
    (m,) = tg.metrics()
    return Step(rate_pps, m.frames_tx_rate_pps, m.frames_tx, m.frames_rx, m.rx_count_method,
                m.rx_socket_drops, m.out_of_order, m.tx_max_lag_us)  # fmt: skip


def format_step(s: Step) -> str:
    line = f"{s.target_pps:>11,} {s.achieved_pps:>10,.0f} {s.frames_tx:>9,} {s.frames_rx or 0:>9,}"
    line += f" {s.method or '-':>18} {s.socket_drops:>10,} {s.out_of_order or 0:>4}"
    line += f" {s.tx_max_lag_us or 0:>10,.0f}"
    return line + ("" if s.exact else "   <- not exact")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-bytes", type=int, default=64, help="frame size incl. FCS")
    parser.add_argument("--duration-s", type=float, default=1.0, help="per step")
    parser.add_argument("--max-pps", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true", help="print the steps as JSON too")
    args = parser.parse_args(argv)
    if not netns.is_root():
        print("needs root (network namespaces and raw sockets)", file=sys.stderr)
        return 2

    base = netns.unique_name()
    steps: list[Step] = []
    with netns.namespace(f"{base}b") as ns:
        netns.add_veth(f"{base}p1", f"{base}p2", ns, ns)
        testbed = Testbed.model_validate({"name": "bench", "devices": {"tg": {
            "role": "traffic-generator", "driver": "scapy-tg",
            "packet": {"interfaces": {"p1": f"{base}p1", "p2": f"{base}p2"}, "netns": ns},
        }}})  # fmt: skip
        tg = ScapyTrafficGenerator("tg", testbed.devices["tg"], testbed)
        try:
            print(f"{'target pps':>11} {'achieved':>10} {'tx':>9} {'rx':>9} "
                  f"{'method':>18} {'sock drops':>10} {'ooo':>4} {'max lag us':>10}")  # fmt: skip
            for rate in (r for r in STEPS_PPS if r <= args.max_pps):
                step = run_step(tg, rate, args.size_bytes, args.duration_s)
                steps.append(step)
                print(format_step(step))
                if not step.sender_kept_up:
                    break
        finally:
            tg.close()

    exact = [s for s in steps if s.exact]
    kept_up = [s for s in steps if s.sender_kept_up]
    print()
    if exact:
        best = exact[-1].target_pps
        print(f"highest rate measured exactly: {best:,} pps per port, {args.size_bytes} B frames "
              "(method: per-frame signature receiver: count, order, latency, ECN)")  # fmt: skip
        print(f"loss-duration resolution: 1/rate = {1e6 / best:.1f} us per lost frame")
    else:
        print("no step was measured exactly")
    if kept_up and (not exact or kept_up[-1].target_pps > exact[-1].target_pps):
        top = kept_up[-1].target_pps
        print(f"sender limit: {top:,} pps (counts from interface counters above the exact rate; "
              f"resolution {1e6 / top:.1f} us, order and latency sampled)")  # fmt: skip
    if args.json:
        print(json.dumps([asdict(s) | {"exact": s.exact} for s in steps], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
