"""Latency under load: a small flow's tail latency, idle and beside an N:1 incast.

Test plan and numbered steps: README.md in this folder. Run parameters:
settings.yaml. Pass criteria: ``latency.*`` in the limits profile.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import astuple, dataclass, replace
from typing import Any, NoReturn

import allure
import pytest
from latency_lib import (
    Hop,
    HopEvidence,
    beyond_limits,
    congested_queue,
    hop_evidence,
    incast_senders,
    neighbour,
    path_hops,
    pause_origin,
    pick_pairs,
    shifted_permutations,
    upstream_senders,
)

from labtest import labtime, plugin
from labtest.capabilities.host import PerftestLatRow, PerftestSpec
from labtest.capabilities.switch import InterfaceCounters, Interfaces, PortAdmin
from labtest.errors import InfraError
from labtest.fixtures.perftest_pairs import PairOutcome, run_bandwidth_pairs, run_latency_pair
from labtest.fixtures.polling import poll_until
from labtest.fixtures.run_counters import fabric_deltas
from labtest.fixtures.suite_data import load_settings
from labtest.fixtures.traffic import FabricView
from labtest.reports import plots
from labtest.reports.attach import attach_json, attach_png

SETTINGS = load_settings("latency")
PRIORITY = int(SETTINGS["priority"])
#: the labels that name the queue holding a delay (``_where``)
PLACE = ("device", "port", "priority", "queue")


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


def _failed_run(measure: Any, key: str, unit: str, why: str, where: dict[str, str]) -> None:
    """A latency run that printed no latency: the queue evidence stays as text, but no queue
    is named, since the run failed before any queue could delay it (a path that went dark,
    a peer that died): what it crossed is for the root cause to weigh."""
    _failed(measure, key, unit, why, **{k: v for k, v in where.items() if k not in PLACE})


def _hole(measure: Any, requirements: tuple[str, ...], why: str, **labels: Any) -> NoReturn:
    """Each requirement recorded as not proven with the reason, then the test skipped: a unit
    this lab cannot load leaves a named hole in the coverage, not a silent skip."""
    for requirement in requirements:
        measure.not_proven(requirement, why, **labels)
    pytest.skip(why)


def _packets(view: FabricView, ports: list[tuple[str, str, str]]) -> list[int | None]:
    """Packets counted at each (switch, port, "tx" or "rx"), one counters read per switch;
    None where the switch or the port has no such counter."""
    read: dict[str, dict[str, InterfaceCounters]] = {}
    out: list[int | None] = []
    for switch, port, direction in ports:
        if switch not in read:
            driver = view.lab.device(switch)
            read[switch] = driver.counters() if isinstance(driver, Interfaces) else {}
        c = read[switch].get(port)
        out.append(None if c is None else c.tx_packets if direction == "tx" else c.rx_packets)
    return out


def _under_incast(
    view: FabricView, pair: tuple[str, str], senders: list[str]
) -> tuple[PairOutcome, list[PairOutcome], dict[str, Any], dict[str, Any], str | None]:
    """The latency pair run while the incast into its server runs; counters around both."""
    server = pair[1]
    att = view.attachment[server]
    load = Load([(s, server) for s in senders], _incast_spec(), att.switch, att.switch_port,
                f"the incast into {server}")  # fmt: skip
    runs, outcomes, before, after, outlived = _under_load(view, [pair], load)
    return runs[0], outcomes, before, after, outlived


@dataclass(frozen=True)
class Load:
    """Background bandwidth pairs, and the switch port whose sent packets show it is on."""

    pairs: list[tuple[str, str]]
    spec: PerftestSpec
    switch: str
    port: str
    what: str  # "the incast into host1", for messages

    @property
    def endpoint(self) -> str:
        return f"{self.switch}:{self.port}"

    @property
    def flows(self) -> str:
        """The load's flows as ``client>server ...``: the root cause weighs faults on their
        routes (a sender holed shifts its share onto the queue the pair met)."""
        return background(self.pairs)


def background(pairs: list[tuple[str, str]]) -> str:
    return " ".join(f"{client}>{server}" for client, server in pairs)


def _under_load(
    view: FabricView,
    pairs: list[tuple[str, str]],
    load: Load,
    during: Callable[[], None] | None = None,
) -> tuple[list[PairOutcome], list[PairOutcome], dict[str, Any], dict[str, Any], str | None]:
    """The latency pairs run (all at once) while ``load`` runs; switch counters around it.
    ``during`` is called once the load is on, before the latency runs (a failover's shut).
    Latency runs that outlived the load (not all under load) are run again beside a longer
    load (``labtime.longer_s``: how long the last attempt needed, with a margin): how long they take
    is the lab's pace (a busy runner, a slow SSH), not a setting. If every attempt outlived
    it, the last one's runs come back with why (their percentiles are a lower bound of the
    loaded ones: the samples after the load ended met no queue)."""
    attempts = int(SETTINGS["incast"]["attempts"])
    tried: list[int] = []
    for _ in range(attempts):
        tried.append(int(load.spec.duration_s or 0))
        before = view.snapshot_switches(pfc=True)
        runs, outcomes, outlived, needed_s = _one_attempt(view, pairs, load, during)
        after = view.snapshot_switches(pfc=True)
        if not outlived:
            if len(tried) > 1:
                attach_json(f"{load.what}: lengths tried (device s)", {"lengths_s": tried})
            return runs, outcomes, before, after, None
        errors = [o.error for o in outcomes if o.error]
        if not runs and not errors:
            errors = _stalled(load, outcomes, before, after)
        if errors:  # the load died or stalled on the data plane: a product failure, no rerun
            why = f"{load.what} failed: {errors[0]}"
            failed = [PairOutcome(c, s, error=why) for c, s in pairs]
            return failed, outcomes, before, after, None
        cfg = SETTINGS["load"]
        longer = labtime.longer_s(tried[-1], needed_s, float(cfg["margin"]),
                                  float(cfg["max_stretch"]))
        load = replace(load, spec=replace(load.spec, duration_s=longer))
    lengths = ", ".join(map(str, tried))
    why = f"the latency runs outlived {load.what} {attempts} times (lasting {lengths} s)"
    if not runs:  # the load never stood long enough to start them
        raise InfraError(load.switch, f"{why}: it ended unseen on {load.endpoint} before "
                         f"they started (its senders moved {_moved_gbps(outcomes):.1f} Gb/s)")
    return runs, outcomes, before, after, why


def _stalled(
    load: Load, outcomes: list[PairOutcome], before: dict[str, Any], after: dict[str, Any]
) -> list[str]:
    """Why a load that ended unseen on its port was stalled on the data plane (empty if the
    evidence does not say so): its senders moved next to nothing, or the port dropped it."""
    where = load.endpoint
    moved_gbps = _moved_gbps(outcomes)
    delta = fabric_deltas(before, after).get(where)
    dropped = delta.drops() if delta is not None else 0
    if dropped > 0:
        return [f"it never loaded {where}: the port dropped {dropped:.4g} packets of it"]
    if moved_gbps < float(SETTINGS["load"]["stalled_gbps"]):
        return [f"it never loaded {where}: its senders moved {moved_gbps:.2f} Gb/s in all"]
    return []


def _moved_gbps(outcomes: list[PairOutcome]) -> float:
    """What a load's senders moved in all (each run's average goodput, summed)."""
    return sum(o.bw_gbps for o in outcomes)


def _one_attempt(
    view: FabricView,
    pairs: list[tuple[str, str]],
    load: Load,
    during: Callable[[], None] | None,
) -> tuple[list[PairOutcome], list[PairOutcome], bool, float]:
    """Start the load, wait until its port carries it, run the latency pairs; the third
    value is True when the load ended before the latency runs did, the fourth the device
    seconds from the load's start to the runs' end (what a load beside them must last)."""
    cfg = SETTINGS["load"]
    # the load's port, then each sender's leaf port: the senders start one by one over SSH,
    # and the first alone would load the port without queueing anything
    ports = [(load.switch, load.port, "tx")]
    senders = [view.attachment.get(c) for c in dict.fromkeys(c for c, _ in load.pairs)]
    ports += [(a.switch, a.switch_port, "rx") for a in senders if a is not None]
    needed = [int(cfg["started_packets"])] + [int(cfg["sender_packets"])] * (len(ports) - 1)
    start = _packets(view, ports)
    if start[0] is None:
        raise InfraError(load.switch, f"no tx packet counter on {load.port}")
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="load") as pool:
        started_s = labtime.device_s()
        background: Future[list[PairOutcome]] = pool.submit(
            run_bandwidth_pairs, view.lab, load.pairs, load.spec
        )

        port_on_at: list[int] = []  # the load port's count when it first carried the load

        def loaded() -> bool:
            now = _packets(view, ports)
            on = [n is None or s is None or n - s >= need
                  for n, s, need in zip(now, start, needed, strict=True)]  # fmt: skip
            if on[0] and not port_on_at:
                port_on_at.append(now[0] or 0)
            # every sender started, or the late ones had their grace, counted in the load's
            # own packets (device time in any lab): a sender the fabric stalls (RoCE over a
            # lossy link) is the fault's effect, judged, not awaited
            late = bool(port_on_at) and (
                (now[0] or 0) - port_on_at[0] >= int(cfg["sender_grace_packets"]))
            return (on[0] and (all(on) or late)) or background.done()

        _, waited = poll_until(loaded, timeout_s=float(cfg["timeout_s"]), interval_s=0.05)
        if background.done():  # the load ended before it was seen on its port
            return [], background.result(), True, labtime.device_s() - started_s
        if waited == float("inf"):
            raise InfraError(load.switch, f"{load.what} never loaded {load.endpoint}")
        if during is not None:
            during()
        runs = _latency_runs(view, pairs)
        needed_s = labtime.device_s() - started_s
        outlived = not _still_on(view, load, background)
        return runs, background.result(), outlived, needed_s


def _still_on(view: FabricView, load: Load, background: Future[list[PairOutcome]]) -> bool:
    """Whether the load's port still carried it after the latency runs came back. Its
    commands not having returned yet says little: a host slow to answer (a loaded runner)
    can report a load that already ended on the devices, so only the port moving on says
    the runs met it."""
    need = int(SETTINGS["load"]["started_packets"])
    ports = [(load.switch, load.port, "tx")]
    (start,) = _packets(view, ports)

    def decided() -> str:  # "on", "ended", or "" (not yet: poll again)
        (now,) = _packets(view, ports)
        if start is not None and now is not None and now - start >= need:
            return "on"
        return "ended" if background.done() else ""

    said, _ = poll_until(decided, timeout_s=float(SETTINGS["load"]["timeout_s"]),
                         interval_s=0.05)  # fmt: skip
    return bool(said == "on")


def _latency_runs(view: FabricView, pairs: list[tuple[str, str]]) -> list[PairOutcome]:
    """The latency pairs all at once, each on its own TCP port: every run meets the same
    load, and a pair listed twice samples two QPs (two ECMP hashes) at the same time."""
    base = _lat_spec()
    specs = [replace(base, tcp_port=base.tcp_port + i) for i in range(len(pairs))]
    if len(pairs) == 1:
        return [run_latency_pair(view.lab, pairs[0], specs[0])]
    with ThreadPoolExecutor(max_workers=len(pairs), thread_name_prefix="latency") as pool:
        futures = [pool.submit(run_latency_pair, view.lab, p, sp)
                   for p, sp in zip(pairs, specs, strict=True)]  # fmt: skip
    return [f.result() for f in futures]


@dataclass(frozen=True)
class Keys:
    """The limit keys one load's latency is judged against."""

    p50: str | None
    p99: str
    p99_9: str
    max: str
    p99_inflation: str
    p99_9_inflation: str | None
    #: the loaded p99 less the idle one (us): a queue's worth met on the way, which a ratio
    #: over a short idle path understates
    p99_excess: str | None = None

    def declared(self) -> tuple[str, ...]:
        """The keys for the test's ``judges`` marker."""
        return tuple(k for k in astuple(self) if k is not None)


