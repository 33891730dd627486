"""A small SNMP read client on one UDP socket: BER, v2c and v3 USM, GET/GETNEXT/GETBULK.

Why: pysnmp decodes every PDU through pyasn1's generic machinery, ~80 us per
variable binding; a bulk walk of a 300-port ifXTable then takes 15x as long as
net-snmp's ``snmpbulkwalk``. This module decodes exactly the SMI types SNMP
uses, straight from the bytes, and nothing else. ``SnmpTransport`` uses it for
its read path (``get``/``walk``); SET stays on pysnmp.

Values come back as ``int`` (INTEGER, Counter32/64, Gauge32, TimeTicks),
``bytes`` (OCTET STRING, Opaque), dotted ``str`` (OBJECT IDENTIFIER,
IpAddress), ``None`` (NULL) or one of the ``Missing`` markers (noSuchObject,
noSuchInstance, endOfMibView).

Errors are this module's own (the transport names the device):
``Malformed`` (a reply that breaks BER or the protocol), ``NoAnswer`` (every
try timed out), ``Refused`` (a v3 USM report), ``ErrorStatus`` (the agent set
error-status). Replies whose request id (v2c) or message id (v3) is not the
outstanding one are stale retransmissions and are ignored.

USM follows RFC 3414 (engine discovery, time window, password-to-key and key
localization, HMAC-MD5-96 / HMAC-SHA-96, CBC-DES), RFC 7860 (HMAC-SHA-2) and
RFC 3826 (AES-128-CFB); AES-192/256 extend the localized key as in
draft-reeder (Cisco; net-snmp's AES192C/AES256C), like the pysnmp path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

try:  # cryptography >= 47 keeps CFB (and DES) among the "decrepit" primitives
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - older cryptography
    CFB = modes.CFB  # type: ignore[misc]

# --- BER tags ---------------------------------------------------------------------------

INTEGER, OCTET_STRING, NULL, OBJECT_IDENTIFIER, SEQUENCE = 0x02, 0x04, 0x05, 0x06, 0x30
IP_ADDRESS, COUNTER32, GAUGE32, TIME_TICKS, OPAQUE, COUNTER64 = 0x40, 0x41, 0x42, 0x43, 0x44, 0x46
NO_SUCH_OBJECT_TAG, NO_SUCH_INSTANCE_TAG, END_OF_MIB_VIEW_TAG = 0x80, 0x81, 0x82
GET, GET_NEXT, RESPONSE, SET, GET_BULK, REPORT = 0xA0, 0xA1, 0xA2, 0xA3, 0xA5, 0xA8

ERROR_STATUS = (
    "noError", "tooBig", "noSuchName", "badValue", "readOnly", "genErr", "noAccess", "wrongType",
    "wrongLength", "wrongEncoding", "wrongValue", "noCreation", "inconsistentValue",
    "resourceUnavailable", "commitFailed", "undoFailed", "authorizationError", "notWritable",
    "inconsistentName",
)  # fmt: skip


class Missing:
    """noSuchObject / noSuchInstance / endOfMibView: the agent has no value here."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


NO_SUCH_OBJECT = Missing("noSuchObject")
NO_SUCH_INSTANCE = Missing("noSuchInstance")
END_OF_MIB_VIEW = Missing("endOfMibView")
_MISSING_BY_TAG = {
    NO_SUCH_OBJECT_TAG: NO_SUCH_OBJECT,
    NO_SUCH_INSTANCE_TAG: NO_SUCH_INSTANCE,
    END_OF_MIB_VIEW_TAG: END_OF_MIB_VIEW,
}

VarBind = tuple[str, Any]


# --- errors -----------------------------------------------------------------------------


class WireError(Exception):
    """Base of this module's errors."""


class Malformed(WireError):
    """The reply breaks BER or SNMP."""


class NoAnswer(WireError):
    """No (valid, matching) reply within every try."""


