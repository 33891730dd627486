"""Failover: loss-derived convergence under continuous probe traffic.

Sequence-numbered UDP flows run both ways between two traffic-generator ports
on different leaves while a link is shut, a cable is pulled (optical switch
or VOA) or a spine reboots. Test plan and numbered steps: README.md in this
folder. Run parameters: settings.yaml. Pass criteria: ``failover.*``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import allure
import pytest

from labtest import labtime, plugin
from labtest.capabilities.instruments import Attenuator, OpticalSwitch
from labtest.capabilities.probes import UdpStreamResult, UdpStreams
from labtest.capabilities.switch import Interfaces, PortAdmin, Reboot
from labtest.capabilities.traffic import TrafficGenerator
from labtest.errors import DataplaneFailed, InfraError
from labtest.fixtures.cabling_plan import hosts_by_switch
from labtest.fixtures.criteria import convergence_ms
from labtest.fixtures.polling import poll_until
from labtest.fixtures.suite_data import load_settings
from labtest.fixtures.tg_probes import (
    PathMapping,
    TgPort,
    frames_lost,
    frames_missing,
    map_probe_paths,
    probe_config,
    probe_pair,
    wait_loss_settled,
)
from labtest.fixtures.traffic import FabricView
from labtest.lab import Lab
from labtest.reports.attach import attach_json

SETTINGS = load_settings("failover")
pytestmark = [pytest.mark.destructive]


# --- what can fail: events on the probe traffic's paths -----------------------------------


@dataclass(frozen=True)
class Event:
    """One failure to inject: shut a switch port, pull a cable, or reboot a switch."""

    kind: str  # "shut", "pull" or "reboot"
    device: str  # the switch (shut, reboot) or the instrument (pull)
    target: str  # the switch port (shut), the channel (pull), "" (reboot)
    links: tuple[str, ...]  # the testbed links that lose light or forwarding
    carrier: str = "tg"  # what carries the probe traffic: "tg" or "hosts"
    hosts: tuple[str, str] = ("", "")  # carrier "hosts": the two hosts that stream both ways

    @property
    def label(self) -> str:
        """The failed link for a message; a reboot names its switch (all its links fail)."""
        return f"{self.device} (all links)" if self.kind == "reboot" else ",".join(self.links)

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.device}" + (f":{self.target}" if self.target else "")


def events(lab: Lab) -> list[Event]:
    """Shut each uplink of the TG leaves, pull each instrument-controlled cable, reboot
    each switch the probe traffic crosses that has no TG port; then, so that every switch
    reroutes under traffic at least once, shut one port of each switch not shut yet: over
    the TG's paths where they cross it, else carried by hosts (``UdpStreams``) behind it."""
    view = FabricView.of(lab)
    tb = lab.testbed
    out: list[Event] = []
    admin = set(lab.names(capability="PortAdmin"))
    probe = probe_pair(lab)
    tg_leaves = (probe[0].switch, probe[1].switch) if probe is not None else ()
    tg_links = {u.link for leaf in tg_leaves for u in view.uplinks.get(leaf, [])}
    transit: list[str] = []
    for leaf in tg_leaves:
        for up in view.uplinks.get(leaf, []):
            if leaf in admin:
                out.append(Event("shut", leaf, up.port, (up.link,)))
            if up.peer not in transit:
                transit.append(up.peer)
    for name in lab.names(capability="OpticalSwitch"):
        for channel, port in enumerate(tb.devices[name].vars.get("links", []), 1):
            out.append(_carried(lab, view, tg_links,
                                Event("pull", name, str(channel), (_link_of(tb, str(port)),))))
    for name in lab.names(capability="Attenuator"):
        port = tb.devices[name].vars.get("link")
        if port:
            out.append(_carried(lab, view, tg_links,
                                Event("pull", name, "1", (_link_of(tb, str(port)),))))
    for name in transit:
        if name in lab.names(capability="Reboot"):
            links = tuple(
                lk.name for lk in tb.links if name in (lk.ends[0].device, lk.ends[1].device)
            )
            out.append(Event("reboot", name, "", links))
    shut = {e.device for e in out if e.kind == "shut"}
    for switch in view.switches:
        if switch in shut or switch not in admin:
            continue
        ups = view.uplinks.get(switch, [])
        on_tg = [u for u in ups if u.link in tg_links]
        for up in on_tg[:1] or ups:
            event = _carried(lab, view, tg_links, Event("shut", switch, up.port, (up.link,)))
            if event.carrier == "tg" or event.hosts[0]:
                out.append(event)
                break
    return out