INCAST_KEYS = Keys(
    "latency.loaded_p50_us",
    "latency.loaded_p99_us",
    "latency.loaded_p99_9_us",
    "latency.loaded_max_us",
    "latency.p99_inflation",
    "latency.p99_9_inflation",
)
A2A_KEYS = Keys(
    None,
    "latency.a2a_p99_us",
    "latency.a2a_p99_9_us",
    "latency.a2a_max_us",
    "latency.a2a_p99_inflation",
    None,
)
HOL_KEYS = Keys(
    None,
    "latency.hol_p99_us",
    "latency.hol_p99_9_us",
    "latency.hol_max_us",
    "latency.hol_p99_inflation",
    None,
    "latency.hol_p99_excess_us",
)
FAILOVER_KEYS = Keys(
    None,
    "latency.failover_p99_us",
    "latency.failover_p99_9_us",
    "latency.failover_max_us",
    "latency.failover_p99_inflation",
    None,
)
#: what LAT-1.1 cannot judge when no loaded latency can be measured
INCAST_HOLE = (INCAST_KEYS.p99, INCAST_KEYS.p99_9, INCAST_KEYS.p99_inflation)


@pytest.mark.plan("LAT-1.1")
@pytest.mark.judges("latency.idle_p99_us", *INCAST_KEYS.declared())
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
        why = "needs a third host to load the server's port"
        _hole(measure, INCAST_HOLE, why, pair=unit)
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
        why = (
            f"{hops[-1].device} reports no interface counters: the incast's load on "
            f"{hops[-1].endpoint} cannot be confirmed, so no latency is known to be loaded"
        )
        _hole(measure, INCAST_HOLE, why, pair=unit)
    with allure.step(
        f"LAT-1.1/2: {len(senders)}:1 incast into {server} (ib_write_bw -q "
        f"{SETTINGS['incast']['qps']}), ib_write_lat {client}->{server} once it loads "
        f"{hops[-1].endpoint}"
    ):
        loaded, outcomes, before, after, outlived = _under_incast(view, latency_pair, senders)
        deltas = fabric_deltas(before, after)
        attach_json("incast goodput per sender (Gb/s)", {o.client: o.bw_gbps for o in outcomes})
    with allure.step("LAT-1.1/3: the queue holding the delay (ECN marks, PFC on the path)"):
        evidence = hop_evidence(hops, deltas, PRIORITY)
        top, why = congested_queue(evidence)
        attach_json("path queues", {e.queue: e.summary() for e in evidence})
        where = _where(top, why, background=background([(s, server) for s in senders]))
        if top.ecn_marked is not None:
            measure("latency.queue_ecn_marked", top.ecn_marked, unit="packets", pair=unit, **where)
        if top.counted:  # an unread switch's zero is not a reading
            measure("latency.queue_pause_frames_sent", top.xoff_sent, unit="frames", pair=unit,
                    **where)  # fmt: skip
    row = _row(loaded)
    if row is None:
        _failed_run(measure, "latency.loaded_p99_us", unit, loaded.error or "no latency table",
                    where)  # fmt: skip
        return
    attach_json(f"loaded ib_write_lat {client}->{server}", loaded.latency)
    _judge(measure, INCAST_KEYS, "LAT-1.1", unit, idle_row, row, where,
           f"{len(senders)}:1 incast", f"ib_write_lat {client}->{server}: idle vs beside a "
           f"{len(senders)}:1 incast (queue {top.queue})", outlived)  # fmt: skip


