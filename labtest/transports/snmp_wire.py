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

The parts: ``snmp_ber`` (tags, markers, errors, BER), ``snmp_usm`` (v3 keys and
settings); this module is the client and names their public parts for callers.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

try:  # cryptography >= 47 keeps CFB (and DES) among the "decrepit" primitives
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - older cryptography
    CFB = modes.CFB  # type: ignore[misc]
from labtest.transports.snmp_ber import (
    COUNTER32,
    COUNTER64,
    END_OF_MIB_VIEW,
    END_OF_MIB_VIEW_TAG,
    ERROR_STATUS,
    GAUGE32,
    GET,
    GET_BULK,
    GET_NEXT,
    INTEGER,
    IP_ADDRESS,
    NO_SUCH_INSTANCE,
    NO_SUCH_INSTANCE_TAG,
    NO_SUCH_OBJECT,
    NO_SUCH_OBJECT_TAG,
    NULL,
    OBJECT_IDENTIFIER,
    OCTET_STRING,
    OPAQUE,
    REPORT,
    RESPONSE,
    SEQUENCE,
    SET,
    TIME_TICKS,
    ErrorStatus,
    Malformed,
    Missing,
    NoAnswer,
    Pdu,
    Refused,
    VarBind,
    WireError,
    decode_oid,
    decode_pdu,
    decode_v2c,
    decode_value,
    decode_var_binds,
    encode_integer,
    encode_oid,
    encode_pdu,
    encode_v2c,
    encode_value,
    encode_var_binds,
    expect,
    read_integer,
    read_tlv,
    tlv,
)
from labtest.transports.snmp_usm import (
    AUTH,
    NOT_IN_TIME_WINDOW,
    PRIV_KEY_BYTES,
    UNKNOWN_ENGINE_ID,
    USM_REPORTS,
    Engine,
    Usm,
    V3Reply,
    des,
    localize,
    password_to_key,
    priv_key,
)

__all__ = [
    "AUTH",
    "COUNTER32",
    "COUNTER64",
    "END_OF_MIB_VIEW",
    "END_OF_MIB_VIEW_TAG",
    "ERROR_STATUS",
    "GAUGE32",
    "GET",
    "GET_BULK",
    "GET_NEXT",
    "INTEGER",
    "IP_ADDRESS",
    "NO_SUCH_INSTANCE",
    "NO_SUCH_INSTANCE_TAG",
    "NO_SUCH_OBJECT",
    "NO_SUCH_OBJECT_TAG",
    "NULL",
    "OBJECT_IDENTIFIER",
    "OCTET_STRING",
    "OPAQUE",
    "PRIV_KEY_BYTES",
    "REPORT",
    "RESPONSE",
    "SEQUENCE",
    "SET",
    "TIME_TICKS",
    "USM_REPORTS",
    "ErrorStatus",
    "Malformed",
    "Missing",
    "NoAnswer",
    "Pdu",
    "Refused",
    "SnmpWireClient",
    "Usm",
    "V3Reply",
    "VarBind",
    "WireError",
    "decode_oid",
    "decode_pdu",
    "decode_v2c",
    "decode_value",
    "decode_var_binds",
    "encode_integer",
    "encode_oid",
    "encode_pdu",
    "encode_v2c",
    "encode_value",
    "encode_var_binds",
    "localize",
    "password_to_key",
    "priv_key",
    "read_tlv",
    "tlv",
]

