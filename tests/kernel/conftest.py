"""The kernel lab in tests: skipped with the exact Debian packages when it cannot run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kernel_helpers import KERNEL_TESTBED

from labtest.emulation.kernel import KernelLab
from labtest.testbed import load_testbed
from labtest.testbed.model import Testbed


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
