"""Link suite: PRBS BER per lane (LINK-1), stability (LINK-2), live FEC (LINK-3).

LINK-1 is proven by switch PRBS at both ends, else a BERT, else (per receiver) from
the FEC counters read across the LINK-2/3 watch (``link_fec_ber``; label
``method=fec_counters``); whatever none of them reaches is recorded not proven.

One test result per switch-switch link of the cabling plan. The test plan, with
the numbered steps these tests follow, is README.md in this folder; run
parameters are in settings.yaml, pass criteria in the limits profile
(``link.*``), vendor quirks in deviations.yaml.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import allure
import pytest
from link_fec_ber import (
    MIN_RS544_GBPS,
    FecBerProof,
    FecCounts,
    fec_ber_proof,
    post_fec_ber_upper_bound,
)
from link_prbs import Campaign, LinkOutcome, lanes_of, plan_links
from link_watch import LinkWatch, Window, host_links, switch_links, switch_names, watch_links

from labtest import plugin
from labtest.capabilities.switch import FecCounters
from labtest.fixtures.suite_data import load_deviations, load_settings
from labtest.lab import Lab
from labtest.measure import Verdict
from labtest.reports import plots
from labtest.reports.attach import attach_png
from labtest.stats import Decision, SequentialBerTest, confidence_below

if TYPE_CHECKING:  # names pytest must not collect (Testbed, test-prefixed helpers)
    from labtest.measure import LimitsProfile
    from labtest.testbed.model import Link, Testbed

SETTINGS = load_settings("link")
DEVIATIONS = load_deviations("link")
#: what LINK-3.1 proves per receiver (the requirement ids of the live FEC judgement)
FEC_KEYS = ("link.fec_uncorrectable_cw", "link.fec_tail_bin", "link.fec_pre_fec_ber")
#: LINK-1's selected links are watched too: their FEC counters prove LINK-1 where PRBS cannot
WATCHED_BY = ("test_link_stability", "test_fec_live", "test_prbs_ber")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Switch-switch links for PRBS and FEC; every cabled link (host and TG links too) for
    stability, watched through whichever end reports its link state."""
    if "link" in metafunc.fixturenames:
        links: list[Link] = []
        tb = plugin.testbed_of(metafunc.config)
        if tb is not None:
            switches = switch_names(plugin.lab_of(metafunc.config))
            if metafunc.function.__name__ == "test_link_stability":
                links = list(tb.links)
            elif metafunc.function.__name__ == "test_fec_live":  # host links: the switch's Rx
                links = switch_links(tb, switches) + host_links(tb, switches)
            else:
                links = switch_links(tb, switches)
        metafunc.parametrize("link", links, ids=[lk.name for lk in links])


def _selected(request: pytest.FixtureRequest, test_name: str) -> list[Link]:
    """Links whose ``test_name`` test was collected (``-k`` narrows the run)."""
    found: dict[str, Link] = {}
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        ours = getattr(item, "module", None) is request.module
        if ours and getattr(item, "originalname", None) == test_name and callspec is not None:
            lk = callspec.params.get("link")
            if lk is not None:
                found[lk.name] = lk
    return list(found.values())


# --- LINK-2 / LINK-3: one watch of every selected link ---------------------------------


@pytest.fixture(scope="module")
def watch(request: pytest.FixtureRequest, lab: Lab, profile: LimitsProfile) -> LinkWatch:
    links = {lk.name: lk for name in WATCHED_BY for lk in _selected(request, name)}
    fec_capable = set(lab.names(capability=FecCounters))
    return watch_links(
        lab,
        list(links.values()),
        duration_s=profile.get("link.watch_s").low or 0.0,
        poll_s=float(SETTINGS["watch"]["poll_s"]),
        fec_capable=fec_capable,
        watchable=set(switch_names(lab)),
        counted_poll_s=float(SETTINGS["watch"]["counted_poll_s"]),
    )


