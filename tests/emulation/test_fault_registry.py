"""Fault families are registered in one place (faults.FAULT_MODULES via load_catalogue),
not as a side effect of importing the traffic model."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import labtest.emulation.model.traffic
from labtest.emulation.model import faults
before = set(faults.CATALOGUE)
faults.load_catalogue()
after = set(faults.CATALOGUE)
print(sorted(before), sorted(after - before))
assert not before, before
assert {"ecn_thresholds", "dirty_connector"} <= after, after
"""


def test_importing_the_traffic_model_registers_nothing_load_catalogue_registers_all():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
