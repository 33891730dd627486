"""The labtest pytest plugin (registered through the ``pytest11`` entry point).

It gives tests the testbed, its devices, the limits profile and ``measure``;
skips tests whose testbed lacks what they ``needs``; and keeps two kinds of
red apart: *failed* (a measurement missed its limit) and *broken* (the lab
could not be asked — ``InfraError``), with the device's raw output attached; and
installs the run's circuit breakers, so a dead device costs one timeout, not one per test.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labtest import connect, interrupt, secrets, xdist_guard
from labtest.errors import CapabilityAbsent, ConfigError, InfraError, LimitFailure
from labtest.lab import Lab
from labtest.measure import LimitsProfile, Measurement, NotProven, Recorder, load_limits
from labtest.outcome import (
    BROKEN,
    FAILED,
    ErrorKind,
    PhaseRecord,
    error_record,
    raw_evidence,
)
from labtest.reservation import plugin as reservation_plugin
from labtest.testbed import Testbed, emulates, load_testbed
from labtest.transports import breaker

RECORDER_ATTR = "_labtest_recorder"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labtest", "labtest lab testing")
    group.addoption("--testbed", metavar="FILE", help="testbed YAML describing the lab")
    group.addoption(
        "--emulate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run against an emulated lab built from the testbed (default: when the testbed "
        "has an emulation: section; --no-emulate for the real lab)",
    )
    group.addoption("--limits", metavar="FILE", help="limits profile (overrides the testbed's)")
    group.addoption(
        "--record",
        metavar="DIR",
        help="record every device session to DIR/<device>.jsonl (replay with 'replay:')",
    )
    group.addoption(
        "--destructive",
        action="store_true",
        help="allow tests marked destructive (implied by --emulate)",
    )
    reservation_plugin.add_options(group)  # --reserve, --reserve-timeout, --lease-store


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "destructive: changes device state (ports, config, reboots); opt-in"
    )
    config.addinivalue_line(
        "markers",
        "judges(*limit_keys): the limit keys the test records under (measure(key=...), "
        "measure.not_proven(...)); measure refuses any other, and any record without it",
    )
    config.addinivalue_line(
        "markers", "devices(*names): devices the test drives (one xdist group per device)"
    )
    config.addinivalue_line(
        "markers",
        "needs(*capabilities, role=None, count=1): skip unless the testbed has at least "
        "`count` devices (of `role`) whose drivers offer every named capability",
    )
    secrets.install_log_redaction()
    interrupt.take_interrupts_once()  # in labtest run's child: Ctrl-C + its parent's = one
    record = config.getoption("record", None)
    if record:
        connect.set_record_dir(Path(record))
    state = _State(config)
    config.stash[_state_key] = state
    state.load()  # a bad testbed is a usage error before any test runs


class _State:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._testbed: Testbed | None = None
        self.loaded: Testbed | None = None  # as read from the file, before any emulation
        self._lab: Lab | None = None
        self._emulated: Any = None
        self.broken = 0
        self.breakers: breaker.Board | None = None  # while a testbed is driven
        self.start_error = ""  # why the emulated lab did not start: the session stops

    def load(self) -> None:
        flag = self.config.option.emulate
        self.config.option.emulate = bool(flag)  # without a testbed, only the flag says
        path = self.config.getoption("testbed")
        if path is not None:
            try:
                self._testbed = self.loaded = load_testbed(path)
            except ConfigError as exc:
                raise pytest.UsageError(str(exc)) from None
            # the one rule (labtest.testbed.emulates): what every reader of the option sees
            self.config.option.emulate = emulates(self._testbed, flag)
            self.breakers = breaker.Board()
            breaker.install(self.breakers)
            if self._testbed.suite_settings is not None:  # before the suites import
                from labtest.fixtures.suite_data import set_lab_settings

                set_lab_settings(self._testbed.suite_settings)

    def testbed(self) -> Testbed | None:
        if self.start_error:  # never the unemulated testbed after a failed start
            _stop_broken(self.config, self.start_error)
        if self._testbed is not None and self.config.getoption("emulate") and not self._emulated:
            try:
                self._testbed = self._start_emulation(self._testbed)
            except Exception as exc:  # the lab stopped what it had started
                self._emulated = None
                self.start_error = _start_failure(self._testbed, exc)
                _stop_broken(self.config, self.start_error)
        return self._testbed

    def _start_emulation(self, testbed: Testbed) -> Testbed:
        self._reap()
        if testbed.emulation is not None and testbed.emulation.backend == "kernel":
            from labtest.emulation.kernel import KernelLab

            self._emulated = KernelLab(testbed)
            return self._emulated.start()
        from labtest.emulation.lab import EmulatedLab  # on use: it starts servers and models

        self._emulated = EmulatedLab(testbed)
        return self._emulated.start()

    def _reap(self) -> None:
        """Leftovers of dead runs go before a lab starts (each lab reaps too); their one
        line is said past pytest's capture: the lab starts inside a fixture."""
        from labtest import runs

        line = runs.reap(report=False).line()
        if line is None:
            return
        capman = self.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            print(line, file=sys.stderr, flush=True)

    def lab(self) -> Lab:
        tb = self.testbed()
        if tb is None:
            pytest.skip("no --testbed given")
        if self._lab is None:
            self._lab = Lab(tb)
        return self._lab

    def close(self) -> None:
        if self._testbed is not None and self._testbed.suite_settings is not None:
            from labtest.fixtures.suite_data import set_lab_settings

            set_lab_settings(None)  # an in-process session after this one starts clean
        if self.breakers is not None and breaker.current() is self.breakers:
            breaker.install(None)
        try:
            if self._lab is not None:
                self._lab.close()
        finally:  # the emulated lab's servers, keys and secrets go even if a session hung
            if self._emulated is not None:
                with interrupt.held("stopping the lab"):
                    self._emulated.stop()


