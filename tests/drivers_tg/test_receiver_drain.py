"""A receiver starved of CPU lags behind the wire; stopping it must still count what was
already queued in its socket (issue 36: on a loaded 2-core machine the kernel lab's loss
test saw every flow lose its last ~0.5 s, an outage that never was)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

import pytest
from test_scapy_lab import PORTS, udp_flow
from tglab import NEEDS_ROOT, TgLab

from labtest.capabilities.traffic import TrafficConfig
from labtest.drivers.tg.scapy_tg import ScapyTrafficGenerator

pytestmark = [pytest.mark.netns, NEEDS_ROOT]

FRAMES = 2000
RESUME_S = 1.0  # the starved receiver gets its CPU back after the driver has stopped it


@pytest.fixture
def tg(tg_lab: TgLab) -> Iterator[ScapyTrafficGenerator]:
    testbed = tg_lab.testbed()
    driver = ScapyTrafficGenerator("tg", testbed.devices["tg"], testbed)
    yield driver
    driver.close()


def test_frames_queued_when_the_receiver_is_stopped_are_counted(
    tg: ScapyTrafficGenerator,
) -> None:
    tg.set_config(TrafficConfig(ports=PORTS, flows=[udp_flow("f", 5001, 10_000, packets=FRAMES)]))
    tg.start_traffic()
    assert tg._run is not None
    child = tg._run.receivers["p2"]._proc.pid
    assert child is not None
    os.kill(child, signal.SIGSTOP)  # the receiver gets no CPU: frames queue in its socket
    resume = threading.Timer(RESUME_S, os.kill, (child, signal.SIGCONT))
    resume.start()
    try:
        assert tg.wait_done(timeout_s=10)  # sees the receiver idle and stops it while starved
    finally:
        resume.join()
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGCONT)
    (m,) = tg.metrics()
    assert m.rx_socket_drops == 0 and m.rx_count_method == "signature"
    assert (m.frames_tx, m.frames_rx, m.loss_frames) == (FRAMES, FRAMES, 0)
    assert m.longest_outage_ms == 0.0
