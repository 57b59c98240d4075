"""The one-call helpers ``encrypt_file`` and ``decrypt_file`` and what they
need: paths opened (the output atomically: ``atomic_output``), the same file
on both sides refused (``same_file``), and the choice of engine: one thread,
a pipeline between streams, or every batch at its own offset between two
regular files (pipelines.py).

They use the writer and reader through their public methods and the small
interface each class documents for them (``_seal``, ``_batch_sealer``, ...),
never through their state.
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

from . import fileio
from .fileio import PathOrReadable, PathOrWritable
from .format import CHUNKED_CHUNK_SIZE, TAG_SIZE, ChunkedTruncatedError
from .pipelines import _BackgroundWriter, _BatchFailed, _OffsetPipeline, _SealingPipeline, source_changed
from .reader import DecryptingReader, _new_reader
from .writer import EncryptingWriter, _new_writer

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
    key: Buffer,
    src: PathOrReadable,
    dst: PathOrWritable,
    *,
    associated_data: Buffer | None = None,
    chunk_size: int = CHUNKED_CHUNK_SIZE,
    max_threads: int = 1,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Encrypts ``src`` into ``dst`` in cb3's chunked format; returns the
    plaintext bytes encrypted. Each is a path or a binary file object (read
    from / written at its current position; not closed). A ``dst`` path is
    written to a temporary file in its directory and renamed over it only
    when complete. ``progress(done)`` is called after each batch.

    With ``max_threads`` > 1 between two regular files, each thread reads,
    seals and writes its own batches at their offsets (docs/stream-format.md);
    the source must then keep its size during the call, else
    ``cb3.chunked.SourceChangedError`` (an OSError) and no complete stream.
    ``src`` and ``dst`` must not be the same file (ValueError)."""
    return _encrypt_file(key, src, dst, associated_data=associated_data, chunk_size=chunk_size,
                         max_threads=max_threads, progress=progress)


def _encrypt_file(key: Buffer, src: PathOrReadable, dst: PathOrWritable, *, nonce_prefix: bytes | None = None,
                  **options: Any) -> int:
    """encrypt_file (its keyword `options`), and a fixed nonce prefix for
    test vectors (never for data: two streams under one key and prefix share
    every nonce)."""
    with _opened_pair(src, dst) as (source, sink):
        return _encrypt_opened(key, source, sink, nonce_prefix=nonce_prefix, **options)


def _encrypt_opened(key: Buffer, source: fileio.Source, sink: fileio.Source, *, associated_data: Buffer | None = None,
                    chunk_size: int = CHUNKED_CHUNK_SIZE, max_threads: int = 1,
                    progress: Callable[[int], None] | None = None, nonce_prefix: bytes | None = None) -> int:
    fds = _offset_fds(source, sink, max_threads)
    writer = _new_writer(
        sink,
        key,
        associated_data=associated_data,
        chunk_size=chunk_size,
        max_threads=max_threads,
        nonce_prefix=nonce_prefix,
        calling_thread=max_threads != 1,
    )
    try:
        threads = writer._thread_count
        workers = fileio.workers(threads)
        if threads == 1:
            total = _encrypt_batches(writer, source, progress)
        elif fds is not None:
            total = _encrypt_at_offsets(writer, source, sink, *fds, workers, progress)
        else:
            total = _SealingPipeline(writer, sink, workers).run(source, progress)
        if progress is not None:
            progress(total)
    except BaseException:
        writer.abort()
        raise
    writer.finish()
    return total


def _encrypt_batches(writer: EncryptingWriter, source: fileio.Source, progress: Callable[[int], None] | None) -> int:
    """encrypt_file on one thread: whole batches straight from a read buffer,
    one byte of lookahead telling whether more follows (the final chunk is
    sealed last); returns the plaintext bytes."""
    capacity = writer._batch_size
    buf = bytearray(capacity + 1)
    view = memoryview(buf)
    try:
        got = fileio.read_full(source, view)
        total = 0
        while got == capacity + 1:
            writer._seal(view[:capacity], False)
            total += capacity
            if progress is not None:
                progress(total)
            buf[0] = buf[capacity]
            got = 1 + fileio.read_full(source, view[1:])
        writer._seal(view[:got], True)
        return total + got
    finally:
        view[:] = bytes(len(buf))


def _offset_fds(source: fileio.Source, sink: fileio.Source, max_threads: int) -> tuple[int, int] | None:
    """(source fd, sink fd) when the file helpers run as an _OffsetPipeline:
    several threads and two regular files; None otherwise (one thread, or a
    pipe, socket, terminal or in-memory file: the streaming paths)."""
    if fileio.thread_count(max_threads) == 1:
        return None
    src_fd = fileio.regular_fd(source, writing=False)
    dst_fd = fileio.regular_fd(sink, writing=True) if src_fd is not None else None
    if src_fd is None or dst_fd is None or os.path.samestat(os.fstat(src_fd), os.fstat(dst_fd)):
        return None
    return src_fd, dst_fd


