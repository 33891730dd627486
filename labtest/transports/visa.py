"""VISA transport: SCPI instruments through pyvisa (the ``@py`` backend by default).

Rules this module enforces, each learned the hard way (stack probe, section 3):

- terminations are always explicit; pyvisa's defaults (no read termination,
  ``\\r\\n`` on write) turn every query into a timeout;
- after a setting command the SCPI error queue is read, because an instrument
  never answers a bad command, it only queues an error;
- any transport error closes the session and the next call reopens it, so a
  late reply to a timed-out query can never be taken for the next answer;
- an instrument that closes its TCP connection is reported at once: pyvisa-py
  would treat the end of stream as "no data yet" and spin until the timeout.

Every pyvisa failure becomes a typed error that names the device.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import socket
import threading
from collections.abc import Callable
from typing import Any

import pyvisa
from pyvisa.constants import StatusCode
from pyvisa.errors import VisaIOError

from labtest.errors import (
    ConnectionRefused,
    InstrumentError,
    ProtocolError,
    TransportError,
    TransportTimeout,
)
from labtest.testbed.model import VisaSettings

log = logging.getLogger("labtest.transport.visa")

#: called with (command, reply) for every exchange on the wire; reply is None for a write
Recorder = Callable[[str, str | None], None]

ERROR_QUERY = "SYST:ERR?"
_ERROR_REPLY = re.compile(r'^\s*(?P<code>[+-]?\d+)\s*,\s*"?(?P<message>.*?)"?\s*$')
_NOT_FOUND = {StatusCode.error_resource_not_found, StatusCode.error_invalid_resource_name}


class ScpiInstrumentError(InstrumentError):
    """The instrument queued errors after a command; ``code`` and ``instrument_message``
    are the first one, ``errors`` all of them."""

    def __init__(
        self, device: str, command: str, errors: list[tuple[int, str]], drained: bool = True
    ) -> None:
        self.command = command
        self.errors = errors
        self.code, self.instrument_message = errors[0]
        listing = "; ".join(f'{code},"{message}"' for code, message in errors)
        more = "" if drained else f" (queue not empty after {len(errors)} reads)"
        message = f"after {command!r} the instrument reported {listing}{more}"
        super().__init__(device, message, raw=listing)


def parse_error_reply(reply: str) -> tuple[int, str] | None:
    """``'-222,"Data out of range"'`` -> ``(-222, "Data out of range")``; None if malformed."""
    match = _ERROR_REPLY.match(reply)
    return (int(match["code"]), match["message"]) if match else None


class VisaTransport:
    """One instrument session, opened lazily, safe to share between threads."""

    def __init__(
        self,
        device_name: str,
        settings: VisaSettings,
        *,
        recorder: Recorder | None = None,
        max_error_reads: int = 32,
    ) -> None:
        self.device = device_name
        self.settings = settings
        self.recorder = recorder
        self.max_error_reads = max_error_reads
        self._inst: Any = None
        self._lock = threading.RLock()

    # --- session ----------------------------------------------------------------

    def open(self) -> VisaTransport:
        with self._lock:
            self._session()
        return self

    def close(self) -> None:
        """Close this session only: the ResourceManager is shared per backend, so it stays."""
        with self._lock:
            inst, self._inst = self._inst, None
            if inst is not None:
                try:
                    inst.close()
                except Exception as exc:  # closing a broken session must not mask the cause
                    log.debug("[%s] close: %s", self.device, exc)

    def __enter__(self) -> VisaTransport:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- commands -----------------------------------------------------------------

    def write(self, command: str) -> None:
        """Send a command; if it is a setting (no ``?``) and ``check_errors``, read the queue."""
        with self._lock:
            self._call(command, None, lambda inst: inst.write(command))
            if self.settings.check_errors and "?" not in command:
                self.check_errors(command)

    def query(self, command: str, timeout_s: float | None = None) -> str:
        with self._lock:
            reply: str = self._call(command, timeout_s, lambda inst: inst.query(command))
            return reply.strip()

    def query_float(self, command: str, timeout_s: float | None = None) -> float:
        reply = self.query(command, timeout_s)
        try:
            return float(reply)
        except ValueError:
            raise ProtocolError(
                self.device, f"{command!r}: expected a number, got {reply!r}", raw=reply
            ) from None

    def query_ascii_values(
        self, command: str, timeout_s: float | None = None, separator: str = ","
    ) -> list[float]:
        reply = self.query(command, timeout_s)
        try:
            return [float(v) for v in reply.split(separator) if v.strip()]
        except ValueError:
            raise ProtocolError(
                self.device, f"{command!r}: expected {separator!r}-separated numbers", raw=reply
            ) from None

    def read_error_queue(self) -> tuple[list[tuple[int, str]], bool]:
        """Drain the queue (bounded): the errors found and whether ``0,...`` was reached."""
        errors: list[tuple[int, str]] = []
        with self._lock:
            for _ in range(self.max_error_reads):
                reply = self.query(ERROR_QUERY)
                entry = parse_error_reply(reply)
                if entry is None:
                    raise ProtocolError(
                        self.device,
                        f"{ERROR_QUERY} answered {reply!r}, expected 'code,\"text\"'",
                        raw=reply,
                    )
                if entry[0] == 0:
                    return errors, True
                errors.append(entry)
        return errors, False

    def check_errors(self, command: str = "") -> None:
        """Raise ``ScpiInstrumentError`` if the instrument queued any error."""
        errors, drained = self.read_error_queue()
        if errors:
            raise ScpiInstrumentError(self.device, command, errors, drained)

    # --- internals ------------------------------------------------------------------

    def _session(self) -> Any:
        if self._inst is not None:
            return self._inst
        s = self.settings
        timeout_ms = round(s.timeout_s * 1000)
        try:
            manager = pyvisa.ResourceManager(s.backend)
            inst = manager.open_resource(
                s.resource,
                read_termination=s.read_termination,
                write_termination=s.write_termination,
                timeout=timeout_ms,
                open_timeout=timeout_ms,
            )
        except Exception as exc:
            raise self._typed(exc, "open") from exc
        refused = _socket_error(inst)
        if refused:
            inst.close()
            reason = os.strerror(refused)
            raise ConnectionRefused(self.device, f"{s.resource}: cannot connect: {reason}")
        _nodelay(inst)
        _end_of_stream_raises(inst)
        log.debug("[%s] opened %s (%s)", self.device, s.resource, s.backend)
        self._inst = inst
        return inst

    def _call(self, command: str, timeout_s: float | None, action: Callable[[Any], Any]) -> Any:
        inst = self._session()
        if _peer_closed(inst):  # the instrument dropped an idle session: start a fresh one
            log.info("[%s] instrument closed the session; reconnecting", self.device)
            self.close()
            inst = self._session()
        if timeout_s is not None:
            inst.timeout = round(timeout_s * 1000)
        try:
            reply = action(inst)
        except Exception as exc:
            closed = _peer_closed(inst)
            self.close()
            if closed:
                message = f"{self.settings.resource}: {command!r}: instrument closed the connection"
                raise ProtocolError(self.device, message, raw=str(exc)) from exc
            raise self._typed(exc, command, timeout_s) from exc
        finally:
            if timeout_s is not None and self._inst is inst:
                inst.timeout = round(self.settings.timeout_s * 1000)
        text = reply.strip() if isinstance(reply, str) else None
        log.debug("[%s] %s -> %r", self.device, command, text)
        if self.recorder is not None:
            self.recorder(command, text)
        return reply

    def _typed(
        self, exc: Exception, command: str, timeout_s: float | None = None
    ) -> TransportError:
        """Map whatever pyvisa or its backend raised to a typed error naming the device."""
        where = f"{self.settings.resource}: {command!r}"
        timeout = timeout_s if timeout_s is not None else self.settings.timeout_s
        text = str(exc)
        if isinstance(exc, VisaIOError):
            if exc.error_code == StatusCode.error_timeout:
                return TransportTimeout(self.device, f"{where}: no reply within {timeout:g} s")
            if exc.error_code in _NOT_FOUND:
                return ConnectionRefused(self.device, f"{where}: {exc.description}", raw=text)
            if exc.error_code == StatusCode.error_connection_lost:
                return ProtocolError(self.device, f"{where}: connection lost", raw=text)
            return ProtocolError(self.device, f"{where}: {exc.abbreviation}", raw=text)
        if isinstance(exc, ConnectionRefusedError):
            return ConnectionRefused(self.device, f"{where}: connection refused", raw=text)
        if isinstance(exc, TimeoutError):
            return TransportTimeout(self.device, f"{where}: no reply within {timeout:g} s")
        if isinstance(exc, OSError):  # reset, broken pipe: the peer went away mid-command
            return ProtocolError(self.device, f"{where}: {exc.strerror or text}", raw=text)
        if text.startswith("could not connect"):  # pyvisa-py raises a bare Exception on open
            if "timeout" in text:
                return TransportTimeout(self.device, f"{where}: no connection within {timeout:g} s")
            return ConnectionRefused(self.device, f"{where}: {text}", raw=text)
        return ProtocolError(self.device, f"{where}: {type(exc).__name__}: {text}", raw=text)


def _raw_socket(inst: Any) -> socket.socket | None:
    """The TCP socket under a pyvisa-py TCPIP SOCKET session; None for anything else."""
    sessions = getattr(inst.visalib, "sessions", {})
    sock = getattr(sessions.get(inst.session), "interface", None)
    return sock if isinstance(sock, socket.socket) else None


def _socket_error(inst: Any) -> int:
    """The pending socket error of the session, 0 if none (or not a raw socket).

    pyvisa-py connects without blocking and reports success even when the
    peer refused; the refusal would only surface at the first write. Reading
    ``SO_ERROR`` here makes a closed port fail at open, where it belongs.
    """
    sock = _raw_socket(inst)
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if sock else 0


def _peer_closed(inst: Any) -> bool:
    """True if the instrument has closed the TCP connection (EOF is waiting to be read).

    pyvisa-py spins until its timeout on EOF and then reports a timeout; this
    lets the transport say what really happened, and reconnect before a call
    instead of wasting a timeout on a dead session.
    """
    sock = _raw_socket(inst)
    if sock is None:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class _EofRaisingSocket(socket.socket):
    """A socket whose plain ``recv`` raises on end of stream instead of returning b''."""

    __slots__ = ()

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = super().recv(bufsize, flags)
        if not data and bufsize > 0 and not flags:
            raise ConnectionResetError(errno.ECONNRESET, "the instrument closed the connection")
        return data


def _end_of_stream_raises(inst: Any) -> None:
    """Make a closed connection fail the read at once (pyvisa-py waits out the timeout).

    pyvisa-py's TCPIP SOCKET read loops on ``select`` + ``recv`` and takes an
    empty ``recv`` for "nothing yet"; after the peer's FIN that spins until the
    timeout and is reported as one. Switching the socket's class (same layout,
    one method) keeps every other use of the socket untouched.
    """
    sock = _raw_socket(inst)
    if sock is not None and type(sock) is socket.socket:
        sock.__class__ = _EofRaisingSocket


def _nodelay(inst: Any) -> None:
    """TCP_NODELAY on raw sockets: without it each setting's SYST:ERR? check waits
    ~40 ms for a delayed ACK (measured 45 ms vs 1 ms per setting). The VISA spec
    makes NODELAY the default; pyvisa-py leaves it off."""
    if not str(getattr(inst, "resource_name", "")).upper().endswith("::SOCKET"):
        return
    with contextlib.suppress(Exception):  # a backend without the attribute keeps its default
        inst.set_visa_attribute(pyvisa.constants.VI_ATTR_TCPIP_NODELAY, True)