def _judge(
    measure: Any,
    keys: Keys,
    plan: str,
    unit: str,
    idle_row: PerftestLatRow,
    row: PerftestLatRow,
    where: dict[str, str],
    load_name: str,
    title: str,
    outlived: str | None = None,
) -> None:
    """Loaded percentiles (us), inflation over idle (x), and the CDF plot of both.

    ``outlived``: the runs lasted past the load, so each figure is a lower bound of the
    loaded one. One already beyond its limit proves the failure (recorded with the bound
    said); all within proves nothing, so the test is broken with why, not passed."""
    values = _loaded_values(keys, idle_row, row)
    if outlived is not None:
        beyond = beyond_limits([(k, v) for k, v, _ in values], measure.profile.get)
        if not beyond:
            raise InfraError(
                where.get("device") or unit,
                f"{outlived}; what they measured, a lower bound "
                "of the loaded latency, is within the limits: not proven",
            )
        where = {**where, "bound": f"lower ({outlived})"}
    inflations = (keys.p99_inflation, keys.p99_9_inflation, keys.p99_excess)
    for step, mine in ((f"{plan}/4: loaded p50, p99, p99.9 and max against the limits (us)",
                        [v for v in values if v[0] not in inflations]),
                       (f"{plan}/5: over idle: inflation (p99, p99.9) and excess (p99)",
                        [v for v in values if v[0] in inflations])):  # fmt: skip
        with allure.step(step):
            for key, value, extra in mine:
                if value is None:
                    _failed(measure, key, unit, extra["why"], **where)
                else:
                    measure(key, value, key=key, pair=unit, **{**extra, **where})
    with allure.step(f"{plan}/6: latency CDF idle vs loaded"):
        limit = measure.profile.get(keys.p99).high if measure.profile else None
        attach_png(
            f"latency CDF {unit} ({load_name})",
            plots.latency_cdf(
                {"idle": _quantiles(idle_row), load_name: _quantiles(row)},
                limit_us=limit,
                title=title,
            ),
        )


