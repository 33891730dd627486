"""How ``labtest run``'s pytest child ends with its parent, and takes one interrupt once.

The child holds the lab (the emulated lab's servers, the kernel lab's namespaces and
daemons). Two ways it used to outlive what the user asked for (``bench/chaos.py``):

* ``kill -9`` of ``labtest run`` left the child running the whole suite set as an
  orphan, writing into the same results folder and run history as the user's next run.
  So the child asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``,
  set between fork and exec: no moment is uncovered) and takes SIGTERM as it takes
  Ctrl-C: its teardown restores devices and stops the lab. (Before pytest has loaded
  the labtest plugin, SIGTERM ends it at once; it has created nothing yet.)
* ``kill -INT`` of ``labtest run`` alone reached only the parent, which then waited for
  the whole run. So the parent passes every interrupt on. Ctrl-C in a terminal signals
  the whole process group, so the child then gets the same interrupt twice (from the
  terminal and from its parent); the second, within :data:`SAME_INTERRUPT_S`, is the same
  interrupt and is ignored, so it does not break the teardown the first one started. An
  interrupt later than that is the user's second Ctrl-C and aborts the teardown, as in
  plain pytest.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

#: the child is started by ``labtest run`` with this set to the parent's PID
PARENT_ENV = "LABTEST_RUN_PARENT"
#: a second SIGINT this soon after the first is the same interrupt (terminal + parent)
SAME_INTERRUPT_S = 2.0
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """``preexec_fn`` of the child: ``sig`` when the parent dies. If it died before the
    call (the child was reparented already), the signal is raised at once."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return  # not Linux: the child outlives a SIGKILLed parent, as before
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def child_env(parent: int | None = None) -> dict[str, str]:
    return {**os.environ, PARENT_ENV: str(os.getpid() if parent is None else parent)}


def take_interrupts_once() -> bool:
    """In the pytest child of ``labtest run`` (and only there): SIGINT and SIGTERM raise
    KeyboardInterrupt, except within :data:`SAME_INTERRUPT_S` of the previous one (the same
    interrupt, from the terminal and from the parent). A SIGINT the child was started
    ignoring (``nohup``, a background job) stays ignored. True when installed."""
    if os.environ.get(PARENT_ENV) != str(os.getppid()):
        return False
    last = [-SAME_INTERRUPT_S]

    def on_interrupt(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if now - last[0] < SAME_INTERRUPT_S:
            return
        last[0] = now
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, on_interrupt)
    signal.signal(signal.SIGTERM, on_interrupt)
    return True


@contextlib.contextmanager
def held(what: str) -> Iterator[list[int]]:
    """SIGINT and SIGTERM wait while ``what`` runs (a lab stopping: an interrupt in the
    middle of it left namespaces and daemons behind, bench/chaos.py); the list yields the
    signals that came. Outside the main thread signals cannot be caught there: nothing
    is held. A stop that hangs is still bounded by ``kill -9``, whose leftovers the next
    run reaps."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    said = [False]

    def hold(signum: int, frame: Any) -> None:
        came.append(signum)
        if not said[0]:
            said[0] = True
            print(f"labtest: {what}; the interrupt waits until it is done "
                  "(kill -9 abandons it: the next run removes what is left)",
                  file=sys.stderr, flush=True)

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, hold)
    try:
        yield came
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
