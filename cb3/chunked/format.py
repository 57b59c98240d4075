"""The chunked format itself: its constants, the header codec and its
exceptions (docs/stream-format.md has the layout and the security argument).

    header  = b"CB3STRM" || 0x01 || be32(chunk_size) || nonce_prefix (15 random bytes)
    chunk i = ChaCha20-BLAKE3(key, nonce_prefix || be64(i) || last, plaintext_i,
                              associated_data = header || caller's associated data)

The constants and the header's rules are the Rust core's (rustlib/include/cb3.h,
exported by the extension); the chunks themselves are sealed and opened there too
(rustlib/core/src/chunked.rs).
"""

from __future__ import annotations

from .. import _cb3

# The format's exceptions, defined with every exception of cb3 in cb3/errors.py.
from ..errors import ChunkedError as ChunkedError, ChunkedHeaderError as ChunkedHeaderError
from ..errors import ChunkedTruncatedError as ChunkedTruncatedError

#: The header's size in bytes: magic, version, chunk size, nonce prefix.
CHUNKED_HEADER_SIZE: int = _cb3.CHUNKED_HEADER_SIZE
#: The default plaintext bytes per chunk.
CHUNKED_CHUNK_SIZE: int = _cb3.CHUNKED_DEFAULT_CHUNK_SIZE
#: The smallest chunk size a header may give.
CHUNKED_MIN_CHUNK_SIZE: int = _cb3.CHUNKED_MIN_CHUNK_SIZE
#: The largest chunk size a header may give.
CHUNKED_MAX_CHUNK_SIZE: int = _cb3.CHUNKED_MAX_CHUNK_SIZE
PREFIX_SIZE: int = _cb3.CHUNKED_PREFIX_SIZE
TAG_SIZE: int = _cb3.TAG_SIZE


def encode_header(chunk_size: int, nonce_prefix: bytes) -> bytes:
    """The 27-byte header of the chunked format (rustlib's codec,
    cb3_chunked_header_encode, which refuses a chunk size out of range)."""
    return _cb3.chunked_header_encode(chunk_size, nonce_prefix)


def decode_header(header: bytes) -> tuple[int, bytes]:
    """(chunk_size, nonce_prefix) of a header, or ChunkedHeaderError (rustlib's
    codec, cb3_chunked_header_decode, which names the rule it breaks)."""
    return _cb3.chunked_header_decode(header)
