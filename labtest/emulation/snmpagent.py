"""A reusable SNMP agent whose MIB is computed on every request.

Device emulators plug a *provider* into it: an object with ``get(oid)`` and
``next(oid)`` over OID tuples, so counters can grow with the fabric model's
clock instead of being frozen in a recorded walk (snmpsim's model). The agent
answers v2c (one community) and v3 USM users with authPriv, on 127.0.0.1 and
an ephemeral UDP port, from its own thread and event loop; ``stop()`` leaves
no thread and no socket behind.

VACM is bypassed on purpose: the provider is the whole view. A wrong community
gets no answer (as on real agents, so the manager times out); a wrong v3 key
gets the USM report a real agent sends. ``silent = True`` drops every request,
which is how the emulated lab injects an "SNMP timeout" fault; after each dropped
request the agent holds ``serving`` for ``silent_hold_s`` (a client's wait for one
try), so the lab's clock keeps its wall pace while the client waits out its timeout.

Provider values are pysnmp SMI objects (re-exported here: ``Counter64(5)``,
``Gauge32``, ``TimeTicks`` ...) or plain Python: ``int`` becomes Integer32,
``str``/``bytes`` an OCTET STRING. ``DictMib`` is a ready provider whose values
may be callables evaluated at request time.

SET is served only for providers that have ``write(oid, value)`` (value as
plain Python); it raises ``KeyError`` for a read-only or absent object
(notWritable) and ``ValueError`` for a value it refuses (wrongValue). Without
``write`` every SET answers notWritable.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import runpy
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import Any, Protocol

from pyasn1.type.base import Asn1Item
from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.smi import builder as mib_builder
from pysnmp.smi import error as smi_error

from labtest.aio import close_loop
from labtest.emulation.listen import START_TIMEOUT_S
from labtest.testbed.model import SnmpSettings
from labtest.transports.mibs import Oid, oid_tuple
from labtest.transports.snmp import AUTH_PROTOCOLS, PRIV_PROTOCOLS, to_python

__all__ = [
    "Counter32",
    "Counter64",
    "DictMib",
    "Gauge32",
    "Integer32",
    "IpAddress",
    "MibProvider",
    "ObjectIdentifier",
    "OctetString",
    "SnmpAgent",
    "TimeTicks",
    "V3User",
]

log = logging.getLogger("labtest.emulation.snmpagent")


class _CompiledMibs:
    """pysnmp's MIB builder compiles every MIB module from source for every engine, twice
    (``DirMibSource.read``, then ``runpy.run_path`` under ``__debug__``): ~60 of the ~75 ms
    an agent took to start, so a 64-switch lab compiled the same 30 modules 128 times
    (issue 19). Code objects are immutable: each file is compiled once per process. Only
    the emulator's agents get here; the builder runs a module as before, in a fresh
    namespace holding what it passes."""

    _lock = threading.Lock()
    _code: dict[str, CodeType] = {}  # file path -> its code (run_path)
    _read: dict[str, tuple[CodeType, str]] = {}  # MIB source + module -> what read() gave
    _installed = False

    @classmethod
    def install(cls) -> None:
        with cls._lock:
            if cls._installed:
                return
            cls._installed = True
        if hasattr(mib_builder, "runpy"):  # absent under python -O: pysnmp execs read()'s code
            mib_builder.runpy = cls
        source_read = mib_builder.DirMibSource.read

        def read(source: Any, name: str) -> tuple[CodeType, str]:
            key = f"{source.full_path()}\0{name}"
            with cls._lock:
                hit = cls._read.get(key)
            if hit is None:
                hit = source_read(source, name)  # OSError: not in this source
                with cls._lock:
                    cls._read[key] = hit
            return hit

        mib_builder.DirMibSource.read = read

    @classmethod
    def run_path(cls, path: str, init_globals: dict[str, Any] | None = None,
                 run_name: str | None = None) -> dict[str, Any]:
        if not path.endswith(".py"):  # a compiled module pysnmp found beside its source
            return runpy.run_path(path, init_globals, run_name)
        with cls._lock:
            code = cls._code.get(path)
        if code is None:
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            with cls._lock:
                cls._code[path] = code
        namespace = {**(init_globals or {}), "__name__": run_name or "<run_path>",
                     "__file__": path}
        exec(code, namespace)  # what runpy.run_path does with a source file
        return namespace

Counter32 = rfc1902.Counter32
Counter64 = rfc1902.Counter64
Gauge32 = rfc1902.Gauge32
Integer32 = rfc1902.Integer32
IpAddress = rfc1902.IpAddress
ObjectIdentifier = rfc1902.ObjectIdentifier
OctetString = rfc1902.OctetString
TimeTicks = rfc1902.TimeTicks


class MibProvider(Protocol):
    """The agent's whole MIB view. Called from the agent's thread."""

    def get(self, oid: Oid) -> Any | None:
        """The value of exactly ``oid``, or None when there is no such instance."""

    def next(self, oid: Oid) -> tuple[Oid, Any] | None:
        """The first (oid, value) strictly after ``oid``, or None at the end of the MIB."""


def to_smi(value: Any) -> Any:
    """A provider value as an SMI object (plain ``int``/``str``/``bytes`` allowed)."""
    if isinstance(value, Asn1Item):
        return value
    if isinstance(value, bool):
        return Integer32(int(value))
    if isinstance(value, int):
        return Integer32(value)
    if isinstance(value, str):
        return OctetString(value.encode())
    if isinstance(value, bytes | bytearray):
        return OctetString(bytes(value))
    raise TypeError(f"cannot send {type(value).__name__} over SNMP; use an SMI type")


class DictMib:
    """A sorted OID -> value map; a callable value is called on each request.

    Keys may be dotted text, MIB names (``"IF-MIB::ifHCInOctets.1"``) or tuples.
    Safe to update from another thread while the agent serves it.
    """

    def __init__(self, values: Mapping[str | Oid, Any] | None = None) -> None:
        self._values: dict[Oid, Any] = {}
        self._keys: list[Oid] = []
        self._lock = threading.Lock()
        if values:
            self.update(values)

    def __len__(self) -> int:
        return len(self._keys)

    def set(self, oid: str | Oid, value: Any | Callable[[], Any]) -> None:
        self.update({oid: value})

    def update(self, values: Mapping[str | Oid, Any]) -> None:
        with self._lock:
            for key, value in values.items():
                self._values[oid_tuple(key)] = value
            self._keys = sorted(self._values)

    def remove(self, oid: str | Oid) -> None:
        with self._lock:
            self._values.pop(oid_tuple(oid), None)
            self._keys = sorted(self._values)

    def get(self, oid: Oid) -> Any | None:
        with self._lock:
            value = self._values.get(oid)
        return value() if callable(value) else value

    def next(self, oid: Oid) -> tuple[Oid, Any] | None:
        with self._lock:
            position = bisect.bisect_right(self._keys, oid)
            if position >= len(self._keys):
                return None
            key = self._keys[position]
            value = self._values[key]
        return key, (value() if callable(value) else value)


@dataclass(frozen=True)
class V3User:
    """A USM user with authPriv; protocol names as in the testbed's ``SnmpSettings``."""

    name: str
    auth_key: str
    priv_key: str
    auth_protocol: str = "SHA"
    priv_protocol: str = "AES"

    def __repr__(self) -> str:  # keys never reach a log or a report
        return f"V3User({self.name!r}, {self.auth_protocol}/{self.priv_protocol})"


