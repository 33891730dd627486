"""Congestion: N:1 incast on the lossless priority, a victim flow, the PFC watchdog.

Test plan and numbered steps: README.md in this folder. Run parameters:
settings.yaml. Pass criteria: ``congestion.*`` in the limits profile.
"""

from __future__ import annotations

import math
from typing import Any

import allure
import pytest

from labtest import labtime, plugin
from labtest.capabilities.host import PerftestSpec
from labtest.capabilities.switch import Interfaces, PfcQueues
from labtest.capabilities.traffic import (
    Ethernet,
    Flow,
    Ipv4,
    Port,
    TrafficConfig,
    TrafficGenerator,
    Udp,
    pause_refresh_pps,
    pfc_storm_flow,
)
from labtest.errors import InfraError
from labtest.fixtures.cabling_plan import hosts_by_switch
from labtest.fixtures.criteria import fraction, jain_index
from labtest.fixtures.perftest_pairs import run_bandwidth_pairs
from labtest.fixtures.run_counters import PortDelta, counter_delta, fabric_deltas
from labtest.fixtures.suite_data import load_deviations, load_settings
from labtest.fixtures.tg_probes import local_mac
from labtest.fixtures.traffic import FabricView
from labtest.measure.measurement import Recorder
from labtest.reports import plots
from labtest.reports.attach import attach_json, attach_png

SETTINGS = load_settings("congestion")
DEVIATIONS = load_deviations("congestion")
LOSSLESS = tuple(SETTINGS["lossless_priorities"])
LOSSY = tuple(p for p in range(8) if p not in LOSSLESS)
DEFAULT_ROCE_MTU = 4096  # when a run's output does not say


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if plugin.testbed_of(metafunc.config) is None:
        for name in ("receiver", "wd_switch"):
            if name in metafunc.fixturenames:
                metafunc.parametrize(name, [])
        return
    lab = plugin.lab_of(metafunc.config)
    if "receiver" in metafunc.fixturenames:
        view = FabricView.of(lab)
        hosts = view.hosts
        if SETTINGS["incast"].get("receivers", "all") == "one-per-leaf":
            hosts = [group[0] for group in hosts_by_switch(view.attachment).values()]
        metafunc.parametrize("receiver", hosts)
    if "wd_switch" in metafunc.fixturenames:
        metafunc.parametrize("wd_switch", lab.names(capability="PfcQueues"))


def _spec(section: str) -> PerftestSpec:
    """The incast's perftest options, with ``section``'s overrides (e.g. the victim's)."""
    s = {**SETTINGS["incast"], **SETTINGS.get(section, {})}
    return PerftestSpec(
        test=s["test"], size_bytes=s["size_bytes"], qps=s["qps"], duration_s=s["duration_s"]
    )


def _deviation(check: str, device: str, view: FabricView) -> str | None:
    d = DEVIATIONS.find(check, device, view.lab.testbed)
    return f"{d.id}: {d.reason}" if d else None


# --- CONG-1.1 -------------------------------------------------------------------------------


def _judge_drops(measure: Any, deltas: dict[str, PortDelta], receiver: str) -> None:
    """Lossless priorities drop nothing: queue drops where counted, else port discards."""
    dropped: dict[str, int] = {}
    for endpoint, d in deltas.items():
        if d.queue_drops:
            n = sum(d.queue_drops.get(p, 0) for p in LOSSLESS)
        else:
            n = (d.tx_discards or 0) + (d.rx_discards or 0)
        if n > 0:
            dropped[endpoint] = n
    _per_port(measure, "congestion.lossless_drops", dropped, receiver)


def _per_port(measure: Recorder, key: str, counts: dict[str, int], receiver: str) -> None:
    """One measurement per port that counted some, else a single zero for the receiver's
    run: the lossless-drop and lossy-PFC checks record alike."""
    if not counts:
        measure(key, 0, key=key, receiver=receiver)
    for endpoint, n in sorted(counts.items()):
        device, _, port = endpoint.partition(":")
        measure(key, n, key=key, device=device, port=port, receiver=receiver)