def _carried(lab: Lab, view: FabricView, tg_links: set[str], event: Event) -> Event:
    """The event carried by the TG where its paths cross the failed link, else by two hosts
    on different leaves, the first behind one end of the link (none found: ``hosts`` empty,
    and the event is not exercised)."""
    if set(event.links) & tg_links:
        return event
    streaming = set(lab.names(capability="UdpStreams"))
    by_leaf = hosts_by_switch({h: a for h, a in view.attachment.items() if h in streaming})
    ends = [e.device for lk in lab.testbed.links if lk.name in event.links for e in lk.ends]
    near = next((by_leaf[d][0] for d in ends if by_leaf.get(d)), None)
    if near is None:  # no host behind either end: a host on a leaf one hop away
        near = next((by_leaf[u.peer][0] for d in ends for u in view.uplinks.get(d, [])
                     if by_leaf.get(u.peer)), None)
    if near is None:
        return dataclasses.replace(event, carrier="hosts")
    leaf = view.attachment[near].switch
    far = next((hs[0] for lf, hs in by_leaf.items() if lf != leaf and lf not in ends), None)
    far = far or next((hs[0] for lf, hs in by_leaf.items() if lf != leaf), None)
    return dataclasses.replace(event, carrier="hosts", hosts=(near, far) if far else ("", ""))


def _link_of(testbed: Any, endpoint: str) -> str:
    for link in testbed.links:
        if endpoint in (link.a, link.b):
            return link.name
    raise ValueError(f"{endpoint} is not cabled in the testbed")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "event" in metafunc.fixturenames:
        found: list[Event] = []
        if plugin.testbed_of(metafunc.config) is not None:
            found = events(plugin.lab_of(metafunc.config))
        metafunc.parametrize("event", found, ids=[e.id for e in found])



# --- the probe: flows, and which path each flow takes ---------------------------------------


@dataclass
class Probe:
    tg: TrafficGenerator
    a: TgPort
    b: TgPort
    rate_pps: float
    paths: dict[str, set[str]]  # flow -> testbed links it crosses
    uplinks: list[str]  # the TG leaves' uplink endpoints (switch:port), the ECMP members


def _map_paths(lab: Lab, view: FabricView, tg: TrafficGenerator, a: TgPort, b: TgPort) -> dict:
    """Which testbed links each flow crosses (labtest.fixtures.tg_probes.map_probe_paths)."""
    cfg = SETTINGS["probe"]
    how = PathMapping.from_settings(cfg, SETTINGS, rate_pps=float(cfg["rate_pps_per_flow"]),
                                    timeout_s=float(SETTINGS["recovery_timeout_s"]))
    hops = map_probe_paths(lab, view, tg, a, b, how, attach_json)
    return {flow: {h.link for h in path} for flow, path in hops.items()}


@pytest.fixture(scope="module")
def probe(lab: Lab, fabric_view: FabricView) -> Iterator[Probe]:
    found = probe_pair(lab)
    if found is None:
        pytest.skip("needs one traffic generator with ports on two different switches")
    a, b = found
    tg = lab.device(a.tg, TrafficGenerator)
    paths = _map_paths(lab, fabric_view, tg, a, b)
    cfg = SETTINGS["probe"]
    rate = float(cfg["rate_pps_per_flow"])
    tg.set_config(
        probe_config(
            lab,
            a,
            b,
            flows_per_direction=cfg["flows"],
            frame_size_bytes=cfg["frame_size_bytes"],
            rate_pps=rate,
            dscp=cfg["dscp"],
        )
    )
    uplinks = [u.endpoint for leaf in (a.switch, b.switch) for u in fabric_view.uplinks[leaf]]
    yield Probe(tg, a, b, rate, paths, uplinks)
    tg.stop_traffic()


