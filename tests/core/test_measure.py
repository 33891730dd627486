"""Measurements: verdict edges, marginal bands, units, readable failures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from labtest.errors import ConfigError, LimitFailure
from labtest.measure import Limit, Recorder, Verdict, load_limits

ROOT = Path(__file__).resolve().parents[2]
SRC = "test source"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-6.0, Verdict.FAIL),
        (-5.9, Verdict.MARGINAL),  # inclusive low edge
        (-5.0, Verdict.MARGINAL),
        (-4.9, Verdict.PASS),  # marginal edge is inclusive
        (4.0, Verdict.PASS),
        (4.01, Verdict.FAIL),
        (math.nan, Verdict.FAIL),
    ],
)
def test_band_with_marginal(value: float, expected: Verdict) -> None:
    lim = Limit(low=-5.9, high=4.0, marginal_low=-4.9, unit="dBm", source=SRC)
    assert lim.judge(value) is expected


def test_exclusive_edges() -> None:
    lim = Limit(high=0, high_inclusive=False, source=SRC)
    assert lim.judge(0) is Verdict.FAIL
    assert lim.judge(-1e-12) is Verdict.PASS
    lim = Limit(low=0.9, low_inclusive=False, source=SRC)
    assert lim.judge(0.9) is Verdict.FAIL
    assert lim.judge(0.9000001) is Verdict.PASS


def test_limit_needs_source_and_a_side_and_sane_marginal() -> None:
    with pytest.raises(ValidationError):
        Limit(high=1)  # no source
    with pytest.raises(ValidationError):
        Limit(source=SRC)  # no bound
    with pytest.raises(ValidationError):
        Limit(low=2, high=1, source=SRC)
    with pytest.raises(ValidationError):
        Limit(low=0, high=1, marginal_high=2, source=SRC)


def test_recorder_fails_with_readable_message() -> None:
    rec = Recorder()
    lim = Limit(high=2.4e-5, unit="", source="FBOSS OpticsTest sanity")
    rec("pre_fec_ber", 3.1e-4, limit=lim, port="Ethernet0", lane=2)
    rec("rx_power_dbm", -3.0, unit="dBm", limit=Limit(low=-5.9, unit="dBm", source=SRC))
    assert rec.verdict() is Verdict.FAIL
    with pytest.raises(LimitFailure) as info:
        rec.check()
    text = str(info.value)
    assert "1 measurement(s) outside limits" in text
    assert "pre_fec_ber port=Ethernet0 lane=2: 0.00031 is FAIL" in text
    assert "limit x <= 2.4e-05 (source: FBOSS OpticsTest sanity)" in text


def test_recorder_units_must_agree_with_limit() -> None:
    rec = Recorder()
    with pytest.raises(ValueError, match="'mW' but limit"):
        rec("rx", 0.5, unit="mW", limit=Limit(low=-5.9, unit="dBm", source=SRC))


def test_recorder_profile_lookup_and_json() -> None:
    profile = load_limits(ROOT / "suites/limits/acceptance-400g.yaml")
    rec = Recorder(profile)
    m = rec("rx_power_dbm", -5.2, key="optics.rx_power_dbm", port="Ethernet0")
    assert m.verdict is Verdict.MARGINAL and m.unit == "dBm"
    assert rec.verdict() is Verdict.MARGINAL
    rec.check()  # marginal passes
    data = json.loads(rec.to_json())
    assert data[0]["limit"]["source"].startswith("Edgecore ET7502-DR4")
    with pytest.raises(KeyError, match="has no limit 'nope'"):
        rec("x", 1, key="nope")
    assert rec("dark", -math.inf, unit="dBm").as_dict()["value"] == "-inf"


def test_every_profile_number_has_a_source() -> None:
    for path in sorted((ROOT / "suites/limits").glob("*.yaml")):
        profile = load_limits(path)
        for key, lim in profile.limits.items():
            assert len(lim.source) > 10, f"{path.name}:{key}"


def test_bad_profile_is_located(tmp_path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("profile: p\nlimits:\n  a: {high: 1}\n  b: {high: x, source: s123}\n")
    with pytest.raises(ConfigError) as info:
        load_limits(path)
    probs = info.value.problems
    assert len(probs) == 2
    assert ":3:3: limits.a.source: required field is missing" in probs[0]
    assert ":4:" in probs[1] and "limits.b.high" in probs[1]