_state_key = pytest.StashKey[_State]()


def _start_failure(testbed: Testbed, exc: Exception) -> str:
    """One located line: the fault entry's ``file:line:col`` when a fault was refused."""
    from labtest.emulation.model.faults import FaultError
    from labtest.yamlsource import read

    place = str(testbed.source or "the testbed")
    if isinstance(exc, FaultError) and exc.index is not None and testbed.source is not None:
        place, _ = read(testbed.source).where(("emulation", "faults", exc.index))
    return f"{place}: the emulated lab did not start: {type(exc).__name__}: {exc}"


def _stop_broken(config: pytest.Config, message: str) -> None:
    """End the session at once with ``labtest run``'s broken status: no test can be judged
    on a lab that did not start, and none may run on the unemulated testbed instead. An
    xdist worker also hands the message to the controller, which stops the same way."""
    from labtest.run import EXIT_BROKEN

    output = getattr(config, "workeroutput", None)
    if output is not None:
        output["labtest_broken"] = message
    pytest.exit(message, returncode=EXIT_BROKEN)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A start that failed during collection is one collection error per module (pytest
    catches ``exit`` there); stop here, once, with the located message instead."""
    state = session.config.stash.get(_state_key, None)
    if state is not None and state.start_error:
        _stop_broken(session.config, state.start_error)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: a worker whose lab did not start stops the whole session (before
    xdist counts the worker's unfinished test as a crash)."""
    message = getattr(node, "workeroutput", {}).get("labtest_broken")
    if message:
        _stop_broken(node.config, message)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Any:
    """The run's results are written whole: an interrupt in the middle of it (a second
    Ctrl-C) waits, as it does while the lab stops, instead of a traceback and no results."""
    with interrupt.held("writing the run's results"):
        return (yield)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_state_key, None)
    if state is not None:
        state.close()


def testbed_of(config: pytest.Config) -> Testbed | None:
    """The session's testbed at collection time (for ``pytest_generate_tests``)."""
    return config.stash[_state_key].testbed()


def loaded_testbed(config: pytest.Config) -> Testbed | None:
    """The testbed as read from ``--testbed`` (the one load of the run), without starting
    an emulation: what the results record and labels name."""
    state = config.stash.get(_state_key, None)
    return state.loaded if state is not None else None


def lab_of(config: pytest.Config) -> Lab:
    """The session's lab outside a fixture (e.g. in a hook)."""
    return config.stash[_state_key].lab()


# --- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="session")
def testbed(pytestconfig: pytest.Config) -> Testbed:
    """The validated testbed from ``--testbed`` (the test is skipped without one)."""
    tb = pytestconfig.stash[_state_key].testbed()
    if tb is None:
        pytest.skip("no --testbed given")
    return tb


