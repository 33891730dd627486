"""Secret references and redaction.

Testbed files hold ``${env:NAME}`` (``${env:NAME:-default}`` for lab-only
defaults such as an emulator's password) or ``${file:path}``, never the secret. Every
value resolved here is remembered so that logs and reports can be scrubbed of
it, whatever path it took to get there.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path

from labtest.errors import SecretError

REFERENCE = re.compile(r"^\$\{(env|file):([^}:]+)(?::-([^}]*))?\}$")
MASK = "********"

_known: set[str] = set()
_lock = threading.Lock()


def is_reference(text: str) -> bool:
    return bool(REFERENCE.match(text.strip()))


def resolve(text: str, base_dir: Path) -> str:
    """Resolve one reference; relative file paths are relative to the testbed file."""
    match = REFERENCE.match(text.strip())
    if match is None:
        register(text)
        return text
    kind, name, default = match.groups()
    if kind == "env":
        if name not in os.environ and default is None:
            raise SecretError(f"environment variable {name!r} is not set")
        value = os.environ.get(name, default or "")
    else:
        path = Path(name).expanduser()
        if not path.is_absolute():
            path = base_dir / path
        try:
            value = path.read_text().rstrip("\r\n")
        except OSError as exc:
            raise SecretError(f"cannot read secret file {str(path)!r}: {exc.strerror}") from None
    register(value)
    return value


def register(value: str) -> None:
    """Remember a secret so that :func:`redact` scrubs it."""
    if len(value) >= 3:
        with _lock:
            _known.add(value)


def redact(text: str) -> str:
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class RedactingFilter(logging.Filter):
    """Scrub known secrets from every record before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def install_log_redaction() -> None:
    """Attach the filter to the root logger's handlers and to new records."""
    flt = RedactingFilter()
    root = logging.getLogger()
    for handler in root.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(flt)
    factory = logging.getLogRecordFactory()
    if getattr(factory, "_labtest_redacting", False):
        return

    def redacting_factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        flt.filter(record)
        return record

    redacting_factory._labtest_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(redacting_factory)
