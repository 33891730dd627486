"""The emulated traffic generator: an Open Traffic Generator (OTG) HTTP server on the fabric model.

A lab drives Keysight/ixia-c generators through the OTG REST API; the
emulated lab serves the same API on 127.0.0.1 for each ``snappi-tg`` device,
so the snappi driver runs unchanged. Nothing is transmitted: each OTG flow
becomes a TG flow of the fabric model (``TrafficModel.start_tg_flow``), and
its metrics are read from the model when they are asked for, so loss during
a failover, ECN marking under congestion and PFC pause all come from the
same physics the switches report.

Routes (OTG ``api/api.yaml``, as snappi 1.6x calls them): ``POST /config``,
``GET /config``, ``POST /control/state`` (traffic ``flow_transmit``
start/stop, port ``link`` up/down), ``POST /monitor/metrics`` (flow and port
metrics) and ``GET /capabilities/version``. A bad request gets OTG's
``Error`` body (``code``, ``kind``, ``errors``) with status 400, as a real
server answers.

Port locations resolve to the device's testbed ports: ``tg1:p1``, ``p1``, or
whatever ``packet.interfaces`` maps a port to (``{p1: eth1}`` makes ``eth1``
mean ``tg1:p1``), so a testbed written for a real ixia-c runs as is.

What the model does not know is refused or left out rather than invented:
one rx port per flow, UDP flows (optionally RoCEv2 in a ``custom`` header)
and PFC pause flows, fixed sizes, no start delay or bursts, no pause/resume,
no captures; flow timestamps are not reported. Metric tags are tracked on
the IPv4 DSCP/ECN fields and the IPv6 traffic class (the CE count comes from
the model's marks); other tags get a warning from ``set_config``.

While the device is unreachable (``fabric.reachable`` is False) a request
gets no answer; when the device is back the held connection is closed
unanswered, as a rebooted host drops it (or at once when its client gave up).
While a client waits so, the lab's clock keeps its wall pace (``serving``).
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from typing import Any

from pydantic import ValidationError

from labtest.emulation.lab import Served
from labtest.emulation.model.clock import serving
from labtest.emulation.model.fabric import Fabric, ModelError
from labtest.emulation.model.faults import FaultError
from labtest.emulation.model.traffic.flows import L1_OVERHEAD_B
from labtest.emulation.model.traffic.tgflows import (
    TgDuration,
    TgFlowMetrics,
    TgFlowSpec,
    TgPfcPause,
    TgRate,
    TgRocev2,
)
from labtest.emulation.personalities.linux.state import in_model
from labtest.testbed.model import Device

ROCEV2_UDP_PORT = 4791
BTH_BYTES = 12
REQUEST_TIMEOUT_S = 5.0  # a client that connects and sends nothing is dropped after this
SILENT_POLL_S = 0.05
_BITS_PER_S = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
_MODEL_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


class OtgError(Exception):
    """A request the server refuses; becomes OTG's ``Error`` body with ``status``."""

    def __init__(self, errors: list[str], status: int = 400) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors
        self.status = status


# --- the configuration, parsed ------------------------------------------------------------


@dataclass(frozen=True)
class MetricTag:
    """A metric tag on a header field: which bits of the field a tagged metric groups by.

    ``ecn_shift`` is where the two ECN bits sit in the field (``None`` when the
    field has none): a frame the fabric marked CE carries 0b11 there.
    """

    name: str
    width: int
    offset: int
    length: int
    sent: int  # the field's value as transmitted
    ecn_shift: int | None

    def value(self, ce: bool) -> int:
        field = self.sent
        if ce and self.ecn_shift is not None:
            field |= 3 << self.ecn_shift
        return (field >> (self.width - self.offset - self.length)) & ((1 << self.length) - 1)


#: tag-able fields: header path -> (field width in bits, ECN bit position or None)
_TAG_FIELDS: dict[tuple[str, ...], tuple[int, int | None]] = {
    ("ipv4", "priority", "dscp", "ecn"): (2, 0),
    ("ipv4", "priority", "dscp", "phb"): (6, None),
    ("ipv4", "priority", "raw"): (8, 0),
    ("ipv6", "traffic_class"): (8, 0),
}


