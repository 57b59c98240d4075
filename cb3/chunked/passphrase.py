"""Files and key files under a passphrase (docs/passphrase-format.md).

    header = b"CB3PASS" || 0x01 || purpose || kdf || be32(time_cost) || be32(memory_cost)
             || parallelism || salt_len || salt || ChaCha20-BLAKE3(Argon2id(passphrase, salt), zero nonce,
                                                                   the 32-byte key, associated data = prefix)
    encrypted file = header || a chunked stream under the key, its associated data = header || caller's
    key file       = header (purpose 2), the key for any number of key-only streams

The header's codec, its rules and the reader's limits are the Rust core's
(``_cb3.passphrase_header_size``, ``passphrase_seal``, ``passphrase_open``):
this module turns a passphrase into its bytes, reads a header from a file,
maps the core's answers to cb3's exceptions, and reads and writes key files.
The writer, the reader and the file helpers call ``start_stream`` and
``open_stream``.
"""

from __future__ import annotations

import os
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

from .. import _cb3
from ..errors import ChunkedError, ChunkedHeaderError, DecryptionError, WrongPassphrase
from ..kdf import (
    DEFAULT_MEMORY_COST,
    DEFAULT_PARALLELISM,
    DEFAULT_TIME_COST,
    MAX_MEMORY_COST,
    MAX_PARALLELISM,
    MAX_TIME_COST,
    SALT_LEN,
)
from . import fileio

__all__ = ["unlock_key_file", "write_key_file", "rewrap_key_file"]

MAGIC = b"CB3PASS"
#: The bytes before the salt: they give the whole header's size.
PREFIX_SIZE = 20
#: The purpose byte: an encrypted file (a chunked stream follows), a key file.
PURPOSE_FILE = 1
PURPOSE_KEY_FILE = 2
KEY_SIZE = 32
#: The largest valid header (a 64-byte salt): a key file is never longer.
MAX_HEADER_SIZE = PREFIX_SIZE + 64 + 2 * KEY_SIZE