def _judge_lossy_pfc(measure: Any, deltas: dict[str, PortDelta], receiver: str) -> int:
    """PFC frames on lossy priorities; returns the lossless pause frames seen (evidence)."""
    lossy = {e: d.pfc_tx_on(LOSSY) + d.pfc_rx_on(LOSSY) for e, d in deltas.items() if d.pfc_tx}
    bad = {e: n for e, n in lossy.items() if n > 0}
    _per_port(measure, "congestion.lossy_pfc_frames", bad, receiver)
    return sum(d.pfc_tx_on(LOSSLESS) for d in deltas.values())


def _judge_ecn(
    measure: Any,
    view: FabricView,
    deltas: dict[str, PortDelta],
    receiver: str,
    hosts_before: dict[str, Any],
    hosts_after: dict[str, Any],
    senders: list[str],
) -> None:
    """ECN marks at the congested port, CNPs from the receiver, CNPs handled by each sender.

    Where the switch does not count ECN marks per queue (or a deviation replaces it), the
    marks the receiving NIC saw stand in for the port's: the congested port is the last
    switch queue the incast crosses.
    """

    def hw(host: str, name: str) -> int | None:
        b, a = hosts_before[host].rdma, hosts_after[host].rdma
        if a is None or b is None or getattr(a, name) is None or getattr(b, name) is None:
            return None
        return max(getattr(a, name) - getattr(b, name), 0)

    def nic_count(host: str, name: str, key: str, **labels: str) -> None:
        """A NIC counter's growth under its own key; nothing where the NIC does not count it."""
        grown = hw(host, name)
        if grown is not None:
            measure(key, grown, key=key, host=host, **labels)

    att = view.attachment[receiver]
    congested = deltas.get(f"{att.switch}:{att.switch_port}")
    deviated = _deviation("congestion.ecn_marked_packets", att.switch, view)
    where = {"device": att.switch, "port": att.switch_port, "receiver": receiver}
    marked_rx = hw(receiver, "np_ecn_marked_roce_packets")
    if congested is not None and congested.queue_ecn_marked and not deviated:
        marked = sum(congested.queue_ecn_marked.get(p, 0) for p in LOSSLESS)
        measure(
            "congestion.ecn_marked_packets", marked, key="congestion.ecn_marked_packets", **where
        )
    elif marked_rx is not None:
        measure(
            "congestion.ecn_marked_packets",
            marked_rx,
            key="congestion.ecn_marked_packets",
            **where,
            seen_by=f"{receiver} NIC",
            why=deviated or "no per-queue switch counter",
        )
    if marked_rx is not None:
        measure("congestion.receiver_ecn_marked_packets", marked_rx, unit="packets", host=receiver)
    where_marked = f"{att.switch}:{att.switch_port}"
    nic_count(receiver, "np_cnp_sent", "congestion.cnp_sent", role="receiver",
              ecn_port=where_marked)
    for sender in senders:
        # CNPs answer the marks of that port; but one sender short of CNPs where the others
        # got theirs from the same port differs from them on its own path (a member holing
        # its flows, its NIC): the port is not where it is located (marked_at, not ecn_port)
        nic_count(sender, "rp_cnp_handled", "congestion.cnp_handled", role="sender",
                  receiver=receiver, marked_at=where_marked)


def _leaf_port(view: FabricView, host: str) -> str:
    att = view.attachment[host]
    return f"{att.switch}:{att.switch_port}"


def _sent_packets(view: FabricView, deltas: dict[str, PortDelta], hosts: list[str]) -> dict:
    """Packets each host put on the wire: rx packets of its leaf port (every switch counts
    packets; not every switch counts bytes per port)."""
    out: dict[str, float] = {}
    for h in hosts:
        d = deltas.get(_leaf_port(view, h))
        amount = d.rx_amount() if d is not None else None
        if amount is None:
            raise InfraError(view.attachment[h].switch, f"no rx packet counter on {h}'s port")
        out[h] = amount
    return out