@dataclass(frozen=True)
class OtgFlow:
    """One configured OTG flow and the model flow it becomes."""

    name: str
    spec: TgFlowSpec
    tx_port: str
    rx_port: str | None
    tags: tuple[MetricTag, ...]
    rx_metrics: bool  # ``metrics.enable``: frames are tracked at the receiver
    loss: bool
    latency: bool

    @property
    def is_pause(self) -> bool:
        return self.spec.pfc_pause is not None


@dataclass(frozen=True)
class OtgConfig:
    raw: dict[str, Any]
    ports: dict[str, str]  # OTG port name -> testbed endpoint (``tg1:p1``)
    locations: dict[str, str]  # OTG port name -> location as configured
    flows: dict[str, OtgFlow]
    loss_duration: bool  # options.flow_options.packet_loss_duration
    warnings: list[str]


def model_flow_name(device: str, flow: str) -> str:
    """The fabric model's name for an OTG flow: per device, within the model's name rules."""
    clean = _MODEL_NAME.sub("_", flow)
    name = f"{device}.{clean}"
    return name if clean == flow else f"{name}-{zlib.crc32(flow.encode()):08x}"


def resolve_location(location: str, device_name: str, device: Device, cabled: set[str]) -> str:
    """``tg1:p1``, ``p1`` or a ``packet.interfaces`` value -> the testbed endpoint ``tg1:p1``."""
    dev, sep, port = location.partition(":")
    if sep and dev == device_name and port in cabled:
        return location
    if location in cabled:
        return f"{device_name}:{location}"
    interfaces = device.packet.interfaces if device.packet else {}
    for name, mapped in interfaces.items():
        if mapped == location and name in cabled:
            return f"{device_name}:{name}"
    known = ", ".join(sorted(cabled)) or "none"
    raise KeyError(f"location {location} is not a cabled port of {device_name} ({known})")


def parse_config(
    body: dict[str, Any], device_name: str, device: Device, cabled: set[str]
) -> OtgConfig:
    """Check an OTG ``Config`` like a server would; every problem goes into one ``OtgError``."""
    errors: list[str] = []
    warnings: list[str] = []
    ports: dict[str, str] = {}
    locations: dict[str, str] = {}
    bad_ports: set[str] = set()  # named, but not resolved: already reported
    for raw_port in body.get("ports") or []:
        name, location = raw_port.get("name"), raw_port.get("location")
        if not name or name in ports:
            errors.append(f"port name {name!r} is missing or not unique")
        elif not location:
            errors.append(f"port {name}: no location")
        else:
            try:
                ports[name] = resolve_location(str(location), device_name, device, cabled)
                locations[name] = str(location)
            except KeyError as exc:
                errors.append(f"port {name}: {exc.args[0]}")
                bad_ports.add(name)
    flows: dict[str, OtgFlow] = {}
    for raw_flow in body.get("flows") or []:
        name = raw_flow.get("name")
        if not name or name in flows:
            errors.append(f"flow name {name!r} is missing or not unique")
            continue
        flow = _parse_flow(raw_flow, device_name, ports, bad_ports, errors, warnings)
        if flow is not None:
            flows[name] = flow
    if errors:
        raise OtgError(errors)
    options = (body.get("options") or {}).get("flow_options") or {}
    return OtgConfig(
        body, ports, locations, flows, bool(options.get("packet_loss_duration")), warnings
    )


