"""Device reservation: leases in a shared SQLite store, file locks on one host, expiry across."""

from __future__ import annotations

import getpass
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from labtest import reservation as r
from labtest.testbed import model

SW1 = {"ssh://10.9.9.1:22": "lab/sw1"}
SW2 = {"ssh://10.9.9.2:22": "lab/sw2"}
BOTH = {**SW1, **SW2}

#: a holder in another process: reserves sw1, then confirms its lease until it is lost
HOLDER = """
import sys, time
from labtest import reservation as r
from labtest.testbed import model
store, ttl_s, host = r.open_store(sys.argv[1]), float(sys.argv[2]), sys.argv[3] or None
lease = r.reserve({"ssh://10.9.9.1:22": "lab/sw1"}, store=store, ttl_s=ttl_s, wait_s=0,
                  run_id="holder-run", host=host)
print("held", flush=True)
while True:
    try:
        lease.confirm()
    except r.LeaseLost as exc:
        print("lost:", exc, flush=True)
        sys.exit(0)
    time.sleep(0.05)
"""


@pytest.fixture
def store(tmp_path: Path) -> r.SqliteLeaseStore:
    return r.SqliteLeaseStore(tmp_path / "leases.db")


def test_a_busy_device_names_its_holder_and_fail_fast_does_not_wait(store) -> None:
    with r.reserve(SW1, store=store, run_id="run-a"):
        start = time.monotonic()
        with pytest.raises(r.DevicesBusy) as busy:
            r.reserve(BOTH, store=store, wait_s=0)
        assert time.monotonic() - start < 2.0  # no poll at all: a wait would sleep first
    text = str(busy.value)
    assert "lab/sw1 held by" in text and "lab/sw2" not in text.split("held by")[0]
    assert f"{getpass.getuser()}@{socket.gethostname()} pid {os.getpid()}" in text
    assert "run run-a" in text and f"since {time.strftime('%Y-')}" in text
    assert busy.value.holders["lab/sw1"].run_id == "run-a"


def test_reservation_is_all_or_nothing(store) -> None:
    with r.reserve(SW1, store=store):
        with pytest.raises(r.DevicesBusy):
            r.reserve(BOTH, store=store, wait_s=0)
        with r.reserve(SW2, store=store, wait_s=0):  # sw2 was not half-taken by the refusal
            assert set(store.holders(BOTH)) == {"lab/sw1", "lab/sw2"}
    assert store.holders(BOTH) == {}


def test_a_waiting_run_is_told_who_holds_and_gets_the_devices_when_freed(store) -> None:
    first = r.reserve(SW1, store=store, run_id="run-a")
    threading.Timer(0.8, first.release).start()
    heard: list[dict[str, r.Holder]] = []
    start = time.monotonic()
    with r.reserve(BOTH, store=store, wait_s=10, on_wait=heard.append):
        waited = time.monotonic() - start
    assert 0.7 < waited < 3.0
    assert [list(h) for h in heard] == [["lab/sw1"]]
    assert heard[0]["lab/sw1"].run_id == "run-a"


def test_waiting_ends_at_the_timeout(store) -> None:
    with r.reserve(SW1, store=store):
        start = time.monotonic()
        with pytest.raises(r.DevicesBusy, match=r"after waiting 1\.\d s"):
            r.reserve(SW1, store=store, wait_s=1.0)
        assert 1.0 <= time.monotonic() - start < 2.5


def test_processes_of_one_run_share_the_hold_until_the_last_leaves(store) -> None:
    worker1 = r.reserve(BOTH, store=store, run_id="xdist-run")
    worker2 = r.reserve(BOTH, store=store, run_id="xdist-run", wait_s=0)
    worker1.release()
    with pytest.raises(r.DevicesBusy):  # still held: worker2 is alive
        r.reserve(SW2, store=store, wait_s=0)
    worker2.release()
    with r.reserve(SW2, store=store, wait_s=0):
        pass


def test_the_heartbeat_keeps_a_short_lease_alive(store) -> None:
    with r.reserve(SW1, store=store, ttl_s=1.2, host="far-away") as lease:
        time.sleep(3.0)  # 2.5 lease times
        assert lease.valid()
        with pytest.raises(r.DevicesBusy):
            r.reserve(SW1, store=store, wait_s=0)


