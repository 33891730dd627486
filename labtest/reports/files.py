"""Small file helpers: atomic writes (a crash never leaves half a result) and hashes."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

from labtest import secrets

CHUNK_BYTES = 1 << 20


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` through a temporary sibling and a rename; raises ``OSError``.

    Known secrets are scrubbed first (:mod:`labtest.secrets`): every report file
    goes through here.
    """
    data = secrets.redact(data) if isinstance(data, str) else secrets.redact_bytes(data)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()