_R = TypeVar("_R")  # what an exchange's ``accept`` takes a reply as


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
        self._engine: Engine | None = None

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

    def _exchange(self, message: bytes, accept: Callable[[bytes], _R | None]) -> _R:
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
            if report == NOT_IN_TIME_WINDOW and reply.flags & 1:
                engine.boots, engine.time_s = reply.boots, reply.time_s
                engine.synced_at = time.monotonic()
                continue
            if report == UNKNOWN_ENGINE_ID:
                self._engine = None
                continue
            raise Refused(report)
        raise Refused("usmStatsNotInTimeWindows")

    def _discover(self) -> Engine:
        """RFC 3414 4: a noAuthNoPriv probe; the report carries engine id, boots and time."""
        assert self.usm is not None
        msg_id = self._new_id()
        probe = Engine(b"", 0, 0, time.monotonic())
        pdu_bytes = encode_pdu(GET, self._new_id(), 0, 0, tlv(SEQUENCE, b""))
        reply = self._exchange(
            self._v3_message(probe, msg_id, pdu_bytes, 4, user=b""),
            lambda data: self._accept_v3(data, msg_id, discovering=True),
        )
        if not reply.engine_id:
            raise Malformed("discovery report without an engine id")
        engine = Engine(reply.engine_id, reply.boots, reply.time_s, time.monotonic())
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
        self, engine: Engine, msg_id: int, pdu_bytes: bytes, flags: int, user: bytes | None = None
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

    def _encrypt(self, engine: Engine, boots: int, now: int, plain: bytes) -> tuple[bytes, bytes]:
        assert self.usm is not None
        self._salt = (self._salt + 1) & 0xFFFFFFFFFFFFFFFF
        if self.usm.priv_protocol == "DES":
            salt = boots.to_bytes(4, "big") + (self._salt & 0xFFFFFFFF).to_bytes(4, "big")
            iv = bytes(x ^ y for x, y in zip(engine.priv_key[8:16], salt, strict=True))
            padded = plain + bytes(-len(plain) % 8)
            encryptor = Cipher(des(engine.priv_key), modes.CBC(iv)).encryptor()
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
            decryptor = Cipher(des(key), modes.CBC(iv)).decryptor()
        else:
            if len(salt) != 8:
                raise Malformed("AES: salt of a wrong size")
            iv = boots.to_bytes(4, "big") + time_s.to_bytes(4, "big") + salt
            decryptor = Cipher(algorithms.AES(key), CFB(iv)).decryptor()
        return decryptor.update(cipher_text) + decryptor.finalize()

    def _accept_v3(self, data: bytes, msg_id: int, discovering: bool = False) -> V3Reply | None:
        """Decode a v3 reply; None if it answers another message."""
        end = len(data)
        start, stop = expect(data, 0, end, SEQUENCE, "message")
        if stop != end:
            raise Malformed("trailing bytes after the message")
        version, pos = read_integer(data, start, stop, "version")
        if version != 3:
            raise Malformed(f"message version {version}, expected 3")
        g_start, g_stop = expect(data, pos, stop, SEQUENCE, "msgGlobalData")
        reply_id, p = read_integer(data, g_start, g_stop, "msgID")
        _max_size, p = read_integer(data, p, g_stop, "msgMaxSize")
        f_start, f_stop = expect(data, p, g_stop, OCTET_STRING, "msgFlags")
        if f_stop - f_start != 1:
            raise Malformed("msgFlags is not one byte")
        flags = data[f_start]
        model, _ = read_integer(data, f_stop, g_stop, "msgSecurityModel")
        if model != 3:
            raise Malformed(f"security model {model}, expected USM (3)")
        if flags & 2 and not flags & 1:
            raise Malformed("privacy without authentication")
        sp_start, sp_stop = expect(data, g_stop, stop, OCTET_STRING, "msgSecurityParameters")
        s_start, s_stop = expect(data, sp_start, sp_stop, SEQUENCE, "UsmSecurityParameters")
        e_start, e_stop = expect(data, s_start, s_stop, OCTET_STRING, "engine id")
        boots, p = read_integer(data, e_stop, s_stop, "engine boots")
        time_s, p = read_integer(data, p, s_stop, "engine time")
        _u_start, p = expect(data, p, s_stop, OCTET_STRING, "user name")
        mac_start, mac_stop = expect(data, p, s_stop, OCTET_STRING, "auth parameters")
        salt_start, salt_stop = expect(data, mac_stop, s_stop, OCTET_STRING, "priv parameters")
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
            c_start, c_stop = expect(data, sp_stop, stop, OCTET_STRING, "encryptedPDU")
            plain = self._decrypt(boots, time_s, data[salt_start:salt_stop], data[c_start:c_stop])
            try:
                sc_start, sc_stop = expect(plain, 0, len(plain), SEQUENCE, "scopedPDU")
            except Malformed as exc:
                raise Malformed(f"reply does not decrypt ({exc})") from None
            scoped, pos, stop = plain, sc_start, sc_stop  # padding after the SEQUENCE is allowed
        else:
            sc_start, sc_stop = expect(data, sp_stop, stop, SEQUENCE, "scopedPDU")
            if sc_stop != stop:
                raise Malformed("trailing bytes after the scopedPDU")
            scoped, pos, stop = data, sc_start, sc_stop
        _ce_start, p = expect(scoped, pos, stop, OCTET_STRING, "contextEngineID")
        _cn_start, p = expect(scoped, p, stop, OCTET_STRING, "contextName")
        pdu = decode_pdu(scoped, p, stop)
        return V3Reply(reply_id, flags, engine_id, boots, time_s, pdu)


def _report_name(pdu: Pdu) -> str:
    if not pdu.var_binds:
        return "Report without a variable binding"
    oid = pdu.var_binds[0][0]
    return USM_REPORTS.get(oid, f"Report of {oid}")
