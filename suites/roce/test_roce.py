"""RoCE: pairwise bandwidth and latency, bisection bandwidth, ECMP balance.

The test plan, with the numbered steps these tests follow, is README.md in
this folder; run parameters are in settings.yaml, pass criteria in the limits
profile (``roce.*``).
"""

from __future__ import annotations

from typing import Any, cast

import allure
import pytest

from labtest import plugin
from labtest.capabilities.host import PcieLinks, PerftestSpec, RdmaDevices
from labtest.capabilities.switch import Interfaces
from labtest.errors import CommandFailed, InfraError
from labtest.fixtures.cabling_plan import bisection_pairs, host_pairs, pair_id, ring_pairs
from labtest.fixtures.criteria import fraction, share_deviation
from labtest.fixtures.perftest_pairs import PairOutcome, run_bandwidth_pairs, run_latency_pair
from labtest.fixtures.run_counters import fabric_deltas
from labtest.fixtures.run_schedule import Outcome, TrafficRun, pair_run, run_in_rounds
from labtest.fixtures.suite_data import load_settings
from labtest.fixtures.traffic import FabricView
from labtest.reports import plots
from labtest.reports.attach import attach_json, attach_png
from labtest.testbed.model import Link

SETTINGS = load_settings("roce")
pytestmark = pytest.mark.needs("Perftest", count=2)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    lab = plugin.lab_of(metafunc.config) if plugin.testbed_of(metafunc.config) else None
    if "host_pair" in metafunc.fixturenames:
        pairs: list[tuple[str, str]] = []
        if lab is not None:
            hosts = FabricView.of(lab).hosts
            pairs = host_pairs(hosts) if SETTINGS["pairs"] == "all" else ring_pairs(hosts)
        metafunc.parametrize("host_pair", pairs, ids=[pair_id(p) for p in pairs])
    if "roce_host" in metafunc.fixturenames:
        hosts = FabricView.of(lab).hosts if lab is not None else []
        metafunc.parametrize("roce_host", hosts, ids=hosts)
    if "mtu_link" in metafunc.fixturenames:
        links: list[Link] = []
        if lab is not None:
            view = FabricView.of(lab)
            data = set(view.hosts) | set(view.switches)
            links = [lk for lk in lab.testbed.links if {e.device for e in lk.ends} <= data]
        metafunc.parametrize("mtu_link", links, ids=[lk.name for lk in links])


class PairRuns:
    """ROCE-1.1's or ROCE-1.2's pairs, run in rounds of disjoint pairs (``run_schedule``)
    the first time any of them is asked for; each test then judges its own pair's outcome.
    ``concurrent_pairs: false`` in settings.yaml (or an xdist worker) runs them one at a time,
    each in its own test."""

    def __init__(self, request: pytest.FixtureRequest, view: FabricView, test: str) -> None:
        self.view, self.test = view, test
        workers = hasattr(request.config, "workerinput")  # xdist spreads the pairs itself
        self.concurrent = bool(SETTINGS.get("concurrent_pairs", True)) and not workers
        self.pairs: list[tuple[str, str]] = [
            cast("tuple[str, str]", item.callspec.params["host_pair"])
            for item in request.session.items
            if isinstance(item, pytest.Function) and item.originalname == test
            and item.module is request.module and hasattr(item, "callspec")
        ]
        self._done: dict[str, Outcome[PairOutcome]] = {}

    def outcome(self, pair: tuple[str, str], run: Any) -> Outcome[PairOutcome]:
        """``pair``'s outcome; on first use the whole schedule runs (``run(pair)`` per pair)."""
        if not self.concurrent or pair not in self.pairs:
            return run_in_rounds([self._run(pair)], lambda r: run(pair))[pair_id(pair)]
        if not self._done:
            runs = [self._run(p) for p in self.pairs]
            by_name = dict(zip((r.name for r in runs), self.pairs, strict=True))
            self._done = run_in_rounds(runs, lambda r: run(by_name[r.name]))
        return self._done[pair_id(pair)]

    def _run(self, pair: tuple[str, str]) -> TrafficRun:
        return pair_run(pair_id(pair), pair, self.view.attachment, self.view.uplinks)


