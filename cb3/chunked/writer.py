"""EncryptingWriter: plaintext in, the chunked format out (a write-only
binary file); ``_new_writer``, the same with the internal knob; and
``_Sealer``, the sealing side of a stream that the writer and encrypt_file
share."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from typing_extensions import Buffer

from .. import _cb3
from . import fileio
from .fileio import WritableFile
from ..kdf import DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM, DEFAULT_TIME_COST
from .format import CHUNKED_CHUNK_SIZE, PREFIX_SIZE, TAG_SIZE, encode_header
from .passphrase import check_key_or_passphrase, start_stream

__all__ = ["EncryptingWriter"]


class EncryptingWriter(fileio.PlaintextFile):
    """A write-only binary file that encrypts into ``file``, a binary file
    object, in cb3's chunked format (docs/stream-format.md).

    ``EncryptingWriter(file, key, *, associated_data=None,
    chunk_size=cb3.CHUNKED_CHUNK_SIZE, max_threads=1)``, or
    ``EncryptingWriter(file, passphrase=..., time_cost=3, memory_cost=65536,
    parallelism=4, ...)``: exactly one of ``key`` and ``passphrase``.

    With a ``passphrase`` (``str``, normalised to NFC and encoded as UTF-8,
    or ``bytes`` as given) the output is a passphrase file
    (docs/passphrase-format.md): a header holding a fresh random file key
    wrapped under Argon2id of the passphrase (``time_cost`` passes,
    ``memory_cost`` KiB, ``parallelism`` lanes: the fixed defaults, or
    stronger ones asked for), then the chunked stream under that key.

    The header is written at once; chunks are written as they fill.
    ``close()`` (or leaving a ``with`` block normally) seals the final chunk
    and flushes ``file`` but does not close it. ``flush()`` flushes ``file``
    but cannot force out a partial chunk (chunks have a fixed size).
    ``max_threads=N`` or ``cb3.AUTO`` seals batches of chunks on several
    threads; the bytes are the same.

    The rule for an interrupted producer: the final chunk is never written
    (the output then fails to decrypt with ChunkedTruncatedError instead of
    passing for a complete, shorter stream) when the ``with`` block raises,
    when ``close()`` is called while an exception raised since the writer was
    made is propagating or being handled (a wrapper such as
    ``io.TextIOWrapper``, ``io.BufferedWriter`` or ``contextlib.closing``
    closing it on its way out of a failing ``with`` block, a ``finally:``
    clause), when the writer or a wrapper of it is garbage-collected
    unclosed, or after a write to ``file`` failed. ``finish()`` seals
    explicitly, whatever is being handled. ``abort()`` never seals.

    The writer belongs to the process that made it: it cannot be copied or
    pickled, and in a ``fork()`` child it raises RuntimeError (both copies
    would seal different data under the same nonces; the Rust core's handle
    refuses to seal there).

    One writer may be shared between threads: its calls are serialized (each
    ``write`` lands whole, in the order the calls take the lock), as
    ``io.BufferedWriter``'s are, and a reentrant call (from a signal handler,
    or from ``file``'s own ``write``) raises RuntimeError.
    """

    _closing = False  # finish() or abort() is closing the writer (see flush)
    _instead_of_copying = (
        "two copies would seal different data under the same nonces; create a new EncryptingWriter "
        "(it picks a fresh nonce prefix)"
    )

    def __init__(
        self,
        file: WritableFile,
        key: Buffer | None = None,
        *,
        passphrase: str | Buffer | None = None,
        associated_data: Buffer | None = None,
        chunk_size: int = CHUNKED_CHUNK_SIZE,
        max_threads: int = 1,
        time_cost: int = DEFAULT_TIME_COST,
        memory_cost: int = DEFAULT_MEMORY_COST,
        parallelism: int = DEFAULT_PARALLELISM,
    ) -> None:
        check_key_or_passphrase("EncryptingWriter", key, passphrase)
        self._start(file, key, associated_data, chunk_size, max_threads, None,
                    None if passphrase is None else (passphrase, (time_cost, memory_cost, parallelism)))

    def _start(
        self,
        file: WritableFile,
        key: Buffer | None,
        associated_data: Buffer | None,
        chunk_size: int,
        max_threads: int,
        nonce_prefix: bytes | None,
        passphrase: tuple[str | Buffer, tuple[int, int, int]] | None = None,
        fixed: tuple[bytes, bytes] | None = None,
    ) -> None:
        """__init__, plus the internal knobs of _new_writer: a fixed nonce
        prefix, and a fixed salt and file key (test vectors only)."""
        self._file: fileio.Source = cast(Any, file)
        self._sealed = True  # until the header is written: nothing to seal on close
        # The exception being handled when the writer was made (usually
        # None): closing while it is still being handled is no interruption.
        self._handling_at_start: BaseException | None = sys.exc_info()[1]
        self._finalizing = False
        self._sealer = _Sealer.started(file, key, passphrase, associated_data, chunk_size, max_threads,
                                       nonce_prefix, fixed)
        capacity = self._sealer.batch_size
        self._pending = bytearray(capacity)
        self._pending_view = memoryview(self._pending)
        self._fill = 0
        self._out = bytearray(self._sealer.sealed_size(capacity))
        self._out_view = memoryview(self._out)
        self._position = 0
        self._broken = False
        fileio.write_all(file, memoryview(self._sealer.header))
        self._sealed = False

    def _check_forked(self) -> None:
        """In a fork() child (the call lock knows) the handle decides: it
        refuses to seal there, and says so before a write that would only
        buffer."""
        if self._calls.forked:
            self._sealer.check_process()

    def _seal(self, data: memoryview, last: bool) -> None:
        """Seals `data` as the next chunks (the final one with `last`) and
        writes them."""
        if self._broken:
            raise OSError("an earlier write to the underlying file failed; this stream cannot be completed")
        try:
            n = self._sealer.seal(data, last, self._out)
            fileio.write_all(self._file, self._out_view[:n])
        except BaseException:
            self._broken = True
            raise
        if last:
            self._sealed = True

    def write(self, data: Buffer) -> int:
        """Encrypts ``data`` (any bytes-like object); returns len(data)."""
        self._check_open()
        # Before the lock: in a fork() child a parent's thread may have held it.
        self._check_forked()
        with self._calls:
            return self._write(data)

    def _write(self, data: Buffer) -> int:
        self._check_open()  # again: another thread may have closed the writer while this one waited
        if self._broken:
            raise OSError("an earlier write to the underlying file failed; this stream cannot be completed")
        # Every view of the caller's buffer is released before this returns (the `with`s):
        # PyPy 8.0 refuses to resize a bytearray while a memoryview of it lives, and without
        # reference counting an unreleased one lives until the next collection.
        with memoryview(data) as raw, (raw.cast("B") if raw.format not in ("B", "b", "c") or raw.ndim != 1
                                       else raw[:]) as view:
            total = len(view)
            size, capacity = self._sealer.chunk_size, len(self._pending)
            pos = 0
            if self._fill:
                take = min(capacity - self._fill, total)
                with view[:take] as part:
                    self._pending_view[self._fill : self._fill + take] = part
                self._fill += take
                pos = take
                if self._fill == capacity and pos < total:  # more follows: not the final chunk
                    self._seal(self._pending_view, False)
                    self._fill = 0
            if pos < total and not self._fill:
                # Seal whole chunks straight from the caller's buffer, keeping
                # at least one byte back: the final chunk is sealed by close().
                full = (total - pos - 1) // size
                while full:
                    count = min(full, capacity // size)
                    with view[pos : pos + count * size] as part:
                        self._seal(part, False)
                    pos += count * size
                    full -= count
                rest = total - pos
                with view[pos:] as part:
                    self._pending_view[:rest] = part
                self._fill = rest
            self._position += total
            return total

    def flush(self) -> None:
        """Flushes ``file``. A partial chunk stays buffered until more data or close()."""
        self._check_open()
        if self._closing:
            # io's close() calls flush() from finish() and abort(), which
            # hold the lock: finish() has flushed ``file``, abort() leaves it alone.
            return
        with self._calls:
            self._check_open()
            self._flush_file()

    def _flush_file(self) -> None:
        flush = getattr(self._file, "flush", None)
        if flush is not None:
            flush()

    def _interrupted(self) -> bool:
        """Whether a close() now is an interruption: a wrapper of the writer is
        being garbage-collected, or an exception raised since the writer was
        made is propagating or being handled."""
        handling = sys.exc_info()[1]
        return self._finalizing or (handling is not None and handling is not self._handling_at_start)

    def _dealloc_warn(self, source: object) -> None:
        # io's wrappers (TextIOWrapper, BufferedWriter) call this on the file
        # they wrap just before closing it from their finalizer: a writer
        # closed by the garbage collector is an interrupted one.
        self._finalizing = True

    def close(self) -> None:
        """Seals the final chunk and flushes ``file`` (which stays open); but
        see the class's rule: after an interruption it closes without sealing,
        as abort() does."""
        if self.closed:
            return
        # Read without the lock: _sealed only ever turns True, and abort()
        # and finish() look at the writer again under it.
        if not self._sealed and self._interrupted():
            self.abort()
            return
        self.finish()

    def finish(self) -> None:
        """Seals the final chunk, flushes ``file`` (which stays open) and
        closes the writer, whatever exception is being handled: the explicit
        way to complete a stream, e.g. from an ``except`` clause."""
        if self.closed:
            return
        self._check_forked()  # before the lock, as in write()
        with self._calls:
            if self.closed:  # another thread closed it while this one waited
                return
            try:
                if not self._sealed and not self._broken:
                    if self._fill:
                        self._seal(self._pending_view[: self._fill], True)
                    else:
                        # Nothing pending: an empty stream (one empty final chunk).
                        # A non-empty stream always keeps its final chunk pending.
                        self._seal(self._pending_view[:0], True)
            finally:
                self._release()
                try:
                    self._flush_file()
                finally:
                    self._closing = True
                    super().close()

    def abort(self) -> None:
        """Closes without sealing the final chunk: the output will not
        decrypt (ChunkedTruncatedError). Use when the data written so far must
        not pass for a complete stream."""
        if self.closed:
            return
        self._calls.acquire(closing=True)
        try:
            if not self.closed:
                self._sealed = self._closing = True
                self._release()
                super().close()
        finally:
            self._calls.release()

    def _release(self) -> None:
        self._handling_at_start = None
        if hasattr(self, "_pending_view"):  # not when __init__ failed
            self._fill = 0
            self._pending_view[:] = bytes(len(self._pending))  # wipe buffered plaintext

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:  # the block completed: an explicit end of the data
            self.finish()

    def __del__(self) -> None:
        # Never seal from the garbage collector: an unclosed writer is an
        # interrupted one. abort() cannot wait or be refused as reentrant
        # here: its lock is this writer's, and no thread is inside a call on
        # a writer being finalized (that call would hold a reference to it).
        try:
            if not getattr(self, "_sealed", True):
                self.abort()
        except Exception:
            pass


def _new_writer(
    file: WritableFile,
    key: Buffer,
    *,
    associated_data: Buffer | None = None,
    chunk_size: int = CHUNKED_CHUNK_SIZE,
    max_threads: int = 1,
    nonce_prefix: bytes | None = None,
    passphrase: str | Buffer | None = None,
    params: tuple[int, int, int] = (DEFAULT_TIME_COST, DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM),
    salt_and_file_key: tuple[bytes, bytes] | None = None,
) -> EncryptingWriter:
    """An EncryptingWriter with the internal knobs no public signature has:
    `nonce_prefix` fixes the prefix, `salt_and_file_key` a passphrase file's
    salt and file key (test vectors only: two streams under one key and
    prefix share every nonce). `key` None with a `passphrase`."""
    writer = EncryptingWriter.__new__(EncryptingWriter)
    writer._start(file, key, associated_data, chunk_size, max_threads, nonce_prefix,
                  None if passphrase is None else (passphrase, params), salt_and_file_key)
    return writer


class _Sealer:
    """The sealing side of one stream, for EncryptingWriter and encrypt_file:
    its header, the Rust core's handle, the next chunk's index and the batch
    size. The handle splits each batch over its threads (``max_threads``);
    it owns the rules of the chunk size, of the thread count and of fork()
    (a child may not seal)."""

    def __init__(self, key: Buffer, associated_data: Buffer | None, chunk_size: int, max_threads: int,
                 nonce_prefix: bytes | None = None) -> None:
        prefix = os.urandom(PREFIX_SIZE) if nonce_prefix is None else bytes(nonce_prefix)
        #: The stream's header, written before the first batch.
        self.header = encode_header(chunk_size, prefix)
        #: The threads each batch is split over (max_threads as the Rust core caps it).
        self.threads = _cb3.thread_count(max_threads)
        self.chunked = _cb3.Chunked(key, self.header, associated_data, self.threads)
        self.chunk_size = chunk_size
        #: The plaintext bytes of a whole batch.
        self.batch_size = fileio.batch_chunks(self.threads, chunk_size) * chunk_size
        self._index = 0  # the next chunk's index

    @classmethod
    def started(cls, sink: Any, key: Buffer | None, passphrase: tuple[str | Buffer, tuple[int, int, int]] | None,
                associated_data: Buffer | None, chunk_size: int, max_threads: int, nonce_prefix: bytes | None,
                fixed: tuple[bytes, bytes] | None = None) -> _Sealer:
        """A sealer under `key`, or, with a `passphrase` (and its parameters),
        under a fresh file key whose passphrase header it writes to `sink`
        first (the header then opens the chunks' associated data). The
        chunked header is the caller's to write."""
        if passphrase is None:
            return cls(cast("Buffer", key), associated_data, chunk_size, max_threads, nonce_prefix)
        file_key, stream_data = start_stream(sink, passphrase[0], associated_data, passphrase[1], fixed)
        try:
            return cls(file_key, stream_data, chunk_size, max_threads, nonce_prefix)
        finally:
            file_key[:] = bytes(len(file_key))  # the handle holds its own copy

    def sealed_size(self, plaintext: int) -> int:
        """The bytes a batch of `plaintext` bytes takes sealed (a tag per chunk)."""
        return plaintext + max(1, -(-plaintext // self.chunk_size)) * TAG_SIZE

    def seal(self, data: memoryview, last: bool, out: bytearray) -> int:
        """Seals `data` as the next chunks (the final one with `last`; whole
        chunks otherwise) into `out`; returns the bytes written."""
        n = self.chunked.seal_into(self._index, last, data, out)
        self._index += max(1, -(-len(data) // self.chunk_size))
        return n

    def check_process(self) -> None:
        """Raises the handle's RuntimeError in a process that may not seal
        with it (a fork() child), by asking it to seal nothing: the handle
        checks its process before the batch's shape."""
        try:
            self.chunked.seal_into(self._index, False, b"", bytearray(0))
        except ValueError:  # an empty batch that is not the final one: only its shape is refused
            pass
