"""Cabling suite: LLDP against the cabling plan (CABLING-1), speed and FEC (CABLING-2).

One test result per planned link, plus one per LLDP device for cables the plan
does not know. The test plan, with the numbered steps these tests follow, is
README.md in this folder; pass criteria are in the limits profile (``cabling.*``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import allure
import pytest
from cabling_lib import (
    OK,
    Observed,
    check_plan,
    observe,
    speed_fec_mismatches,
    unplanned_neighbours,
)

from labtest import plugin
from labtest.capabilities.switch import Interfaces, Lldp
from labtest.fixtures.suite_data import load_settings
from labtest.lab import Lab

if TYPE_CHECKING:  # names pytest must not collect
    from labtest.testbed.model import Link, Testbed

SETTINGS = load_settings("cabling")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    tb = plugin.testbed_of(metafunc.config)
    lab = plugin.lab_of(metafunc.config) if tb is not None else None
    lldp = set(lab.names(capability=Lldp)) if lab is not None else set()
    if "link" in metafunc.fixturenames:  # every cabled link: one nobody can check says why
        links = list(tb.links) if tb else []
        metafunc.parametrize("link", links, ids=[lk.name for lk in links])
    if "lldp_device" in metafunc.fixturenames:
        metafunc.parametrize("lldp_device", [n for n in (tb.devices if tb else {}) if n in lldp])


@pytest.fixture(scope="module")
def observed(lab: Lab, testbed: Testbed) -> Observed:
    retry, changed = SETTINGS["missing_retry"], SETTINGS["changed_retry"]
    return observe(
        lab,
        list(testbed.links),
        float(retry["timeout_s"]),
        float(retry["poll_s"]),
        float(changed["timeout_s"]),
        float(changed["poll_s"]),
    )


@pytest.mark.plan("CABLING-1.1")
@pytest.mark.judges("cabling.neighbour_mismatch")
def test_cable(link: Link, observed: Observed, testbed: Testbed, lab: Lab, measure: Any) -> None:
    with allure.step("CABLING-1.1/1: read the LLDP neighbours at both ends"):
        lldp = set(lab.names(capability=Lldp))
        ends = [e for e in link.ends if e.device in lldp]
        if not ends:
            reason = f"{link.name}: neither end speaks LLDP (Lldp capability): cable not checked"
            measure.not_proven("cabling.neighbour_mismatch", reason, link=link.name)
            pytest.skip(reason)
        observed.raise_for(*(e.device for e in ends))
    with allure.step("CABLING-1.1/2: compare each end's neighbour with the cabling plan"):
        report = check_plan(testbed.links, observed.heard, lldp)
        allure.attach(
            json.dumps(_summary(report), indent=2),
            name="cabling report",
            attachment_type=allure.attachment_type.JSON,
        )
        unsettled = []
        for check in report[link.name]:
            device, _, port = check.end.partition(":")
            older = observed.changing.get(check.end, ())
            detail = check.detail
            if older:
                detail += f"; neighbour changed during the check (the table also lists " \
                          f"{', '.join(older)})"
                if check.status == OK:  # right now, but the table has not settled
                    unsettled.append(detail)
                    measure.not_proven("cabling.neighbour_mismatch", detail, device=device,
                                       port=port, link=link.name)
                    continue
            measure(
                "neighbour_mismatch",
                0 if check.status == OK else 1,
                key="cabling.neighbour_mismatch",
                device=device,
                port=port,
                link=link.name,
                status=check.status,
                expected=check.expected,
                seen=check.seen or "nobody",
                detail=detail,
            )
        if unsettled and not any(c.status != OK for c in report[link.name]):
            pytest.skip("; ".join(unsettled))


def _summary(report: dict[str, list[Any]]) -> dict[str, list[str]]:
    """The fabric-wide lists an engineer fixes cables from: missing, swapped, unexpected."""
    out: dict[str, list[str]] = {}
    for checks in report.values():
        for c in checks:
            if c.status != OK:
                out.setdefault(c.status, []).append(c.detail)
    return out


@pytest.mark.plan("CABLING-1.2")
@pytest.mark.judges("cabling.neighbour_mismatch")
def test_unplanned_neighbours(
    lldp_device: str, observed: Observed, testbed: Testbed, measure: Any
) -> None:
    with allure.step("CABLING-1.2/1: read the LLDP neighbours of every port of the device"):
        observed.raise_for(lldp_device)
    with allure.step("CABLING-1.2/2: neighbours on ports the plan does not use"):
        extra = unplanned_neighbours(testbed.links, observed.heard, lldp_device)
        measure(
            "unplanned_neighbours",
            len(extra),
            key="cabling.neighbour_mismatch",
            device=lldp_device,
            seen=", ".join(f"{end} hears {n}" for end, n in sorted(extra.items())) or "none",
        )


@pytest.mark.plan("CABLING-2.1")
@pytest.mark.judges("cabling.speed_mismatch", "cabling.fec_mismatch")
def test_speed_fec(link: Link, observed: Observed, lab: Lab, measure: Any) -> None:
    with allure.step("CABLING-2.1/1: read speed and FEC at the switch ends"):
        switches = set(lab.names(capability=Interfaces))
        ends = [e for e in link.ends if e.device in switches]
        if not ends:
            reason = f"{link.name}: no end reports its interface status (speed, FEC)"
            for key in ("cabling.speed_mismatch", "cabling.fec_mismatch"):
                measure.not_proven(key, reason, link=link.name)
            pytest.skip(reason)
        observed.raise_for(*(e.device for e in ends))
        found = {str(e): observed.status.get(str(e)) for e in ends}
        allure.attach(
            json.dumps(
                {e: s and {"speed_gbps": s.speed_gbps, "fec": s.fec} for e, s in found.items()},
                indent=2,
            ),
            name="speed and FEC",
            attachment_type=allure.attachment_type.JSON,
        )
    with allure.step("CABLING-2.1/2: the same speed (and the plan's) and FEC at both ends"):
        problems = speed_fec_mismatches(link, observed.status)
        for what, key in (("speed", "cabling.speed_mismatch"), ("fec", "cabling.fec_mismatch")):
            hits = [p.detail for p in problems if p.what == what]
            measure(
                f"{what}_mismatch",
                len(hits),
                key=key,
                link=link.name,
                detail="; ".join(hits) or "none",
            )