def _ran_alone(view: FabricView, receiver: str, outcomes: list[Any]) -> str:
    """An incast proves nothing if a sender ran alone: one that reports more than twice its
    share of the receiver's rate did not share it (its client started after the others
    ended, or before they began). Returns who, or "" when they ran together."""
    line = view.negotiated_gbps(receiver) or view.attachment[receiver].speed_gbps
    if not line or len(outcomes) < 2:
        return ""
    share = line / len(outcomes)
    alone = [f"{o.client} at {o.bw_gbps:.0f} Gb/s" for o in outcomes if o.bw_gbps > 2 * share]
    return f"{', '.join(alone)} (share {share:.0f} Gb/s)" if alone else ""


@pytest.mark.plan("CONG-1.1")
@pytest.mark.judges(
    "congestion.lossless_drops",
    "congestion.lossy_pfc_frames",
    "congestion.ecn_marked_packets",
    "congestion.cnp_sent",
    "congestion.cnp_handled",
    "congestion.jain_fairness_index",
    "congestion.incast_goodput_fraction",
)
@pytest.mark.needs("Perftest", count=3)
def test_incast(receiver: str, fabric_view: FabricView, measure: Any) -> None:
    """CONG-1.1: every other host writes to ``receiver`` at once on the lossless priority."""
    view = fabric_view
    senders = [h for h in view.hosts if h != receiver]
    spec = _spec("incast")
    everyone = [receiver, *senders]
    attempts = int(SETTINGS["incast"].get("attempts", 1))
    for attempt in range(1, attempts + 1):
        with allure.step("CONG-1.1/1: switch and host counters before the incast"):
            before, hosts_before = view.snapshot(everyone, pfc=True)
        with allure.step(
            f"CONG-1.1/2: {len(senders)}:1 incast into {receiver}, ib_write_bw -q {spec.qps} "
            f"-s {spec.size_bytes} -D {spec.duration_s} from every sender at once "
            f"(attempt {attempt})"
        ):
            outcomes = run_bandwidth_pairs(view.lab, [(s, receiver) for s in senders], spec)
            alone = _ran_alone(view, receiver, outcomes)
        if not alone:
            break
        if attempt == attempts:
            raise InfraError(receiver, f"the incast's senders did not run together: {alone}")
    with allure.step("CONG-1.1/3: switch and host counters after the incast"):
        after, hosts_after = view.snapshot(everyone, pfc=True)
        deltas = fabric_deltas(before, after)
    with allure.step("CONG-1.1/4: zero drops on the lossless priorities"):
        _judge_drops(measure, deltas, receiver)
        for host in everyone:
            rdma_after, rdma_before = hosts_after[host].rdma, hosts_before[host].rdma
            oos = counter_delta(
                rdma_after.counters if rdma_after else None,
                rdma_before.counters if rdma_before else None,
                "out_of_sequence",
            )
            if oos:
                measure("congestion.out_of_sequence", oos, unit="packets", host=host)
    with allure.step("CONG-1.1/5: PFC on lossless priorities only (lossy classes pause nothing)"):
        paused = _judge_lossy_pfc(measure, deltas, receiver)
        measure("congestion.lossless_pfc_frames", paused, unit="frames", receiver=receiver)
    with allure.step("CONG-1.1/6: ECN marks at the congested port, CNPs sent and handled"):
        _judge_ecn(measure, view, deltas, receiver, hosts_before, hosts_after, senders)
    with allure.step("CONG-1.1/7: per-sender fairness (Jain) and aggregate goodput"):
        rates = {o.client: o.bw_gbps for o in outcomes}  # each sender's goodput, per perftest
        goodput = sum(rates.values())
        slowest = min(rates, key=rates.__getitem__)
        measure(
            "congestion.jain_fairness_index",
            jain_index(list(rates.values())),
            key="congestion.jain_fairness_index",
            receiver=receiver,
            host=slowest,
            slowest_gbps=f"{rates[slowest]:.1f}",
        )
        # what each sender's leaf port received (packets x RoCE MTU): the switches' view
        packets = _sent_packets(view, deltas, senders)
        mtu = {o.client: (o.bandwidth.mtu_bytes if o.bandwidth else None) for o in outcomes}
        sent = {h: n * (mtu.get(h) or DEFAULT_ROCE_MTU) for h, n in packets.items()}
        attach_json(
            "sender shares of the incast (leaf port rx packets x RoCE MTU)",
            {h: fraction(v, sum(sent.values())) for h, v in sent.items()},
        )
        attach_png(
            "incast sender rates",
            plots.throughput_per_flow(
                rates,
                expected_gbps=goodput / len(senders),
                title=f"{len(senders)}:1 incast into {receiver}: goodput per sender",
            ),
        )
        line = view.negotiated_gbps(receiver) or view.attachment[receiver].speed_gbps
        if line:
            measure(
                "congestion.incast_goodput_fraction",
                fraction(goodput, line),
                key="congestion.incast_goodput_fraction",
                receiver=receiver,
                goodput_gbps=f"{goodput:.1f}",
                senders=" ".join(senders),  # the aggregate crossed every sender's routes
            )
        for o in outcomes:
            if o.error:
                measure(
                    "congestion.incast_goodput_fraction",
                    0.0,
                    key="congestion.incast_goodput_fraction",
                    receiver=receiver,
                    host=o.client,
                    error=o.error,
                )


