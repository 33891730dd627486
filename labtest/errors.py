"""Typed errors.

Two families matter to a verdict: ``InfraError`` means the lab could not be
asked (the result is *broken*), ``LimitFailure`` means the product answered and
missed a limit (the result is *failed*). Nothing else may decide a verdict.
"""

from __future__ import annotations


class LabtestError(Exception):
    """Base of every error labtest raises on purpose."""


# --- configuration ---------------------------------------------------------


class ConfigError(LabtestError):
    """A testbed, limits or station file is wrong; carries every problem found."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{path}: {len(problems)} error(s)\n{lines}")


class UndeclaredLimit(ConfigError):
    """A test recorded under a limit key its ``@pytest.mark.judges`` does not declare (or
    recorded without the marker): the test is broken, never silently judged."""

    def __init__(self, test: str, key: str | None, declared: tuple[str, ...] | None) -> None:
        self.test = test
        self.key = key
        what = f"limit key {key!r}" if key else "a measurement without a limit key"
        if declared is None:
            why = f"records {what} but carries no @pytest.mark.judges(...) marker"
        else:
            why = f"records {what} it does not declare in @pytest.mark.judges{declared!r}"
        super().__init__(test, [why])


class SecretError(LabtestError):
    """A secret reference could not be resolved (never carries the value)."""


# --- infrastructure (broken, not failed) ------------------------------------


class InfraError(LabtestError):
    """The device or instrument could not be reached or understood.

    ``raw`` keeps what the device actually sent, so a parse failure can be
    diagnosed from the report without rerunning the lab.
    """

    def __init__(self, device: str, message: str, raw: str | None = None) -> None:
        self.device = device
        self.raw = raw
        super().__init__(f"[{device}] {message}")


class TransportError(InfraError):
    """Base for transport-level failures."""


class ConnectionRefused(TransportError):
    pass


class AuthFailed(TransportError):
    pass


class HostKeyUnknown(TransportError):
    pass


class HostKeyMismatch(TransportError):
    pass


class HostKeyRevoked(TransportError):
    """The host presented a key that known_hosts marks ``@revoked``."""


class LegacyAlgorithms(TransportError):
    """The peer offers only algorithms (e.g. SHA-1 key exchange) we refuse."""


class TransportTimeout(TransportError):
    pass


class ProtocolError(TransportError):
    """The peer broke the protocol: closed mid-command, garbage, bad reply."""


class DeviceDown(TransportError):
    """The device's circuit breaker is open (``labtest.transports.breaker``): an earlier
    transport failure, confirmed by a probe, marked it down, so this attempt fails at once
    instead of waiting out a timeout. ``first`` is that failure; the message cites it.
    A TransportError, so a test it breaks counts as the device being unreachable."""

    def __init__(
        self, device: str, message: str, raw: str | None = None, *,
        first: TransportError | None = None,
    ) -> None:
        self.first = first
        super().__init__(device, message, raw)


class InstrumentError(InfraError):
    """An instrument reported an error in its SCPI error queue."""


class ParseError(InfraError):
    """Device output did not match what the parser understands.

    ``command``, ``line`` (1-based, in the text the parser was given) and
    ``expected`` locate the refusal, so an engineer can find the spot in a
    capture without rereading the parser.
    """

    def __init__(
        self,
        device: str,
        message: str,
        raw: str | None = None,
        *,
        command: str | None = None,
        line: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.command = command
        self.line = line
        self.expected = expected
        where = f"line {line}: " if line is not None and f"line {line}" not in message else ""
        wanted = f" (expected {expected})" if expected and expected not in message else ""
        super().__init__(device, f"{where}{message}{wanted}", raw)


# --- verdicts ---------------------------------------------------------------


class LimitFailure(AssertionError, LabtestError):
    """One or more measurements missed their limits (a product failure)."""


# --- device refused a command (appended for the switch drivers) -------------


class CommandFailed(InfraError):
    """The device ran the command and reported an error (non-zero exit, ``% ...`` line)."""


class CommandNotSupported(CommandFailed):
    """The device does not know the command (older release, other platform)."""


class PermissionDenied(CommandFailed):
    """The account may not run the command (role, sudo, privilege level)."""


class CapabilityAbsent(CommandNotSupported):
    """The unit lacks the hardware the command reads (no RDMA device, no readable module):
    the check is *not proven* there, with this reason, rather than the lab broken."""


class ServiceDown(CommandFailed):
    """The device answered that a service the command needs is not running (FRR's vtysh:
    "bgpd is not running"): its own fault, a product failure located at the device, never
    broken infrastructure (the lab asked and was told). ``service`` is the one named."""

    def __init__(self, device: str, message: str, raw: str | None = None, *,
                 service: str) -> None:
        self.service = service
        super().__init__(device, message, raw)


class DataplaneFailed(CommandFailed):
    """The tool ran and the data plane failed under it (perftest's RDMA completion error: the
    fabric lost the QP's packets): a product failure of that run, not broken infrastructure.
    ``evidence`` is the tool's own line that says so."""

    def __init__(self, device: str, message: str, raw: str | None = None, *, evidence: str) -> None:
        self.evidence = evidence
        super().__init__(device, message, raw)


# --- the emulated lab --------------------------------------------------------


class ModelStalled(InfraError):
    """The emulated lab's model did not keep up: one advance outlived its wall budget (every
    thread's stack was written to the file the message names). The lab could not be asked:
    the test that waited on it is broken, not failed; the model skipped the span and goes on.
    """
