"""The chunked format itself: its constants, the header codec and its
exceptions (docs/stream-format.md has the layout and the security argument).

    header  = b"CB3STRM" || 0x01 || be32(chunk_size) || nonce_prefix (15 random bytes)
    chunk i = ChaCha20-BLAKE3(key, nonce_prefix || be64(i) || last, plaintext_i,
                              associated_data = header || caller's associated data)

This module is the format's one place in Python; the chunks themselves are
sealed and opened by the Rust core (rustlib/src/chunked.rs).
"""

from __future__ import annotations

import struct

# The format's exceptions, defined with every exception of cb3 in cb3/errors.py.
from ..errors import ChunkedError as ChunkedError, ChunkedHeaderError as ChunkedHeaderError
from ..errors import ChunkedTruncatedError as ChunkedTruncatedError, StreamError as StreamError
from ..errors import StreamHeaderError as StreamHeaderError, StreamTruncatedError as StreamTruncatedError

MAGIC = b"CB3STRM"
VERSION = 1
#: The header's size in bytes: magic, version, chunk size, nonce prefix.
CHUNKED_HEADER_SIZE = 27
PREFIX_SIZE = 15
#: The default plaintext bytes per chunk.
CHUNKED_CHUNK_SIZE = 64 * 1024
#: The smallest chunk size a header may give.
CHUNKED_MIN_CHUNK_SIZE = 64
#: The largest chunk size a header may give.
CHUNKED_MAX_CHUNK_SIZE = 1 << 24
TAG_SIZE = 32

# The names these had before the format was called chunked (the same values).
STREAM_HEADER_SIZE = CHUNKED_HEADER_SIZE
STREAM_CHUNK_SIZE = CHUNKED_CHUNK_SIZE
STREAM_MIN_CHUNK_SIZE = CHUNKED_MIN_CHUNK_SIZE
STREAM_MAX_CHUNK_SIZE = CHUNKED_MAX_CHUNK_SIZE


def encode_header(chunk_size: int, nonce_prefix: bytes) -> bytes:
    """The 27-byte header of the chunked format."""
    return MAGIC + bytes([VERSION]) + struct.pack(">I", chunk_size) + bytes(nonce_prefix)


def decode_header(header: bytes) -> tuple[int, bytes]:
    """(chunk_size, nonce_prefix) of a header, or ChunkedHeaderError."""
    if len(header) < CHUNKED_HEADER_SIZE:
        raise ChunkedHeaderError(
            f"not a cb3 stream: {len(header)} bytes, shorter than the {CHUNKED_HEADER_SIZE}-byte header"
        )
    if header[:7] != MAGIC:
        raise ChunkedHeaderError("not a cb3 stream: the input does not start with b'CB3STRM'")
    if header[7] != VERSION:
        raise ChunkedHeaderError(f"unsupported cb3 stream version {header[7]} (this cb3 reads version {VERSION})")
    (chunk_size,) = struct.unpack(">I", header[8:12])
    if not CHUNKED_MIN_CHUNK_SIZE <= chunk_size <= CHUNKED_MAX_CHUNK_SIZE:
        raise ChunkedHeaderError(
            f"invalid cb3 stream header: chunk size {chunk_size} is outside "
            f"{CHUNKED_MIN_CHUNK_SIZE}..{CHUNKED_MAX_CHUNK_SIZE}"
        )
    return chunk_size, bytes(header[12:CHUNKED_HEADER_SIZE])