class Refused(WireError):
    """A v3 agent answered with a USM report; ``.report`` names it."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


class ErrorStatus(WireError):
    """The agent answered with a non-zero error-status."""

    def __init__(self, status: int, index: int, var_binds: Sequence[VarBind]) -> None:
        self.status, self.index, self.var_binds = status, index, list(var_binds)
        name = ERROR_STATUS[status] if 0 <= status < len(ERROR_STATUS) else f"error {status}"
        super().__init__(name)
        self.status_name = name


# --- BER encoding -----------------------------------------------------------------------


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(raw),)) + raw


def tlv(tag: int, payload: bytes) -> bytes:
    return bytes((tag,)) + _length(len(payload)) + payload


def encode_integer(value: int, tag: int = INTEGER) -> bytes:
    """Minimal two's complement (also for the unsigned application types)."""
    size = (value + (value < 0)).bit_length() // 8 + 1
    return tlv(tag, value.to_bytes(size, "big", signed=True))


def encode_oid(dotted: str) -> bytes:
    try:
        arcs = [int(a) for a in dotted.strip(".").split(".")]
    except ValueError:
        raise ValueError(f"not a numeric OID: {dotted!r}") from None
    if len(arcs) < 2 or not 0 <= arcs[0] <= 2 or (arcs[0] < 2 and arcs[1] > 39) or min(arcs) < 0:
        raise ValueError(f"not a valid OID: {dotted!r}")
    out = bytearray()
    for sub in (arcs[0] * 40 + arcs[1], *arcs[2:]):
        chunk = [sub & 0x7F]
        sub >>= 7
        while sub:
            chunk.append(0x80 | (sub & 0x7F))
            sub >>= 7
        out += bytes(reversed(chunk))
    return tlv(OBJECT_IDENTIFIER, bytes(out))


def encode_value(tag: int, value: Any) -> bytes:
    """One SMI value (for requests and for tests that play the agent)."""
    if tag in (INTEGER, COUNTER32, GAUGE32, TIME_TICKS, COUNTER64):
        return encode_integer(value, tag)
    if tag in (OCTET_STRING, OPAQUE):
        return tlv(tag, bytes(value))
    if tag == NULL or tag in _MISSING_BY_TAG:
        return bytes((tag, 0))
    if tag == OBJECT_IDENTIFIER:
        return encode_oid(value)
    if tag == IP_ADDRESS:
        return tlv(tag, bytes(int(b) for b in value.split(".")))
    raise ValueError(f"cannot encode tag 0x{tag:02x}")


def encode_var_binds(var_binds: Sequence[tuple[str, bytes]]) -> bytes:
    """``(oid, encoded value)`` pairs as a VarBindList."""
    return tlv(SEQUENCE, b"".join(tlv(SEQUENCE, encode_oid(o) + v) for o, v in var_binds))


def encode_pdu(tag: int, request_id: int, a: int, b: int, var_binds: bytes) -> bytes:
    """A PDU: ``a``/``b`` are error-status/index, or non-repeaters/max-repetitions."""
    return tlv(tag, encode_integer(request_id) + encode_integer(a) + encode_integer(b) + var_binds)


def encode_v2c(community: bytes, pdu: bytes) -> bytes:
    return tlv(SEQUENCE, encode_integer(1) + tlv(OCTET_STRING, community) + pdu)


# --- BER decoding -----------------------------------------------------------------------


def read_tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """``(tag, value start, value end)`` of the TLV at ``pos``, inside ``data[:end]``."""
    if pos + 2 > end:
        raise Malformed(f"truncated at byte {pos}")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise Malformed(f"multi-byte tag at byte {pos}")
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4 or pos + size > end:
            raise Malformed(f"bad length at byte {pos - 1}")
        length = int.from_bytes(data[pos : pos + size], "big")
        pos += size
    stop = pos + length
    if stop > end:
        raise Malformed(f"truncated at byte {pos}: {length} bytes announced, {end - pos} left")
    return tag, pos, stop


def _expect(data: bytes, pos: int, end: int, tag: int, what: str) -> tuple[int, int]:
    got, start, stop = read_tlv(data, pos, end)
    if got != tag:
        raise Malformed(f"{what}: tag 0x{got:02x}, expected 0x{tag:02x}")
    return start, stop


def _signed(data: bytes, start: int, stop: int) -> int:
    if start == stop:
        raise Malformed("empty INTEGER")
    return int.from_bytes(data[start:stop], "big", signed=True)


def _unsigned(data: bytes, start: int, stop: int, bits: int) -> int:
    """Counters, gauges, ticks: read unsigned as net-snmp does, refuse what overflows."""
    if start == stop:
        raise Malformed("empty unsigned integer")
    value = int.from_bytes(data[start:stop], "big")
    if value >> bits:
        raise Malformed(f"unsigned value does not fit {bits} bits")
    return value


