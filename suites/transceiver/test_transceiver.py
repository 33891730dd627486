"""Transceiver suite: inventory (TRANSCEIVER-1), DOM (TRANSCEIVER-2), DOM stability (-3).

One test result per cabled module (switch ports and host NICs), per link, or
per device. The test plan, with the numbered steps these tests follow, is
README.md in this folder; pass criteria are in the limits profile
(``transceiver.*``), the qualified optics in approved-optics.yaml, vendor
quirks in deviations.yaml.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import allure
import pytest
from transceiver_lib import (
    LANE_QUANTITIES,
    UNITS,
    Reading,
    cabled_modules,
    dom_values,
    firmware_matches,
    is_dark,
    judge_firmware,
    lane_losses,
    link_loss_limit,
    load_approved,
    load_approved_firmware,
    media_type_of,
    raised_flags,
    read_device,
    read_lit,
    read_modules,
    warning_margin,
)

from labtest import labtime, plugin
from labtest.capabilities.host import RdmaDevices
from labtest.capabilities.switch import SwitchFacts
from labtest.errors import InfraError
from labtest.fixtures.suite_data import load_deviations, load_settings
from labtest.lab import Lab
from labtest.measure import Limit, Verdict
from labtest.reports.attach import attach_json

if TYPE_CHECKING:  # names pytest must not collect
    from labtest.capabilities.transceiver import Transceiver
    from labtest.measure import LimitsProfile
    from labtest.testbed.model import Link, Testbed

SETTINGS = load_settings("transceiver")
DEVIATIONS = load_deviations("transceiver")
APPROVED = load_approved()
APPROVED_FIRMWARE = load_approved_firmware()
Fleet = tuple[str, str, str | None]  # group, version, platform


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    tb = plugin.testbed_of(metafunc.config)
    lab = plugin.lab_of(metafunc.config) if tb is not None else None
    ends = cabled_modules(tb, lab) if tb is not None else []
    if "module_end" in metafunc.fixturenames:
        metafunc.parametrize("module_end", ends)
    if "link" in metafunc.fixturenames:  # every cabled link: one without DOM says why
        links = list(tb.links) if tb else []
        metafunc.parametrize("link", links, ids=[lk.name for lk in links])
    if "fleet_device" in metafunc.fixturenames:
        names = _fleet(lab) if lab is not None else []
        metafunc.parametrize("fleet_device", names)


def _fleet(lab: Lab) -> list[str]:
    """Devices with a firmware version to compare: switches (facts) and RDMA hosts."""
    wanted = set(lab.names(capability=SwitchFacts)) | set(lab.names(capability=RdmaDevices))
    return [n for n in lab.testbed.devices if n in wanted]


def _deviation(check: str, device: str, testbed: Testbed) -> str | None:
    d = DEVIATIONS.find(check, device, testbed)
    return f"deviation {d.id}: {d.reason}" if d is not None else None


@pytest.fixture(scope="module")
def first_reading(lab: Lab, testbed: Testbed) -> Reading:
    """Every cabled module, read once (one command per switch)."""
    return read_modules(lab, cabled_modules(testbed, lab), _merger(testbed))


def _merger(testbed: Testbed) -> Any:
    return lambda device: _deviation("dom_lanes_in_one_record", device, testbed) is not None


def _both_ends_or_not_proven(link: Link, reading: Reading, key: str, measure: Any) -> None:
    """Skip, recording ``key`` as not proven on the link, when an end reports no module."""
    blind = [str(e) for e in link.ends if str(e) not in reading.modules]
    reading.raise_for_devices(*(e.device for e in link.ends))
    if blind:
        reason = f"{link.name}: no module reading at {', '.join(blind)} (no DOM capability)"
        measure.not_proven(key, reason, link=link.name)
        pytest.skip(reason)


def _get(reading: Reading, end: str) -> Transceiver:
    try:
        return reading.get(end)
    except LookupError as exc:
        pytest.fail(str(exc))


# --- TRANSCEIVER-1: inventory ----------------------------------------------------------------


@pytest.mark.plan("TRANSCEIVER-1.1")
@pytest.mark.judges("transceiver.unapproved")
def test_optic_approved(
    module_end: str, first_reading: Reading, testbed: Testbed, measure: Any
) -> None:
    device, _, port = module_end.partition(":")
    with allure.step("TRANSCEIVER-1.1/1: read the module inventory (vendor, part number, serial)"):
        module = _get(first_reading, module_end)
        attach_json(f"inventory {module_end}", _inventory(module))
    with allure.step("TRANSCEIVER-1.1/2: part number and vendor on the approved list"):
        optic = APPROVED.get(module.part_number or "")
        approved = optic is not None and optic.vendor == module.vendor
        measure(
            "optic_unapproved",
            0 if approved else 1,
            key="transceiver.unapproved",
            device=device,
            port=port,
            part_number=module.part_number or "none",
            vendor=module.vendor or "none",
        )


@pytest.mark.plan("TRANSCEIVER-1.2")
@pytest.mark.judges("transceiver.firmware_mismatch")
def test_optic_firmware(
    module_end: str, first_reading: Reading, testbed: Testbed, measure: Any
) -> None:
    device, _, port = module_end.partition(":")
    module = _get(first_reading, module_end)
    deviated = _deviation("optic_firmware", device, testbed)
    if deviated:
        reason = f"{module_end}: not verified: {deviated}"
        measure.not_proven("transceiver.firmware_mismatch", reason, device=device, port=port)
        pytest.skip(reason)
    if not module.firmware:
        pytest.fail(f"{module_end}: the module reports no firmware version")
    with allure.step("TRANSCEIVER-1.2/1: firmware is a qualified version of its part number"):
        components = 2 if _deviation("firmware_build", device, testbed) else None
        optic = APPROVED.get(module.part_number or "")
        if optic is None:  # an unapproved part is TRANSCEIVER-1.1's finding
            allure.attach(
                f"{module.part_number}: not an approved part; no qualified firmware",
                name="not judged",
            )
        else:
            ok = firmware_matches(module.firmware, optic.firmware, components)
            measure(
                "optic_firmware_unqualified",
                0 if ok else 1,
                key="transceiver.firmware_mismatch",
                device=device,
                port=port,
                firmware=module.firmware,
                qualified="/".join(optic.firmware) or "none",
            )
    with allure.step("TRANSCEIVER-1.2/2: same firmware as the fleet's modules of that part"):
        peers = _firmware_of_part(first_reading, module.part_number, testbed)
        fleet = judge_firmware(module_end, f"optic/{module.part_number}", None, peers, [])
        if fleet.ok is None:  # two modules that disagree say nothing about either
            allure.attach(fleet.basis, name="fleet comparison not decided")
            return
        measure(
            "optic_firmware_differs_from_fleet",
            0 if fleet.ok else 1,
            key="transceiver.firmware_mismatch",
            device=device,
            port=port,
            firmware=module.firmware,
            fleet=fleet.expected,
        )


def _firmware_of_part(reading: Reading, part: str | None, testbed: Testbed) -> dict[str, str]:
    """Firmware of every module of ``part``, cut to major.minor if any reader shows no more."""
    members = {
        end: m.firmware
        for end, m in reading.modules.items()
        if m.part_number == part
        and m.firmware
        and not _deviation("optic_firmware", end.split(":", 1)[0], testbed)
    }
    short = any(_deviation("firmware_build", end.split(":", 1)[0], testbed) for end in members)
    return {e: ".".join(v.split(".")[:2]) if short else v for e, v in members.items() if v}


def _inventory(module: Transceiver) -> dict[str, Any]:
    keys = ("vendor", "part_number", "serial", "firmware", "media_type", "identifier")
    return {k: getattr(module, k) for k in keys}


@pytest.mark.plan("TRANSCEIVER-1.3")
@pytest.mark.judges("transceiver.type_mismatch")
def test_link_optics_match(link: Link, first_reading: Reading, measure: Any) -> None:
    a, b = link.ends
    _both_ends_or_not_proven(link, first_reading, "transceiver.type_mismatch", measure)
    with allure.step("TRANSCEIVER-1.3/1: media type of the modules at both ends"):
        types = {str(e): media_type_of(_get(first_reading, str(e)), APPROVED) for e in (a, b)}
        attach_json("media types", types)
        unknown = [e for e, t in types.items() if t is None]
        if unknown:
            reason = f"{link.name}: media type unknown at {', '.join(unknown)}"
            measure.not_proven("transceiver.type_mismatch", reason, link=link.name)
            pytest.skip(reason)
    with allure.step("TRANSCEIVER-1.3/2: both ends run the same PMD"):
        same = types[str(a)] == types[str(b)]
        measure(
            "link_optic_type_mismatch",
            0 if same else 1,
            key="transceiver.type_mismatch",
            link=link.name,
            a_end=f"{a}={types[str(a)]}",
            b_end=f"{b}={types[str(b)]}",
        )


@pytest.mark.plan("TRANSCEIVER-1.5")
@pytest.mark.judges("transceiver.link_loss_db")
def test_link_loss(
    link: Link,
    first_reading: Reading,
    lab: Lab,
    testbed: Testbed,
    profile: LimitsProfile,
    measure: Any,
) -> None:
    """Optical link budget: what each lane loses between the far Tx and the near Rx, both
    from DOM, against the channel's budget for its length. Vendor-neutral: it finds a dirty
    connector where no FEC counters or PRBS exist, and names the receiving end and lane."""
    connectors = int(SETTINGS["link_budget"]["connectors_per_link"])
    a, b = link.ends
    _both_ends_or_not_proven(link, first_reading, "transceiver.link_loss_db", measure)
    with allure.step("TRANSCEIVER-1.5/1: DOM of both ends (re-read while a receiver is dark)"):
        modules = {str(e): _lit(lab, testbed, str(e), _get(first_reading, str(e))) for e in (a, b)}
        media = {media_type_of(m, APPROVED) for m in modules.values()} - {None}
        budget = link_loss_limit(
            profile.limits, next(iter(media)) if len(media) == 1 else None,
            link.length_m, connectors,
        )
        allure.attach(budget.source, name="loss budget")
    with allure.step("TRANSCEIVER-1.5/2: per lane, far-end Tx minus near-end Rx within budget"):
        holes, judged = [], []
        for far, near in ((a, b), (b, a)):
            losses, unpaired = lane_losses(modules[str(far)], modules[str(near)])
            if not losses:
                holes.append(f"{far} -> {near}: no lane reports both Tx and Rx power")
            elif unpaired:
                holes.append(f"{far} -> {near}: lanes {unpaired} lack Tx or Rx power")
            for ll in losses:
                judged.append(measure(
                    "link_loss",
                    ll.loss_db,
                    key="transceiver.link_loss_db",
                    limit=budget,
                    device=near.device,
                    port=near.port,
                    lane=ll.lane,
                    link=link.name,
                    far_end=str(far),
                    far_tx_dbm=round(ll.tx_dbm, 2),
                    rx_dbm=round(ll.rx_dbm, 2),
                ))
        if holes:
            reason = f"{link.name}: loss not measured: {'; '.join(holes)}"
            measure.not_proven("transceiver.link_loss_db", reason, link=link.name)
            if not any(m.verdict is Verdict.FAIL for m in judged):
                pytest.skip(reason)


@pytest.fixture(scope="module")
def fleet_firmware(lab: Lab) -> tuple[dict[str, Fleet], dict[str, InfraError]]:
    """``{device: (group, version, platform)}``: switches by vendor (OS version), hosts by
    NIC firmware (platform: the switch model; None for a NIC)."""
    found: dict[str, Fleet] = {}
    errors: dict[str, InfraError] = {}
    for name in _fleet(lab):
        driver = lab.device(name)
        try:
            if isinstance(driver, SwitchFacts):
                facts = driver.facts()
                found[name] = (f"switch/{facts.vendor}", facts.os_version or "unknown",
                               facts.model)
            else:
                nic = driver.rdma_devices()[0]
                found[name] = (f"nic/{nic.name.rstrip('0123456789_')}",
                               nic.fw_version or "unknown", None)
        except InfraError as exc:
            errors[name] = exc
    return found, errors


def _declared_firmware(testbed: Testbed, device: str) -> tuple[tuple[str, ...], str] | None:
    """The testbed's own expectation for a device: ``vars.approved_firmware`` (+ source)."""
    dev = testbed.devices[device]
    raw = dev.vars.get("approved_firmware")
    if not raw:
        return None
    versions = tuple(str(v) for v in (raw if isinstance(raw, list) else [raw]))
    where = f"testbed {testbed.source or testbed.name}: devices.{device}.vars.approved_firmware"
    return versions, str(dev.vars.get("approved_firmware_source") or where)


