"""Latency under load: a small flow's tail latency, idle and beside an N:1 incast.

Test plan and numbered steps: README.md in this folder. Run parameters:
settings.yaml. Pass criteria: ``latency.*`` in the limits profile.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import allure
import pytest
from latency_lib import congested_queue, hop_evidence, incast_senders, path_hops, pick_pairs

from labtest import plugin
from labtest.capabilities.host import PerftestLatRow, PerftestSpec
from labtest.capabilities.switch import Interfaces
from labtest.errors import InfraError
from labtest.fixtures.traffic import (
    FabricView,
    PairOutcome,
    fabric_deltas,
    load_settings,
    poll_until,
    run_bandwidth_pairs,
    run_latency_pair,
)
from labtest.reports import plots
from labtest.reports.attach import attach_json, attach_png

SETTINGS = load_settings("latency")
PRIORITY = int(SETTINGS["priority"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "latency_pair" not in metafunc.fixturenames:
        return
    if plugin.testbed_of(metafunc.config) is None:
        metafunc.parametrize("latency_pair", [])
        return
    view = FabricView.of(plugin.lab_of(metafunc.config))
    pairs = pick_pairs(view, SETTINGS["pairs"], int(SETTINGS["max_pairs"]))
    metafunc.parametrize("latency_pair", pairs, ids=[f"{c}->{s}" for c, s in pairs])


def _lat_spec() -> PerftestSpec:
    s = SETTINGS["latency"]
    return PerftestSpec(
        test=s["test"],
        size_bytes=s["size_bytes"],
        iterations=s["iterations"],
        duration_s=None,
        tcp_port=int(s["tcp_port"]),
    )


def _incast_spec() -> PerftestSpec:
    s = SETTINGS["incast"]
    return PerftestSpec(
        test=s["test"], size_bytes=s["size_bytes"], qps=s["qps"], duration_s=s["duration_s"]
    )


def _row(outcome: PairOutcome) -> PerftestLatRow | None:
    if outcome.latency is None or not outcome.latency.rows:
        return None
    return outcome.latency.rows[0]


def _quantiles(row: PerftestLatRow) -> dict[float, float]:
    """The CDF points perftest prints: min, median, p99, p99.9, max."""
    points = {0.0: row.t_min_us, 0.5: row.t_typical_us, 0.99: row.p99_us,
              0.999: row.p99_9_us, 1.0: row.t_max_us}  # fmt: skip
    return {q: v for q, v in points.items() if v is not None}


def _failed(measure: Any, key: str, unit: str, why: str, **labels: Any) -> None:
    measure(key, float("nan"), key=key, pair=unit, error=why, **labels)


def _tx_packets(view: FabricView, switch: str, port: str) -> int | None:
    driver = view.lab.device(switch)
    if not isinstance(driver, Interfaces):
        return None
    counters = driver.counters().get(port)
    return None if counters is None else counters.tx_packets


def _under_incast(
    view: FabricView, pair: tuple[str, str], senders: list[str]
) -> tuple[PairOutcome, list[PairOutcome], dict[str, Any], dict[str, Any]]:
    """The latency pair run while the incast into its server runs; counters around both.
    A latency run that outlived the incast (it was not all under load) is run again."""
    client, server = pair
    attempts = int(SETTINGS["incast"]["attempts"])
    for _ in range(attempts):
        before = view.snapshot_switches(pfc=True)
        outcome, outcomes = _one_attempt(view, pair, senders)
        after = view.snapshot_switches(pfc=True)
        if outcome is not None:
            return outcome, outcomes, before, after
        errors = [o.error for o in outcomes if o.error]
        if errors:  # the incast died on the data plane: a product failure, not a rerun
            why = f"the incast into {server} failed: {errors[0]}"
            return PairOutcome(client, server, error=why), outcomes, before, after
    seconds = SETTINGS["incast"]["duration_s"]
    why = f"the latency run {client}->{server} outlived the {seconds} s incast {attempts} times"
    raise InfraError(server, why)


def _one_attempt(
    view: FabricView, pair: tuple[str, str], senders: list[str]
) -> tuple[PairOutcome | None, list[PairOutcome]]:
    """Start the incast, wait until the server's leaf port carries it, run the latency pair;
    (None, ...) when the incast ended before the latency run did."""
    server = pair[1]
    att = view.attachment[server]
    cfg = SETTINGS["load"]
    start = _tx_packets(view, att.switch, att.switch_port)
    if start is None:
        raise InfraError(att.switch, f"no tx packet counter on {att.switch_port}")
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="incast") as pool:
        incast: Future[list[PairOutcome]] = pool.submit(
            run_bandwidth_pairs, view.lab, [(s, server) for s in senders], _incast_spec()
        )

        def loaded() -> bool:
            now = _tx_packets(view, att.switch, att.switch_port) or 0
            return now - start >= int(cfg["started_packets"]) or incast.done()

        _, waited = poll_until(loaded, timeout_s=float(cfg["timeout_s"]), interval_s=0.05)
        outcome = None
        if not incast.done():
            if waited == float("inf"):
                where = f"{att.switch}:{att.switch_port}"
                raise InfraError(att.switch, f"the incast into {server} never loaded {where}")
            outcome = run_latency_pair(view.lab, pair, _lat_spec())
            if incast.done():
                outcome = None
        return outcome, incast.result()


@pytest.mark.plan("LAT-1.1")
@pytest.mark.needs("Perftest", count=3)
def test_latency_under_incast(
    latency_pair: tuple[str, str], fabric_view: FabricView, measure: Any
) -> None:
    """LAT-1.1: ib_write_lat client->server idle, then beside an N:1 incast into the server
    (sharing its last egress): percentiles, inflation, and the queue that holds the delay."""
    view = fabric_view
    client, server = latency_pair
    unit = "--".join(sorted(latency_pair))
    senders = incast_senders(view, latency_pair, int(SETTINGS["incast"]["max_senders"]))
    if not senders:
        pytest.skip("needs a third host to load the server's port")
    spec = _lat_spec()
    with allure.step(f"LAT-1.1/1: idle ib_write_lat -s {spec.size_bytes} -n {spec.iterations}"):
        idle = run_latency_pair(view.lab, latency_pair, spec)
        idle_row = _row(idle)
        if idle_row is None or idle_row.p99_us is None:
            _failed(measure, "latency.idle_p99_us", unit, idle.error or "no latency table")
            return
        attach_json(f"idle ib_write_lat {client}->{server}", idle.latency)
        measure("latency.idle_p99_us", idle_row.p99_us, key="latency.idle_p99_us", pair=unit)
    hops = path_hops(view, client, server)
    if not isinstance(view.lab.device(hops[-1].device), Interfaces):
        why = (f"{hops[-1].device} reports no interface counters: the incast's load on "
               f"{hops[-1].endpoint} cannot be confirmed, so no latency is known to be loaded")
        for requirement in ("latency.loaded_p99_us", "latency.loaded_p99_9_us",
                            "latency.p99_inflation"):
            measure.not_proven(requirement, why, pair=unit)
        pytest.skip(why)  # fmt: skip
    with allure.step(
        f"LAT-1.1/2: {len(senders)}:1 incast into {server} (ib_write_bw -q "
        f"{SETTINGS['incast']['qps']}), ib_write_lat {client}->{server} once it loads "
        f"{hops[-1].endpoint}"
    ):
        loaded, outcomes, before, after = _under_incast(view, latency_pair, senders)
        deltas = fabric_deltas(before, after)
        attach_json("incast goodput per sender (Gb/s)", {o.client: o.bw_gbps for o in outcomes})
    with allure.step("LAT-1.1/3: the queue holding the delay (ECN marks, PFC on the path)"):
        evidence = hop_evidence(hops, deltas, PRIORITY)
        top, why = congested_queue(evidence)
        attach_json("path queues", {e.queue: e.summary() for e in evidence})
        where = {
            "device": top.hop.device,
            "port": top.hop.port,
            "priority": str(PRIORITY),
            "queue": top.queue,
            "evidence": why,
        }
        if top.ecn_marked is not None:
            measure("latency.queue_ecn_marked", top.ecn_marked, unit="packets", pair=unit, **where)
        measure("latency.queue_pause_frames_sent", top.xoff_sent, unit="frames", pair=unit,
                **where)  # fmt: skip
    row = _row(loaded)
    if row is None:
        _failed(measure, "latency.loaded_p99_us", unit, loaded.error or "no latency table",
                **where)  # fmt: skip
        return
    with allure.step("LAT-1.1/4: loaded p50, p99, p99.9 and max against the limits (us)"):
        attach_json(f"loaded ib_write_lat {client}->{server}", loaded.latency)
        for key, value in (
            ("latency.loaded_p50_us", row.t_typical_us),
            ("latency.loaded_p99_us", row.p99_us),
            ("latency.loaded_p99_9_us", row.p99_9_us),
            ("latency.loaded_max_us", row.t_max_us),
        ):
            if value is None:
                _failed(measure, key, unit, "perftest printed no such column", **where)
                continue
            measure(key, value, key=key, pair=unit, **where)
    with allure.step("LAT-1.1/5: inflation over idle (p99, p99.9)"):
        for key, busy, calm in (
            ("latency.p99_inflation", row.p99_us, idle_row.p99_us),
            ("latency.p99_9_inflation", row.p99_9_us, idle_row.p99_9_us),
        ):
            if busy is None or not calm:
                _failed(measure, key, unit, "no idle or loaded percentile", **where)
                continue
            measure(key, busy / calm, key=key, pair=unit, idle_us=f"{calm:.2f}",
                    loaded_us=f"{busy:.2f}", **where)  # fmt: skip
    with allure.step("LAT-1.1/6: latency CDF idle vs loaded"):
        limit = measure.profile.get("latency.loaded_p99_us").high if measure.profile else None
        attach_png(
            f"latency CDF {client}->{server}",
            plots.latency_cdf(
                {"idle": _quantiles(idle_row), f"{len(senders)}:1 incast": _quantiles(row)},
                limit_us=limit,
                title=f"ib_write_lat {client}->{server}: idle vs beside a "
                f"{len(senders)}:1 incast (queue {top.queue})",
            ),
        )