def passphrase_bytes(passphrase: str | Buffer) -> bytearray:
    """The bytes a passphrase derives from, in a buffer the caller wipes:
    text normalised to NFC and encoded as UTF-8 (the same passphrase typed
    with composed or decomposed accents gives one key), bytes as given.
    Empty, not encodable (a lone surrogate) or another type: refused."""
    if isinstance(passphrase, str):
        text = unicodedata.normalize("NFC", passphrase)
        try:
            data = bytearray(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ValueError(f"passphrase is not valid text: {exc.reason} at index {exc.start}") from None
    else:
        try:
            with memoryview(passphrase) as view:  # any bytes-like object, as its bytes
                data = bytearray(view)
        except TypeError:
            raise TypeError(f"passphrase must be str or bytes, not {type(passphrase).__name__}") from None
    if not data:
        raise ValueError("passphrase must not be empty")
    return data


def check_key_or_passphrase(function: str, key: object, passphrase: object) -> None:
    """Exactly one of the two (TypeError naming both otherwise)."""
    if (key is None) == (passphrase is None):
        given = "both" if key is not None else "neither"
        raise TypeError(f"{function}() takes a key or a passphrase= (exactly one of the two), got {given}")


def seal(passphrase: str | Buffer, key: Buffer, purpose: int, time_cost: int, memory_cost: int, parallelism: int,
         salt: bytes | None = None) -> bytes:
    """A header wrapping `key` under `passphrase` (a fresh random salt
    unless the test vectors give one)."""
    secret = passphrase_bytes(passphrase)
    try:
        return _cb3.passphrase_seal(secret, key, purpose, time_cost, memory_cost, parallelism,
                                    os.urandom(SALT_LEN) if salt is None else salt)
    finally:
        secret[:] = bytes(len(secret))


def open_header(header: bytes, passphrase: str | Buffer, purpose: int, limits: tuple[int, int, int]) -> bytearray:
    """The key `header` wraps; ChunkedHeaderError for a malformed header or
    one of the other purpose, PassphraseLimitError above `limits`
    (max_time_cost, max_memory_cost, max_parallelism), WrongPassphrase."""
    secret = passphrase_bytes(passphrase)
    try:
        key = _cb3.passphrase_open(header, secret, purpose, *limits)
        # A bytearray, so that the caller can wipe it (PyPy's forwarders may hand back bytes).
        return key if isinstance(key, bytearray) else bytearray(key)
    except DecryptionError as exc:
        if isinstance(exc, (WrongPassphrase, ChunkedError)):
            raise
        raise WrongPassphrase() from None
    finally:
        secret[:] = bytes(len(secret))


def read_header(source: fileio.Source) -> bytes:
    """A passphrase header from the start of `source`, read to its size and
    no further (the chunked stream follows it)."""
    prefix = bytearray(PREFIX_SIZE)
    got = fileio.read_full(source, memoryview(prefix))
    size = _cb3.passphrase_header_size(bytes(prefix[:got]))
    header = prefix + bytearray(size - PREFIX_SIZE)
    got += fileio.read_full(source, memoryview(header)[PREFIX_SIZE:])
    if got < size:
        raise ChunkedHeaderError(f"truncated passphrase header: the input ends after {got} of its {size} bytes")
    return bytes(header)


def is_passphrase_file(start: bytes | bytearray) -> bool:
    """Whether data starting with `start` is in the passphrase format (by its magic)."""
    return bytes(start[: len(MAGIC)]) == MAGIC


def start_stream(sink: fileio.Source, passphrase: str | Buffer, associated_data: Buffer | None,
                 params: tuple[int, int, int], fixed: tuple[bytes, bytes] | None = None) -> tuple[bytearray, bytes]:
    """Writes the header of a new encrypted file to `sink`: (the fresh file
    key, to be wiped by the caller once the stream holds it; the stream's
    associated data, header || associated_data). `fixed` (salt, file key)
    is for the test vectors only."""
    file_key = bytearray(os.urandom(KEY_SIZE) if fixed is None else fixed[1])
    try:
        header = seal(passphrase, file_key, PURPOSE_FILE, *params, salt=None if fixed is None else fixed[0])
        fileio.write_all(sink, memoryview(header))
    except BaseException:
        file_key[:] = bytes(KEY_SIZE)
        raise
    return file_key, header + (b"" if associated_data is None else bytes(associated_data))


def open_stream(source: fileio.Source, passphrase: str | Buffer, associated_data: Buffer | None,
                limits: tuple[int, int, int]) -> tuple[bytearray, bytes]:
    """Reads and opens the header at the start of `source`: (the file key,
    to be wiped by the caller; the stream's associated data)."""
    header = read_header(source)
    return open_header(header, passphrase, PURPOSE_FILE, limits), header + (
        b"" if associated_data is None else bytes(associated_data))


# ---- key files ------------------------------------------------------------------------------------


def write_key_file(
    path: str | os.PathLike[str],
    key: Buffer,
    passphrase: str | Buffer,
    *,
    time_cost: int = DEFAULT_TIME_COST,
    memory_cost: int = DEFAULT_MEMORY_COST,
    parallelism: int = DEFAULT_PARALLELISM,
    overwrite: bool = False,
) -> None:
    """Writes ``key`` (32 bytes) to ``path`` as a passphrase-protected key
    file (docs/passphrase-format.md: the header alone, 100 bytes), mode 0600.
    Refuses an existing file (FileExistsError) unless ``overwrite``, which
    replaces it atomically (a new file renamed over it). ``time_cost``,
    ``memory_cost`` (KiB) and ``parallelism`` ask for a stronger derivation
    than the defaults."""
    with memoryview(key) as view:
        if view.nbytes != KEY_SIZE:
            raise ValueError(f"key must be {KEY_SIZE} bytes, not {view.nbytes}")
    header = seal(passphrase, key, PURPOSE_KEY_FILE, time_cost, memory_cost, parallelism)
    path = os.fspath(path)
    if not overwrite:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with open(fd, "wb", buffering=0) as out:
                fileio.write_all(out, memoryview(header))
                os.fsync(out.fileno())
        except BaseException:
            os.unlink(path)
            raise
        return
    from .files import atomic_output  # the helpers' atomic replace; mkstemp makes it 0600

    with atomic_output(path) as out:
        fileio.write_all(out, memoryview(header))


def unlock_key_file(
    path: str | os.PathLike[str],
    passphrase: str | Buffer,
    *,
    max_time_cost: int = MAX_TIME_COST,
    max_memory_cost: int = MAX_MEMORY_COST,
    max_parallelism: int = MAX_PARALLELISM,
) -> bytearray:
    """The 32-byte key of a passphrase-protected key file (write_key_file,
    ``python -m cb3 keygen --passphrase``), after one derivation: use it as
    the ``key`` of any number of files. Wipe the bytearray when done.
    WrongPassphrase for a wrong passphrase or a modified file,
    ChunkedHeaderError for a file that is not a key file,
    PassphraseLimitError for parameters above the ``max_*`` limits."""
    with open(path, "rb") as f:
        data = f.read(MAX_HEADER_SIZE + 1)
    if not is_passphrase_file(data):
        raise ChunkedHeaderError(f"{os.fspath(path)!s} is not a cb3 passphrase-protected key file")
    size = _cb3.passphrase_header_size(data[:PREFIX_SIZE])
    if len(data) != size:
        raise ChunkedHeaderError(f"{os.fspath(path)!s}: a key file is its {size}-byte header alone, "
                                 f"this one holds {len(data)} bytes")
    return open_header(data, passphrase, PURPOSE_KEY_FILE, (max_time_cost, max_memory_cost, max_parallelism))


def rewrap_key_file(
    path: str | os.PathLike[str],
    passphrase: str | Buffer,
    new_passphrase: str | Buffer,
    *,
    time_cost: int = DEFAULT_TIME_COST,
    memory_cost: int = DEFAULT_MEMORY_COST,
    parallelism: int = DEFAULT_PARALLELISM,
    max_time_cost: int = MAX_TIME_COST,
    max_memory_cost: int = MAX_MEMORY_COST,
    max_parallelism: int = MAX_PARALLELISM,
) -> None:
    """Changes a key file's passphrase: the same key under ``new_passphrase``
    (a new salt; the given parameters), replacing the file atomically. The
    files the key encrypted are untouched and still decrypt."""
    key = unlock_key_file(path, passphrase, max_time_cost=max_time_cost, max_memory_cost=max_memory_cost,
                          max_parallelism=max_parallelism)
    try:
        write_key_file(path, key, new_passphrase, time_cost=time_cost, memory_cost=memory_cost,
                       parallelism=parallelism, overwrite=True)
    finally:
        key[:] = bytes(len(key))

