"""The chunked format itself: its constants, the header codec and its
exceptions (docs/stream-format.md has the layout and the security argument).

    header  = b"CB3STRM" || 0x01 || be32(chunk_size) || nonce_prefix (15 random bytes)
    chunk i = ChaCha20-BLAKE3(key, nonce_prefix || be64(i) || last, plaintext_i,
                              associated_data = header || caller's associated data)

This module is the format's one place in Python; the chunks themselves are
sealed and opened by the Rust core (rustlib/src/chunked.rs).
"""

from __future__ import annotations

from .. import _cb3

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
    """The 27-byte header of the chunked format (rustlib's codec,
    cb3_chunked_header_encode)."""
    return _cb3.chunked_header_encode(chunk_size, nonce_prefix)


def decode_header(header: bytes) -> tuple[int, bytes]:
    """(chunk_size, nonce_prefix) of a header, or ChunkedHeaderError (rustlib's
    codec, cb3_chunked_header_decode, which names the rule it breaks)."""
    return _cb3.chunked_header_decode(header)