class _Instrumentation:
    """Adapts a provider to what pysnmp's command responders call."""

    def __init__(self, provider: MibProvider) -> None:
        self.provider = provider

    def read_variables(self, *var_binds: Any, **_context: Any) -> list[tuple[Any, Any]]:
        out = []
        for idx, (name, _) in enumerate(var_binds):
            value = self._call(self.provider.get, tuple(name), name, idx)
            out.append((name, rfc1905.noSuchInstance if value is None else to_smi(value)))
        return out

    def read_next_variables(self, *var_binds: Any, **_context: Any) -> list[tuple[Any, Any]]:
        out = []
        for idx, (name, _) in enumerate(var_binds):
            found = self._call(self.provider.next, tuple(name), name, idx)
            if found is None:
                out.append((name, rfc1905.endOfMibView))
            else:
                out.append((ObjectIdentifier(found[0]), to_smi(found[1])))
        return out

    def write_variables(self, *var_binds: Any, **_context: Any) -> list[tuple[Any, Any]]:
        write = getattr(self.provider, "write", None)
        for idx, (name, value) in enumerate(var_binds):
            if write is None:
                raise smi_error.NotWritableError(name=name, idx=idx)
            try:
                write(tuple(name), to_python(value))
            except KeyError:
                raise smi_error.NotWritableError(name=name, idx=idx) from None
            except ValueError:
                raise smi_error.WrongValueError(name=name, idx=idx) from None
        return list(var_binds)

    @staticmethod
    def _call(method: Callable[[Oid], Any], oid: Oid, name: Any, idx: int) -> Any:
        try:
            return method(oid)
        except Exception as exc:  # a broken provider answers genErr, not silence
            log.warning("provider failed on %s: %s", ".".join(map(str, oid)), exc)
            raise smi_error.GenError(name=name, idx=idx) from exc


