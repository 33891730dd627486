"""A full health sweep of a 64-switch, 2,048-link emulated fabric: concurrent vs one at a time.

    python bench/sweep_fabric.py [--leaves 32] [--spines 32] [--parallel 2] [--workers 64]
                                 [--latency-s 0 1.0] [--in-process] [--tick-s 0]

Builds the fabric in code (every leaf cabled ``--parallel`` times to every
spine: 32 x 32 x 2 = 2,048 links, 64 ports per switch, all SONiC), starts the
emulated lab and prints how long that took, then sweeps DOM + counters + LLDP
of every switch twice on the same lab: one switch at a time (``max_workers=1``)
and concurrently (``--workers``), and prints both times and their ratio.

Two things about the emulated lab shape the numbers, and the bench says so:

- **Where the emulators run.** By default the lab runs in a child process
  (``labtest emulate --out FILE``), so the 64 emulators (SSH, CLI rendering, the
  fabric model) do not share the GIL with the sweep; ``--in-process`` runs them
  in this process for comparison.
- **How long a switch takes to answer.** An emulated switch answers in
  milliseconds, so the sweep is CPU-bound on both sides and 2 cores cap the
  speed-up near 2x whatever the pool size. A real SONiC switch spends about 1 s
  per ``show`` command starting its Python CLI (sonic-net/sonic-buildimage PR
  #26729: "~1 second per call"; PR #12946: "takes long time to execute ~2 sec";
  issue #26827: "~1-3s"), and that waiting is what concurrency removes. Each
  ``--latency-s`` value is one scenario in which every emulated command first
  waits that long (a sleep, no CPU), switched at run time on the same lab.

The model runs on the lab's own exact clock by default. It used to integrate
the whole fabric on every read (~70 ms at 4,096 optics), so this bench ran it
on a clock ticking once per ``--tick-s`` second (the rate at which SONiC
refreshes counters in its database); the model now steps only when a read needs
it (link state, LLDP, DOM and reachability read without a step), and
``--tick-s 1`` remains to compare against that coarse clock (``_coarse_clock``).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from _child import stop  # bench/_child.py: this script's folder is on sys.path

from labtest.lab import Lab
from labtest.sweep import SweepResult, SwitchHealth, health_sweep
from labtest.testbed import load_testbed
from labtest.testbed.model import Testbed

COMMAND_TIMEOUT_S = 30.0  # the SSH default; the emulator fills in the rest of ``ssh:``
START_TIMEOUT_S = 600.0
TARGET_RATIO = 10.0
TARGET_SWEEP_S = 30.0


def fabric_testbed(leaves: int, spines: int, parallel: int) -> Testbed:
    """Every leaf cabled ``parallel`` times to every spine with 400G-DR4 optics."""
    devices: dict[str, Any] = {}
    for i in range(1, leaves + 1):
        devices[f"leaf{i}"] = {"role": "leaf", "driver": "sonic"}
    for i in range(1, spines + 1):
        devices[f"spine{i}"] = {"role": "spine", "driver": "sonic"}
    links = [
        {
            "a": f"leaf{leaf + 1}:Ethernet{(spine * parallel + k) * 8}",
            "b": f"spine{spine + 1}:Ethernet{(leaf * parallel + k) * 8}",
            "speed_gbps": 400,
            "optic": "400G-DR4",
            "length_m": 30,
        }
        for leaf in range(leaves)
        for spine in range(spines)
        for k in range(parallel)
    ]
    return Testbed.model_validate(
        {"name": f"fabric-{leaves}x{spines}x{parallel}", "devices": devices, "links": links}
    )


# --- the emulated lab, shaped for scale ------------------------------------------------------


def _coarse_clock(tick_s: float) -> None:
    """Make the fabric model's real-time clock advance in steps of ``tick_s`` virtual seconds.

    ``tick_s`` <= 0: the exact clock, unpatched (the default).

    Every read of the model first integrates it up to "now"; on a clock that
    moves continuously that is one whole-fabric step per read. Quantised, reads
    within a tick share one step. Applied before the lab is built (the fabric
    module looks its clock class up at construction).
    """
    if tick_s <= 0:
        return
    from labtest.emulation.model import fabric, fabric_core
    from labtest.emulation.model.clock import VirtualClock

    class TickClock(VirtualClock):
        def now_s(self) -> float:
            t = super().now_s()
            return math.floor(t / tick_s) * tick_s if self.realtime else t

    # wherever the model builds its clock (fabric_core since the Fabric split)
    for module in (fabric, fabric_core):
        if hasattr(module, "VirtualClock"):
            module.VirtualClock = TickClock  # type: ignore[misc]


class _Latency:
    """Seconds every emulated command waits, read from a file so it can change mid-run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime_ns = -1
        self._value_s = 0.0

    def value_s(self) -> float:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return 0.0
        if mtime != self._mtime_ns:
            self._mtime_ns = mtime
            self._value_s = float(self.path.read_text().strip() or 0)
        return self._value_s


def _slow_sonic(latency: _Latency) -> None:
    """Register a SONiC personality whose every command takes ``latency`` seconds longer."""
    from labtest.emulation.lab import Served, register_personality
    from labtest.emulation.personalities import sonic

    class Slow:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        @property
        def prompt(self) -> str:
            return self.inner.prompt

        def run(self, command: str) -> Any:
            time.sleep(latency.value_s())
            return self.inner.run(command)

    def serve(fabric: Any, name: str, device: Any) -> Served:
        served = sonic.serve(fabric, name, device)
        inner = served.cli
        assert inner is not None
        served.cli = lambda: Slow(inner())
        return served

    register_personality("sonic", serve)


