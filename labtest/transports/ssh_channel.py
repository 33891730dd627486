"""Reading an SSH channel under a deadline: paramiko waits without a timeout for replies
to exec/pty/shell requests, so those waits run under a watchdog that closes the channel at
the deadline, and every read is bounded by it."""

from __future__ import annotations

import heapq
import re
import select
import threading
import time

import paramiko

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def take_marker(stderr: bytearray, marker: str) -> tuple[int | None, bytearray]:
    """Split the ``<marker><pid>`` line the group wrapper writes first from stderr."""
    head = marker.encode()
    if not stderr.startswith(head):
        return None, stderr
    end = stderr.find(b"\n")
    if end < 0:
        return None, bytearray()  # the marker line itself was cut: nothing else arrived
    pid = stderr[len(head) : end].decode(errors="replace")
    return (int(pid) if pid.isdigit() and int(pid) > 1 else None), stderr[end + 1 :]



class Watchdog:
    """Closes a channel at its deadline: paramiko waits unbounded for request replies."""

    def __init__(self, channel: paramiko.Channel, timeout_s: float) -> None:
        self.fired = False
        self.done = False  # fired or left: no close any more
        self.deadline = time.monotonic() + timeout_s
        self._channel = channel
        self._lock = threading.Lock()

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = self.done = True
            self._channel.close()
        _DEADLINES.settled()

    def __enter__(self) -> Watchdog:
        _DEADLINES.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # a close in progress ends first: none races the caller's next read
            if self.done:
                return
            self.done = True
        _DEADLINES.settled()


class _Deadlines:
    """One thread that fires every open watchdog at its deadline. A timer thread per
    command cost about as much CPU as the command's SSH exchange with a fast device
    (issue 19). A fired watchdog closes its channel on a thread of its own, so one slow
    close delays no other deadline; the thread ends a second after the last watchdog."""

    LINGER_S = 1.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Watchdog]] = []
        self._count = 0
        self._live = 0  # watchdogs neither fired nor left
        self._thread: threading.Thread | None = None

    def add(self, dog: Watchdog) -> None:
        with self._cond:
            self._count += 1
            self._live += 1
            heapq.heappush(self._heap, (dog.deadline, self._count, dog))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ssh-watchdog",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def settled(self) -> None:
        with self._cond:
            self._live -= 1
            if self._live <= 0:
                self._heap.clear()  # all left in time
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)  # left in time: dropped when it comes up
                if not self._heap:
                    if not self._cond.wait(self.LINGER_S) and not self._heap:
                        self._thread = None
                        return
                    continue
                left = self._heap[0][0] - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                dog = heapq.heappop(self._heap)[2]
            threading.Thread(target=dog.fire, name="ssh-watchdog-close", daemon=True).start()


_DEADLINES = _Deadlines()


def wait_marker(channel: paramiko.Channel, stdout: bytearray, stderr: bytearray, marker: str,
                deadline: float) -> None:
    """Read on until the group wrapper's whole ``<marker><pid>`` line (its first output on
    stderr) is in, something else came first, the channel ends, or the deadline."""
    head = marker.encode()

    def waiting() -> bool:
        return head.startswith(stderr[: len(head)]) and b"\n" not in stderr

    while waiting():
        if channel.closed or channel.eof_received or not wait_readable(channel, deadline):
            return
        while channel.recv_ready():
            stdout += channel.recv(65536)
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(65536)


def remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


def wait_readable(channel: paramiko.Channel, deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    readable, _, _ = select.select([channel], [], [], remaining)
    return bool(readable)


def pump(channel: paramiko.Channel, stdout: bytearray, stderr: bytearray, deadline: float) -> None:
    """Read both streams until EOF, close or the deadline (both, so neither window stalls)."""
    while True:
        ended = channel.eof_received or channel.closed  # read before draining: no data lost
        while channel.recv_ready():
            stdout += channel.recv(65536)
        while channel.recv_stderr_ready():
            stderr += channel.recv_stderr(65536)
        if ended or not wait_readable(channel, deadline):
            return


def read_until_prompt(
    channel: paramiko.Channel, prompt_re: re.Pattern[str], deadline: float
) -> tuple[bytes, bool]:
    """Read until the last line matches the prompt; (data, whether the prompt was seen)."""
    data = bytearray()
    while True:
        ended = channel.eof_received or channel.closed
        while channel.recv_ready():
            data += channel.recv(65536)
        last_line = data[data.rfind(b"\n") + 1 :].decode(errors="replace")
        if prompt_re.search(ANSI.sub("", last_line).replace("\r", "")):
            return bytes(data), True
        if ended or not wait_readable(channel, deadline):
            return bytes(data), False


def lf_text(data: bytes | bytearray) -> str:
    """Decoded, with LF line ends."""
    return data.decode(errors="replace").replace("\r\n", "\n")


def clean(data: bytes) -> str:
    """Terminal output as plain text: LF line ends, no stray CR, no ANSI control sequences."""
    return ANSI.sub("", data.decode(errors="replace")).replace("\r\n", "\n").replace("\r", "")


def strip_echo(body: str, command: str) -> str:
    first, newline, rest = body.partition("\n")
    if command.strip() and first.strip().endswith(command.strip()):
        body = rest if newline else ""
    return body + "\n" if body else ""
