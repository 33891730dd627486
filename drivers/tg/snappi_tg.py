"""snappi backend: the same OTG-shaped model on any Open Traffic Generator server.

For ixia-c and Keysight/Ixia hardware (``pip install labtest[snappi]``). The
mapping is one to one with the OTG model (open-traffic-generator/models,
``flow/*.yaml`` and ``result/flow.yaml``, as in snappi 1.6x):

- ports -> ``config.ports`` (name, location); flows -> ``config.flows``
  with ``tx_rx.port``, the header stack, ``size.fixed``, ``rate``
  (pps / bps / percentage) and ``duration`` (fixed_packets / fixed_seconds /
  continuous); latency, loss and timestamps metrics enabled.
- ECN: a metric tag ``ecn`` on the two ECN bits (IPv4 ``priority.dscp.ecn``,
  IPv6 ``traffic_class`` bits 6-7); the frames received with tag value 3
  are the CE count.
- RoCEv2 BTH has no OTG raw header: it goes as a 12-byte ``custom`` header
  after UDP 4791. The generator does not compute an ICRC for it, so a RoCE
  NIC would drop these frames; switches do not check it.
- PFC -> the ``pfcpause`` header (class-enable vector, pause_class_N).
- Loss duration: the server's ``packet_loss_duration`` when it reports one
  (enabled by ``options.flow_options.packet_loss_duration``), else lost
  frames / rate as for every backend.

The device's ``vars.otg_location`` (default ``https://ADDRESS:8443``) is the
server; ``packet.interfaces`` may map TG port names to generator locations.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence
from typing import Any

from labtest.capabilities.traffic import (
    Ethernet,
    Flow,
    FlowMetrics,
    Ipv4,
    Ipv6,
    PfcPause,
    Rocev2Bth,
    TrafficConfig,
    Udp,
    Vlan,
    loss_duration_ms,
)
from labtest.errors import ConfigError, ProtocolError, TransportError, TransportTimeout
from labtest.testbed.model import Device, Testbed

ECN_TAG = "ecn"
CE = 3
POLL_S = 0.2


def _bound_requests(api: Any, timeout_s: float) -> None:
    """snappi sends its HTTP requests with no timeout (a silent OTG server would hang the
    run), and reads every JSON answer with PyYAML's pure-Python loader (a metrics poll spent
    most of its time there). Give this API object's requests a timeout and read JSON as
    JSON; a request this does not recognise goes through snappi's own path."""
    transport = getattr(api, "_transport", None)
    session = getattr(transport, "_session", None)
    if transport is None or session is None:
        return
    send = session.request

    def request(method: str, url: str, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", timeout_s)
        return send(method, url, **kwargs)

    session.request = request
    original = getattr(transport, "send_recv", None)
    refuse = getattr(transport, "_parse_response_error", None)
    location = getattr(transport, "location", None)
    if original is None or refuse is None or not isinstance(location, str):
        return

    def send_recv(
        method: str,
        relative_url: str,
        payload: Any = None,
        return_object: Any = None,
        headers: Any = None,
        request_class: Any = None,
    ) -> Any:
        serialize = getattr(payload, "serialize", None)
        if serialize is None or headers is not None:
            return original(method, relative_url, payload=payload, return_object=return_object,
                            headers=headers, request_class=request_class)  # fmt: skip
        response = session.request(
            method=method,
            url=f"{location}{relative_url}",
            data=serialize(),
            verify=False,
            allow_redirects=True,
            headers={"Content-Type": "application/json"},
        )
        if not response.ok:
            refuse(response.status_code, response.text)  # raises, with the server's words
        kind = response.headers.get("content-type", "")
        if "application/json" not in kind:
            return io.BytesIO(response.content) if "octet-stream" in kind else response
        answer = json.loads(response.text) if response.text.strip() else None
        return answer if return_object is None else return_object.deserialize(answer)

    transport.send_recv = send_recv


def _snappi() -> Any:
    try:
        import snappi
    except ImportError as exc:  # an optional extra
        raise ConfigError(
            "snappi", ["snappi is not installed: pip install 'labtest[snappi]'"]
        ) from exc
    return snappi


class SnappiTrafficGenerator:
    """A TrafficGenerator that drives an OTG server through snappi."""

    def __init__(self, name: str, device: Device, testbed: Testbed) -> None:
        self.name = name
        location = device.vars.get("otg_location") or (
            f"https://{device.address}:8443" if device.address else None
        )
        if not location:
            raise ConfigError(name, ["set vars.otg_location (or address) of the OTG server"])
        self.location = str(location)
        self._locations = dict(device.packet.interfaces) if device.packet else {}
        self._api = _snappi().api(location=self.location, verify=False)
        self.timeout_s = float(device.vars.get("otg_timeout_s", 30.0))
        _bound_requests(self._api, self.timeout_s)
        self._config: TrafficConfig | None = None
        self._rates_pps: dict[str, float] = {}

    def close(self) -> None:
        """Nothing to release: every call is its own HTTP request."""

    # --- TrafficGenerator ------------------------------------------------------------

    def set_config(self, config: TrafficConfig) -> None:
        otg = to_snappi(self._api, config, self._locations)
        self._call("set_config", lambda: self._api.set_config(otg))
        self._config = config
        self._rates_pps = {f.name: _pps_or_none(f, config) for f in config.flows}

    def start_traffic(self, flows: Sequence[str] | None = None) -> None:
        self._transmit("start", flows)

    def stop_traffic(self) -> None:
        self._transmit("stop", None)

    def wait_done(self, timeout_s: float) -> bool:
        """Poll (bounded) until every flow reports ``stopped`` and its rx count settles."""
        deadline = time.monotonic() + timeout_s
        previous: list[int | None] | None = None
        while time.monotonic() < deadline:
            metrics = self.metrics()
            received = [m.frames_rx for m in metrics]
            if all(m.transmit == "stopped" for m in metrics) and received == previous:
                return True
            previous = received
            time.sleep(POLL_S)
        return False

    def metrics(self, flows: Sequence[str] | None = None) -> list[FlowMetrics]:
        config = self._require_config()
        request = self._api.metrics_request()
        request.flow.flow_names = list(flows) if flows else [f.name for f in config.flows]
        request.flow.tagged_metrics.include = True
        response = self._call("get_metrics", lambda: self._api.get_metrics(request))
        return [self._flow_metrics(m) for m in response.flow_metrics]

    # --- internals ------------------------------------------------------------------------

    def _require_config(self) -> TrafficConfig:
        if self._config is None:
            raise ConfigError(self.name, ["no traffic configuration: call set_config() first"])
        return self._config

    def _transmit(self, state: str, flows: Sequence[str] | None) -> None:
        self._require_config()
        control = self._api.control_state()
        control.choice = control.TRAFFIC
        control.traffic.choice = control.traffic.FLOW_TRANSMIT
        control.traffic.flow_transmit.state = state
        if flows:
            control.traffic.flow_transmit.flow_names = list(flows)
        self._call(f"flow_transmit {state}", lambda: self._api.set_control_state(control))

    def _call(self, what: str, fn: Any) -> Any:
        """Map snappi's errors: unreachable -> TransportError, rejected -> ProtocolError."""
        try:
            return fn()
        except Exception as exc:
            timed_out = type(exc).__name__ in ("ReadTimeout", "ConnectTimeout", "Timeout")
            if timed_out or "timed out" in str(exc):
                raise TransportTimeout(
                    self.name, f"{what} on {self.location}: no answer within {self.timeout_s:g} s"
                ) from exc
            if isinstance(exc, OSError) or type(exc).__module__.startswith(("requests", "urllib3")):
                raise TransportError(self.name, f"{what} on {self.location}: {exc}") from exc
            raise ProtocolError(self.name, f"{what} rejected by {self.location}: {exc}") from exc

    def _flow_metrics(self, m: Any) -> FlowMetrics:
        frames_tx, frames_rx = int(m.frames_tx or 0), int(m.frames_rx or 0)
        stopped = m.transmit == "stopped"
        lost = max(0, frames_tx - frames_rx)
        rate = self._rates_pps.get(m.name) or float(m.frames_tx_rate or 0.0)
        reported = (
            m.packet_loss_duration.value if m._properties.get("packet_loss_duration") else None
        )
        duration_ms = reported if reported is not None else loss_duration_ms(lost, rate)
        latency = m.latency if m._properties.get("latency") else None
        stamps = m.timestamps if m._properties.get("timestamps") else None
        return FlowMetrics(
            name=m.name,
            transmit=m.transmit or "stopped",
            frames_tx=frames_tx,
            bytes_tx=int(m.bytes_tx or 0),
            frames_tx_rate_pps=float(m.frames_tx_rate or 0.0),
            frames_rx=frames_rx,
            bytes_rx=int(m.bytes_rx or 0),
            loss_frames=lost if stopped else None,
            loss_pct=float(m.loss) if m.loss is not None else None,
            loss_duration_ms=duration_ms if stopped else None,
            latency_min_us=_us(latency.minimum_ns) if latency else None,
            latency_avg_us=_us(latency.average_ns) if latency else None,
            latency_max_us=_us(latency.maximum_ns) if latency else None,
            first_rx_timestamp_ns=_int(stamps.first_timestamp_ns) if stamps else None,
            last_rx_timestamp_ns=_int(stamps.last_timestamp_ns) if stamps else None,
            ecn_ce_count=_ce_count(m),
            rx_count_method="generator",
        )


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _ce_count(m: Any) -> int | None:
    """Frames received with the ``ecn`` tag = 0b11; ``None`` if the server gave no tags."""
    tagged = list(m.tagged_metrics) if m._properties.get("tagged_metrics") else []
    if not tagged:
        return None
    count = 0
    for entry in tagged:
        for tag in entry.tags:
            if tag.name == ECN_TAG and int(tag.value.hex or tag.value.str or "0", 0) == CE:
                count += int(entry.frames_rx or 0)
    return count


def _pps_or_none(flow: Flow, config: TrafficConfig) -> float:
    """The flow's frame rate for loss-duration arithmetic (0 when the port speed is unknown)."""
    try:
        return flow.pps(config.port(flow.tx_port).speed_gbps)
    except ValueError:
        return 0.0


# --- the model -> snappi mapping ---------------------------------------------------------


def to_snappi(api: Any, config: TrafficConfig, locations: dict[str, str] | None = None) -> Any:
    """Build the snappi ``Config`` for ``config`` (ports, flows, headers, rates, metrics)."""
    locations = locations or {}
    otg = api.config()
    for port in config.ports:
        otg.ports.port(name=port.name, location=locations.get(port.location, port.location))
    otg.options.flow_options.packet_loss_duration = True
    problems = []
    for flow in config.flows:
        problems += _missing_macs(flow)
        _add_flow(otg, flow)
    if problems:
        raise ConfigError("snappi", problems)
    return otg


def _missing_macs(flow: Flow) -> list[str]:
    eth = flow.header(Ethernet)
    assert isinstance(eth, Ethernet)
    missing = [n for n in ("src_mac", "dst_mac") if getattr(eth, n) is None]
    if flow.is_pfc:
        missing = [n for n in missing if n == "src_mac"]
    return [
        f"flow {flow.name}: set ethernet {n} (an OTG generator does not fill it in)"
        for n in missing
    ]


def _add_flow(otg: Any, flow: Flow) -> None:
    f = otg.flows.flow(name=flow.name)[-1]
    f.tx_rx.port.tx_name = flow.tx_port
    f.tx_rx.port.rx_names = list(flow.rx_ports)
    for header in flow.packet:
        _add_header(f.packet, header, flow)
    f.size.fixed = flow.size_bytes
    if flow.rate_pps is not None:
        f.rate.pps = max(1, round(flow.rate_pps))
    elif flow.rate_bps is not None:
        f.rate.bps = max(672, round(flow.rate_bps))
    else:
        f.rate.percentage = flow.rate_line_pct
    if flow.packets is not None:
        f.duration.fixed_packets.packets = flow.packets
    elif flow.duration_s is not None:
        f.duration.fixed_seconds.seconds = flow.duration_s
    else:
        f.duration.choice = "continuous"
    f.metrics.enable = True
    f.metrics.loss = True
    f.metrics.timestamps = True
    f.metrics.latency.enable = True


def _set_values(pattern: object, **values: object) -> None:
    """Give each named field of a snappi header a fixed value (each is a pattern object
    whose ``value`` is set), one line per header instead of one per field."""
    for name, value in values.items():
        getattr(pattern, name).value = value


def _add_header(packet: Any, header: Any, flow: Flow) -> None:
    if isinstance(header, Ethernet):
        if not flow.is_pfc:
            _set_values(packet.ethernet()[-1], src=header.src_mac, dst=header.dst_mac)
    elif isinstance(header, Vlan):
        _set_values(packet.vlan()[-1], id=header.vlan_id, priority=header.pcp)
    elif isinstance(header, Ipv4):
        ip = packet.ipv4()[-1]
        ip.src.value, ip.dst.value = header.src, header.dst
        ip.priority.dscp.phb.value = header.dscp
        ip.priority.dscp.ecn.value = header.ecn
        ip.priority.dscp.ecn.metric_tags.add(name=ECN_TAG, offset=0, length=2)
        ip.time_to_live.value = header.ttl
    elif isinstance(header, Ipv6):
        ip6 = packet.ipv6()[-1]
        ip6.src.value, ip6.dst.value = header.src, header.dst
        ip6.traffic_class.value = (header.dscp << 2) | header.ecn
        ip6.traffic_class.metric_tags.add(name=ECN_TAG, offset=6, length=2)
        ip6.hop_limit.value = header.hop_limit
    elif isinstance(header, Udp):
        _set_values(packet.udp()[-1], src_port=header.src_port, dst_port=header.dst_port)
    elif isinstance(header, Rocev2Bth):
        packet.custom()[-1].bytes = bth_bytes(header).hex()
    elif isinstance(header, PfcPause):
        eth = flow.header(Ethernet)
        assert isinstance(eth, Ethernet)
        pfc = packet.pfcpause()[-1]
        pfc.src.value = eth.src_mac
        pfc.dst.value = eth.dst_mac or "01:80:c2:00:00:01"
        pfc.class_enable_vector.value = sum(1 << p for p in header.pause_quanta)
        for priority, quanta in header.pause_quanta.items():
            getattr(pfc, f"pause_class_{priority}").value = quanta


def bth_bytes(bth: Rocev2Bth) -> bytes:
    """The 12-byte Base Transport Header: opcode, flags, P_Key, reserved, dest QP, A, PSN."""
    return (
        bytes([bth.opcode, 0])
        + bth.partition_key.to_bytes(2, "big")
        + bytes([0])
        + bth.dest_qp.to_bytes(3, "big")
        + bytes([0])
        + bth.psn.to_bytes(3, "big")
    )