def _loaded_values(
    keys: Keys, idle_row: PerftestLatRow, row: PerftestLatRow
) -> list[tuple[str, float | None, dict[str, str]]]:
    """(key, value or None, labels or why) per loaded percentile (us) and inflation (x)."""
    out: list[tuple[str, float | None, dict[str, str]]] = []
    for key, value in (
        (keys.p50, row.t_typical_us),
        (keys.p99, row.p99_us),
        (keys.p99_9, row.p99_9_us),
        (keys.max, row.t_max_us),
    ):
        if key is not None:
            out.append((key, value, {} if value is not None else
                        {"why": "perftest printed no such column"}))  # fmt: skip
    for key, busy, calm in (
        (keys.p99_inflation, row.p99_us, idle_row.p99_us),
        (keys.p99_9_inflation, row.p99_9_us, idle_row.p99_9_us),
    ):
        if key is None:
            continue
        if busy is None or not calm:
            out.append((key, None, {"why": "no idle or loaded percentile"}))
        else:
            out.append((key, busy / calm, {"idle_us": f"{calm:.2f}", "loaded_us": f"{busy:.2f}"}))
    if keys.p99_excess is not None:
        busy, calm = row.p99_us, idle_row.p99_us
        out.append((keys.p99_excess, None, {"why": "no idle or loaded p99"})
                   if busy is None or calm is None else
                   (keys.p99_excess, busy - calm, {"idle_us": f"{calm:.2f}",
                                                   "loaded_us": f"{busy:.2f}"}))
    return out


