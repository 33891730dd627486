"""``labtest config``: one precedence (command line, environment, files, default), and
what it prints is what the runs use."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from labtest import cli
from labtest.config_cli import INTERNAL_ENV, SETTINGS, Context, effective, resolve
from labtest.run import DEFAULT_TESTBED
from labtest.testbed import emulates, load_testbed

ROOT = Path(__file__).resolve().parents[2]


def _args(**given: object) -> argparse.Namespace:
    base: dict[str, object] = {"testbed": None, "emulate": None, "limits": None,
                               "alluredir": None, "db": None, "lease_store": None}
    return argparse.Namespace(**{**base, **given})


def _rows(args: argparse.Namespace, env: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {r.name: (r.value, r.source) for r in effective(args, env)}


def test_defaults_name_their_source(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./testbed.yaml here: the emulated default lab
    rows = _rows(_args(), {})
    assert rows["testbed"] == (str(DEFAULT_TESTBED), rows["testbed"][1])
    assert rows["testbed"][1].startswith("default")
    assert rows["emulate"][0] == "yes" and rows["emulate"][1].startswith("testbed emulation:")
    assert rows["limits"][1].startswith("testbed limits:")
    assert all(src.startswith("default") for name, (_, src) in rows.items()
               if name not in {"emulate", "limits"} and name != "testbed")


def test_command_line_beats_environment_beats_default(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    server = "postgresql://lab@db.example/labtest"
    env_only = _rows(_args(), {"LABTEST_DB": server})
    assert env_only["history_store"] == (server, "environment $LABTEST_DB")
    assert env_only["lease_store"] == (server, "environment $LABTEST_DB")
    flag = _rows(_args(db="mine.db"), {"LABTEST_DB": server})
    assert flag["history_store"] == ("mine.db", "command line --db")
    # a SQLite $LABTEST_DB is no shared store: the history's own rule ignores it
    sqlite = _rows(_args(), {"LABTEST_DB": "/some/file.db"})
    assert sqlite["history_store"][1].startswith("default")
    store = _rows(_args(), {"LABTEST_LEASE_STORE": "/leases.db", "LABTEST_DB": server})
    assert store["lease_store"] == ("/leases.db", "environment $LABTEST_LEASE_STORE")
    flagged = _rows(_args(lease_store="/mine.db"), {"LABTEST_LEASE_STORE": "/leases.db"})
    assert flagged["lease_store"] == ("/mine.db", "command line --lease-store")


def test_command_line_beats_the_testbed(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    limits = ROOT / "suites" / "limits" / "acceptance-400g.yaml"
    rows = _rows(_args(limits=limits, emulate=False), {})
    assert rows["limits"] == (str(limits), "command line --limits")
    assert rows["emulate"] == ("no", "command line --emulate/--no-emulate")


@pytest.mark.parametrize("flag", [None, True, False])
def test_emulate_is_the_runs_own_rule(flag, tmp_path) -> None:
    """The printed answer is ``labtest.testbed.emulates``'s, for an emulated lab's file and
    a real lab's (the same file without its emulation: section)."""
    real = tmp_path / "real.yaml"
    text = DEFAULT_TESTBED.read_text().replace("../../", f"{ROOT}/")  # paths from elsewhere
    real.write_text(re.sub(r"(?ms)^emulation:.*?(?=^\S)", "", text))
    for path in (DEFAULT_TESTBED, real):
        tb = load_testbed(path)
        rows = _rows(_args(testbed=path, emulate=flag), {})
        assert rows["emulate"][0] == ("yes" if emulates(tb, flag) else "no"), (path, flag)
    assert load_testbed(real).emulation is None  # the real lab's file has no section


def test_printed_values_are_those_the_runs_use(tmp_path, monkeypatch) -> None:
    from labtest.reports.allure_html import cache_dir
    from labtest.runs import state_dir

    env = {"LABTEST_STATE_DIR": str(tmp_path / "state"),
           "LABTEST_CACHE_DIR": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    rows = _rows(_args(), env)
    assert rows["state_dir"] == (str(state_dir()), "environment $LABTEST_STATE_DIR")
    assert rows["cache_dir"] == (str(cache_dir()), "environment $LABTEST_CACHE_DIR")


def test_suite_settings_merge_the_environments_file_on_top(tmp_path) -> None:
    setting = next(s for s in SETTINGS if s.name == "suite_settings")
    tb = load_testbed(DEFAULT_TESTBED).model_copy(
        update={"suite_settings": tmp_path / "lab.yaml"})
    ctx = Context(_args(), {"LABTEST_SUITE_SETTINGS": str(tmp_path / "mine.yaml")},
                  DEFAULT_TESTBED, tb)
    row = resolve(setting, ctx)
    assert row.value == f"{tmp_path / 'lab.yaml'} + {tmp_path / 'mine.yaml'}"
    assert row.source == "testbed suite_settings:, then environment $LABTEST_SUITE_SETTINGS on top"


def test_every_environment_variable_labtest_reads_is_listed() -> None:
    """A new ``LABTEST_*`` variable in the code is a setting `labtest config` shows, or an
    internal knob with its reason."""
    listed = {layer.source.removeprefix("environment $") for s in SETTINGS for layer in s.layers
              if layer.source.startswith("environment $")}
    found: set[str] = set()
    for folder in ("labtest", "fixtures", "drivers"):
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(re.findall(r"LABTEST_[A-Z0-9_]+", path.read_text(encoding="utf-8")))
    missing = sorted(found - listed - set(INTERNAL_ENV))
    assert not missing, f"not in labtest config (SETTINGS) nor INTERNAL_ENV: {missing}"
    assert "LABTEST_DB" in found and "LABTEST_STATE_DIR" in found  # the scan reads the code


def test_the_command_prints_json_and_hides_passwords(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LABTEST_DB", "postgresql://lab:hunter22@db.example/labtest")
    assert cli.main(["config", "--json"]) == 0
    out = capsys.readouterr().out
    assert "hunter22" not in out
    rows = {r["name"]: r for r in json.loads(out)}
    assert set(rows) == {s.name for s in SETTINGS}
    assert rows["history_store"]["source"] == "environment $LABTEST_DB"


def test_a_broken_testbed_is_a_usage_error_with_its_place(tmp_path, capsys) -> None:
    bad = tmp_path / "tb.yaml"
    bad.write_text("name: x\ndevices: {a: {role: spine, driver: nosuch}}\n")
    assert cli.main(["config", "--testbed", str(bad)]) == 2
    assert "tb.yaml" in capsys.readouterr().err
