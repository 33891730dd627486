"""The snappi backend against a local fake of the OTG HTTP API (fake_otg.py, 127.0.0.1)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from fake_otg import FakeOtg

from labtest.capabilities import traffic as tr
from labtest.errors import ConfigError, ProtocolError, TransportError
from labtest.registry import driver_class
from labtest.testbed import model

pytest.importorskip(
    "snappi", reason="snappi is not installed (a labtest dependency: pip install labtest)"
)

from labtest.drivers.tg.snappi_tg import SnappiTrafficGenerator, bth_bytes

MAC_A, MAC_B = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
PORTS = [tr.Port(name="p1", location="p1"), tr.Port(name="p2", location="p2", speed_gbps=100)]


def driver_for(location: str) -> SnappiTrafficGenerator:
    testbed = model.Testbed.model_validate(
        {
            "name": "otg",
            "devices": {
                "ate": {
                    "role": "traffic-generator",
                    "driver": "snappi-tg",
                    "vars": {"otg_location": location},
                    "packet": {"interfaces": {"p1": "eth1", "p2": "eth2"}},
                }
            },
        }
    )
    return SnappiTrafficGenerator("ate", testbed.devices["ate"], testbed)


def ipv4_flow(name: str = "v4", **fields: object) -> tr.Flow:
    values = {"rate_pps": 10_000, "duration_s": 2.0} | fields
    return tr.Flow(
        name=name,
        tx_port="p1",
        rx_ports=["p2"],
        packet=[
            tr.Ethernet(src_mac=MAC_A, dst_mac=MAC_B),
            tr.Vlan(vlan_id=100, pcp=3),
            tr.Ipv4(src="198.18.0.1", dst="198.18.0.2", dscp=26, ecn=2),
            tr.Udp(dst_port=5001),
        ],
        **values,  # type: ignore[arg-type]
    )


@pytest.fixture
def fake() -> Iterator[FakeOtg]:
    server = FakeOtg().start()
    yield server
    server.stop()


@pytest.fixture
def ate(fake: FakeOtg) -> SnappiTrafficGenerator:
    return driver_for(fake.location)


def test_driver_is_registered() -> None:
    assert driver_class("snappi-tg") is SnappiTrafficGenerator


def test_config_maps_onto_otg(fake: FakeOtg, ate: SnappiTrafficGenerator) -> None:
    rocev2 = tr.Flow(
        name="roce",
        tx_port="p2",
        rx_ports=["p1"],
        packet=[
            tr.Ethernet(src_mac=MAC_B, dst_mac=MAC_A),
            tr.Ipv6(src="2001:db8::2", dst="2001:db8::1", dscp=26, ecn=2),
            tr.Udp(dst_port=4791),
            tr.Rocev2Bth(dest_qp=0x11, psn=7),
        ],
        size_bytes=1024,
        rate_line_pct=25,
    )
    storm = tr.pfc_storm_flow("storm", "p1", priority=3, rate_pps=6000, src_mac=MAC_A)
    bps = ipv4_flow("bps", rate_pps=None, rate_bps=1e9, packets=500, duration_s=None)
    ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[ipv4_flow(), rocev2, storm, bps]))

    config = fake.config
    assert config is not None
    assert [(p["name"], p["location"]) for p in config["ports"]] == [("p1", "eth1"), ("p2", "eth2")]
    flows = {f["name"]: f for f in config["flows"]}
    v4 = flows["v4"]
    assert v4["tx_rx"]["port"] == {"tx_name": "p1", "rx_names": ["p2"]}
    assert [h["choice"] for h in v4["packet"]] == ["ethernet", "vlan", "ipv4", "udp"]
    vlan, ip = v4["packet"][1]["vlan"], v4["packet"][2]["ipv4"]
    assert (vlan["id"]["value"], vlan["priority"]["value"]) == (100, 3)
    ecn = ip["priority"]["dscp"]["ecn"]
    assert (ip["priority"]["dscp"]["phb"]["value"], ecn["value"]) == (26, 2)
    assert ecn["metric_tags"] == [{"name": "ecn", "offset": 0, "length": 2}]
    assert (v4["rate"]["choice"], int(v4["rate"]["pps"])) == ("pps", 10_000)  # uint64: a string
    assert v4["duration"]["fixed_seconds"]["seconds"] == 2.0
    assert v4["size"] == {"choice": "fixed", "fixed": 128}
    assert v4["metrics"]["enable"] and v4["metrics"]["loss"] and v4["metrics"]["latency"]["enable"]

    roce = flows["roce"]
    assert [h["choice"] for h in roce["packet"]] == ["ethernet", "ipv6", "udp", "custom"]
    assert roce["packet"][1]["ipv6"]["traffic_class"]["value"] == 26 << 2 | 2
    assert roce["packet"][1]["ipv6"]["traffic_class"]["metric_tags"][0]["offset"] == 6
    assert roce["packet"][3]["custom"]["bytes"] == "0400ffff0000001100000007"
    assert roce["rate"] == {"choice": "percentage", "percentage": 25}
    assert roce["duration"]["choice"] == "continuous"

    pfc = flows["storm"]["packet"]
    assert [h["choice"] for h in pfc] == ["pfcpause"]
    pause = pfc[0]["pfcpause"]
    assert pause["class_enable_vector"]["value"] == 0b1000
    assert pause["pause_class_3"]["value"] == 0xFFFF
    assert pause["dst"]["value"] == "01:80:c2:00:00:01"
    assert int(flows["bps"]["rate"]["bps"]) == 1_000_000_000
    assert flows["bps"]["duration"]["fixed_packets"]["packets"] == 500
    assert config["options"]["flow_options"]["packet_loss_duration"] is True


def test_bth_bytes_layout() -> None:
    raw = bth_bytes(tr.Rocev2Bth(dest_qp=0xABCDEF, opcode=0x0A, psn=0x123456))
    assert len(raw) == 12
    assert raw[0] == 0x0A and raw[2:4] == b"\xff\xff"
    assert raw[5:8] == bytes.fromhex("abcdef") and raw[9:12] == bytes.fromhex("123456")


def test_metrics_map_back_with_loss_duration_and_ce(
    fake: FakeOtg, ate: SnappiTrafficGenerator
) -> None:
    ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[ipv4_flow()]))
    fake.drop_frames["v4"] = 500
    fake.ce_frames["v4"] = 1_234
    ate.start_traffic()
    assert ate.wait_done(timeout_s=5)
    (m,) = ate.metrics()
    assert (m.name, m.transmit, m.frames_tx, m.frames_rx) == ("v4", "stopped", 20_000, 19_500)
    assert (m.bytes_tx, m.loss_frames, m.loss_pct) == (20_000 * 128, 500, 2.5)
    assert m.loss_duration_ms == pytest.approx(50.0)  # 500 frames at 10k pps
    assert m.ecn_ce_count == 1_234
    assert (m.latency_min_us, m.latency_avg_us, m.latency_max_us) == (1.5, 2.0, 4.5)
    assert (m.first_rx_timestamp_ns, m.last_rx_timestamp_ns) == (1_000_000, 2_000_000)
    assert m.rx_count_method == "generator"
    assert fake.requests.count("/control/state") == 1


def test_continuous_flow_is_not_done_until_stopped(
    fake: FakeOtg, ate: SnappiTrafficGenerator
) -> None:
    flow = ipv4_flow("forever", duration_s=None)
    ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[flow]))
    ate.start_traffic(["forever"])
    assert ate.wait_done(timeout_s=0.5) is False
    assert ate.metrics()[0].transmit == "started"
    ate.stop_traffic()
    assert ate.wait_done(timeout_s=5)
    (m,) = ate.metrics()
    assert m.transmit == "stopped" and m.frames_tx > 0 and m.loss_frames == 0


def test_rejected_config_raises_protocol_error_with_the_servers_words(
    fake: FakeOtg, ate: SnappiTrafficGenerator
) -> None:
    config = tr.TrafficConfig.model_construct(ports=PORTS[1:], flows=[ipv4_flow()])  # unvalidated
    with pytest.raises(ProtocolError, match="tx port p1 is not configured"):
        ate.set_config(config)


def test_missing_macs_are_refused_before_sending(
    fake: FakeOtg, ate: SnappiTrafficGenerator
) -> None:
    flow = tr.Flow(
        name="auto-mac",
        tx_port="p1",
        rx_ports=["p2"],
        packet=[tr.Ethernet(), tr.Ipv4(src="198.18.0.1", dst="198.18.0.2"), tr.Udp(dst_port=1)],
        rate_pps=1,
    )
    with pytest.raises(ConfigError, match="set ethernet src_mac"):
        ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[flow]))
    assert fake.requests == []


def test_unreachable_server_is_a_transport_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ate = driver_for(f"http://127.0.0.1:{port}")
    with pytest.raises(TransportError, match="set_config"):
        ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[ipv4_flow()]))


def test_silent_otg_server_times_out_instead_of_hanging(tmp_path) -> None:
    import socket
    import time

    from labtest.errors import TransportTimeout
    from labtest.testbed.model import Device, PacketSettings
    from labtest.testbed.model import Testbed as TestbedModel

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection, never answers
    port = listener.getsockname()[1]
    device = Device(
        role="tg",
        driver="snappi-tg",
        packet=PacketSettings(interfaces={"p1": "p1"}),
        vars={"otg_location": f"http://127.0.0.1:{port}", "otg_timeout_s": 0.5},
    )
    tb = TestbedModel(name="t", devices={"tg1": device})
    from labtest.drivers.tg.snappi_tg import SnappiTrafficGenerator

    tg = SnappiTrafficGenerator("tg1", device, tb)
    start = time.monotonic()
    try:
        with pytest.raises(TransportTimeout):
            tg._call("get_config", lambda: tg._api.get_config())
    finally:
        listener.close()
    assert time.monotonic() - start < 5


def test_answers_are_read_as_json_not_through_pyyaml(
    fake: FakeOtg, ate: SnappiTrafficGenerator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # snappi reads JSON answers with PyYAML's pure-Python loader, which cost a metrics poll
    # most of its time; the driver reads them as JSON (same objects, same figures)
    import snappi.snappi as generated

    def no_yaml(text: str) -> None:
        raise AssertionError("an answer went through yaml.safe_load")

    monkeypatch.setattr(generated.yaml, "safe_load", no_yaml)
    ate.set_config(tr.TrafficConfig(ports=PORTS, flows=[ipv4_flow()]))
    fake.drop_frames["v4"] = 500
    ate.start_traffic()
    assert ate.wait_done(timeout_s=5)
    (m,) = ate.metrics()
    assert (m.frames_tx, m.frames_rx, m.loss_frames) == (20_000, 19_500, 500)
