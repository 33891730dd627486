"""How well does ``labtest doctor`` find faults? A hidden random schedule on a model fabric.

    python bench/doctor_eval.py [--spines 8] [--leaves 16] [--hosts-per-leaf 8]
                                [--faults 50] [--horizon-s 7200] [--interval-s 10]
                                [--seeds 1 2 3] [--verbose]

(defaults: what docs/doctor.md's table ran; a virtual day is --horizon-s 86400
--min-duration-s 60 --max-duration-s 300 --gap-s 60, about an hour per seed here)

Per seed: a leaf-spine fabric model (every leaf to every spine, hosts on leaves,
400G-DR4), a random schedule of faults (kind, link, start, duration; healthy
gaps between them) the doctor is not told, and the doctor run every
``--interval-s`` of virtual time. Each interval the bench reads what a switch
and a host would serve (link state, counters, FEC, DOM: the same fields the
drivers give, read from the model directly so a fabric this size fits on a
2-core machine), simulates the probe mesh through the model's gray-failure
state (``labtest.emulation.model.gray.frame_loss``), and hands both to
``Doctor.step``. What differs from the live doctor, and is said in the table:
link state comes from the model's transitions in the interval (a perfect
sampler, where the live doctor polls every 0.5 s), and LLDP is not read
(no cabling faults are scheduled).

Scores, over every seed: precision (suspects named that were a fault in force or
cleared within one interval, or a page held after its fault ended while it waits for
CLEAR_INTERVALS clean intervals / all suspects named), recall (faults named while in
force or within one interval after), top-1 / top-3 (the first report naming any
suspect during the fault had the fault's link first / in the first three; over
all faults), time to detect (first report naming it, minus its start), probe
overhead (the busiest link's probe bits over its capacity) and the doctor's CPU
per switch per interval (``Doctor.step``; the model reads are the emulator's).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from labtest.doctor.evidence import PortReading, Snapshot
from labtest.doctor.judge import Plan
from labtest.doctor.pager import CLEAR_INTERVALS
from labtest.doctor.service import Doctor
from labtest.emulation.model import gray
from labtest.emulation.model.fabric import Fabric
from labtest.emulation.model.physics import CODEWORD_BITS
from labtest.emulation.personalities.linux.nic import split
from labtest.measure import load_limits
from labtest.measure.probes import ProbePath, overhead_fraction, plan_mesh, probes_per_pair
from labtest.testbed import load_testbed
from labtest.testbed.model import Testbed

ROOT = Path(__file__).resolve().parents[1]
LIMITS = ROOT / "suites" / "limits" / "acceptance-400g.yaml"
PROBE_BYTES = 64  # a minimum UDP probe frame
PROBES_PER_PATH = 4  # probes each (pair, source port) sends per interval
PEERS_PER_HOST = 4  # other hosts each host probes per interval (one on its own leaf)

#: (kind, params, where): "link" any link, "fabric" leaf-spine links only, "port" one end
KINDS: list[tuple[str, dict[str, Any], str]] = [
    ("dirty_connector", {"loss_db": 3.0}, "link"),
    ("flapping_link", {"period_s": 10.0, "down_s": 1.0}, "link"),
    ("marginal_lane", {"margin_db": 0.0}, "port"),
    ("lossy_link", {"loss": 0.02}, "link"),
    ("silent_drop", {"loss": 1.0}, "link"),
    ("ecmp_blackhole", {"flow_fraction": 0.5}, "fabric"),
    ("intermittent_flap", {"period_s": 3600.0, "down_s": 2.0}, "link"),
]


def fabric_testbed(spines: int, leaves: int, hosts_per_leaf: int, seed: int, out: Path) -> Testbed:
    devices: dict[str, Any] = {}
    links = []
    for s in range(1, spines + 1):
        devices[f"spine{s}"] = {"role": "spine", "driver": "sonic"}
    for lf in range(1, leaves + 1):
        devices[f"leaf{lf}"] = {"role": "leaf", "driver": "sonic"}
        for s in range(1, spines + 1):
            links.append({"a": f"leaf{lf}:Ethernet{8 * (s - 1)}",
                          "b": f"spine{s}:Ethernet{8 * (lf - 1)}",
                          "speed_gbps": 400, "optic": "400G-DR4", "length_m": 30})
        for h in range(hosts_per_leaf):
            name = f"host{(lf - 1) * hosts_per_leaf + h + 1}"
            devices[name] = {"role": "host", "driver": "linux"}
            links.append({"a": f"{name}:eth0", "b": f"leaf{lf}:Ethernet{8 * (spines + h)}",
                          "speed_gbps": 400, "optic": "400G-DR4", "length_m": 3})
    data = {"name": f"eval-{spines}x{leaves}x{leaves * hosts_per_leaf}", "limits": str(LIMITS),
            "devices": devices, "links": links,
            "emulation": {"seed": seed, "time_scale": 1, "ambient_c": 25, "faults": []}}
    path = out / "fabric.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_testbed(path)


# --- what the drivers would read ------------------------------------------------------


def read_model(fabric: Fabric, tb: Testbed, t0: float, t1: float) -> Snapshot:
    snap = Snapshot()
    hosts = {n for n, d in tb.devices.items() if d.role == "host"}
    for lk in tb.links:
        downs = sum(1 for _, up in fabric.link_transitions(lk.name, t0, t1) if not up)
        for end in lk.ends:
            dev, port = end.device, end.port
            st = fabric.interface(dev, port)
            dom = fabric.dom(dev, port)
            d: dict[str, Any] = {
                "oper_up": st.oper_up, "speed_gbps": st.speed_gbps,
                "rx_power_dbm": tuple(ln.rx_power_dbm for ln in dom.lanes),
                "tx_power_dbm": tuple(ln.tx_power_dbm for ln in dom.lanes),
                "tx_bias_ma": tuple(ln.bias_ma for ln in dom.lanes),
                "temperature_c": dom.temperature_c,
            }
            f = fabric.fec(dev, port)
            if dev in hosts:  # the NIC's PHY counters, as the Linux personality serves them
                lanes = split(f.symbol_errors, fabric.ber(dev, port))
                d["counters"] = {"phy_rx_bits": f.total_codewords * CODEWORD_BITS,
                                 "phy_corrected_bits": f.symbol_errors} | {
                    f"phy_lane{n}_corrected_bits": v for n, v in enumerate(lanes)}
            else:  # switches: counters, FEC readout, link state as the watch samples it
                c = fabric.counters(dev, port)
                d["counters"] = {"rx_errors": c.rx_errors, "rx_fcs_errors": c.rx_fcs_errors,
                                 "rx_discards": c.rx_drops, "rx_packets": c.rx_packets,
                                 "fec_corrected_cw": f.corrected_codewords,
                                 "fec_uncorrectable_cw": f.uncorrectable_codewords}
                d["pre_fec_ber"] = f.pre_fec_ber
                d.update(oper_samples=1, down_events=downs, oper_down_samples=int(downs > 0))
            snap.ports[str(end)] = PortReading(device=dev, port=port, time_s=t1, **d)
    return snap


# --- the probe mesh --------------------------------------------------------------------


@dataclass
class Mesh:
    tb: Testbed
    fabric: Fabric
    rng: np.random.Generator
    spines: int
    leaf_of: dict[str, str] = field(default_factory=dict)
    access: dict[str, str] = field(default_factory=dict)  # host -> its link (a = host)
    uplink: dict[tuple[str, int], str] = field(default_factory=dict)  # (leaf, spine#) -> link
    probes_per_link: Counter[str] = field(default_factory=Counter)
    index: dict[str, int] = field(default_factory=dict)  # link name -> the model's index
    loss_rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def __post_init__(self) -> None:
        self.index = {lk.name: i for i, lk in enumerate(self.tb.links)}
        for lk in self.tb.links:
            a, b = lk.ends
            if self.tb.devices[a.device].role == "host":
                self.leaf_of[a.device] = b.device
                self.access[a.device] = lk.name
            else:
                self.uplink[(a.device, int(b.device.removeprefix("spine")))] = lk.name

    def hops(self, src: str, dst: str, sport: int) -> list[tuple[str, str]]:
        """(link, direction) from src to dst; the spine is the flow's ECMP choice."""
        la, lb = self.leaf_of[src], self.leaf_of[dst]
        out = [(self.access[src], "ab")]
        if la != lb:
            s = zlib.crc32(f"{src}>{dst}:{sport}".encode()) % self.spines + 1
            out += [(self.uplink[(la, s)], "ab"), (self.uplink[(lb, s)], "ba")]
        return [*out, (self.access[dst], "ba")]

    def probe(self) -> list[ProbePath]:
        plan = plan_mesh(self.leaf_of, self.spines, self.rng, peers_per_host=PEERS_PER_HOST,
                         probes_per_path=PROBES_PER_PATH, probe_bytes=PROBE_BYTES)
        st = gray.state(self.fabric)
        loss: dict[tuple[str, str], float] = {}
        paths = []
        for pr in plan.probes:
            hops = self.hops(pr.src, pr.dst, pr.sport)
            keep = 1.0
            for hop in hops:
                if st.holes.get((self.index[hop[0]], hop[1])):
                    h = zlib.crc32(f"{pr.src}>{pr.dst}:{pr.sport}".encode())
                    p = gray.frame_loss(self.fabric, hop[0], hop[1], h)
                else:
                    if hop not in loss:
                        loss[hop] = gray.frame_loss(self.fabric, hop[0], hop[1], 0)
                    p = loss[hop]
                keep *= 1.0 - p
                self.probes_per_link[hop[0]] += PROBES_PER_PATH
            lost = int(self.loss_rng.binomial(PROBES_PER_PATH, 1.0 - keep))
            paths.append(ProbePath(pr.src, pr.dst, tuple(h[0] for h in hops),
                                   PROBES_PER_PATH, lost))
        return paths