@pytest.mark.plan("LINK-2.1")
@pytest.mark.judges("link.watch_s", "link.flaps")
def test_link_stability(link: Link, watch: LinkWatch, measure: Any) -> None:
    watched = [e for e in link.ends if str(e) in watch.ports]
    if not watched:
        reason = (f"{link.name}: not watched: neither {link.ends[0].device} nor "
                  f"{link.ends[1].device} reports link state (Interfaces capability)")
        measure.not_proven("link.flaps", reason, link=link.name)
        pytest.skip(reason)
    with allure.step("LINK-2.1/1: watch oper state of the reporting end(s) for link.watch_s"):
        watch.raise_for(*(e.device for e in watched))
        measure("watch_duration", watch.duration_s, key="link.watch_s", link=link.name)
        for end in link.ends:
            if end not in watched:
                allure.attach(f"{end}: reports no link state; the link is watched from "
                              f"{', '.join(map(str, watched))}", name=f"{end}: not watched")
    with allure.step("LINK-2.1/2: count down events (flaps, loss of signal) per end"):
        for end in watched:
            pw = watch.ports[str(end)]
            measure(
                "link_flaps",
                pw.flaps,
                key="link.flaps",
                device=end.device,
                port=end.port,
                link=link.name,
            )
            for name, value in (("oper_samples", pw.samples),
                                ("oper_down_samples", pw.down_samples)):
                measure(name, value, unit="samples", device=end.device, port=end.port,
                        link=link.name)
            if pw.status_changes is not None:  # the device's own count over the watch
                measure("link_status_changes", pw.status_changes, unit="changes",
                        device=end.device, port=end.port, link=link.name)


@pytest.mark.plan("LINK-3.1")
@pytest.mark.judges("link.fec_uncorrectable_cw", "link.fec_tail_bin", "link.fec_pre_fec_ber")
def test_fec_live(link: Link, watch: LinkWatch, testbed: Testbed, lab: Lab, measure: Any) -> None:
    """Both receivers of a switch-switch link; of a host link, the switch's receiver (the
    host NIC's FEC counters are not read: that direction is the requirement's stated gap)."""
    a, b = link.ends
    switches = set(switch_names(lab))
    watch.raise_for(a.device, b.device)
    windows = {end: watch.fec[str(end)] for end in (a, b) if str(end) in watch.fec}
    if not windows:
        reason = f"{link.name}: neither end offers FEC counters (FecCounters capability)"
        for key in FEC_KEYS:
            measure.not_proven(key, reason, link=link.name)
        pytest.skip(reason)
    with allure.step("LINK-3.1/1: read FEC counters and histogram at both ends, before and after"):
        for end in (a, b):
            if end not in windows and end.device in switches:
                reason = f"{link.name}: the receiver at {end} is not judged: no FEC counters"
                allure.attach(reason, name=f"{end}: no FEC")
                for key in FEC_KEYS:
                    measure.not_proven(key, reason, link=link.name, device=end.device,
                                       port=end.port)
    with allure.step("LINK-3.1/2: judge uncorrectable codewords, pre-FEC BER and the FEC tail"):
        for end, w in windows.items():
            labels = {"device": end.device, "port": end.port, "link": link.name}
            judged = [
                measure(
                    "fec_uncorrectable_cw",
                    w.uncorrectable_cw,
                    key="link.fec_uncorrectable_cw",
                    **labels,
                ),
            ]
            if w.tail_bin is not None:
                judged.append(
                    measure("fec_tail_bin", w.tail_bin, key="link.fec_tail_bin", **labels)
                )
            else:
                driver = testbed.devices[end.device].driver
                measure.not_proven(
                    "link.fec_tail_bin",
                    f"{end.device} ({driver}) publishes no FEC codeword histogram",
                    **labels,
                )
            if w.pre_fec_ber is not None:
                judged.append(
                    measure("fec_pre_fec_ber", w.pre_fec_ber, key="link.fec_pre_fec_ber", **labels)
                )
            else:
                measure.not_proven("link.fec_pre_fec_ber",
                                   f"{end}: the switch reports no pre-FEC BER", **labels)
            if w.hist_after is None:
                continue
            bins = [v or 0 for v in w.hist_after.bins]
            allure.attach(
                json.dumps({"bins": bins}),
                name=f"FEC bins {end}",
                attachment_type=allure.attachment_type.JSON,
            )
            if any(m.verdict is not Verdict.PASS for m in judged):  # a plot costs ~0.5 s
                attach_png(f"FEC histogram {end}", plots.fec_histogram(bins, title=f"{end}"))


# --- LINK-1: PRBS on every selected link at once -----------------------------------------