def _parse_flow(
    raw: dict[str, Any],
    device_name: str,
    ports: dict[str, str],
    bad_ports: set[str],
    errors: list[str],
    warnings: list[str],
) -> OtgFlow | None:
    name = str(raw["name"])
    before = len(errors)
    tx_rx = raw.get("tx_rx") or {}
    if tx_rx.get("choice", "port") != "port":
        errors.append(f"flow {name}: only port endpoints (tx_rx.port) are emulated")
        return None
    endpoints = tx_rx.get("port") or {}
    tx, rx_names = endpoints.get("tx_name"), list(endpoints.get("rx_names") or [])
    for port in [tx, *rx_names]:
        if port not in ports and port not in bad_ports:
            errors.append(f"flow {name}: port {port} is not configured")
    if len(rx_names) > 1:
        errors.append(f"flow {name}: the emulated generator takes one rx port per flow")
    headers = _headers(name, raw.get("packet") or [], errors, warnings)
    size_b = _size(name, raw.get("size") or {}, errors)
    rate = _rate(name, raw.get("rate") or {}, size_b, errors)
    duration = _duration(name, raw.get("duration") or {}, errors)
    unresolved = [p for p in [tx, *rx_names] if p not in ports]
    if len(errors) > before or unresolved or rate is None or duration is None:
        return None
    assert isinstance(tx, str)  # resolved above: a configured port's name
    tags = headers.pop("tags")
    metrics = raw.get("metrics") or {}
    rx = rx_names[0] if rx_names else None
    try:
        spec = TgFlowSpec(
            name=model_flow_name(device_name, name),
            tx_port=ports[tx],
            rx_port=None if headers.get("pfc_pause") else (ports[rx] if rx else None),
            frame_size_b=size_b,
            rate=rate,
            duration=duration,
            **headers,
        )
    except ValidationError as exc:
        errors += [
            f"flow {name}: {e['msg']} ({'.'.join(map(str, e['loc']))})" for e in exc.errors()
        ]
        return None
    return OtgFlow(
        name=name,
        spec=spec,
        tx_port=tx,
        rx_port=rx,
        tags=tags,
        rx_metrics=bool(metrics.get("enable", False)),
        loss=bool(metrics.get("loss", False)),
        latency=bool((metrics.get("latency") or {}).get("enable", False)),
    )


def _value(pattern: dict[str, Any] | None, default: Any) -> Any:
    """A field's (first) value: OTG patterns are value, values, increment/decrement or auto."""
    if not pattern:
        return default
    choice = pattern.get("choice", "value")
    if choice == "value":
        return pattern.get("value", default)
    if choice == "values":
        return (pattern.get("values") or [default])[0]
    if choice in ("increment", "decrement"):
        return (pattern.get(choice) or {}).get("start", default)
    return default


def _headers(
    flow: str, packet: list[dict[str, Any]], errors: list[str], warnings: list[str]
) -> dict[str, Any]:
    """The header stack -> TgFlowSpec fields (DSCP, ECN, ports, RoCEv2, PFC) and metric tags."""
    out: dict[str, Any] = {}
    tagged: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}
    bth: bytes | None = None
    for header in packet:
        kind = header.get("choice", "")
        body = header.get(kind) or {}
        if kind in ("ethernet", "vlan"):
            pass  # the fabric classifies by DSCP (SONiC's default trust), not by PCP
        elif kind == "ipv4":
            priority = body.get("priority") or {"choice": "dscp"}
            if priority.get("choice", "dscp") == "dscp":
                dscp = priority.get("dscp") or {}
                out["dscp"] = int(_value(dscp.get("phb"), 0))
                out["ecn"] = int(_value(dscp.get("ecn"), 0))
                tagged[("ipv4", "priority", "dscp", "ecn")] = (out["ecn"], dscp.get("ecn") or {})
                tagged[("ipv4", "priority", "dscp", "phb")] = (out["dscp"], dscp.get("phb") or {})
            elif priority["choice"] == "raw":
                tos = int(_value(priority.get("raw"), 0))
                out["dscp"], out["ecn"] = tos >> 2, tos & 3
                tagged[("ipv4", "priority", "raw")] = (tos, priority.get("raw") or {})
            else:
                errors.append(f"flow {flow}: ipv4 priority {priority['choice']!r}: use dscp or raw")
        elif kind == "ipv6":
            tc = int(_value(body.get("traffic_class"), 0))
            out["dscp"], out["ecn"] = tc >> 2, tc & 3
            tagged[("ipv6", "traffic_class")] = (tc, body.get("traffic_class") or {})
        elif kind == "udp":
            out["src_port"] = int(_value(body.get("src_port"), 49152))
            out["dst_port"] = int(_value(body.get("dst_port"), 5000))
        elif kind == "custom":
            bth = bytes.fromhex(str(body.get("bytes", "")))
        elif kind == "pfcpause":
            out["pfc_pause"] = _pause(flow, body, errors)
        else:
            errors.append(f"flow {flow}: header {kind!r} is not emulated")
    if bth is not None:
        if out.get("dst_port") != ROCEV2_UDP_PORT or len(bth) < BTH_BYTES:
            errors.append(f"flow {flow}: a custom header is emulated only as a RoCEv2 BTH")
        else:
            out["rocev2"] = TgRocev2(dst_qp=int.from_bytes(bth[5:8], "big"))
    out["tags"] = _tags(flow, packet, tagged, errors, warnings)
    return out


