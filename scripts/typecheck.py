"""Type-check labtest as it is imported: ``python scripts/typecheck.py [mypy options]``.

``labtest.drivers``, ``labtest.fixtures`` and ``labtest.suites`` live in top-level
folders that setup.py maps under ``labtest``; mypy cannot follow that mapping, so it
reads a temporary tree of links with the installed layout (``labtest/drivers`` ->
``drivers/`` ...). Settings and the listed exclusions: ``[tool.mypy]`` in pyproject.toml.
Paths in the messages are those of the installed layout (``labtest/drivers/sonic/...``
is ``drivers/sonic/...``).

Then the core (``CORE``: the testbed, transports, capabilities, measurements and the
results document) again with ``--strict``: no untyped definition, no ``Any`` returned
where a type is promised, no bare generic (issue 38).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("drivers", "fixtures", "suites")  # folder -> labtest.<folder>
#: checked with --strict too: packages (-p) and modules (-m)
CORE = ("-p", "labtest.testbed", "-p", "labtest.transports", "-p", "labtest.capabilities",
        "-p", "labtest.measure", "-m", "labtest.reports.results", "-m", "labtest.outcome")


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="labtest-typecheck-") as tmp:
        package = Path(tmp) / "labtest"
        package.mkdir()
        for entry in (ROOT / "labtest").iterdir():
            if entry.name not in MAPPED and entry.name != "__pycache__":
                (package / entry.name).symlink_to(entry)
        for folder in MAPPED:
            (package / folder).symlink_to(ROOT / folder)
        mypy = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                "--cache-dir", str(ROOT / ".mypy_cache")]
        whole = subprocess.run([*mypy, "-p", "labtest", *args], cwd=tmp, check=False)
        print("strict, the core:", " ".join(CORE[1::2]), flush=True)
        core = subprocess.run([*mypy, "--strict", *CORE, *args], cwd=tmp, check=False)
        return whole.returncode or core.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
