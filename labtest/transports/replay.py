"""Record a device session to a file and answer from it later.

A session captured on a real lab becomes a CI fixture: ``--record DIR`` writes
one JSON-lines file per device (``DIR/<device>.jsonl``), and a testbed device
with ``replay: FILE`` answers from it. A command asked several times replays
its answers in the recorded order and then keeps giving the last one, so a
"counters before / counters after" test sees the same change it saw on the
real lab. Secrets are scrubbed before anything is written.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from labtest.errors import InfraError
from labtest.secrets import redact
from labtest.transports.ssh import CommandResult


class ReplayMissing(InfraError):
    """The recording has no answer for what the driver asked."""


class SessionRecorder:
    """Appends every exchange of one device to ``path`` as one JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def ssh(
        self,
        command: str,
        output: str,
        exit_status: int | None,
        duration_s: float,
        stderr: str = "",
    ) -> None:
        entry = {"kind": "ssh", "command": command, "output": output, "exit_status": exit_status}
        self._write({**entry, "stderr": stderr, "duration_s": round(duration_s, 6)})

    def snmp(self, op: str, request: Any, answer: Any) -> None:
        self._write({"kind": f"snmp-{op}", "request": request, "answer": answer})

    def _write(self, entry: dict[str, Any]) -> None:
        line = redact(json.dumps(entry))
        with self._lock, self.path.open("a") as fh:
            fh.write(line + "\n")


class RecordingSnmp:
    """An SNMP transport that records each get and walk it forwards."""

    def __init__(self, inner: Any, recorder: SessionRecorder) -> None:
        self.inner = inner
        self.recorder = recorder

    def get(self, *oids: str, missing_ok: bool = False) -> dict[str, Any]:
        answer: dict[str, Any] = self.inner.get(*oids, missing_ok=missing_ok)
        self.recorder.snmp("get", list(oids), answer)
        return answer

    def walk(self, oid: str, max_repetitions: int = 50) -> list[tuple[str, Any]]:
        answer: list[tuple[str, Any]] = self.inner.walk(oid, max_repetitions)
        self.recorder.snmp("walk", oid, [list(row) for row in answer])
        return answer

    def close(self) -> None:
        self.inner.close()


class Replay:
    """Answers from a recording; what was never recorded raises ``ReplayMissing``."""

    def __init__(self, device: str, path: Path) -> None:
        self.device = device
        self.path = path
        self._answers: dict[tuple[str, str], deque[Any]] = defaultdict(deque)
        self._lock = threading.Lock()
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ReplayMissing(device, f"cannot read recording {path}: {exc.strerror}") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = self._key(entry)
            except (ValueError, KeyError) as exc:
                raise ReplayMissing(
                    device, f"{path}:{number}: not a recording line ({exc})", raw=line
                ) from None
            self._answers[key].append(entry)

    @staticmethod
    def _key(entry: dict[str, Any]) -> tuple[str, str]:
        if entry["kind"] == "ssh":
            return ("ssh", " ".join(entry["command"].split()))
        return (entry["kind"], json.dumps(entry["request"]))

    def _next(self, key: tuple[str, str], what: str) -> dict[str, Any]:
        with self._lock:
            queue = self._answers.get(key)
            if not queue:
                raise ReplayMissing(
                    self.device, f"{self.path.name} has no recorded answer to {what}"
                )
            entry: dict[str, Any] = queue.popleft() if len(queue) > 1 else queue[0]
            return entry

    # the SSH side (same shape as SshTransport.exec)
    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult:
        entry = self._next(("ssh", " ".join(command.split())), f"command {command!r}")
        return CommandResult(entry["output"], entry.get("stderr", ""), entry["exit_status"], 0.0)

    # the SNMP side (same shape as SnmpTransport.get / walk)
    def get(self, *oids: str, missing_ok: bool = False) -> dict[str, Any]:
        answer: dict[str, Any] = self._next(("snmp-get", json.dumps(list(oids))),
                                            f"SNMP get {list(oids)}")["answer"]
        return answer

    def walk(self, oid: str, max_repetitions: int = 50) -> list[tuple[str, Any]]:
        rows = self._next(("snmp-walk", json.dumps(oid)), f"SNMP walk {oid}")["answer"]
        return [tuple(row) for row in rows]

    def close(self) -> None:
        pass
