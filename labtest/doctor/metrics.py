"""The doctor's state as Prometheus/OpenMetrics gauges (``prometheus_client``).

One registry per doctor, rewritten after every interval: per link end a health
gauge (0 healthy, 1 watched, 2 suspect) with labels device, port, link, peer;
per suspect its confidence and rank; per drift the hours to its limit; what was
not observed; and the doctor's own cost. Served over HTTP (``--metrics-port``)
or written as a textfile for node_exporter's textfile collector
(``--metrics-file``).
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest, start_http_server

from labtest.doctor.judge import Plan
from labtest.doctor.service import Report

HEALTHY, WATCHED, SUSPECT = 0, 1, 2


class DoctorMetrics:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.registry = CollectorRegistry()
        r = self.registry
        self.health = Gauge("labtest_doctor_link_health",
                            "0 healthy, 1 watched (evidence below the paging confidence), "
                            "2 suspect", ["device", "port", "link", "peer"], registry=r)
        self.suspect = Gauge("labtest_doctor_suspect_confidence",
                             "confidence that the unit is the cause", ["unit", "kind", "rank"],
                             registry=r)
        self.drift = Gauge("labtest_doctor_drift_hours_to_limit",
                           "hours until a drifting metric crosses its limit (forecast)",
                           ["device", "port", "metric"], registry=r)
        self.not_observed = Gauge("labtest_doctor_not_observed",
                                  "1 for each reading the lab could not give", ["what"],
                                  registry=r)
        self.ports = Gauge("labtest_doctor_ports_read", "ports read in the last interval",
                           registry=r)
        self.probes = Gauge("labtest_doctor_probe_paths", "probe paths judged in the last interval",
                            registry=r)
        self.cpu = Gauge("labtest_doctor_interval_cpu_seconds",
                         "the doctor's CPU for the last interval", registry=r)
        self.interval = Gauge("labtest_doctor_interval", "intervals completed", registry=r)

    def update(self, report: Report) -> None:
        for g in (self.health, self.suspect, self.drift, self.not_observed):
            g.clear()
        state: dict[str, int] = {}
        for units, level in ((report.watched, WATCHED), (report.suspects, SUSPECT)):
            for s in units:
                lk = self.plan.link_of.get(s.unit)
                state[lk.name if lk is not None else s.unit] = level
        for lk in self.plan.testbed.links:
            a, b = lk.ends
            for end, peer in ((a, b), (b, a)):
                self.health.labels(end.device, end.port, lk.name, str(peer)).set(
                    state.get(lk.name, HEALTHY))
        for rank, s in enumerate(report.suspects, 1):
            self.suspect.labels(s.unit, s.kind, str(rank)).set(s.confidence)
        for where, d in report.drifts:
            if d.hours_to_limit is not None:
                device, _, port = where.partition(":")
                self.drift.labels(device, port, d.metric).set(d.hours_to_limit)
        for what in report.not_observed:
            self.not_observed.labels(what).set(1)
        self.ports.set(report.ports_read)
        self.probes.set(report.probe_paths)
        self.cpu.set(report.cpu_s)
        self.interval.set(report.interval)

    def text(self) -> bytes:
        return generate_latest(self.registry)

    def write(self, path: Path) -> None:
        """Atomically, as node_exporter's textfile collector wants it."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(self.text())
        tmp.replace(path)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        start_http_server(port, addr=addr, registry=self.registry)
