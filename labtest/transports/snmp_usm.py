"""SNMPv3 USM pieces (RFC 3414, 3826, 7860): auth and priv tables, password-to-key and
key localization, the user's settings and the discovered engine.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from labtest.transports.snmp_ber import Pdu

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
NOT_IN_TIME_WINDOW = "usmStatsNotInTimeWindows"
UNKNOWN_ENGINE_ID = "usmStatsUnknownEngineIDs"


class _Digest(Protocol):
    def digest(self) -> bytes: ...


def password_to_ku(password: bytes, hash_fn: Callable[[bytes], _Digest]) -> bytes:
    """RFC 3414 A.2, the user's key Ku: the hash of 1 MiB of the repeated password.
    Apart from ``localize`` so RFC 3414 A.3's intermediate keys can be checked."""
    stretched = (password * (1048576 // len(password) + 1))[:1048576]
    return hash_fn(stretched).digest()


def password_to_key(password: bytes, engine_id: bytes, hash_fn: Callable[..., Any]) -> bytes:
    """RFC 3414 A.2: Ku localized to the engine (Kul)."""
    return localize(password_to_ku(password, hash_fn), engine_id, hash_fn)


def localize(key: bytes, engine_id: bytes, hash_fn: Callable[..., Any]) -> bytes:
    digest: bytes = hash_fn(key + engine_id + key).digest()
    return digest


def priv_key(
    password: bytes, engine_id: bytes, hash_fn: Callable[..., Any], priv_protocol: str
) -> bytes:
    """The localized privacy key, extended per draft-reeder when the hash is too short."""
    key = password_to_key(password, engine_id, hash_fn)
    size = PRIV_KEY_BYTES[priv_protocol]
    while len(key) < size:
        key += password_to_key(key, engine_id, hash_fn)
    return key[:size]


def des(key: bytes) -> Any:
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
class Engine:
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