# --- the failure and the recovery ---------------------------------------------------------------


def _inject(lab: Lab, event: Event, guard: Any) -> Callable[[], None]:
    """Make the failure happen; return how to undo it (safe to call twice)."""
    if event.kind == "shut":
        switch = lab.device(event.device)
        assert isinstance(switch, PortAdmin)
        guard.touch(event.device)
        switch.set_admin(event.target, False)
        return lambda: switch.set_admin(event.target, True)
    if event.kind == "pull":
        inst = lab.device(event.device)
        channel = int(event.target)
        if isinstance(inst, OpticalSwitch):
            output = inst.route_of(channel)
            if output is None:
                pytest.skip(f"{event.device} channel {channel} is not routed: nothing to pull")
            inputs = lab.testbed.devices[event.device].vars.get("inputs", ["A"])
            inst.disconnect(channel)
            return lambda: inst.route(str(inputs[0]), output, channel)
        assert isinstance(inst, Attenuator)
        inst.set_output(False, channel)
        return lambda: inst.set_output(True, channel)
    switch = lab.device(event.device)
    assert isinstance(switch, Reboot)
    guard.touch(event.device)
    switch.reboot(timeout_s=float(SETTINGS["recovery_timeout_s"]))
    return lambda: None  # the reboot is its own recovery


def _ports_of(lab: Lab, links: tuple[str, ...]) -> list[tuple[str, str]]:
    """The switch ends (device, port) of the given testbed links."""
    switches = set(lab.names(capability="Interfaces"))
    out = []
    for link in lab.testbed.links:
        if link.name in links:
            out += [(e.device, e.port) for e in link.ends if e.device in switches]
    return out


def _oper(lab: Lab, ends: list[tuple[str, str]]) -> dict[str, bool | None]:
    states: dict[str, bool | None] = {}
    for device, port in ends:
        switch = lab.device(device)
        if isinstance(switch, Interfaces):
            states[f"{device}:{port}"] = switch.interfaces()[port].oper_up
    return states


def _wait_ends_down(lab: Lab, ends: list[tuple[str, str]], timeout_s: float) -> None:
    """Wait for every end of the failed links to go oper down. An end still up at the
    bound is attached: a far end that keeps its carrier after the near end is shut (a
    media converter, a wire that does not pass loss of light) never reroutes on its own,
    and its wait is part of the event's time."""
    if poll_until(lambda: not any(_oper(lab, ends).values()), timeout_s=timeout_s)[0]:
        return
    up = sorted(e for e, oper in _oper(lab, ends).items() if oper)
    attach_json("ends still oper up after the event", {"ends": up, "waited_s": timeout_s})


def _packets(lab: Lab, endpoints: list[str], counter: str) -> dict[str, int]:
    """One interface counter of switch ports ``device:port``, each switch read once."""
    out = {}
    by_switch: dict[str, list[str]] = {}
    for e in endpoints:
        by_switch.setdefault(e.partition(":")[0], []).append(e)
    for device, ends in by_switch.items():
        counters = lab.device(device).counters()
        for e in ends:
            out[e] = getattr(counters[e.partition(":")[2]], counter) or 0
    return out


def _members_in_use(lab: Lab, probe: Probe) -> set[str]:
    """Uplinks that carried probe traffic while the TG ports sent one second of every flow
    (the window is counted in frames at the TG-facing switch ports, not in wall time)."""
    ingress = [f"{p.switch}:{p.switch_port}" for p in (probe.a, probe.b)]
    flows_per_port = len(probe.paths) // 2
    before = _packets(lab, probe.uplinks, "tx_packets")
    start = _packets(lab, ingress, "rx_packets")
    poll_until(
        lambda: all(
            n - start[e] >= probe.rate_pps * flows_per_port
            for e, n in _packets(lab, ingress, "rx_packets").items()
        ),
        timeout_s=float(SETTINGS["recovery_timeout_s"]),
    )
    after = _packets(lab, probe.uplinks, "tx_packets")
    half_a_flow = probe.rate_pps * 0.5  # at least half a flow's second
    return {e for e in probe.uplinks if after[e] - before[e] >= half_a_flow}


