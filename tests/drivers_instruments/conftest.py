"""Fixtures for the instrument driver tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from instrument_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def no_server_left_behind() -> Iterator[None]:
    """Every SCPI server a test starts is stopped by it."""
    yield
    assert not [t for t in threading.enumerate() if t.name == "scpi-server"]
