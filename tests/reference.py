"""An independent pure-Python ChaCha20-BLAKE3, for cross-checking cb3.

Built only on PyPI ``blake3`` and pyca/``cryptography``, following the
construction as written in the chacha20-blake3 crate (see
/work/shared/notes/chacha20-blake3.md, section 2):

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
