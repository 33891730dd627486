"""Shared by the transport tests: a stand-in for the emulated lab's ``serving`` mark."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest


class ServingMark:
    """Counts how often an emulator entered the mark (the lab's clock hold) to answer."""

    def __init__(self) -> None:
        self.entered = 0

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        self.entered += 1
        yield


@pytest.fixture
def serving_mark() -> ServingMark:
    return ServingMark()
