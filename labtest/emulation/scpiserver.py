"""A SCPI socket server that emulated instruments plug into.

LAN instruments answer SCPI on a raw TCP socket, one newline-terminated
message at a time (port 5025 by convention). This server speaks that framing
on 127.0.0.1, so the VISA transport and the drivers above it cannot tell an
emulated instrument from a real one. The server owns the framing, the IEEE
488.2 common commands and the error queue; what the instrument *does* lives in
a pluggable handler, which reads headers and parameters with the helpers
here (``match_header``, ``split_args``, ``number`` ...). It can also misbehave
on purpose (``silent``, ``slow``, ``drop``) so that instrument timeouts and
dropped sessions can be emulated. A silent server holds ``serving`` from an
unanswered query until its client writes again or closes: the lab's clock keeps
its wall pace while the client waits out its timeout.

The asyncio loop runs in its own thread so that synchronous tests and drivers
can use it; ``start()`` and ``stop()`` are bounded and leave nothing behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Literal, Protocol

from labtest.emulation.listen import START_TIMEOUT_S

log = logging.getLogger("labtest.emulation.scpi")

Mode = Literal["normal", "silent", "slow", "drop"]
MODES: tuple[Mode, ...] = ("normal", "silent", "slow", "drop")

# SCPI-99 standard error codes (SCPI-99 vol. 2, chapter 21) used by emulators.
NO_ERROR = (0, "No error")
UNDEFINED_HEADER = (-113, "Undefined header")
DATA_OUT_OF_RANGE = (-222, "Data out of range")
DEVICE_SPECIFIC_ERROR = (-300, "Device-specific error")
QUEUE_OVERFLOW = (-350, "Queue overflow")
MISSING_PARAMETER = (-109, "Missing parameter")
HEADER_SUFFIX_OUT_OF_RANGE = (-114, "Header suffix out of range")
DATA_TYPE_ERROR = (-104, "Data type error")
ILLEGAL_PARAMETER_VALUE = (-224, "Illegal parameter value")

_SYST_ERR = frozenset({"SYST:ERR?", "SYSTEM:ERROR?", "SYST:ERR:NEXT?", "SYSTEM:ERROR:NEXT?"})
_MAX_LINE_BYTES = 64 * 1024


class ScpiCommandError(Exception):
    """Raised by a handler for a bad command: the server queues it and sends no reply.

    That is what a real instrument does: an erroneous command produces no
    answer, only an entry in the error queue that ``SYST:ERR?`` reports.
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f'{code},"{message}"')
        self.code = code
        self.message = message


class ScpiHandler(Protocol):
    """The instrument behind the socket.

    ``handle`` gets one command (a ``;``-separated part of a message, stripped)
    and returns the reply text, or None when the command has no reply. It
    raises ``ScpiCommandError`` for a bad command. A handler that also has a
    ``reset()`` method gets it called on ``*RST``.
    """

    def handle(self, command: str) -> str | None: ...


class ErrorQueue:
    """The instrument's error queue: first in, first out, bounded.

    On overflow the newest entry is replaced by -350 "Queue overflow", as
    SCPI-99 prescribes. Thread-safe so tests and fault injectors can push.
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._items: collections.deque[tuple[int, str]] = collections.deque()
        self._lock = threading.Lock()

    def push(self, code: int, message: str) -> None:
        with self._lock:
            if len(self._items) >= self._size:
                self._items[-1] = QUEUE_OVERFLOW
            else:
                self._items.append((code, message))

    def pop(self) -> tuple[int, str]:
        with self._lock:
            return self._items.popleft() if self._items else NO_ERROR

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


# --- reading a program message (the server, and the handlers behind it) -------------------

_NODE = re.compile(r"^([A-Za-z*]+)(\d*)$")
_NUMBER = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)$")
_SCALE = {"": 1.0, "DB": 1.0, "DBM": 1.0, "M": 1.0, "MM": 1e-3, "UM": 1e-6, "NM": 1e-9,
          "PM": 1e-12, "S": 1.0, "MS": 1e-3, "US": 1e-6, "NS": 1e-9}


def split_unquoted(text: str, separator: str, quotes: str) -> list[str]:
    """``text`` split on ``separator`` wherever it stands outside a string quoted with one
    of ``quotes`` (the parts as they are, unstripped)."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    for char in text:
        if char in quotes and quote in ("", char):
            quote = "" if quote else char
        if char == separator and not quote:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def split_message(line: str) -> list[str]:
    """Split a program message on ``;`` outside double-quoted strings."""
    return [p.strip() for p in split_unquoted(line, ";", '"') if p.strip()]


