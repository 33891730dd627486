"""Fixtures for the traffic generator tests: the netns lab (see tglab.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tglab


@pytest.fixture(scope="module")
def tg_lab() -> Iterator[tglab.TgLab]:
    with tglab.tg_lab() as lab:
        yield lab
