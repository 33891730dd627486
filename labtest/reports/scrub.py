"""Every byte the reports write goes through :mod:`labtest.secrets` first.

labtest's own writers call :func:`labtest.reports.files.write_atomic`, which
scrubs. Two writers are not ours: allure-pytest's file logger (results,
containers, attachments: a test's exception message, its parameters, whatever
it attaches) and pytest itself (node ids in the terminal, JUnit and logs, where
a parameter's value becomes the test's id). :func:`install_allure` makes the
first scrub what it writes; :func:`redact_item_ids` renames the tests.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from labtest import secrets
from labtest.reports.files import write_atomic

_INSTALLED = "_labtest_scrubbing"


def install_allure() -> None:
    """Make allure-pytest's file logger write scrubbed results and attachments."""
    try:
        from allure_commons.logger import AllureFileLogger
    except ImportError:  # allure-pytest not installed: nothing writes Allure files
        return
    if getattr(AllureFileLogger, _INSTALLED, False):
        return
    AllureFileLogger._report_item = _report_item  # type: ignore[method-assign]
    logger: Any = AllureFileLogger  # its writers are wrapped here, on purpose
    logger.report_attached_data = _attached_data(AllureFileLogger.report_attached_data)
    logger.report_attached_file = _attached_file(AllureFileLogger.report_attached_file)
    setattr(AllureFileLogger, _INSTALLED, True)


def _report_item(self: Any, item: Any) -> None:
    """A result, container or globals file, as allure-pytest writes it, scrubbed first."""
    from attr import asdict

    data = asdict(item, filter=lambda _, v: v or v is False)
    name = item.file_pattern.format(prefix=uuid.uuid4())
    indent = 4 if os.environ.get("ALLURE_INDENT_OUTPUT") else None
    write_atomic(Path(self._report_dir) / name, json.dumps(data, indent=indent, ensure_ascii=False))


def _attached_data(original: Any) -> Any:
    @functools.wraps(original)  # keeps allure's hookimpl marker: pluggy must still call it
    def report_attached_data(self: Any, body: Any, file_name: str) -> None:
        clean = secrets.redact(body) if isinstance(body, str) else secrets.redact_bytes(body)
        original(self, clean, file_name)

    return report_attached_data


def _attached_file(original: Any) -> Any:
    @functools.wraps(original)
    def report_attached_file(self: Any, source: Any, file_name: str) -> None:
        write_atomic(Path(self._report_dir) / file_name, Path(source).read_bytes())

    return report_attached_file


def redact_item_ids(items: list[pytest.Item]) -> None:
    """Rename tests whose id carries a secret (``test_x[<password>]``) before anything prints it.

    pytest keeps the id in a private attribute; it is read everywhere after
    collection (terminal, JUnit, Allure, xdist), so renaming it here is enough.
    """
    if not secrets.known():
        return
    for item in items:
        nodeid = secrets.redact(item.nodeid)
        if nodeid != item.nodeid:
            item._nodeid = nodeid
            item.name = secrets.redact(item.name)


def learn_run_secrets(run: dict[str, Any]) -> None:
    """Register the secrets of the run's testbed, when it can still be loaded here.

    ``labtest report`` runs in another process than the tests: without this it
    would only know the secrets it is told, and could not scrub the results of
    an older labtest (or a hand-made attachment) on their way into the evidence.
    A testbed that cannot be loaded (moved, its variables unset) teaches nothing.
    """
    record = run.get("testbed") or {}
    path = record.get("file") if isinstance(record, dict) else None
    if not path or not Path(path).is_file():
        return
    from labtest.testbed import load_testbed

    with contextlib.suppress(Exception):  # best effort: what the run wrote is scrubbed already
        load_testbed(path)
