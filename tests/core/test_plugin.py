"""The pytest plugin, run in a child pytest session (pytester)."""

from __future__ import annotations

import textwrap

import pytest

TESTBED = """\
name: tb
limits: limits.yaml
devices:
  leaf1: {role: leaf, driver: fake-switch, address: 127.0.0.1}
  leaf2: {role: leaf, driver: fake-switch, address: 127.0.0.1}
  host1: {role: host, driver: fake-host, address: 127.0.0.1}
links:
  - {a: "leaf1:Ethernet0", b: "host1:eth0"}
"""
LIMITS = """\
profile: p
limits:
  rx_power_dbm: {low: -5.9, high: 4.0, marginal_low: -4.9, unit: dBm, source: "datasheet X"}
"""
CONFTEST = """\
from typing import Protocol, runtime_checkable

from labtest.capabilities import transceiver
from labtest.errors import TransportTimeout
from labtest.registry import register_driver


class FakeSwitch:
    def __init__(self, name, device, testbed):
        self.name = name
        self.closed = False

    def rx_power_dbm(self):
        return {"leaf1": -3.0, "leaf2": -5.2}[self.name]

    def hang(self):
        raise TransportTimeout(self.name, "no answer to 'show version' after 2.0 s",
                               raw="partial output before the silence")

    def close(self):
        self.closed = True


@runtime_checkable
class HasRxPower(Protocol):
    def rx_power_dbm(self): ...


class FakeHost:
    def __init__(self, name, device, testbed):
        self.name = name


register_driver("fake-switch", FakeSwitch)
register_driver("fake-host", FakeHost)
"""


@pytest.fixture
def lab_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", tb=TESTBED, limits=LIMITS)
    pytester.makeconftest(CONFTEST)
    return pytester


def run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_lab=textwrap.dedent(body))
    return pytester.runpytest_inprocess("--testbed", "tb.yaml", "-rA", *args)


def test_measurements_pass_marginal_and_fail(lab_dir: pytest.Pytester) -> None:
    result = run(
        lab_dir,
        """
        import pytest

        @pytest.mark.parametrize("name", ["leaf1", "leaf2"])
        @pytest.mark.judges("rx_power_dbm")
        def test_rx(device, measure, name):
            measure("rx_power_dbm", device(name).rx_power_dbm(), key="rx_power_dbm", port=name)

        @pytest.mark.judges("rx_power_dbm")
        def test_fails(measure):
            measure("rx_power_dbm", -7.5, key="rx_power_dbm", port="Ethernet9")
            measure("rx_power_dbm", -1.0, key="rx_power_dbm", port="Ethernet10")
        """,
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*rx_power_dbm port=Ethernet9: -7.5 dBm is FAIL; limit -5.9 <= x <= 4 dBm "
         "(source: datasheet X)*"]
    )
    assert "Ethernet10" not in result.stdout.str().split("short test summary")[-1]


def test_transport_error_is_broken_not_failed(lab_dir: pytest.Pytester) -> None:
    result = run(
        lab_dir,
        """
        def test_hang(device):
            device("leaf1").hang()
        """,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "1 broken" in out
    expected = "BROKEN test_lab.py::test_hang: labtest.errors.TransportTimeout: [leaf1] no answer"
    assert expected in out
    assert "raw output from leaf1" in out and "partial output before the silence" in out


def test_a_failure_found_before_the_lab_failed_stands(lab_dir: pytest.Pytester) -> None:
    """Issue 39 item 3: a BGP session Active at the end that answered, and the other end's
    daemon dead (its read an InfraError), was called broken: the failure is the DUT's."""
    result = run(
        lab_dir,
        """
        import pytest

        @pytest.mark.judges("rx_power_dbm")
        def test_then_hang(device, measure):
            measure("rx_power_dbm", -7.5, key="rx_power_dbm", port="Ethernet9")
            device("leaf1").hang()

        @pytest.mark.judges("rx_power_dbm")
        def test_passed_then_hang(device, measure):
            measure("rx_power_dbm", -1.0, key="rx_power_dbm", port="Ethernet9")
            device("leaf1").hang()
        """,
    )
    out = result.stdout.str()
    assert "1 failed, 1 broken" in out, out
    assert "BROKEN test_lab.py::test_passed_then_hang" in out
    assert "FAILED test_lab.py::test_then_hang" in out
    assert "(then the lab could not go on: [leaf1] no answer" in out


def test_needs_skips_with_precise_reason(lab_dir: pytest.Pytester) -> None:
    result = run(
        lab_dir,
        """
        import pytest
        from conftest import HasRxPower

        @pytest.mark.needs(role="leaf", count=2)
        def test_two_leaves(lab):
            assert lab.names(role="leaf") == ["leaf1", "leaf2"]

        @pytest.mark.needs(role="spine")
        def test_spine():
            raise AssertionError("must not run")

        @pytest.mark.needs(HasRxPower, role="leaf", count=2)
        def test_rx(lab):
            assert lab.names(capability=HasRxPower) == ["leaf1", "leaf2"]

        @pytest.mark.needs(HasRxPower, role="host")
        def test_host_rx():
            raise AssertionError("must not run")
        """,
    )
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*testbed 'tb' has 0 device(s) with role 'spine' offering any device; "
            "this test needs 1*",
            "*testbed 'tb' has 0 device(s) with role 'host' offering HasRxPower; "
            "this test needs 1*",
        ],
        consecutive=False,
    )


def test_destructive_is_opt_in(lab_dir: pytest.Pytester) -> None:
    body = """
        import pytest

        @pytest.mark.destructive
        def test_reboot():
            pass
        """
    run(lab_dir, body).assert_outcomes(skipped=1)
    run(lab_dir, body, "--destructive").assert_outcomes(passed=1)


def test_no_testbed_skips(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(testbed):\n    pass\n")
    result = pytester.runpytest_inprocess("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no --testbed given*"])


def test_bad_testbed_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", tb="name: tb\ndevices: {a: {role: x}}\n")
    pytester.makepyfile("def test_x(testbed):\n    pass\n")
    result = pytester.runpytest_inprocess("--testbed", "tb.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tb.yaml:2:11: devices.a.driver: required field is missing*"])


def test_tests_on_one_device_share_an_xdist_group(lab_dir: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = run(
        lab_dir,
        """
        import os
        import time
        from pathlib import Path

        import pytest

        LOCK = Path("leaf1.busy")

        @pytest.mark.parametrize("i", range(4))
        @pytest.mark.devices("leaf1")
        def test_leaf1(i):
            # O_EXCL fails if another worker drives leaf1 at the same moment
            fd = os.open(LOCK, os.O_CREAT | os.O_EXCL)
            time.sleep(0.2)
            os.close(fd)
            LOCK.unlink()
        """,
        "-n",
        "2",
        "--dist",
        "loadgroup",
    )
    result.assert_outcomes(passed=4)
