"""An independent pure-Python ChaCha20-BLAKE3, for cross-checking cb3.

Built only on PyPI ``blake3`` and pyca/``cryptography`` (and argon2-cffi for
the passphrase format), following the construction as written in the
chacha20-blake3 crate (see /work/shared/notes/chacha20-blake3.md, section 2):

    kdf       = BLAKE3-keyed(key, nonce24), first 72 XOF bytes
    enc_key   = kdf[0:32], auth_key = kdf[32:64], enc_nonce = kdf[64:72]
    ct        = pt XOR ChaCha20(enc_key, nonce8=enc_nonce, 64-bit counter from 0)
    tag       = BLAKE3-keyed(auth_key, aad || le64(|aad|) || ct || le64(|ct|))

Nothing here imports cb3. Not a test module (no ``test_`` prefix).
"""

from __future__ import annotations

import hmac
import struct

import blake3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

KEY_SIZE = 32
NONCE_SIZE = 24
TAG_SIZE = 32

# cryptography refuses to let the low 32-bit word of the counter wrap, so the
# keystream is produced in spans of at most 2**32 blocks (only relevant past
# 256 GiB, but kept correct).
_BLOCK = 64
_SPAN_BLOCKS = 2**32


class ReferenceDecryptionError(Exception):
    pass


def derive(key: bytes, nonce: bytes) -> tuple[bytes, bytes, bytes]:
    """(enc_key, auth_key, enc_nonce) for one message."""
    if len(key) != KEY_SIZE:
        raise ValueError("key must be 32 bytes")
    if len(nonce) != NONCE_SIZE:
        raise ValueError("nonce must be 24 bytes")
    out = blake3.blake3(bytes(nonce), key=bytes(key)).digest(length=72)
    return out[:32], out[32:64], out[64:72]