@pytest.mark.plan("TRANSCEIVER-1.4")
@pytest.mark.judges("transceiver.device_firmware")
def test_device_firmware(
    fleet_device: str, fleet_firmware: Any, testbed: Testbed, measure: Any
) -> None:
    found, errors = fleet_firmware
    with allure.step("TRANSCEIVER-1.4/1: read the firmware of every device of the fleet"):
        if fleet_device in errors:
            raise errors[fleet_device].with_traceback(None)
        group, version, platform = found[fleet_device]
        peers = {n: v for n, (g, v, _) in found.items() if g == group}
        attach_json(f"firmware of {group}", peers)
    with allure.step("TRANSCEIVER-1.4/2: an approved version (else the group majority)"):
        verdict = judge_firmware(
            fleet_device, group, platform, peers, APPROVED_FIRMWARE,
            _declared_firmware(testbed, fleet_device),
        )
        if verdict.ok is None:
            reason = f"{fleet_device} firmware {version} not judged: {verdict.basis}"
            measure.not_proven("transceiver.device_firmware", reason, device=fleet_device)
            pytest.skip(reason)
        measure(
            "device_firmware_not_approved",
            0 if verdict.ok else 1,
            key="transceiver.device_firmware",
            device=fleet_device,
            firmware=version,
            expected=verdict.expected,
            group=group,
            basis=verdict.basis,
        )