@pytest.fixture(scope="module")
def prbs_campaign(
    request: pytest.FixtureRequest,
    lab: Lab,
    testbed: Testbed,
    profile: LimitsProfile,
    module_config_guard: Any,
) -> tuple[Campaign, dict[str, LinkOutcome]]:
    prbs = SETTINGS["prbs"]
    test = SequentialBerTest(
        target_ber=float(profile.get("link.prbs_target_ber").high or 0.0),
        confidence=float(profile.get("link.prbs_confidence").low or 0.0),
    )
    campaign = Campaign(
        lab=lab,
        test=test,
        max_s=float(profile.get("link.prbs_max_s").high or 0.0),
        pattern=str(prbs["pattern"]),
        min_stage_s=float(prbs["min_stage_s"]),
        bits_fallback=lambda dev: DEVIATIONS.find("prbs_bit_count", dev, testbed) is not None,
        read_at_stop=lambda dev: (
            DEVIATIONS.find("prbs_read_while_running", dev, testbed) is not None
        ),
        touch=module_config_guard.touch,
    )
    plans = plan_links(
        lab, testbed, _selected(request, "test_prbs_ber"), float(prbs["lane_rate_factor"])
    )
    return campaign, campaign.run(plans)


@pytest.mark.plan("LINK-1.1")
@pytest.mark.judges(
    "link.prbs_max_s",
    "link.prbs_target_ber",
    "link.prbs_confidence",
    "link.prbs_loss_of_lock",
)
@pytest.mark.destructive
def test_prbs_ber(
    link: Link,
    watch: LinkWatch,  # before the campaign: the watch reads live links' FEC counters
    prbs_campaign: tuple[Campaign, dict[str, LinkOutcome]],
    profile: LimitsProfile,
    measure: Any,
) -> None:
    campaign, outcomes = prbs_campaign
    outcome = outcomes[link.name]
    plan = outcome.plan
    # receivers PRBS does not reach: proven from their FEC counters, else a stated hole
    fec = {end: _fec_proves(link, end, watch, profile, measure, plan.note)
           for end in plan.unmeasured}
    holes = [end for end, verdict in fec.items() if verdict is None]
    if plan.mode is None:
        if holes and all(v is not Verdict.FAIL for v in fec.values()):  # a FAIL must show
            pytest.skip(f"{link.name}: {plan.note}; FEC counters do not prove "
                        f"{', '.join(map(str, holes))}")
        return
    with allure.step(f"LINK-1.1/1: {campaign.pattern} generator and checker ({plan.note})"):
        if outcome.error is not None:
            raise outcome.error.with_traceback(None)  # shared by the campaign: fresh frames
    with allure.step("LINK-1.1/2: sequential stages until every lane is decided"):
        allure.attach("\n".join(campaign.log), name="stages")
        measure("prbs_run_time", outcome.run_time_s, key="link.prbs_max_s", link=link.name)
        allure.attach(
            _lanes_json(outcome, campaign),
            name="lanes",
            attachment_type=allure.attachment_type.JSON,
        )
    with allure.step("LINK-1.1/3: judge every lane: bits, errors, CL, BER upper bound, lock"):
        _judge_lanes(outcome, campaign, measure, link)
    with allure.step("LINK-1.1/4: link back in service (the switches are restored at the end)"):
        up_s = math.inf if outcome.up_again_s is None else outcome.up_again_s
        measure("oper_up_after_prbs", up_s, unit="s", link=link.name)


def _judge_lanes(outcome: LinkOutcome, campaign: Campaign, measure: Any, link: Link) -> None:
    target = campaign.test.target_ber
    worst: dict[str, Any] = {}
    for checker, lane, st in outcome.statements(campaign.test_for):
        labels = {
            "device": checker.device,
            "port": checker.port,
            "lane": lane.lane,
            "link": link.name,
        }
        measure("prbs_bits", lane.bits, unit="bits", **labels)
        measure("prbs_errors", lane.errors, unit="errors", **labels)
        bound = measure(
            "prbs_ber_upper_bound", st.upper_bound, key="link.prbs_target_ber",
            method="prbs" if checker.source == "switch" else "bert", **labels,
        )
        measure(
            "prbs_confidence",
            confidence_below(lane.bits, lane.errors, target),
            key="link.prbs_confidence",
            **labels,
        )
        measure("prbs_loss_of_lock", lane.loss_of_lock, key="link.prbs_loss_of_lock", **labels)
        failing = bound.verdict is not Verdict.PASS  # plot the evidence of a miss (~0.4 s each)
        if failing and lane.history and st.upper_bound > worst.get(checker.end, (None, -1.0))[1]:
            worst[checker.end] = (lane, st.upper_bound)
    for end, (lane, _) in worst.items():
        bits, errors = zip(*lane.history, strict=True)
        attach_png(
            f"BER {end} lane {lane.lane}",
            plots.ber_accumulation(
                list(bits),
                list(errors),
                target_ber=target,
                confidence=campaign.test.confidence,
                title=f"{end} lane {lane.lane}",
            ),
        )


