"""Ctrl-C while a kernel lab stops (issue 36, bench/chaos.py): ``labtest run``'s pytest
child takes an interrupt as KeyboardInterrupt, and one that landed in the middle of the
kernel lab's stop aborted it, leaving namespaces and daemons for the next run to reap. The
stop now holds interrupts until it is done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB, ROOT, poll

from labtest import netns as ns

pytestmark = [pytest.mark.netns, NEEDS_KERNEL_LAB]
UP_S = 120.0  # bound on the lab coming up (about 10 s on 2 cores)
END_S = 120.0  # bound on the run ending once interrupted


def test_ctrl_c_again_and_again_while_the_run_stops_leaves_no_namespace() -> None:
    before = set(ns.list_netns())
    proc = subprocess.Popen([sys.executable, "-m", "labtest.cli", "run", "--testbed",
                             str(KERNEL_TESTBED), "--suite", "routing"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        def lab_up() -> list[str]:
            """the run's namespaces exist"""
            return [n for n in set(ns.list_netns()) - before if n.endswith("spine2")]

        prefix = poll(lab_up, UP_S)[0].removesuffix("spine2")
        time.sleep(2.0)  # into the suite
        deadline = time.monotonic() + END_S
        while proc.poll() is None:  # an impatient user: Ctrl-C every 0.3 s until it ends
            assert time.monotonic() < deadline, "the interrupted run did not end"
            os.killpg(proc.pid, signal.SIGINT)  # the terminal's: the whole group
            time.sleep(0.3)
        out = proc.communicate(timeout=30)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    left = sorted(n for n in ns.list_netns() if n.startswith(prefix))
    assert not left, f"namespaces left after an interrupted stop: {left}\n{out[-3000:]}"
    assert "interrupted" in out, out[-3000:]