@pytest.fixture(scope="session")
def lab(pytestconfig: pytest.Config) -> Lab:
    """Devices of the testbed: ``lab.device("leaf1")``, ``lab.by_role("leaf")``."""
    return pytestconfig.stash[_state_key].lab()


@pytest.fixture
def device(lab: Lab) -> Any:
    """A function: ``device("leaf1")`` returns that device's driver."""
    return lab.device


@pytest.fixture(scope="session")
def limits(pytestconfig: pytest.Config) -> LimitsProfile | None:
    path = pytestconfig.getoption("limits")
    if path is None:
        tb = pytestconfig.stash[_state_key].testbed()
        path = tb.limits if tb is not None else None
    if path is None:
        return None
    try:
        return load_limits(path)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="module")  # as narrow as a suite module's own limits fixture may be
def profile(limits: LimitsProfile | None) -> LimitsProfile:
    """The limits profile a suite judges by; the test is skipped without one."""
    if limits is None:
        pytest.skip("no limits profile (--limits or the testbed's limits:)")
    return limits


@pytest.fixture
def measure(request: pytest.FixtureRequest, limits: LimitsProfile | None) -> Iterator[Recorder]:
    """Record measurements; the test fails after its body if any is FAIL."""
    recorder = Recorder(
        profile=limits,
        sinks=[_allure_step],
        note_sinks=[_allure_note],
        test=request.node.nodeid,
        judges=judged_keys(request.node),
    )
    setattr(request.node, RECORDER_ATTR, recorder)
    yield recorder
    if recorder.measurements:
        _allure_attach("measurements", recorder.to_json())


def judged_keys(item: pytest.Item) -> tuple[str, ...] | None:
    """The limit keys ``item`` declares with ``@pytest.mark.judges`` (all its markers,
    function, class and module); ``None`` when it carries none."""
    marks = list(item.iter_markers("judges"))
    if not marks:
        return None
    return tuple(dict.fromkeys(str(k) for mark in marks for k in mark.args))


def _allure_step(m: Measurement) -> None:
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    with allure.step(f"{m.verdict.value}: {m.message()}"):
        pass


def _allure_note(note: NotProven) -> None:
    try:
        import allure
    except ImportError:  # pragma: no cover - allure-pytest is a dependency
        return
    with allure.step(note.message()):
        pass


def _allure_attach(name: str, body: str) -> None:
    import allure

    allure.attach(body, name=name, attachment_type=allure.attachment_type.JSON)


# --- markers ----------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before xdist turns groups into '@group' node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xdist_guard.add_groups(items)
    allow_destructive = config.getoption("destructive") or config.getoption("emulate")
    for item in items:
        if item.get_closest_marker("destructive") and not allow_destructive:
            item.add_marker(pytest.mark.skip(reason="destructive: pass --destructive to run it"))


def _breakers_at(item: pytest.Item, phase: str) -> None:
    """Tell the breakers where the run is (their messages cite the test and phase) and the
    suite (a down device is reprobed once per suite: per test module)."""
    state = item.config.stash.get(_state_key, None)
    if state is not None and state.breakers is not None:
        state.breakers.at(f"{item.nodeid} ({phase})", str(item.path))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    _breakers_at(item, "setup")  # before the fixtures: session ones (inventory) run there


def pytest_runtest_teardown(item: pytest.Item) -> None:
    _breakers_at(item, "teardown")


def pytest_runtest_setup(item: pytest.Item) -> None:
    xdist_guard.check_groups_honoured(item)
    reservation_plugin.before_test(item, testbed_of)  # hold the lab's devices; stop if lost
    for mark in item.iter_markers("needs"):
        reason = _unmet_needs(item.config, mark)
        if reason:
            pytest.skip(reason)


def _unmet_needs(config: pytest.Config, mark: pytest.Mark) -> str | None:
    state = config.stash[_state_key]
    if state.testbed() is None:
        return "no --testbed given"
    lab = state.lab()
    role = mark.kwargs.get("role")
    count = int(mark.kwargs.get("count", 1))
    candidates = lab.names(role=role)
    for cap in mark.args:
        candidates = [n for n in candidates if n in set(lab.names(capability=cap))]
    if len(candidates) >= count:
        return None
    what = " + ".join(str(getattr(c, "__name__", c)) for c in mark.args) or "any device"
    scope = f" with role {role!r}" if role else ""
    return (
        f"testbed {lab.testbed.name!r} has {len(candidates)} device(s){scope} offering "
        f"{what}; this test needs {count}"
    )


