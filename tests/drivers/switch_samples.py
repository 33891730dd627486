"""Real published switch outputs under ``samples/<driver>/``.

Each sample's first line names its source (``# source: URL or repo/path@commit``);
the rest is the output exactly as published (excerpts say so in that line).
"""

from __future__ import annotations

from pathlib import Path

from labtest.parsing import lookup

SAMPLES = Path(__file__).parent / "samples"
SOURCE_PREFIX = "# source: "


def sample_files(driver: str, command_slug: str = "") -> list[Path]:
    return sorted((SAMPLES / driver).glob(f"{command_slug}__*.txt" if command_slug else "*.txt"))


def sample(driver: str, name: str) -> str:
    """The output of sample ``name`` (file stem), without its source line."""
    first, _, body = (SAMPLES / driver / f"{name}.txt").read_text().partition("\n")
    if not first.startswith(SOURCE_PREFIX):
        raise AssertionError(f"{driver}/{name}: first line must name the source")
    return body


def parse(driver: str, command: str, name: str, **kwargs):
    """Parse sample ``name`` with the parser registered for ``command``."""
    return lookup(driver, command)(sample(driver, name), **kwargs)