@pytest.fixture(scope="module")
def bandwidth_runs(request: pytest.FixtureRequest, fabric_view: FabricView) -> PairRuns:
    return PairRuns(request, fabric_view, "test_pair_bandwidth")


@pytest.fixture(scope="module")
def latency_runs(request: pytest.FixtureRequest, fabric_view: FabricView) -> PairRuns:
    return PairRuns(request, fabric_view, "test_pair_latency")


def _note_schedule(ran: Outcome[PairOutcome]) -> None:
    """Say in the report which disjoint pairs ran at the same time as this one."""
    if ran.beside:
        with allure.step(f"ran in round {ran.round_index + 1} beside {', '.join(ran.beside)}"):
            pass


def _spec(section: str) -> PerftestSpec:
    s = SETTINGS[section]
    return PerftestSpec(
        test=s["test"],
        size_bytes=s["size_bytes"],
        qps=s.get("qps", 1),
        duration_s=s.get("duration_s"),
        iterations=s.get("iterations"),
        bidirectional=s.get("bidirectional", False),
    )


def _line_gbps(view: FabricView, host: str) -> float:
    """The planned line rate of a host's link (the cabling plan, not what the NIC negotiated:
    a NIC that linked slower is exactly what this suite must catch)."""
    att = view.attachment[host]
    if att.speed_gbps is None:
        pytest.skip(f"the testbed gives no speed_gbps for {att.link}")
    return att.speed_gbps


def _pair_links(view: FabricView, outcome: PairOutcome) -> str:
    """The host links a pair's traffic crossed at both ends (sorted, comma-separated):
    an RDMA completion error is evidence against them, and the link common to every
    failing pair of one host is the likely cause."""
    return ",".join(sorted(view.attachment[h].link for h in (outcome.client, outcome.server)))


def _judge_pair(
    measure: Any,
    outcome: PairOutcome,
    line_gbps: float,
    directions: int,
    view: FabricView,
    **labels: str,
) -> None:
    """Bandwidth against line rate, and the RoCE MTU the run used."""
    fraction_of_line = fraction(outcome.bw_gbps, line_gbps * directions)
    why = {"error": outcome.error, "links": _pair_links(view, outcome)} if outcome.error else {}
    measure(
        "roce.bw_fraction_of_line",
        fraction_of_line,
        key="roce.bw_fraction_of_line",
        pair=outcome.unit,
        bw_gbps=f"{outcome.bw_gbps:.1f}",
        line_gbps=f"{line_gbps * directions:g}",
        **why,
        **labels,
    )
    if outcome.bandwidth is not None and outcome.bandwidth.mtu_bytes is not None:
        measure(
            "roce.active_mtu_bytes",
            outcome.bandwidth.mtu_bytes,
            key="roce.active_mtu_bytes",
            pair=outcome.unit,
            **labels,
        )


def _judge_drops(measure: Any, before: Any, after: Any,
                 owner: dict[str, str] | None = None, **labels: str) -> None:
    """Any switch port that discarded frames during the run is named (RoCE is lossless).
    ``owner``: the pair whose traffic alone a port carried (a host's port in a bisection,
    ``device:port`` -> ``a--b``): its drops may come from anywhere on that pair's path (a
    port refuses at ingress what it has no route for once the far host's link went down)."""
    dropped = {k: d.drops() for k, d in fabric_deltas(before, after).items() if d.drops() > 0}
    if not dropped:
        measure("roce.lossless_drops", 0, key="roce.lossless_drops", **labels)
    for endpoint, drops in sorted(dropped.items()):
        device, _, port = endpoint.partition(":")
        pair = {"pair": owner[endpoint]} if owner and endpoint in owner else {}
        measure(
            "roce.lossless_drops",
            drops,
            key="roce.lossless_drops",
            device=device,
            port=port,
            **pair,
            **labels,
        )