def _idle(
    measure: Any, view: FabricView, pair: tuple[str, str], plan: str
) -> PerftestLatRow | None:
    """The pair's idle latency (the inflation's baseline), judged and attached; None if it
    failed (recorded as such)."""
    client, server = pair
    unit = "--".join(sorted(pair))
    spec = _lat_spec()
    with allure.step(f"{plan}/1: idle ib_write_lat {client}->{server} -s {spec.size_bytes} "
                     f"-n {spec.iterations}"):  # fmt: skip
        idle = run_latency_pair(view.lab, pair, spec)
        row = _row(idle)
        if row is None or row.p99_us is None:
            _failed(measure, "latency.idle_p99_us", unit, idle.error or "no latency table")
            return None
        attach_json(f"idle ib_write_lat {client}->{server}", idle.latency)
        measure("latency.idle_p99_us", row.p99_us, key="latency.idle_p99_us", pair=unit)
    return row


def _worst(outcomes: list[PairOutcome]) -> tuple[PerftestLatRow | None, str | None]:
    """The run with the highest p99 (the tail a request meets on its worst path), or why
    there is none."""
    rows = [r for o in outcomes if (r := _row(o)) is not None and r.p99_us is not None]
    errors = [o.error for o in outcomes if o.error]
    if errors:
        return None, errors[0]
    if not rows:
        return None, "no latency table"
    return max(rows, key=lambda r: r.p99_us or 0.0), None


def _where(ev: HopEvidence | None, why: str, **extra: str) -> dict[str, str]:
    """The labels that locate a delay: the queue holding it, when the counters point at one
    (``ev``), and why, always."""
    place = {} if ev is None else {"device": ev.hop.device, "port": ev.hop.port,
                                   "priority": str(PRIORITY), "queue": ev.queue}  # fmt: skip
    return {**place, "evidence": why, **extra}


@pytest.mark.plan("LAT-1.2")
@pytest.mark.judges("latency.idle_p99_us", *A2A_KEYS.declared())
@pytest.mark.needs("Perftest", count=3)
def test_latency_beside_all_to_all(fabric_view: FabricView, measure: Any) -> None:
    """LAT-1.2: each chosen pair's latency beside an all-to-all (a shifted-permutation
    schedule of every host, bounded by the settings), one background for all pairs."""
    view = fabric_view
    pairs = pick_pairs(view, SETTINGS["pairs"], int(SETTINGS["max_pairs"]))
    cfg = SETTINGS["all_to_all"]
    hosts = view.hosts[: int(cfg["max_hosts"])]
    if not pairs or len(hosts) < 3:
        why = "needs three hosts with links for an all-to-all beside a latency pair"
        _hole(measure, (A2A_KEYS.p99, A2A_KEYS.p99_inflation), why)
    idle = {p: _idle(measure, view, p, "LAT-1.2") for p in pairs}
    pairs = [p for p in pairs if idle[p] is not None]
    if not pairs:
        return
    flows = shifted_permutations(hosts, int(cfg["shifts"]))
    spec = PerftestSpec(test=cfg["test"], size_bytes=cfg["size_bytes"], qps=cfg["qps"],
                        duration_s=cfg["duration_s"])  # fmt: skip
    watch = view.attachment[pairs[0][1]]
    load = Load(flows, spec, watch.switch, watch.switch_port,
                f"the all-to-all ({len(hosts)} hosts, {len(flows)} flows)")  # fmt: skip
    with allure.step(f"LAT-1.2/2: {load.what}; each pair's ib_write_lat beside it"):
        runs, outcomes, before, after, outlived = _under_load(view, pairs, load)
        deltas = fabric_deltas(before, after)
        attach_json("all-to-all goodput per flow (Gb/s)", {o.pair: o.bw_gbps for o in outcomes})
    for pair, run in zip(pairs, runs, strict=True):
        client, server = pair
        unit = "--".join(sorted(pair))
        with allure.step(f"LAT-1.2/3: {client}->{server}: the queue holding the delay"):
            evidence = hop_evidence(path_hops(view, client, server), deltas, PRIORITY)
            top, why = congested_queue(evidence)
            attach_json(f"path queues {client}->{server}", {e.queue: e.summary() for e in evidence})
            where = _where(top, why, load="all_to_all", background=load.flows)
        row = _row(run)
        idle_row = idle[pair]
        if row is None or idle_row is None:
            _failed_run(measure, A2A_KEYS.p99, unit, run.error or "no latency table", where)
            continue
        attach_json(f"ib_write_lat {client}->{server} beside the all-to-all", run.latency)
        _judge(measure, A2A_KEYS, "LAT-1.2", unit, idle_row, row, where, "all-to-all",
               f"ib_write_lat {client}->{server}: idle vs beside {load.what}",
               outlived)  # fmt: skip


