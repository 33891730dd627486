"""The emulated traffic generator: the real snappi driver against the OTG server on the model."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtest.capabilities import traffic as tr
from labtest.emulation.lab import EmulatedLab
from labtest.emulation.model.traffic.lab import clos_testbed
from labtest.emulation.personalities.otg import MetricTag, flow_path
from labtest.errors import ProtocolError, TransportError
from labtest.registry import open_driver
from labtest.testbed import load_testbed
from labtest.testbed import model as tbmodel

pytest.importorskip(
    "snappi", reason="snappi is not installed (a labtest dependency: pip install labtest)"
)

ROOT = Path(__file__).resolve().parents[2]
TIME_SCALE = 4.0  # virtual seconds per wall second: a 2 s flow takes 0.5 s
MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
PORTS = [tr.Port(name="p1", location="p1"), tr.Port(name="p2", location="p2")]
WAIT_S = 10.0  # wall-clock bound on every wait
FAIL_AT_S = 0.3  # virtual seconds into the probes


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[EmulatedLab, tbmodel.Testbed]]:
    testbed = load_testbed(ROOT / "testbeds/emulated/leafspine.yaml")
    lab = EmulatedLab(testbed, time_scale=TIME_SCALE)
    emulated = lab.start()
    yield lab, emulated
    lab.stop()


@pytest.fixture
def tg(lab: tuple[EmulatedLab, tbmodel.Testbed]) -> Iterator[Any]:
    emulated_lab, emulated = lab
    yield open_driver("tg1", emulated)
    heal(emulated_lab)


def heal(lab: EmulatedLab) -> None:
    """Clear faults, bring every port back up and wait (bounded) until every link is routed."""
    fabric = lab.fabric
    fabric.set_reachable("tg1", True)
    for fault in fabric.active_faults():
        fabric.clear(fault.id)
    for link in fabric.testbed.links:
        for end in link.ends:
            if not fabric.interface(end.device, end.port).admin_up:
                fabric.set_admin(end.device, end.port, True)
    deadline = time.monotonic() + WAIT_S
    while not all(fabric.traffic.link_routed(n) for n in fabric.link_names()):
        assert time.monotonic() < deadline, "links did not come back"
        time.sleep(0.02)


def sleep_virtual(lab: EmulatedLab, seconds: float) -> None:
    time.sleep(lab.fabric.clock.wall_s(seconds))


def probe(name: str, sport: int = 49152, dscp: int = 0, ecn: int = 0, **fields: Any) -> tr.Flow:
    values = {"rate_pps": 10_000, "duration_s": 2.0} | fields
    return tr.Flow(
        name=name,
        tx_port="p1",
        rx_ports=["p2"],
        packet=[
            tr.Ethernet(src_mac=MAC_A, dst_mac=MAC_B),
            tr.Ipv4(src="198.18.0.1", dst="198.18.0.2", dscp=dscp, ecn=ecn),
            tr.Udp(src_port=sport, dst_port=5001),
        ],
        **values,
    )


def by_name(tg: Any) -> dict[str, tr.FlowMetrics]:
    return {m.name: m for m in tg.metrics()}


# --- plain traffic ----------------------------------------------------------------------------


def test_fixed_flow_delivers_every_frame_and_stops_by_itself(lab, tg) -> None:
    emulated_lab, _ = lab
    tg.set_config(tr.TrafficConfig(ports=PORTS, flows=[probe("fixed")]))
    tg.start_traffic()
    sleep_virtual(emulated_lab, 0.5)
    (mid,) = tg.metrics()
    assert mid.transmit == "started" and 0 < mid.frames_tx < 20_000
    assert tg.wait_done(timeout_s=WAIT_S)  # nobody called stop: the 2 s ran out in virtual time
    (m,) = tg.metrics()
    assert (m.transmit, m.frames_tx, m.frames_rx) == ("stopped", 20_000, 20_000)
    assert m.bytes_rx == 20_000 * 128 and m.loss_frames == 0 and m.loss_duration_ms == 0.0
    # tg1 - leaf1 - spine - leaf4 - tg1: three switch hops, cut-through, short fibres
    assert m.latency_min_us is not None and 2.0 < m.latency_min_us <= m.latency_max_us < 5.0
    assert m.ecn_ce_count == 0  # tagged, but nothing marked


def test_continuous_flow_runs_until_stopped_and_settles(lab, tg) -> None:
    emulated_lab, _ = lab
    tg.set_config(tr.TrafficConfig(ports=PORTS, flows=[probe("forever", duration_s=None)]))
    tg.start_traffic(["forever"])
    sleep_virtual(emulated_lab, 0.4)
    assert tg.wait_done(timeout_s=0.3) is False
    tg.stop_traffic()
    assert tg.wait_done(timeout_s=WAIT_S)
    (m,) = tg.metrics()
    assert m.transmit == "stopped" and m.frames_tx > 4_000 and m.frames_rx == m.frames_tx
    sleep_virtual(emulated_lab, 0.2)
    assert tg.metrics()[0].frames_tx == m.frames_tx  # nothing sent after the stop


# --- failover ---------------------------------------------------------------------------------


def run_with_failure(
    lab: EmulatedLab, tg: Any, fail: Any, flows: int = 6, duration_s: float = 2.0
) -> tuple[dict[str, tr.FlowMetrics], set[str], float]:
    """Probe flows p1 -> p2 on both spines; ``fail(uplink)`` breaks one leaf1 uplink mid-flow.

    Returns the metrics, the flows whose path used that uplink, and the loss window
    the model predicts for it (detection + convergence, both ends' worst).
    """
    names = [f"probe{i}" for i in range(flows)]
    config = [probe(n, sport=49152 + i, duration_s=duration_s) for i, n in enumerate(names)]
    tg.set_config(tr.TrafficConfig(ports=PORTS, flows=config))
    tg.start_traffic()
    started_s = lab.fabric.now_s()
    uplinks = {n: flow_path(lab.fabric, "tg1", n)[1] for n in names}
    counts = Counter(uplinks.values())
    assert len(counts) == 2, f"all probes hashed onto one uplink: {uplinks}"
    victim = min(counts, key=lambda u: counts[u])
    # at a virtual instant, so wall-clock jitter cannot push the outage past the flows' end
    lab.fabric.schedule(started_s + FAIL_AT_S, lambda: fail(victim))
    assert tg.wait_done(timeout_s=WAIT_S)
    traffic = lab.fabric.traffic
    predicted_ms = traffic.convergence.delay_s(traffic.topo.resolve_link(victim), False) * 1e3
    hit = {n for n, u in uplinks.items() if u == victim}
    return by_name(tg), hit, predicted_ms


def assert_loss_window(metrics: dict[str, tr.FlowMetrics], hit: set[str], window_ms: float) -> None:
    for name, m in metrics.items():
        assert m.frames_tx == 20_000, name
        if name in hit:
            assert m.loss_duration_ms == pytest.approx(window_ms, rel=0.05), name
            assert m.frames_rx == m.frames_tx - m.loss_frames
        else:  # flows on the other spine lose nothing
            assert (m.frames_rx, m.loss_frames, m.loss_duration_ms) == (20_000, 0, 0.0), name


def test_link_failure_costs_detection_plus_convergence(lab, tg) -> None:
    emulated_lab, _ = lab

    def shut(uplink: str) -> None:
        device, _, port = uplink.partition(":")
        emulated_lab.fabric.set_admin(device, port, False)

    metrics, hit, predicted_ms = run_with_failure(emulated_lab, tg, shut)
    assert predicted_ms == pytest.approx(650.0)  # BFD 3 x 200 ms + 50 ms, the model's defaults
    assert_loss_window(metrics, hit, predicted_ms)


def test_faults_change_the_loss_window_as_the_model_predicts(lab, tg) -> None:
    emulated_lab, _ = lab
    fabric = emulated_lab.fabric

    # a 3 dB dirty connector dims the link but keeps it up: the probes lose nothing
    metrics, _, _ = run_with_failure(
        emulated_lab, tg, lambda uplink: fabric.inject("dirty_connector", uplink, loss_db=3.0)
    )
    assert_loss_window(metrics, set(), 0.0)
    fabric.clear("dirty_connector")

    # a slow-converging leaf and a connector dirty enough to lose the link
    def dirty_and_slow(uplink: str) -> None:
        fabric.inject("slow_convergence", uplink.partition(":")[0], extra_ms=300.0)
        fabric.inject("dirty_connector", uplink, loss_db=8.0)

    metrics, hit, predicted_ms = run_with_failure(emulated_lab, tg, dirty_and_slow)
    assert predicted_ms == pytest.approx(950.0)
    assert_loss_window(metrics, hit, predicted_ms)


# --- congestion -------------------------------------------------------------------------------


def switch_ecn_marks(lab: EmulatedLab) -> int:
    """ECN-marked frames counted by every switch queue of the fabric."""
    traffic = lab.fabric.traffic
    ports = [p.endpoint for p in traffic.topo.ports if traffic.topo.is_switch(p.device)]
    return sum(q.ecn_marked_packets for p in ports for q in traffic.port_counters(p).queues)


def test_ecn_ce_is_counted_only_when_the_path_marks(lab, tg) -> None:
    emulated_lab, _ = lab
    load = {"dscp": 3, "rate_pps": None, "rate_line_pct": 30, "size_bytes": 1024, "duration_s": 0.2}
    flows = [probe("ect", ecn=2, **load), probe("not-ect", sport=50000, **load)]
    ports = [p.model_copy(update={"speed_gbps": 400}) for p in PORTS]
    tg.set_config(tr.TrafficConfig(ports=ports, flows=flows))
    tg.start_traffic()
    assert tg.wait_done(timeout_s=WAIT_S)
    calm = by_name(tg)
    assert calm["ect"].ecn_ce_count == 0 and calm["ect"].frames_rx == calm["ect"].frames_tx

    for uplink in ("leaf1:Ethernet0", "leaf1:Ethernet8"):  # 100G left of each 400G uplink
        emulated_lab.fabric.inject("straggler_link", uplink, rate_fraction=0.25)
    marks_before = switch_ecn_marks(emulated_lab)
    tg.start_traffic()
    assert tg.wait_done(timeout_s=WAIT_S)
    busy = by_name(tg)
    for m in busy.values():  # priority 3 is lossless: PFC holds the generator back, nothing drops
        assert m.frames_rx == m.frames_tx and m.loss_frames == 0
        assert m.frames_tx < 0.9 * calm[m.name].frames_tx
    ce = busy["ect"].ecn_ce_count
    assert ce is not None and ce > 0.01 * busy["ect"].frames_rx
    # every CE frame the generator received is a mark some switch queue counted
    assert ce == pytest.approx(switch_ecn_marks(emulated_lab) - marks_before, rel=1e-3)
    assert busy["not-ect"].ecn_ce_count == 0  # a switch marks only ECN-capable frames


def test_pfc_storm_flow_pauses_the_switch_port(lab, tg) -> None:
    emulated_lab, _ = lab
    counters = emulated_lab.fabric.traffic.port_counters
    before = counters("leaf4:Ethernet32").pfc_rx_frames[3]
    storm = tr.pfc_storm_flow("storm", "p2", priority=3, rate_pps=2000, duration_s=0.5,
                              src_mac=MAC_B)  # fmt: skip
    tg.set_config(tr.TrafficConfig(ports=PORTS, flows=[storm]))
    tg.start_traffic()
    assert tg.wait_done(timeout_s=WAIT_S)
    (m,) = tg.metrics()
    assert m.frames_tx == pytest.approx(1000, rel=0.01)
    assert counters("leaf4:Ethernet32").pfc_rx_frames[3] - before == pytest.approx(1000, rel=0.01)


# --- errors and transport ---------------------------------------------------------------------


def test_bad_config_is_a_typed_error_naming_the_problem(tg) -> None:
    ports = [tr.Port(name="p1", location="p1"), tr.Port(name="p2", location="p9")]
    with pytest.raises(ProtocolError, match="location p9 is not a cabled port of tg1"):
        tg.set_config(tr.TrafficConfig(ports=ports, flows=[probe("x")]))
    two_receivers = tr.TrafficConfig.model_construct(  # OTG allows it; the emulation does not
        ports=PORTS, flows=[probe("y").model_copy(update={"rx_ports": ["p1", "p2"]})]
    )
    with pytest.raises(ProtocolError, match="one rx port per flow"):
        tg.set_config(two_receivers)


def post(location: str, path: str, body: Any, timeout_s: float = 2.0) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        location + path, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_port_metrics_link_control_and_errors_over_http(lab, tg) -> None:
    emulated_lab, emulated = lab
    location = emulated.devices["tg1"].vars["otg_location"]
    tg.set_config(
        tr.TrafficConfig(ports=PORTS, flows=[probe("few", packets=1000, duration_s=None)])
    )
    tg.start_traffic()
    assert tg.wait_done(timeout_s=WAIT_S)
    status, reply = post(location, "/monitor/metrics", {"choice": "port", "port": {}})
    ports = {p["name"]: p for p in reply["port_metrics"]}
    assert status == 200 and ports["p1"]["link"] == "up" and ports["p1"]["location"] == "p1"
    assert ports["p1"]["frames_tx"] >= 1000 and ports["p2"]["frames_rx"] >= 1000

    down = {"choice": "port", "port": {"choice": "link", "link": {"port_names": ["p1"],
                                                                  "state": "down"}}}  # fmt: skip
    assert post(location, "/control/state", down)[0] == 200
    assert not emulated_lab.fabric.interface("leaf1", "Ethernet32").oper_up  # the switch sees it
    _, reply = post(location, "/monitor/metrics", {"choice": "port", "port": {}})
    assert reply["port_metrics"][0]["link"] == "down"

    status, reply = post(location, "/control/state", {"choice": "protocol", "protocol": {}})
    assert status == 400 and reply["kind"] == "validation" and "not emulated" in reply["errors"][0]
    status, reply = post(location, "/config", b"{not json")
    assert status == 400 and reply["errors"][0].startswith("bad JSON")
    status, reply = post(location, "/no/such/route", {})
    assert status == 404
    with urllib.request.urlopen(location + "/capabilities/version", timeout=2.0) as answer:
        assert json.loads(answer.read())["app_version"] == "labtest-emulated"


def test_unreachable_generator_stops_answering(lab, tg) -> None:
    emulated_lab, emulated = lab
    location = emulated.devices["tg1"].vars["otg_location"]
    tg.set_config(tr.TrafficConfig(ports=PORTS, flows=[probe("quiet")]))
    emulated_lab.fabric.set_reachable("tg1", False)
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        post(location, "/monitor/metrics", {"choice": "flow", "flow": {}}, timeout_s=0.5)

    # a driver call made during the outage fails (typed) once the device is back
    outcome: dict[str, BaseException] = {}

    def call() -> None:
        try:
            tg.metrics()
        except BaseException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    time.sleep(0.3)
    assert caller.is_alive()  # no answer while unreachable
    emulated_lab.fabric.set_reachable("tg1", True)
    caller.join(WAIT_S)
    assert not caller.is_alive() and isinstance(outcome.get("error"), TransportError)
    assert tg.metrics()[0].name == "quiet"  # and answers again


# --- pure pieces and lifecycle ----------------------------------------------------------------


def test_metric_tags_read_the_ecn_bits_of_each_field() -> None:
    v6 = MetricTag("ecn", width=8, offset=6, length=2, sent=26 << 2 | 2, ecn_shift=0)
    assert (v6.value(ce=False), v6.value(ce=True)) == (2, 3)
    phb = MetricTag("dscp", width=6, offset=0, length=6, sent=26, ecn_shift=None)
    assert phb.value(ce=True) == 26  # marking leaves the DSCP alone
    high = MetricTag("tc-high", width=8, offset=0, length=3, sent=26 << 2 | 2, ecn_shift=0)
    assert high.value(ce=True) == high.value(ce=False) == (26 << 2) >> 5


def small_testbed() -> tbmodel.Testbed:
    """Two leaves, one spine, a 2-port TG whose ports map to ixia-c style names."""
    tb = clos_testbed(spines=1, leaves=2, hosts_per_leaf=0, tg_ports=2, name="otg-small")
    devices = {
        name: d.model_copy(update={"driver": "model-only"}) for name, d in tb.devices.items()
    }
    devices["tg1"] = tb.devices["tg1"].model_copy(
        update={
            "driver": "snappi-tg",
            "packet": tbmodel.PacketSettings(interfaces={"p1": "eth1", "p2": "eth2"}),
        }
    )
    return tb.model_copy(update={"devices": devices})


def test_lab_serves_the_generator_and_leaves_nothing_behind() -> None:
    threads_before = set(threading.enumerate())
    lab = EmulatedLab(small_testbed(), time_scale=TIME_SCALE)
    emulated = lab.start()
    try:
        location = emulated.devices["tg1"].vars["otg_location"]
        assert location.startswith("http://127.0.0.1:")
        tg = open_driver("tg1", emulated)
        # the driver sends location eth1; the server maps it back to tg1:p1 via packet.interfaces
        tg.set_config(
            tr.TrafficConfig(ports=PORTS, flows=[probe("f", packets=500, duration_s=None)])
        )
        tg.start_traffic()
        assert tg.wait_done(timeout_s=WAIT_S)
        assert (tg.metrics()[0].frames_tx, tg.metrics()[0].frames_rx) == (500, 500)
        with urllib.request.urlopen(location + "/config", timeout=2) as reply:
            config = json.loads(reply.read())
        assert [p["location"] for p in config["ports"]] == ["eth1", "eth2"]
    finally:
        lab.stop()
    port = int(location.rsplit(":", 1)[1])
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.settimeout(1.0)
        s.connect(("127.0.0.1", port))
    assert set(threading.enumerate()) <= threads_before  # server and handler threads joined


def test_a_request_holds_the_lab_clock_while_it_is_answered(
    lab: tuple[EmulatedLab, tbmodel.Testbed], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The elastic clock must not jump while the TG answers (a storm started between two
    clock reads would otherwise start virtual milliseconds late): as the SSH server does."""
    emulated_lab, emulated = lab
    clock = emulated_lab.fabric.clock
    held: list[str] = []
    real_busy = clock.busy

    def busy() -> Any:
        held.append(threading.current_thread().name)
        return real_busy()

    monkeypatch.setattr(clock, "busy", busy)
    location = emulated.devices["tg1"].vars["otg_location"]
    with urllib.request.urlopen(location + "/capabilities/version", timeout=2.0) as answer:
        assert answer.status == 200
    assert held, "the OTG server answered without holding the clock"
