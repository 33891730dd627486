"""Chaos bench (issue 36 item 6): kill a run at a random moment, then check that the next
run reports and removes what it left, passes, and leaves nothing itself.

Each round starts a *victim* in its own process group, as a shell starts a job: a small
``labtest run`` on the emulated default lab, every few rounds one on the kernel lab, or a
short ``labtest burnin --emulate``. At a random moment (0 .. the kind's typical wall) it
sends one of

* ``KILL``       SIGKILL to the labtest process only (``kill -9 PID``, the OOM killer),
* ``KILL-group`` SIGKILL to its whole process group (a CI job's timeout, ``kill -9 -PGID``):
                 nothing of it can clean up, the next run must,
* ``INT``        SIGINT to the labtest process only (``kill -INT PID``),
* ``INT-group``  SIGINT to the whole process group (Ctrl-C in a terminal),

waits for the labtest process to end (SIGKILLs it after 120 s: a hang), and lists what is
left of it: processes of its tree (every descendant seen while it ran, still alive with
the same start time), the run records its tree wrote (``labtest.runs``) and what they
name (namespaces, the processes inside them, folders), veths and nft tables in the host
namespace carrying a run id. Then the *next run* (the same command, not killed) must
report the leftovers it reaped in one line, pass, and after it nothing of either run may
be left. Whatever is still left then is removed by the bench (it kills only processes of
the trees it started) so rounds stay independent, and counted as a defect.

Prints figures, asserts nothing timed. Needs root for the kernel rounds (skipped
otherwise). Run one at a time on a shared machine::

    .venv/bin/python bench/chaos.py --seed 7 --rounds 15 --kernel-every 5 --burnin 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from labtest import runs  # noqa: E402

LABTEST = str(Path(sys.executable).parent / "labtest")
KERNEL_TESTBED = REPO / "testbeds" / "kernel" / "leafspine.yaml"
REAPED_RE = re.compile(r"^labtest: removed leftovers of .*$", re.M)
EXIT_WAIT_S = 120.0
TREE_WAIT_S = 30.0  # after the labtest process ended, for its children to end
SIGNALS = ("KILL", "KILL-group", "INT", "INT-group")

STATION = """\
station: chaos-short
testbed: {repo}/testbeds/emulated/leafspine.yaml
limits: {repo}/suites/limits/burnin.yaml
duration_h: 6
units:
  devices: [spine1, spine2, leaf1, leaf2, leaf3, leaf4]
  optics: all
load:
  kind: prbs
  pattern: PRBS31Q
monitors:
  dom: {{period_s: 600}}
  fec: {{period_s: 1800, histogram: true}}
  counters: {{period_s: 1800}}
  prbs: {{period_s: 3600}}
storage:
  path: {work}/burnin.db
output: {work}/burnin-out
"""


def command(kind: str, work: Path) -> list[str]:
    if kind == "emulated":
        return [LABTEST, "run", "--suite", "cabling", "--suite", "link"]
    if kind == "kernel":
        return [LABTEST, "run", "--testbed", str(KERNEL_TESTBED), "--suite", "cabling"]
    station = work / "station.yaml"
    if not station.exists():
        station.write_text(STATION.format(repo=REPO, work=work))
    return [LABTEST, "burnin", str(station), "--emulate", "--plots", "none"]


# --- what a tree of processes leaves ---------------------------------------------------------


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, start ticks, state) of a live process."""
    try:
        _head, tail = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    except (OSError, ValueError):
        return None
    fields = tail.split()
    return int(fields[1]), int(fields[19]), fields[0]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:100]
    except OSError:
        return "?"