def _pause(flow: str, body: dict[str, Any], errors: list[str]) -> TgPfcPause | None:
    enabled = int(_value(body.get("class_enable_vector"), 0))
    priorities = tuple(p for p in range(8) if enabled >> p & 1)
    if not priorities:
        errors.append(f"flow {flow}: the pfcpause class_enable_vector enables no class")
        return None
    quanta = max(int(_value(body.get(f"pause_class_{p}"), 0)) for p in priorities)
    return TgPfcPause(priorities=priorities, quanta=quanta)


def _tags(
    flow: str,
    packet: list[dict[str, Any]],
    tagged: dict[tuple[str, ...], tuple[int, dict[str, Any]]],
    errors: list[str],
    warnings: list[str],
) -> tuple[MetricTag, ...]:
    tags = []
    for path, (sent, field) in tagged.items():
        width, ecn_shift = _TAG_FIELDS[path]
        for t in field.get("metric_tags") or []:
            offset, length = int(t.get("offset", 0)), int(t.get("length", width))
            if offset < 0 or length < 1 or offset + length > width:
                errors.append(
                    f"flow {flow}: metric tag {t.get('name')} exceeds its {width}-bit field"
                )
                continue
            tags.append(MetricTag(str(t.get("name")), width, offset, length, sent, ecn_shift))
    for path in _tagged_paths(packet):
        if path not in _TAG_FIELDS:
            warnings.append(f"flow {flow}: metric tags on {'.'.join(path)} are not tracked")
    return tuple(tags)


