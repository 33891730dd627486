"""Device leases, the same tests on both backends: a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labtest import reservation as r

SW1 = {"ssh://10.9.9.1:22": "lab/sw1"}
SW2 = {"ssh://10.9.9.2:22": "lab/sw2"}
BOTH = {**SW1, **SW2}

#: a holder in another process (playing another host: only expiry can tell it died)
HOLDER = """
import sys, time
from labtest import reservation as r
store = r.open_store(sys.argv[1])
lease = r.reserve({"ssh://10.9.9.1:22": "lab/sw1", "ssh://10.9.9.2:22": "lab/sw2"},
                  store=store, ttl_s=float(sys.argv[2]), wait_s=0, run_id="doomed",
                  host="runner-elsewhere")
print("held", flush=True)
while True:
    time.sleep(0.1)
    lease.confirm()
"""

#: a runner that reserves overlapping pairs of devices again and again, logging when it held
WORKER = """
import json, random, sys, time
from labtest import reservation as r
url, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
devices = {f"ssh://10.8.0.{i}:22": f"lab/d{i}" for i in range(3)}
store = r.open_store(url)
rng = random.Random(name)
log = []
for _ in range(rounds):
    keys = dict(rng.sample(sorted(devices.items()), 2))
    with r.reserve(keys, store=store, ttl_s=10, wait_s=60, host=f"host-{name}") as lease:
        start = time.time()
        time.sleep(0.05)
        lease.confirm()
        log.append([sorted(keys), start, time.time()])
print(json.dumps(log))
"""


@pytest.fixture
def store(backend: str):
    """The backend's lease store, its server connection closed afterwards."""
    opened = r.open_store(backend)
    yield opened
    close = getattr(opened, "close", None)
    if close is not None:
        close()


def test_a_busy_device_names_its_holder_and_fail_fast_does_not_wait(store) -> None:
    with r.reserve(SW1, store=store, run_id="run-a"):
        with pytest.raises(r.DevicesBusy) as busy:
            r.reserve(BOTH, store=store, wait_s=0)
        assert busy.value.holders["lab/sw1"].run_id == "run-a"
        assert "lab/sw2" not in busy.value.holders
        assert "lab/sw1 held by" in str(busy.value) and "run run-a" in str(busy.value)


def test_all_or_nothing_and_release_frees(store) -> None:
    with r.reserve(SW1, store=store, run_id="run-a"):
        with pytest.raises(r.DevicesBusy):
            r.reserve(BOTH, store=store, wait_s=0, run_id="run-b")
        with r.reserve(SW2, store=store, wait_s=0, run_id="run-c"):  # run-b took no half
            assert store.holders(BOTH)["lab/sw2"].run_id == "run-c"
    assert store.holders(BOTH) == {}
    with r.reserve(BOTH, store=store, wait_s=0, run_id="run-b"):
        assert {h.run_id for h in store.holders(BOTH).values()} == {"run-b"}


def test_members_of_one_run_share_the_hold_until_the_last_leaves(store) -> None:
    first = r.reserve(BOTH, store=store, run_id="xdist-run")
    second = r.reserve(BOTH, store=store, run_id="xdist-run", wait_s=0)
    first.release()
    with pytest.raises(r.DevicesBusy):
        r.reserve(SW1, store=store, wait_s=0)
    second.confirm()
    second.release()
    assert store.holders(BOTH) == {}


def test_lease_list_shows_holders_and_release_takes_devices_away(store) -> None:
    lease = r.reserve(BOTH, store=store, run_id="run-l", ttl_s=30, host="ci-07")
    try:
        rows = store.leases()
        assert [(x.label, x.run_id, x.host) for x in rows] == [
            ("lab/sw1", "run-l", "ci-07"), ("lab/sw2", "run-l", "ci-07")]
        assert all(x.pid == os.getpid() and x.since_s <= x.expires_s for x in rows)
        assert 20 < rows[0].expires_s - time.time() <= 30.5
        assert store.release_run("run-l") == 2
        assert store.leases() == []
        with pytest.raises(r.LeaseLost, match="removed from the store"):
            lease.confirm()
    finally:
        lease.release()


def test_an_expired_member_loses_its_lease_and_frees_its_devices(store) -> None:
    lease = r.reserve(SW1, store=store, run_id="slow", ttl_s=0.6, host="frozen-host")
    lease._stop.set()  # the heartbeat stops, as in a frozen VM
    time.sleep(1.0)
    with r.reserve(SW1, store=store, wait_s=0, run_id="next"), pytest.raises(r.LeaseLost):
        lease.confirm()
    lease.release()


def test_kill_9_of_a_holder_on_another_host_frees_its_devices_within_its_lease(
    backend: str, store, tmp_path: Path
) -> None:
    ttl_s = 3.0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, backend, str(ttl_s)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()
        with pytest.raises(r.DevicesBusy) as busy:  # not yet: only expiry can tell
            r.reserve(BOTH, store=store, wait_s=0)
        assert busy.value.holders["lab/sw1"].host == "runner-elsewhere"
        with r.reserve(BOTH, store=store, wait_s=ttl_s + 2 * r.POLL_S, run_id="after"):
            freed_s = time.monotonic() - killed
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    print(f"devices free {freed_s:.2f} s after kill -9 (lease {ttl_s:g} s)")
    assert freed_s <= ttl_s + 2 * r.POLL_S


def test_concurrent_runners_never_hold_an_overlapping_device(backend: str) -> None:
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, backend, f"w{i}", "15"],
                         stdout=subprocess.PIPE, text=True)
        for i in range(3)
    ]
    logs = []
    for w in workers:
        out, _ = w.communicate(timeout=240)
        assert w.returncode == 0
        logs.append(json.loads(out))
    assert all(len(log) == 15 for log in logs)
    spans: dict[str, list[tuple[float, float, int]]] = {}
    for who, log in enumerate(logs):
        for devices, start, end in log:
            for d in devices:
                spans.setdefault(d, []).append((start, end, who))
    overlaps = [
        (d, a, b)
        for d, items in spans.items()
        for a, b in zip(sorted(items), sorted(items)[1:], strict=False)
        if b[0] < a[1]
    ]
    assert overlaps == []
    assert sum(len(v) for v in spans.values()) == 3 * 15 * 2