@pytest.mark.plan("LAT-1.3")
@pytest.mark.judges("latency.idle_p99_us", *HOL_KEYS.declared())
@pytest.mark.needs("Perftest", count=3)
def test_latency_beside_upstream_pause(
    latency_pair: tuple[str, str], fabric_view: FabricView, measure: Any
) -> None:
    """LAT-1.3: head-of-line blocking: an incast into the server's neighbour congests an
    egress the latency flow does not take; the flow must keep its idle-like tail unless PFC
    from that egress pauses its hops. The delay is named at the episode's origin."""
    view = fabric_view
    client, server = latency_pair
    unit = "--".join(sorted(latency_pair))
    victim = neighbour(view, latency_pair)
    cfg = SETTINGS["upstream_pause"]
    senders = upstream_senders(view, latency_pair, int(cfg["max_senders"]))
    if victim is None or not senders or view.attachment[client].switch == view.attachment[
            server].switch:  # fmt: skip
        why = (
            f"{server}'s leaf has no other host, or no host on another leaf can load it: "
            "no pause episode can start beside this pair"
        )
        _hole(measure, tuple(k for k in (HOL_KEYS.p99, HOL_KEYS.p99_inflation,
                                         HOL_KEYS.p99_excess) if k is not None), why, pair=unit)
    idle_row = _idle(measure, view, latency_pair, "LAT-1.3")
    if idle_row is None:
        return
    att = view.attachment[victim]
    origin_hop = Hop(att.switch, att.switch_port)
    spec = replace(_incast_spec(), duration_s=cfg["duration_s"])
    load = Load([(s, victim) for s in senders], spec, att.switch, att.switch_port,
                f"the {len(senders)}:1 incast into {victim}")  # fmt: skip
    n, attempts = int(cfg["runs"]), int(cfg.get("attempts", 1))
    for attempt in range(1, attempts + 1):
        with allure.step(
            f"LAT-1.3/2: {load.what} ({origin_hop.endpoint}); {n} ib_write_lat runs "
            f"{client}->{server} beside it (a new QP each: each hashes its own path)"
            + (f", attempt {attempt} of {attempts}" if attempts > 1 else "")
        ):
            runs, outcomes, before, after, outlived = _under_load(
                view, [latency_pair] * n, load)
            deltas = fabric_deltas(before, after)
            attach_json("incast goodput per sender (Gb/s)",
                        {o.client: o.bw_gbps for o in outcomes})  # fmt: skip
        with allure.step("LAT-1.3/3: the pause episode's origin and the paused hops on the path"):
            path = hop_evidence(path_hops(view, client, server), deltas, PRIORITY)
            (origin,) = hop_evidence([origin_hop], deltas, PRIORITY)
            top, why, paused = pause_origin(path, origin)
            attach_json("path queues and origin",
                        {e.queue: e.summary() for e in [*path, origin]})  # fmt: skip
            where = _where(top, why, paused=",".join(e.queue for e in paused) or "none",
                           background=load.flows, attempts=str(attempt))  # fmt: skip
        row, error = _worst(runs)
        if attempt == attempts:
            break
        if _shared_egress(measure, idle_row, row, top, paused, origin):
            attach_json(f"attempt {attempt}: a shared egress, not head-of-line blocking", {
                "queue": top.queue if top else None, "evidence": why,
                "next": "the incast again, its QPs hashed anew"})
        elif _unseen_pause(measure, idle_row, row, paused):
            attach_json(f"attempt {attempt}: a pause reached the path, no run met it", {
                "paused": [e.queue for e in paused], "evidence": why,
                "next": "the incast and the runs again, at other instants of its pauses"})
        else:
            break
    if row is None:
        _failed_run(measure, HOL_KEYS.p99, unit, error or "no latency table", where)
        return
    attach_json(f"ib_write_lat {client}->{server} beside the incast into {victim}",
                [o.latency for o in runs])  # fmt: skip
    _judge(
        measure,
        HOL_KEYS,
        "LAT-1.3",
        unit,
        idle_row,
        row,
        where,
        f"incast into {victim} (worst of {n})",
        f"ib_write_lat {client}->{server}: idle vs beside {load.what} (origin {origin.queue})",
        outlived,
    )