# --- one seed --------------------------------------------------------------------------


@dataclass
class Outcome:
    faults: list[dict[str, Any]]
    suspects_named: int
    suspects_right: int
    overhead: float
    cpu_s_per_switch_interval: float
    read_s: float
    intervals: int
    cpu_s_per_interval: float = 0.0  # Doctor.step over the whole fabric
    probe_paths_per_interval: float = 0.0


def run_seed(seed: int, args: argparse.Namespace, workdir: Path) -> Outcome:
    gray.register()
    try:
        return _run_seed(seed, args, workdir)
    finally:
        gray.unregister()  # the default catalogue stays the acceptance one for what runs next


def _run_seed(seed: int, args: argparse.Namespace, workdir: Path) -> Outcome:
    tb = fabric_testbed(args.spines, args.leaves, args.hosts_per_leaf, seed, workdir)
    fabric = Fabric(tb, seed=seed)
    rng = np.random.default_rng([seed, 20])
    all_links = [lk.name for lk in tb.links]
    fabric_links = [lk.name for lk in tb.links if tb.devices[lk.ends[0].device].role == "leaf"]
    sched = gray.random_schedule(rng, all_links, [(k, p) for k, p, _ in KINDS],
                                 count=args.faults, horizon_s=args.horizon_s,
                                 duration_s=(args.min_duration_s, args.max_duration_s),
                                 gap_s=args.gap_s)
    where = {k: w for k, _, w in KINDS}
    fixed = []
    for f in sched:  # place each fault where its kind can sit
        target = f.target
        if where[f.kind] == "fabric" and target not in fabric_links:
            target = fabric_links[int(rng.integers(len(fabric_links)))]
        params = dict(f.params)
        if f.kind == "silent_drop":
            params["direction"] = str(rng.choice(["ab", "ba"]))
        if where[f.kind] == "port":
            lk = next(x for x in tb.links if x.name == target)
            target = str(lk.ends[int(rng.integers(2))])
        fixed.append(gray.ScheduledFault(f.kind, target, params, f.at_s, f.duration_s))
    gray.apply_schedule(fabric, fixed)
    if args.verbose:
        for f in fixed:
            print(f"  fault {f.kind} at {f.target} {f.params} from {f.at_s:.0f} s "
                  f"for {f.duration_s:.0f} s")
    unit = {i: next(x.name for x in tb.links if x.name == f.target or f.target in (x.a, x.b))
            for i, f in enumerate(fixed)}
    doctor = Doctor(Plan.of(tb), load_limits(LIMITS))
    mesh = Mesh(tb, fabric, np.random.default_rng([seed, 30]), args.spines,
                loss_rng=np.random.default_rng([seed, 31]))
    named, right, cpu, read_s, n, paths = 0, 0, 0.0, 0.0, 0, 0
    detected: dict[int, float] = {}  # fault -> time to detect
    first_report: dict[int, list[str]] = {}  # fault -> the first ranking named during it
    t = 0.0
    grace = args.interval_s
    while t < args.horizon_s:
        t0, t = t, t + args.interval_s
        fabric.advance(args.interval_s)
        r0 = time.process_time()
        snap = read_model(fabric, tb, t0, t)
        probes = mesh.probe()
        read_s += time.process_time() - r0
        report = doctor.step(snap, probes)
        cpu += report.cpu_s
        n += 1
        paths += len(probes)
        ranking = [_link_of(s.unit, doctor.plan) for s in report.suspects]
        live = {i for i, f in enumerate(fixed)
                if f.at_s < t and f.at_s + f.duration_s + grace >= t0}
        live_units = {unit[i] for i in live}
        # a page holds until CLEAR_INTERVALS clean intervals clear it (issue 34: pages that
        # hold): a held page of a fault that ended within that window is right, not false
        hold = (CLEAR_INTERVALS + 1) * args.interval_s
        held_units = {unit[i] for i, f in enumerate(fixed)
                      if f.at_s < t and f.at_s + f.duration_s + hold >= t0}
        ok = [u in live_units or (s_.held > 0 and u in held_units)
              for u, s_ in zip(ranking, report.suspects, strict=True)]
        named += len(ranking)
        if args.verbose:
            for s_, right_ in zip(report.suspects, ok, strict=True):
                if not right_:
                    print(f"  t={t:.0f} wrong: {s_.unit} {s_.confidence:.2f} "
                          + " | ".join(e.text for e in s_.evidence[:3])
                          + f"  [in force: {[(fixed[i].kind, unit[i]) for i in live]}]")
        right += sum(ok)
        for i in live if ranking else ():
            first_report.setdefault(i, ranking)
            if i not in detected and unit[i] in ranking:
                detected[i] = t - fixed[i].at_s
    faults = []
    for i, f in enumerate(fixed):
        top = first_report.get(i, [])
        faults.append({"kind": f.kind, "unit": unit[i], "detected": i in detected,
                       "ttd_s": detected.get(i), "top1": top[:1] == [unit[i]],
                       "top3": unit[i] in top[:3]})
    if args.verbose:
        for f in faults:
            if not (f["detected"] and f["top1"]):
                print(f"  missed or not top-1: {f}")
    switches = sum(1 for d in tb.devices.values() if d.role != "host")
    busiest = max(mesh.probes_per_link.values()) / args.horizon_s
    return Outcome(faults, named, right, overhead_fraction(busiest, PROBE_BYTES, 400),
                   cpu / max(n, 1) / switches, read_s, n, cpu / max(n, 1), paths / max(n, 1))


