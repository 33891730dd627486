"""Sample loading for the Linux parser tests.

Each sample under ``samples/<tool>/`` is a real published output whose first
lines are ``# source: ...`` (where it was published) and optional ``# note: ...``
(what was trimmed); those lines are stripped before parsing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

SAMPLES = Path(__file__).parent / "samples"
_HEADER_PREFIXES = ("# source:", "# note:")


def read_sample(relpath: str) -> str:
    lines = (SAMPLES / relpath).read_text().splitlines(keepends=True)
    assert lines and lines[0].startswith("# source:"), f"{relpath} lacks its '# source:' line"
    while lines and lines[0].startswith(_HEADER_PREFIXES):
        lines.pop(0)
    return "".join(lines)


@pytest.fixture
def sample() -> Callable[[str], str]:
    return read_sample
