"""labtest's reporting plugin (``pytest11`` entry point ``labtest_reports``).

Next to the core plugin (measurements, failed vs broken) it makes every lab run
leave evidence:

- a results directory: ``--alluredir``, or for a lab run (``--testbed``) that
  names none, ``<rootdir>/reports/allure-results`` (emptied at the start so it
  only ever holds one run); checked writable before any test runs;
- Allure labels: epic = suite family, feature/story = test-plan IDs, testbed,
  and after each test the devices, ports, DUT serials and optic part numbers
  its measurements name;
- with ``--emulate``, a failure of a test marked ``emulation_deviation`` is
  raised as :class:`EmulationDeviation` (its own Allure category);
- at the end, ``labtest-results.json``, ``environment.properties`` and
  ``categories.json`` in the results directory. Outcomes travel on the test
  reports, so this works under pytest-xdist (the controller writes).

A results file that cannot be written fails the run (exit status 3) and says why.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import labtest
from labtest import secrets
from labtest.errors import InfraError
from labtest.outcome import MESSAGE_MAX_LINES, EmulationDeviation, PhaseRecord, qualified_name
from labtest.plugin import loaded_testbed, phase_record
from labtest.reports import allure_env, inventory, provenance, results, scrub
from labtest.testbed import Testbed

DEFAULT_RESULTS_DIR = Path("reports") / "allure-results"
ALLURE_LABEL_MARK = "allure_label"  # allure_pytest.utils.ALLURE_LABEL_MARK
__all__ = ["EmulationDeviation"]  # raised here; defined with the one classification


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("labtest", "labtest lab testing")
    group.addoption(
        "--no-inventory",
        action="store_true",
        help="do not read device facts and optics for the sign-off inventory",
    )


@pytest.hookimpl(tryfirst=True)  # before allure-pytest reads --alluredir
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "plan(*ids, feature=None): test-plan IDs this test covers (Allure stories)"
    )
    config.addinivalue_line(
        "markers", "suite(name): suite family (Allure epic); default: the test file's folder"
    )
    config.addinivalue_line(
        "markers",
        "emulation_deviation(reason): the emulated lab does not model what this test checks; "
        "with --emulate a failure is an emulation deviation, not a product failure",
    )
    scrub.install_allure()  # allure-pytest's files are scrubbed of secrets as they are written
    run = _Run(config=config, results_dir=_results_dir(config))
    config.stash[_key] = run
    if run.active:
        config.pluginmanager.register(run, "labtest_reports_run")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _results_dir(config: pytest.Config) -> Path | None:
    if not hasattr(config.option, "allure_report_dir") or config.option.collectonly:
        return None  # allure-pytest disabled, or nothing will run
    given = config.option.allure_report_dir
    if given:
        path = Path(given).absolute()
    elif config.getoption("testbed", None):
        path = config.rootpath / DEFAULT_RESULTS_DIR
        config.option.allure_report_dir = str(path)
    else:
        return None
    if not _is_worker(config):  # workers write into the controller's directory
        _prepare(path, empty=not given)
    return path


def _prepare(path: Path, empty: bool) -> None:
    """Create (and for the default directory, empty) ``path``; prove it is writable."""
    probe = path / ".labtest-write-probe"
    try:
        if empty and path.is_dir():
            shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise pytest.UsageError(
            f"labtest: cannot write results to {path}: {exc.strerror or exc}"
        ) from None


@dataclass(eq=False)  # identity hash: pluggy keeps plugins in dicts
class _Run:
    """What this process knows about the run; the controller's copy gets written."""

    config: pytest.Config
    results_dir: Path | None
    started_utc: str = field(default_factory=provenance.utc_now)
    tests: dict[str, dict[str, Any]] = field(default_factory=dict)
    device_inventory: inventory.Inventory = field(default_factory=dict)
    inventory_error: str | None = None
    unshipped: dict[str, Any] | None = None  # inventory read here, not yet on a report
    write_error: str | None = None
    verdict: dict[str, Any] | None = None  # the run's verdict record, once written
    suite_dirs: dict[str, Path] = field(default_factory=dict)  # family -> folder (requirements)

    @property
    def active(self) -> bool:
        return self.results_dir is not None

    def testbed(self) -> Testbed | None:
        """The testbed as the core plugin loaded it from its file (before any emulation)."""
        return loaded_testbed(self.config)

    # --- hooks (this object is registered as a plugin when active) ---------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        info: PhaseRecord = getattr(report, "labtest", None) or PhaseRecord()
        inv = info.get("inventory")
        if inv is not None:
            self.device_inventory = inv.get("devices", self.device_inventory)
            self.inventory_error = inv.get("error", self.inventory_error)
        test = self.tests.setdefault(report.nodeid, results.new_test(report.nodeid))
        test.update(info.get("test", {}))
        test["duration_s"] = round(test["duration_s"] + report.duration, 6)
        test["measurements"].extend(info.get("measurements", []))
        test["not_proven"].extend(info.get("not_proven", []))
        if info.get("suite_dir"):
            self.suite_dirs.setdefault(test["suite"], Path(info["suite_dir"]))
        for name, values in info.get("labels", {}).items():
            test["labels"][name] = list(dict.fromkeys(test["labels"].get(name, []) + values))
        results.apply_phase(test, report.outcome, info)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that cannot be collected verified nothing: record it as broken."""
        if not report.failed:
            return
        test = self.tests.setdefault(report.nodeid, results.new_test(report.nodeid))
        path = Path(report.nodeid.split("::")[0])
        test.update(name=f"collecting {report.nodeid}", suite=path.parent.name or path.stem)
        text = secrets.redact(report.longreprtext).strip().splitlines()
        error = {"kind": "other", "message": "\n".join(text[-MESSAGE_MAX_LINES:])}
        results.apply_phase(test, "failed", {"error": error})

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if _is_worker(self.config):
            return
        try:
            _write(self, session, int(exitstatus))
        except OSError as exc:
            self.write_error = f"cannot write results to {self.results_dir}: {exc}"
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            if self.config.pluginmanager.get_plugin("terminalreporter") is None:
                print(f"labtest: {self.write_error}", file=sys.stderr)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_worker(self.config):
            return
        if self.write_error:
            terminalreporter.section("labtest: results NOT written", red=True, bold=True)
            terminalreporter.write_line(self.write_error, red=True)
            return
        terminalreporter.write_line(
            f"labtest: results in {self.results_dir} "
            f"(sign-off: labtest report {self.results_dir})"
        )
        if self.verdict is not None:  # pytest's own summary knows nothing of coverage
            colour = {"PASS": "green", "INCOMPLETE": "yellow", "FAIL": "red"}
            verdict = self.verdict["verdict"]
            terminalreporter.write_line(
                f"labtest verdict: {verdict}: {self.verdict.get('headline', '')}",
                **{colour.get(verdict, "red"): True, "bold": True},
            )


_key = pytest.StashKey[_Run]()


def _run(config: pytest.Config) -> _Run | None:
    run = config.stash.get(_key, None)
    return run if run is not None and run.active else None


# --- static labels -------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scrub.redact_item_ids(items)  # a secret as a parameter id: test_x[********]
    run = _run(config)
    if run is None:
        return
    tb = run.testbed()
    for item in items:
        labels: dict[str, list[str]] = {results.NODEID_LABEL: [item.nodeid]}
        if not _allure_labels(item, "epic"):
            labels["epic"] = [suite_family(item)]
        ids, feature = plan_ids(item)
        if ids and not _allure_labels(item, "feature"):
            labels["feature"] = sorted({feature or _feature_of(i) for i in ids})
        labels["story"] = [i for i in ids if i not in _allure_labels(item, "story")]
        if tb is not None:
            labels["testbed"] = [tb.name]
        reason = _deviation_reason(item)
        if reason is not None and config.getoption("emulate", False):
            labels["emulation_deviation"] = [reason]
        for name, values in labels.items():
            if values:
                item.add_marker(getattr(pytest.mark, ALLURE_LABEL_MARK)(*values, label_type=name))


def _allure_labels(item: pytest.Item, label: str) -> list[str]:
    return [
        str(v)
        for m in item.iter_markers(ALLURE_LABEL_MARK)
        if m.kwargs.get("label_type") == label
        for v in m.args
    ]


def suite_family(item: pytest.Item) -> str:
    """``suite`` marker, else an Allure epic, else the folder of the test file."""
    mark = item.get_closest_marker("suite")
    if mark is not None and mark.args:
        return str(mark.args[0])
    epics = _allure_labels(item, "epic")
    if epics:
        return epics[0]
    parent = item.path.parent
    return item.path.stem if parent == item.config.rootpath else parent.name


def plan_ids(item: pytest.Item) -> tuple[list[str], str | None]:
    """Plan IDs from ``plan`` markers and Allure stories, and an explicit feature."""
    ids: list[str] = []
    feature = None
    for mark in item.iter_markers("plan"):
        ids.extend(str(a) for a in mark.args)
        feature = feature or mark.kwargs.get("feature")
    ids.extend(_allure_labels(item, "story"))
    return list(dict.fromkeys(ids)), feature


def _feature_of(plan_id: str) -> str:
    """``OPT-2.1`` belongs to feature ``OPT-2``; an ID without a dot is its own feature."""
    return plan_id.rsplit(".", 1)[0]


def _deviation_reason(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("emulation_deviation")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("reason", "emulation deviation"))


# --- inventory -------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _labtest_inventory(request: pytest.FixtureRequest) -> Iterator[None]:
    """Read device facts and optics once, on one process, for the sign-off."""
    config = request.config
    run = _run(config)
    worker = getattr(config, "workerinput", {}).get("workerid", "gw0")
    wanted = run is not None and worker == "gw0" and not config.getoption("no_inventory")
    if run is not None and wanted and config.getoption("testbed", None):
        try:
            found = inventory.collect(request.getfixturevalue("lab"))
            run.device_inventory, run.unshipped = found, {"devices": found}
        except (Exception, pytest.skip.Exception) as exc:
            run.unshipped = {"error": secrets.redact(f"{type(exc).__name__}: {exc}")}
    yield


# --- emulation deviations ---------------------------------------------------------


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    __tracebackhide__ = True
    try:
        return (yield)
    except (Exception, pytest.fail.Exception) as exc:
        reason = _deviation_reason(item)
        if reason is None or not item.config.getoption("emulate", False):
            raise
        if isinstance(exc, InfraError) and exc.raw:
            _attach_text(f"raw output ({exc.device})", exc.raw)
        name = qualified_name(type(exc))
        raise EmulationDeviation(f"{reason}: {name}: {exc}") from exc


# --- per-test facts, carried on the reports (xdist-safe) -------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Add this plugin's facts (what the test is, inventory, labels) to the core plugin's
    record of the phase; the outcome, measurements and error are the core's."""
    report = yield
    run = _run(item.config)
    if run is None:
        return report
    info = phase_record(item, call, report)
    if report.when == "setup":
        ids, _ = plan_ids(item)
        info["test"] = {
            "name": item.name,
            "suite": suite_family(item),
            "plan_ids": ids,
            "emulation_deviation": _deviation_reason(item),
        }
        info["suite_dir"] = str(item.path.parent)
    if run.unshipped is not None:
        info["inventory"], run.unshipped = run.unshipped, None
    labels = _dynamic_labels(run, info)
    if labels:
        info["labels"] = labels
        _add_allure_labels(labels)
    return report