def chacha20_xor(enc_key: bytes, enc_nonce: bytes, data: bytes, counter: int = 0) -> bytes:
    """DJB ChaCha20 (64-bit counter, 64-bit nonce) XOR."""
    data = bytes(data)
    out = bytearray()
    pos = 0
    while pos < len(data):
        blocks_left_in_span = _SPAN_BLOCKS - (counter & 0xFFFFFFFF)
        take = min(len(data) - pos, blocks_left_in_span * _BLOCK)
        iv = struct.pack("<Q", counter) + bytes(enc_nonce)
        enc = Cipher(algorithms.ChaCha20(bytes(enc_key), iv), mode=None).encryptor()
        out += enc.update(data[pos : pos + take])
        pos += take
        counter = (counter + take // _BLOCK) % 2**64
    return bytes(out)


def mac(auth_key: bytes, aad: bytes, ct: bytes) -> bytes:
    h = blake3.blake3(key=auth_key)
    h.update(bytes(aad))
    h.update(struct.pack("<Q", len(aad)))
    h.update(bytes(ct))
    h.update(struct.pack("<Q", len(ct)))
    return h.digest()


def encrypt_detached(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes | None = None) -> tuple[bytes, bytes]:
    aad = b"" if aad is None else bytes(aad)
    enc_key, auth_key, enc_nonce = derive(key, nonce)
    ct = chacha20_xor(enc_key, enc_nonce, plaintext)
    return ct, mac(auth_key, aad, ct)


def encrypt(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes | None = None) -> bytes:
    ct, tag = encrypt_detached(key, nonce, plaintext, aad)
    return ct + tag


def decrypt_detached(key: bytes, nonce: bytes, ct: bytes, tag: bytes, aad: bytes | None = None) -> bytes:
    aad = b"" if aad is None else bytes(aad)
    enc_key, auth_key, enc_nonce = derive(key, nonce)
    if len(tag) != TAG_SIZE or not hmac.compare_digest(mac(auth_key, aad, ct), bytes(tag)):
        raise ReferenceDecryptionError("bad tag")
    return chacha20_xor(enc_key, enc_nonce, ct)


def decrypt(key: bytes, nonce: bytes, data: bytes, aad: bytes | None = None) -> bytes:
    data = bytes(data)
    if len(data) < TAG_SIZE:
        raise ReferenceDecryptionError("input shorter than the tag")
    return decrypt_detached(key, nonce, data[:-TAG_SIZE], data[-TAG_SIZE:], aad)


def stream_nonce(nonce: bytes, index: int) -> bytes:
    """The nonce of message ``index`` of a Stream started at ``nonce``:
    nonce[:16] || le64(le64(nonce[16:]) + index mod 2**64)."""
    if len(nonce) != NONCE_SIZE:
        raise ValueError("nonce must be 24 bytes")
    if not 0 <= index < 2**64:
        raise ValueError("index out of range")
    base = int.from_bytes(nonce[16:], "little")
    return bytes(nonce[:16]) + ((base + index) % 2**64).to_bytes(8, "little")


class ReferenceStream:
    """The Stream schedule: message i is encrypted under stream_nonce(nonce, i);
    the index stops (forever) at 2**64 - 1; decrypt advances only on success."""

    def __init__(self, key: bytes, nonce: bytes, message_index: int = 0) -> None:
        if not 0 <= message_index < 2**64 - 1:
            raise ValueError("message_index out of range")
        self.key = bytes(key)
        self.nonce = bytes(nonce)
        self.message_index = message_index

    def _check(self) -> None:
        if self.message_index >= 2**64 - 1:
            raise OverflowError("stream exhausted")

    def encrypt(self, data: bytes, aad: bytes | None = None) -> bytes:
        self._check()
        out = encrypt(self.key, stream_nonce(self.nonce, self.message_index), data, aad)
        self.message_index += 1
        return out

    def decrypt(self, data: bytes, aad: bytes | None = None) -> bytes:
        self._check()
        out = decrypt(self.key, stream_nonce(self.nonce, self.message_index), data, aad)
        self.message_index += 1
        return out


# ---- the chunked stream format (docs/stream-format.md), written from the
# document alone: header || chunk_0 || ... || chunk_n-1, each chunk sealed by
# encrypt() above with nonce prefix || be64(i) || last flag and associated
# data header || caller's associated data.

STREAM_MAGIC = b"CB3STRM"
STREAM_VERSION = 1
CHUNKED_HEADER_SIZE = 27
CHUNKED_MIN_CHUNK_SIZE = 64
CHUNKED_MAX_CHUNK_SIZE = 2**24


def stream_header(chunk_size: int, nonce_prefix: bytes) -> bytes:
    if len(nonce_prefix) != 15 or not CHUNKED_MIN_CHUNK_SIZE <= chunk_size <= CHUNKED_MAX_CHUNK_SIZE:
        raise ValueError("bad prefix or chunk size")
    return STREAM_MAGIC + bytes([STREAM_VERSION]) + chunk_size.to_bytes(4, "big") + bytes(nonce_prefix)


def stream_chunk_nonce(nonce_prefix: bytes, index: int, last: bool) -> bytes:
    return bytes(nonce_prefix) + index.to_bytes(8, "big") + (b"\x01" if last else b"\x00")


def stream_encrypt(
    key: bytes, plaintext: bytes, *, nonce_prefix: bytes, chunk_size: int = 65536, aad: bytes | None = None
) -> bytes:
    """A whole stream. Plaintext splits into chunk_size pieces; the final
    piece is 1..chunk_size bytes, or empty only for an empty plaintext."""
    header = stream_header(chunk_size, nonce_prefix)
    chunk_aad = header + (b"" if aad is None else bytes(aad))
    plaintext = bytes(plaintext)
    pieces = [plaintext[i : i + chunk_size] for i in range(0, len(plaintext), chunk_size)] or [b""]
    out = [header]
    for index, piece in enumerate(pieces):
        nonce = stream_chunk_nonce(nonce_prefix, index, index == len(pieces) - 1)
        out.append(encrypt(key, nonce, piece, chunk_aad))
    return b"".join(out)


def stream_decrypt(key: bytes, data: bytes, aad: bytes | None = None) -> bytes:
    """The plaintext, or ReferenceDecryptionError for anything invalid."""
    data = bytes(data)
    header = data[:CHUNKED_HEADER_SIZE]
    if len(header) < CHUNKED_HEADER_SIZE or header[:7] != STREAM_MAGIC or header[7] != STREAM_VERSION:
        raise ReferenceDecryptionError("bad header")
    chunk_size = int.from_bytes(header[8:12], "big")
    if not CHUNKED_MIN_CHUNK_SIZE <= chunk_size <= CHUNKED_MAX_CHUNK_SIZE:
        raise ReferenceDecryptionError("bad chunk size")
    prefix = header[12:]
    chunk_aad = header + (b"" if aad is None else bytes(aad))
    body = data[CHUNKED_HEADER_SIZE:]
    if not body:
        raise ReferenceDecryptionError("no chunk")
    piece = chunk_size + TAG_SIZE
    chunks = [body[i : i + piece] for i in range(0, len(body), piece)]
    out = []
    for index, chunk in enumerate(chunks):
        last = index == len(chunks) - 1
        if last and len(chunk) == TAG_SIZE and index != 0:
            raise ReferenceDecryptionError("empty final chunk after chunk 0")
        out.append(decrypt(key, stream_chunk_nonce(prefix, index, last), chunk, chunk_aad))
    return b"".join(out)


# ---- the passphrase format (docs/passphrase-format.md), written from the
# document alone with argon2-cffi's Argon2id: a header that carries the KDF's
# parameters, a salt and the file key sealed under the passphrase-derived key
# (nonce of 24 zero bytes, associated data = the header up to the wrapped
# key); an encrypted file is that header followed by a chunked stream under
# the file key whose associated data starts with the whole header.

PASS_MAGIC = b"CB3PASS"
PASS_VERSION = 1
PASS_PURPOSE_FILE = 1
PASS_PURPOSE_KEY_FILE = 2
PASS_KDF_ARGON2ID = 1
PASS_PREFIX_SIZE = 20


def argon2id(passphrase: bytes, salt: bytes, time_cost: int, memory_cost: int, parallelism: int,
             hash_len: int = 32) -> bytes:
    """Argon2id, version 0x13, no secret and no associated data (argon2-cffi)."""
    import pytest

    low_level = pytest.importorskip("argon2.low_level", reason="argon2-cffi, the independent Argon2id, is not installed")
    ARGON2_VERSION, Type, hash_secret_raw = low_level.ARGON2_VERSION, low_level.Type, low_level.hash_secret_raw

    assert ARGON2_VERSION == 0x13
    return hash_secret_raw(bytes(passphrase), bytes(salt), time_cost, memory_cost, parallelism, hash_len, Type.ID)


def passphrase_header(passphrase: bytes, key: bytes, *, purpose: int, salt: bytes, time_cost: int,
                      memory_cost: int, parallelism: int) -> bytes:
    """magic || version || purpose || kdf || be32 t || be32 m || p || salt_len || salt || wrapped key || tag."""
    if len(key) != KEY_SIZE or not 16 <= len(salt) <= 64:
        raise ValueError("bad key or salt length")
    prefix = (PASS_MAGIC + bytes([PASS_VERSION, purpose, PASS_KDF_ARGON2ID]) + time_cost.to_bytes(4, "big")
              + memory_cost.to_bytes(4, "big") + bytes([parallelism, len(salt)]) + bytes(salt))
    wrap_key = argon2id(passphrase, salt, time_cost, memory_cost, parallelism)
    return prefix + encrypt(wrap_key, bytes(NONCE_SIZE), key, prefix)


def passphrase_open(header: bytes, passphrase: bytes, *, purpose: int) -> bytes:
    """The key a header wraps; ReferenceDecryptionError if it does not open."""
    header = bytes(header)
    if len(header) < PASS_PREFIX_SIZE or header[:7] != PASS_MAGIC or header[7] != PASS_VERSION:
        raise ReferenceDecryptionError("bad passphrase header")
    if header[8] != purpose or header[9] != PASS_KDF_ARGON2ID:
        raise ReferenceDecryptionError("other purpose or kdf")
    t, m = int.from_bytes(header[10:14], "big"), int.from_bytes(header[14:18], "big")
    p, salt_len = header[18], header[19]
    if not 16 <= salt_len <= 64 or len(header) != 84 + salt_len:
        raise ReferenceDecryptionError("bad salt length or header size")
    prefix = header[: PASS_PREFIX_SIZE + salt_len]
    salt = prefix[PASS_PREFIX_SIZE:]
    wrap_key = argon2id(passphrase, salt, t, m, p)
    return decrypt(wrap_key, bytes(NONCE_SIZE), header[len(prefix) :], prefix)


def passphrase_encrypt(passphrase: bytes, plaintext: bytes, *, file_key: bytes, salt: bytes, nonce_prefix: bytes,
                       time_cost: int, memory_cost: int, parallelism: int, chunk_size: int = 65536,
                       aad: bytes | None = None) -> bytes:
    header = passphrase_header(passphrase, file_key, purpose=PASS_PURPOSE_FILE, salt=salt, time_cost=time_cost,
                               memory_cost=memory_cost, parallelism=parallelism)
    stream_aad = header + (b"" if aad is None else bytes(aad))
    return header + stream_encrypt(file_key, plaintext, nonce_prefix=nonce_prefix, chunk_size=chunk_size,
                                   aad=stream_aad)


def passphrase_decrypt(passphrase: bytes, data: bytes, aad: bytes | None = None) -> bytes:
    data = bytes(data)
    if len(data) < PASS_PREFIX_SIZE:
        raise ReferenceDecryptionError("no passphrase header")
    size = 84 + data[19]
    header = data[:size]
    file_key = passphrase_open(header, passphrase, purpose=PASS_PURPOSE_FILE)
    return stream_decrypt(file_key, data[size:], header + (b"" if aad is None else bytes(aad)))
