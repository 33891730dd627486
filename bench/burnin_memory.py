"""Memory of a burn-in that takes one million samples: RSS must stay under 300 MB (issue 10).

Runs the real burn-in engine — station loader, unit discovery, scheduler, monitors,
SQLite store (WAL, one transaction per reading), analysis, verdict table, JSON summary,
plots and Allure hand-off — against an in-process synthetic driver, so the figure is
the engine's own and not the emulated lab's SSH servers. The station: 4 switches x
16 ports of 8-lane optics (64 modules), DOM every minute, FEC with histogram and error
counters every 5 minutes, one laser on sw2:Ethernet24 ageing (it must be the only
failure). Prints RSS after 10 %, 50 % and 100 % of the samples and after the
analysis, the peak, and the wall time.

    python bench/burnin_memory.py [--samples 1000000] [--db PATH]
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from labtest.burnin import analyse, load_station, open_store, start
from labtest.burnin import outputs as out
from labtest.burnin.live import Status
from labtest.burnin.runner import Options, Session
from labtest.burnin.store import Event
from labtest.burnin.timebase import SteppedTimebase
from labtest.capabilities.switch import (
    Facts,
    FecHistogram,
    FecStats,
    InterfaceCounters,
    InterfaceStatus,
)
from labtest.capabilities.transceiver import LaneDom, Threshold, Transceiver
from labtest.lab import Lab
from labtest.measure import load_limits
from labtest.registry import register_driver
from labtest.testbed import load_testbed

ROOT = Path(__file__).resolve().parents[1]
SWITCHES, PORTS, LANES = 4, 16, 8
DOM_PERIOD_S, FEC_PERIOD_S = 60.0, 300.0
AGEING_PORT = ("sw2", "Ethernet24")
RSS_LIMIT_MB = 300.0


class SyntheticSwitch:
    """Answers the switch capabilities from a tiny model; time comes from the bench."""

    clock = SteppedTimebase()

    def __init__(self, name: str, device: object, testbed: object) -> None:
        self.name = name
        self.rng = np.random.default_rng(sum(map(ord, name)))
        self.ports = [f"Ethernet{8 * i}" for i in range(PORTS)]

    def close(self) -> None:
        pass

    def facts(self) -> Facts:
        return Facts("Bench", "SYN-64", "1.0", f"SYN{self.name.upper()}0001")

    def transceivers(self) -> dict[str, Transceiver]:
        hours = self.clock.now_s() / 3600.0
        out = {}
        for i, port in enumerate(self.ports):
            ageing = (self.name, port) == AGEING_PORT
            noise = self.rng.normal(0.0, 0.05, (LANES, 3))
            lanes = [LaneDom(lane + 1, tx_bias_ma=55.0 * (1 + 0.03 * hours * ageing)
                             + noise[lane, 0] * 4, tx_power_dbm=1.0 + noise[lane, 1],
                             rx_power_dbm=0.5 + noise[lane, 2]) for lane in range(LANES)]
            out[port] = Transceiver(
                temperature_c=45.0 + noise[0, 0], voltage_v=3.3, lanes=lanes,
                thresholds={"tx_power_dbm": Threshold(-5.9, -2.9, 4.0, 7.0)},
                vendor="Bench", part_number="SYN-800G-DR8", serial=f"M{self.name}{i:02d}")
        return out

    def fec_stats(self) -> dict[str, FecStats]:
        cw = int(self.clock.now_s() * 1e6)
        return {p: FecStats(corrected_cw=cw // 1000, uncorrectable_cw=0, symbol_errors=cw // 900,
                            pre_fec_ber=1e-9) for p in self.ports}

    def fec_histogram(self, port: str) -> FecHistogram:
        cw = int(self.clock.now_s() * 1e6)
        return FecHistogram([cw, cw // 1000, cw // 10**6] + [0] * 13)

    def interfaces(self) -> dict[str, InterfaceStatus]:
        return {p: InterfaceStatus(p, True, True, 800.0) for p in self.ports}

    def counters(self) -> dict[str, InterfaceCounters]:
        return {p: InterfaceCounters(rx_errors=0, tx_errors=0, rx_discards=0, tx_discards=0)
                for p in self.ports}


class RssProbe:
    """A progress sink that records RSS as the samples pile up."""

    def __init__(self, target: int) -> None:
        self.marks = {int(target * f): f"{f:.0%}" for f in (0.1, 0.5)}
        self.seen: list[tuple[str, int, float]] = []

    def update(self, status: Status) -> None:
        for count, label in list(self.marks.items()):
            if status.samples >= count:
                del self.marks[count]
                self.seen.append((label, status.samples, rss_mb()))

    def event(self, status: Status, event: Event) -> None:
        pass

    def close(self, status: Status) -> None:
        self.seen.append(("100%", status.samples, rss_mb()))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_station(work: Path, samples: int) -> Path:
    devices = "\n".join(f"  sw{i}: {{role: leaf, driver: bench-synthetic}}"
                        for i in range(1, SWITCHES + 1))
    links = []
    for i in range(1, SWITCHES + 1, 2):  # sw1<->sw2, sw3<->sw4, port by port
        links += [f'  - {{a: "sw{i}:Ethernet{8 * p}", b: "sw{i + 1}:Ethernet{8 * p}"}}'
                  for p in range(PORTS)]
    (work / "testbed.yaml").write_text(f"name: bench\ndevices:\n{devices}\nlinks:\n"
                                       + "\n".join(links) + "\n")
    per_port_dom = 2 + 3 * LANES
    per_port_fec = 4 + 16 + 1 + 4  # FEC fields + histogram bins + oper_up + counters
    per_hour = SWITCHES * PORTS * (per_port_dom * 3600 / DOM_PERIOD_S
                                   + per_port_fec * 3600 / FEC_PERIOD_S)
    hours = math.ceil(samples / per_hour * 100) / 100
    (work / "station.yaml").write_text(
        f"station: bench\ntestbed: testbed.yaml\nlimits: {ROOT / 'suites/limits/burnin.yaml'}\n"
        f"duration_h: {hours}\nunits: {{devices: [{', '.join(f'sw{i}' for i in range(1, 5))}]}}"
        f"\nmonitors:\n  dom: {{period_s: {DOM_PERIOD_S}}}\n"
        f"  fec: {{period_s: {FEC_PERIOD_S}, histogram: true}}\n"
        f"  counters: {{period_s: {FEC_PERIOD_S}}}\n")
    return work / "station.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, help="keep the database here (default: a temp dir)")
    args = ap.parse_args()
    register_driver("bench-synthetic", SyntheticSwitch)
    with tempfile.TemporaryDirectory(prefix="burnin-bench-") as tmp:
        work = Path(tmp)
        station = load_station(write_station(work, args.samples))
        db = args.db or work / "bench.db"
        probe = RssProbe(args.samples)
        lab = Lab(load_testbed(station.testbed))
        clock = SteppedTimebase()
        SyntheticSwitch.clock = clock  # the synthetic devices read the run's clock
        rss0 = rss_mb()
        wall0 = time.monotonic()
        outcome = start(station, Options(db=db, progress=probe), Session(lab, clock, lab.close))
        run_s = time.monotonic() - wall0
        store = open_store(outcome.db)
        samples = store.sample_count(outcome.run_id)
        limits = load_limits(station.limits)
        wall1 = time.monotonic()
        report = analyse(store, outcome.run_id, limits)
        written = out.write(report, store, limits, work / "out", plots="failed")
        analysis_s = time.monotonic() - wall1
        after = rss_mb()
        failed = [f"{u.unit.device}:{u.unit.port}" for u in report.units if u.verdict == "FAIL"]
        size_mb = sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20
        store.close()
    print(f"samples stored: {samples:,} in {run_s:.0f} s ({samples / run_s:,.0f}/s), "
          f"database {size_mb:.0f} MB, {len(report.units)} units, failed: {failed}")
    print(f"RSS before the run: {rss0:.0f} MB")
    for label, count, mb in probe.seen:
        print(f"RSS at {label:>4} of the samples ({count:,}): {mb:.0f} MB")
    print(f"RSS after analysis + outputs ({analysis_s:.0f} s, {len(written.plots)} plot): "
          f"{after:.0f} MB")
    peak = peak_mb()
    print(f"peak RSS: {peak:.0f} MB (limit {RSS_LIMIT_MB:.0f} MB)")
    ok = peak < RSS_LIMIT_MB and samples >= args.samples and failed == ["sw2:Ethernet24"]
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
