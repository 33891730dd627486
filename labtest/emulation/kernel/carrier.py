"""A wire's carrier follows its ends, as light does on a cable.

A link re-cabled through a wire namespace (``KernelLab.through_wire``) is two veth
pairs. Shutting one end took the carrier of the wire's near side only: the far end
stayed oper up, where on a cable it loses light. The failover suite then waited its
whole recovery bound for the far end to go down on every event at a wired link (60 s
each, about two minutes of every gray-fault case of the kernel campaign), and a far
switch that reroutes on loss of carrier never saw one.

The relay watches each end's port (``ip monitor link`` in the end's namespace) and
holds the wire's side facing the *other* end up exactly while this end is
administratively up. It reads only the ends' admin state, which it never sets, so it
cannot lock itself down.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
from dataclasses import dataclass, field

from labtest import netns as ns

#: "2: Ethernet0@if5: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu ..." (``ip -o monitor link``)
_LINE = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>")
STOP_S = 5.0


def admin_up(line: str, port: str) -> bool | None:
    """The port's administrative state in one ``ip -o link``/``monitor link`` line, or
    None when the line is about another interface (or a deletion)."""
    if line.startswith("Deleted"):
        return None
    m = _LINE.match(line.strip())
    if m is None or m["name"] != port:
        return None
    return "UP" in m["flags"].split(",")


@dataclass(frozen=True)
class End:
    netns: str
    port: str


@dataclass
class CarrierRelay:
    """``a`` and ``b`` are the link's ends; ``wire_a``/``wire_b`` the wire namespace's
    ports facing them."""

    wire: str
    a: End
    b: End
    wire_a: str
    wire_b: str
    _procs: list[subprocess.Popen[str]] = field(default_factory=list, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _held: dict[str, bool] = field(default_factory=dict, init=False)  # wire port -> up

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def start(self) -> None:
        # watch first, then read: a change between the two is seen by the watch
        for end, facing_other in ((self.a, self.wire_b), (self.b, self.wire_a)):
            proc = subprocess.Popen(
                ["ip", "-n", end.netns, "-o", "monitor", "link"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
            self._procs.append(proc)
            t = threading.Thread(target=self._follow, args=(proc, end, facing_other),
                                 name=f"carrier {end.netns}:{end.port}", daemon=True)
            self._threads.append(t)
            t.start()
        for end, facing_other in ((self.a, self.wire_b), (self.b, self.wire_a)):
            state = admin_up(ns.ip("-o", "link", "show", "dev", end.port, netns=end.netns),
                             end.port)
            if state is not None:
                self._hold(facing_other, state)

    def stop(self) -> None:
        for proc in self._procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_S)
        for t in self._threads:
            t.join(timeout=STOP_S)
        self._procs.clear()
        self._threads.clear()

    def _follow(self, proc: subprocess.Popen[str], end: End, facing_other: str) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            state = admin_up(line, end.port)
            if state is not None:
                self._hold(facing_other, state)

    def _hold(self, wire_port: str, up: bool) -> None:
        with self._lock:
            if self._held.get(wire_port) == up:
                return
            # the wire may be going away under a stopping relay: nothing left to hold
            with contextlib.suppress(ns.NetnsError):
                ns.ip("link", "set", "dev", wire_port, "up" if up else "down", netns=self.wire)
                self._held[wire_port] = up