# --- verdicts: failed vs broken -----------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    recorder: Recorder | None = getattr(item, RECORDER_ATTR, None)
    _breakers_at(item, "call")
    try:
        result = yield
    except CapabilityAbsent as exc:  # the unit lacks the hardware: a hole, not a broken lab
        if recorder is not None:
            recorder.check()  # what was already found failing stands
        pytest.skip(f"not proven: {exc}")
    except InfraError as exc:  # the lab failed part-way: a failure found before it stands
        if recorder is not None and recorder.refused is None and recorder.failures:
            try:
                recorder.check()
            except LimitFailure as failed:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise LimitFailure(f"{failed}\n(then the lab could not go on: {first})") from exc
        raise
    if recorder is not None:
        recorder.check()  # raises LimitFailure naming every failed measurement
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    record = phase_record(item, call, report)
    kind = record.get("error", {}).get("kind")
    if kind == ErrorKind.INFRA:
        report.user_properties.append(("labtest_verdict", BROKEN))
        for raw in record.get("raw", []):
            report.sections.append((f"raw output from {raw['device']}", raw["text"]))
            _attach_raw(raw["device"], raw["text"])
    elif kind == ErrorKind.ASSERTION and call.excinfo and call.excinfo.errisinstance(LimitFailure):
        report.user_properties.append(("labtest_verdict", FAILED))  # a limit missed
    _redact_report(report)
    return report


def phase_record(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> PhaseRecord:
    """The one record of this phase (``report.labtest``), built once: measurements and
    explicit holes of the call, the skip reason, or the error classified once with the
    device's raw output. Other plugins add to it; none reads the test a second time."""
    record: PhaseRecord | None = getattr(report, "labtest", None)
    if record is not None:
        return record
    record = {}
    if report.when == "call":
        recorder: Recorder | None = getattr(item, RECORDER_ATTR, None)
        if recorder is not None:
            record["measurements"] = [m.as_dict() for m in recorder.measurements]
            record["not_proven"] = [n.as_dict() for n in recorder.not_proven_notes]
    if report.skipped:
        record["skip_reason"] = _skip_reason(report)
    elif call.excinfo is not None:
        record["error"] = error_record(call.excinfo.value, call.excinfo.exconly())
        if raw := raw_evidence(call.excinfo.value):
            record["raw"] = raw
    report.labtest = record  # type: ignore[attr-defined]  # travels with the report (xdist)
    return record


def _skip_reason(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"xfail: {report.wasxfail}".rstrip(": ")
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _attach_raw(device: str, raw: str) -> None:
    try:
        import allure

        allure.attach(
            raw,  # redacted in the record
            name=f"raw output ({device})",
            attachment_type=allure.attachment_type.TEXT,
        )
    except Exception:
        pass


def _redact_report(report: pytest.TestReport) -> None:
    if report.longrepr is not None:
        text = str(report.longrepr)
        clean = secrets.redact(text)
        if clean != text:
            report.longrepr = clean
    report.sections = [(k, secrets.redact(v)) for k, v in report.sections]


def _is_broken(report: pytest.TestReport | pytest.CollectReport) -> bool:
    error = (getattr(report, "labtest", None) or {}).get("error") or {}
    return report.failed and error.get("kind") == ErrorKind.INFRA


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    if _is_broken(report):
        if report.when == "call":
            return BROKEN, "B", ("BROKEN", {"yellow": True})
        return "error", "E", ("ERROR (broken infrastructure)", {"red": True})
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    broken = terminalreporter.stats.get(BROKEN, [])
    if broken:
        terminalreporter.section("labtest: broken infrastructure (not product failures)")
        for rep in broken:
            terminalreporter.write_sep("_", f"BROKEN {rep.nodeid}")
            terminalreporter.write_line(rep.longreprtext)
            for title, body in rep.sections:
                if title.startswith("raw output"):
                    terminalreporter.write_sep("-", title)
                    terminalreporter.write_line(body)
        terminalreporter.write_sep("-", "summary")
        for rep in broken:
            terminalreporter.write_line(f"BROKEN {rep.nodeid}: {_crash_line(rep)}")


def _crash_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.splitlines()[0] if text else ""
