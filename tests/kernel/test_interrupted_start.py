"""Ctrl-C while a kernel lab starts: whatever step it lands after, nothing is left.

A run interrupted early (``labtest run`` on a loaded machine: the interrupt landed while
``ip netns add`` had made a namespace and its loopback was coming up) left that one
namespace: it existed before the lab had recorded it. The interrupt here lands right
after one of the start's steps (a namespace or link command, a daemon spawned), the step
drawn at random over the whole start, so no window of it is unguarded."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kernel_helpers import KERNEL_TESTBED, NEEDS_KERNEL_LAB

from labtest import netns as ns
from labtest.emulation.kernel.lab import KernelLab
from labtest.testbed import load_testbed

pytestmark = [pytest.mark.netns, NEEDS_KERNEL_LAB]
#: steps of a full start of the kernel leaf-spine testbed (142 measured: 76 ip, 37
#: commands in a namespace, 29 daemons); a draw past the end interrupts nothing
STEPS = 140
SEED = 20261207


class _Interrupt:
    """Counts the start's steps; raises KeyboardInterrupt right after step ``at``."""

    def __init__(self, at: int) -> None:
        self.at, self.seen, self.landed = at, 0, False

    def after(self, real: Any) -> Any:
        def step(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            self.seen += 1
            if self.seen == self.at:
                self.landed = True
                raise KeyboardInterrupt
            return out

        return step


def _draws() -> list[int]:
    """The first two steps, and one draw from each third of the start (namespaces, links,
    daemons, roughly), the same every run."""
    rng = random.Random(SEED)
    third = STEPS // 3
    return [1, 2, *(rng.randrange(max(3, i * third), (i + 1) * third) for i in range(3))]


@pytest.mark.parametrize("at", _draws())
def test_an_interrupted_start_leaves_nothing(at: int, monkeypatch: pytest.MonkeyPatch) -> None:
    interrupt = _Interrupt(at)
    for name in ("ip", "run_in_netns"):  # create_netns calls them through the module too
        monkeypatch.setattr(ns, name, interrupt.after(getattr(ns, name)))
    monkeypatch.setattr(KernelLab, "_spawn", interrupt.after(KernelLab._spawn))
    lab = KernelLab(load_testbed(KERNEL_TESTBED))
    with pytest.raises(KeyboardInterrupt):
        lab.start()
    assert interrupt.landed  # where drawn (the stop's own steps count on past it)
    left = lab.leftovers()
    lab.stop()  # the test's own cleanup, whatever the verdict
    assert not left, f"interrupted after step {at}: {left}"