def serve_lab(testbed_file: Path, out: Path, latency_file: Path, tick_s: float) -> int:
    """The child process: ``labtest emulate TESTBED --out OUT`` with the scale adjustments."""
    from labtest.cli import main

    # paramiko logs every client that hangs up ("Socket exception: Connection reset")
    logging.getLogger("paramiko").setLevel(logging.CRITICAL)
    _coarse_clock(tick_s)
    _slow_sonic(_Latency(latency_file))
    return main(["emulate", str(testbed_file), "--out", str(out)])


@contextmanager
def child_lab(testbed: Testbed, workdir: Path, latency_file: Path, tick_s: float) -> Iterator[Path]:
    """Run the lab in a child process; yield the emulated testbed file it wrote."""
    source = workdir / "fabric.yaml"
    source.write_text(yaml.safe_dump(testbed.model_dump(mode="json", exclude_none=True)))
    out = workdir / "emulated.yaml"
    command = [sys.executable, __file__, "--serve", str(source), "--out", str(out),
               "--latency-file", str(latency_file), "--tick-s", str(tick_s)]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        _wait_for_line(child, "emulated lab", START_TIMEOUT_S)
        yield out
    finally:
        stop(child, partial(child.send_signal, signal.SIGINT), 60, 10)


def _wait_for_line(child: subprocess.Popen[str], prefix: str, timeout_s: float) -> None:
    """Read the child's output until a line starts with ``prefix`` (bounded)."""
    seen, ended = threading.Event(), threading.Event()

    def read() -> None:  # keeps draining the pipe, so the child never blocks on it
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith(prefix):
                seen.set()
        ended.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not seen.wait(0.2):
        if ended.is_set() or time.monotonic() > deadline:
            raise RuntimeError(f"the emulated lab did not come up (exit status {child.poll()})")


@contextmanager
def in_process_lab(testbed: Testbed, latency_file: Path, tick_s: float) -> Iterator[Testbed]:
    from labtest.emulation.lab import EmulatedLab

    _coarse_clock(tick_s)
    _slow_sonic(_Latency(latency_file))
    lab = EmulatedLab(testbed)
    try:
        yield lab.start()
    finally:
        lab.stop()


# --- the measurement -------------------------------------------------------------------------


def timed_sweep(testbed: Testbed, workers: int) -> SweepResult[SwitchHealth]:
    """A full health sweep from a fresh Lab (connections included), checked complete."""
    lab = Lab(testbed)
    try:
        result = health_sweep(lab, max_workers=workers, timeout_s=COMMAND_TIMEOUT_S * 3)
    finally:
        lab.close()
    if result.failed:
        raise SystemExit(f"sweep incomplete:\n{result.summary()}")
    optics = sum(len(h.transceivers or {}) for h in result.ok.values())
    expected = 2 * len(testbed.links)
    if optics != expected:
        raise SystemExit(f"sweep read {optics} optics, the fabric has {expected}")
    return result


def compare(testbed: Testbed, workers: int, latency_s: float, latency_file: Path) -> float:
    latency_file.write_text(f"{latency_s}\n")
    time.sleep(0.05)  # mtime granularity: the next read sees the new value
    serial = timed_sweep(testbed, 1)
    concurrent = timed_sweep(testbed, workers)
    ratio = serial.duration_s / concurrent.duration_s
    n = len(concurrent.ok)
    slowest = max(concurrent.elapsed_s.values())
    print(f"\nscenario: every command waits {latency_s:g} s on the switch")
    print(
        f"  one device at a time: {serial.duration_s:7.2f} s ({serial.duration_s / n:.3f} s/switch)"
    )
    print(f"  concurrent ({workers:>3} workers): {concurrent.duration_s:7.2f} s "
          f"(slowest switch {slowest:.2f} s)")  # fmt: skip
    verdict = (
        "met" if ratio >= TARGET_RATIO and concurrent.duration_s < TARGET_SWEEP_S else "NOT met"
    )
    print(f"  speed-up: {ratio:.1f}x  (target >= {TARGET_RATIO:g}x and < {TARGET_SWEEP_S:g} s: "
          f"{verdict})")  # fmt: skip
    return ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leaves", type=int, default=32)
    ap.add_argument("--spines", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=2, help="links between each leaf and spine")
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--latency-s", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument(
        "--tick-s", type=float, default=0.0, help="coarse model clock (s); 0: exact (default)"
    )
    ap.add_argument("--in-process", action="store_true", help="emulators in this process")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--latency-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        return serve_lab(args.serve, args.out, args.latency_file, args.tick_s)

    testbed = fabric_testbed(args.leaves, args.spines, args.parallel)
    print(f"fabric: {len(testbed.devices)} SONiC switches, {len(testbed.links)} links, "
          f"{2 * len(testbed.links)} optics; {os.cpu_count()} CPUs; emulators "
          f"{'in this process' if args.in_process else 'in a child process'}; model clock "
          f"{f'coarse, {args.tick_s:g} s ticks' if args.tick_s > 0 else 'exact'}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="labtest-sweep-") as tmp:
        workdir = Path(tmp)
        latency_file = workdir / "latency_s"
        latency_file.write_text("0\n")
        start = time.monotonic()
        if args.in_process:
            lab_cm: Any = in_process_lab(testbed, latency_file, args.tick_s)
        else:
            lab_cm = child_lab(testbed, workdir, latency_file, args.tick_s)
        with lab_cm as lab:
            emulated = lab if isinstance(lab, Testbed) else load_testbed(lab)
            print(f"emulated lab started in {time.monotonic() - start:.1f} s")
            for latency_s in args.latency_s:
                compare(emulated, args.workers, latency_s, latency_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