# --- CONG-1.2 -------------------------------------------------------------------------------


def _victim_setup(view: FabricView) -> tuple[str, list[str], tuple[str, str]] | None:
    """(receiver, incast senders, victim pair): the victim's sender shares its leaf's
    uplinks with an incast sender; its receiver is on a third leaf (not the congested port)."""
    by_leaf: dict[str, list[str]] = {}
    for h in view.hosts:
        by_leaf.setdefault(view.attachment[h].switch, []).append(h)
    leaves = list(by_leaf)
    for a in leaves:
        if len(by_leaf[a]) < 2:
            continue
        others = [leaf for leaf in leaves if leaf != a]
        if len(others) < 2:
            continue
        b, c = others[0], others[1]
        receiver = by_leaf[b][0]
        victim = (by_leaf[a][1], by_leaf[c][0])
        senders = [h for h in view.hosts if h not in (receiver, *victim)]
        return receiver, senders, victim
    return None


@pytest.mark.plan("CONG-1.2")
@pytest.mark.judges("congestion.victim_rate_fraction")
@pytest.mark.needs("Perftest", count=4)
def test_victim_flow(fabric_view: FabricView, measure: Any) -> None:
    """CONG-1.2: a flow sharing an upstream link with an incast, but not its congested
    port, keeps its rate (no congestion spreading / head-of-line blocking)."""
    view = fabric_view
    setup = _victim_setup(view)
    if setup is None:
        pytest.skip("needs a leaf with two hosts and two other leaves with hosts")
    receiver, senders, victim = setup
    spec = _spec("victim")
    with allure.step(f"CONG-1.2/1: the victim {victim[0]}->{victim[1]} alone: its baseline"):
        before = view.snapshot_switches()
        (alone,) = run_bandwidth_pairs(view.lab, [victim], spec)
        base = _sent_packets(view, fabric_deltas(before, view.snapshot_switches()), [victim[0]])
    with allure.step(
        f"CONG-1.2/2: the victim again, beside a {len(senders)}:1 incast into {receiver}"
    ):
        before = view.snapshot_switches()
        pairs = [victim, *[(s, receiver) for s in senders]]
        outcomes = run_bandwidth_pairs(view.lab, pairs, spec)
        during = _sent_packets(view, fabric_deltas(before, view.snapshot_switches()), [victim[0]])
    with allure.step("CONG-1.2/3: the victim's packets beside the incast against its baseline"):
        # both runs last the same -D seconds, so the packet ratio is the rate ratio
        measure(
            "congestion.victim_rate_fraction",
            fraction(during[victim[0]], base[victim[0]]),
            key="congestion.victim_rate_fraction",
            pair=f"{victim[0]}--{victim[1]}",
            host=victim[0],
            # where its packets were counted, not a place it names: a fault there slows
            # the baseline alike. What slows it only beside the incast is the incast's
            # doing, so the incast is its background (a cause spoiling that load explains it)
            counted_at=_leaf_port(view, victim[0]),
            incast_receiver=receiver,
            background=" ".join(f"{s}>{receiver}" for s in senders),
        )
        measure(
            "congestion.victim_perftest_fraction",
            fraction(outcomes[0].bw_gbps, alone.bw_gbps),
            unit="ratio",
            pair=f"{victim[0]}--{victim[1]}",
        )


