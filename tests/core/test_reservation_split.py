"""Leases are a library; their pytest side is the plugin's (labtest.reservation.plugin)."""

from __future__ import annotations

import subprocess
import sys


def test_the_lease_library_loads_without_pytest():
    code = "import sys, labtest.reservation; sys.exit('pytest' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