def _encrypt_at_offsets(writer: EncryptingWriter, source: fileio.Source, sink: fileio.Source, src_fd: int, dst_fd: int,
                        workers: int, progress: Callable[[int], None] | None) -> int:
    """encrypt_file between regular files on several threads (_OffsetPipeline).
    The final chunk is placed from the source's size at the start; a source
    that changes size meanwhile fails with SourceChangedError."""
    chunked, first, size_c = writer._batch_sealer()
    per_batch = max(1, fileio.BATCH_BYTES_PER_THREAD // size_c)
    capacity = per_batch * size_c
    sealed = capacity + per_batch * TAG_SIZE
    sink.flush()
    out_start = sink.tell()
    in_start = source.tell()
    size = max(0, os.fstat(src_fd).st_size - in_start)
    count = max(1, -(-size // capacity))
    final = size - (count - 1) * capacity
    final_chunks = max(1, -(-final // size_c))  # an empty final batch is still one (empty, final) chunk

    def job(batch: int, plain: memoryview, out: memoryview) -> int:
        last = batch == count - 1
        length = final if last else capacity
        got = fileio.pread_full(src_fd, plain[: length + last], in_start + batch * capacity)
        if got != length:  # shorter: the file shrank; one byte more: it grew
            raise source_changed(size, os.fstat(src_fd).st_size - in_start)
        n = chunked.seal_into(first + batch * per_batch, last, plain[:length], out)
        fileio.pwrite_all(dst_fd, out[:n], out_start + batch * sealed)
        return length

    # On failure what precedes the failing batch is a stream without its final chunk.
    pipeline = _OffsetPipeline(workers, count, capacity + 1, sealed, job)
    total = pipeline.run_checked(progress, (src_fd, in_start, size), (sink, dst_fd),
                                 lambda batch, _: out_start + batch * sealed)
    sink.seek(out_start + (count - 1) * sealed + final + final_chunks * TAG_SIZE)
    source.seek(in_start + size)
    writer._sealed_elsewhere((count - 1) * per_batch + final_chunks)
    return total


def _decrypt_at_offsets(reader: DecryptingReader, source: fileio.Source, sink: fileio.Source, src_fd: int, dst_fd: int,
                        workers: int, progress: Callable[[int], None] | None) -> int:
    """decrypt_file between regular files on several threads (_OffsetPipeline).
    The final chunk is expected where the source's size at the start puts it,
    so truncation is found exactly as on one thread. On failure `sink` holds
    the plaintext of the chunks that verified before the failing one (the
    rest is cut off), as on one thread."""
    chunk_size, piece, in_start = reader._layout()
    per_batch = max(1, fileio.BATCH_BYTES_PER_THREAD // chunk_size)
    capacity = per_batch * chunk_size
    opened_size = per_batch * piece
    body = os.fstat(src_fd).st_size - in_start
    if body <= 0:
        raise ChunkedTruncatedError("truncated stream: no chunk after the header")
    sink.flush()
    out_start = sink.tell()
    count = max(1, -(-body // opened_size))
    final = body - (count - 1) * opened_size

    def job(batch: int, data: memoryview, plain: memoryview) -> int:
        last = batch == count - 1
        length = final if last else opened_size
        got = fileio.pread_full(src_fd, data[:length], in_start + batch * opened_size)
        if got != length:
            raise source_changed(body, os.fstat(src_fd).st_size - in_start)
        index = batch * per_batch
        n, error = reader._open_batch(index, last, data[:length], plain)
        fileio.pwrite_all(dst_fd, plain[:n], out_start + batch * capacity)
        if error is not None:
            raise _BatchFailed(n, error)
        return n

    # Buffers no larger than the input: its header's chunk size is not yet authenticated.
    pipeline = _OffsetPipeline(workers, count, min(opened_size, body), min(capacity, body), job)
    total = pipeline.run_checked(progress, (src_fd, in_start, body), (sink, dst_fd),
                                 lambda batch, done: out_start + batch * capacity + done)
    sink.seek(out_start + total)
    source.seek(in_start + body)
    return total


def decrypt_file(
    key: Buffer,
    src: PathOrReadable,
    dst: PathOrWritable,
    *,
    associated_data: Buffer | None = None,
    max_threads: int = 1,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Decrypts the cb3 stream in ``src`` into ``dst``; returns the plaintext
    bytes. Each is a path or a binary file object. A ``dst`` path is written
    to a temporary file in its directory, and renamed over ``dst`` (after
    fsync) only when the whole stream verified: on any error no output is
    left. A file object ``dst`` receives the plaintext of each chunk once it
    verified, so on error it holds the verified part of the stream.
    ``src`` and ``dst`` must not be the same file (ValueError)."""
    with _opened_pair(src, dst) as (source, sink):
        return _decrypt_opened(key, source, sink, associated_data, max_threads, progress)


def _decrypt_opened(key: Buffer, source: fileio.Source, sink: fileio.Source, associated_data: Buffer | None, max_threads: int,
                    progress: Callable[[int], None] | None) -> int:
    fds = _offset_fds(source, sink, max_threads)
    reader = _new_reader(source, key, associated_data=associated_data, max_threads=max_threads,
                         calling_thread=fds is not None)
    with reader:
        total = 0
        if fds is not None:
            workers = fileio.workers(fileio.thread_count(max_threads))
            return _decrypt_at_offsets(reader, source, sink, *fds, workers, progress)
        if fileio.thread_count(max_threads) == 1:
            while True:
                part = reader._next_batch()
                if not part:
                    break
                fileio.write_all(sink, part)
                total += len(part)
                if progress is not None:
                    progress(total)
            return total
        # Several threads: write each batch on a background thread while
        # the next one is read and opened.
        background = _BackgroundWriter(sink, reader._buffer_size)
        try:
            while True:
                buffer, start, end = reader._take_batch(background.buffer())
                background.submit(buffer, end, start)
                if end == start:
                    break
                total += end - start
                if progress is not None:
                    progress(total)
        finally:
            background.close(wipe=True)
        return total