def test_a_lease_removed_from_the_store_is_lost_and_says_why(store) -> None:
    with r.reserve(SW1, store=store) as lease:
        with sqlite3.connect(store.path) as db:
            db.execute("DELETE FROM members")
        with pytest.raises(r.LeaseLost, match=r"lease lost.*removed from the store"):
            lease.confirm()
        assert not lease.valid()


# --- a holder in another process ------------------------------------------------------


def start_holder(store: r.SqliteLeaseStore, ttl_s: float, host: str = "") -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store.path), str(ttl_s), host],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert read_line(child, 20.0) == "held"
    return child


def read_line(child: subprocess.Popen, timeout_s: float) -> str:
    """The child's next output line, or a test failure after ``timeout_s``."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(child.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not box:
        child.kill()
        pytest.fail(f"no output from the holder within {timeout_s} s")
    return box[0].strip()


def kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)


def test_a_holder_killed_on_this_host_frees_the_lab_at_once(store) -> None:
    child = start_holder(store, ttl_s=30.0)
    with pytest.raises(r.DevicesBusy, match=f"pid {child.pid}"):
        r.reserve(SW1, store=store, wait_s=0)
    kill(child)
    with r.reserve(SW1, store=store, wait_s=0):  # its lock file died with it: no expiry wait
        pass


def test_a_holder_killed_elsewhere_frees_the_lab_when_its_lease_expires(store) -> None:
    ttl_s = 1.5
    child = start_holder(store, ttl_s, host="far-away")  # only expiry can tell it died
    kill(child)
    killed = time.monotonic()
    with pytest.raises(r.DevicesBusy, match=r"held by .*@far-away pid"):
        r.reserve(SW1, store=store, wait_s=0)
    with r.reserve(SW1, store=store, wait_s=ttl_s + 5):
        freed_after_s = time.monotonic() - killed
    # it renewed every 50 ms until the kill, so the lease ran out ~ttl later (polled)
    assert ttl_s / 2 <= freed_after_s <= ttl_s + r.POLL_S + 0.5


class FlakyStore:
    """The real store behind a link that can go down (renewals then fail)."""

    def __init__(self, inner: r.SqliteLeaseStore) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str):
        method = getattr(self.inner, name)

        def call(*args, **kwargs):
            if self.down:
                raise r.StoreUnavailable(str(self.inner.path), "lease store unavailable: no route")
            return method(*args, **kwargs)

        return call


def test_a_holder_cut_off_past_its_lease_stops_and_says_so(store) -> None:
    flaky = FlakyStore(store)
    lease = r.reserve(SW1, store=flaky, ttl_s=1.0, host="far-away")
    try:
        flaky.down = True  # its heartbeats fail from now on
        with r.reserve(SW1, store=store, wait_s=5.0) as other:
            # the holder knows on its own, before the store is back
            assert not lease.valid()
            assert "no successful renewal" in lease.lost_reason
            flaky.down = False
            with pytest.raises(r.LeaseLost, match="stopping before touching the devices"):
                lease.confirm()
            assert store.holders(SW1)["lab/sw1"] == other.holder  # it did not take them back
    finally:
        lease.release()


def test_device_keys_follow_the_management_endpoint() -> None:
    tb = model.Testbed.model_validate(
        {
            "name": "lab",
            "devices": {
                "sw1": {"role": "leaf", "driver": "sonic", "address": "10.0.0.1",
                        "ssh": {"username": "admin", "port": 2222}},
                "pdu": {"role": "pdu", "driver": "pdu", "address": "10.0.0.9",
                        "snmp": {"port": 1161}},
                "opm": {"role": "opm", "driver": "opm", "visa": {"resource": "TCPIP::1::INSTR"}},
                "rec": {"role": "leaf", "driver": "sonic", "replay": "rec.jsonl"},
                "bench": {"role": "host", "driver": "manual"},
            },
        }
    )  # fmt: skip
    assert r.testbed_keys(tb) == {
        "ssh://10.0.0.1:2222": "lab/sw1",
        "snmp://10.0.0.9:1161": "lab/pdu",
        "visa://TCPIP::1::INSTR": "lab/opm",
        "testbed://lab/bench": "lab/bench",
    }