def _members_restored(lab: Lab, probe: Probe, wanted: set[str], timeout_s: float) -> set[str]:
    """Uplinks in use after recovery, read again until every one in use before carries
    traffic or ``timeout_s`` passes. Routing, not the link, sets when a member returns: the
    flows settle loss-free on the members left, and the peer's route comes back when BGP
    advertises it again (a healthy kernel lab's leaf re-added its spine1 member after the
    one read that judged the width had already counted it missing)."""
    deadline = labtime.monotonic() + timeout_s
    while True:
        in_use = _members_in_use(lab, probe)
        if wanted <= in_use or labtime.monotonic() >= deadline:
            return in_use


@pytest.mark.plan("FAIL-1.1")
@pytest.mark.judges(
    "failover.convergence_ms",
    "failover.restoration_convergence_ms",
    "failover.ecmp_width_ratio",
    "failover.unaffected_flow_loss_frames",
)
def test_failover(
    event: Event, lab: Lab, measure: Any, config_guard: Any, request: pytest.FixtureRequest
) -> None:
    """FAIL-1.1: the failure's loss converges within the limit, flows off the failed path
    lose nothing, and recovery restores traffic and ECMP width without loss (FAIL-1.2 where
    hosts carry the probe)."""
    if event.carrier == "hosts":
        _failover_by_hosts(event, lab, measure, config_guard)
        return
    probe: Probe = request.getfixturevalue("probe")
    tg = probe.tg
    timeout = float(SETTINGS["recovery_timeout_s"])
    ends = _ports_of(lab, event.links)
    on_path = sorted(f for f, links in probe.paths.items() if links & set(event.links))
    off_path = sorted(f for f in probe.paths if f not in on_path)
    attach_json("flow paths", {f: sorted(v) for f, v in probe.paths.items()})
    undo: Callable[[], None] | None = None
    with allure.step(f"FAIL-1.1/1: start {len(probe.paths)} probe flows; wait for loss-free flow"):
        tg.start_traffic()
        in_use_before = _members_in_use(lab, probe)
        loss0 = wait_loss_settled(tg, timeout_s=float(SETTINGS["baseline_timeout_s"]))
        if loss0 is None:
            try:
                loss0 = _baseline_loss(measure, probe)
            finally:
                if loss0 is None:  # the fabric's loss was recorded (or the TG stopped)
                    tg.stop_traffic()
            if loss0 is None:
                return
    try:
        with allure.step(f"FAIL-1.1/2: {event.id} (links {', '.join(event.links)})"):
            undo = _inject(lab, event, config_guard)
        with allure.step("FAIL-1.1/3: wait until no flow loses frames any more"):
            if event.kind != "reboot":
                _wait_ends_down(lab, ends, timeout)
            loss1 = wait_loss_settled(tg, timeout_s=timeout)
            converged = loss1 is not None
            if loss1 is None:
                loss1 = frames_lost(tg.metrics())
                measure(
                    "failover.convergence_ms",
                    float("inf"),
                    key="failover.convergence_ms",
                    link=event.label,
                    device=event.device,
                    why="never converged",
                    between=f"{probe.a.switch} {probe.b.switch}",
                )
        with allure.step("FAIL-1.1/4: loss-derived convergence (RFC 6412 eq. 6) per flow"):
            _judge_failure(measure, event, probe, loss0, loss1, on_path, off_path, converged)
        with allure.step("FAIL-1.1/5: recover; wait for the links and loss-free flow"):
            undo()
            undo = None
            if event.kind != "reboot":
                poll_until(lambda: all(_oper(lab, ends).values()), timeout_s=timeout)
            loss2 = wait_loss_settled(tg, timeout_s=timeout) or frames_lost(tg.metrics())
        with allure.step("FAIL-1.1/6: restoration loss and ECMP width after recovery"):
            worst = max((loss2[f] - loss1[f] for f in probe.paths), default=0)
            measure(
                "failover.restoration_convergence_ms",
                convergence_ms(worst, probe.rate_pps),
                key="failover.restoration_convergence_ms",
                link=event.label,
                device=event.device,
            )
            in_use_after = _members_restored(lab, probe, in_use_before, timeout)
            missing = sorted(in_use_before - in_use_after)
            measure(
                "failover.ecmp_width_ratio",
                len(in_use_after) / max(len(in_use_before), 1),
                key="failover.ecmp_width_ratio",
                device=event.device,
                port=",".join(missing),
                before=str(len(in_use_before)),
                after=str(len(in_use_after)),
            )
    finally:
        if undo is not None:
            undo()
        tg.stop_traffic()
    with allure.step("FAIL-1.1/7: stop the probe; every flow sent and none over-received"):
        tg.wait_done(timeout_s=30.0)
        problems = [a for m in tg.metrics() for a in m.anomalies]
        if problems:
            raise InfraError(probe.a.tg, "; ".join(problems))


