"""Type-check labtest as it is imported: ``python scripts/typecheck.py [mypy options]``.

``labtest.drivers``, ``labtest.fixtures`` and ``labtest.suites`` live in top-level
folders that setup.py maps under ``labtest``; mypy cannot follow that mapping, so it
reads a temporary tree of links with the installed layout (``labtest/drivers`` ->
``drivers/`` ...). Settings and the listed exclusions: ``[tool.mypy]`` in pyproject.toml.
Paths in the messages are those of the installed layout (``labtest/drivers/sonic/...``
is ``drivers/sonic/...``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("drivers", "fixtures", "suites")  # folder -> labtest.<folder>


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="labtest-typecheck-") as tmp:
        package = Path(tmp) / "labtest"
        package.mkdir()
        for entry in (ROOT / "labtest").iterdir():
            if entry.name not in MAPPED and entry.name != "__pycache__":
                (package / entry.name).symlink_to(entry)
        for folder in MAPPED:
            (package / folder).symlink_to(ROOT / folder)
        command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                   "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "labtest", *args]
        return subprocess.run(command, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