def split_args(text: str) -> list[str]:
    """Parameters of one command, split on commas outside single or double quotes."""
    parts = [p.strip() for p in split_unquoted(text, ",", "'\"")]
    return [] if parts == [""] else parts


def _node_pairs(pattern: str, header: str) -> list[tuple[str, str]] | None:
    """(pattern node, header node) pairs; None when the two differ in being a query or in
    their number of nodes. A leading ``:`` is ignored."""
    want, got = pattern.lstrip(":"), header.lstrip(":")
    if want.endswith("?") != got.endswith("?"):
        return None
    want_nodes, got_nodes = want.rstrip("?").split(":"), got.rstrip("?").split(":")
    if len(want_nodes) != len(got_nodes):
        return None
    return list(zip(want_nodes, got_nodes, strict=True))


def _spells(node: str, text: str) -> bool:
    """``text`` is the short (the capitals) or the long form of ``node``, in any case."""
    short = "".join(c for c in node if not c.islower())
    return text.upper() in (short.upper(), node.upper())


def header_matches(pattern: str, header: str) -> bool:
    """True if ``header`` spells ``pattern`` in short or long form, any case.

    ``pattern`` is written the SCPI way, short form in capitals:
    ``header_matches("MEASure:POWer?", "meas:power?")`` is True. A leading
    ``:`` is ignored; optional ``[nodes]`` are not supported.
    """
    pairs = _node_pairs(pattern, header)
    return pairs is not None and all(_spells(node, text) for node, text in pairs)


def match_header(pattern: str, header: str) -> list[int | None] | None:
    """Match ``header`` against a SCPI ``pattern`` allowing numeric node suffixes.

    ``match_header("READ:POWer?", ":READ2:POW?")`` -> ``[2, None]``; None when it
    does not match. Short and long forms are accepted, case-insensitively.
    """
    pairs = _node_pairs(pattern, header)
    if pairs is None:
        return None
    suffixes: list[int | None] = []
    for node, text in pairs:
        found = _NODE.match(text)
        if found is None or not _spells(node, found[1]):
            return None
        suffixes.append(int(found[2]) if found[2] else None)
    return suffixes


def unquote(text: str) -> str:
    return text.strip().strip("'\"")


def number(text: str) -> float:
    """A SCPI numeric parameter with an optional unit suffix (``14dB``, ``1550NM``)."""
    found = _NUMBER.match(text.strip())
    if found is None or found[2].upper() not in _SCALE:
        raise ScpiCommandError(*DATA_TYPE_ERROR)
    return float(found[1]) * _SCALE[found[2].upper()]


def boolean(text: str) -> bool:
    value = text.strip().upper()
    if value in ("1", "ON"):
        return True
    if value in ("0", "OFF"):
        return False
    raise ScpiCommandError(*ILLEGAL_PARAMETER_VALUE)


def nr3(value: float) -> str:
    return f"{value:+.8E}"


def in_range(value: float, low: float, high: float) -> float:
    if not low <= value <= high:
        raise ScpiCommandError(*DATA_OUT_OF_RANGE)
    return value


def suffix(value: int | None, allowed: Iterable[int]) -> int:
    index = 1 if value is None else value
    if index not in allowed:
        raise ScpiCommandError(*HEADER_SUFFIX_OUT_OF_RANGE)
    return index


def need(args: list[str], count: int) -> list[str]:
    if len(args) < count:
        raise ScpiCommandError(*MISSING_PARAMETER)
    return args


