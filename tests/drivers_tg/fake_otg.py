"""A small fake of the Open Traffic Generator HTTP API, on 127.0.0.1, for the snappi backend.

It serves the three calls a test makes (``POST /config``, ``POST
/control/state``, ``POST /monitor/metrics``; OTG ``api/api.yaml``) and
"transmits" instantly: a fixed-size flow is done as soon as it is started,
a continuous one counts frames at its rate until stopped. A test sets
impairments (frames to drop, frames to CE-mark) and reads back the config
the driver sent.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOtg:
    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None
        self.drop_frames: dict[str, int] = {}
        self.ce_frames: dict[str, int] = {}
        self.requests: list[str] = []
        self._started: dict[str, float] = {}  # continuous flows: start time
        self._frames: dict[str, int] = {}
        self._running: set[str] = set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def location(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeOtg:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # --- the API ----------------------------------------------------------------------

    def set_config(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ports = {p["name"] for p in body.get("ports", [])}
        errors = [
            f"flow {f['name']}: tx port {f['tx_rx']['port']['tx_name']} is not configured"
            for f in body.get("flows", [])
            if f["tx_rx"]["port"]["tx_name"] not in ports
        ]
        if errors:
            return 400, {"code": 400, "kind": "validation", "errors": errors}
        self.config = body
        self._frames, self._started, self._running = {}, {}, set()
        return 200, {"warnings": []}

    def set_control_state(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        transmit = body["traffic"]["flow_transmit"]
        names = transmit.get("flow_names") or [f["name"] for f in self._flows().values()]
        for name in names:
            flow = self._flows()[name]
            duration = flow["duration"]
            if transmit["state"] == "start":
                if duration["choice"] == "continuous":
                    self._started[name] = time.monotonic()
                    self._running.add(name)
                else:
                    self._frames[name] = self._fixed_frames(flow)
            elif transmit["state"] == "stop" and name in self._running:
                self._frames[name] = self._continuous_frames(flow)
                self._running.discard(name)
        return 200, {"warnings": []}

    def get_metrics(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = body["flow"]
        names = request.get("flow_names") or list(self._flows())
        tagged = request.get("tagged_metrics", {}).get("include", False)
        return 200, {
            "choice": "flow_metrics",
            "flow_metrics": [self._metric(self._flows()[n], tagged) for n in names],
        }

    # --- the simulation ------------------------------------------------------------------

    def _flows(self) -> dict[str, dict[str, Any]]:
        return {f["name"]: f for f in (self.config or {}).get("flows", [])}

    @staticmethod
    def _pps(flow: dict[str, Any]) -> float:
        rate = flow["rate"]
        return float(rate["pps"]) if rate["choice"] == "pps" else 1000.0

    def _fixed_frames(self, flow: dict[str, Any]) -> int:
        duration = flow["duration"]
        if duration["choice"] == "fixed_packets":
            return int(duration["fixed_packets"]["packets"])
        return round(duration["fixed_seconds"]["seconds"] * self._pps(flow))

    def _continuous_frames(self, flow: dict[str, Any]) -> int:
        return round((time.monotonic() - self._started[flow["name"]]) * self._pps(flow))

    def _metric(self, flow: dict[str, Any], tagged: bool) -> dict[str, Any]:
        name, size = flow["name"], flow["size"]["fixed"]
        running = name in self._running
        tx = self._continuous_frames(flow) if running else self._frames.get(name, 0)
        rx = max(0, tx - self.drop_frames.get(name, 0))
        metric: dict[str, Any] = {
            "name": name,
            "transmit": "started" if running else "stopped",
            "frames_tx": tx,
            "frames_rx": rx,
            "bytes_tx": tx * size,
            "bytes_rx": rx * size,
            "frames_tx_rate": self._pps(flow) if running else 0.0,
            "loss": (tx - rx) * 100.0 / tx if tx else 0.0,
            "timestamps": {"first_timestamp_ns": 1_000_000.0, "last_timestamp_ns": 2_000_000.0},
            "latency": {"minimum_ns": 1500.0, "maximum_ns": 4500.0, "average_ns": 2000.0},
        }
        options = (self.config or {}).get("options", {}).get("flow_options", {})
        if options.get("packet_loss_duration"):
            metric["packet_loss_duration"] = {"value": (tx - rx) / self._pps(flow) * 1000.0}
        if tagged and "ecn" in json.dumps(flow["packet"]):
            ce = min(rx, self.ce_frames.get(name, 0))
            metric["tagged_metrics"] = [
                {
                    "tags": [{"name": "ecn", "value": {"choice": "hex", "hex": "0x3"}}],
                    "frames_rx": ce,
                },
                {
                    "tags": [{"name": "ecn", "value": {"choice": "hex", "hex": "0x2"}}],
                    "frames_rx": rx - ce,
                },
            ]
        return metric

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        routes = {
            "/config": fake.set_config,
            "/control/state": fake.set_control_state,
            "/monitor/metrics": fake.get_metrics,
        }

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake.requests.append(self.path)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                route = routes.get(self.path)
                if route is None:
                    status, reply = 404, {"code": 404, "errors": [f"no route {self.path}"]}
                else:
                    status, reply = route(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

        return Handler