def _baseline_loss(measure: Any, probe: Probe) -> dict[str, int] | None:
    """The flows did not settle loss-free before any event. Flows that kept losing frames
    while sending over a second window are the fabric's loss, not the lab's: each flow is
    recorded with the links it crosses (the lossy one is what the losing flows share and
    the clean ones clear) and the test fails (None). Every flow sending and none losing:
    they settled late, the loss so far comes back and the test goes on. None losing and some
    silent: the TG stopped sending (broken)."""
    tg = probe.tg
    before = tg.metrics()
    labtime.sleep(float(SETTINGS["baseline_timeout_s"]) / 4)
    after = tg.metrics()
    sent = {m.name: m.frames_tx for m in before}
    received = {m.name: m.frames_rx or 0 for m in before}
    sending = [m.name for m in after if m.frames_tx > sent.get(m.name, m.frames_tx)]
    # a flow that delivered over the window lost what its sequence lacks (frames in flight
    # are not lost); one that delivered nothing, all it sent
    delivering = {m.name for m in after if (m.frames_rx or 0) > received.get(m.name, 0)}
    lost0, lost1 = frames_lost(before), frames_lost(after)
    exact0, exact1 = frames_missing(before), frames_missing(after)
    grew = {f: (exact1[f] - exact0.get(f, 0)) if f in delivering else lost1[f] - lost0.get(f, 0)
            for f in sending if f in probe.paths}
    if not any(v > 0 for v in grew.values()):
        silent = len(probe.paths) - len(grew)
        if silent == 0:
            return exact1
        raise InfraError(probe.a.tg, "the probe flows never ran loss-free before the event, "
                         f"and {silent} of them stopped sending")
    attach_json("frames lost per flow before any event", grew)
    for flow, lost in sorted(grew.items()):
        measure("failover.unaffected_flow_loss_frames", lost,
                key="failover.unaffected_flow_loss_frames", flow=flow,
                links=",".join(sorted(probe.paths[flow])), phase="before the event")
    return None