@pytest.mark.plan("ROCE-0.1")
@pytest.mark.judges("roce.port_mtu_bytes")
def test_link_mtu(mtu_link: Link, fabric_view: FabricView, measure: Any) -> None:
    """ROCE-0.1: both ends of every data link carry the IP MTU a 4096-byte RoCE MTU needs."""
    with allure.step(f"ROCE-0.1/1: MTU of both ends of {mtu_link.name}"):
        ends = {str(e): _port_mtu(fabric_view, e.device, e.port) for e in mtu_link.ends}
        attach_json(f"MTU of {mtu_link.name}", ends)
    with allure.step("ROCE-0.1/2: each end against the limit"):
        judged = 0
        for endpoint, mtu in ends.items():
            if mtu is None:
                continue
            device, _, port = endpoint.partition(":")
            measure(
                "roce.port_mtu_bytes",
                mtu,
                key="roce.port_mtu_bytes",
                device=device,
                port=port,
                link=mtu_link.name,
            )
            judged += 1
        if not judged:
            pytest.skip(f"neither end of {mtu_link.name} reports its MTU")


_MTU_CACHE: dict[str, dict[str, int | None]] = {}


def _port_mtu(view: FabricView, device: str, port: str) -> int | None:
    """A port's MTU from its switch (Interfaces) or host (RdmaDevices), read once per device."""
    if device not in _MTU_CACHE:
        driver = view.lab.device(device)
        if isinstance(driver, Interfaces):
            _MTU_CACHE[device] = {p: st.mtu_bytes for p, st in driver.interfaces().items()}
        elif isinstance(driver, RdmaDevices):
            _MTU_CACHE[device] = {ln.ifname: ln.mtu_bytes for ln in driver.links()}
        else:
            _MTU_CACHE[device] = {}
    return _MTU_CACHE[device].get(port)


@pytest.mark.plan("ROCE-0.2")
@pytest.mark.judges("roce.nic_pcie_fraction_of_capability", "roce.nic_pcie_fraction_of_line")
def test_nic_pcie_link(roce_host: str, fabric_view: FabricView, measure: Any) -> None:
    """ROCE-0.2: the NIC's PCIe link trained at the speed and width it is capable of, and
    carries the NIC's line rate (a narrowed link caps every pair with this host)."""
    view, host = fabric_view, roce_host
    netdev = view.attachment[host].host_port
    driver = view.lab.device(host)
    unit = {"device": host, "netdev": netdev}
    keys = ("roce.nic_pcie_fraction_of_capability", "roce.nic_pcie_fraction_of_line")
    if not isinstance(driver, PcieLinks):
        reason = f"{host}'s driver reads no PCIe link status"
        for key in keys:
            measure.not_proven(key, reason, device=host)
        pytest.skip(reason)
    with allure.step(f"ROCE-0.2/1: PCIe link of {host}'s NIC ({netdev}): trained vs capable"):
        try:
            link = driver.pcie_link(netdev)
        except CommandFailed as exc:  # no PCI device behind the netdev (a soft-RoCE port)
            reason = f"{host}: no PCIe link status for {netdev}: {exc}"
            for key in keys:
                measure.not_proven(key, reason, device=host)
            pytest.skip(reason)
        attach_json(f"{host} {netdev} PCIe link", link)
    trained = _pcie_text(link.speed_gts, link.width_lanes)
    capable = _pcie_text(link.max_speed_gts, link.max_width_lanes)
    labels = {**unit, "pci": link.address or "unknown", "trained": trained, "capable": capable}
    rate, best = link.data_rate_gbps, link.max_data_rate_gbps
    with allure.step("ROCE-0.2/2: trained data rate against the capability and line rate"):
        if rate is None or best is None:
            measure(
                "roce.nic_pcie_fraction_of_capability",
                0.0,
                key="roce.nic_pcie_fraction_of_capability",
                why="the PCIe link did not train (speed Unknown or width 0)",
                **labels,
            )
            return
        measure(
            "roce.nic_pcie_fraction_of_capability",
            fraction(rate, best),
            key="roce.nic_pcie_fraction_of_capability",
            **labels,
        )
        line = _line_gbps(view, host)
        measure(
            "roce.nic_pcie_fraction_of_line",
            fraction(rate, line),
            key="roce.nic_pcie_fraction_of_line",
            pcie_gbps=f"{rate:.0f}",
            line_gbps=f"{line:g}",
            **labels,
        )


def _pcie_text(speed_gts: float | None, width: int | None) -> str:
    if speed_gts is None or width is None:
        return "no link"
    return f"{speed_gts:g} GT/s x{width}"


