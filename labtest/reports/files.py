"""Small file helpers: atomic writes (a crash never leaves half a result) and hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

from labtest import secrets

CHUNK_BYTES = 1 << 20
#: reports are for reading by the lab (secrets are scrubbed before they are written)
REPORT_MODE = 0o644


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` through a temporary sibling and a rename; raises ``OSError``.

    Known secrets are scrubbed first (:mod:`labtest.secrets`): every report file
    goes through here.
    """
    data = secrets.redact(data) if isinstance(data, str) else secrets.redact_bytes(data)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # a fresh name (O_EXCL: nothing planted is followed or reused), then an explicit mode
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), REPORT_MODE)
            fh.write(raw)
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
