"""The Clock capability's parsers: ``date +%s.%N`` (SONiC, Linux hosts) and EOS
``show clock | json``, on real published output and on what they must refuse."""

from __future__ import annotations

import pytest
from switch_samples import parse, sample

from labtest.capabilities.clock import Clock
from labtest.drivers.common.clock import parse_date_epoch
from labtest.drivers.eos import parsers as p
from labtest.errors import ParseError
from labtest.registry import capabilities_of, driver_class


def test_date_epoch_reads_seconds_and_nanoseconds() -> None:
    assert parse_date_epoch("1764603189.123456789\n") == pytest.approx(1764603189.123456789)
    assert parse_date_epoch("0.000000001\n") == pytest.approx(1e-9)  # an unset RTC still counts


@pytest.mark.parametrize("text, why", [
    ("1764603189.N\n", "is %N supported"),  # busybox / old date: %N left unexpanded
    ("1764603189.%N\n", "SECONDS.NANOSECONDS"),
    ("1764603189\n", "SECONDS.NANOSECONDS"),  # no fraction: a second off
    ("1764603189.123\n", "SECONDS.NANOSECONDS"),
    ("-5.000000000\n", "SECONDS.NANOSECONDS"),
    ("Tue Dec  1 15:33:09 UTC 2026\n", "SECONDS.NANOSECONDS"),
    ("", "one line"),
    ("1764603189.123456789\n1764603189.123456789\n", "one line"),
    ("1764603189.123456789", "no line end"),  # a cut capture
    ("1764603189.12345\x006789\n", "U+0000"),
])
def test_date_epoch_refuses_anything_else(text: str, why: str) -> None:
    with pytest.raises(ParseError, match="date") as exc:
        parse_date_epoch(text, device="leaf1")
    assert why in str(exc.value) and exc.value.device == "leaf1"


@pytest.mark.parametrize("stem, utc", [
    ("show_clock_json__anta_asynceapi_ceoslab", 1724729442.6863558),
    ("show_clock_json__vane_fixture_dut", 1685053619.06094),
])
def test_eos_show_clock_reads_utc_time(stem: str, utc: float) -> None:
    assert parse("eos", "show clock | json", stem) == utc


def test_eos_show_clock_refuses_text_other_commands_and_bad_values() -> None:
    real = sample("eos", "show_clock_json__vane_fixture_dut")
    bad = {
        "Thu May 25 22:26:59 2023\nTimezone: UTC\nClock source: local\n": "expected JSON",
        sample("eos", "show_version_json__veoslab_4_33"): "show version",
        real.replace("1685053619.06094", "true"): "utcTime",
        real.replace("1685053619.06094", '"1685053619.06094"'): "utcTime",
        real.replace("1685053619.06094", "-1"): "not a time",
        real.replace("1685053619.06094", "0"): "not a time",
        real[: real.index('"utcTime"')]: "JSON",  # cut before the value
        real.replace('"timezone"', '"utcTime": 1, "timezone"'): "duplicated key",
    }
    for text, why in bad.items():
        with pytest.raises(ParseError, match="show clock") as exc:
            p.parse_clock(text)
        assert why in str(exc.value), (why, str(exc.value))


def test_sonic_eos_and_linux_drivers_offer_the_clock() -> None:
    for driver in ("sonic", "eos", "linux"):
        assert "Clock" in capabilities_of(driver_class(driver)), driver
    assert not isinstance(object(), Clock)