class _UdpServer(udp.UdpTransport):
    """UDP endpoint that drops every datagram while its agent is silent."""

    def __init__(self, agent: SnmpAgent, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._agent = agent

    def datagram_received(self, datagram: bytes, address: Any) -> None:
        if self._agent.silent:
            self._agent._hold_for_client()
            return
        with self._agent.serving():
            super().datagram_received(datagram, address)


class SnmpAgent:
    """A pysnmp agent serving a :class:`MibProvider` from a background thread.

    Usage::

        with SnmpAgent(DictMib({...}), community="public", users=[V3User(...)]) as agent:
            transport = SnmpTransport("sw1", "127.0.0.1", SnmpSettings(port=agent.port, ...))
    """

    def __init__(
        self,
        mib: MibProvider,
        *,
        community: str | None = "public",
        users: Iterable[V3User] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        context_names: Iterable[str] = ("",),
        engine_id: bytes | None = None,
        serving: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self.mib = mib
        self.serving = serving  # held while a request is answered (the lab's clock keeps its pace)
        self.silent = False
        #: how long a client waits for one try (the testbed's default SNMP timeout)
        self.silent_hold_s: float = SnmpSettings.model_fields["timeout_s"].default
        self._hold: contextlib.ExitStack | None = None  # on the agent's loop only
        self._hold_timer: asyncio.TimerHandle | None = None
        self._community = community
        self._users = tuple(users)
        self._host = host
        self._requested_port = port
        self._contexts = tuple(context_names)
        self._engine_id = engine_id
        self._port = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sock: socket.socket | None = None
        self._engine: engine.SnmpEngine | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def address(self) -> tuple[str, int]:
        return self._host, self._port

    def __repr__(self) -> str:
        return f"SnmpAgent({self._host}:{self._port}, running={self.running})"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- lifecycle ------------------------------------------------------------

    def start(self, timeout_s: float = START_TIMEOUT_S) -> SnmpAgent:
        """Bind the socket, start the thread; returns once requests are served."""
        if self.running:
            return self
        _CompiledMibs.install()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self._host, self._requested_port))
        except OSError:
            sock.close()
            raise
        self._sock, self._port = sock, sock.getsockname()[1]
        self._ready.clear()
        self._failure = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, name=f"snmp-agent-{self._port}", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout_s) or self._failure is not None:
            self.stop(timeout_s)
            raise RuntimeError(f"SNMP agent on port {self._port} did not start") from (
                self._failure
            )
        log.debug("SNMP agent serving on %s:%d", self._host, self._port)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Close the socket and end the thread, waiting at most ``timeout_s``."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            thread.join(timeout_s)
            if thread.is_alive():
                raise RuntimeError(f"SNMP agent thread on port {self._port} did not stop")
        if self._sock is not None:
            self._sock.close()
        self._thread = self._loop = self._sock = self._engine = None

    def __enter__(self) -> SnmpAgent:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # --- the agent's thread ------------------------------------------------------

    def _run(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._setup())
            self._ready.set()
            loop.run_forever()
        except BaseException as exc:  # reported to start(); the thread must not die silently
            self._failure = exc
            self._ready.set()
        finally:
            close_loop(loop)

    async def _setup(self) -> None:
        """Build the engine on this loop: pysnmp binds to the loop it is created on."""
        loop = asyncio.get_running_loop()
        snmp_engine = (
            engine.SnmpEngine(rfc1902.OctetString(self._engine_id))
            if self._engine_id
            else engine.SnmpEngine()
        )
        server = _UdpServer(self, loop).open_server_mode(sock=self._sock)
        config.add_transport(snmp_engine, udp.DOMAIN_NAME, server)
        if self._community is not None:
            config.add_v1_system(snmp_engine, "labtest-area", self._community)
        for user in self._users:
            config.add_v3_user(
                snmp_engine,
                user.name,
                AUTH_PROTOCOLS[user.auth_protocol],
                user.auth_key,
                PRIV_PROTOCOLS[user.priv_protocol],
                user.priv_key,
            )
        snmp_context = context.SnmpContext(snmp_engine)
        instrumentation = _Instrumentation(self.mib)
        snmp_context.unregister_context_name(b"")
        for name in self._contexts:
            snmp_context.register_context_name(name.encode(), instrumentation)
        for responder in (
            cmdrsp.GetCommandResponder,
            cmdrsp.NextCommandResponder,
            cmdrsp.BulkCommandResponder,
            cmdrsp.SetCommandResponder,
        ):
            responder(snmp_engine, snmp_context)
        self._engine = snmp_engine

    def _hold_for_client(self) -> None:
        """A request was dropped (silent): hold ``serving`` until its client's try times out
        (each later request extends it). Runs on the agent's loop."""
        if self._hold is None:
            self._hold = contextlib.ExitStack()
            self._hold.enter_context(self.serving())
        if self._hold_timer is not None:
            self._hold_timer.cancel()
        self._hold_timer = asyncio.get_running_loop().call_later(
            self.silent_hold_s, self._release_hold)

    def _release_hold(self) -> None:
        if self._hold_timer is not None:
            self._hold_timer.cancel()
        hold, self._hold, self._hold_timer = self._hold, None, None
        if hold is not None:
            hold.close()

    async def _shutdown(self) -> None:
        self._release_hold()
        if self._engine is not None:
            self._engine.close_dispatcher()  # closes the UDP transport and its timer
        await asyncio.sleep(0)  # two turns let asyncio finish closing the socket
        await asyncio.sleep(0)
        asyncio.get_running_loop().stop()