# --- TRANSCEIVER-2: DOM against thresholds and limits ------------------------------------------


def _lit(lab: Lab, testbed: Testbed, end: str, module: Transceiver) -> Transceiver:
    retry = SETTINGS["dark_retry"]
    return read_lit(
        lab,
        end,
        _merger(testbed)(end.split(":", 1)[0]),
        module,
        float(retry["timeout_s"]),
        float(retry["poll_s"]),
    )


def _profile_limit(profile: LimitsProfile, quantity: str, media: str | None) -> str | None:
    """Key of the profile limit for a quantity: ``KEY@MEDIA`` when the profile has one."""
    key = f"transceiver.{quantity}"
    if media and f"{key}@{media}" in profile.limits:
        return f"{key}@{media}"
    return key if key in profile.limits else None


@pytest.mark.plan("TRANSCEIVER-2.1")
@pytest.mark.judges(
    "transceiver.rx_power_dbm",
    "transceiver.tx_power_dbm",
    "transceiver.temperature_c",
    "transceiver.voltage_v",
    "transceiver.threshold_flags",
)
def test_dom(
    module_end: str,
    first_reading: Reading,
    lab: Lab,
    testbed: Testbed,
    profile: LimitsProfile,
    measure: Any,
) -> None:
    device, _, port = module_end.partition(":")
    with allure.step("TRANSCEIVER-2.1/1: read DOM (re-read while the receiver is dark)"):
        module = _lit(lab, testbed, module_end, _get(first_reading, module_end))
        attach_json(f"DOM {module_end}", module)
        media = media_type_of(module, APPROVED)
    values = dom_values(module)
    with allure.step("TRANSCEIVER-2.1/2: every value inside the module's own warning thresholds"):
        for v in values:
            labels = _labels(device, port, v.lane)
            th = v.threshold
            if th is None or (th.low_warn is None and th.high_warn is None):
                continue
            band = Limit(
                low=th.low_warn,
                high=th.high_warn,
                unit=UNITS[v.quantity],
                source=f"{module_end} module's own warning thresholds (EEPROM)",
            )
            measure(f"{v.quantity}_in_module_band", v.value, limit=band, **labels)
            margin = warning_margin(v.value, th)
            if margin is not None:
                measure(f"{v.quantity}_warning_margin", margin, unit=UNITS[v.quantity], **labels)
    with allure.step("TRANSCEIVER-2.1/3: every value inside the profile limits"):
        for v in values:
            key = _profile_limit(profile, v.quantity, media)
            if key is not None:
                measure(v.quantity, v.value, key=key, **_labels(device, port, v.lane))
    with allure.step("TRANSCEIVER-2.1/4: latched flags read and reported"):
        judged, conditions = raised_flags(module)
        attach_json(
            f"flags {module_end}",
            {"flags": module.flags, "raised": judged, "conditions": conditions},
        )
        if module.flags:
            measure(
                "latched_threshold_flags",
                len(judged),
                key="transceiver.threshold_flags",
                device=device,
                port=port,
                flags=",".join(judged) or "none",
                conditions=",".join(conditions) or "none",
            )


