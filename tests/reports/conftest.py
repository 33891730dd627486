"""A fake lab for the reporting tests: fake drivers, a testbed, limits and three tests.

The faulty variant has a dirty connector on leaf2:Ethernet8 (pre-FEC BER over
its limit: *failed*) and an unreachable spine1 (*broken*); the healthy variant
has neither. The fault is a device ``vars`` entry the fake driver reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# imported here so that in-process child runs (pytester restores sys.modules after
# each) do not import matplotlib again every time
import labtest.reports.plots  # noqa: F401

#: unrelated installed plugins that only slow every child run down
QUIET_PLUGINS = "-p no:hypothesispytest -p no:benchmark -p no:cacheprovider"



def run_inprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A child pytest session in this process, without the unrelated plugins."""
    return pytester.runpytest_inprocess(*QUIET_PLUGINS.split(), *args)

LIMITS = """\
profile: acceptance-400g-demo
description: demo acceptance limits for the reporting tests
limits:
  optics.rx_power_dbm:
    {low: -6.0, high: 4.0, marginal_low: -5.0, unit: dBm,
     source: "400GBASE-DR4 receiver sensitivity (IEEE 802.3bs Table 124-7)"}
  fec.pre_fec_ber:
    {high: 2.4e-5, marginal_high: 5.0e-7, unit: "",
     source: "acceptance pre-FEC BER ceiling (domain-methodology.md sec. 6)"}
"""

TESTBED = """\
name: lab-b12
description: row B rack 12 (fake drivers)
limits: limits.yaml
devices:
  leaf1: {{role: leaf, driver: fake-switch, address: 127.0.0.1}}
  leaf2: {{role: leaf, driver: fake-switch, address: 127.0.0.1, vars: {{fault: {leaf2_fault}}}}}
  spine1: {{role: spine, driver: fake-switch, address: 127.0.0.1, vars: {{fault: {spine_fault}}}}}
  host1: {{role: host, driver: fake-host, address: 127.0.0.1}}
links:
  - {{a: "leaf1:Ethernet0", b: "spine1:Ethernet0", speed_gbps: 400, optic: 400G-DR4, length_m: 3}}
  - {{a: "leaf2:Ethernet8", b: "spine1:Ethernet8", speed_gbps: 400, optic: 400G-DR4, length_m: 3}}
  - {{a: "leaf1:Ethernet64", b: "host1:eth0", speed_gbps: 400, optic: 400G-DR4}}
"""

DRIVERS = """\
from labtest.capabilities.transceiver import LaneDom, Transceiver
from labtest.errors import TransportTimeout
from labtest.registry import register_driver


class FakeSwitch:
    def __init__(self, name, device, testbed):
        self.name = name
        self.fault = device.vars.get("fault", "none")

    def _reach(self):
        if self.fault == "unreachable":
            raise TransportTimeout(self.name, "no SSH banner after 10.0 s",
                                   raw="ssh: connect to host 127.0.0.1 port 22: timed out")

    def facts(self):
        self._reach()
        return {"vendor": "Acme", "model": "AS9716", "serial": f"SN-{self.name.upper()}",
                "os_version": "SONiC.202311.1"}

    def transceivers(self):
        self._reach()
        lanes = [LaneDom(lane=i, rx_power_dbm=-1.5 - i / 10, tx_power_dbm=0.5) for i in (1, 2)]
        return {port: Transceiver(lanes=lanes, vendor="OptoCo", part_number="QDD-400G-DR4",
                                  serial=f"OC{self.name}{port[-1]}", firmware="3.1")
                for port in ("Ethernet0", "Ethernet8")}

    def fec_counters(self, port):
        self._reach()
        ber = 3.1e-4 if self.fault == "dirty-connector" else 2.0e-8
        bins = [9_000_000, 40_000, 900, 12, 1] + [0] * 11
        if self.fault == "dirty-connector":
            bins = [7_000_000, 900_000, 210_000, 60_000, 9_000, 3_000, 800, 120, 20, 2]
            bins += [0] * 6
        raw = f"{port}  FEC_CORR 41234  FEC_UNCORR 0  FEC_PRE_BER {ber:.2e}"
        return ber, bins, raw

    def close(self):
        pass


class FakeHost:
    def __init__(self, name, device, testbed):
        self.name = name


register_driver("fake-switch", FakeSwitch)
register_driver("fake-host", FakeHost)
"""