def _tagged_paths(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every header field path carrying ``metric_tags`` (list items are the headers)."""
    if isinstance(node, list):
        for item in node:
            yield from _tagged_paths(item, path)
    elif isinstance(node, dict):
        if node.get("metric_tags"):
            yield path
        for key, value in node.items():
            if key != "metric_tags" and key != "choice" and isinstance(value, (dict, list)):
                yield from _tagged_paths(value, (*path, key))


def _size(flow: str, size: dict[str, Any], errors: list[str]) -> int:
    if size.get("choice", "fixed") != "fixed":
        errors.append(f"flow {flow}: only a fixed frame size is emulated")
    return int(size.get("fixed", 64))


def _rate(flow: str, rate: dict[str, Any], size_b: int, errors: list[str]) -> TgRate | None:
    """OTG rates: pps, layer-1 bit rates (the frame plus 20 B of preamble and gap), or % of line."""
    choice = rate.get("choice", "pps")
    try:
        if choice == "percentage":
            return TgRate(percentage=float(rate.get("percentage", 100)))
        if choice == "pps":
            return TgRate(pps=float(rate.get("pps", 1000)))
        if choice in _BITS_PER_S:
            bps = float(rate[choice]) * _BITS_PER_S[choice]
            return TgRate(pps=bps / ((size_b + L1_OVERHEAD_B) * 8))
    except (KeyError, ValueError, ValidationError) as exc:
        errors.append(f"flow {flow}: bad rate {rate}: {exc}")
        return None
    errors.append(f"flow {flow}: rate {choice!r} is not emulated")
    return None


def _duration(flow: str, duration: dict[str, Any], errors: list[str]) -> TgDuration | None:
    choice = duration.get("choice", "continuous")
    body = duration.get(choice) or {}
    delay = body.get("delay") or {}
    if any(float(v) for k, v in delay.items() if k != "choice"):
        errors.append(f"flow {flow}: a start delay is not emulated")
        return None
    if choice == "continuous":
        return TgDuration()
    if choice == "fixed_packets":
        return TgDuration(fixed_packets=int(body.get("packets", 1)))
    if choice == "fixed_seconds":
        return TgDuration(fixed_seconds=float(body.get("seconds", 1.0)))
    errors.append(f"flow {flow}: duration {choice!r} is not emulated")
    return None


# --- the generator: OTG state on top of the fabric model --------------------------------------


class OtgEngine:
    """What the OTG API does, without HTTP: configure, transmit, read metrics from the model.

    Model calls run through ``in_model`` (under the fabric's lock, the model
    brought up to now), so a start, a stop or a metrics read happens at one
    virtual instant for all the flows it names.
    """

    def __init__(self, fabric: Fabric, name: str, device: Device) -> None:
        self.fabric = fabric
        self.name = name
        self.device = device
        self.config: OtgConfig | None = None
        self._ids: dict[str, int] = {}  # OTG flow -> model flow id of its latest run
        self._lock = threading.Lock()

    def cabled_ports(self) -> set[str]:
        return {p for p in self.fabric.ports(self.name) if self.fabric.link_of(self.name, p)}

    # --- API --------------------------------------------------------------------------

    def set_config(self, body: dict[str, Any]) -> list[str]:
        config = parse_config(body, self.name, self.device, self.cabled_ports())
        with self._lock:
            ids, self._ids = list(self._ids.values()), {}
            self.config = config
            self._model(lambda: self._traffic().remove_flows([i for i in ids if self._known(i)]))
        return config.warnings

    def transmit(self, state: str, names: list[str]) -> None:
        with self._lock:
            config = self._require_config()
            names = self._names(config, names)
            if state == "start":
                self._model(lambda: self._start(config, names))
            elif state == "stop":
                self._model(lambda: self._stop(names))
            else:
                raise OtgError([f"flow_transmit {state!r} is not emulated (start, stop)"])

    def set_link(self, state: str, port_names: list[str]) -> None:
        with self._lock:
            config = self._require_config()
            for port in port_names or list(config.ports):
                if port not in config.ports:
                    raise OtgError([f"port {port} is not configured"])
                self.fabric.set_admin(
                    self.name, config.ports[port].partition(":")[2], state == "up"
                )

    def flow_metrics(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        tagged = request.get("tagged_metrics") or {}
        tags = tagged if tagged.get("include", True) else None  # OTG's default: include
        with self._lock:
            config = self._require_config()
            names = self._names(config, list(request.get("flow_names") or []))
            read = self._model(lambda: {n: self._read(n) for n in names})
        return [_flow_metric(config, config.flows[n], read[n], tags) for n in names]

    def port_metrics(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """OTG ``Port.Metric`` from the model's counters of the TG port (every flow on it)."""
        with self._lock:
            config = self._require_config()
            names = list(request.get("port_names") or config.ports)
            unknown = [n for n in names if n not in config.ports]
            if unknown:
                raise OtgError([f"port {n} is not configured" for n in unknown])
            counters, running = self._model(
                lambda: (
                    {n: self._traffic().port_counters(config.ports[n]) for n in names},
                    {f.tx_port for f in config.flows.values() if self._running(f.name)},
                )
            )
        return [
            {
                "name": n,
                "location": config.locations[n],
                "link": "up" if counters[n].oper_up else "down",
                "transmit": "started" if n in running else "stopped",
                "frames_tx": counters[n].tx_packets,
                "frames_rx": counters[n].rx_packets,
                "bytes_tx": counters[n].tx_bytes,
                "bytes_rx": counters[n].rx_bytes,
            }
            for n in names
        ]

    # --- internals ------------------------------------------------------------------------

    def _traffic(self) -> Any:
        traffic = self.fabric.traffic
        if traffic is None:
            raise OtgError(["the fabric has no traffic model"], status=500)
        return traffic

    def _model(self, action: Callable[[], Any]) -> Any:
        try:
            return in_model(self.fabric, action)
        except (FaultError, ModelError) as exc:
            raise OtgError([str(exc)]) from exc

    def _require_config(self) -> OtgConfig:
        if self.config is None:
            raise OtgError(["no configuration: set_config first"])
        return self.config

    @staticmethod
    def _names(config: OtgConfig, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in config.flows]
        if unknown:
            raise OtgError([f"flow {n} is not configured" for n in unknown])
        return names or list(config.flows)

    def _known(self, fid: int) -> bool:
        return fid in self._traffic().flows

    def _running(self, name: str) -> bool:
        fid = self._ids.get(name)
        if fid is None or not self._known(fid):
            return False
        return self._traffic().flow(fid).active(self._traffic().now_s)

    def _start(self, config: OtgConfig, names: list[str]) -> None:
        """Start the named flows at this instant; a flow already sending keeps sending."""
        idle = [name for name in names if not self._running(name)]
        started = self._traffic().start_tg_flows([config.flows[n].spec for n in idle])
        self._ids.update(zip(idle, started, strict=True))

    def _stop(self, names: list[str]) -> None:
        for name in names:
            if self._running(name):
                self._traffic().stop_flow(self._ids[name])

    def _read(self, name: str) -> TgFlowMetrics | None:
        fid = self._ids.get(name)
        if fid is None or not self._known(fid):
            return None
        return self._traffic().tg_metrics(self._traffic().flow(fid).name)


def _flow_metric(
    config: OtgConfig, flow: OtgFlow, m: TgFlowMetrics | None, tagged: dict[str, Any] | None
) -> dict[str, Any]:
    """OTG ``Flow.Metric`` (``result/flow.yaml``) from the model's metrics of one flow."""
    out: dict[str, Any] = {
        "name": flow.name,
        "port_tx": flow.tx_port,
        "transmit": m.transmit if m else "stopped",
        "frames_tx": m.frames_tx if m else 0,
        "bytes_tx": m.bytes_tx if m else 0,
        "frames_tx_rate": m.frames_tx_rate_fps if m else 0.0,
    }
    if flow.is_pause or not flow.rx_metrics:
        return out  # pause frames end at the switch; untracked flows have no rx side
    frames_rx = m.frames_rx if m else 0
    out |= {"port_rx": flow.rx_port, "frames_rx": frames_rx, "bytes_rx": m.bytes_rx if m else 0}
    if flow.loss:
        out["loss"] = m.loss_pct if m else 0.0
    if flow.latency and m and frames_rx:
        out["latency"] = {
            "minimum_ns": m.latency_min_ns,
            "maximum_ns": m.latency_max_ns,
            "average_ns": m.latency_avg_ns,
        }
    if config.loss_duration:
        out["packet_loss_duration"] = {"value": m.loss_duration_ms if m else 0.0}
    if tagged is not None and flow.tags:
        out["tagged_metrics"] = _tagged(flow, m, tagged, out["frames_rx"])
    return out


def _tagged(
    flow: OtgFlow, m: TgFlowMetrics | None, request: dict[str, Any], frames_rx: int
) -> list[dict[str, Any]]:
    """Received frames grouped by the tagged bits: CE-marked frames apart from the rest."""
    filters = {f["name"]: f.get("values") or [] for f in request.get("filters") or []}
    tags = [t for t in flow.tags if not filters or t.name in filters]
    ce = min(m.ecn_ce_rx, frames_rx) if m else 0
    groups: dict[tuple[tuple[str, str], ...], int] = {}
    for marked, frames in ((False, frames_rx - ce), (True, ce)):
        key = tuple((t.name, hex(t.value(marked))) for t in tags)
        groups[key] = groups.get(key, 0) + frames
    out = []
    for key, frames in groups.items():
        if not key or (frames == 0 and not request.get("include_empty_metrics", False)):
            continue
        if any(filters.get(n) and v not in filters[n] for n, v in key):
            continue
        size_b = flow.spec.frame_size_b
        out.append(
            {
                "tags": [{"name": n, "value": {"choice": "hex", "hex": v}} for n, v in key],
                "frames_rx": frames,
                "bytes_rx": frames * size_b,
            }
        )
    return out


# --- HTTP ----------------------------------------------------------------------------------


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads: nothing is left behind


class OtgServer:
    """The engine served over HTTP on 127.0.0.1 (an ephemeral port), in a daemon thread."""

    def __init__(self, engine: OtgEngine, reachable: Callable[[], bool] | None = None) -> None:
        self.engine = engine
        self.reachable = reachable or (lambda: True)
        self._stop = threading.Event()
        self._http = _HttpServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(
            target=self._http.serve_forever, name=f"otg-{engine.name}", daemon=True
        )

    @property
    def location(self) -> str:
        host, port = self._http.socket.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self) -> OtgServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5.0)

    def wait_reachable(self, gone: Callable[[], bool] = lambda: False) -> bool:
        """True at once if the device answers; False once it was silent: when it is back,
        its client is ``gone``, or the server stops. The client waits out a wall-clock
        timeout meanwhile: the lab's clock keeps its pace."""
        if self.reachable():
            return True
        with serving(self.engine.fabric.clock):
            while not (self._stop.wait(SILENT_POLL_S) or self.reachable() or gone()):
                pass
        return False

    def route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        engine = self.engine
        if (method, path) == ("POST", "/config"):
            return 200, {"warnings": engine.set_config(body)}
        if (method, path) == ("GET", "/config"):
            return 200, engine.config.raw if engine.config else {}
        if (method, path) == ("POST", "/control/state"):
            _control(engine, body)
            return 200, {"warnings": []}
        if (method, path) == ("POST", "/monitor/metrics"):
            return 200, _metrics(engine, body)
        if (method, path) == ("GET", "/capabilities/version"):
            version = {"api_spec_version": "", "sdk_version": _snappi_version()}
            return 200, version | {"app_version": "labtest-emulated"}
        return 404, {"code": 404, "kind": "validation", "errors": [f"no route {method} {path}"]}


