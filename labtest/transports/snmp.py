"""SNMP v2c / v3 transport: reads on a small wire client, writes on pysnmp 7.

Reads (``get``, ``walk``, ``table``) go through ``snmp_wire``: BER and USM
straight on a blocking UDP socket, ~15x faster than pysnmp's generic decoding
on a large table and as fast as net-snmp's ``snmpbulkwalk`` within 2x. Each
request is sent ``retries + 1`` times, ``timeout_s`` apart, and never waits
longer; the socket is opened by the first read, in the caller's network
namespace.

``set`` stays on pysnmp's asyncio API: drivers are plain synchronous code, and
may run in worker threads or inside a test that already has an event loop, so
the transport owns a private event loop in a small daemon thread (started on
the first ``set``) and hands coroutines to it. pysnmp retries ``retries``
times, ``timeout_s`` apart; on top, every request is wrapped in
``asyncio.wait_for`` and the caller's wait has an idle watchdog.

Errors (all carry the device name, none carries a community or key):

- ``TransportTimeout``: no answer after timeout and retries. With v2c this is
  also what a wrong community looks like: agents drop such requests silently.
- ``AuthFailed``: the v3 agent answered with a USM report (unknown user, wrong
  digest, decryption error ...). net-snmp drops a request it cannot decrypt
  without a report, so a wrong *priv* key there is a ``TransportTimeout``.
- ``ProtocolError``: the agent answered with an error-status (genErr,
  noAccess ...), the reply broke the protocol, or ``get`` of an OID the agent
  does not have (noSuchObject / noSuchInstance) when ``missing_ok`` is False.
  Asking for a specific instance means the driver needs it; a driver probing
  an optional MIB passes ``missing_ok=True`` and gets ``None``. A walk of an
  absent subtree is simply empty.

``set`` writes one instance (an outlet command on a PDU, say); its errors are
the same. Values come back as plain Python: ``int`` for INTEGER, Counter32/64, Gauge32,
TimeTicks; ``str`` for a printable OCTET STRING, else ``"0x"`` + hex (MAC
addresses, chassis ids); dotted ``str`` for OBJECT IDENTIFIER and IpAddress;
``None`` for NULL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from pyasn1.type import univ
from pysnmp.entity import config
from pysnmp.error import PySnmpError
from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    SnmpEngine,
    UdpTransportTarget,
    UsmUserData,
    set_cmd,
)
from pysnmp.proto import errind, rfc1902

from labtest.aio import close_loop
from labtest.errors import (
    AuthFailed,
    ConfigError,
    LabtestError,
    ProtocolError,
    TransportTimeout,
)
from labtest.secrets import MASK, redact
from labtest.testbed.model import SnmpSettings
from labtest.transports import mibs, snmp_wire
from labtest.transports.closing import ClosedOnExit

log = logging.getLogger("labtest.transport.snmp")

T = TypeVar("T")
_E = TypeVar("_E", bound=LabtestError)

#: testbed names -> pysnmp USM protocol ids (shared with the emulated agent)
AUTH_PROTOCOLS: dict[str, tuple[int, ...]] = {
    "MD5": config.USM_AUTH_HMAC96_MD5,
    "SHA": config.USM_AUTH_HMAC96_SHA,
    "SHA224": config.USM_AUTH_HMAC128_SHA224,
    "SHA256": config.USM_AUTH_HMAC192_SHA256,
    "SHA384": config.USM_AUTH_HMAC256_SHA384,
    "SHA512": config.USM_AUTH_HMAC384_SHA512,
}
#: AES192/AES256 use the key extension of draft-reeder (Cisco and most network
#: OSes; net-snmp calls it AES192C/AES256C), not draft-blumenthal.
PRIV_PROTOCOLS: dict[str, tuple[int, ...]] = {
    "DES": config.USM_PRIV_CBC56_DES,
    "AES": config.USM_PRIV_CFB128_AES,
    "AES192": config.USM_PRIV_CFB192_AES,
    "AES256": config.USM_PRIV_CFB256_AES,
}

#: USM reports a v3 agent sends when it refuses the user or its keys (RFC 3414 3.2)
_AUTH_ERRORS = (
    errind.UnknownUserName,
    errind.WrongDigest,
    errind.DecryptionError,
    errind.AuthenticationError,
    errind.AuthenticationFailure,
    errind.UnknownSecurityName,
    errind.UnsupportedSecurityLevel,
    errind.UnsupportedAuthProtocol,
    errind.UnsupportedPrivProtocol,
)
_SLACK_S = 1.0  # pysnmp's 0.1 s timer ticks plus scheduling


def to_python(value: Any) -> Any:
    """An SMI value as plain Python (see the module docstring)."""
    if isinstance(value, univ.Integer):  # Integer32, Counter32/64, Gauge32, TimeTicks
        return int(value)
    if isinstance(value, rfc1902.IpAddress):
        return ".".join(str(b) for b in bytes(value))
    if isinstance(value, univ.ObjectIdentifier):
        return ".".join(str(n) for n in value)
    if isinstance(value, univ.OctetString):
        return octets_to_str(bytes(value))
    if isinstance(value, univ.Null):
        return None
    return value.prettyPrint() if hasattr(value, "prettyPrint") else value


def to_smi(value: Any) -> Any:
    """A Python value for a SET: ``int`` -> Integer32, ``str``/``bytes`` -> OCTET STRING."""
    if isinstance(value, univ.Integer | univ.OctetString | univ.ObjectIdentifier):
        return value
    if isinstance(value, bool) or not isinstance(value, int | str | bytes):
        raise TypeError(f"cannot SET a {type(value).__name__}: use int, str, bytes or SMI")
    if isinstance(value, int):
        return rfc1902.Integer32(value)
    return rfc1902.OctetString(value.encode() if isinstance(value, str) else value)


def octets_to_str(raw: bytes) -> str:
    """Printable text as is (trailing NULs dropped), anything else as ``0x`` hex."""
    text = raw.rstrip(b"\x00") or raw
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + raw.hex()
    if all(c.isprintable() or c in "\r\n\t" for c in decoded):
        return decoded
    return "0x" + raw.hex()


class SnmpTransport(ClosedOnExit):
    """One SNMP peer. Thread-safe; calls run on the transport's own loop."""

    def __init__(self, device_name: str, address: str, settings: SnmpSettings) -> None:
        self.device = device_name
        self.address = address
        self.settings = settings
        self._secrets = _secrets_of(settings)
        self._check_settings()
        tries = settings.retries + 1
        self.request_bound_s = settings.timeout_s * tries + _SLACK_S
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._wire: snmp_wire.SnmpWireClient | None = None
        self._finalizer: weakref.finalize[[], SnmpTransport] | None = None
        self._last_progress = 0.0

    def __repr__(self) -> str:
        where = f"{self.address}:{self.settings.port}"
        return f"SnmpTransport({self.device!r}, {where}, v{self.settings.version})"

    # --- public API ---------------------------------------------------------------

    def get(self, *oids: str, missing_ok: bool = False) -> dict[str, Any]:
        """Values of exact instances, keyed by dotted numeric OID, in request order."""
        numeric = [mibs.oid(o) for o in oids]
        what = f"get {', '.join(numeric)}"
        started = time.monotonic()
        var_binds = self._read(lambda client: client.get(numeric), what)
        if len(var_binds) != len(numeric):
            raise self._error(
                ProtocolError, f"{what}: {len(var_binds)} value(s) for {len(numeric)} OID(s)"
            )
        for asked, (name, _) in zip(numeric, var_binds, strict=True):
            if _arcs(name) != _arcs(asked):
                raise self._error(ProtocolError, f"{what}: asked for {asked}, answered {name}")
        result: dict[str, Any] = {}
        for name, value in var_binds:
            if isinstance(value, snmp_wire.Missing):
                if not missing_ok:
                    raise self._error(ProtocolError, f"agent has no {mibs.name(name)} ({value})")
                result[name] = None
            else:
                result[name] = octets_to_str(value) if type(value) is bytes else value
        log.debug("[%s] get %d OID(s) in %.1f ms", self.device, len(result),
                  (time.monotonic() - started) * 1e3)  # fmt: skip
        return result

    def set(self, oid: str, value: Any) -> Any:
        """Write one instance (SET): ``int`` goes as Integer32, ``str``/``bytes`` as an
        OCTET STRING, an SMI object as itself. Returns the value the agent echoed."""
        return self._run(self._set(mibs.oid(oid), value))

    def walk(self, oid: str, max_repetitions: int = 50) -> list[tuple[str, Any]]:
        """Every (oid, value) under ``oid`` (GETBULK, stops at the subtree's end)."""
        root = mibs.oid(oid)
        started = time.monotonic()
        found = self._read(lambda client: client.walk(root, max_repetitions), f"walk {root}")
        rows = [(o, octets_to_str(v) if type(v) is bytes else v) for o, v in found]
        log.debug("[%s] walk %s: %d OID(s) in %.1f ms", self.device, mibs.name(root), len(rows),
                  (time.monotonic() - started) * 1e3)  # fmt: skip
        return rows

    def table(
        self, column_oids: Iterable[str], max_repetitions: int = 50
    ) -> dict[str, dict[str, Any]]:
        """Rows keyed by index (dotted suffix, ``"5"`` or ``"0.12.1"``), then by column.

        Columns are keyed as the caller spelt them (``"ifName"``, ``"IF-MIB::ifName"``
        or numeric). A row missing a column simply lacks that key.
        """
        rows: dict[str, dict[str, Any]] = {}
        for column in column_oids:
            prefix = mibs.oid(column)
            for found, value in self.walk(prefix, max_repetitions):
                index = found[len(prefix) + 1:]
                rows.setdefault(index, {})[column] = value
        return rows

    def close(self) -> None:
        """Close the socket and stop the loop thread (bounded). A later call reopens."""
        with self._lock:
            finalizer, self._finalizer, self._session = self._finalizer, None, None
            wire, self._wire = self._wire, None
        if wire is not None:
            wire.close()
        if finalizer is not None:
            finalizer()

    # --- the read path: snmp_wire ------------------------------------------------

    def _wire_client(self) -> snmp_wire.SnmpWireClient:
        with self._lock:
            if self._wire is None:
                s = self.settings
                common: dict[str, Any] = {"timeout_s": s.timeout_s, "retries": s.retries}
                if s.version == "2c":
                    assert s.community is not None
                    community = s.community.get_secret_value().encode()
                    self._wire = snmp_wire.SnmpWireClient(
                        self.address, s.port, community=community, **common
                    )
                else:
                    auth = s.auth_key.get_secret_value().encode() if s.auth_key else None
                    priv = s.priv_key.get_secret_value().encode() if s.priv_key else None
                    usm = snmp_wire.Usm(
                        user=(s.user or "").encode(),
                        auth_protocol=s.auth_protocol if auth else None,
                        auth_password=auth,
                        priv_protocol=s.priv_protocol if priv else None,
                        priv_password=priv,
                        context=s.context.encode(),
                    )
                    self._wire = snmp_wire.SnmpWireClient(self.address, s.port, usm=usm, **common)
            return self._wire

    def _read(self, call: Callable[[snmp_wire.SnmpWireClient], T], what: str) -> T:
        """Run one read on the wire client; its errors become the transport's typed ones."""
        try:
            return call(self._wire_client())
        except snmp_wire.NoAnswer:
            raise self._timeout() from None
        except snmp_wire.Refused as exc:
            raise self._error(
                AuthFailed, f"SNMPv3 user {self.settings.user!r} refused: {exc.report}"
            ) from None
        except snmp_wire.ErrorStatus as exc:
            culprit = ""
            if 0 < exc.index <= len(exc.var_binds):
                culprit = f" at {mibs.name(exc.var_binds[exc.index - 1][0])}"
            raise self._error(
                ProtocolError, f"{what}: agent answered {exc.status_name}{culprit}"
            ) from None
        except snmp_wire.Malformed as exc:
            where = f"{self.address}:{self.settings.port}"
            raise self._error(ProtocolError, f"{what}: bad reply from {where}: {exc}") from None
        except OSError as exc:  # no route, address in use ...: the agent is out of reach
            where = f"{self.address}:{self.settings.port}"
            raise self._error(TransportTimeout, f"cannot reach {where}: {exc}") from None

    # --- running coroutines on the private loop (set) -----------------------------

    def _ensure_session(self) -> _Session:
        with self._lock:
            if self._session is None:
                self._session = _Session(self.device)
                # a transport dropped without close() still stops its thread
                self._finalizer = weakref.finalize(self, self._session.shutdown)
            return self._session

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop; give up once it makes no progress."""
        session = self._ensure_session()
        self._touch()
        future = asyncio.run_coroutine_threadsafe(coro, session.loop)
        while True:
            try:
                return future.result(timeout=self.request_bound_s)
            except concurrent.futures.TimeoutError:
                if time.monotonic() - self._last_progress > self.request_bound_s + _SLACK_S:
                    future.cancel()
                    raise self._timeout() from None

    def _touch(self) -> None:
        self._last_progress = time.monotonic()

    async def _open(self) -> tuple[SnmpEngine, UdpTransportTarget]:
        """Engine and target are built on the loop: pysnmp binds to the current loop."""
        session = self._ensure_session()
        async with session.opening:  # concurrent first calls must share one engine
            if session.engine is None or session.target is None:
                session.engine = SnmpEngine()
                session.target = await UdpTransportTarget.create(
                    (self.address, self.settings.port),
                    timeout=self.settings.timeout_s,
                    retries=self.settings.retries,
                )
            return session.engine, session.target

    # --- the coroutines ---------------------------------------------------------

    async def _set(self, oid: str, value: Any) -> Any:
        engine, target = await self._open()
        request = set_cmd(
            engine, self._auth(), target, self._context(),
            ObjectType(ObjectIdentity(oid), to_smi(value)),
            lookupMib=False,
        )
        answer = await self._bounded(request, f"set {oid}")
        indication, status, index, var_binds = answer
        var_binds = self._check(indication, status, index, var_binds, what=f"set {mibs.name(oid)}")
        log.debug("[%s] set %s", self.device, mibs.name(oid))
        return to_python(var_binds[0][1]) if var_binds else None

    async def _bounded(self, awaitable: Any, what: str) -> Any:
        try:
            return await asyncio.wait_for(awaitable, self.request_bound_s)
        except TimeoutError:
            raise self._timeout() from None
        except PySnmpError as exc:
            raise self._error(ProtocolError, f"{what}: {exc}") from None

    def _check(
        self, indication: Any, status: Any, index: Any, var_binds: Sequence[Any], what: str
    ) -> Sequence[Any]:
        if indication:
            if isinstance(indication, errind.RequestTimedOut):
                raise self._timeout()
            if isinstance(indication, _AUTH_ERRORS):
                raise self._error(
                    AuthFailed, f"SNMPv3 user {self.settings.user!r} refused: {indication}"
                )
            raise self._error(ProtocolError, f"{what}: {indication}")
        if status and int(status):
            position = int(index or 0)
            culprit = ""
            if 0 < position <= len(var_binds):
                culprit = f" at {mibs.name(str(var_binds[position - 1][0]))}"
            status_name = status.prettyPrint() if hasattr(status, "prettyPrint") else status
            raise self._error(ProtocolError, f"{what}: agent answered {status_name}{culprit}")
        return var_binds

    # --- settings, errors, secrets ---------------------------------------------

    def _auth(self) -> CommunityData | UsmUserData:
        s = self.settings
        if s.version == "2c":
            assert s.community is not None
            return CommunityData(s.community.get_secret_value(), mpModel=1)
        auth_key = s.auth_key.get_secret_value() if s.auth_key else None
        priv_key = s.priv_key.get_secret_value() if s.priv_key else None
        return UsmUserData(
            s.user,
            authKey=auth_key,
            privKey=priv_key,
            authProtocol=AUTH_PROTOCOLS[s.auth_protocol] if auth_key else config.USM_AUTH_NONE,
            privProtocol=PRIV_PROTOCOLS[s.priv_protocol] if priv_key else config.USM_PRIV_NONE,
        )

    def _context(self) -> ContextData:
        if self.settings.version == "3":
            return ContextData(contextName=self.settings.context)
        return ContextData()

    def _check_settings(self) -> None:
        s, problems = self.settings, []
        if s.version == "2c" and s.community is None:
            problems.append("snmp.community: required for SNMP v2c")
        if s.version == "3":
            if not s.user:
                problems.append("snmp.user: required for SNMP v3")
            if s.priv_key is not None and s.auth_key is None:
                problems.append("snmp.priv_key: needs an auth_key too (no privacy without auth)")
            for field in ("auth_key", "priv_key"):
                value = getattr(s, field)
                if value is not None and len(value.get_secret_value()) < 8:
                    problems.append(f"snmp.{field}: at least 8 characters (RFC 3414 11.2)")
        if problems:
            raise ConfigError(f"device {self.device!r}", problems)

    def _timeout(self) -> TransportTimeout:
        s = self.settings
        hint = (
            "wrong community or agent down"
            if s.version == "2c"
            # a wrong priv key or AES key-extension variant is dropped silently by net-snmp
            else "agent down, or wrong v3 priv key or AES variant"
        )
        return self._error(
            TransportTimeout,
            f"no SNMP answer from {self.address}:{s.port} after {s.retries + 1} tries of "
            f"{s.timeout_s:g} s ({hint})",
        )

    def _error(self, kind: type[_E], message: str) -> _E:
        """A typed error whose text is scrubbed of this transport's secrets."""
        error = kind(self.device, self._scrub(message))
        log.info("%s", error)
        return error

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return redact(text)