@pytest.mark.plan("ROCE-1.1")
@pytest.mark.judges("roce.bw_fraction_of_line", "roce.active_mtu_bytes")
def test_pair_bandwidth(
    host_pair: tuple[str, str], fabric_view: FabricView, bandwidth_runs: PairRuns, measure: Any
) -> None:
    """ROCE-1.1: bidirectional ib_write_bw between two hosts reaches 90% of line rate."""
    client, server = host_pair
    spec = _spec("pair_bandwidth")
    with allure.step("ROCE-1.1/1: planned line rate of both hosts' links"):
        line = min(_line_gbps(fabric_view, client), _line_gbps(fabric_view, server))
    with allure.step(
        f"ROCE-1.1/2: ib_write_bw -b -q {spec.qps} -s {spec.size_bytes} -D {spec.duration_s}"
    ):
        ran = bandwidth_runs.outcome(
            host_pair, lambda p: run_bandwidth_pairs(fabric_view.lab, [p], spec)[0]
        )
        outcome = ran.get()
        _note_schedule(ran)
        if outcome.bandwidth is not None:
            attach_json(f"ib_write_bw {outcome.pair}", outcome.bandwidth)
    with allure.step("ROCE-1.1/3: bandwidth and the run's RoCE MTU against the limits"):
        directions = 2 if spec.bidirectional else 1
        _judge_pair(measure, outcome, line, directions, fabric_view, client=client, server=server,
                    flows=str(spec.qps * directions))


@pytest.mark.plan("ROCE-1.2")
@pytest.mark.judges("roce.latency_p50_us", "roce.latency_p99_us", "roce.latency_p99_9_us")
def test_pair_latency(
    host_pair: tuple[str, str], fabric_view: FabricView, latency_runs: PairRuns, measure: Any
) -> None:
    """ROCE-1.2: ib_write_lat p50, p99 and p99.9 between two hosts."""
    spec = _spec("pair_latency")
    with allure.step(f"ROCE-1.2/1: ib_write_lat -s {spec.size_bytes} -n {spec.iterations}"):
        ran = latency_runs.outcome(host_pair, lambda p: run_latency_pair(fabric_view.lab, p, spec))
        outcome = ran.get()
        _note_schedule(ran)
    with allure.step("ROCE-1.2/2: percentiles against the limits"):
        if outcome.latency is None or not outcome.latency.rows:
            measure(
                "roce.latency_p50_us",
                float("nan"),
                key="roce.latency_p50_us",
                pair=outcome.unit,
                error=outcome.error or "no latency table",
                links=_pair_links(fabric_view, outcome),
            )
            return
        attach_json(f"ib_write_lat {outcome.pair}", outcome.latency)
        row = outcome.latency.rows[0]
        for key, value in (
            ("roce.latency_p50_us", row.t_typical_us),
            ("roce.latency_p99_us", row.p99_us),
            ("roce.latency_p99_9_us", row.p99_9_us),
        ):
            if value is not None:
                measure(key, value, key=key, pair=outcome.unit)


@pytest.mark.plan("ROCE-2.1")
@pytest.mark.judges("roce.bw_fraction_of_line", "roce.active_mtu_bytes", "roce.lossless_drops")
def test_bisection_bandwidth(fabric_view: FabricView, measure: Any) -> None:
    """ROCE-2.1: every pair across the bisection at once, each near line rate."""
    view = fabric_view
    pairs = bisection_pairs(view.attachment)
    if not pairs:
        pytest.skip("the hosts do not span two halves of the leaves")
    spec = _spec("bisection")
    with allure.step(
        f"ROCE-2.1/1: {len(pairs)} pairs across the bisection: "
        + ", ".join(pair_id(p) for p in pairs)
    ):
        lines = {p: min(_line_gbps(view, p[0]), _line_gbps(view, p[1])) for p in pairs}
    with allure.step(f"ROCE-2.1/2: all pairs at once, ib_write_bw -b -q {spec.qps}"):
        before = view.snapshot_switches()
        outcomes = run_bandwidth_pairs(view.lab, pairs, spec)
        after = view.snapshot_switches()
    with allure.step("ROCE-2.1/3: each pair's bandwidth against line rate"):
        directions = 2 if spec.bidirectional else 1
        for outcome, pair in zip(outcomes, pairs, strict=True):
            _judge_pair(measure, outcome, lines[pair], directions, view, scope="bisection",
                        flows=str(spec.qps * directions))
    with allure.step("ROCE-2.1/4: no switch port dropped frames during the run"):
        owner = {f"{view.attachment[h].switch}:{view.attachment[h].switch_port}": pair_id(p)
                 for p in pairs for h in p if h in view.attachment}
        _judge_drops(measure, before, after, owner, scope="bisection")  # every host's traffic
        line = min(lines.values()) * directions
        attach_png(
            "bisection bandwidth per pair",
            plots.throughput_per_flow(
                {o.pair: o.bw_gbps for o in outcomes},
                expected_gbps=line * measure.profile.get("roce.bw_fraction_of_line").low,
                title="Bisection: bandwidth per host pair",
            ),
        )


