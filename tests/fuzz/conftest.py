"""Counts the mutated inputs the fuzz tests feed, printed in the terminal summary."""

from __future__ import annotations

from collections import Counter

import pytest

TRIED: Counter[str] = Counter()


@pytest.fixture
def tried() -> Counter[str]:
    return TRIED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TRIED:
        parts = ", ".join(f"{what} {n}" for what, n in sorted(TRIED.items()))
        terminalreporter.write_line(f"fuzz: {sum(TRIED.values())} mutated inputs tried ({parts})")
