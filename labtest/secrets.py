"""Secret references and redaction.

Testbed files hold ``${env:NAME}`` (``${env:NAME:-default}`` for lab-only
defaults such as an emulator's password) or ``${file:path}``, never the secret. Every
value resolved here is remembered so that logs and reports can be scrubbed of
it, whatever path it took to get there.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

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
    """Remember a secret so that :func:`redact` scrubs it (in every encoding it may be written)."""
    if len(value) >= 3:
        with _lock:
            _known.update(_forms(value))


def _forms(secret: str) -> set[str]:
    """The secret as written raw, in JSON (ASCII or not), and in HTML/XML text or attributes."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    forms |= {html.escape(f, quote=q) for f in set(forms) for q in (True, False)}
    return {f for f in forms if len(f) >= 3}


def redact(text: str) -> str:
    """``text`` with every known secret replaced by :data:`MASK`."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_bytes(data: bytes) -> bytes:
    """Bytes as written to a file: scrub their UTF-8 text (binary data passes unchanged)."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        raw = secret.encode()
        if raw in data:
            data = data.replace(raw, MASK.encode())
    return data


def redact_data(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with every string scrubbed, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact_bytes(value)
    if isinstance(value, dict):
        return {redact_data(k): redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v) for v in value)
    return value


def known() -> bool:
    """Whether any secret is registered (nothing to scrub otherwise)."""
    with _lock:
        return bool(_known)


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
