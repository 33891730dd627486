"""A burn-in of the mini emulated lab (real drivers over SSH/SCPI, stepped virtual clock)
with three slow faults: each fails exactly its unit, with the figure in the reason."""

from __future__ import annotations

import json

import pytest
from burnin_helpers import MINI_STATION

from labtest.burnin import Options, analyse, load_station, open_store, start
from labtest.burnin import outputs as out
from labtest.measure import load_limits
from labtest.reports import signoff
from labtest.testbed import load_testbed

FAULTS = [
    ("failing_laser", "sw1:Ethernet0", {"drift_db_per_hour": 3.0}),  # PRBS link to sw2
    ("marginal_lane", "sw2:Ethernet8", {"lane": 2, "margin_db": 1.0}),  # mission link, FEC
    ("hot_module", "sw3:Ethernet1/1", {}),  # EOS: DOM only
]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("burnin")
    station = load_station(MINI_STATION)
    outcome = start(station, Options(emulate=True, faults=FAULTS, db=tmp / "b.db"))
    store = open_store(outcome.db)
    limits = load_limits(station.limits)
    report = analyse(store, outcome.run_id, limits)
    written = out.write(report, store, limits, tmp / "out", plots="failed",
                        testbed=load_testbed(station.testbed))
    yield {"outcome": outcome, "store": store, "report": report, "written": written, "tmp": tmp}
    store.close()


def _where(report, verdict: str) -> set[str]:
    return {f"{u.unit.device}:{u.unit.port}".rstrip(":") for u in report.units
            if u.verdict == verdict}


def test_each_slow_fault_fails_exactly_its_unit(faulty: dict) -> None:
    report = faulty["report"]
    assert faulty["outcome"].status == "complete"
    assert _where(report, "FAIL") == {"sw1:Ethernet0", "sw2:Ethernet8", "sw3:Ethernet1/1"}
    assert _where(report, "PASS") == {"sw1", "sw2", "sw3", "sw1:Ethernet8", "sw2:Ethernet0",
                                      "sw3:Ethernet2/1"}
    units = {f"{u.unit.device}:{u.unit.port}": u for u in report.units}
    laser = units["sw1:Ethernet0"]
    assert laser.unit.serial.startswith("LT")  # the module's serial, from inventory
    text = "\n".join(laser.reasons)
    assert "Tx bias drift +" in text and "tx power drift -" in text
    assert "(far end of sw1:Ethernet0)" in text and "caused by this unit's transmitter" in text
    assert "pre-FEC BER max" in units["sw2:Ethernet8"].reasons[0]
    assert "temperature_c max 8" in units["sw3:Ethernet1/1"].reasons[0]
    assert all(u.coverage_pct == 100.0 for u in report.units)


def test_every_sample_is_stored_once(faulty: dict) -> None:
    store, run_id = faulty["store"], faulty["outcome"].run_id
    run = store.run(run_id)
    expected = sum(_count(s, run.duration_s) for s in run.info["streams"])
    assert len(store.done(run_id)) == expected
    assert store.duplicate_count(run_id) == 0
    events = {e.kind for e in store.events(run_id)}
    assert {"started", "load", "phase", "alarm", "complete"} <= events


def _count(stream: list, duration_s: float) -> int:
    from labtest.burnin.schedule import Series

    return Series(*stream).count(duration_s)


def test_outputs_and_the_signoff_hand_off(faulty: dict) -> None:
    written, report = faulty["written"], faulty["report"]
    table = written.table.read_text()
    assert "9 units: 3 FAIL, 6 PASS" in table
    doc = json.loads(written.summary.read_text())
    assert doc["verdicts"] == {"PASS": 6, "MARGINAL": 0, "FAIL": 3, "INCOMPLETE": 0}
    laser = next(u for u in doc["units"] if u["port"] == "Ethernet0" and u["device"] == "sw1")
    drift = next(c for c in laser["criteria"] if c["criterion"] == "burnin.tx_bias_drift_pct")
    assert drift["verdict"] == "FAIL" and drift["value"] > 10 and "source" in drift
    assert laser["stats"]["sw1:Ethernet0"]["tx_bias_ma"]["1"]["slope_per_h"] > 10
    eos = next(u for u in doc["units"] if u["port"] == "Ethernet2/1")  # EOS: lanes as ports
    assert sorted(eos["stats"]["sw3:Ethernet2/1"]["tx_power_dbm"]) == ["1", "2", "3", "4"]
    assert {p.stem for p in written.plots} == {u.unit.serial for u in report.failed}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written.plots)
    bundle = signoff.build(written.allure_results, faulty["tmp"] / "signoff")
    assert bundle.doc["verdict"] == "FAIL"
    assert bundle.doc["counts"]["failed"] == 3 and bundle.doc["counts"]["passed"] == 6
    assert len(list(written.allure_results.glob("*-result.json"))) == 9
    assert "LT" in bundle.html.read_text()