def _arcs(oid: str) -> tuple[int, ...]:
    return tuple(int(arc) for arc in oid.strip(".").split("."))


def _secrets_of(settings: SnmpSettings) -> list[str]:
    found = [
        value.get_secret_value()
        for value in (settings.community, settings.auth_key, settings.priv_key)
        if value is not None
    ]
    return sorted((s for s in found if s), key=len, reverse=True)


class _Session:
    """The private event loop, its thread, and the pysnmp objects that live on it."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.engine: SnmpEngine | None = None
        self.target: UdpTransportTarget | None = None
        self.opening = asyncio.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=_serve_loop, args=(self.loop,), name=f"snmp-{device}", daemon=True
        )
        self.thread.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        if self.engine is not None:
            closing = asyncio.run_coroutine_threadsafe(_close_engine(self.engine), self.loop)
            try:
                closing.result(timeout_s)
            except (concurrent.futures.TimeoutError, RuntimeError) as exc:
                log.warning("[%s] closing the SNMP engine: %r", self.device, exc)
        self.engine = self.target = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            log.warning("[%s] SNMP loop thread did not stop within %.1f s", self.device, timeout_s)


async def _close_engine(engine: SnmpEngine) -> None:
    """Close the UDP socket; two loop turns let asyncio finish closing it."""
    engine.close_dispatcher()
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def _serve_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        close_loop(loop)
