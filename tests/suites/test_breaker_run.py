"""A dead host costs one timeout per run, not one per test (issue 36, the circuit breaker).

One ``labtest run --suite roce --suite collective`` on the default emulated lab with
``unreachable_device`` on host3 (its SSH hangs after login, as a hung box's does). The
transports' own log (``--log-file``) counts what was waited for: one command timeout,
then one short probe confirming it, one reprobe in the next suite; every other host3
test is broken at once by ``DeviceDown`` citing the first failure, and host3 is the
first root cause, in the results document and in the printed verdict. Wall time is not
asserted (the machine is shared): attempts are counted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labtest.measure.rootcause import root_causes

REPO = Path(__file__).resolve().parents[2]
LEAFSPINE = REPO / "testbeds" / "emulated" / "leafspine.yaml"
LIMITS = REPO / "suites" / "limits" / "acceptance-400g.yaml"
#: host3's command timeout in this run (the emulator keeps it; it replaces port and password)
COMMAND_TIMEOUT_S = 5


def test_an_unreachable_host_is_waited_for_once_and_named_first(tmp_path: Path) -> None:
    if os.environ.get("LABTEST_SUITE_E2E", "1") == "0":
        pytest.skip("suite runs on the emulated lab skipped: LABTEST_SUITE_E2E=0")
    doc = yaml.safe_load(LEAFSPINE.read_text())
    doc["limits"] = str(LIMITS)
    doc["emulation"]["faults"] = [{"kind": "unreachable_device", "target": "host3"}]
    doc["devices"]["host3"]["address"] = "127.0.0.1"
    doc["devices"]["host3"]["ssh"] = {"username": "admin", "password": "replaced-by-the-emulator",
                                      "timeout_s": 2, "command_timeout_s": COMMAND_TIMEOUT_S}
    testbed = tmp_path / "dead-host3.yaml"
    testbed.write_text(yaml.safe_dump(doc, sort_keys=False))
    results, log = tmp_path / "results", tmp_path / "run.log"
    argv = [sys.executable, "-m", "labtest.cli", "run", "--testbed", str(testbed),
            "--suite", "roce", "--suite", "collective", "--alluredir", str(results),
            "--", "-p", "no:randomly", "--no-inventory", f"--log-file={log}",
            "--log-file-level=INFO"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=420, check=False,
                          cwd=tmp_path)
    out = done.stdout + done.stderr
    tests = json.loads((results / "labtest-results.json").read_text())["tests"]
    lines = log.read_text().splitlines()

    # what was waited for, from the transports' own log
    waited = [ln for ln in lines if re.search(r"\[host3\] .*no complete answer within", ln)
              and "probe got no answer" not in ln]  # the breaker's note on a probe's wait
    probes = [ln for ln in waited if "within 2 s" in ln]  # PROBE_TIMEOUT_S
    commands = [ln for ln in waited if ln not in probes]  # COMMAND_TIMEOUT_S or their own
    marked = [ln for ln in lines if "host3: marked down for the run" in ln]
    assert len(commands) <= 2, "\n".join(waited)  # pairs run in threads: two may be in flight
    assert len(marked) == 1, "\n".join(lines[-50:])
    assert 1 <= len(probes) <= 3, "\n".join(waited)  # the confirmation, one reprobe per suite

    host3 = [t for t in tests if t.get("device") == "host3"]
    down = [t for t in host3 if t["message"].startswith("labtest.errors.DeviceDown: [host3]")]
    assert len(host3) >= 15 and all(t["outcome"] == "broken" for t in host3), out[-3000:]
    assert 1 <= len(host3) - len(down) <= len(commands), [t["message"] for t in host3]
    assert {t["suite"] for t in down} == {"roce", "collective"}
    assert all("(in suites/roce/" in t["message"] for t in down)  # the first failure's test

    doc_causes = root_causes(json.loads((results / "labtest-results.json").read_text()))
    assert doc_causes[0].kind == "unreachable" and doc_causes[0].culprit == "host3"
    printed = out[out.index("root causes (most likely first):"):].splitlines()
    assert printed[1].startswith("  1. host3 could not be asked"), "\n".join(printed[:5])