def _labels(device: str, port: str, lane: int | None) -> dict[str, Any]:
    labels: dict[str, Any] = {"device": device, "port": port}
    if lane is not None:
        labels["lane"] = lane
    return labels


# --- TRANSCEIVER-3: DOM stability between two reads ----------------------------------------------


@pytest.fixture(scope="module")
def second_reading(
    first_reading: Reading, lab: Lab, testbed: Testbed, profile: LimitsProfile
) -> Reading:
    """All modules again, ``transceiver.dom_interval_s`` (plus the dark re-read) later."""
    interval_s = float(profile.get("transceiver.dom_interval_s").low or 0.0)
    wait_s = interval_s + float(SETTINGS["dark_retry"]["timeout_s"])
    remaining = first_reading.time_s + wait_s - labtime.monotonic()
    if remaining > 0:
        labtime.sleep(remaining)  # the interval is the measurement's definition, not a guess
    return read_modules(
        lab, cabled_modules(testbed, lab), _merger(testbed), broken=first_reading.errors
    )


@pytest.mark.plan("TRANSCEIVER-3.1")
@pytest.mark.judges(
    "transceiver.dom_interval_s",
    "transceiver.temperature_change_c",
    "transceiver.voltage_change_v",
    "transceiver.bias_change_pct",
    "transceiver.power_change_db",
)
def test_dom_stable(
    module_end: str,
    first_reading: Reading,
    second_reading: Reading,
    lab: Lab,
    testbed: Testbed,
    measure: Any,
    profile: LimitsProfile,
) -> None:
    device, _, port = module_end.partition(":")
    with allure.step("TRANSCEIVER-3.1/1: two DOM reads at least transceiver.dom_interval_s apart"):
        before = _get(first_reading, module_end)
        t0, t1 = first_reading.time_s, second_reading.time_s
        after = _get(second_reading, module_end)
        if is_dark(before):
            before, t0 = _lit(lab, testbed, module_end, before), labtime.monotonic()
            # lit only now, maybe after the module-scoped second read: read it again an
            # interval later, so the window is the definition's, not 0 s
            interval_s = float(profile.get("transceiver.dom_interval_s").low or 0.0)
            if t1 - t0 < interval_s:
                labtime.sleep(t0 + interval_s - labtime.monotonic())
                t1 = labtime.monotonic()
                again = read_device(lab, device, [port], _merger(testbed)(device))
                after = again.get(port, after)
        after = _lit(lab, testbed, module_end, after)
        measure(
            "dom_interval",
            max(t1, t0) - t0,
            key="transceiver.dom_interval_s",
            device=device,
            port=port,
        )
    with allure.step("TRANSCEIVER-3.1/2: change of temperature and Vcc"):
        for q, key in (
            ("temperature_c", "transceiver.temperature_change_c"),
            ("voltage_v", "transceiver.voltage_change_v"),
        ):
            x0, x1 = getattr(before, q), getattr(after, q)
            if x0 is not None and x1 is not None:
                measure(f"{q}_change", abs(x1 - x0), key=key, device=device, port=port)
    with allure.step("TRANSCEIVER-3.1/3: change of each lane's Tx/Rx power and laser bias"):
        lanes0 = {lane.lane: lane for lane in before.lanes}
        for lane1 in after.lanes:
            lane0 = lanes0.get(lane1.lane)
            if lane0 is None:
                continue
            labels = _labels(device, port, lane1.lane)
            for q in LANE_QUANTITIES:
                x0, x1 = getattr(lane0, q), getattr(lane1, q)
                if x0 is None or x1 is None:
                    continue
                if q == "tx_bias_ma":
                    change = abs(x1 - x0) / x0 * 100.0 if x0 else 0.0
                    measure("tx_bias_change", change, key="transceiver.bias_change_pct", **labels)
                else:
                    measure(
                        f"{q}_change", abs(x1 - x0), key="transceiver.power_change_db", **labels
                    )
