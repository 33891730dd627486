"""Shared by the kernel-lab tests (a unique module name: every test folder has a conftest)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labtest.emulation.kernel import why_not

ROOT = Path(__file__).resolve().parents[2]
KERNEL_TESTBED = ROOT / "testbeds" / "kernel" / "leafspine.yaml"
SAMPLES = Path(__file__).parent / "samples"

REASON = why_not()
NEEDS_KERNEL_LAB = pytest.mark.skipif(REASON is not None, reason=f"kernel lab: {REASON}")

POLL_S = 0.2
BOUND_S = 30.0  # every wait is bounded; BFD/BGP/LLDP settle in a few seconds


def poll(check: Callable[[], Any], timeout_s: float = BOUND_S) -> Any:
    """The first truthy ``check()`` within ``timeout_s``; fails the test otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not true within {timeout_s} s: {check.__doc__ or check}")
        time.sleep(POLL_S)