def _control(engine: OtgEngine, body: dict[str, Any]) -> None:
    choice = body.get("choice")
    section = body.get(choice or "") or {}
    if choice == "traffic" and section.get("choice") == "flow_transmit":
        transmit = section.get("flow_transmit") or {}
        engine.transmit(str(transmit.get("state")), list(transmit.get("flow_names") or []))
    elif choice == "port" and section.get("choice") == "link":
        link = section.get("link") or {}
        if link.get("state") not in ("up", "down"):
            raise OtgError([f"port link state {link.get('state')!r}: use up or down"])
        engine.set_link(link["state"], list(link.get("port_names") or []))
    else:
        raise OtgError([f"control state {choice}.{section.get('choice')} is not emulated"])


def _metrics(engine: OtgEngine, body: dict[str, Any]) -> dict[str, Any]:
    choice = body.get("choice", "port")
    if choice == "flow":
        return {
            "choice": "flow_metrics",
            "flow_metrics": engine.flow_metrics(body.get("flow") or {}),
        }
    if choice == "port":
        return {
            "choice": "port_metrics",
            "port_metrics": engine.port_metrics(body.get("port") or {}),
        }
    raise OtgError([f"{choice} metrics are not emulated (flow, port)"])


def _readable(sock: socket.socket) -> bool:
    """The client sent more or closed (its one request was read): it waits no more."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _snappi_version() -> str:
    try:
        return metadata.version("snappi")
    except metadata.PackageNotFoundError:
        return ""


def _handler(server: OtgServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S
        protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive threads

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else b""
            if not server.wait_reachable(gone=lambda: _readable(self.connection)):
                self.close_connection = True  # silent, then the connection is lost
                return
            with serving(server.engine.fabric.clock):  # the clock keeps its pace meanwhile
                status, reply = self._answer(method, data)
            payload = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _answer(self, method: str, data: bytes) -> tuple[int, Any]:
            try:
                body = json.loads(data or b"{}")
                if not isinstance(body, dict):
                    raise OtgError(["the request body must be a JSON object"])
                return server.route(method, self.path, body)
            except json.JSONDecodeError as exc:
                return 400, {"code": 400, "kind": "validation", "errors": [f"bad JSON: {exc}"]}
            except OtgError as exc:
                kind = "validation" if exc.status < 500 else "internal"
                return exc.status, {"code": exc.status, "kind": kind, "errors": exc.errors}
            except Exception as exc:  # a bug: still an answer, never a dropped connection
                return 500, {"code": 500, "kind": "internal", "errors": [repr(exc)]}

        def log_message(self, *args: object) -> None:  # the lab's output stays quiet
            pass

    return Handler


def flow_path(fabric: Fabric, device: str, flow: str) -> list[str]:
    """Egress ports (``dev:port``) of an OTG flow's latest run: tests find the link to fail."""
    name = model_flow_name(device, flow)

    def find() -> list[str]:
        ids = [f.id for f in fabric.traffic.flows.values() if f.name == name]
        return fabric.traffic.flow_path(ids[-1]) if ids else []

    return in_model(fabric, find)


# --- the personality ---------------------------------------------------------------------------


def serve(fabric: Fabric, name: str, device: Device) -> Served:
    """An OTG server for one ``snappi-tg`` device; the lab points ``vars.otg_location`` at it."""
    server = OtgServer(OtgEngine(fabric, name, device), reachable=lambda: fabric.reachable(name))
    server.start()
    return Served(stop=server.stop, vars_update={"otg_location": server.location})