class Tracker(threading.Thread):
    """Every descendant of ``root`` (by PID and start time) and every run record they
    wrote, polled until stopped: a child reparented after its parent died is kept."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.procs: dict[int, tuple[int, str]] = {}  # pid -> (start ticks, cmdline)
        st = _stat(root)
        if st is not None:
            self.procs[root] = (st[1], _cmdline(root))
        self.records: dict[str, dict] = {}  # run id -> record
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._halt.is_set():
            self.poll()
            self._halt.wait(0.1)

    def poll(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if pid in self.procs:
                continue
            st = _stat(pid)
            if st is not None and st[0] in self.procs and self.alive(st[0]):
                self.procs[pid] = (st[1], _cmdline(pid))
        folder = runs.state_dir()
        if folder.is_dir():
            for path in folder.glob("*.json"):
                try:
                    rec = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                if rec.get("pid") in self.procs:
                    self.records.setdefault(rec["id"], rec)

    def alive(self, pid: int) -> bool:
        st = _stat(pid)
        return st is not None and st[2] != "Z" and self.procs.get(pid, (None,))[0] == st[1]

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.poll()


@dataclass
class Left:
    processes: list[str] = field(default_factory=list)  # "pid cmdline"
    records: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    ns_processes: list[int] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    host_links: list[str] = field(default_factory=list)
    nft: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not any(vars(self).values())

    def short(self) -> str:
        parts = [f"{len(v)} {k.replace('_', ' ')}" for k, v in vars(self).items() if v]
        return ", ".join(parts) or "nothing"

    def detail(self) -> str:
        out = []
        for k, v in vars(self).items():
            if v:
                out.append(f"{k}: {', '.join(map(str, v[:6]))}{' ...' if len(v) > 6 else ''}")
        return "; ".join(out)


def _lines(cmd: list[str]) -> list[str]:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return res.stdout.splitlines()


def leftovers(trackers: list[Tracker]) -> Left:
    left = Left()
    for tr in trackers:
        tr.poll()
        for pid, (_, cmd) in sorted(tr.procs.items()):
            if tr.alive(pid):
                left.processes.append(f"{pid} {cmd}")
    ids = {rid for tr in trackers for rid in tr.records}
    if not ids:
        return left
    state = runs.state_dir()
    left.records = sorted(rid for rid in ids if (state / f"{rid}.json").exists())
    netns = [line.split()[0] for line in _lines(["ip", "netns", "list"]) if line.strip()]
    left.namespaces = sorted(n for n in netns if any(rid in n for rid in ids))
    for name in left.namespaces:
        left.ns_processes += [int(p) for p in _lines(["ip", "netns", "pids", name]) if p.strip()]
    folders = {f for tr in trackers for rec in tr.records.values() for f in rec["folders"]}
    tmp = Path(tempfile.gettempdir())
    for rid in ids:
        folders |= {str(p) for p in tmp.glob(f"*{rid}*")}
        folders |= {str(p) for p in Path("/var/run/frr").glob(f"*{rid}*")}
    left.folders = sorted(f for f in folders if Path(f).exists())
    links = _lines(["ip", "-o", "link", "show"])
    left.host_links = [ln.split(":")[1].strip() for ln in links if any(r in ln for r in ids)]
    left.nft = [ln for ln in _lines(["nft", "list", "tables"]) if any(r in ln for r in ids)]
    return left


def sweep(trackers: list[Tracker], work: Path) -> None:
    """Remove what is left (a defect already counted): our trees' processes, then records."""
    for tr in trackers:
        for pid in list(tr.procs):
            if tr.alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        tr.alive(p) for tr in trackers for p in tr.procs
    ):
        time.sleep(0.1)
    subprocess.run([LABTEST, "emulate", "--clean"], cwd=work, capture_output=True, timeout=120)


# --- one round ------------------------------------------------------------------------------


@dataclass
class Round:
    n: int
    kind: str
    signal: str
    moment_s: float
    exit: str = ""
    unwind_s: float = 0.0  # signal -> its whole tree ended (or TREE_WAIT_S more)
    left: Left = field(default_factory=Left)
    reaped: str = ""
    verdict: str = ""
    next_wall_s: float = 0.0
    after: Left = field(default_factory=Left)


def _verdict(kind: str, rc: int, out: str) -> str:
    if kind == "burnin":
        m = re.search(r"^(\d+) units: (.*)$", out, re.M)
        ok = rc == 0 and m is not None and m.group(2).strip() == f"{m.group(1)} PASS"
        return "PASS" if ok else f"FAIL (exit {rc})"
    m = re.search(r"^verdict: (\w+)", out, re.M)
    return m.group(1) if m and rc == 0 else f"{m.group(1) if m else 'none'} (exit {rc})"