def _judge_failure(
    measure: Any,
    event: Event,
    probe: Probe,
    loss0: dict[str, int],
    loss1: dict[str, int],
    on_path: list[str],
    off_path: list[str],
    converged: bool = True,
) -> None:
    """Per flow, its loss over its rate; a reroute that never converged stands as the
    infinite one recorded (the loss counted until the wait gave up is no convergence)."""
    lost = {f: loss1[f] - loss0.get(f, 0) for f in probe.paths}
    attach_json("frames lost per flow", lost)
    link = event.label
    device, port = (event.device, event.target) if event.kind == "shut" else (event.device, "")
    if on_path and converged:
        worst = max(on_path, key=lambda f: lost[f])
        measure(
            "failover.convergence_ms",
            convergence_ms(lost[worst], probe.rate_pps),
            key="failover.convergence_ms",
            link=link,
            device=device,
            port=port,
            flow=worst,
            flows_on_path=str(len(on_path)),
            # the TG ports' switches: the routes left between them once the link is down
            between=f"{probe.a.switch} {probe.b.switch}",
        )
    elif not on_path:
        measure("failover.flows_on_failed_path", 0, unit="flows", link=link)
    hit = sorted(f for f in off_path if lost[f] > 0)
    # what the losing flows crossed: a lossy member on their own path explains them as well
    # as the event's rehash does
    crossed = sorted({lk for f in hit for lk in probe.paths[f]})
    measure(
        "failover.unaffected_flow_loss_frames",
        sum(lost[f] for f in off_path),
        key="failover.unaffected_flow_loss_frames",
        link=link,
        device=device,
        port=port,
        flows=" ".join(hit[:6]),
        **({"links": ",".join(crossed)} if crossed else {}),
    )


# --- FAIL-1.2: where the TG does not reach, hosts carry the probe ----------------------------


def _not_exercised(measure: Any, event: Event, reason: str) -> None:
    """The event's switch cell is not proven, with the reason; the test is skipped."""
    for key in ("failover.convergence_ms",):
        measure.not_proven(key, f"{event.id}: {reason}", device=event.device, link=event.label)
    pytest.skip(f"{event.id}: {reason}")


def _moved(lab: Lab, ends: list[tuple[str, str]]) -> dict[str, int]:
    """Packets sent plus received so far on the switch ends of the failed links."""
    out: dict[str, int] = {}
    for device, port in ends:
        c = lab.device(device).counters()[port]
        out[f"{device}:{port}"] = int(c.tx_packets or 0) + int(c.rx_packets or 0)
    return out