def _read_integer(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    start, stop = _expect(data, pos, end, INTEGER, what)
    return _signed(data, start, stop), stop


def _oid_text(raw: bytes) -> str:
    if max(raw) < 0x80:  # every arc below 128: the common case
        top = min(raw[0] // 40, 2)
        head = f"{top}.{raw[0] - 40 * top}"
        return head + "." + ".".join(map(str, raw[1:])) if len(raw) > 1 else head
    arcs: list[int] = []
    sub, starting = 0, True
    for byte in raw:
        if starting and byte == 0x80:
            raise Malformed("OBJECT IDENTIFIER arc with a leading 0x80")
        sub = (sub << 7) | (byte & 0x7F)
        starting = not byte & 0x80
        if starting:
            arcs.append(sub)
            sub = 0
    top = min(arcs[0] // 40, 2)
    return ".".join(map(str, (top, arcs[0] - 40 * top, *arcs[1:])))


#: encoded OID heads (all but the last arc) -> dotted text: a walk repeats them
_HEADS: dict[bytes, str] = {}


def decode_oid(data: bytes, start: int, stop: int) -> str:
    raw = data[start:stop]
    if not raw or raw[-1] & 0x80:
        raise Malformed("empty or truncated OBJECT IDENTIFIER")
    cut = len(raw) - 1  # where the last arc starts
    while cut and raw[cut - 1] & 0x80:
        cut -= 1
    if not cut:
        return _oid_text(raw)
    head_bytes = raw[:cut]
    head = _HEADS.get(head_bytes)
    if head is None:
        head = _oid_text(head_bytes)
        if len(_HEADS) > 4096:
            _HEADS.clear()
        _HEADS[head_bytes] = head
    if cut == len(raw) - 1:
        return f"{head}.{raw[cut]}"
    if raw[cut] == 0x80:
        raise Malformed("OBJECT IDENTIFIER arc with a leading 0x80")
    last = 0
    for byte in raw[cut:]:
        last = (last << 7) | (byte & 0x7F)
    return f"{head}.{last}"


def decode_value(tag: int, data: bytes, start: int, stop: int) -> Any:
    if tag in (OCTET_STRING, OPAQUE):
        return data[start:stop]
    if tag == INTEGER:
        return _signed(data, start, stop)
    if tag in (COUNTER32, GAUGE32, TIME_TICKS):
        return _unsigned(data, start, stop, 32)
    if tag == COUNTER64:
        return _unsigned(data, start, stop, 64)
    if tag == OBJECT_IDENTIFIER:
        return decode_oid(data, start, stop)
    if tag == IP_ADDRESS:
        if stop - start != 4:
            raise Malformed(f"IpAddress of {stop - start} bytes")
        return ".".join(map(str, data[start:stop]))
    if tag == NULL or tag in _MISSING_BY_TAG:
        if stop != start:
            raise Malformed(f"tag 0x{tag:02x} with a value")
        return _MISSING_BY_TAG.get(tag)
    raise Malformed(f"unknown value type 0x{tag:02x}")


def decode_var_binds(data: bytes, pos: int, end: int) -> list[VarBind]:
    """The hot loop of a walk: short-form lengths are read inline."""
    out: list[VarBind] = []
    append = out.append
    try:
        while pos < end:
            if data[pos] != SEQUENCE:
                raise Malformed(f"VarBind: tag 0x{data[pos]:02x}")
            size = data[pos + 1]
            if size < 0x80:
                start, stop = pos + 2, pos + 2 + size
            else:
                _, start, stop = read_tlv(data, pos, end)
            if stop > end:
                raise Malformed(f"truncated VarBind at byte {pos}")
            if data[start] != OBJECT_IDENTIFIER:
                raise Malformed(f"VarBind name: tag 0x{data[start]:02x}")
            size = data[start + 1]
            if size < 0x80:
                oid_start, oid_stop = start + 2, start + 2 + size
            else:
                _, oid_start, oid_stop = read_tlv(data, start, stop)
            if oid_stop + 2 > stop:
                raise Malformed(f"VarBind without a value at byte {pos}")
            tag, size = data[oid_stop], data[oid_stop + 1]
            if size < 0x80:
                value_start, value_stop = oid_stop + 2, oid_stop + 2 + size
            else:
                tag, value_start, value_stop = read_tlv(data, oid_stop, stop)
            if value_stop != stop:
                raise Malformed(f"VarBind of inconsistent lengths at byte {pos}")
            append(
                (
                    decode_oid(data, oid_start, oid_stop),
                    decode_value(tag, data, value_start, value_stop),
                )
            )
            pos = stop
    except IndexError:
        raise Malformed(f"truncated VarBind at byte {pos}") from None
    return out


@dataclass(frozen=True)
class Pdu:
    tag: int
    request_id: int
    error_status: int
    error_index: int
    var_binds: list[VarBind]


def decode_pdu(data: bytes, pos: int, end: int) -> Pdu:
    tag, start, stop = read_tlv(data, pos, end)
    if tag not in (RESPONSE, REPORT):
        raise Malformed(f"PDU type 0x{tag:02x} is not a Response or Report")
    if stop != end:
        raise Malformed("trailing bytes after the PDU")
    request_id, pos = _read_integer(data, start, stop, "request-id")
    status, pos = _read_integer(data, pos, stop, "error-status")
    index, pos = _read_integer(data, pos, stop, "error-index")
    vb_start, vb_stop = _expect(data, pos, stop, SEQUENCE, "VarBindList")
    if vb_stop != stop:
        raise Malformed("trailing bytes after the VarBindList")
    return Pdu(tag, request_id, status, index, decode_var_binds(data, vb_start, vb_stop))


def decode_v2c(data: bytes) -> tuple[bytes, Pdu]:
    """``(community, pdu)`` of a v2c message."""
    start, stop = _expect(data, 0, len(data), SEQUENCE, "message")
    if stop != len(data):
        raise Malformed("trailing bytes after the message")
    version, pos = _read_integer(data, start, stop, "version")
    if version != 1:
        raise Malformed(f"message version {version}, expected 1 (v2c)")
    c_start, c_stop = _expect(data, pos, stop, OCTET_STRING, "community")
    return data[c_start:c_stop], decode_pdu(data, c_stop, stop)


# --- USM (RFC 3414, 3826, 7860) -----------------------------------------------------------

#: auth protocol -> (hash, HMAC bytes sent)
AUTH: dict[str, tuple[Callable[..., Any], int]] = {
    "MD5": (hashlib.md5, 12),
    "SHA": (hashlib.sha1, 12),
    "SHA224": (hashlib.sha224, 16),
    "SHA256": (hashlib.sha256, 24),
    "SHA384": (hashlib.sha384, 32),
    "SHA512": (hashlib.sha512, 48),
}
#: priv protocol -> key bytes
PRIV_KEY_BYTES = {"DES": 16, "AES": 16, "AES192": 24, "AES256": 32}

USM_REPORTS = {
    "1.3.6.1.6.3.15.1.1.1.0": "usmStatsUnsupportedSecLevels",
    "1.3.6.1.6.3.15.1.1.2.0": "usmStatsNotInTimeWindows",
    "1.3.6.1.6.3.15.1.1.3.0": "usmStatsUnknownUserNames",
    "1.3.6.1.6.3.15.1.1.4.0": "usmStatsUnknownEngineIDs",
    "1.3.6.1.6.3.15.1.1.5.0": "usmStatsWrongDigests",
    "1.3.6.1.6.3.15.1.1.6.0": "usmStatsDecryptionErrors",
}
_NOT_IN_TIME_WINDOW = "usmStatsNotInTimeWindows"
_UNKNOWN_ENGINE_ID = "usmStatsUnknownEngineIDs"


def password_to_key(password: bytes, engine_id: bytes, hash_fn: Callable[..., Any]) -> bytes:
    """RFC 3414 A.2: hash 1 MiB of the repeated password, then localize to the engine."""
    stretched = (password * (1048576 // len(password) + 1))[:1048576]
    return localize(hash_fn(stretched).digest(), engine_id, hash_fn)


def localize(key: bytes, engine_id: bytes, hash_fn: Callable[..., Any]) -> bytes:
    return hash_fn(key + engine_id + key).digest()


def priv_key(
    password: bytes, engine_id: bytes, hash_fn: Callable[..., Any], priv_protocol: str
) -> bytes:
    """The localized privacy key, extended per draft-reeder when the hash is too short."""
    key = password_to_key(password, engine_id, hash_fn)
    size = PRIV_KEY_BYTES[priv_protocol]
    while len(key) < size:
        key += password_to_key(key, engine_id, hash_fn)
    return key[:size]


def _des(key: bytes) -> Any:
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES

    return TripleDES(key[:8] * 3)  # three equal keys: single DES


@dataclass(frozen=True)
class Usm:
    """A v3 user as configured (passwords, not keys)."""

    user: bytes
    auth_protocol: str | None = None
    auth_password: bytes | None = None
    priv_protocol: str | None = None
    priv_password: bytes | None = None
    context: bytes = b""

    @property
    def flags(self) -> int:
        return (1 if self.auth_password else 0) | (2 if self.priv_password else 0)


@dataclass
class _Engine:
    """What discovery taught us about the authoritative engine, and the keys for it."""

    engine_id: bytes
    boots: int
    time_s: int
    synced_at: float
    auth_key: bytes = b""
    priv_key: bytes = b""

    def now(self) -> tuple[int, int]:
        return self.boots, self.time_s + int(time.monotonic() - self.synced_at)


@dataclass(frozen=True)
class V3Reply:
    msg_id: int
    flags: int
    engine_id: bytes
    boots: int
    time_s: int
    pdu: Pdu | None  # None: encrypted and not (yet) decryptable


# --- the client ---------------------------------------------------------------------------


class SnmpWireClient:
    """One agent, one connected UDP socket; thread-safe (one exchange at a time).

    Each request is sent up to ``retries + 1`` times, ``timeout_s`` apart;
    nothing blocks longer than that per request.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float,
        retries: int,
        community: bytes | None = None,
        usm: Usm | None = None,
    ) -> None:
        if (community is None) == (usm is None):
            raise ValueError("give a community (v2c) or a USM user (v3)")
        self.host, self.port = host, port
        self.timeout_s, self.retries = timeout_s, retries
        self.community, self.usm = community, usm
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._next_id = int.from_bytes(os.urandom(3), "big")
        self._salt = int.from_bytes(os.urandom(8), "big")
        self._engine: _Engine | None = None

    # --- public -------------------------------------------------------------------------

    def get(self, oids: Sequence[str]) -> list[VarBind]:
        return self.request(GET, oids)

    def get_next(self, oids: Sequence[str]) -> list[VarBind]:
        return self.request(GET_NEXT, oids)

    def get_bulk(
        self, oids: Sequence[str], max_repetitions: int, non_repeaters: int = 0
    ) -> list[VarBind]:
        return self.request(GET_BULK, oids, non_repeaters, max_repetitions)

    def walk(
        self, root: str, max_repetitions: int, on_page: Callable[[], None] | None = None
    ) -> list[VarBind]:
        """Every binding under ``root`` (GETBULK pages; stops at the subtree's end).

        An agent whose next OID does not increase would loop forever: Malformed.
        """
        if max_repetitions < 1:
            raise ValueError(f"max_repetitions must be at least 1, not {max_repetitions}")
        root = root.strip(".")
        prefix = root + "."
        rows: list[VarBind] = []
        cursor = root
        last_key: tuple[int, ...] | None = None
        while True:
            page = self.get_bulk([cursor], max_repetitions)
            if on_page is not None:
                on_page()
            if not page:  # RFC 3416 4.2.3: at least one binding per requested OID
                raise Malformed(f"empty GETBULK response after {cursor}")
            for oid, value in page:
                if value is END_OF_MIB_VIEW or not oid.startswith(prefix):
                    return rows
                if isinstance(value, Missing):
                    continue
                rows.append((oid, value))
            cursor = page[-1][0]
            key = tuple(map(int, cursor.split(".")))
            if last_key is not None and key <= last_key:
                raise Malformed(
                    f"agent went backwards: {cursor} after {'.'.join(map(str, last_key))}"
                )
            last_key = key

    def close(self) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    # --- one request ------------------------------------------------------------------------

    def request(self, tag: int, oids: Sequence[str], a: int = 0, b: int = 0) -> list[VarBind]:
        var_binds = encode_var_binds([(o, b"\x05\x00") for o in oids])
        with self._lock:
            request_id = self._new_id()
            pdu_bytes = encode_pdu(tag, request_id, a, b, var_binds)
            pdu = (
                self._v2c(pdu_bytes, request_id)
                if self.usm is None
                else self._v3(pdu_bytes, request_id)
            )
        if pdu.error_status:
            raise ErrorStatus(pdu.error_status, pdu.error_index, pdu.var_binds)
        return pdu.var_binds

    def _new_id(self) -> int:
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        return self._next_id

    def _socket(self) -> socket.socket:
        if self._sock is None:
            family, kind, proto, _, address = socket.getaddrinfo(
                self.host, self.port, type=socket.SOCK_DGRAM
            )[0]
            sock = socket.socket(family, kind, proto)
            try:
                sock.connect(address)  # the kernel drops other senders
            except OSError:
                sock.close()
                raise
            self._sock = sock
        return self._sock

    def _exchange(self, message: bytes, accept: Callable[[bytes], Any]) -> Any:
        """Send ``message`` up to ``retries + 1`` times; the first reply ``accept`` takes.

        ``accept`` returns None for a stale reply (ignored) and raises Malformed.
        """
        sock = self._socket()
        for _ in range(self.retries + 1):
            with contextlib.suppress(ConnectionRefusedError):  # an earlier ICMP unreachable
                sock.send(message)
            deadline = time.monotonic() + self.timeout_s
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                try:
                    data = sock.recv(65535)
                except TimeoutError:
                    break
                except ConnectionRefusedError:
                    continue  # nothing listens (yet): wait out this try
                reply = accept(data)
                if reply is not None:
                    return reply
        raise NoAnswer(f"{self.retries + 1} tries of {self.timeout_s:g} s")

    # --- v2c ----------------------------------------------------------------------------------

    def _v2c(self, pdu_bytes: bytes, request_id: int) -> Pdu:
        assert self.community is not None
        message = encode_v2c(self.community, pdu_bytes)

        def accept(data: bytes) -> Pdu | None:
            _community, pdu = decode_v2c(data)
            if pdu.request_id != request_id:
                return None
            if pdu.tag != RESPONSE:
                raise Malformed("a v2c agent answered with a Report PDU")
            return pdu

        return self._exchange(message, accept)

    # --- v3 -------------------------------------------------------------------------------------

    def _v3(self, pdu_bytes: bytes, request_id: int) -> Pdu:
        assert self.usm is not None
        for _ in range(3):  # discovery, then at most one time re-sync and one re-discovery
            if self._engine is None:
                self._engine = self._discover()
            engine = self._engine
            msg_id = self._new_id()
            reply = self._exchange(
                self._v3_message(engine, msg_id, pdu_bytes, self.usm.flags | 4),
                functools.partial(self._accept_v3, msg_id=msg_id),
            )
            pdu = reply.pdu
            assert pdu is not None
            if pdu.tag == RESPONSE:
                if pdu.request_id != request_id:
                    raise Malformed(f"response to request {pdu.request_id}, sent {request_id}")
                if reply.flags & 3 != self.usm.flags:
                    raise Malformed("response at another security level than the request")
                return pdu
            report = _report_name(pdu)
            if report not in USM_REPORTS.values():
                raise Malformed(f"agent answered with a {report}")
            if report == _NOT_IN_TIME_WINDOW and reply.flags & 1:
                engine.boots, engine.time_s = reply.boots, reply.time_s
                engine.synced_at = time.monotonic()
                continue
            if report == _UNKNOWN_ENGINE_ID:
                self._engine = None
                continue
            raise Refused(report)
        raise Refused("usmStatsNotInTimeWindows")

    def _discover(self) -> _Engine:
        """RFC 3414 4: a noAuthNoPriv probe; the report carries engine id, boots and time."""
        assert self.usm is not None
        msg_id = self._new_id()
        probe = _Engine(b"", 0, 0, time.monotonic())
        pdu_bytes = encode_pdu(GET, self._new_id(), 0, 0, tlv(SEQUENCE, b""))
        reply = self._exchange(
            self._v3_message(probe, msg_id, pdu_bytes, 4, user=b""),
            lambda data: self._accept_v3(data, msg_id, discovering=True),
        )
        if not reply.engine_id:
            raise Malformed("discovery report without an engine id")
        engine = _Engine(reply.engine_id, reply.boots, reply.time_s, time.monotonic())
        usm = self.usm
        if usm.auth_password:
            hash_fn = AUTH[usm.auth_protocol or "SHA"][0]
            engine.auth_key = password_to_key(usm.auth_password, engine.engine_id, hash_fn)
            if usm.priv_password:
                engine.priv_key = priv_key(
                    usm.priv_password, engine.engine_id, hash_fn, usm.priv_protocol or "AES"
                )
        return engine

    def _v3_message(
        self, engine: _Engine, msg_id: int, pdu_bytes: bytes, flags: int, user: bytes | None = None
    ) -> bytes:
        usm = self.usm
        assert usm is not None
        boots, now = engine.now() if engine.engine_id else (0, 0)
        scoped = tlv(
            SEQUENCE,
            tlv(OCTET_STRING, engine.engine_id) + tlv(OCTET_STRING, usm.context) + pdu_bytes,
        )
        salt = b""
        if flags & 2:
            scoped, salt = self._encrypt(engine, boots, now, scoped)
            scoped = tlv(OCTET_STRING, scoped)
        mac_size = AUTH[usm.auth_protocol or "SHA"][1] if flags & 1 else 0
        head = (
            tlv(OCTET_STRING, engine.engine_id) + encode_integer(boots) + encode_integer(now)
            + tlv(OCTET_STRING, usm.user if user is None else user)
        )  # fmt: skip
        params = tlv(SEQUENCE, head + tlv(OCTET_STRING, bytes(mac_size)) + tlv(OCTET_STRING, salt))
        mac_at = len(params) - len(salt) - 2 - mac_size  # the MAC's offset inside params
        header = tlv(
            SEQUENCE,
            encode_integer(msg_id) + encode_integer(65507) + tlv(OCTET_STRING, bytes((flags,)))
            + encode_integer(3),
        )  # fmt: skip
        params_tlv = tlv(OCTET_STRING, params)
        body = encode_integer(3) + header + params_tlv + scoped
        message = tlv(SEQUENCE, body)
        if not mac_size:
            return message
        mac_at += len(message) - len(body) + len(encode_integer(3)) + len(header)
        mac_at += len(params_tlv) - len(params)
        mac = self._mac(engine.auth_key, message)
        return message[:mac_at] + mac + message[mac_at + mac_size :]

    def _mac(self, key: bytes, message: bytes) -> bytes:
        assert self.usm is not None
        hash_fn, size = AUTH[self.usm.auth_protocol or "SHA"]
        return hmac.new(key, message, hash_fn).digest()[:size]

    def _encrypt(self, engine: _Engine, boots: int, now: int, plain: bytes) -> tuple[bytes, bytes]:
        assert self.usm is not None
        self._salt = (self._salt + 1) & 0xFFFFFFFFFFFFFFFF
        if self.usm.priv_protocol == "DES":
            salt = boots.to_bytes(4, "big") + (self._salt & 0xFFFFFFFF).to_bytes(4, "big")
            iv = bytes(x ^ y for x, y in zip(engine.priv_key[8:16], salt, strict=True))
            padded = plain + bytes(-len(plain) % 8)
            encryptor = Cipher(_des(engine.priv_key), modes.CBC(iv)).encryptor()
            return encryptor.update(padded) + encryptor.finalize(), salt
        salt = self._salt.to_bytes(8, "big")
        iv = boots.to_bytes(4, "big") + now.to_bytes(4, "big") + salt
        encryptor = Cipher(algorithms.AES(engine.priv_key), CFB(iv)).encryptor()
        return encryptor.update(plain) + encryptor.finalize(), salt

    def _decrypt(self, boots: int, time_s: int, salt: bytes, cipher_text: bytes) -> bytes:
        assert self.usm is not None and self._engine is not None
        key = self._engine.priv_key
        if self.usm.priv_protocol == "DES":
            if len(salt) != 8 or len(cipher_text) % 8:
                raise Malformed("DES: salt or cipher text of a wrong size")
            iv = bytes(x ^ y for x, y in zip(key[8:16], salt, strict=True))
            decryptor = Cipher(_des(key), modes.CBC(iv)).decryptor()
        else:
            if len(salt) != 8:
                raise Malformed("AES: salt of a wrong size")
            iv = boots.to_bytes(4, "big") + time_s.to_bytes(4, "big") + salt
            decryptor = Cipher(algorithms.AES(key), CFB(iv)).decryptor()
        return decryptor.update(cipher_text) + decryptor.finalize()

    def _accept_v3(self, data: bytes, msg_id: int, discovering: bool = False) -> V3Reply | None:
        """Decode a v3 reply; None if it answers another message."""
        end = len(data)
        start, stop = _expect(data, 0, end, SEQUENCE, "message")
        if stop != end:
            raise Malformed("trailing bytes after the message")
        version, pos = _read_integer(data, start, stop, "version")
        if version != 3:
            raise Malformed(f"message version {version}, expected 3")
        g_start, g_stop = _expect(data, pos, stop, SEQUENCE, "msgGlobalData")
        reply_id, p = _read_integer(data, g_start, g_stop, "msgID")
        _max_size, p = _read_integer(data, p, g_stop, "msgMaxSize")
        f_start, f_stop = _expect(data, p, g_stop, OCTET_STRING, "msgFlags")
        if f_stop - f_start != 1:
            raise Malformed("msgFlags is not one byte")
        flags = data[f_start]
        model, _ = _read_integer(data, f_stop, g_stop, "msgSecurityModel")
        if model != 3:
            raise Malformed(f"security model {model}, expected USM (3)")
        if flags & 2 and not flags & 1:
            raise Malformed("privacy without authentication")
        sp_start, sp_stop = _expect(data, g_stop, stop, OCTET_STRING, "msgSecurityParameters")
        s_start, s_stop = _expect(data, sp_start, sp_stop, SEQUENCE, "UsmSecurityParameters")
        e_start, e_stop = _expect(data, s_start, s_stop, OCTET_STRING, "engine id")
        boots, p = _read_integer(data, e_stop, s_stop, "engine boots")
        time_s, p = _read_integer(data, p, s_stop, "engine time")
        _u_start, p = _expect(data, p, s_stop, OCTET_STRING, "user name")
        mac_start, mac_stop = _expect(data, p, s_stop, OCTET_STRING, "auth parameters")
        salt_start, salt_stop = _expect(data, mac_stop, s_stop, OCTET_STRING, "priv parameters")
        if reply_id != msg_id:
            return None
        engine_id = data[e_start:e_stop]
        usm = self.usm
        assert usm is not None
        if flags & 1:
            engine = self._engine
            if engine is None or discovering or not usm.auth_password:
                raise Malformed("authenticated reply to an unauthenticated request")
            if engine_id != engine.engine_id:
                raise Malformed("authenticated reply from another engine id")
            zeroed = data[:mac_start] + bytes(mac_stop - mac_start) + data[mac_stop:]
            if not hmac.compare_digest(
                self._mac(engine.auth_key, zeroed), data[mac_start:mac_stop]
            ):
                raise Malformed("reply fails authentication (HMAC)")
        if flags & 2:
            if not usm.priv_password:
                raise Malformed("encrypted reply to a request without privacy")
            c_start, c_stop = _expect(data, sp_stop, stop, OCTET_STRING, "encryptedPDU")
            plain = self._decrypt(boots, time_s, data[salt_start:salt_stop], data[c_start:c_stop])
            try:
                sc_start, sc_stop = _expect(plain, 0, len(plain), SEQUENCE, "scopedPDU")
            except Malformed as exc:
                raise Malformed(f"reply does not decrypt ({exc})") from None
            scoped, pos, stop = plain, sc_start, sc_stop  # padding after the SEQUENCE is allowed
        else:
            sc_start, sc_stop = _expect(data, sp_stop, stop, SEQUENCE, "scopedPDU")
            if sc_stop != stop:
                raise Malformed("trailing bytes after the scopedPDU")
            scoped, pos, stop = data, sc_start, sc_stop
        _ce_start, p = _expect(scoped, pos, stop, OCTET_STRING, "contextEngineID")
        _cn_start, p = _expect(scoped, p, stop, OCTET_STRING, "contextName")
        pdu = decode_pdu(scoped, p, stop)
        return V3Reply(reply_id, flags, engine_id, boots, time_s, pdu)


def _report_name(pdu: Pdu) -> str:
    if not pdu.var_binds:
        return "Report without a variable binding"
    oid = pdu.var_binds[0][0]
    return USM_REPORTS.get(oid, f"Report of {oid}")
