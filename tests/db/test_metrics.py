"""OpenMetrics text of burn-in runs and of the run history, parsed back by prometheus_client."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from labtest.burnin.__main__ import main as burnin_main
from labtest.burnin.backends import open_store
from labtest.burnin.store import Event, Reading, Run, Sample, Unit
from labtest.cli import main
from labtest.db import history


def _values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_burnin_metrics_count_every_stations_run(backend: str, capsys) -> None:
    store = open_store(backend)
    store.create_run(Run("r1", "rack-b12", "running", "2026-12-01T00:00:00+00:00", 7200.0,
                         position_s=1800.0, host="st07"))
    store.put_units("r1", [Unit("SN1", "module", "sw1", "Ethernet0", True),
                           Unit("FX", "module", "sw1", "Ethernet4", False)])
    samples = [Sample("SN1", "sw1:Ethernet0", lane, "tx_power_dbm", -1.0, "dBm")
               for lane in (1, 2, 3)]
    store.write("r1", Reading("dom", "sw1", 0, 0.0, 1.7e9, samples))
    store.write("r1", Reading("dom", "sw1", 1, 300.0, 1.7e9, (), "TransportTimeout: x"))
    store.event("r1", Event(1.0, 1.7e9, "alarm", "hot", "SN1", "k1"))
    store.event("r1", Event(2.0, 1.7e9, "alarm", "hotter", "SN1", "k2"))
    store.close()
    assert burnin_main(["--metrics", "--db", backend]) == 0
    text = capsys.readouterr().out
    assert text.endswith("# EOF\n")
    got = _values(text)
    run = (("host", "st07"), ("run_id", "r1"), ("station", "rack-b12"), ("status", "running"))
    assert got[("labtest_burnin_samples_total", run)] == 3
    assert got[("labtest_burnin_readings_total", run)] == 2
    assert got[("labtest_burnin_readings_failed_total", run)] == 1
    assert got[("labtest_burnin_position_seconds", run)] == 1800
    assert got[("labtest_burnin_duration_seconds", run)] == 7200
    assert got[("labtest_burnin_units_under_test", run)] == 1
    assert got[("labtest_burnin_alarms_total", tuple(sorted((*run, ("unit", "SN1")))))] == 2


def test_history_metrics_show_each_testbeds_latest_run(backend: str, capsys) -> None:
    store = history.HistoryStore(backend)
    for started, verdict, outcomes in (("2026-11-01T10:00:00+00:00", "FAIL", ["failed"]),
                                       ("2026-11-02T10:00:00+00:00", "PASS",
                                        ["passed", "passed", "skipped"])):
        store.record({"schema": "labtest-results/1", "run": {"started_utc": started},
                      "testbed": {"name": "lab3"}, "verdict": {"verdict": verdict},
                      "tests": [{"nodeid": f"t{i}", "outcome": o, "measurements": []}
                                for i, o in enumerate(outcomes)]})
    store.close()
    assert main(["history", "--metrics", "--db", backend]) == 0
    got = _values(capsys.readouterr().out)
    latest = next(run for (name, labels), _ in got.items() for k, run in labels
                  if name == "labtest_run_verdict" and k == "run_id")
    assert got[("labtest_run_verdict", (("run_id", latest), ("testbed", "lab3"),
                                        ("verdict", "PASS")))] == 1
    assert got[("labtest_run_tests", (("outcome", "passed"), ("run_id", latest),
                                      ("testbed", "lab3")))] == 2
    assert got[("labtest_runs_total", (("testbed", "lab3"),))] == 2
    assert got[("labtest_run_started_timestamp_seconds",
                (("run_id", latest), ("testbed", "lab3")))] == datetime(
                    2026, 11, 2, 10, tzinfo=UTC).timestamp()
