"""Run history on both backends: runs stored once, asked by module serial, port or device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labtest.cli import main
from labtest.db import history


def _doc(started: str, ber: float, port: str = "Ethernet0", device: str = "leaf1",
         optic: str = "OPT-0001", verdict: str = "PASS") -> dict:
    """A results document as labtest.reports writes it (the fields history reads)."""
    return {
        "schema": "labtest-results/1",
        "run": {"started_utc": started, "finished_utc": started, "user": "ci", "host": "runner-3",
                "emulated": True, "git_commit": "abc123"},
        "testbed": {"name": "lab3", "sha256": "f" * 64},
        "limits": {"profile": "acceptance-400g"},
        "inventory": {device: {"facts": {"serial": f"SW-{device}"},
                               "optics": {port: {"serial": optic}, "Ethernet9": {"serial": "X"}}}},
        "verdict": {"verdict": verdict},
        "tests": [
            {"nodeid": f"suites/link/test_link.py::test_link[{device}:{port}]", "suite": "link",
             "outcome": "passed", "duration_s": 1.5, "device": None,
             "measurements": [
                 {"name": "fec_pre_fec_ber", "limit_key": "link.fec_pre_fec_ber", "value": ber,
                  "unit": "ratio", "verdict": "PASS", "timestamp_s": 1.7e9,
                  "labels": {"device": device, "port": port, "link": f"{device}:{port}--s1:E0"}},
                 {"name": "rx_power_dbm", "limit_key": "optics.rx_power_dbm", "value": -2.5,
                  "unit": "dBm", "verdict": "PASS",
                  "labels": {"device": device, "port": f"{device}:{port}", "lane": 1}},
             ]},
            {"nodeid": "suites/roce/test_roce.py::test_pair", "suite": "roce",
             "outcome": "broken", "measurements": []},
        ],
    }


def test_runs_are_stored_once_and_followed_by_module_serial(backend: str) -> None:
    store = history.HistoryStore(backend)
    a = store.record(_doc("2026-11-01T10:00:00+00:00", 1e-8))
    assert a[1] is True
    assert store.record(_doc("2026-11-01T10:00:00+00:00", 1e-8)) == (a[0], False)
    store.record(_doc("2026-11-15T10:00:00+00:00", 4e-8))
    # the module moved to another switch's port: its serial still finds it
    store.record(_doc("2026-11-29T10:00:00+00:00", 9e-8, port="Ethernet4", device="leaf2",
                      verdict="FAIL"))
    assert store.run_count() == 3
    ber = store.points("OPT-0001", "link.fec_pre_fec_ber")
    assert [(p.value, p.device, p.port, p.run_verdict) for p in ber] == [
        (1e-8, "leaf1", "Ethernet0", "PASS"), (4e-8, "leaf1", "Ethernet0", "PASS"),
        (9e-8, "leaf2", "Ethernet4", "FAIL")]
    assert [p.started_utc[:10] for p in ber] == ["2026-11-01", "2026-11-15", "2026-11-29"]
    by_port = store.points("leaf1:Ethernet0")
    assert len(by_port) == 4 and {p.port for p in by_port} == {"Ethernet0"}  # "leaf1:" stripped
    assert {p.lane for p in by_port} == {None, "1"}
    assert [p.value for p in store.points("leaf1:Ethernet0", "rx_power_dbm")] == [-2.5, -2.5]
    assert len(store.points("SW-leaf2")) == 2  # the switch's own serial
    assert len(store.points("leaf2")) == 2  # a device name
    assert store.points("OPT-9999") == []
    link = {"name": "lldp_ok", "value": 1.0, "labels": {"link": "leaf1:Ethernet0--s1:E0"}}
    doc = _doc("2026-11-30T10:00:00+00:00", 1e-8)
    doc["tests"][1]["measurements"] = [link]
    store.record(doc)
    far_end = store.points("s1:E0")  # named only as a link's far end
    assert [p.name for p in far_end].count("lldp_ok") == 1
    assert {p.name for p in far_end} == {"lldp_ok", "fec_pre_fec_ber"}
    assert len(far_end) == 5  # the BER of each run's link to s1:E0, and the LLDP check
    assert "lldp_ok" in [p.name for p in store.points("leaf1:Ethernet0")]
    assert store.points("s1:E") == [] and store.points("1:Ethernet0") == []
    store.close()


def test_the_cli_answers_with_a_table_and_a_trend_plot(backend: str, tmp_path: Path,
                                                       capsys) -> None:
    for day, ber in (("01", 1e-8), ("08", 2e-8), ("15", 5e-8)):
        results = tmp_path / f"run{day}"
        results.mkdir()
        (results / history.RESULTS_FILE).write_text(json.dumps(
            _doc(f"2026-11-{day}T10:00:00+00:00", ber)))
        assert history.record_results(results, backend)[1:] == (True, 2)
    png = tmp_path / "trend.png"
    assert main(["history", "OPT-0001", "--key", "link.fec_pre_fec_ber", "--db", backend,
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["STARTED", "RUN", "RUN"]
    assert [line.split()[4] for line in out[1:4]] == ["1e-08", "2e-08", "5e-08"]
    assert all("leaf1:Ethernet0" in line and "OPT-0001" in line for line in out[1:4])
    assert out[4] == "3 measurement(s) in 3 run(s)"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["history", "OPT-9999", "--db", backend]) == 1
    assert "no stored measurement of OPT-9999" in capsys.readouterr().err


def test_the_run_hook_stores_quietly_and_never_fails_the_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    results = tmp_path / "reports" / "allure-results"
    results.mkdir(parents=True)
    (results / history.RESULTS_FILE).write_text(json.dumps(_doc("2026-11-01T10:00:00+00:00", 1)))
    history.after_run(results, said.append)
    assert said and said[0].startswith("labtest run: stored as run ")
    assert (tmp_path / "reports" / "history.db").is_file()
    history.after_run(results, said.append)  # the same results again: nothing new to say
    assert len(said) == 1
    (results / history.RESULTS_FILE).write_text("{not json")
    history.after_run(results, said.append)
    assert said[1].startswith("labtest run: not stored in the run history: ")
    monkeypatch.setenv(history.ENV_RECORD, "0")
    history.after_run(results, said.append)
    assert len(said) == 2


def test_history_without_a_store_says_where_it_looked(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABTEST_DB", raising=False)
    assert main(["history", "OPT-0001"]) == 2
    assert "no history here" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("bad", ["postgresql://labtest@127.0.0.1:1/x?connect_timeout=2"])
def test_an_unreachable_history_server_is_one_line(bad: str, capsys) -> None:
    pytest.importorskip("psycopg", reason="needs psycopg: pip install 'labtest[postgres]'")
    assert main(["history", "OPT-0001", "--db", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("labtest history: [postgresql://labtest@127.0.0.1:1/x")
    assert len(err.splitlines()) == 1
