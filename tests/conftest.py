"""Shared by every test module: modules imported once per process, and the xdist layout.

Child pytest sessions run in-process (pytester) restore ``sys.modules`` afterwards, so a
module first imported inside one is imported again later; numpy's C extensions refuse a
second load ("cannot load module more than once per process"). The testbed loader imports
the fault catalogue (numpy) for any testbed with faults, so it is imported here first.

The README's command (``python -m pytest -q``, no paths) runs on ``XDIST_WORKERS`` xdist
workers with ``--dist loadgroup`` (its workers told so: they parse the command line, which
does not say it); a run naming paths or ``-n`` stays as asked. Settings in
``pyproject.toml``'s addopts would reach ``labtest run``'s own pytest too (it reads the
checkout's pyproject), which must stay one process with one emulated lab. Groups keep
together what must not run twice at once or is expensive to build twice: every test of a
module (module-scoped labs), every test using the session's suite runs (``lab_runs``),
the PostgreSQL tests (one server), and every test that builds network namespaces (names
are random, but two kernel labs at once on two cores slow FRR's reconvergence; until the
workers were told to go by group, they did run side by side, and a healthy lab once
failed its failover recovery check).

A test that measures wall time against a tolerance (an outage in milliseconds, a loss
window against the kernel's route change) is marked ``wall_clock``: while it runs, the
other workers start nothing (a lock file the workers share, fair to the waiting test), so
its figure is not the neighbour's CPU load.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import labtest.emulation.model.faults  # noqa: F401

#: workers for the README's command (``LABTEST_XDIST=0`` runs it in one process): one more
#: than the cores, since many tests wait (on FRR's timers, PostgreSQL, a wall-clock window)
#: and the spare worker fills those waits (2 cores: 291 s with 3 workers, 325 s with 2);
#: beyond 4 the long groups (the RoCE scenario module, tests/kernel) bound the run anyway
XDIST_WORKERS = min((os.cpu_count() or 1) + 1, 4)
_SERIAL_DIRS = {"kernel": "netns", "db": "postgresql"}
#: test folders whose groups run longest (real labs, emulated labs, the 72-hour burn-in)
_LONG_FIRST = {name: rank for rank, name in enumerate(("kernel", "suites", "burnin", "doctor"))}
#: set to 1 to run the detection matrices (CI's matrix stage)
_MATRIX_ENV = "LABTEST_MATRIX"
#: the lock file the workers share (set by the controller before workers start)
_TURN_ENV = "LABTEST_XDIST_TURN"
#: the worker input key that carries loadgroup to the workers
_GROUPS_KEY = "labtest_loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    if "PYTEST_XDIST_WORKER" in os.environ:
        # a worker parses the controller's command line, not the options set below, so
        # without this it would not tag its items with their groups and loadgroup would
        # schedule like load (module labs built on every worker, kernel labs side by side)
        if getattr(config, "workerinput", {}).get(_GROUPS_KEY):
            config.option.loadgroup = True
        return
    if config.args != list(config.getini("testpaths")) or config.option.numprocesses:
        return  # paths named (an inner loop, the matrix) or -n given: as asked
    workers = int(os.environ.get("LABTEST_XDIST", XDIST_WORKERS))
    if workers > 0 and config.option.dist == "no":
        config.option.numprocesses = workers
        config.option.dist = "loadgroup"
        fd, path = tempfile.mkstemp(prefix="labtest-xdist-turn-")
        os.close(fd)
        os.environ[_TURN_ENV] = path  # the workers inherit it


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each worker of the README's command that its items go by group."""
    if node.config.option.dist == "loadgroup":
        node.workerinput[_GROUPS_KEY] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    path = os.environ.get(_TURN_ENV)
    if path and not hasattr(config, "workerinput"):
        for leftover in (Path(path), Path(path + ".gate")):
            leftover.unlink(missing_ok=True)


@contextmanager
def _turn(path: str, alone: bool) -> Iterator[None]:
    """A reader-writer lock over files: shared for ordinary tests, exclusive for
    ``wall_clock`` ones; the gate stops new readers while a writer waits."""
    with open(path + ".gate", "a") as gate, open(path, "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = os.environ.get(_TURN_ENV)
    if not path or not hasattr(item.config, "workerinput"):
        yield
        return
    with _turn(path, alone=item.get_closest_marker("wall_clock") is not None):
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _hold_matrix_stage(items)
    if not hasattr(config, "workerinput"):
        return  # groups only matter to xdist workers
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        rel = item.path.relative_to(config.rootpath).parts
        if item.get_closest_marker("netns"):
            group = "netns"
        elif len(rel) > 2 and rel[1] in _SERIAL_DIRS:
            group = _SERIAL_DIRS[rel[1]]
        elif "lab_runs" in getattr(item, "fixturenames", ()):
            group = "lab_runs"
        else:
            group = "/".join(rel)
        item.add_marker(pytest.mark.xdist_group(name=group))
    # groups are handed out in collection order: the long ones first, so the many short
    # unit tests fill the other workers' gaps and the run's tail (every worker sorts alike)
    items.sort(key=lambda it: _LONG_FIRST.get(it.path.relative_to(config.rootpath).parts[1],
                                              len(_LONG_FIRST)))


def _hold_matrix_stage(items: list[pytest.Item]) -> None:
    """Detection matrices (emulated and kernel lab) are CI's matrix stage, minutes each:
    the README's command skips them, saying how to run them."""
    if os.environ.get(_MATRIX_ENV) == "1":
        return
    for item in items:
        stage = item.get_closest_marker("matrix_stage")
        if stage is not None:
            what, length = stage.args
            item.add_marker(pytest.mark.skip(
                reason=f"{what} runs with {_MATRIX_ENV}=1 ({length}; CI's matrix stage runs it)"))