def _dynamic_labels(run: _Run, info: PhaseRecord) -> dict[str, list[str]]:
    """Devices, ports, DUT serials and optic part numbers this test touched."""
    devices: list[str] = []
    ports: list[str] = []
    for m in info.get("measurements", []):
        dev, port = m["labels"].get("device"), m["labels"].get("port")
        if dev:
            devices.append(dev)
            if port:
                ports.append(f"{dev}:{port}")
    error = info.get("error")
    error_device = error["device"] if error else None
    if error_device:
        devices.append(error_device)
    devices = list(dict.fromkeys(devices))
    serials = [inventory.serial(run.device_inventory.get(d, {})) for d in devices]
    ports = list(dict.fromkeys(ports))
    optics = [inventory.optic_part_number(run.device_inventory, *p.split(":", 1)) for p in ports]
    labels = {
        "device": devices,
        "port": ports,
        "dut_serial": [s for s in dict.fromkeys(serials) if s],
        "optic_pn": [o for o in dict.fromkeys(optics) if o],
    }
    return {k: v for k, v in labels.items() if v}


def _add_allure_labels(labels: dict[str, list[str]]) -> None:
    import allure

    for name, values in labels.items():
        allure.dynamic.label(name, *values)


def _attach_text(name: str, text: str) -> None:
    import allure

    allure.attach(secrets.redact(text), name=name, attachment_type=allure.attachment_type.TEXT)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    error = (getattr(report, "labtest", None) or {}).get("error")
    if report.failed and error and error["kind"] == "deviation" and report.when == "call":
        return "deviation", "D", ("DEVIATION", {"yellow": True})
    return None


