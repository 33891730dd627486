"""Screenshots of a report with headless Chromium (Debian ``chromium``).

Used to check that the sign-off renders (the verdict and the culprits on the
first screen) and to keep the pictures in ``docs/``. Every run gets its own
throw-away profile and no network-facing background services.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 60.0
WINDOW = (1400, 900)


class ScreenshotError(Exception):
    pass


def browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html: Path, png: Path, window: tuple[int, int] = WINDOW) -> Path:
    """Render ``html`` (a local file) and save the first screen as ``png``."""
    exe = browser()
    if exe is None:
        raise ScreenshotError("no chromium on PATH (Debian: apt-get install chromium)")
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="labtest-chromium-") as profile:
        cmd = [
            exe, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}", f"--screenshot={png.resolve()}",
            html.resolve().as_uri(),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ScreenshotError(f"chromium: no screenshot after {TIMEOUT_S:.0f} s") from None
    if not png.is_file():
        tail = proc.stderr.strip().splitlines()[-5:]
        raise ScreenshotError(f"chromium wrote no {png} (exit {proc.returncode}): {tail}")
    return png