# --- CONG-3.x: the PFC watchdog ---------------------------------------------------------------


@pytest.mark.plan("CONG-3.1")
@pytest.mark.judges("congestion.pfcwd_unarmed_queues")
def test_pfcwd_armed(wd_switch: str, fabric_view: FabricView, measure: Any) -> None:
    """CONG-3.1: the PFC watchdog watches every lossless queue of every active port."""
    view = fabric_view
    switch = view.lab.device(wd_switch)
    assert isinstance(switch, PfcQueues) and isinstance(switch, Interfaces)
    deviated = _deviation("congestion.pfcwd_unarmed_queues", wd_switch, view)
    if deviated:
        pytest.skip(f"declared deviation {deviated}")
    with allure.step("CONG-3.1/1: ports with a link up"):
        active = [p for p, st in switch.interfaces().items() if st.oper_up]
    with allure.step("CONG-3.1/2: watchdog configuration and per-queue state"):
        config = switch.pfc_watchdog_config()
        state = switch.pfc_watchdog()
        attach_json(f"{wd_switch} pfcwd config", config)
        attach_json(f"{wd_switch} pfcwd state", state)
    with allure.step("CONG-3.1/3: every lossless queue of every active port is armed"):
        unarmed = []
        for port in active:
            if port not in config:
                unarmed += [f"{port}:{q}" for q in LOSSLESS]
                continue
            for q in LOSSLESS:
                st = state.get(f"{port}:{q}")
                if st is None or st.status in (None, "N/A", "n/a"):
                    unarmed.append(f"{port}:{q}")
        first = unarmed[0].rpartition(":")[0] if unarmed else ""
        measure(
            "congestion.pfcwd_unarmed_queues",
            len(unarmed),
            key="congestion.pfcwd_unarmed_queues",
            device=wd_switch,
            port=first,
            queues=" ".join(unarmed[:8]),
        )


@pytest.mark.plan("CONG-3.2")
@pytest.mark.judges("congestion.idle_pfc_rx_frames", "congestion.stormed_queues")
@pytest.mark.needs("Interfaces")
def test_no_pause_storm(fabric_view: FabricView, measure: Any) -> None:
    """CONG-3.2: an idle fabric receives no pause frames and has no stormed queue."""
    view = fabric_view
    window_s = float(SETTINGS["idle_window_s"])
    with allure.step("CONG-3.2/1: PFC counters of every switch, idle"):
        before = view.snapshot_switches(pfc=True)
    with allure.step(f"CONG-3.2/2: again after {window_s:g} s without test traffic"):
        labtime.sleep(window_s)  # the observation window itself, not a wait for a condition
        after = view.snapshot_switches(pfc=True)
        deltas = fabric_deltas(before, after)
    with allure.step("CONG-3.2/3: no port received pause frames"):
        storming = {e: d.pfc_rx_on(range(8)) for e, d in deltas.items() if d.pfc_rx_on(range(8))}
        if not storming:
            measure("congestion.idle_pfc_rx_frames", 0, key="congestion.idle_pfc_rx_frames")
        for endpoint, n in sorted(storming.items()):
            device, _, port = endpoint.partition(":")
            prios = [p for p, v in enumerate(deltas[endpoint].pfc_rx) if v]
            measure(
                "congestion.idle_pfc_rx_frames",
                n,
                key="congestion.idle_pfc_rx_frames",
                device=device,
                port=port,
                peer=_peer(view, endpoint),
                priorities=",".join(map(str, prios)),
            )
    with allure.step("CONG-3.2/4: no watchdog reports a stormed queue"):
        for name in view.switches:
            switch = view.lab.device(name)
            if not isinstance(switch, PfcQueues):
                continue
            stormed = [
                s for s in switch.pfc_watchdog().values() if (s.status or "").lower() == "stormed"
            ]
            first = stormed[0].port if stormed else ""
            peer = _peer(view, f"{name}:{first}") if first else ""
            measure(
                "congestion.stormed_queues",
                len(stormed),
                key="congestion.stormed_queues",
                device=name,
                port=first,
                peer=peer,
                queues=" ".join(f"{s.port}:{s.queue}" for s in stormed[:8]),
            )