def _lanes_json(outcome: LinkOutcome, campaign: Campaign) -> str:
    rows = [
        {
            "end": c.end,
            "lane": lane.lane,
            "bits": lane.bits,
            "errors": lane.errors,
            "loss_of_lock": lane.loss_of_lock,
            "statement": str(st),
        }
        for c, lane, st in outcome.statements(campaign.test_for)
    ]
    return json.dumps(
        {"stages": outcome.stages, "run_time_s": outcome.run_time_s, "lanes": rows}, indent=2
    )


# --- LINK-1 without PRBS: the FEC counters of the watch ------------------------------------


def _fec_proves(
    link: Link, end: Any, watch: LinkWatch, profile: LimitsProfile, measure: Any, note: str
) -> Verdict | None:
    """Judge ``end``'s receiver from its FEC counters over the watch (``link_fec_ber``);
    records the bound (``method=fec_counters``) and returns its verdict, or records why it
    is not proven and returns None."""
    labels = {"device": end.device, "port": end.port, "link": link.name}
    prbs_why = f"{link.name}: the receiver at {end} is not measured by PRBS ({note})"

    def hole(why: str) -> None:
        measure.not_proven("link.prbs_target_ber", f"{prbs_why}; FEC counters: {why}", **labels)

    watch.raise_for(end.device)
    window = watch.fec.get(str(end))
    if window is None:
        hole(f"{end.device} offers none (FecCounters capability)")
        return None
    speed = link.speed_gbps or 0.0
    if speed < MIN_RS544_GBPS:
        hole(f"{speed:g} Gb/s does not fix RS(544,514), so codewords cannot be counted")
        return None
    if window.corrected_cw is None and window.symbol_errors is None:
        hole(f"{end} reports neither corrected codewords nor corrected symbols")
        return None
    downs = [str(e) for e in link.ends
             if str(e) not in watch.ports or watch.ports[str(e)].down_samples
             or watch.ports[str(e)].flaps]
    if downs:
        hole(f"{', '.join(downs)} not seen up throughout the watch, so the "
             "codewords decoded are unknown")
        return None
    rate_bps = speed * 1e9 * float(SETTINGS["prbs"]["lane_rate_factor"])
    span = watch.window(end.device)  # the receiver's own clock, else the host's (labelled)
    clocked = {**labels, "clock": span.clock}
    proof = fec_ber_proof(
        FecCounts(window.corrected_cw, window.uncorrectable_cw, window.symbol_errors),
        inner_s=span.inner_s,
        outer_s=span.outer_s,
        line_rate_bps=rate_bps,
        lanes=lanes_of(link),
        target_ber=float(profile.get("link.prbs_target_ber").high or 0.0),
        confidence=float(profile.get("link.prbs_confidence").low or 0.0),
    )
    _attach_fec_proof(end, proof, window.uncorrectable_cw, measure, clocked, span)
    if proof.decision is Decision.CONTINUE:
        hole(f"undecided after the {span.inner_s:.1f} s watch ({span.clock} clock; "
             f"too short for these counts): {proof}")
        return None
    return measure("fec_ber_upper_bound", proof.upper_bound, key="link.prbs_target_ber",
                   method="fec_counters", **clocked).verdict


def _attach_fec_proof(
    end: Any, proof: FecBerProof, uncorrectable_cw: int, measure: Any, labels: dict[str, Any],
    span: Window,
) -> None:
    measure("fec_codewords_decoded", proof.codewords, unit="codewords", **labels)
    measure("fec_error_events", proof.events, unit="events", **labels)
    measure("post_fec_ber_upper_bound",
            post_fec_ber_upper_bound(uncorrectable_cw, proof.codewords, proof.confidence),
            **labels)
    allure.attach(f"{proof}\nwindow: {span}", name=f"LINK-1 from FEC counters {end}")
