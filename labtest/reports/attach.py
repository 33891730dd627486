"""Evidence for the running test's Allure result (no-ops outside an Allure run).

Raw device output is redacted first: a password echoed by a device must not
end up in a report.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import allure

from labtest import secrets
from labtest.parsing import to_jsonable


@contextmanager
def plan_step(step_id: str, title: str) -> Iterator[None]:
    """One Allure step per test-plan step; measurements taken inside nest under it."""
    with allure.step(f"{step_id} {title}"):
        yield


def attach_raw(device: str, command: str, output: str) -> None:
    """The text a device returned for ``command``: the evidence behind a measurement."""
    allure.attach(
        secrets.redact(output),
        name=f"raw: {device}: {command}",
        attachment_type=allure.attachment_type.TEXT,
    )


def attach_png(name: str, png: bytes) -> None:
    """A plot from :mod:`labtest.reports.plots`."""
    allure.attach(png, name=name, attachment_type=allure.attachment_type.PNG)


def attach_json(name: str, record: Any) -> None:
    """A parsed record (dataclass, pydantic model, dict) as JSON."""
    body = json.dumps(to_jsonable(record), indent=2, default=str)
    allure.attach(secrets.redact(body), name=name, attachment_type=allure.attachment_type.JSON)
