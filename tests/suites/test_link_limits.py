"""Every limit the link, transceiver and cabling suites ask for is in both profiles,
with a source, and the stress profile is at least as strict where both judge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labtest.measure import load_limits

REPO = Path(__file__).resolve().parents[2]
FAMILIES = ("link", "transceiver", "cabling")
PROFILES = ("acceptance-400g", "stress-400g")
KEY = re.compile(r"""["']((?:link|transceiver|cabling)\.[a-z0-9_]+)["']""")
#: requirement ids judged against a limit the suite builds from profile entries (the link
#: budget: transceiver.channel_insertion_loss_db, fibre, connector and monitor terms)
COMPUTED = {"transceiver.link_loss_db"}


def _keys_used() -> set[str]:
    keys: set[str] = set()
    for family in FAMILIES:
        for path in (REPO / "suites" / family).glob("*.py"):
            keys |= set(KEY.findall(path.read_text()))
    return keys


@pytest.mark.parametrize("profile", PROFILES)
def test_every_key_the_suites_use_is_in_the_profile(profile: str) -> None:
    limits = load_limits(REPO / "suites" / "limits" / f"{profile}.yaml")
    used = _keys_used()
    assert {"link.prbs_target_ber", "transceiver.dom_interval_s", "cabling.speed_mismatch"} <= used
    missing = sorted(k for k in used - COMPUTED if k not in limits.limits)
    assert not missing, f"{profile} lacks {missing}"
    ours = {k: v for k, v in limits.limits.items() if k.split(".")[0] in FAMILIES}
    assert all(len(v.source) > 20 for v in ours.values())


def test_stress_is_at_least_as_strict() -> None:
    acc = load_limits(REPO / "suites" / "limits" / "acceptance-400g.yaml").limits
    stress = load_limits(REPO / "suites" / "limits" / "stress-400g.yaml").limits
    for key in ("link.prbs_target_ber", "link.fec_pre_fec_ber", "link.fec_tail_bin",
                "transceiver.temperature_c"):
        assert (stress[key].high or 0) <= (acc[key].high or 0), key
    for key in ("link.prbs_confidence", "link.watch_s", "transceiver.dom_interval_s"):
        assert (stress[key].low or 0) >= (acc[key].low or 0), key