def _peer(view: FabricView, endpoint: str) -> str:
    """The far end of a switch port in the cabling plan (the device pausing it)."""
    for link in view.lab.testbed.links:
        if endpoint == link.a:
            return link.b
        if endpoint == link.b:
            return link.a
    return ""


def _tg_ports(view: FabricView) -> tuple[str, str, str, str, str, float] | None:
    """(tg, storm port, other port, switch, switch port, speed): the storm port is cabled to
    a switch with watchdog counters; the other TG port sends the other-priority flow."""
    lab = view.lab
    watched = set(lab.names(capability="PfcQueues"))
    for tg in lab.names(capability="TrafficGenerator"):
        ports = [
            (mine, theirs, lk)
            for lk in lab.testbed.links
            for mine, theirs in (lk.ends, lk.ends[::-1])
            if mine.device == tg
        ]
        for mine, theirs, lk in ports:
            other = next((m.port for m, _, _ in ports if m.port != mine.port), None)
            if theirs.device in watched and other is not None:
                return tg, mine.port, other, theirs.device, theirs.port, lk.speed_gbps or 100.0
    return None


@pytest.mark.plan("CONG-3.3")
@pytest.mark.judges(
    "congestion.pfcwd_unarmed_queues",
    "congestion.pfcwd_detect_excess_ms",
    "congestion.other_priority_loss_frames",
    "congestion.pfcwd_restore_excess_ms",
)
@pytest.mark.needs("TrafficGenerator")
def test_pfc_watchdog_storm(fabric_view: FabricView, measure: Any) -> None:
    """CONG-3.3: a pause storm into a switch port is detected within detect+poll and its
    queue dropped, other priorities keep flowing, and the queue is restored within
    restore+poll after the storm ends."""
    view = fabric_view
    found = _tg_ports(view)
    if found is None:
        pytest.skip("needs two TG ports, one cabled to a switch with PFC watchdog counters")
    tg_name, storm_port, other_port, sw_name, sw_port, speed = found
    tg, switch = view.lab.device(tg_name), view.lab.device(sw_name)
    assert isinstance(tg, TrafficGenerator) and isinstance(switch, PfcQueues)
    cfg = SETTINGS["pfc_storm"]
    prio, quanta = int(cfg["priority"]), int(cfg["quanta"])
    queue_key = f"{sw_port}:{prio}"
    with allure.step(f"CONG-3.3/1: watchdog timers of {sw_name}:{sw_port}"):
        wd = switch.pfc_watchdog_config().get(sw_port)
        if wd is None or wd.detection_time_ms is None or wd.restoration_time_ms is None:
            measure(
                "congestion.pfcwd_unarmed_queues",
                1,
                key="congestion.pfcwd_unarmed_queues",
                device=sw_name,
                port=sw_port,
            )
            return
        poll_ms = wd.poll_interval_ms or 0
        detect_bound_ms = wd.detection_time_ms + poll_ms
        restore_bound_ms = wd.restoration_time_ms + poll_ms
    with allure.step(
        f"CONG-3.3/2: pause storm on priority {prio} from {tg_name}:{storm_port}, and a "
        f"priority-{LOSSY[0]} flow from {other_port} to {storm_port}"
    ):
        rate = pause_refresh_pps(quanta, speed, cfg["refreshes_per_pause"])
        storm = pfc_storm_flow(
            "pfc-storm",
            "storm",
            priority=prio,
            quanta=quanta,
            rate_pps=rate,
            src_mac=local_mac(f"{tg_name}:{storm_port}"),
        )
        other = Flow(
            name="other-priority",
            tx_port="other",
            rx_ports=["storm"],
            packet=[
                Ethernet(src_mac=local_mac(f"{tg_name}:{other_port}"), dst_mac=local_mac(sw_name)),
                Ipv4(src="192.0.2.1", dst="192.0.2.2", dscp=LOSSY[0]),
                Udp(dst_port=5000),
            ],
            size_bytes=512,
            rate_pps=float(cfg["other_priority_pps"]),
        )
        tg.set_config(
            TrafficConfig(
                ports=[
                    Port(name="storm", location=storm_port, speed_gbps=speed),
                    Port(name="other", location=other_port, speed_gbps=speed),
                ],
                flows=[storm, other],
            )
        )
        before = switch.pfc_watchdog().get(queue_key)
        tg.start_traffic()
        started = labtime.monotonic()  # the storm runs by now: the latest it can have begun
        try:
            _watchdog_change(measure, switch, sw_name, sw_port, prio, stormed=True,
                             since=started, bound_ms=detect_bound_ms,
                             margin_s=float(cfg["timeout_margin_s"]))
            held = labtime.monotonic()
            while labtime.monotonic() - held < float(cfg["storm_s"]):
                labtime.sleep(0.05)  # the storm lasts storm_s: an observation window
        finally:
            tg.stop_traffic()
            stopped = labtime.monotonic()
    with allure.step("CONG-3.3/3: the other priority lost nothing during the storm"):
        tg.wait_done(timeout_s=10.0)
        metrics = {m.name: m for m in tg.metrics()}
        flow = metrics["other-priority"]
        if flow.anomalies:
            raise InfraError(tg_name, "; ".join(flow.anomalies))
        measure(
            "congestion.other_priority_loss_frames",
            flow.loss_frames or 0,
            key="congestion.other_priority_loss_frames",
            device=sw_name,
            port=sw_port,
            priority=str(LOSSY[0]),
        )
    with allure.step("CONG-3.3/4: the queue is restored within restore + poll"):
        _watchdog_change(measure, switch, sw_name, sw_port, prio, stormed=False,
                         since=stopped, bound_ms=restore_bound_ms,
                         margin_s=float(cfg["timeout_margin_s"]))
        after = switch.pfc_watchdog().get(queue_key)
        attach_json("pfcwd queue state before/after", {"before": before, "after": after})


