"""``@pytest.mark.judges``: measure refuses a limit key the running test did not declare,
and any record in a test without the marker; the test is broken (a test defect), never
judged. The refusal survives a test that swallows it."""

from __future__ import annotations

import contextlib
import re
import textwrap

import pytest

from labtest.errors import ConfigError, UndeclaredLimit
from labtest.measure import Limit, Recorder
from labtest.outcome import BROKEN, ErrorKind, outcome_of

LIMIT = Limit(high=1.0, source="a test limit with a source")


def test_a_declared_key_and_its_variant_are_recorded() -> None:
    rec = Recorder(test="t.py::test_x", judges=("link.flaps",))
    rec("flaps", 0, key="link.flaps", limit=LIMIT)
    rec("flaps", 0, key="link.flaps@400GBASE-FR4", limit=LIMIT)
    rec("unjudged", 3.0, unit="count")  # no key: recorded, judged by nothing
    rec.not_proven("link.flaps", "no counters", link="l1")
    rec.check()
    keys = [m.limit_key for m in rec.measurements]
    assert keys == ["link.flaps", "link.flaps@400GBASE-FR4", None]


def test_an_undeclared_key_is_refused_naming_test_and_key() -> None:
    rec = Recorder(test="t.py::test_x", judges=("link.flaps",))
    with pytest.raises(UndeclaredLimit) as err:
        rec("ber", 1e-12, key="link.prbs_target_ber", limit=LIMIT)
    assert isinstance(err.value, ConfigError)
    assert "t.py::test_x" in str(err.value) and "'link.prbs_target_ber'" in str(err.value)
    assert "judges('link.flaps',)" in str(err.value) and not rec.measurements
    with pytest.raises(UndeclaredLimit, match=re.escape("link.fec_tail_bin")):
        rec.not_proven("link.fec_tail_bin", "no histogram")
    assert not rec.not_proven_notes


def test_a_test_without_the_marker_records_nothing() -> None:
    rec = Recorder(test="t.py::test_bare", judges=None)
    with pytest.raises(UndeclaredLimit, match=re.escape("carries no @pytest.mark.judges")):
        rec("unjudged", 3.0, unit="count")
    with pytest.raises(UndeclaredLimit, match=re.escape("carries no @pytest.mark.judges")):
        rec.not_proven("link.flaps", "no counters")


def test_a_swallowed_refusal_still_breaks_the_test_at_check() -> None:
    rec = Recorder(test="t.py::test_x", judges=())
    with contextlib.suppress(Exception):  # a suite's broad except must not hide it
        rec("flaps", 0, key="link.flaps", limit=LIMIT)
    rec("bad", 5.0, limit=LIMIT)  # a FAIL as well: the refusal comes first
    with pytest.raises(UndeclaredLimit, match=re.escape("link.flaps")):
        rec.check()


def test_a_script_recorder_refuses_nothing() -> None:
    rec = Recorder()
    rec("flaps", 0, key="link.flaps", limit=LIMIT)
    rec.check()


LIMITS = """\
profile: p
limits:
  rx_power_dbm: {low: -5.9, high: 4.0, unit: dBm, source: "datasheet X"}
  tx_power_dbm: {low: -5.9, high: 4.0, unit: dBm, source: "datasheet X"}
"""


def test_through_the_plugin_a_refusal_is_broken_with_its_message(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", limits=LIMITS)
    pytester.makepyfile(
        test_lab=textwrap.dedent(
            """
            import pytest

            @pytest.mark.judges("rx_power_dbm")
            def test_declared(measure):
                measure("rx", -3.0, key="rx_power_dbm")

            @pytest.mark.judges("rx_power_dbm")
            def test_undeclared(measure):
                try:
                    measure("tx", -3.0, key="tx_power_dbm")
                except Exception:
                    pass

            def test_unmarked(measure):
                measure("rx", -3.0, key="rx_power_dbm")
            """
        )
    )
    reprec = pytester.inline_run("--limits", "limits.yaml", "-p", "no:xdist")
    calls = {r.nodeid.split("::")[-1]: r for r in reprec.getreports("pytest_runtest_logreport")
             if r.when == "call"}
    assert calls["test_declared"].passed
    for name, what in (("test_undeclared", "'tx_power_dbm' it does not declare"),
                       ("test_unmarked", "carries no @pytest.mark.judges")):
        error = calls[name].labtest["error"]
        assert error["kind"] == ErrorKind.OTHER and outcome_of(error)[0] == BROKEN, name
        assert error["type"] == "labtest.errors.UndeclaredLimit"
        assert f"test_lab.py::{name}" in error["message"] and what in error["message"]