def _failover_by_hosts(event: Event, lab: Lab, measure: Any, config_guard: Any) -> None:
    """FAIL-1.2: two hosts on different leaves stream sequence-numbered UDP both ways
    (``UdpStreams``: iperf3 -u -P N, one source port per stream); the link fails under
    them; each stream's lost datagrams over its rate is its outage (RFC 6412 eq. 6)."""
    cfg = SETTINGS["host_probe"]
    near, far = event.hosts
    if not near or not far:
        _not_exercised(measure, event, "no two hosts on different leaves offer UdpStreams "
                       "(iperf3) to carry traffic across it, and no TG path crosses it")
    a, b = lab.device(near), lab.device(far)
    if not (isinstance(a, UdpStreams) and isinstance(b, UdpStreams)):
        _not_exercised(measure, event, f"{near} or {far} offers no UdpStreams")
    timeout = float(SETTINGS["recovery_timeout_s"])
    streams, rate = int(cfg["streams"]), float(cfg["rate_pps_per_stream"])
    duration = float(cfg["duration_s"])
    port = int(cfg["port"])
    ends = _ports_of(lab, event.links)
    with allure.step(f"FAIL-1.2/0: {near} <-> {far}: {streams} UDP streams each way for "
                     f"{float(cfg['baseline_s']):g} s, before any event"):
        if not _hosts_loss_free(measure, a, b, cfg, timeout):
            return
    undo: Callable[[], None] | None = None
    limit_s = _limit_ms(measure) / 1000.0
    attempts = int(cfg["attempts"])
    try:
        for attempt in range(1, attempts + 1):
            with allure.step(f"FAIL-1.2/1: {near} <-> {far}: {streams} UDP streams each way, "
                             f"{rate:g} datagrams/s each, for {duration:g} s"):
                began = labtime.device_s()  # the streams' -t counts device seconds
                # a new pair of ports per attempt: a closing one-shot server may hold one
                runs = _both_ways(a, b, cfg, duration, port + 4 * (attempt - 1))
                labtime.sleep(float(cfg["lead_s"]))
                before = _moved(lab, ends)
                labtime.sleep(float(cfg["crossing_window_s"]))
                after = _moved(lab, ends)
                crossed = {e: after[e] - before[e] for e in after}
                attach_json("probe packets through the failed link's ends", crossed)
                spent_s = labtime.device_s() - began
                if duration - spent_s >= spent_s + 2 * limit_s or attempt == attempts:
                    break
                # too short for this lab's pace (a busy runner): what is left would not
                # outlast the event's own commands and a slow reroute; no event on these
                attach_json(f"attempt {attempt}: the streams are too short for the lab's pace",
                            {"streams_s": duration, "spent_before_the_event_s": spent_s})
                try:
                    _results(runs, timeout)  # they end by themselves: their ports free
                except DataplaneFailed as exc:  # their setup met the fabric's hole
                    _streams_died(measure, runs, exc, cfg, "with the event")
                    return
                # the lead again (room for the event's own commands) and twice the limit
                duration = float(labtime.longer_s(duration, 2 * spent_s + 2 * limit_s,
                                                  float(cfg["margin"]), float(cfg["max_stretch"])))
        with allure.step(f"FAIL-1.2/2: {event.id} (links {', '.join(event.links)})"):
            undo = _inject(lab, event, config_guard)
            event_s = labtime.device_s()
            _wait_ends_down(lab, ends, timeout)
            window_ms = (began + duration - event_s) * 1000.0
            if window_ms < 2 * limit_s * 1000.0:
                raise InfraError(near, f"the event came {event_s - began:.1f} s after the "
                                 f"streams started: they send for {duration:g} s, too little "
                                 "is left to see a slow reroute (raise host_probe.duration_s)")
        with allure.step("FAIL-1.2/3: the streams end; lost datagrams per stream"):
            try:
                results = _results(runs, timeout)
            except DataplaneFailed as exc:  # their setup met the fabric's hole, not the event
                _streams_died(measure, runs, exc, cfg, "with the event")
                return
            attach_json("streams", [{"from": run.client, "to": run.server, "sport": r.sport,
                                     "packets": r.packets, "lost": r.lost_packets,
                                     "loss_ms": round(r.loss_ms, 1)} for run, r in results])
    finally:
        if undo is not None:
            undo()
            if event.kind != "reboot":
                poll_until(lambda: all(_oper(lab, ends).values()), timeout_s=timeout)
    _judge_by_hosts(measure, event, results, crossed, rate, window_ms)


def _both_ways(a: Any, b: Any, cfg: dict[str, Any], duration_s: float, port: int
               ) -> list[tuple[Any, Any]]:
    """``a`` streams to ``b`` (server ``port``) and ``b`` to ``a`` (``port + 1``), at once:
    (the sending driver, its run) each."""
    how = {"streams": int(cfg["streams"]), "rate_pps": float(cfg["rate_pps_per_stream"]),
           "payload_bytes": int(cfg["payload_bytes"]), "duration_s": duration_s}
    return [(a, a.udp_streams_start(b, port=port, **how)),
            (b, b.udp_streams_start(a, port=port + 1, **how))]


def _results(runs: list[tuple[Any, Any]], timeout_s: float) -> list[tuple[Any, Any]]:
    """Every stream of ``runs`` once its report is whole: (its run, its result) each."""
    return [(run, r) for drv, run in runs for r in drv.udp_streams_result(run, timeout_s=timeout_s)]


def _hosts_loss_free(measure: Any, a: Any, b: Any, cfg: dict[str, Any], timeout: float
                     ) -> bool:
    """The streams' loss is the event's only if they lose nothing without it: a stream
    hashed onto a lossy member would add that member's loss to its outage. Streams that
    lose frames before any event are the fabric's loss: every stream is recorded (its hosts
    give its routes; the clean ones clear what they may have crossed) and the test fails
    with no event."""
    # the event's streams take port and port + 1 right after
    runs = _both_ways(a, b, cfg, float(cfg["baseline_s"]), int(cfg["port"]) + 2)
    try:
        streams = _results(runs, timeout)
    except DataplaneFailed as exc:
        _streams_died(measure, runs, exc, cfg, "before the event")
        return False
    if not any(r.lost_packets > 0 for _, r in streams):
        return True
    attach_json("datagrams lost per stream before any event",
                {f"{run.client}>{run.server}:{r.sport}": r.lost_packets for run, r in streams})
    for run, r in streams:  # the clean ones clear the members they may have crossed
        measure("failover.unaffected_flow_loss_frames", r.lost_packets,
                key="failover.unaffected_flow_loss_frames",
                flow=f"{run.client}>{run.server}:{r.sport}", phase="before the event",
                carrier="hosts")
    return False