def _shared_egress(measure: Any, idle_row: PerftestLatRow, row: PerftestLatRow | None,
                   top: HopEvidence | None, paused: list[HopEvidence],
                   origin: HopEvidence) -> bool:
    """Whether the worst run's excess over the HOL limits came from a queue of the pair's
    own path that the incast's flows filled (it ECN-marked, no pause reached the path, the
    origin sent none): the incast hashed most of its senders onto the spine downlink the
    pair crosses, so that run measured a shared egress, not head-of-line blocking."""
    if row is None or top is None or paused or origin.xoff_sent > 0 or measure.profile is None:
        return False
    return _beyond_hol(measure, idle_row, row)


def _unseen_pause(measure: Any, idle_row: PerftestLatRow, row: PerftestLatRow | None,
                  paused: list[HopEvidence]) -> bool:
    """Whether a pause reached a hop of the pair's path while every run's tail stayed within
    the HOL limits: the runs start together and met the path at one moment of the pause
    episodes, which come and go as DCQCN at the paused hop slows the incast (the matrix's
    NX-OS shallow buffer, 185 KB: 0.6 and 15 us over idle in 2 of 14 runs, 35-50 us in the
    rest). Measured again, never passed on it: a healthy lab's pauses that reach the path
    fail nothing unless a run meets them beyond the limits."""
    if row is None or not paused or measure.profile is None:
        return False
    return not _beyond_hol(measure, idle_row, row)


def _beyond_hol(measure: Any, idle_row: PerftestLatRow, row: PerftestLatRow) -> bool:
    """Whether ``row`` breaks any of the HOL limits (``measure.profile`` is set)."""
    values = [(k, v) for k, v, _ in _loaded_values(HOL_KEYS, idle_row, row)]
    return bool(beyond_limits(values, measure.profile.get))


def _convergence_budget_s(measure: Any) -> float:
    """The failover suite's convergence limit (failover.convergence_ms), else the setting."""
    if measure.profile is not None:
        try:
            high = measure.profile.get("failover.convergence_ms").high
        except KeyError:
            high = None
        if high is not None:
            return float(high) / 1000.0
    return float(SETTINGS["failover"]["settle_s"])


def _oper_up(view: FabricView, switch: str, port: str) -> bool | None:
    driver = view.lab.device(switch)
    if not isinstance(driver, Interfaces):
        return None
    return driver.interfaces()[port].oper_up


