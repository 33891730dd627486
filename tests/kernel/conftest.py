"""The kernel lab in tests: skipped with the exact Debian packages when it cannot run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from labtest.emulation.kernel import KernelLab, why_not
from labtest.testbed import load_testbed
from labtest.testbed.model import Testbed

ROOT = Path(__file__).resolve().parents[2]
KERNEL_TESTBED = ROOT / "testbeds" / "kernel" / "leafspine.yaml"
SUITE_SETTINGS = ROOT / "testbeds" / "kernel" / "suite-settings.yaml"
SAMPLES = Path(__file__).parent / "samples"

REASON = why_not()
NEEDS_KERNEL_LAB = pytest.mark.skipif(REASON is not None, reason=f"kernel lab: {REASON}")


@pytest.fixture(scope="module")
def kernel_lab() -> Iterator[tuple[KernelLab, Testbed]]:
    """One healthy kernel lab per test module; stopping it must leave nothing behind."""
    lab = KernelLab(load_testbed(KERNEL_TESTBED))
    testbed = lab.start()
    try:
        yield lab, testbed
    finally:
        lab.stop()
    assert lab.leftovers() == []
