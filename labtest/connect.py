"""The one place a driver gets its transports from.

Drivers ask for ``cli(...)``, ``snmp(...)`` or ``visa(...)`` and never learn
whether the answers come from a live device, an emulated one, or a replayed
recording (``replay:`` in the testbed); ``--record DIR`` is applied here too, and so is
the per-device circuit breaker (``labtest.transports.breaker``): while a run installs one,
a device marked down fails every call at once instead of waiting out a timeout.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import Any, Protocol

from labtest.errors import ConfigError, ConnectionRefused, ProtocolError, TransportTimeout
from labtest.testbed.model import Device
from labtest.transports.breaker import PROBE_TIMEOUT_S, Probe, guard
from labtest.transports.ssh import CommandResult

#: what a probe asks: harmless everywhere; any answer, even "invalid input", will do
PROBE_COMMAND = "echo labtest-probe"
#: sysUpTime.0, which every agent has
PROBE_OID = "1.3.6.1.2.1.1.3.0"

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
    transport = SshTransport(
        name,
        device.address,
        device.ssh,
        recorder=recorder.ssh if recorder else None,
        process_group=posix_shell,
    )
    return guard(name, transport, _ssh_probe(name, device))


def probe_of(name: str, device: Device, *, answer_s: float | None = None) -> Probe | None:
    """The liveness probe of the device's management plane, as its breaker probes it (SSH,
    else SNMP, else VISA); None for a replayed device or one with no management plane.
    ``answer_s``: how long its one request may take (default ``PROBE_TIMEOUT_S``; a device
    known to answer slowly gets its own command timeout)."""
    if device.replay is not None:
        return None
    if device.ssh is not None and device.address is not None:
        return _ssh_probe(name, device, answer_s)
    if device.snmp is not None and device.address is not None:
        return _snmp_probe(name, device, answer_s)
    if device.visa is not None:
        return _visa_probe(name, device, answer_s)
    return None


def _answered() -> contextlib.AbstractContextManager[None]:
    """In a probe, a ProtocolError (a refusal, an error-status, a garbled reply) is an
    answer: the device is up, it only did not like the question."""
    return contextlib.suppress(ProtocolError)


def _ssh_probe(name: str, device: Device, answer_s: float | None = None) -> Probe:
    """A TCP connection within PROBE_TIMEOUT_S (no route or no host fails fast), a login
    within the device's own ``timeout_s`` (AAA servers can take seconds to say yes), one
    command within PROBE_TIMEOUT_S (a refusal is an answer)."""

    def probe() -> None:
        from labtest.transports.ssh import SshTransport

        assert device.ssh is not None and device.address is not None
        short = min(device.ssh.timeout_s, PROBE_TIMEOUT_S)
        where = f"{device.address}:{device.ssh.port}"
        try:
            socket.create_connection((device.address, device.ssh.port), timeout=short).close()
        except TimeoutError:
            raise TransportTimeout(name, f"probe: no TCP connection to {where} within "
                                         f"{short:g} s") from None
        except OSError as exc:
            raise ConnectionRefused(name, f"probe: cannot reach {where}: "
                                          f"{exc.strerror or exc}") from None
        settings = device.ssh.model_copy(update={"command_timeout_s": answer_s or short})
        with SshTransport(name, device.address, settings) as transport:
            transport.connect()
            with _answered():
                transport.exec(PROBE_COMMAND)

    return probe


def snmp(name: str, device: Device) -> Any:
    if device.replay is not None:
        return _replay(name, device)
    if device.snmp is None or device.address is None:
        raise ConfigError(name, [f"device {name!r} has no 'snmp' settings and no 'replay' file"])
    from labtest.transports.snmp import SnmpTransport

    transport = SnmpTransport(name, device.address, device.snmp)
    recorder = _recorder(name)
    return guard(
        name,
        _recording_snmp(transport, recorder) if recorder else transport,
        _snmp_probe(name, device),
    )


def _snmp_probe(name: str, device: Device, answer_s: float | None = None) -> Probe:
    """One GET, one try, a short timeout (an error-status is an answer)."""

    def probe() -> None:
        from labtest.transports.snmp import SnmpTransport

        assert device.snmp is not None and device.address is not None
        short = answer_s or min(device.snmp.timeout_s, PROBE_TIMEOUT_S)
        settings = device.snmp.model_copy(update={"timeout_s": short, "retries": 0})
        with SnmpTransport(name, device.address, settings) as transport, _answered():
            transport.get(PROBE_OID, missing_ok=True)

    return probe


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


def visa(name: str, device: Device, *, recorder: Any = None) -> Any:
    """``recorder``: called with (command, reply) for every exchange (visa.Recorder)."""
    if device.visa is None:
        raise ConfigError(name, [f"device {name!r} has no 'visa' settings"])
    from labtest.transports.visa import VisaTransport

    return guard(name, VisaTransport(name, device.visa, recorder=recorder),
                 _visa_probe(name, device))


def _visa_probe(name: str, device: Device, answer_s: float | None = None) -> Probe:
    """A fresh session and ``*IDN?``, with a short timeout (a garbled reply is an answer)."""

    def probe() -> None:
        from labtest.transports.visa import VisaTransport

        assert device.visa is not None
        short = answer_s or min(device.visa.timeout_s, PROBE_TIMEOUT_S)
        settings = device.visa.model_copy(update={"timeout_s": short})
        with VisaTransport(name, settings) as transport, _answered():
            transport.query("*IDN?")

    return probe
