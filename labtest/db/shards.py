"""A big sweep shared by worker processes on several machines, through PostgreSQL.

:func:`labtest.sweep.sweep` asks many devices at once from one process. For
thousands of switches, split the device list into *shards* in a table and let
any number of workers (processes, machines) pull them:

- :meth:`ShardQueue.plan` writes the shards once (idempotent: every worker may
  call it with the same sweep id and device list);
- :meth:`ShardQueue.claim` takes the next free shard with ``SELECT ... FOR
  UPDATE SKIP LOCKED``: two workers never get the same shard and never wait for
  each other. A claim carries an expiry; a worker that dies (``kill -9``, a
  lost machine) leaves its shard to be claimed again once that expiry passes;
- each answer (or error) per device is stored when its shard's sweep returns,
  unique per (sweep, device): a worker that dies loses only the shard in
  flight, everything it finished is kept, and a shard answered twice (a slow
  worker whose claim expired and came back) keeps the first answer.

``run_worker`` is the loop a worker runs; ``sharded_sweep`` plans, works, and
returns the whole sweep's answers, as :func:`labtest.sweep.sweep` does for one
process. Answers are stored as JSON (records via ``labtest.parsing.to_jsonable``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from labtest import db as dbm

SCHEMA = "labtest_sweeps"
DEFAULT_SHARD_SIZE = 8
DEFAULT_CLAIM_TTL_S = 300.0
POLL_S = 0.5

DDL = """
CREATE TABLE IF NOT EXISTS shards (
    sweep_id text NOT NULL,
    shard integer NOT NULL,
    devices text[] NOT NULL,
    state text NOT NULL DEFAULT 'todo',
    worker text,
    claims integer NOT NULL DEFAULT 0,
    expires timestamptz,
    PRIMARY KEY (sweep_id, shard)
);
CREATE TABLE IF NOT EXISTS answers (
    sweep_id text NOT NULL,
    device text NOT NULL,
    shard integer NOT NULL,
    ok boolean NOT NULL,
    value jsonb,
    error text,
    worker text NOT NULL,
    elapsed_s float8,
    answered timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sweep_id, device)
)
"""


@dataclass(frozen=True)
class Shard:
    sweep_id: str
    shard: int
    devices: list[str]  # the ones still without an answer


@dataclass
class ShardedResult:
    """The whole sweep's answers, from every worker: as ``SweepResult`` but JSON values."""

    ok: dict[str, Any] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # device -> "ErrorType: message"
    by_worker: dict[str, int] = field(default_factory=dict)  # answers per worker
    missing: list[str] = field(default_factory=list)  # planned, not answered (yet)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class ShardQueue:
    """The shards and answers of sweeps in one PostgreSQL database (schema labtest_sweeps)."""

    def __init__(self, url: str) -> None:
        self.display = dbm.display_url(url)
        self._conn: Any = dbm.connect(url, SCHEMA, DDL)
        self._lock = threading.Lock()

    def plan(self, sweep_id: str, devices: Iterable[str],
             shard_size: int = DEFAULT_SHARD_SIZE) -> int:
        """Split ``devices`` into shards of ``shard_size`` (once per sweep id); how many."""
        if shard_size < 1:
            raise ValueError("shard_size must be at least 1")
        names = list(dict.fromkeys(devices))
        rows = [(sweep_id, i, names[k:k + shard_size])
                for i, k in enumerate(range(0, len(names), shard_size))]
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany("INSERT INTO shards (sweep_id, shard, devices) VALUES (%s, %s, %s) "
                            "ON CONFLICT DO NOTHING", rows)
        return len(rows)

    def claim(self, sweep_id: str, worker: str, ttl_s: float = DEFAULT_CLAIM_TTL_S
              ) -> Shard | None:
        """The next free shard (or one whose claim expired), for ``worker``; None: none free."""
        with self._lock, self._conn.transaction():
            row = self._conn.execute(
                "UPDATE shards SET state = 'taken', worker = %s, claims = claims + 1, "
                "expires = clock_timestamp() + make_interval(secs => %s) "
                "WHERE (sweep_id, shard) = (SELECT sweep_id, shard FROM shards "
                "  WHERE sweep_id = %s AND (state = 'todo' OR (state = 'taken' AND "
                "  expires < clock_timestamp())) ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED) "
                "RETURNING shard, ARRAY(SELECT d FROM unnest(devices) AS d WHERE NOT EXISTS "
                "(SELECT 1 FROM answers a WHERE a.sweep_id = shards.sweep_id AND a.device = d))",
                (worker, ttl_s, sweep_id)).fetchone()
        return None if row is None else Shard(sweep_id, int(row[0]), list(row[1]))

    def answer(self, shard: Shard, worker: str, ok: dict[str, Any], failed: dict[str, str],
               elapsed_s: dict[str, float] | None = None) -> None:
        """Store a shard's answers (the first answer per device wins) and mark it done."""
        elapsed_s = elapsed_s or {}
        rows: list[tuple[Any, ...]] = [
            (shard.sweep_id, d, shard.shard, True, json.dumps(v, default=str), None, worker,
             elapsed_s.get(d)) for d, v in ok.items()]
        rows += [(shard.sweep_id, d, shard.shard, False, None, e, worker, elapsed_s.get(d))
                 for d, e in failed.items()]
        with self._lock, self._conn.transaction():
            if rows:
                with self._conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO answers (sweep_id, device, shard, ok, value, error, worker, "
                        "elapsed_s) VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING", rows)
            self._conn.execute(
                "UPDATE shards SET state = 'done', expires = NULL "
                "WHERE sweep_id = %s AND shard = %s AND NOT EXISTS (SELECT 1 FROM unnest(devices) "
                "AS d WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.sweep_id = %s "
                "AND a.device = d))", (shard.sweep_id, shard.shard, shard.sweep_id))

    def open_shards(self, sweep_id: str) -> int:
        """Shards not done yet (free, or claimed by a worker that may still finish them)."""
        with self._lock:
            return int(self._conn.execute(
                "SELECT count(*) FROM shards WHERE sweep_id = %s AND state <> 'done'",
                (sweep_id,)).fetchone()[0])

    def claims(self, sweep_id: str) -> dict[int, tuple[int, str | None]]:
        """Per shard: how many times it was claimed, and by whom last."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT shard, claims, worker FROM shards WHERE sweep_id = %s", (sweep_id,))
            return {int(r[0]): (int(r[1]), r[2]) for r in rows}

    def results(self, sweep_id: str) -> ShardedResult:
        out = ShardedResult()
        with self._lock:
            rows = self._conn.execute(
                "SELECT device, ok, value, error, worker FROM answers WHERE sweep_id = %s "
                "ORDER BY device", (sweep_id,)).fetchall()
            planned = self._conn.execute(
                "SELECT d FROM shards, unnest(devices) AS d WHERE sweep_id = %s "
                "ORDER BY shard", (sweep_id,)).fetchall()
        for device, ok, value, error, worker in rows:
            if ok:
                out.ok[device] = value
            else:
                out.failed[device] = error
            out.by_worker[worker] = out.by_worker.get(worker, 0) + 1
        out.missing = [d for (d,) in planned if d not in out.ok and d not in out.failed]
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def run_worker(queue: ShardQueue, sweep_id: str,
               ask: Callable[[list[str]], Any], *, worker: str | None = None,
               ttl_s: float = DEFAULT_CLAIM_TTL_S, poll_s: float = POLL_S) -> int:
    """Claim and answer shards until the sweep is done; shards this worker answered.

    ``ask(devices)`` returns a ``SweepResult`` (``ok``, ``failed``, ``elapsed_s``), e.g.
    ``lambda names: sweep(lab, names, fn)``. While other workers hold the last shards
    it waits: if one of them dies, its shard becomes free at its claim's expiry.
    """
    from labtest.parsing import to_jsonable

    worker = worker or worker_name()
    done = 0
    while True:
        shard = queue.claim(sweep_id, worker, ttl_s)
        if shard is None:
            if queue.open_shards(sweep_id) == 0:
                return done
            time.sleep(poll_s)
            continue
        result = ask(shard.devices) if shard.devices else None
        ok = {d: to_jsonable(v) for d, v in (result.ok if result else {}).items()}
        failed = {d: f"{type(e).__name__}: {e}" for d, e in (result.failed if result else {})
                  .items()}
        queue.answer(shard, worker, ok, failed, dict(result.elapsed_s) if result else None)
        done += 1


def sharded_sweep(url: str, sweep_id: str, lab: Any, devices: Iterable[str],
                  fn: Callable[[Any], Any], *, shard_size: int = DEFAULT_SHARD_SIZE,
                  ttl_s: float = DEFAULT_CLAIM_TTL_S, **sweep_options: Any) -> ShardedResult:
    """This process's part of a sweep shared through ``url``; run the same call on every
    worker machine (same ``sweep_id`` and devices). Returns every worker's answers."""
    from labtest.sweep import sweep

    queue = ShardQueue(url)
    try:
        queue.plan(sweep_id, devices, shard_size)
        run_worker(queue, sweep_id, lambda names: sweep(lab, names, fn, **sweep_options),
                   ttl_s=ttl_s)
        return queue.results(sweep_id)
    finally:
        queue.close()