TESTS = '''\
"""Optics and FEC acceptance (fake lab)."""
import pytest

from labtest.reports import plots
from labtest.reports.attach import attach_png, attach_raw, plan_step


@pytest.mark.plan("OPT-1.1")
@pytest.mark.judges("optics.rx_power_dbm")
def test_rx_power(device, measure):
    with plan_step("OPT-1.1.1", "read the DOM of every leaf1 optic"):
        for port, xcvr in device("leaf1").transceivers().items():
            for lane in xcvr.lanes:
                measure("rx_power_dbm", lane.rx_power_dbm, key="optics.rx_power_dbm",
                        device="leaf1", port=port, lane=lane.lane)


@pytest.mark.plan("FEC-2.1")
@pytest.mark.parametrize("leaf", ["leaf1", "leaf2"])
@pytest.mark.judges("fec.pre_fec_ber")
def test_pre_fec_ber(device, measure, leaf):
    ber, bins, raw = device(leaf).fec_counters("Ethernet8")
    attach_raw(leaf, "show interfaces counters fec-stats", raw)
    attach_png(f"FEC histogram {leaf}:Ethernet8", plots.fec_histogram(bins))
    measure("pre_fec_ber", ber, key="fec.pre_fec_ber", device=leaf, port="Ethernet8")


@pytest.mark.plan("MGMT-1.1")
def test_spine_facts(device):
    assert device("spine1").facts()["os_version"].startswith("SONiC")
'''


def write_lab(path: Path, *, faulty: bool, tests: str = TESTS) -> None:
    """Testbed, limits, fake drivers (as conftest.py) and the tests, into ``path``."""
    faults = {
        "leaf2_fault": "dirty-connector" if faulty else "none",
        "spine_fault": "unreachable" if faulty else "none",
    }
    (path / "tb.yaml").write_text(TESTBED.format(**faults))
    (path / "limits.yaml").write_text(LIMITS)
    (path / "conftest.py").write_text(DRIVERS)
    (path / "test_acceptance.py").write_text(textwrap.dedent(tests))


def run_lab(
    pytester: pytest.Pytester, *args: str, faulty: bool = True, tests: str = TESTS
) -> tuple[pytest.RunResult, Path]:
    """Run the fake lab in-process; returns the run and its results directory."""
    write_lab(pytester.path, faulty=faulty, tests=tests)
    results_dir = pytester.path / "results"
    result = run_inprocess(pytester, "--testbed", "tb.yaml", "--alluredir", str(results_dir), *args)
    return result, results_dir


@dataclass(frozen=True)
class LabRun:
    returncode: int
    output: str
    results_dir: Path


@pytest.fixture(scope="session")
def faulty_run(tmp_path_factory: pytest.TempPathFactory) -> LabRun:
    """One faulty fake-lab run in a child pytest process, shared read-only by tests."""
    lab = tmp_path_factory.mktemp("faulty-lab")
    write_lab(lab, faulty=True)
    results_dir = lab / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET_PLUGINS.split(), "--testbed", "tb.yaml",
         "--alluredir", str(results_dir), "-q"],
        cwd=lab, capture_output=True, text=True, timeout=120, check=False,
    )
    return LabRun(proc.returncode, proc.stdout + proc.stderr, results_dir)


def allure_results(results_dir: Path) -> dict[str, dict[str, Any]]:
    """Allure result files by test name (``name`` includes the parameter id)."""
    out = {}
    for path in results_dir.glob("*-result.json"):
        data = json.loads(path.read_text())
        out[data["name"]] = data
    return out


def labels(result: dict[str, Any], name: str) -> list[str]:
    return [lb["value"] for lb in result["labels"] if lb["name"] == name]


def fixture_attachments(results_dir: Path) -> list[str]:
    """Names of attachments made in fixture set-up/tear-down (Allure containers)."""
    names = []
    for path in results_dir.glob("*-container.json"):
        data = json.loads(path.read_text())
        for fixture in data.get("befores", []) + data.get("afters", []):
            names.extend(a["name"] for a in fixture.get("attachments", []))
    return names
