"""SNMP's BER as the wire client needs it: tags, the Missing markers, the wire errors,
and encoding/decoding of exactly the SMI types SNMP uses, straight from the bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


def expect(data: bytes, pos: int, end: int, tag: int, what: str) -> tuple[int, int]:
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


def read_integer(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    start, stop = expect(data, pos, end, INTEGER, what)
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
    request_id, pos = read_integer(data, start, stop, "request-id")
    status, pos = read_integer(data, pos, stop, "error-status")
    index, pos = read_integer(data, pos, stop, "error-index")
    vb_start, vb_stop = expect(data, pos, stop, SEQUENCE, "VarBindList")
    if vb_stop != stop:
        raise Malformed("trailing bytes after the VarBindList")
    return Pdu(tag, request_id, status, index, decode_var_binds(data, vb_start, vb_stop))


def decode_v2c(data: bytes) -> tuple[bytes, Pdu]:
    """``(community, pdu)`` of a v2c message."""
    start, stop = expect(data, 0, len(data), SEQUENCE, "message")
    if stop != len(data):
        raise Malformed("trailing bytes after the message")
    version, pos = read_integer(data, start, stop, "version")
    if version != 1:
        raise Malformed(f"message version {version}, expected 1 (v2c)")
    c_start, c_stop = expect(data, pos, stop, OCTET_STRING, "community")
    return data[c_start:c_stop], decode_pdu(data, c_stop, stop)
