"""Collectives: all_reduce_perf bus bandwidth against the ring's bottleneck, and the straggler.

A ring AllReduce runs at the pace of its slowest link, so busbw is judged
against the slowest NIC's wire rate; when it misses, the ring's hops are
probed with perftest while every switch's counters are read, and the link
that shows congestion without carrying its line rate is named. Test plan and
steps: README.md in this folder; settings.yaml; limits ``collective.*``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import allure
import pytest

from labtest import plugin
from labtest.capabilities.host import (
    Collectives,
    NcclNetworkError,
    NcclSpec,
    PerftestSpec,
    RdmaDevice,
    RdmaDevices,
)
from labtest.capabilities.switch import Interfaces
from labtest.errors import InfraError
from labtest.fixtures.cabling_plan import pair_id, ring_orders
from labtest.fixtures.criteria import fraction
from labtest.fixtures.perftest_pairs import run_bandwidth_pairs
from labtest.fixtures.run_counters import fabric_deltas
from labtest.fixtures.stragglers import (
    HostLinkProbe,
    NetworkSuspect,
    held_back,
    host_link_culprits,
    host_link_rounds,
    leaf_shift_pairs,
    link_evidence,
    network_suspects,
    straggler_labels,
    straggler_suspects,
    watch_oper_states,
)
from labtest.fixtures.suite_data import load_settings
from labtest.fixtures.traffic import FabricView
from labtest.reports.attach import attach_json

SETTINGS = load_settings("collective")
ROCE_OVERHEAD_BYTES = 82  # per packet on the wire: preamble, IFG, Eth, FCS, IPv4, UDP, BTH, ICRC
pytestmark = pytest.mark.needs("Collectives", count=2)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ring" in metafunc.fixturenames:
        orders: dict[str, list[str]] = {}
        if plugin.testbed_of(metafunc.config) is not None:
            orders = ring_orders(FabricView.of(plugin.lab_of(metafunc.config)).attachment)
        metafunc.parametrize("ring", list(orders.values()), ids=list(orders))


def _nic_goodput_gbps(view: FabricView, host: str, port: RdmaDevice | None = None) -> float:
    """The negotiated NIC rate x RoCE wire efficiency at the active MTU: what the host's
    link can carry for a collective (a NIC that linked slower lowers the ceiling: that is
    the roce suite's finding, not a straggler). A port that is down has no negotiated
    rate: its link's planned speed is what it should carry."""
    port = port or view.nic(host)
    if port is None:
        raise InfraError(host, "the NIC's negotiated rate is unknown (no RdmaDevices port)")
    gbps = port.negotiated_gbps if port.active is not False else None
    gbps = gbps or view.attachment[host].speed_gbps
    if not gbps:
        raise InfraError(host, "the NIC reports no rate and the testbed plans no speed_gbps")
    mtu = port.active_mtu_bytes or int(SETTINGS["roce_mtu_bytes"])
    return gbps * mtu / (mtu + ROCE_OVERHEAD_BYTES)


def _mpi_name(view: FabricView, host: str) -> str:
    """The name mpirun reaches a host by: ``vars.mpi_host``, else its testbed name."""
    return str(view.lab.testbed.devices[host].vars.get("mpi_host", host))


@pytest.fixture(scope="module")
def localise(fabric_view: FabricView) -> Callable[[], dict[str, str]]:
    """The straggler localisation, run at most once per module: every ring that misses
    its limit names the same culprit without probing the fabric again."""
    found: dict[str, str] = {}

    def run() -> dict[str, str]:
        if not found:
            found.update(_localise(fabric_view))
        return dict(found)

    return run


@pytest.fixture(scope="module")
def diagnose(fabric_view: FabricView) -> Callable[[list[str], int], list[NetworkSuspect]]:
    """Why a collective died of a network error, looked into at most once per module: the
    fabric's evidence (link state and flaps over a watch, MTU of every port, a probe of
    each ring hop) of the first ring that died is kept for the others."""
    found: list[list[NetworkSuspect]] = []

    def run(ring: list[str], need_mtu: int) -> list[NetworkSuspect]:
        if not found:
            found.append(_diagnose(fabric_view, ring, need_mtu))
        return found[0]

    return run


@pytest.mark.plan("COLL-1.1")
@pytest.mark.judges(
    "collective.network_errors",
    "collective.ring_nics_down",
    "collective.wrong_elements",
    "collective.busbw_fraction_of_ceiling",
    "roce.port_mtu_bytes",
    "link.flaps",
)
def test_allreduce(
    ring: list[str],
    fabric_view: FabricView,
    measure: Any,
    localise: Callable[[], dict[str, str]],
    diagnose: Callable[[list[str], int], list[NetworkSuspect]],
) -> None:
    """COLL-1.1: all_reduce_perf over the ring reaches its bottleneck rate, with no
    corrupted element; a miss is localised to the link that holds the ring back."""
    view = fabric_view
    cfg = SETTINGS["allreduce"]
    order = " -> ".join(ring)
    with allure.step("COLL-1.1/1: every ring NIC is up; the slowest one's RoCE goodput"):
        nics = {h: view.nic(h) for h in ring}
        down = [h for h, port in nics.items() if port is not None and port.active is False]
        if down:
            need = int(measure.profile.get("roce.port_mtu_bytes").low)
            _judge_nics_down(measure, view, order, down, diagnose(ring, need))
            return
        rates = {h: _nic_goodput_gbps(view, h, nics[h]) for h in ring}
        bottleneck = min(rates, key=rates.__getitem__)
        ceiling_gbytes = rates[bottleneck] / 8
        attach_json("NIC goodput ceilings (Gb/s)", rates)
    with allure.step(
        f"COLL-1.1/2: {cfg['test']} -b {cfg['min_bytes']} -e {cfg['max_bytes']} "
        f"-f {cfg['step_factor']} -n {cfg['iterations']} -c 1 over {order}"
    ):
        launcher = view.lab.device(ring[0])
        assert isinstance(launcher, Collectives)
        spec = NcclSpec(
            collective=cfg["test"],
            min_bytes=cfg["min_bytes"],
            max_bytes=cfg["max_bytes"],
            step_factor=cfg["step_factor"],
            iterations=cfg["iterations"],
            gpus_per_rank=cfg["gpus_per_rank"],
        )
        result = launcher.nccl_test(
            spec, [_mpi_name(view, h) for h in ring], timeout_s=float(cfg["timeout_s"])
        )
        attach_json("all_reduce_perf", result)
    if result.network_error is not None:
        with allure.step("COLL-1.1/2b: the run died of a network error: find the link"):
            need = int(measure.profile.get("roce.port_mtu_bytes").low)
            _judge_network_error(measure, order, result.network_error, diagnose(ring, need))
        return
    measure("collective.network_errors", 0, key="collective.network_errors", ring=order)
    with allure.step("COLL-1.1/3: zero corrupted elements (#wrong, out-of-bounds)"):
        wrong = sum((t.wrong or 0) for r in result.rows for t in (r.out_of_place, r.in_place)) + (
            result.out_of_bounds or 0
        )
        measure("collective.wrong_elements", wrong, key="collective.wrong_elements", ring=order)
    with allure.step("COLL-1.1/4: busbw at the largest size against the bottleneck"):
        largest = max(result.rows, key=lambda r: r.size_bytes)
        busbw = min(t.busbw_gbs or 0.0 for t in (largest.out_of_place, largest.in_place))
        ratio = fraction(busbw, ceiling_gbytes)
        limit = measure.profile.get("collective.busbw_fraction_of_ceiling")
        labels = {
            "ring": order,
            "busbw_gbytes_s": f"{busbw:.2f}",
            "ceiling_gbytes_s": f"{ceiling_gbytes:.2f}",
            "bottleneck_host": bottleneck,
        }
        if limit.judge(ratio).value == "FAIL":
            with allure.step(
                "COLL-1.1/5: localise the straggler: host links alone, then the whole fabric"
            ):
                labels.update(localise())
        measure(
            "collective.busbw_fraction_of_ceiling",
            ratio,
            key="collective.busbw_fraction_of_ceiling",
            **labels,
        )


def _localise(view: FabricView) -> dict[str, str]:
    """Two probes, the host links first: each leaf's hosts in bidirectional pairs load
    every host link alone (no ECMP, no uplink), so a slow one shows in its pair and the
    host that was not held back is named. If none is slow, every host sends to its
    counterpart on the next leaf, all at once, while every switch's counters are read:
    the most suspect fabric port is named (host links proven healthy are left out)."""
    cfg = SETTINGS["localise"]
    util_below = float(cfg["congested_util_below"])
    findings = host_link_culprits(_host_link_probes(view, cfg), util_below=util_below)
    if any(f.certain for f in findings):
        attach_json("straggler localisation: host links", [f.__dict__ for f in findings])
        return straggler_labels(view, findings, [])
    suspect_hosts = {f.host for f in findings}
    cleared = [
        f"{a.switch}:{a.switch_port}" for h, a in view.attachment.items() if h not in suspect_hosts
    ]
    pairs = leaf_shift_pairs(view.attachment)
    spec = PerftestSpec(
        test="ib_write_bw", size_bytes=65536, qps=int(cfg["qps"]), duration_s=cfg["duration_s"]
    )
    before = view.snapshot_switches(pfc=True, fec=True)
    outcomes = run_bandwidth_pairs(view.lab, pairs, spec)
    after = view.snapshot_switches(pfc=True, fec=True)
    speeds = {
        f"{name}:{port}": st.speed_gbps
        for name in view.switches
        for port, st in _interfaces(view, name).items()
    }
    deltas = fabric_deltas(before, after)
    evidence = link_evidence(view, deltas, speeds, float(cfg["duration_s"]))
    suspects = straggler_suspects(evidence, view, util_below=util_below, cleared=cleared)
    attach_json(
        "straggler localisation",
        {
            "host_links": [f.__dict__ for f in findings],
            "probe_bw_gbps": {o.pair: o.bw_gbps for o in outcomes},
            "suspects": [{**e.__dict__, "util": e.util, "rx_util": e.rx_util} for e in suspects],
            "ports": [{**e.__dict__, "util": e.util, "rx_util": e.rx_util} for e in evidence],
        },
    )
    return straggler_labels(view, findings, suspects)


def _host_link_probes(view: FabricView, cfg: dict[str, Any]) -> list[HostLinkProbe]:
    """Each round of host-link pairs at once (``ib_write_bw -b``), with each host's CNPs
    handled and pause frames received over the run: how much the fabric held it back."""
    spec = PerftestSpec(
        test="ib_write_bw",
        size_bytes=65536,
        qps=int(cfg["qps"]),
        duration_s=cfg["duration_s"],
        bidirectional=True,
    )
    probes = []
    for pairs in host_link_rounds(view.attachment):
        hosts = sorted({h for p in pairs for h in p})
        before = view.snapshot_hosts(hosts)
        outcomes = run_bandwidth_pairs(view.lab, pairs, spec)
        after = view.snapshot_hosts(hosts)
        pressure = {h: held_back(before[h], after[h]) for h in hosts}
        for o in outcomes:
            ceiling = 2 * min(_nic_goodput_gbps(view, o.client), _nic_goodput_gbps(view, o.server))
            probes.append(HostLinkProbe(o.client, o.server, o.bw_gbps, ceiling, pressure))
    return probes


def _judge_network_error(
    measure: Any, order: str, error: NcclNetworkError, suspects: list[NetworkSuspect]
) -> None:
    """A failed collective (not broken: the tool ran, the fabric lost its traffic), with the
    culprit link and the evidence measurements that point at it."""
    labels = {"ring": order, "error": error.line[:200], "signature": error.signature}
    if error.wc_status_name:
        labels["wc_status"] = error.wc_status_name
    if suspects:
        top = suspects[0]
        device, _, port = top.endpoint.partition(":")
        labels.update(link=top.link, device=device, port=port, evidence=top.why)
    else:
        labels.update(link="unlocalised", why="no link down, flapping or with a short MTU")
    measure("collective.network_errors", 1, key="collective.network_errors", **labels)
    _measure_evidence(measure, suspects)


def _judge_nics_down(
    measure: Any, view: FabricView, order: str, down: list[str], suspects: list[NetworkSuspect]
) -> None:
    """A ring with a NIC port down cannot run at any rate: NCCL leaves a port that is not
    ACTIVE out, so the down host link is the finding (named, not a zero ceiling)."""
    att = view.attachment[down[0]]
    measure(
        "collective.ring_nics_down",
        len(down),
        key="collective.ring_nics_down",
        ring=order,
        hosts=",".join(down),
        device=att.host,
        port=att.host_port,
        link=att.link,
    )
    _measure_evidence(measure, suspects)


def _measure_evidence(measure: Any, suspects: list[NetworkSuspect]) -> None:
    for x in suspects:  # the evidence, under the keys that judge it, for the root-cause view
        device, _, port = x.endpoint.partition(":")
        if x.kind == "mtu" and x.value is not None:
            measure("roce.port_mtu_bytes", x.value, key="roce.port_mtu_bytes",
                    device=device, port=port, link=x.link)  # fmt: skip
        elif x.kind == "flaps" and x.value is not None:
            measure("link.flaps", x.value, key="link.flaps",
                    device=device, port=port, link=x.link)  # fmt: skip


def _diagnose(view: FabricView, ring: list[str], need_mtu: int) -> list[NetworkSuspect]:
    cfg = SETTINGS["network_error"]
    with allure.step(f"watch every switch port's state for {cfg['watch_s']} s"):
        oper_up, down_events = watch_oper_states(view, float(cfg["watch_s"]), float(cfg["poll_s"]),
                                                 float(cfg["counted_poll_s"]))
    mtu: dict[str, int | None] = {}
    for name in view.switches:
        mtu |= {f"{name}:{p}": st.mtu_bytes for p, st in _interfaces(view, name).items()}
    for host in ring:
        driver = view.lab.device(host)
        if isinstance(driver, RdmaDevices):
            mtu |= {f"{host}:{ln.ifname}": ln.mtu_bytes for ln in driver.links()}
    hops = list(zip(ring, [*ring[1:], ring[0]], strict=True))
    spec = PerftestSpec(
        test="ib_write_bw", size_bytes=65536, qps=int(cfg["qps"]), duration_s=cfg["probe_s"]
    )
    with allure.step("probe every ring hop (ib_write_bw), all at once"):
        outcomes = run_bandwidth_pairs(view.lab, hops, spec)
    failed = [(o.client, o.server) for o in outcomes if o.error]
    suspects = network_suspects(
        view,
        oper_up=oper_up,
        down_events=down_events,
        mtu_bytes=mtu,
        need_mtu_bytes=need_mtu,
        hops=hops,
        failed_hops=failed,
    )
    attach_json(
        "network error diagnosis",
        {
            "down_events": down_events,
            "failed_hops": [pair_id(h) for h in failed],
            "hop_errors": {o.pair: o.error for o in outcomes if o.error},
            "suspects": [x.__dict__ for x in suspects],
        },
    )
    return suspects


def _interfaces(view: FabricView, switch: str) -> dict[str, Any]:
    driver = view.lab.device(switch)
    return driver.interfaces() if isinstance(driver, Interfaces) else {}