def _link_of(u: str, plan: Plan) -> str:
    return plan.link_of[u].name if u in plan.link_of else u


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spines", type=int, default=8)
    ap.add_argument("--leaves", type=int, default=16)
    ap.add_argument("--hosts-per-leaf", type=int, default=8)
    ap.add_argument("--faults", type=int, default=50)
    ap.add_argument("--horizon-s", type=float, default=7200.0)
    ap.add_argument("--interval-s", type=float, default=10.0)
    ap.add_argument("--min-duration-s", type=float, default=30.0)
    ap.add_argument("--max-duration-s", type=float, default=120.0)
    ap.add_argument("--gap-s", type=float, default=30.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--verbose", action="store_true", help="print every wrong suspect")
    args = ap.parse_args()
    hosts = args.leaves * args.hosts_per_leaf
    print(f"fabric: {args.spines} spines, {args.leaves} leaves, {hosts} hosts; "
          f"{args.faults} faults over {args.horizon_s:g} s virtual, "
          f"interval {args.interval_s:g} s; "
          f"ECMP width {args.spines}: {probes_per_pair(args.spines)} source ports per "
          "inter-leaf pair")
    rows = []
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for seed in args.seeds:
        wall = time.monotonic()
        with tempfile.TemporaryDirectory() as d:
            o = run_seed(seed, args, Path(d))
        ttd = [f["ttd_s"] for f in o.faults if f["ttd_s"] is not None]
        row = {
            "seed": seed,
            "precision": o.suspects_right / o.suspects_named if o.suspects_named else float("nan"),
            "recall": statistics.mean(f["detected"] for f in o.faults),
            "top1": statistics.mean(f["top1"] for f in o.faults),
            "top3": statistics.mean(f["top3"] for f in o.faults),
            "ttd_p50": pct(ttd, 50), "ttd_p95": pct(ttd, 95),
            "overhead": o.overhead, "cpu_ms": o.cpu_s_per_switch_interval * 1e3,
            "wall_s": time.monotonic() - wall, "read_s": o.read_s, "intervals": o.intervals,
            "cpu_s_interval": o.cpu_s_per_interval, "paths": o.probe_paths_per_interval,
            # peak resident memory of this process so far (Linux: kB)
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        rows.append(row)
        for f in o.faults:
            by_kind[f["kind"]].append(f["detected"] and f["top1"])
        print(f"seed {seed}: precision {row['precision']:.3f}  recall {row['recall']:.3f}  "
              f"top-1 {row['top1']:.3f}  top-3 {row['top3']:.3f}  "
              f"TTD p50 {row['ttd_p50']:.0f} s p95 {row['ttd_p95']:.0f} s  "
              f"probe overhead {row['overhead']:.2e}  doctor CPU {row['cpu_ms']:.3f} ms/switch/"
              f"interval  ({row['intervals']} intervals, model reads {row['read_s']:.0f} s CPU, "
              f"wall {row['wall_s']:.0f} s)", flush=True)
        print(f"seed {seed}: doctor CPU {row['cpu_s_interval']:.3f} s per interval of "
              f"{args.interval_s:g} s, {row['paths']:.0f} probe paths per interval, peak RSS "
              f"{row['rss_mb']:.0f} MB (process, model included)", flush=True)
    print("per kind (detected and top-1, all seeds): " + ", ".join(
        f"{k} {sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())))
    targets = {"precision": 0.985, "recall": 0.995, "top1": 0.96}
    for key, goal in targets.items():
        worst = min(r[key] for r in rows)
        verdict = "met" if worst >= goal else "NOT met"
        print(f"target {key} >= {goal}: worst seed {worst:.3f} -> {verdict}")
    worst_p95 = max(r["ttd_p95"] for r in rows)
    print(f"target TTD p95 <= 30 s: worst seed {worst_p95:.0f} s -> "
          f"{'met' if worst_p95 <= 30 else 'NOT met'}")
    worst_oh = max(r["overhead"] for r in rows)
    print(f"target probe overhead <= 0.1%: worst {worst_oh:.2e} -> "
          f"{'met' if worst_oh <= 1e-3 else 'NOT met'}")


if __name__ == "__main__":
    main()
