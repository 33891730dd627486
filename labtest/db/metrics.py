"""Burn-in and run metrics in the OpenMetrics text format, for a floor's Prometheus dashboards.

No server to run: ``labtest burnin --metrics`` and ``labtest history --metrics``
print the text exposition, which node_exporter's textfile collector (or any
scraper reading a file) picks up::

    */1 * * * * labtest burnin --metrics > /var/lib/node_exporter/textfile/labtest_burnin.prom.$$ \\
                && mv /var/lib/node_exporter/textfile/labtest_burnin.prom.$$ \\
                      /var/lib/node_exporter/textfile/labtest_burnin.prom

Burn-in (per run: station, host, status as labels): samples stored, readings
taken and failed, run position and length, units under test, alarms per unit.
Run history (per testbed, its latest stored run): tests by outcome, verdict,
start time. Label sets stay bounded: one series per run or testbed and unit,
never per sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry


class _Once(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def _render(families: list[Metric]) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once(families))
    return generate_latest(registry).decode()


def burnin_metrics(store: Any) -> str:
    """Every run in a burn-in store (``SampleStore``), as OpenMetrics text."""
    labels = ["run_id", "station", "host", "status"]
    samples = CounterMetricFamily("labtest_burnin_samples", "Samples stored", labels=labels)
    readings = CounterMetricFamily("labtest_burnin_readings", "Readings taken", labels=labels)
    failed = CounterMetricFamily("labtest_burnin_readings_failed",
                                 "Readings that could not be taken", labels=labels)
    position = GaugeMetricFamily("labtest_burnin_position_seconds",
                                 "Run time reached", labels=labels)
    duration = GaugeMetricFamily("labtest_burnin_duration_seconds",
                                 "Planned run time", labels=labels)
    units = GaugeMetricFamily("labtest_burnin_units_under_test", "Units under test",
                              labels=labels)
    alarms = CounterMetricFamily("labtest_burnin_alarms", "Live alarms raised, per unit",
                                 labels=[*labels, "unit"])
    for run in store.runs():
        values = [run.run_id, run.station, run.host or "", run.status]
        counts = store.reading_counts(run.run_id)
        samples.add_metric(values, store.sample_count(run.run_id))
        readings.add_metric(values, sum(n for n, _ in counts.values()))
        failed.add_metric(values, sum(e for _, e in counts.values()))
        position.add_metric(values, run.position_s)
        duration.add_metric(values, run.duration_s)
        units.add_metric(values, sum(u.under_test for u in store.units(run.run_id)))
        per_unit: dict[str, int] = {}
        for event in store.events(run.run_id, ["alarm"]):
            per_unit[event.unit or ""] = per_unit.get(event.unit or "", 0) + 1
        for unit, n in sorted(per_unit.items()):
            alarms.add_metric([*values, unit], n)
    return _render([samples, readings, failed, position, duration, units, alarms])


def history_metrics(store: Any) -> str:
    """The latest stored run of each testbed in a run history, as OpenMetrics text."""
    tests = GaugeMetricFamily("labtest_run_tests", "Tests of the latest run, by outcome",
                              labels=["testbed", "run_id", "outcome"])
    verdict = GaugeMetricFamily("labtest_run_verdict", "1 for the latest run's verdict",
                                labels=["testbed", "run_id", "verdict"])
    started = GaugeMetricFamily("labtest_run_started_timestamp_seconds",
                                "When the latest run started", labels=["testbed", "run_id"])
    runs = CounterMetricFamily("labtest_runs", "Runs stored", labels=["testbed"])
    for row in store.latest_runs():
        testbed, run_id = row["testbed"] or "", row["run_id"]
        for outcome, n in sorted(row["outcomes"].items()):
            tests.add_metric([testbed, run_id, outcome], n)
        verdict.add_metric([testbed, run_id, row["verdict"] or "UNKNOWN"], 1)
        if row["started_utc"]:
            started.add_metric([testbed, run_id],
                               datetime.fromisoformat(row["started_utc"]).timestamp())
        runs.add_metric([testbed], row["runs"])
    return _render([tests, verdict, started, runs])
