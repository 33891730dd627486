"""Where the README tests' time goes: CPU and wall per test, per module, per worker.

    PYTHONPATH=bench python -m pytest -q -p pytest_cpu      # records (every xdist worker)
    python bench/pytest_cpu.py [--top 25]                    # prints the breakdown

As a pytest plugin it appends one JSON line per test to ``$PYTEST_CPU_OUT.<pid>``
(default ``pytest-cpu`` in the temporary folder): the CPU of the worker *and* of the
children it reaped (``getrusage``), so an emulated lab run in a child pytest counts
where it was reaped; the wall time; when the test started. A module's fixtures count
in its first test; a background child is charged to the test during which it was
reaped. The report reads those files: totals, each worker's busy time and CPU, the
modules by wall time, and the longest tests with their start on the run's timeline
(the tail shows which group ended the run).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

OUT = os.environ.get("PYTEST_CPU_OUT", os.path.join(tempfile.gettempdir(), "pytest-cpu"))


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu0, wall0, start = _cpu_s(), time.monotonic(), time.time()
    yield
    row = {"id": item.nodeid.split("@")[0], "cpu_s": _cpu_s() - cpu0,
           "wall_s": time.monotonic() - wall0, "start": start}
    with open(f"{OUT}.{os.getpid()}", "a") as f:
        f.write(json.dumps(row) + "\n")


def _rows() -> list[dict[str, Any]]:
    rows = []
    for path in glob.glob(f"{OUT}.*"):
        with open(path) as f:
            rows += [{**json.loads(line), "worker": path.rsplit(".", 1)[1]} for line in f]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25)
    top = ap.parse_args().top
    rows = _rows()
    if not rows:
        raise SystemExit(f"no records at {OUT}.*: run pytest with -p pytest_cpu first")
    t0 = min(r["start"] for r in rows)
    end = max(r["start"] + r["wall_s"] for r in rows) - t0
    print(f"{len(rows)} tests, {sum(r['cpu_s'] for r in rows):.0f} CPU-s, first test to "
          f"last end {end:.0f} s")
    workers: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in rows:
        workers[r["worker"]][0] += r["cpu_s"]
        workers[r["worker"]][1] += r["wall_s"]
        m = modules[r["id"].split("::")[0]]
        m[0], m[1], m[2] = m[0] + r["cpu_s"], m[1] + r["wall_s"], m[2] + 1
    for w, (cpu, wall) in sorted(workers.items()):
        print(f"  worker {w}: busy {wall:.0f} s, {cpu:.0f} CPU-s")
    print(f"\n{'CPU-s':>7} {'wall s':>7} {'tests':>5}  module (by wall)")
    for name, (cpu, wall, n) in sorted(modules.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{cpu:7.1f} {wall:7.1f} {int(n):5d}  {name}")
    print(f"\n{'start':>5} {'wall s':>7} {'CPU-s':>7}  longest tests")
    for r in sorted(rows, key=lambda r: -r["wall_s"])[:top]:
        print(f"{r['start'] - t0:5.0f} {r['wall_s']:7.1f} {r['cpu_s']:7.1f}  {r['id']}")


if __name__ == "__main__":
    main()
