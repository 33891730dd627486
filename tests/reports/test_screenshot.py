"""The sign-off renders in a real browser: FAIL and the failed card on the first screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import LabRun

from labtest.cli import main
from labtest.reports.screenshot import browser

pytestmark = pytest.mark.skipif(browser() is None, reason="needs chromium (Debian: chromium)")

FAIL_RED = (198, 40, 40)  # #c62828: the FAIL banner and the failed card's border


def _is_red(px: tuple[int, ...]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(px[:3], FAIL_RED, strict=True))


def test_faulty_signoff_first_screen(faulty_run: LabRun, tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image")
    png = tmp_path / "faulty.png"
    rc = main(["report", str(faulty_run.results_dir), "-o", str(tmp_path / "so"), "--no-allure",
               "--screenshot", str(png)])
    assert rc == 1
    with image.open(png) as img:
        rgb = img.convert("RGB")
        assert rgb.size == (1400, 900)
        banner_row = [rgb.getpixel((x, 30)) for x in range(0, 1400, 7)]
        below = [rgb.getpixel((x, y)) for y in range(110, 900, 3) for x in range(0, 200, 2)]
    assert sum(map(_is_red, banner_row)) > 0.8 * len(banner_row)  # the verdict banner
    assert sum(map(_is_red, below)) > 200  # the FAILED card (badge and border) is on screen
    assert png.stat().st_size < 300_000