@pytest.mark.plan("ROCE-2.2")
@pytest.mark.judges("roce.bw_fraction_of_line", "roce.ecmp_share_deviation")
@pytest.mark.needs("Interfaces", count=2)
def test_ecmp_balance(fabric_view: FabricView, measure: Any) -> None:
    """ROCE-2.2: many QPs between hosts on different leaves spread evenly over each leaf's
    uplinks (read from the switches' interface counters)."""
    view = fabric_view
    leaves = [leaf for leaf in view.leaves() if len(view.uplinks.get(leaf, [])) >= 2]
    if len(view.leaves()) < 2 or not leaves:
        pytest.skip("no leaf with two or more uplinks, or fewer than two leaves with hosts")
    first = {
        leaf: next(h for h in view.hosts if view.attachment[h].switch == leaf)
        for leaf in view.leaves()
    }
    order = list(first.values())
    pairs = list(zip(order, order[1:] + order[:1], strict=True))
    if len(pairs) == 2 and pairs[0] == pairs[1][::-1]:
        pairs = pairs[:1]  # two leaves: one bidirectional pair covers both directions
    spec = _spec("ecmp_balance")
    with allure.step("ROCE-2.2/1: switch counters before the run"):
        before = view.snapshot_switches()
    with allure.step(
        f"ROCE-2.2/2: one host per leaf to the next leaf, ib_write_bw -b -q {spec.qps}: "
        + ", ".join(pair_id(p) for p in pairs)
    ):
        outcomes = run_bandwidth_pairs(view.lab, pairs, spec)
    with allure.step("ROCE-2.2/3: switch counters after the run"):
        after = view.snapshot_switches()
    with allure.step("ROCE-2.2/4: per leaf, each uplink's share of the transmitted bytes"):
        deltas = fabric_deltas(before, after)
        for outcome in outcomes:
            if outcome.error:
                measure(
                    "roce.bw_fraction_of_line",
                    0.0,
                    key="roce.bw_fraction_of_line",
                    pair=outcome.unit,
                    error=outcome.error,
                    links=_pair_links(view, outcome),
                )
        for leaf in leaves:
            members = view.uplinks[leaf]
            seen = {
                u.endpoint: deltas[u.endpoint].tx_amount() if u.endpoint in deltas else None
                for u in members
            }
            if any(v is None for v in seen.values()):
                measure(
                    "roce.ecmp_unobserved",
                    1,
                    unit="",
                    device=leaf,
                    why="no packet counters for every uplink",
                )
                continue
            loads = {e: float(v or 0.0) for e, v in seen.items()}
            if sum(loads.values()) <= 0:
                raise InfraError(leaf, "uplink packet counters did not move during the run")
            attach_json(f"{leaf} uplink tx packets", loads)
            deviation = share_deviation(list(loads.values()))
            mean = sum(loads.values()) / len(loads)
            worst = max(loads, key=lambda e: abs(loads[e] - mean))
            host = first[leaf]  # -b: its uplinks carried its host's data to each partner
            partners = [b for a, b in pairs if a == host] + [a for a, b in pairs if b == host]
            measure(
                "roce.ecmp_share_deviation",
                deviation,
                key="roce.ecmp_share_deviation",
                device=leaf,
                port=worst.partition(":")[2],
                source=host,
                towards=" ".join(dict.fromkeys(partners)),
                shares=" ".join(
                    f"{e.partition(':')[2]}={fraction(v, sum(loads.values())):.2f}"
                    for e, v in loads.items()
                ),
            )