@pytest.mark.plan("LAT-1.4")
@pytest.mark.judges("latency.idle_p99_us", *FAILOVER_KEYS.declared())
@pytest.mark.destructive
@pytest.mark.needs("Perftest", count=3)
def test_latency_during_failover(
    latency_pair: tuple[str, str], fabric_view: FabricView, measure: Any, config_guard: Any
) -> None:
    """LAT-1.4: beside the LAT-1.1 incast, one of the server leaf's fabric links is shut (every
    run then crosses the other spines) and restored: the flow must find its new path and keep
    its tail on the degraded fabric. The link is named with the queue."""
    view = fabric_view
    client, server = latency_pair
    unit = "--".join(sorted(latency_pair))
    cfg = SETTINGS["failover"]
    leaf = view.attachment[server].switch
    links = view.uplinks.get(leaf, [])
    switch = view.lab.device(leaf)
    senders = incast_senders(view, latency_pair, int(SETTINGS["incast"]["max_senders"]))
    why = None
    if view.attachment[client].switch == leaf or len(links) < 2:
        why = f"{client}->{server} crosses no fabric link {leaf} could lose and still reach"
    elif not isinstance(switch, PortAdmin) or not isinstance(switch, Interfaces):
        why = f"{leaf} cannot shut a port (no PortAdmin) or report its state"
    elif not senders:
        why = "needs a third host to load the server's port"
    if why is not None:
        _hole(measure, (FAILOVER_KEYS.p99, FAILOVER_KEYS.p99_inflation), why, pair=unit)
    idle_row = _idle(measure, view, latency_pair, "LAT-1.4")
    if idle_row is None:
        return
    shut = links[0]
    timeout = float(cfg["reroute_timeout_s"])
    att = view.attachment[server]
    spec = replace(_incast_spec(), duration_s=cfg["incast_duration_s"])
    load = Load([(s, server) for s in senders], spec, att.switch, att.switch_port,
                f"the {len(senders)}:1 incast into {server}")  # fmt: skip
    settle_s = _convergence_budget_s(measure)
    shut_state: dict[str, bool] = {}

    def fail_link() -> None:
        """Shut the link, wait for it to go down, then give the fabric its convergence budget
        (routes elsewhere cannot be watched through the capabilities; FAIL-1.1 times them)."""
        config_guard.touch(leaf)
        switch.set_admin(shut.port, False)
        shut_state["shut"] = True
        _, down = poll_until(lambda: _oper_up(view, leaf, shut.port) is False, timeout_s=timeout)
        if down == float("inf"):
            raise InfraError(leaf, f"{shut.endpoint} stayed up {timeout} s after the shut")
        labtime.sleep(settle_s)  # a wait that sets the timeline: lab time

    step = (
        f"LAT-1.4/2: {load.what}; shut {shut.endpoint} ({shut.link}); ib_write_lat "
        f"{client}->{server} {settle_s:g} s after it went down"
    )
    with allure.step(step):
        try:
            runs, outcomes, before, after, outlived = _under_load(
                view, [latency_pair], load, fail_link
            )
        finally:
            if shut_state.get("shut"):
                switch.set_admin(shut.port, True)
                _, up = poll_until(lambda: bool(_oper_up(view, leaf, shut.port)), timeout_s=timeout)
                if up == float("inf"):
                    # a port that does not come back (a dying laser, a bad module) is the
                    # fabric's failure, not the lab's: recorded on the port and its link
                    shut_state["stuck"] = True
                    _failed(measure, FAILOVER_KEYS.p99, unit,
                            f"{shut.endpoint} stayed down {timeout:g} s after no shut",
                            device=leaf, port=shut.port, link=shut.link)
        if shut_state.get("stuck"):
            return
        deltas = fabric_deltas(before, after)
        attach_json("incast goodput per sender (Gb/s)", {o.client: o.bw_gbps for o in outcomes})
    with allure.step("LAT-1.4/3: the queue holding the delay on the degraded fabric"):
        evidence = hop_evidence(path_hops(view, client, server), deltas, PRIORITY)
        top, why = congested_queue(evidence)
        attach_json("path queues", {e.queue: e.summary() for e in evidence})
        where = _where(top, why, link=shut.link, background=load.flows)
    if runs[0].error:
        why = (
            f"{client}->{server} had no path {settle_s * 1000:.0f} ms after {shut.link} went "
            f"down (shut at {shut.endpoint}): {runs[0].error}"
        )
        _failed_run(measure, FAILOVER_KEYS.p99, unit, why, where)
        return
    row, error = _worst(runs)
    if row is None:
        _failed_run(measure, FAILOVER_KEYS.p99, unit, error or "no latency table", where)
        return
    attach_json(f"ib_write_lat {client}->{server} with {shut.link} down", runs[0].latency)
    _judge(
        measure,
        FAILOVER_KEYS,
        "LAT-1.4",
        unit,
        idle_row,
        row,
        where,
        f"incast, {shut.endpoint} down",
        f"ib_write_lat {client}->{server}: idle vs beside {load.what} with {shut.link} down",
        outlived,
    )
    with allure.step(f"LAT-1.4/7: {shut.link} restored: the pair's idle latency is back"):
        labtime.sleep(settle_s)  # a wait that sets the timeline: lab time
        again = run_latency_pair(view.lab, latency_pair, _lat_spec())
        back = _row(again)
        labels = {"pair": unit, "link": shut.link, "phase": "restored"}
        if back is None or back.p99_us is None:
            why = f"no latency after {shut.link} came back: {again.error or 'no latency table'}"
            measure("latency.idle_p99_us", float("nan"), key="latency.idle_p99_us", error=why,
                    **labels)  # fmt: skip
            return
        measure("latency.idle_p99_us", back.p99_us, key="latency.idle_p99_us", **labels)
