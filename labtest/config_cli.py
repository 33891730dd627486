"""``labtest config``: each setting's effective value and where it came from.

Settings come from four places, and one rule orders them everywhere: **the command
line, then the environment, then the lab's files (the testbed and the files it names),
then labtest's default**. Each setting below is a list of layers in that order; the
first that says something wins (the suite settings file alone is merged: the
environment's file on top of the testbed's). The values are taken from the functions
the runs themselves call (the state folder, the lease store, the history store, the
Allure cache, the ``--emulate`` rule), so what is printed is what a run uses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from labtest.errors import ConfigError
from labtest.testbed import Testbed, emulates, load_testbed

EXIT_OK, EXIT_USAGE = 0, 2


@dataclass(frozen=True)
class Context:
    """What the layers read: the command line, the environment and the testbed."""

    args: argparse.Namespace
    env: Mapping[str, str]
    testbed_path: Path
    testbed: Testbed | None


@dataclass(frozen=True)
class Layer:
    """One place a setting may come from; ``value`` gives None where it says nothing."""

    source: str
    value: Callable[[Context], object]


@dataclass(frozen=True)
class Setting:
    name: str
    meaning: str
    layers: tuple[Layer, ...]  # command line, environment, files, default: in that order
    merged: bool = False  # every layer that says something applies, the later on top


@dataclass(frozen=True)
class Effective:
    name: str
    value: str
    source: str
    meaning: str


def _flag(name: str, shown: str = "") -> Layer:
    return Layer(f"command line {shown or '--' + name.replace('_', '-')}",
                 lambda c: getattr(c.args, name, None))


def _env(var: str, keep: Callable[[str], bool] = bool) -> Layer:
    return Layer(f"environment ${var}",
                 lambda c: c.env.get(var) if keep(c.env.get(var, "")) else None)


def _testbed(key: str) -> Layer:
    return Layer(f"testbed {key}:",
                 lambda c: getattr(c.testbed, key, None) if c.testbed is not None else None)


def _default(why: str, value: Callable[[Context], object]) -> Layer:
    return Layer(f"default ({why})", value)


def _is_postgres(url: str) -> bool:
    from labtest import db

    return db.is_postgres(url)


def _default_testbed(_: Context) -> Path:
    from labtest.run import default_testbed

    return default_testbed()


def _emulation_section(c: Context) -> bool | None:
    if c.testbed is None:
        return None
    return emulates(c.testbed, None) or None  # a testbed without the section says nothing


def _results_dir(_: Context) -> Path:
    from labtest.run import DEFAULT_RESULTS

    return DEFAULT_RESULTS


def _history_path(_: Context) -> Path:
    from labtest.db.history import DEFAULT_PATH

    return DEFAULT_PATH


def _lease_path(_: Context) -> Path:
    from labtest.reservation import default_store_path

    return default_store_path()


def _lease_ttl(_: Context) -> float:
    from labtest.reservation import DEFAULT_TTL_S

    return DEFAULT_TTL_S


def _state_dir(_: Context) -> Path:
    from labtest.runs import state_dir

    return state_dir()  # its own default (root: /run/labtest, else a per-user tmp folder)


def _cache_dir(_: Context) -> Path:
    from labtest.reports.allure_html import cache_dir

    return cache_dir()


def _allure_version(_: Context) -> str:
    from labtest.reports.allure_html import ALLURE_VERSION

    return ALLURE_VERSION


SETTINGS: tuple[Setting, ...] = (
    Setting("testbed", "the lab the suites run on", (
        _flag("testbed"),
        _default("./testbed.yaml if there is one, else the emulated leaf-spine lab",
                 _default_testbed))),
    Setting("emulate", "run on the emulated lab built from the testbed, not the lab itself", (
        _flag("emulate", "--emulate/--no-emulate"),
        Layer("testbed emulation: (present)", _emulation_section),
        _default("a testbed without emulation: is a real lab", lambda _: False))),
    Setting("limits", "the limits profile the suites judge by", (
        _flag("limits"), _testbed("limits"),
        _default("none: checks against limits are not proven", lambda _: None))),
    Setting("suite_settings", "run settings of the suites (durations, rates), not limits", (
        _testbed("suite_settings"), _env("LABTEST_SUITE_SETTINGS"),
        _default("each suite's own settings", lambda _: None)), merged=True),
    Setting("results_dir", "where a run writes its results (emptied at its start)", (
        _flag("alluredir"), _default("labtest run", _results_dir))),
    Setting("history_store", "the runs labtest run stores (labtest history reads them)", (
        _flag("db"), _env("LABTEST_DB", _is_postgres),
        _default("a SQLite file where the command runs", _history_path))),
    Setting("history_recording", "whether labtest run stores its run in the history", (
        _env("LABTEST_HISTORY"), _default("on", lambda _: "1"))),
    Setting("lease_store", "the device leases every runner of this lab shares", (
        _flag("lease_store"), _env("LABTEST_LEASE_STORE"), _env("LABTEST_DB", _is_postgres),
        _default("one SQLite store per host", _lease_path))),
    Setting("lease_ttl_s", "seconds a lease lives without its runner's heartbeat", (
        _env("LABTEST_LEASE_TTL_S"), _default("store default", _lease_ttl))),
    Setting("state_dir", "the running labs' and runs' state (PIDs, namespaces)", (
        _env("LABTEST_STATE_DIR"), _default("root: /run/labtest, else per user", _state_dir))),
    Setting("lab_group", "the group that shares this host's lab state and leases", (
        _env("LABTEST_LAB_GROUP"), _default("none: private to the user", lambda _: None))),
    Setting("cache_dir", "downloads kept between runs (the Allure CLI)", (
        _env("LABTEST_CACHE_DIR"), _env("XDG_CACHE_HOME"),
        _default("~/.cache/labtest", _cache_dir))),
    Setting("allure_version", "the Allure CLI labtest report installs", (
        _env("LABTEST_ALLURE_VERSION"), _default("pinned", _allure_version))),
    Setting("stacks_dir", "where SIGUSR1 writes every thread's stack (a hung run)", (
        _env("LABTEST_STACKS_DIR"), _default("not armed", lambda _: None))),
)

#: environment variables labtest reads that are not settings of a run: set by labtest
#: itself for its children, or knobs of its own tests and benches
INTERNAL_ENV = {
    "LABTEST_RUN_PARENT": "set by labtest run for its pytest child (interrupt handling)",
    "LABTEST_ELASTIC_CLOCK": "the emulated lab's clock mode, for its own benchmarks",
    "LABTEST_MODEL_STEP_EVERY_READ": "the fabric model's stepping, for its own tests",
    "LABTEST_MATRIX": "runs the detection matrix tests (CI)",
    "LABTEST_MATRIX_REDUCED": "the matrix tests' reduced draw (CI)",
}


def resolve(setting: Setting, ctx: Context) -> Effective:
    """The first layer that says something (every one, lowest first, when merged)."""
    said = [(layer.source, v) for layer in setting.layers
            if (v := layer.value(ctx)) is not None]
    if not said:  # only a default that says "none" is left
        return Effective(setting.name, "none", setting.layers[-1].source, setting.meaning)
    if setting.merged and len(said) > 1:
        chain = [s for s in said if not s[0].startswith("default")]
        return Effective(setting.name, " + ".join(_shown(v) for _, v in chain),
                         ", then ".join(src for src, _ in chain) + " on top",
                         setting.meaning)
    source, value = said[0]
    if source.startswith("testbed "):  # which file said it
        source = f"{source} ({ctx.testbed_path})"
    return Effective(setting.name, _shown(value), source, setting.meaning)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = os.path.normpath(value) if isinstance(value, Path) else str(value)
    from labtest import db  # a database URL's password is never printed

    return db.display_url(text) if "://" in text or "password" in text else text


def effective(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> list[Effective]:
    """Every setting's effective value for these command-line arguments."""
    from labtest.run import default_testbed

    env = os.environ if env is None else env
    tb_path = getattr(args, "testbed", None) or default_testbed()  # as labtest run says it
    testbed = load_testbed(tb_path)
    ctx = Context(args, env, tb_path, testbed)
    return [resolve(s, ctx) for s in SETTINGS]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ap = subparsers.add_parser(
        "config", help="print each setting's effective value and where it came from",
        description="Each setting labtest reads, its effective value and its source. The "
                    "order everywhere: command line, environment, the lab's files "
                    "(testbed), labtest's default. Give the options you would give "
                    "labtest run to see what that run would use.")
    ap.add_argument("--testbed", type=Path, metavar="FILE")
    ap.add_argument("--emulate", action=argparse.BooleanOptionalAction, default=None)
    ap.add_argument("--limits", type=Path, metavar="FILE")
    ap.add_argument("--alluredir", type=Path, metavar="DIR")
    ap.add_argument("--db", metavar="FILE|URL", help="the history store (labtest history)")
    ap.add_argument("--lease-store", metavar="FILE|URL", help="the lease store (pytest's "
                    "--lease-store, labtest lease --store)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.set_defaults(handler=_config)


def _config(args: argparse.Namespace) -> int:
    try:
        rows = effective(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=2))
        return EXIT_OK
    width = max(len(r.name) for r in rows)
    for r in rows:  # the meanings: --json, and docs/testbed.md
        print(f"{r.name:<{width}}  {r.value}\n{'':<{width}}  from {r.source}")
    return EXIT_OK