def _streams_died(measure: Any, runs: list[tuple[Any, Any]], exc: DataplaneFailed,
                  cfg: dict[str, Any], phase: str) -> None:
    """iperf3 opens each stream with a datagram of the stream's own 5-tuple and gives up when
    it goes unanswered: a stream hashed into a hole (an ECMP blackhole) kills the whole run
    before any event. The fabric's loss, not a broken lab: a failure on the dead run's
    routes (``flow``: sender>receiver; every member: ``flows``), which root-cause inference
    places."""
    dead = next((run for _, run in runs if run.client == exc.device), runs[0][1])
    measure("failover.unaffected_flow_loss_frames", float("nan"),
            key="failover.unaffected_flow_loss_frames", flow=f"{dead.client}>{dead.server}",
            flows=str(int(cfg["streams"])), phase=phase, carrier="hosts",
            error=f"{exc.device}'s streams died: {exc.evidence or exc}")


def _limit_ms(measure: Any) -> float:
    try:
        high = measure.profile.get("failover.convergence_ms").high
    except (AttributeError, KeyError, LookupError):
        high = None
    return float(high) if high is not None else 1000.0


def _judge_by_hosts(measure: Any, event: Event, results: list[tuple[Any, UdpStreamResult]],
                    crossed: dict[str, int], rate: float, window_ms: float) -> None:
    with allure.step("FAIL-1.2/4: the worst stream's outage against the limit"):
        lost = [(run, r) for run, r in results if r.lost_packets > 0]
        if not lost and max(crossed.values(), default=0) < rate * 0.5:
            _not_exercised(measure, event, f"none of the {len(results)} host streams was "
                           "hashed onto it (its ports carried under half a stream's rate)")
        labels = {"link": event.label, "device": event.device,
                  "port": event.target if event.kind == "shut" else "", "carrier": "hosts"}
        if not lost:
            measure("failover.convergence_ms", 0.0, key="failover.convergence_ms",
                    flows_on_path="0", **labels)
            return
        run, worst = max(lost, key=lambda x: x[1].loss_ms)
        value = worst.loss_ms
        why = {}
        if value >= window_ms - 1000.0 / rate:
            value, why = float("inf"), {"why": f"still losing when the streams ended "
                                              f"{window_ms:.0f} ms after the event"}
        measure("failover.convergence_ms", value, key="failover.convergence_ms",
                flow=f"{run.client}>{run.server}:{worst.sport}", flows_on_path=str(len(lost)),
                **labels, **why)


@pytest.mark.plan("FAIL-1.3")
@pytest.mark.judges("failover.convergence_ms")
def test_every_switch_reroutes(lab: Lab, measure: Any) -> None:
    """FAIL-1.3: every switch has a failure event of its own (a port it shuts under probe
    traffic); a switch without one is not proven, with the reason (never a silent pass)."""
    found = events(lab)
    shut = {e.device for e in found if e.kind == "shut"}
    admin = set(lab.names(capability="PortAdmin"))
    missing = [s for s in FabricView.of(lab).switches if s not in shut]
    for switch in missing:
        why = (f"{switch} cannot shut a port (its driver offers no PortAdmin)"
               if switch not in admin else
               f"no probe traffic can cross a link of {switch}: no TG path, and no two hosts "
               "on different leaves offering UdpStreams")
        measure.not_proven("failover.convergence_ms", why, device=switch)
    attach_json("failure events per switch",
                {s: [e.id for e in found if e.device == s] for s in FabricView.of(lab).switches})