def victim(n: int, kind: str, sig: str, moment: float, work: Path) -> tuple[Tracker, str, float]:
    with open(work / f"victim-{n}.log", "wb") as out:
        p = subprocess.Popen(
            command(kind, work), cwd=work, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    tr = Tracker(p.pid)
    try:
        p.wait(timeout=moment)
        return tr, f"ended first (exit {p.returncode})", 0.0
    except subprocess.TimeoutExpired:
        pass
    sent = time.monotonic()
    kill = os.killpg if sig.endswith("-group") else os.kill
    kill(p.pid, signal.SIGKILL if sig.startswith("KILL") else signal.SIGINT)
    try:
        rc = p.wait(timeout=EXIT_WAIT_S)
        how = f"exit {rc}"
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        how = f"HUNG {EXIT_WAIT_S:.0f} s, killed"
    # its children unwind (the pytest child stops its lab): the tree's end, at most 30 s
    deadline = time.monotonic() + TREE_WAIT_S
    while any(tr.alive(pid) for pid in list(tr.procs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return tr, how, time.monotonic() - sent


def next_run(kind: str, work: Path) -> tuple[Tracker, str, str, float, str]:
    began = time.monotonic()
    p = subprocess.Popen(
        command(kind, work), cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, text=True,
    )
    tr = Tracker(p.pid)
    out, _ = p.communicate()
    wall = time.monotonic() - began
    tr.stop()
    reaped = REAPED_RE.findall(out)
    return tr, " | ".join(reaped), _verdict(kind, p.returncode, out), wall, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=15, help="rounds in all")
    ap.add_argument("--kernel-every", type=int, default=5, help="every Nth round: kernel lab")
    ap.add_argument("--burnin", type=int, default=3, help="rounds of labtest burnin")
    ap.add_argument("--wall", type=float, nargs=3, default=(13.0, 16.0, 11.0),
                    metavar=("EMU", "KERNEL", "BURNIN"), help="typical walls (s)")
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    rng = random.Random(seed)
    root = os.geteuid() == 0
    work = args.work or Path(tempfile.mkdtemp(prefix="labtest-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    typical = dict(zip(("emulated", "kernel", "burnin"), args.wall, strict=True))
    kinds = []
    burnin_at = set(rng.sample(range(args.rounds), min(args.burnin, args.rounds)))
    for i in range(args.rounds):
        if i in burnin_at:
            kinds.append("burnin")
        elif root and args.kernel_every and i % args.kernel_every == args.kernel_every - 1:
            kinds.append("kernel")
        else:
            kinds.append("emulated")
    print(f"chaos: seed {seed}, {args.rounds} rounds ({kinds.count('emulated')} emulated, "
          f"{kinds.count('kernel')} kernel, {kinds.count('burnin')} burnin), work {work}"
          f"{'' if root else '; not root: no kernel rounds'}", flush=True)
    done: list[Round] = []
    for i, kind in enumerate(kinds, 1):
        sig = rng.choice(SIGNALS)
        moment = round(rng.uniform(0, typical[kind]), 2)
        r = Round(i, kind, sig, moment)
        vt, r.exit, r.unwind_s = victim(i, kind, sig, moment, work)
        r.left = leftovers([vt])
        nt, r.reaped, r.verdict, r.next_wall_s, out = next_run(kind, work)
        vt.stop()
        r.after = leftovers([vt, nt])
        print(f"round {i:2} {kind:8} {sig:9} at {moment:5.2f} s: {r.exit}"
              f"{f' after {r.unwind_s:.1f} s' if r.unwind_s else ''}; left: {r.left.short()}",
              flush=True)
        if not r.left.empty():
            print(f"         left: {r.left.detail()}", flush=True)
        print(f"         next run: {r.verdict} in {r.next_wall_s:.1f} s; "
              f"reaped: {r.reaped or '-'}; after it: {r.after.short()}", flush=True)
        if not r.after.empty():
            print(f"         AFTER: {r.after.detail()}", flush=True)
            sweep([vt, nt], work)
        if not r.verdict.startswith("PASS"):
            (work / f"next-{i}.log").write_text(out)
            print(f"         next run's output: {work / f'next-{i}.log'}", flush=True)
        done.append(r)
    print()
    print(f"summary (seed {seed}):")
    for sig in SIGNALS:
        rs = [r for r in done if r.signal == sig]
        print(f"  {sig:9} {len(rs):2} rounds, "
              f"{sum(not r.left.empty() for r in rs):2} left something")
    left = [r for r in done if not r.left.empty()]
    reaped = [r for r in left if r.reaped]
    print(f"  leftovers after the kill: {len(left)} of {len(done)} rounds "
          f"({sum(len(r.left.processes) for r in done)} tree processes, "
          f"{sum(len(r.left.namespaces) for r in done)} namespaces, "
          f"{sum(len(r.left.ns_processes) for r in done)} processes in them, "
          f"{sum(len(r.left.folders) for r in done)} folders, "
          f"{sum(len(r.left.records) for r in done)} records)")
    print(f"  reported and reaped by the next run: {len(reaped)} of {len(left)}")
    print(f"  next runs PASS: {sum(r.verdict == 'PASS' for r in done)} of {len(done)}; "
          f"nothing left after them: {sum(r.after.empty() for r in done)} of {len(done)}")
    hung = [r for r in done if r.exit.startswith("HUNG")]
    print(f"  hung after the signal: {len(hung)}; "
          f"longest unwind {max((r.unwind_s for r in done), default=0):.1f} s")
    walls = sorted(r.next_wall_s for r in done)
    if walls:
        print(f"  next-run wall: median {walls[len(walls) // 2]:.1f} s, max {walls[-1]:.1f} s")
    bad = [r for r in done if r.verdict != "PASS" or not r.after.empty() or r in hung]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
