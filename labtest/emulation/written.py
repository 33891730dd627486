"""The testbed file ``labtest emulate`` writes for a running lab, and its secrets.

The written file is read from wherever the user keeps it, so every path in it is absolute
(the loader already joined each relative path with its source's folder: joining again
doubled the prefix, and a path left relative pointed beside the new file). Its secrets go
to 0600 files in a 0700 ``secrets/`` beside it and are removed when the lab stops: they
name credentials of a lab that no longer exists.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from labtest import safefs
from labtest.testbed.loader import PATH_KEYS

FILE_NAME = "emulated.yaml"
#: (settings section, field) of each device secret a written testbed refers to by file
SECRET_FIELDS = (("ssh", "password"), ("snmp", "community"), ("snmp", "auth_key"),
                 ("snmp", "priv_key"))


class OutError(ValueError):
    """``--out`` names no place a testbed can be written to."""


def out_file(out: Path | None) -> Path | None:
    """``--out`` as a file: an existing folder gets ``emulated.yaml`` inside it, a missing
    one is made (private) when the lab writes; checked before any lab starts, so a path
    that cannot be written costs nothing and writes nothing."""
    if out is None:
        return None
    out = out.expanduser()
    if out.is_dir():
        return out / FILE_NAME
    if out.exists() and not out.is_file():
        raise OutError(f"--out {out}: not a regular file")
    folder = next((p for p in out.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        raise OutError(f"--out {out}: {folder} is not a folder")
    return out


def absolute_paths(node: Any) -> None:
    """Every path-valued key (``PATH_KEYS``) of a dumped testbed made absolute, in place."""
    if isinstance(node, list):
        for item in node:
            absolute_paths(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in PATH_KEYS and isinstance(value, str) and value:
                node[key] = str(Path(value).expanduser().resolve())
            else:
                absolute_paths(value)


class Secrets:
    """The secret files beside one written testbed; ``remove`` takes back what it wrote."""

    def __init__(self, testbed_file: Path) -> None:
        self.folder = testbed_file.parent / "secrets"
        self._made_folder = not self.folder.exists()
        safefs.private_dir(self.folder, 0o700)  # 0700 whatever the umask; never a link
        self.files: list[Path] = []

    def put(self, name: str, value: str) -> str:
        """Write one secret (0600 from its first byte); return its ``${file:...}``."""
        path = self.folder / name
        safefs.create_private(path, (value + "\n").encode(), 0o600)
        self.files.append(path)
        return f"${{file:{path.resolve()}}}"

    def put_all(self, testbed: Any, data: dict[str, Any]) -> None:
        """Every device secret of ``testbed`` (SSH password, SNMP community and keys) into
        its file, its place in the dumped ``data`` replaced by the file's reference."""
        for name, device in testbed.devices.items():
            for section, key in SECRET_FIELDS:
                settings = getattr(device, section)
                secret = getattr(settings, key, None) if settings is not None else None
                if secret is not None:
                    data["devices"][name][section][key] = self.put(
                        f"{name}.{section}.{key}", secret.get_secret_value())

    def remove(self) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)
        self.files.clear()
        if self._made_folder:
            with contextlib.suppress(OSError):  # not empty: someone else's files, kept
                self.folder.rmdir()
