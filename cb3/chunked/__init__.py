"""Encrypting data of any size: cb3's chunked format.

STREAM (Hoang, Reyhanitabar, Rogaway, Vizár, CRYPTO 2015) over
ChaCha20-BLAKE3, laid out as age v1 and Tink lay it out. The exact format and
its security argument are in docs/stream-format.md:

    header  = b"CB3STRM" || 0x01 || be32(chunk_size) || nonce_prefix (15 random bytes)
    chunk i = ChaCha20-BLAKE3(key, nonce_prefix || be64(i) || last, plaintext_i,
                              associated_data = header || caller's associated data)

    with open("big.iso", "rb") as src, open("big.iso.cb3", "wb") as dst:
        cb3.encrypt_file(key, src, dst)              # or paths; or:
    with open("out.cb3", "wb") as f, cb3.EncryptingWriter(f, key) as w:
        w.write(data)                                # close() seals the final chunk
    with open("out.cb3", "rb") as f, cb3.DecryptingReader(f, key) as r:
        r.seek(10**9); r.read(4096)                  # random access: decrypts one chunk

The chunk work runs in the Rust core (rustlib/core/src/chunked.rs), in batches of
consecutive chunks, with the GIL released and, with ``max_threads``, split
over the Rust core's threads; that is the one concurrency engine of the
writer, the reader and the file helpers (which also write on a thread of
their own meanwhile).

The package, by layer: format.py (constants, header codec, exceptions),
writer.py (EncryptingWriter, and the sealing side it shares with
encrypt_file), reader.py (DecryptingReader), files.py (encrypt_file,
decrypt_file), passphrase.py (files and key files under a passphrase:
docs/passphrase-format.md) and fileio.py (the I/O they share).
"""

from .fileio import PathOrReadable, PathOrWritable, ReadableFile, WritableFile
from .files import atomic_output, decrypt_file, encrypt_file, same_file
from .format import (
    CHUNKED_CHUNK_SIZE,
    CHUNKED_HEADER_SIZE,
    CHUNKED_MAX_CHUNK_SIZE,
    CHUNKED_MIN_CHUNK_SIZE,
    ChunkedError,
    ChunkedHeaderError,
    ChunkedTruncatedError,
    decode_header,
    encode_header,
)
from .passphrase import rewrap_key_file, unlock_key_file, write_key_file
from .reader import DecryptingReader
from .writer import EncryptingWriter
from ..errors import PassphraseLimitError, WrongPassphrase

# The public classes are cb3.chunked's, as before the package was split: in
# their reprs and in the API docs' cross-references (annotations).
for _public in (EncryptingWriter, DecryptingReader, ReadableFile, WritableFile):
    _public.__module__ = __name__
del _public

# The private hooks of the test vectors (a fixed nonce prefix): cb3.chunked._new_writer, ._encrypt_file.
from .files import _encrypt_file
from .writer import _new_writer

__all__ = [
    "EncryptingWriter",
    "DecryptingReader",
    "encrypt_file",
    "decrypt_file",
    "CHUNKED_HEADER_SIZE",
    "CHUNKED_CHUNK_SIZE",
    "CHUNKED_MIN_CHUNK_SIZE",
    "CHUNKED_MAX_CHUNK_SIZE",
    "ChunkedError",
    "ChunkedTruncatedError",
    "ChunkedHeaderError",
    "WrongPassphrase",
    "PassphraseLimitError",
    "write_key_file",
    "unlock_key_file",
    "rewrap_key_file",
]