def _watchdog_change(
    measure: Recorder, switch: PfcQueues, device: str, port: str, prio: int, *,
    stormed: bool, since: float, bound_ms: int, margin_s: float,
) -> None:
    """How late past its bound the watchdog detected (``stormed``) or restored the queue:
    both directions are read and judged alike, only the names differ."""
    event, seen = ("detect", "detected_ms") if stormed else ("restore", "restored_ms")
    window = _when(switch, f"{port}:{prio}", stormed=stormed, since=since,
                   timeout_s=bound_ms / 1000 + margin_s)
    name = f"congestion.pfcwd_{event}_excess_ms"
    measure(name, window[0] * 1000 - bound_ms, key=name, limit=None,  # the limit: the key's
            device=device, port=port, queue=str(prio), **{seen: _window_ms(window)},
            bound_ms=str(bound_ms))


def _when(
    switch: PfcQueues, queue_key: str, *, stormed: bool, since: float, timeout_s: float
) -> tuple[float, float]:
    """When the queue's watchdog state became ``stormed`` (or left it), in seconds after
    ``since``: (earliest, latest). The change happened after the last read that did not
    show it began and before the first read that did ended; the earliest is judged (a
    device is late only when it is certainly late), inf when it never changed."""
    last_start = since
    deadline = since + timeout_s
    while True:
        start = labtime.monotonic()
        seen = _stormed(switch, queue_key) == stormed
        end = labtime.monotonic()
        if seen:
            return max(last_start - since, 0.0), end - since
        if end >= deadline:
            return math.inf, math.inf
        last_start = start
        labtime.sleep(0.02)


def _window_ms(window: tuple[float, float]) -> str:
    return f"{window[0] * 1000:.0f}..{window[1] * 1000:.0f}"


def _stormed(switch: PfcQueues, queue_key: str) -> bool:
    state = switch.pfc_watchdog().get(queue_key)
    return state is not None and (state.status or "").lower() == "stormed"
