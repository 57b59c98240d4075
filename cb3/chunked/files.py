"""The one-call helpers ``encrypt_file`` and ``decrypt_file`` and what they
need: paths opened (the output atomically: ``atomic_output``) and the same
file on both sides refused (``same_file``).

Both run one way whatever the thread count: read a batch, seal or open it
(the Rust core splits the batch over ``max_threads`` threads, the GIL
released), write it. With more than one thread the writing happens on one
background thread (fileio.BatchOutput), overlapping the next batch's reading
and sealing or opening. encrypt_file seals through ``_Sealer`` (writer.py),
decrypt_file reads through DecryptingReader's batch interface (``_take_batch``).
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from typing_extensions import Buffer

from .. import _cb3
from . import fileio
from .fileio import PathOrReadable, PathOrWritable
from ..kdf import DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM, DEFAULT_TIME_COST
from ..kdf import MAX_MEMORY_COST, MAX_PARALLELISM, MAX_TIME_COST
from .format import CHUNKED_CHUNK_SIZE
from .passphrase import check_key_or_passphrase
from .reader import DecryptingReader
from .writer import _Sealer

__all__ = ["encrypt_file", "decrypt_file", "atomic_output", "same_file"]


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[io.FileIO]:
    """A temporary file next to ``path`` that replaces ``path`` (fsync, then
    rename) only if the block completes; otherwise it is removed. Unbuffered:
    the helpers write whole batches, and a buffer would keep a copy of the
    plaintext's last bytes in freed memory."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".cb3-", suffix=".part", dir=directory)
    try:
        with open(fd, "wb", buffering=0) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    try:  # the rename itself durable
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def same_file(source: Any, dst: Any) -> bool:
    """Whether `dst` (a path or a file object) is the file `source` (a file
    object) reads, by device and inode whatever the paths: writing it would
    overwrite the input while it is read."""
    try:
        here = os.fstat(source.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    try:
        there = os.stat(dst) if isinstance(dst, (str, os.PathLike)) else os.fstat(dst.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    # Only where data is stored: /dev/null to /dev/null or a terminal both ways is no loop.
    return os.path.samestat(here, there) and (stat.S_ISREG(here.st_mode) or stat.S_ISBLK(here.st_mode))


def _refuse_same_file(source: Any, dst: Any) -> None:
    if same_file(source, dst):
        raise ValueError("src and dst are the same file: the output would overwrite the input while it is read")


@contextmanager
def _opened_pair(src: PathOrReadable, dst: PathOrWritable) -> Iterator[tuple[Any, Any]]:
    """(source, sink) for the helpers: paths opened (dst atomically), file
    objects as given; the same file on both sides refused."""
    with _opened(src, "rb") as source:
        _refuse_same_file(source, dst)
        with _opened(dst, "wb") as sink:
            yield source, sink


@contextmanager
def _opened(target: Any, mode: str) -> Iterator[Any]:
    if isinstance(target, (str, os.PathLike)):
        if mode == "wb":
            with atomic_output(target) as f:
                yield f
        else:
            with open(target, mode) as f:
                yield f
    else:
        yield target


def encrypt_file(
    key: Buffer | None = None,
    src: PathOrReadable | None = None,
    dst: PathOrWritable | None = None,
    *,
    passphrase: str | Buffer | None = None,
    associated_data: Buffer | None = None,
    chunk_size: int = CHUNKED_CHUNK_SIZE,
    max_threads: int = 1,
    progress: Callable[[int], None] | None = None,
    time_cost: int = DEFAULT_TIME_COST,
    memory_cost: int = DEFAULT_MEMORY_COST,
    parallelism: int = DEFAULT_PARALLELISM,
) -> int:
    """Encrypts ``src`` into ``dst`` in cb3's chunked format; returns the
    plaintext bytes encrypted. Each is a path or a binary file object (read
    from / written at its current position; not closed). A ``dst`` path is
    written to a temporary file in its directory and renamed over it only
    when complete. ``progress(done)`` is called after each batch.

    Under a ``key``, or a ``passphrase`` instead (``encrypt_file(src=...,
    dst=..., passphrase=...)``: exactly one of the two): the output is then a
    passphrase file (docs/passphrase-format.md), its fresh file key wrapped
    under Argon2id with ``time_cost``, ``memory_cost`` (KiB) and
    ``parallelism`` (fixed defaults; pass larger ones for a stronger
    derivation). A ``str`` passphrase is normalised to NFC and encoded as
    UTF-8; ``bytes`` are used as given.

    ``max_threads`` (a positive int or ``cb3.AUTO``) seals each batch on that
    many threads, and writes on a thread of its own meanwhile; the bytes are
    the same. ``src`` and ``dst`` must not be the same file (ValueError)."""
    check_key_or_passphrase("encrypt_file", key, passphrase)
    return _encrypt_file(key, _given("encrypt_file", src=src), _given("encrypt_file", dst=dst),
                         passphrase=passphrase, params=(time_cost, memory_cost, parallelism),
                         associated_data=associated_data, chunk_size=chunk_size, max_threads=max_threads,
                         progress=progress)


def _given(function: str, **argument: Any) -> Any:
    """The one argument given, or TypeError naming it (src and dst have
    defaults only so that a passphrase call can leave out the key)."""
    (name, value), = argument.items()
    if value is None:
        raise TypeError(f"{function}() missing the argument {name!r}")
    return value


def _encrypt_file(key: Buffer | None, src: PathOrReadable, dst: PathOrWritable, *,
                  nonce_prefix: bytes | None = None, **options: Any) -> int:
    """encrypt_file (its keyword `options`), and a fixed nonce prefix (and,
    for a passphrase, `salt_and_file_key`) for test vectors (never for data:
    two streams under one key and prefix share every nonce)."""
    with _opened_pair(src, dst) as (source, sink):
        return _encrypt_opened(key, source, sink, nonce_prefix=nonce_prefix, **options)


def _encrypt_opened(key: Buffer | None, source: fileio.Source, sink: fileio.Source, *,
                    associated_data: Buffer | None = None, chunk_size: int = CHUNKED_CHUNK_SIZE,
                    max_threads: int = 1, progress: Callable[[int], None] | None = None,
                    nonce_prefix: bytes | None = None, passphrase: str | Buffer | None = None,
                    params: tuple[int, int, int] = (DEFAULT_TIME_COST, DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM),
                    salt_and_file_key: tuple[bytes, bytes] | None = None) -> int:
    """Whole batches straight from a read buffer, one byte of lookahead
    telling whether more follows (the final chunk is sealed last). On
    failure the sink holds a stream without its final chunk."""
    sealer = _Sealer.started(sink, key, None if passphrase is None else (passphrase, params), associated_data,
                             chunk_size, max_threads, nonce_prefix, salt_and_file_key)
    capacity = sealer.batch_size
    buf = bytearray(capacity + 1)
    view = memoryview(buf)
    fileio.write_all(sink, memoryview(sealer.header))
    total = 0
    try:
        with fileio.BatchOutput(sink, sealer.threads > 1, sealer.sealed_size(capacity)) as output:
            got = fileio.read_full(source, view)
            while True:
                more = got == capacity + 1
                length = capacity if more else got
                out = output.buffer()
                output.submit(out, sealer.seal(view[:length], not more, out))
                total += length
                if not more:
                    break
                if progress is not None:
                    progress(total)
                buf[0] = buf[capacity]
                got = 1 + fileio.read_full(source, view[1:])
    finally:
        view[:] = bytes(len(buf))  # plaintext
    if progress is not None:
        progress(total)
    return total


def decrypt_file(
    key: Buffer | None = None,
    src: PathOrReadable | None = None,
    dst: PathOrWritable | None = None,
    *,
    passphrase: str | Buffer | None = None,
    associated_data: Buffer | None = None,
    max_threads: int = 1,
    progress: Callable[[int], None] | None = None,
    max_time_cost: int = MAX_TIME_COST,
    max_memory_cost: int = MAX_MEMORY_COST,
    max_parallelism: int = MAX_PARALLELISM,
) -> int:
    """Decrypts the cb3 stream in ``src`` into ``dst``; returns the plaintext
    bytes. Each is a path or a binary file object. A ``dst`` path is written
    to a temporary file in its directory, and renamed over ``dst`` (after
    fsync) only when the whole stream verified: on any error no output is
    left. A file object ``dst`` receives the plaintext of each chunk once it
    verified, so on error it holds the verified part of the stream.
    ``max_threads`` (a positive int or ``cb3.AUTO``) opens each batch on
    that many threads, and writes on a thread of its own meanwhile.
    ``src`` and ``dst`` must not be the same file (ValueError).

    A passphrase file (``decrypt_file(src=..., dst=..., passphrase=...)``)
    is read as DecryptingReader reads it: WrongPassphrase for a wrong
    passphrase or a modified header, PassphraseLimitError for parameters
    above ``max_time_cost``, ``max_memory_cost`` (KiB) or
    ``max_parallelism``; in both cases nothing is written."""
    check_key_or_passphrase("decrypt_file", key, passphrase)
    src, dst = _given("decrypt_file", src=src), _given("decrypt_file", dst=dst)
    with _opened_pair(src, dst) as (source, sink):
        return _decrypt_opened(key, source, sink, associated_data, max_threads, progress, passphrase,
                               (max_time_cost, max_memory_cost, max_parallelism))


def _decrypt_opened(key: Buffer | None, source: fileio.Source, sink: fileio.Source,
                    associated_data: Buffer | None, max_threads: int, progress: Callable[[int], None] | None,
                    passphrase: str | Buffer | None = None,
                    limits: tuple[int, int, int] = (MAX_TIME_COST, MAX_MEMORY_COST, MAX_PARALLELISM)) -> int:
    with DecryptingReader(source, key, passphrase=passphrase, associated_data=associated_data,
                          max_threads=max_threads, max_time_cost=limits[0], max_memory_cost=limits[1],
                          max_parallelism=limits[2]) as reader, \
            fileio.BatchOutput(sink, _cb3.thread_count(max_threads) > 1) as output:
        total = 0
        while True:
            buffer, start, end = reader._take_batch(output.buffer())
            output.submit(buffer, end, start)
            if end == start:
                return total
            total += end - start
            if progress is not None:
                progress(total)