class ScpiServer:
    """Serve one instrument on ``127.0.0.1:<ephemeral port>`` from a background thread."""

    def __init__(
        self,
        handler: ScpiHandler,
        *,
        idn: str = "LabTest,EmulatedInstrument,EMU0001,0.1",
        host: str = "127.0.0.1",
        port: int = 0,
        mode: Mode = "normal",
        reply_delay_s: float = 0.0,
        error_queue_size: int = 16,
        serving: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self.handler = handler
        self.serving = serving  # held while a command is answered (the lab's clock keeps its pace)
        self.idn = idn
        self.errors = ErrorQueue(error_queue_size)
        #: the last commands received, newest last (for tests and debugging)
        self.received: collections.deque[str] = collections.deque(maxlen=1000)
        self._host = host
        self._requested_port = port
        self._port: int | None = None
        self._mode: Mode = "normal"
        self._reply_delay_s = 0.0
        self.set_mode(mode, reply_delay_s)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._clients: set[asyncio.Task[None]] = set()

    # --- control ------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("SCPI server is not running")
        return self._port

    @property
    def resource(self) -> str:
        """The VISA resource string that reaches this server."""
        return f"TCPIP0::{self._host}::{self.port}::SOCKET"

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode, reply_delay_s: float | None = None) -> None:
        """Switch behaviour at any time (fault injection): takes effect on the next message."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if reply_delay_s is not None:
            self._reply_delay_s = max(0.0, reply_delay_s)
        self._mode = mode

    def start(self, timeout_s: float = START_TIMEOUT_S) -> ScpiServer:
        if self._thread is not None:
            raise RuntimeError("SCPI server already started")
        listener = socket.create_server((self._host, self._requested_port), backlog=64)
        listener.setblocking(False)
        self._port = listener.getsockname()[1]
        self._ready.clear()
        self._start_error = None
        self._thread = threading.Thread(
            target=self._run, args=(listener,), name="scpi-server", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout_s):
            self.stop(timeout_s)
            raise TimeoutError(f"SCPI server did not start within {timeout_s} s")
        if self._start_error is not None:
            self.stop(timeout_s)
            raise RuntimeError(f"SCPI server failed to start: {self._start_error}")
        log.debug("SCPI server listening on %s:%s", self._host, self._port)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stopping.set)
        thread.join(timeout_s)
        if thread.is_alive():
            raise RuntimeError(f"SCPI server thread did not stop within {timeout_s} s")
        self._thread = self._loop = self._stopping = None
        self._port = None

    def __enter__(self) -> ScpiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the loop thread ------------------------------------------------------

    def _run(self, listener: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(listener))
        except BaseException as exc:  # reported by start(); the thread must not die silently
            log.exception("SCPI server loop failed")
            self._start_error = exc
        finally:
            self._ready.set()
            listener.close()  # the server closed it already, unless the loop failed first
            loop.close()

    async def _serve(self, listener: socket.socket) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._client, sock=listener, limit=_MAX_LINE_BYTES)
        self._ready.set()
        async with server:
            await self._stopping.wait()
        # Python 3.11's server.close() leaves accepted connections open: end them here.
        for task in list(self._clients):
            task.cancel()
        await asyncio.gather(*self._clients, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._clients.add(task)
        peer = writer.get_extra_info("peername")
        waiting = contextlib.ExitStack()  # silent: a query went unanswered, its client waits
        try:
            while line := await reader.readline():
                waiting.close()  # the client wrote again: it waits no more
                if self._mode == "drop":
                    log.debug("drop mode: closing %s on %r", peer, line)
                    return
                if self._mode == "silent":
                    if b"?" in line:  # a query's client waits out its timeout: keep the pace
                        waiting.enter_context(self.serving())
                    continue
                with self.serving():
                    reply = self._message(line.decode("ascii", "replace").strip())
                if reply is None:
                    continue
                if self._mode == "slow":
                    await asyncio.sleep(self._reply_delay_s)
                writer.write(reply.encode("ascii", "replace") + b"\n")
                await writer.drain()
        except (ConnectionError, ValueError) as exc:  # ValueError: line over the limit
            log.debug("client %s: %s", peer, exc)
        except asyncio.CancelledError:  # stop(): end quietly, asyncio would log a cancelled task
            pass
        finally:
            waiting.close()
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    # --- SCPI -----------------------------------------------------------------

    def _message(self, line: str) -> str | None:
        """One program message: replies to its queries are joined with ``;`` (IEEE 488.2)."""
        replies = [r for r in map(self._dispatch, split_message(line)) if r is not None]
        return ";".join(replies) if replies else None

    def _dispatch(self, command: str) -> str | None:
        self.received.append(command)
        header = command.split(maxsplit=1)[0].lstrip(":").upper()
        try:
            if header == "*IDN?":
                return self.idn
            if header == "*OPC?":
                return "1"
            if header == "*CLS":
                self.errors.clear()
                return None
            if header == "*RST":
                reset = getattr(self.handler, "reset", None)
                if callable(reset):
                    reset()
                return None
            if header in _SYST_ERR:
                code, message = self.errors.pop()
                return f'{code:+d},"{message}"'
            return self.handler.handle(command)
        except ScpiCommandError as exc:
            self.errors.push(exc.code, exc.message)
        except Exception:  # an emulator bug: keep serving, but make it visible
            log.exception("SCPI handler failed on %r", command)
            self.errors.push(*DEVICE_SPECIFIC_ERROR)
        return None
