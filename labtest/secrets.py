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


# --- credentials written in place: URLs and connection strings ------------------------
#
# A password can reach a message without ever being registered: a database URL typed
# on the command line or in $LABTEST_DB, a libpq connection string, an environment
# dump. These forms are masked wherever they appear, in every encoding redact() sees:
#   scheme://user:PASSWORD@host            (URL userinfo, any scheme)
#   ...?password=X&sslpassword=X           (URL query)
#   password=X host=Y, password='a b'      (libpq key=value; PGPASSWORD=X; --password=X)
# A key is password-like when it ends in password, passwd, passphrase, pwd, pass,
# secret, token, api_key, secret_key, private_key or auth_key (``sslpassword``,
# ``client_secret`` and ``access_token`` too; ``passfile``, a path, is not a secret).
# The patterns start at a literal (``://``, a key word) and never nest quantifiers:
# scanning a megabyte of evidence stays linear.

_USERINFO = r"(?P<head>://[^\s/?#@:]*:)(?P<value>[^\s/?#@]+)(?=@)"
_KEYWORDS = (
    r"(?:secret[_-]?key|priv(?:ate)?[_-]?key|auth[_-]?key|api[_-]?key|passphrase|password"
    r"|passwd|secret|token|pwd|pass)"
)
_KEY_VALUE = (
    rf"(?P<head>{_KEYWORDS}[ \t]*=[ \t]*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&]+)"
)
_CREDENTIALS = [re.compile(_USERINFO), re.compile(_KEY_VALUE, re.IGNORECASE)]
_CREDENTIALS_B = [re.compile(p.encode(), re.IGNORECASE) for p in (_USERINFO, _KEY_VALUE)]


def _mask(match: re.Match[str]) -> str:
    return match.group("head") + MASK


def _mask_b(match: re.Match[bytes]) -> bytes:
    return match.group("head") + MASK.encode()


_HINTS = ("pass", "pwd", "secret", "token", "key")


def _worth(text: str, at: str, eq: str) -> tuple[bool, bool]:
    """Cheap tests first: (a URL with userinfo may be there, a key=value may be there)."""
    userinfo = "://" in text and at in text
    return userinfo, eq in text and any(h in text.lower() for h in _HINTS)


def mask_credentials(text: str) -> str:
    """``text`` with the password of every URL and connection string in it masked."""
    for pattern, wanted in zip(_CREDENTIALS, _worth(text, "@", "="), strict=True):
        if wanted:
            text = pattern.sub(_mask, text)
    return text


def credentials_in(text: str) -> list[str]:
    """The password-like values written in ``text`` (quotes removed, %-escapes decoded)."""
    from urllib.parse import unquote

    found = []
    for pattern in _CREDENTIALS:
        for match in pattern.finditer(text):
            value = match.group("value")
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            found += [value, unquote(value)]
    return found


def register_credentials(text: str) -> None:
    """Register the passwords written in a URL or connection string (:func:`credentials_in`),
    so that a driver's error echoing them (``missing "=" after "..."``) is scrubbed too."""
    for value in credentials_in(text):
        register(value)


def redact(text: str) -> str:
    """``text`` with every known secret, and every password written in a URL or a
    connection string (:func:`mask_credentials`), replaced by :data:`MASK`."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return mask_credentials(text)


def redact_bytes(data: bytes) -> bytes:
    """Bytes as written to a file: scrub their UTF-8 text (binary data passes unchanged)."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        raw = secret.encode()
        if raw in data:
            data = data.replace(raw, MASK.encode())
    userinfo = b"://" in data and b"@" in data
    key_value = b"=" in data and any(h.encode() in data.lower() for h in _HINTS)
    for pattern, wanted in zip(_CREDENTIALS_B, (userinfo, key_value), strict=True):
        if wanted:
            data = pattern.sub(_mask_b, data)
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
