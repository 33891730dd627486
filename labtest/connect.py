"""The one place a driver gets its transports from.

Drivers ask for ``cli(...)``, ``snmp(...)`` or ``visa(...)`` and never learn
whether the answers come from a live device, an emulated one, or a replayed
recording (``replay:`` in the testbed); ``--record DIR`` is applied here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from labtest.errors import ConfigError
from labtest.testbed.model import Device
from labtest.transports.ssh import CommandResult

_record_dir: Path | None = None


class CommandRunner(Protocol):
    """What a CLI driver needs: run a command, get its output and exit status."""

    def exec(self, command: str, timeout_s: float | None = None) -> CommandResult: ...

    def close(self) -> None: ...


def set_record_dir(path: Path | None) -> None:
    """Record every session opened from now on under ``path`` (None stops).

    A missing directory is created private (0700, or 2770 with the lab group):
    recordings hold device output. An existing one is used as it is.
    """
    global _record_dir
    if path is not None and not path.exists():
        from labtest.safefs import private_dir

        private_dir(path)
    _record_dir = path


def _recorder(name: str) -> Any:
    from labtest.transports.replay import SessionRecorder

    return SessionRecorder(_record_dir / f"{name}.jsonl") if _record_dir is not None else None


def _replay(name: str, device: Device) -> Any:
    from labtest.transports.replay import Replay

    assert device.replay is not None
    return Replay(name, device.replay)


def cli(name: str, device: Device, *, posix_shell: bool = False) -> CommandRunner:
    """``posix_shell``: the device runs commands in a POSIX shell, so a command that
    times out can be killed there with its process group (see transports/ssh.py)."""
    if device.replay is not None:
        return _replay(name, device)
    if device.ssh is None or device.address is None:
        raise ConfigError(name, [f"device {name!r} has no 'ssh' settings and no 'replay' file"])
    from labtest.transports.ssh import SshTransport

    recorder = _recorder(name)
    return SshTransport(
        name,
        device.address,
        device.ssh,
        recorder=recorder.ssh if recorder else None,
        process_group=posix_shell,
    )


def snmp(name: str, device: Device) -> Any:
    if device.replay is not None:
        return _replay(name, device)
    if device.snmp is None or device.address is None:
        raise ConfigError(name, [f"device {name!r} has no 'snmp' settings and no 'replay' file"])
    from labtest.transports.snmp import SnmpTransport

    transport = SnmpTransport(name, device.address, device.snmp)
    recorder = _recorder(name)
    return _recording_snmp(transport, recorder) if recorder else transport


def _recording_snmp_class() -> Any:
    from labtest.transports.replay import RecordingSnmp

    class RecordingSnmpWrites(RecordingSnmp):
        """Also records SETs and table reads (a PDU's outlet commands and status table)."""

        def set(self, oid: str, value: Any) -> Any:
            answer = self.inner.set(oid, value)
            self.recorder.snmp("set", [oid, _plain(value)], _plain(answer))
            return answer

        def table(self, column_oids: Any, max_repetitions: int = 50) -> Any:
            columns = list(column_oids)
            answer = self.inner.table(columns, max_repetitions)
            rows = {k: {c: _plain(v) for c, v in row.items()} for k, row in answer.items()}
            self.recorder.snmp("table", columns, rows)
            return answer

    return RecordingSnmpWrites


def _recording_snmp(transport: Any, recorder: Any) -> Any:
    return _recording_snmp_class()(transport, recorder)


def _plain(value: Any) -> Any:
    """A value the recording's JSON can hold (SMI objects as their text)."""
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def visa(name: str, device: Device) -> Any:
    if device.visa is None:
        raise ConfigError(name, [f"device {name!r} has no 'visa' settings"])
    from labtest.transports.visa import VisaTransport

    return VisaTransport(name, device.visa)
