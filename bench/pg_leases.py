"""Device leases in one PostgreSQL shared by many runners: release after kill -9, contention.

Prints three figures (nothing is asserted; the tests in tests/db assert the rules):

1. a holder on "another host" (expiry is the only way to tell it died) is killed
   with ``kill -9``: how long until its devices can be taken, for a lease of
   ``--ttl`` seconds (bound: the lease time plus one poll);
2. ``--runners`` processes each reserving random overlapping pairs of
   ``--devices`` devices for ``--seconds``: holds per second, waits, and
   overlapping holds of one device (must be 0);
3. the latency of a renewal (the heartbeat's and the per-test call), p50 / p99.

    python bench/pg_leases.py [--ttl 3] [--runners 8] [--devices 6] [--seconds 10]
                              [--url postgresql://...]

Without ``--url`` a private server is started (Debian package ``postgresql``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from labtest import reservation as r
from labtest.db.pgserver import database

HOLDER = """
import sys, time
from labtest import reservation as r
lease = r.reserve({"ssh://10.9.0.1:22": "lab/sw1"}, store=r.open_store(sys.argv[1]),
                  ttl_s=float(sys.argv[2]), wait_s=0, host="runner-elsewhere")
print("held", flush=True)
time.sleep(3600)
"""

RUNNER = """
import json, random, sys, time
from labtest import reservation as r
url, name, devices, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
keys = {f"ssh://10.8.1.{i}:22": f"lab/d{i}" for i in range(devices)}
store, rng, log = r.open_store(url), random.Random(name), []
end = time.monotonic() + seconds
while time.monotonic() < end:
    wanted = dict(rng.sample(sorted(keys.items()), 2))
    asked = time.monotonic()
    with r.reserve(wanted, store=store, ttl_s=10, wait_s=60, host=f"host-{name}") as lease:
        start = time.time()
        lease.confirm()
        log.append([sorted(wanted), start, time.time(), time.monotonic() - asked])
store.close()
print(json.dumps(log))
"""


def release_after_kill(url: str, ttl_s: float) -> float:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url, str(ttl_s)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()
        store = r.open_store(url)
        with r.reserve({"ssh://10.9.0.1:22": "lab/sw1"}, store=store, wait_s=ttl_s + 30):
            freed_s = time.monotonic() - killed
        store.close()  # type: ignore[attr-defined]
        return freed_s
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def contention(url: str, runners: int, devices: int, seconds: float) -> dict[str, float]:
    procs = [subprocess.Popen([sys.executable, "-c", RUNNER, url, f"r{i}", str(devices),
                               str(seconds)], stdout=subprocess.PIPE, text=True)
             for i in range(runners)]
    logs = [json.loads(p.communicate(timeout=seconds + 300)[0]) for p in procs]
    spans: dict[str, list[tuple[float, float]]] = {}
    waits = []
    for log in logs:
        for names, start, end, waited_s in log:
            waits.append(waited_s)
            for d in names:
                spans.setdefault(d, []).append((start, end))
    overlaps = sum(1 for items in spans.values()
                   for a, b in zip(sorted(items), sorted(items)[1:], strict=False) if b[0] < a[1])
    holds = sum(len(log) for log in logs)
    return {"holds": holds, "per_s": holds / seconds, "overlaps": overlaps,
            "wait_p50_s": statistics.median(waits),
            "wait_p99_s": sorted(waits)[int(0.99 * (len(waits) - 1))]}


def renew_latency(url: str, n: int = 300) -> tuple[float, float]:
    store = r.open_store(url)
    lease = r.reserve({"ssh://10.9.0.9:22": "lab/sw9"}, store=store, ttl_s=60)
    times = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            lease.confirm()
            times.append(time.perf_counter() - t)
    finally:
        lease.release()
        store.close()  # type: ignore[attr-defined]
    times.sort()
    return times[n // 2] * 1e3, times[int(0.99 * (n - 1))] * 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ttl", type=float, default=3.0)
    ap.add_argument("--runners", type=int, default=8)
    ap.add_argument("--devices", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--url", help="an existing database (default: a private server)")
    args = ap.parse_args(argv)
    with database(args.url) as url:
        freed_s = release_after_kill(url, args.ttl)
        print(f"kill -9 of a holder on another host: devices free after {freed_s:.2f} s "
              f"(lease {args.ttl:g} s, poll {r.POLL_S:g} s)")
        c = contention(url, args.runners, args.devices, args.seconds)
        print(f"{args.runners} runners x {args.seconds:g} s on {args.devices} devices (pairs): "
              f"{c['holds']:.0f} holds, {c['per_s']:.1f} holds/s, waits p50 "
              f"{c['wait_p50_s'] * 1e3:.0f} ms / p99 {c['wait_p99_s'] * 1e3:.0f} ms, "
              f"overlapping holds {c['overlaps']:.0f}")
        p50, p99 = renew_latency(url)
        print(f"renewal (confirm) latency: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
