"""A sweep sharded across worker processes through PostgreSQL (FOR UPDATE SKIP LOCKED)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from labtest.db.shards import ShardQueue, run_worker, sharded_sweep
from labtest.errors import TransportTimeout
from labtest.lab import Lab
from labtest.registry import register_driver
from labtest.sweep import SweepResult
from labtest.testbed import model

DEVICES = [f"sw{i:03d}" for i in range(60)]

#: a worker process: answers shards (device -> its number), "dead" is unreachable
WORKER = """
import sys, time
from labtest.db.shards import ShardQueue, run_worker
from labtest.errors import TransportTimeout
from labtest.sweep import SweepResult
url, name, hang = sys.argv[1], sys.argv[2], sys.argv[3] == "hang"
queue = ShardQueue(url)
shards = 0

def ask(devices):
    global shards
    shards += 1
    if hang and shards == 2:  # the second shard: claim it, then stop dead
        print("holding", flush=True)
        time.sleep(600)
    time.sleep(0.05)
    r = SweepResult()
    for d in devices:
        if d == "sw013":
            r.failed[d] = TransportTimeout(d, "no answer in 1 s")
        else:
            r.ok[d] = {"n": int(d[2:]), "by": name}
    return r

print(run_worker(queue, "sweep-1", ask, worker=name, ttl_s=float(sys.argv[4]), poll_s=0.1),
      flush=True)
"""


def _worker(url: str, name: str, hang: bool, ttl_s: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER, url, name,
                             "hang" if hang else "-", str(ttl_s)],
                            stdout=subprocess.PIPE, text=True)


def test_workers_share_the_shards_and_a_dead_ones_shard_is_taken_over(pg_url: str) -> None:
    queue = ShardQueue(pg_url)
    assert queue.plan("sweep-1", DEVICES, shard_size=4) == 15
    assert queue.plan("sweep-1", DEVICES, shard_size=4) == 15  # every worker may plan: once
    doomed = _worker(pg_url, "doomed", hang=True, ttl_s=2.0)
    try:
        assert doomed.stdout is not None and doomed.stdout.readline().strip() == "holding"
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait()
        workers = [_worker(pg_url, f"w{i}", hang=False, ttl_s=30.0) for i in range(3)]
        counts = []
        for w in workers:
            out, _ = w.communicate(timeout=120)
            assert w.returncode == 0
            counts.append(int(out.strip().splitlines()[-1]))
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
        if doomed.stdout is not None:
            doomed.stdout.close()
    result = queue.results("sweep-1")
    assert result.missing == []
    assert sorted(result.ok) == [d for d in DEVICES if d != "sw013"]
    assert all(v["n"] == int(d[2:]) for d, v in result.ok.items())
    assert result.failed == {"sw013": "TransportTimeout: [sw013] no answer in 1 s"}
    assert result.by_worker["doomed"] == 4  # its finished shard is kept
    assert sum(counts) == 14  # every other shard once, the dead one's taken over
    claims = queue.claims("sweep-1")
    taken_twice = [s for s, (n, _) in claims.items() if n == 2]
    assert len(taken_twice) == 1 and claims[taken_twice[0]][1] in {"w0", "w1", "w2"}
    assert queue.open_shards("sweep-1") == 0
    queue.close()


def test_a_late_answer_from_an_expired_claim_does_not_overwrite(pg_url: str) -> None:
    queue = ShardQueue(pg_url)
    queue.plan("s2", ["a", "b"], shard_size=2)
    slow = queue.claim("s2", "slow", ttl_s=0.2)
    assert slow is not None and slow.devices == ["a", "b"]
    assert queue.claim("s2", "fast", ttl_s=30) is None  # still claimed
    time.sleep(0.4)
    fast = queue.claim("s2", "fast", ttl_s=30)
    assert fast is not None and fast.shard == slow.shard
    queue.answer(fast, "fast", {"a": 1, "b": 2}, {})
    queue.answer(slow, "slow", {"a": 100, "b": 200}, {})
    assert queue.results("s2").ok == {"a": 1, "b": 2}
    assert run_worker(queue, "s2", lambda names: SweepResult(), worker="late") == 0
    assert json.dumps(queue.results("s2").by_worker) == '{"fast": 2}'
    queue.close()


class EchoSwitch:
    """A driver answering with a record (a dataclass), as real capability calls do."""

    def __init__(self, name, device, testbed) -> None:
        self.name = name

    def facts(self):
        from labtest.capabilities.switch import Facts

        if self.name == "sw4":
            raise TransportTimeout(self.name, "no answer")
        return Facts(vendor="acme", model="x", os_version="1", serial=f"SN-{self.name}",
                     hostname=self.name)

    def close(self) -> None:
        pass


def test_sharded_sweep_on_a_lab_returns_every_answer_as_json(pg_url: str) -> None:
    register_driver("shard-echo", EchoSwitch)
    names = [f"sw{i}" for i in range(10)]
    tb = model.Testbed.model_validate(
        {"name": "floor", "devices": {n: {"role": "leaf", "driver": "shard-echo"}
                                      for n in names}})
    lab = Lab(tb)
    try:
        result = sharded_sweep(pg_url, "facts-1", lab, names, lambda d: d.facts(),
                               shard_size=3, max_workers=2, timeout_s=10)
    finally:
        lab.close()
    assert sorted(result.ok) == sorted(n for n in names if n != "sw4")
    assert result.ok["sw7"]["serial"] == "SN-sw7"
    assert result.failed == {"sw4": "TransportTimeout: [sw4] no answer"}
    assert result.missing == []