# --- writing the results ------------------------------------------------------


def _write(run: _Run, session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    assert run.results_dir is not None
    run.results_dir.mkdir(parents=True, exist_ok=True)
    attachments = results.allure_attachments(run.results_dir)
    for nodeid, test in run.tests.items():
        test["attachments"] = attachments.get(nodeid, [])
    tb = run.testbed()
    limits_path = config.getoption("limits", None) or (tb.limits if tb else None)
    doc: dict[str, Any] = {
        "schema": results.SCHEMA,
        "run": _run_record(run, config, exitstatus),
        "testbed": results.testbed_record(tb) if tb else None,
        "limits": results.limits_record(limits_path) if limits_path else None,
        "inventory": run.device_inventory,
        "inventory_error": run.inventory_error,
        "tests": list(run.tests.values()),
    }
    doc["requirements"], doc["requirements_errors"] = results.requirements_record(run.suite_dirs)
    doc["verdict"] = run.verdict = results.verdict_record(doc)
    results.write(run.results_dir, doc)
    results.write_coverage_results(run.results_dir, doc)
    results.label_consequences(run.results_dir, doc)
    rules = allure_env.categories(EmulationDeviation)
    allure_env.write_categories(run.results_dir, [*results.coverage_categories(), *rules])
    allure_env.write_environment(run.results_dir, environment(doc))


def _run_record(run: _Run, config: pytest.Config, exitstatus: int) -> dict[str, Any]:
    return {
        "started_utc": run.started_utc,
        "finished_utc": provenance.utc_now(),
        "user": provenance.user(),
        "host": provenance.host(),
        "labtest_version": labtest.__version__,
        "git_commit": provenance.git_commit(config.rootpath),
        "labtest_commit": provenance.git_commit(Path(labtest.__file__).parent),
        "python": provenance.python_version(),
        "pytest": pytest.__version__,
        "args": [secrets.redact(str(a)) for a in config.invocation_params.args],
        "rootdir": str(config.rootpath),
        "emulated": bool(config.getoption("emulate", False)),
        "pytest_exit_status": exitstatus,
    }


def environment(doc: dict[str, Any]) -> dict[str, object]:
    """``environment.properties`` for Allure, from the results document."""
    run, tb, limits = doc["run"], doc["testbed"] or {}, doc["limits"] or {}
    verdict = doc.get("verdict") or {}
    by_suite = (verdict.get("coverage") or {}).get("by_suite") or {}
    proven = sum(s["proven"] for s in by_suite.values())
    required = sum(s["required"] for s in by_suite.values())
    props: dict[str, object] = {
        "labtest.verdict": verdict.get("verdict"),
        "coverage": f"{proven}/{required} required cells proven or waived" if by_suite else None,
        **{f"labtest.root_cause.{i}": c["cause"]
           + "".join(f"; costs {x}" for x in c.get("impact") or [])
           for i, c in enumerate(verdict.get("root_causes") or [], 1)},
        "testbed": tb.get("name"),
        "testbed.file": tb.get("file"),
        "testbed.sha256": tb.get("sha256"),
        "emulated": run["emulated"],
        "labtest.version": run["labtest_version"],
        "git.commit": run["git_commit"],
        "limits.profile": limits.get("profile"),
        "limits.sha256": limits.get("sha256"),
        "run.user": run["user"],
        "run.host": run["host"],
        "run.started_utc": run["started_utc"],
        "python": run["python"],
        "pytest": run["pytest"],
    }
    for name, entry in sorted(doc["inventory"].items()):
        os_version = inventory.os_version(entry)
        if os_version:
            props[f"device.{name}.os"] = os_version
        serial = inventory.serial(entry)
        if serial:
            props[f"device.{name}.serial"] = serial
    return props
