"""Burn-in tests: the ``slow`` marker (the 72-hour emulated acceptance run)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: a long (but CI-sized) run, e.g. the 72-hour emulated burn-in"
    )
