"""Encrypting data of any size: cb3's chunked streaming format.

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

The chunk work runs in the Rust core (rustlib/src/chunked.rs), in batches of
consecutive chunks, with the GIL released and, with ``max_threads``, on
several cores.
"""

from __future__ import annotations

import gc
import io
import os
import queue
import stat
import sys
import tempfile
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Union, cast

if TYPE_CHECKING:
    from typing_extensions import Buffer

from . import _cb3
from .errors import DecryptionError, StreamError, StreamHeaderError, StreamTruncatedError

__all__ = [
    "EncryptingWriter",
    "DecryptingReader",
    "encrypt_file",
    "decrypt_file",
    "STREAM_HEADER_SIZE",
    "STREAM_CHUNK_SIZE",
    "STREAM_MIN_CHUNK_SIZE",
    "STREAM_MAX_CHUNK_SIZE",
]

MAGIC = b"CB3STRM"
VERSION = 1
STREAM_HEADER_SIZE = 27
PREFIX_SIZE = 15
STREAM_CHUNK_SIZE = 64 * 1024
STREAM_MIN_CHUNK_SIZE = 64
STREAM_MAX_CHUNK_SIZE = 1 << 24
TAG_SIZE = 32

#: Plaintext bytes per batch and thread: a batch of input and output stays in
#: L2 while it is sealed, and the I/O calls stay few.
BATCH_BYTES_PER_THREAD = 256 * 1024

#: A reader's first read of a batch: its buffers grow from here as the input
#: fills them, so what it allocates is bounded by what the input holds.
FIRST_READ = 64 * 1024

_FAILED = (
    "chunk {index} failed to authenticate: wrong key or associated data, a modified header, "
    "a modified, reordered, dropped, duplicated or spliced chunk, or a stream cut inside this chunk"
)



class ReadableFile(Protocol):
    """What the reading side needs: a binary file object (readinto is used
    when present; seekable/tell/seek for random access)."""

    def read(self, size: int = ..., /) -> bytes | None: ...


class WritableFile(Protocol):
    """What the writing side needs: a binary file object (flush is called
    when present)."""

    def write(self, data: memoryview, /) -> int | None: ...


PathOrReadable = Union[str, "os.PathLike[str]", ReadableFile]
PathOrWritable = Union[str, "os.PathLike[str]", WritableFile]
Source = Any  # inside: the file objects are used duck-typed, as io does


def encode_header(chunk_size: int, nonce_prefix: bytes) -> bytes:
    """The 27-byte stream header (rustlib's codec, cb3_chunked_header_encode)."""
    return _cb3.chunked_header_encode(chunk_size, nonce_prefix)


def decode_header(header: bytes) -> tuple[int, bytes]:
    """(chunk_size, nonce_prefix) of a header, or StreamHeaderError (rustlib's
    codec, cb3_chunked_header_decode, which names the rule it breaks)."""
    return _cb3.chunked_header_decode(header)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), which also caps
    rustlib's pools: more threads than this only cost memory."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return os.cpu_count() or 1


def _threads(max_threads: int) -> int:
    """max_threads as Python spells it (n >= 1 or cb3.AUTO) -> rustlib's (0 =
    every core), capped at the usable cores as rustlib caps its pools: the
    helpers size their buffers and start their threads by this number."""
    if not isinstance(max_threads, int) or isinstance(max_threads, bool):
        raise TypeError("max_threads must be an int")
    if max_threads == _cb3.AUTO:
        return 0
    if max_threads < 1:
        raise ValueError("max_threads must be a positive int or cb3.AUTO (-1)")
    return min(max_threads, usable_cores())


def _workers(threads: int) -> int:
    """The threads that work on batches: _threads' result, 0 being every usable core."""
    return threads or usable_cores()


def _batch_chunks(threads: int, chunk_size: int) -> int:
    return max(1, BATCH_BYTES_PER_THREAD * _workers(threads) // chunk_size)


def _read_full(source: Source, view: memoryview) -> int:
    """Fills `view` from `source` (retrying short reads, as pipes give);
    fewer bytes only at end of input."""
    done = 0
    readinto = getattr(source, "readinto", None)
    while done < len(view):
        if readinto is not None:
            n = readinto(view[done:])
        else:
            data = source.read(len(view) - done)
            n = None if data is None else len(data)
            if n:
                view[done : done + n] = data
        if n is None:
            raise BlockingIOError("the source is non-blocking and has no data ready")
        if n == 0:
            break
        done += n
    return done


#: PyPy copies every buffer it writes to a file and frees the copies only at
#: a later major collection: a 256 MiB file then peaked at 900 MiB of RSS
#: (measured, PyPy 7.3.19). One incremental step of the collector after each
#: large write keeps the peak at a few batches and was measured faster, too.
_COLLECT_STEP: Callable[[], object] | None = (
    getattr(gc, "collect_step", None) if sys.implementation.name == "pypy" else None
)


def _write_all(sink: Any, data: memoryview) -> None:
    """Writes all of `data` (raw files may write less than asked)."""
    size = len(data)
    while len(data):
        n = sink.write(data)
        if n is None:
            raise BlockingIOError("the destination is non-blocking and not ready")
        if n >= len(data):
            break
        data = data[n:]
    if _COLLECT_STEP is not None and size >= 65536:
        _COLLECT_STEP()


# ---- writing ------------------------------------------------------------------


class _PlaintextFile(io.BufferedIOBase):
    """What the writer and the reader share: a plaintext position."""

    _position = 0
    _reading = False  # True in DecryptingReader
    _seekable = False

    # -- io plumbing (a closed file raises ValueError from what it can do)
    def readable(self) -> bool:
        """True for a reader (it returns verified plaintext); False for a writer."""
        if self._reading:
            self._check_open()
        return self._reading

    def writable(self) -> bool:
        """True for a writer (it takes plaintext); False for a reader."""
        if not self._reading:
            self._check_open()
        return not self._reading

    def seekable(self) -> bool:
        """Whether ``seek`` works: for a reader on a seekable source; never for a writer (it only appends)."""
        if self._reading:
            self._check_open()
        return self._seekable

    def tell(self) -> int:
        """The plaintext offset: bytes written so far (writer), the next byte read (reader)."""
        self._check_open()
        return self._position

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    #: What to do instead of copying (set by each class).
    _instead_of_copying = ""

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy, copy.deepcopy and pickle all come here: a copy would
        # share the chunk counter and buffers (a writer's copy would seal
        # other data under the same nonces).
        raise TypeError(f"cannot copy or pickle '{type(self).__name__}' object: {self._instead_of_copying}")

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(0)


class EncryptingWriter(_PlaintextFile):
    """A write-only binary file that encrypts into ``file``, a binary file
    object, in cb3's chunked format (docs/stream-format.md).

    ``EncryptingWriter(file, key, *, associated_data=None,
    chunk_size=cb3.STREAM_CHUNK_SIZE, max_threads=1)``

    The header is written at once; chunks are written as they fill.
    ``close()`` (or leaving a ``with`` block normally) seals the final chunk
    and flushes ``file`` but does not close it. ``flush()`` flushes ``file``
    but cannot force out a partial chunk (chunks have a fixed size).
    ``max_threads=N`` or ``cb3.AUTO`` seals batches of chunks on several
    threads; the bytes are the same.

    The rule for an interrupted producer: the final chunk is never written
    (the output then fails to decrypt with StreamTruncatedError instead of
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
    would seal different data under the same nonces).
    """

    _instead_of_copying = (
        "two copies would seal different data under the same nonces; create a new EncryptingWriter "
        "(it picks a fresh nonce prefix)"
    )

    def __init__(
        self,
        file: WritableFile,
        key: Buffer,
        *,
        associated_data: Buffer | None = None,
        chunk_size: int = STREAM_CHUNK_SIZE,
        max_threads: int = 1,
    ) -> None:
        self._start(file, key, associated_data, chunk_size, max_threads, None, False)

    def _start(
        self,
        file: WritableFile,
        key: Buffer,
        associated_data: Buffer | None,
        chunk_size: int,
        max_threads: int,
        nonce_prefix: bytes | None,
        calling_thread: bool,
    ) -> None:
        """__init__, plus the two internal knobs (_new_writer): a fixed
        nonce prefix (test vectors only) and sealing on the calling thread."""
        self._file: Source = cast(Any, file)
        self._sealed = True  # until the header is written: nothing to seal on close
        self._pid = os.getpid()
        # The exception being handled when the writer was made (usually
        # None): closing while it is still being handled is no interruption.
        self._handling_at_start: BaseException | None = sys.exc_info()[1]
        self._finalizing = False
        if not isinstance(chunk_size, int) or isinstance(chunk_size, bool):
            raise TypeError("chunk_size must be an int")
        if not STREAM_MIN_CHUNK_SIZE <= chunk_size <= STREAM_MAX_CHUNK_SIZE:
            raise ValueError(f"chunk_size must be in {STREAM_MIN_CHUNK_SIZE}..{STREAM_MAX_CHUNK_SIZE}")
        threads = _threads(max_threads)
        prefix = os.urandom(PREFIX_SIZE) if nonce_prefix is None else bytes(nonce_prefix)
        if len(prefix) != PREFIX_SIZE:
            raise ValueError(f"nonce prefix must be {PREFIX_SIZE} bytes")
        header = encode_header(chunk_size, prefix)
        # calling_thread: every seal runs on the thread that calls it
        # (encrypt_file's workers), never on the pool.
        self._chunked = _cb3.Chunked(key, header, associated_data, 1 if calling_thread else threads)
        self._threads = threads
        self._chunk_size = chunk_size
        self._batch = _batch_chunks(threads, chunk_size)
        capacity = self._batch * chunk_size
        self._pending = bytearray(capacity)
        self._pending_view = memoryview(self._pending)
        self._fill = 0
        self._out = bytearray(capacity + self._batch * TAG_SIZE)
        self._out_view = memoryview(self._out)
        self._index = 0
        self._position = 0
        self._broken = False
        _write_all(file, memoryview(header))
        self._sealed = False

    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                "this cb3.EncryptingWriter was created in another process and cannot be used after fork(): parent "
                "and child would both seal chunks under the same nonces, and two chunks under one nonce reveal "
                "each other's plaintext; create a new EncryptingWriter (it picks a fresh nonce prefix) in this process"
            )

    def _seal(self, data: memoryview, last: bool) -> None:
        """Seals `data` as the next chunks and writes them."""
        self._check_process()
        if self._broken:
            raise OSError("an earlier write to the underlying file failed; this stream cannot be completed")
        try:
            n = self._chunked.seal_into(self._index, last, data, self._out)
            _write_all(self._file, self._out_view[:n])
        except BaseException:
            self._broken = True
            raise
        self._index += max(1, -(-len(data) // self._chunk_size))

    def write(self, data: Buffer) -> int:
        """Encrypts ``data`` (any bytes-like object); returns len(data)."""
        self._check_open()
        self._check_process()
        if self._broken:
            raise OSError("an earlier write to the underlying file failed; this stream cannot be completed")
        with memoryview(data) as raw:
            view = raw.cast("B") if raw.format not in ("B", "b", "c") or raw.ndim != 1 else raw
            total = len(view)
            size, capacity = self._chunk_size, len(self._pending)
            pos = 0
            if self._fill:
                take = min(capacity - self._fill, total)
                self._pending_view[self._fill : self._fill + take] = view[:take]
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
                    count = min(full, self._batch)
                    self._seal(view[pos : pos + count * size], False)
                    pos += count * size
                    full -= count
                rest = total - pos
                self._pending_view[:rest] = view[pos:]
                self._fill = rest
            self._position += total
            return total

    def flush(self) -> None:
        """Flushes ``file``. A partial chunk stays buffered until more data or close()."""
        self._check_open()
        if getattr(self, "_aborting", False):
            return  # abort(): leave the file alone
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
        try:
            if not self._sealed and not self._broken:
                if self._fill:
                    self._seal(self._pending_view[: self._fill], True)
                else:
                    # Nothing pending: an empty stream (one empty final chunk).
                    # A non-empty stream always keeps its final chunk pending.
                    self._seal(self._pending_view[:0], True)
                self._sealed = True
                flush = getattr(self._file, "flush", None)
                if flush is not None:
                    flush()
        finally:
            self._release()
            super().close()

    def abort(self) -> None:
        """Closes without sealing the final chunk: the output will not
        decrypt (StreamTruncatedError). Use when the data written so far must
        not pass for a complete stream."""
        if not self.closed:
            self._sealed = self._aborting = True
            self._release()
            super().close()

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
        # interrupted one.
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
    chunk_size: int = STREAM_CHUNK_SIZE,
    max_threads: int = 1,
    nonce_prefix: bytes | None = None,
    calling_thread: bool = False,
) -> EncryptingWriter:
    """An EncryptingWriter with the internal knobs no public signature has:
    `nonce_prefix` fixes the prefix (test vectors only: two streams under one
    key and prefix share every nonce), `calling_thread` seals on the calling
    thread only (encrypt_file's workers)."""
    writer = EncryptingWriter.__new__(EncryptingWriter)
    writer._start(file, key, associated_data, chunk_size, max_threads, nonce_prefix, calling_thread)
    return writer


# ---- reading ------------------------------------------------------------------


class DecryptingReader(_PlaintextFile):
    """A read-only binary file that decrypts ``file``, a binary file object
    holding a cb3 stream (from its current position to its end).

    ``DecryptingReader(file, key, *, associated_data=None, max_threads=1)``

    Reads the header at once (StreamHeaderError if it is not one). ``read``,
    ``read1``, ``readinto``, ``readline`` and iteration (lines) return
    plaintext only from chunks whose tag verified; a chunk that fails raises
    StreamError (after the data of the chunks before it), a stream that ends
    before its final chunk StreamTruncatedError, at the point where it is
    noticed. With a seekable ``file``, ``seek`` goes to any plaintext offset
    and decrypts only the chunks read from there (``seek(0, 2)`` verifies the
    final chunk first, so the size it returns is authenticated). Note that
    reading part of a stream verifies that part only: read to the end to
    know the stream is complete. ``close()`` does not close ``file``.

    Buffers grow with the data that arrives, never beyond what the input
    holds: the header's chunk size is not authenticated until chunk 0
    verifies, so a short input claiming 16 MiB chunks costs no 16 MiB.
    """

    _reading = True
    _instead_of_copying = "open the file again and make a new DecryptingReader"

    def __init__(
        self,
        file: ReadableFile,
        key: Buffer,
        *,
        associated_data: Buffer | None = None,
        max_threads: int = 1,
    ) -> None:
        self._start_reading(file, key, associated_data, max_threads, False)

    def _start_reading(
        self, file: ReadableFile, key: Buffer, associated_data: Buffer | None, max_threads: int, calling_thread: bool
    ) -> None:
        """__init__, plus opening on the calling thread only (decrypt_file's workers)."""
        self._file: Source = cast(Any, file)
        threads = _threads(max_threads)
        try:
            self._seekable = bool(self._file.seekable())
            self._start = self._file.tell() if self._seekable else 0
        except (AttributeError, OSError, ValueError):
            self._seekable, self._start = False, 0
        header = bytearray(STREAM_HEADER_SIZE)
        got = _read_full(file, memoryview(header))
        chunk_size, _ = decode_header(bytes(header[:got]))
        # calling_thread: every open runs on the thread that calls it
        # (decrypt_file's workers), never on the pool.
        self._chunked = _cb3.Chunked(key, bytes(header), associated_data, 1 if calling_thread else threads)
        self._chunk_size = chunk_size
        self._piece = chunk_size + TAG_SIZE
        self._batch = _batch_chunks(threads, chunk_size)
        # A batch and one byte of lookahead; the buffers start small and grow
        # as data arrives (_read_batch, _reserve_plain).
        self._raw_want = self._batch * self._piece + 1
        self._raw = bytearray(min(self._raw_want, FIRST_READ))
        self._raw_view = memoryview(self._raw)
        self._carry = 0  # lookahead bytes already at the start of _raw
        self._plain = bytearray(0)
        self._plain_view = memoryview(self._plain)
        self._plain_len = 0
        self._plain_pos = 0
        self._plain_base = 0  # the plaintext offset of the buffer's first byte
        self._index = 0  # the next chunk to decrypt
        self._position = 0  # plaintext offset of the next byte returned
        self._done = False  # the final chunk verified and is in (or past) the buffer
        self._error: BaseException | None = None  # raised once the verified data before it is read
        self._reposition = False  # the file must move to chunk _index before the next fill
        self._size: int | None = None

    def close(self) -> None:
        """Releases the reader's buffers; the source file stays open."""
        if not self.closed:
            if hasattr(self, "_plain_view"):  # not when __init__ failed
                self._plain_view[:] = bytes(len(self._plain))  # wipe buffered plaintext
                self._plain_len = self._plain_pos = 0
            super().close()

    # -- decrypting
    def _open(self, first: int, last: bool, data: memoryview, out: memoryview) -> int:
        return self._chunked.open_into(first, last, data, out)

    def _diagnose(
        self, first: int, last: bool, data: memoryview, plain: memoryview | None = None
    ) -> tuple[int, BaseException]:
        """After a batch failed: opens it chunk by chunk into `plain` (the
        plaintext buffer by default); returns the plaintext bytes of the
        chunks before the first failing one, and the error that chunk deserves."""
        plain = self._plain_view if plain is None else plain
        count = max(1, -(-len(data) // self._piece))
        done = 0
        for k in range(count):
            piece = data[k * self._piece : (k + 1) * self._piece]
            final = last and k == count - 1
            index = first + k
            out = plain[done : done + max(0, len(piece) - TAG_SIZE)]
            try:
                done += self._open(index, final, piece, out)
                continue
            except DecryptionError:
                pass
            scratch = bytearray(len(out))
            try:  # the same chunk under the other flag tells what happened
                self._open(index, not final, piece, memoryview(scratch))
            except (DecryptionError, ValueError):
                return done, StreamError(_FAILED.format(index=index))
            finally:
                scratch[:] = bytes(len(scratch))
            if final:
                return done, StreamTruncatedError(
                    f"truncated stream: the input ends after chunk {index}, which is not the final chunk"
                )
            return done, StreamError(f"data after the final chunk (chunk {index}): bytes were appended to the stream")
        return done, StreamError(_FAILED.format(index=first))  # not reached: the batch failed somewhere

    def _ensure(self) -> bool:
        """True once the buffer holds plaintext, False at the end; raises
        the stream's error (again, on every call) when it is reached."""
        while self._plain_pos >= self._plain_len:
            if self._error is not None:
                raise self._error
            if self._done:
                return False
            self._fill()
        return True

    def _fill(self) -> None:
        """Decrypts the next batch of chunks into the plaintext buffer. A
        failure is kept in _error, raised once the data before it is read."""
        try:
            self._fill_batch()
        except StreamError as error:
            self._plain_len = self._plain_pos = 0
            self._error = error

    def _fill_batch(self) -> None:
        if self._done or self._error is not None:
            return
        if self._reposition:
            self._file.seek(self._start + STREAM_HEADER_SIZE + self._index * self._piece)
            self._carry = 0
            self._reposition = False
        want = self._raw_want
        got = self._read_batch()
        last = got < want
        length = got if last else want - 1
        if got == 0:
            self._done = True
            if self._index == 0:
                raise StreamTruncatedError("truncated stream: no chunk after the header")
            # Only after a seek past the end: the final chunk is verified there.
            self._verify_final()
            self._plain_len = self._plain_pos = 0
            return
        data = self._raw_view[:length]
        full, rest = divmod(length, self._piece)
        self._reserve_plain(full * self._chunk_size + max(0, rest - TAG_SIZE))
        self._plain_base = self._index * self._chunk_size
        try:
            n = self._open(self._index, last, data, self._plain_view)
        except DecryptionError:
            n, self._error = self._diagnose(self._index, last, data)
        self._plain_len, self._plain_pos = n, 0
        self._index += -(-length // self._piece)
        if last:
            self._done = True
        else:
            self._raw[0] = self._raw[want - 1]
            self._carry = 1

    def _read_batch(self) -> int:
        """Reads up to a batch and its lookahead byte into _raw (after the
        carried byte), doubling _raw while the input keeps filling it; returns
        the bytes in _raw."""
        got = self._carry
        while True:
            got += _read_full(self._file, self._raw_view[got:])
            if got < len(self._raw) or len(self._raw) == self._raw_want:
                return got
            bigger = bytearray(min(self._raw_want, 2 * len(self._raw)))  # ciphertext: no wipe needed
            bigger[:got] = self._raw_view[:got]
            self._raw, self._raw_view = bigger, memoryview(bigger)

    def _reserve_plain(self, size: int) -> None:
        """Makes the plaintext buffer hold at least `size` bytes (the old one wiped)."""
        if len(self._plain) < size:
            self._plain_view[:] = bytes(len(self._plain))
            self._plain = bytearray(size)
            self._plain_view = memoryview(self._plain)

    def _next_batch(self) -> memoryview:
        """The plaintext of the next batch (empty at the end): for the file
        helpers, which write it out without another copy."""
        if not self._ensure():
            return self._plain_view[:0]
        view = self._plain_view[self._plain_pos : self._plain_len]
        self._position += len(view)
        self._plain_pos = self._plain_len
        return view

    def _take_batch(self, replacement: bytearray) -> tuple[bytearray, int, int]:
        """Like _next_batch, but hands over the buffer that holds the batch
        (buffer, start, end) and decrypts the following ones into
        `replacement` (same size): for a background writer."""
        if not self._ensure():
            return self._plain, 0, 0
        taken, start, end = self._plain, self._plain_pos, self._plain_len
        self._position += end - start
        self._plain = replacement
        self._plain_view = memoryview(replacement)
        self._plain_pos = self._plain_len = 0
        return taken, start, end

    def readinto(self, buffer: Buffer) -> int:
        """Fills ``buffer`` with verified plaintext; returns the bytes written (0 at the end)."""
        self._check_open()
        with memoryview(buffer) as raw:
            view = raw.cast("B")
            done = 0
            while done < len(view):
                if self._plain_pos >= self._plain_len:
                    if not done:
                        if not self._ensure():
                            break
                    elif self._done or self._error is not None:
                        break  # return what verified; the error comes with the next read
                    else:
                        self._fill()
                        continue
                take = min(len(view) - done, self._plain_len - self._plain_pos)
                view[done : done + take] = self._plain_view[self._plain_pos : self._plain_pos + take]
                self._plain_pos += take
                done += take
            self._position += done
            return done

    def readinto1(self, buffer: Buffer) -> int:
        """Like ``readinto``, but reads at most one more chunk from the source."""
        self._check_open()
        self._ensure()
        with memoryview(buffer) as raw:
            view = raw.cast("B")
            take = min(len(view), self._plain_len - self._plain_pos)
            view[:take] = self._plain_view[self._plain_pos : self._plain_pos + take]
            self._plain_pos += take
            self._position += take
            return take

    def read(self, size: int | None = -1) -> bytes:
        self._check_open()
        if size is None or size < 0:
            parts: list[bytes] = []
            while True:
                part = self.read1()
                if not part:
                    return b"".join(parts)
                parts.append(part)
        out = bytearray(size)
        n = self.readinto(out)
        del out[n:]
        return bytes(out)

    def read1(self, size: int = -1) -> bytes:
        self._check_open()
        if size < 0:  # what is buffered, or the next batch
            size = self._plain_len - self._plain_pos if self._ensure() else 0
        out = bytearray(size)
        n = self.readinto1(out)
        del out[n:]
        return bytes(out)

    def chunks(self) -> Iterator[bytes]:
        """Yields the rest of the plaintext in the pieces it is decrypted in."""
        while True:
            part = self.read1()
            if not part:
                return
            yield part

    # -- random access
    def _stream_layout(self) -> tuple[int, int]:
        """(number of chunks, ciphertext bytes of the final one), from the file size."""
        end = self._file.seek(0, io.SEEK_END)
        self._reposition = True
        body = end - self._start - STREAM_HEADER_SIZE
        if body <= 0:
            raise StreamTruncatedError("truncated stream: no chunk after the header")
        count = -(-body // self._piece)
        return count, body - (count - 1) * self._piece

    def _verify_final(self) -> int:
        """Verifies the final chunk (once) and returns the plaintext size."""
        if self._size is None:
            count, final = self._stream_layout()
            self._file.seek(self._start + STREAM_HEADER_SIZE + (count - 1) * self._piece)
            data = bytearray(final)
            _read_full(self._file, memoryview(data))
            out = bytearray(max(0, final - TAG_SIZE))
            try:
                self._open(count - 1, True, memoryview(data), memoryview(out))
            except DecryptionError:
                _, error = self._diagnose_single(count - 1, memoryview(data))
                raise error from None
            finally:
                out[:] = bytes(len(out))
            self._size = (count - 1) * self._chunk_size + len(out)
        return self._size

    def _diagnose_single(self, index: int, data: memoryview) -> tuple[int, BaseException]:
        scratch = bytearray(max(0, len(data) - TAG_SIZE))
        try:
            self._open(index, False, data, memoryview(scratch))
        except (DecryptionError, ValueError):
            return 0, StreamError(_FAILED.format(index=index))
        finally:
            scratch[:] = bytes(len(scratch))
        return 0, StreamTruncatedError(
            f"truncated stream: the input ends after chunk {index}, which is not the final chunk"
        )

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Moves to a plaintext offset (whence 0, 1 or 2, as io). The chunk
        there is decrypted and verified on the next read."""
        self._check_open()
        if not self._seekable:
            raise io.UnsupportedOperation("seek: the underlying file is not seekable")
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self._position + offset
        elif whence == io.SEEK_END:
            target = self._verify_final() + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        if target == self._position and self._error is None:
            return target
        # Within the current buffer: no I/O.
        batch_start = self._plain_base
        if batch_start <= target < batch_start + self._plain_len and self._error is None:
            self._plain_pos = target - batch_start
            self._position = target
            return target
        index, skip = divmod(target, self._chunk_size)
        self._index, self._error, self._done = index, None, False
        self._plain_len = self._plain_pos = 0
        self._reposition = True
        self._position = target
        if skip:
            # Decrypt from the chunk that holds the target and skip into it.
            self._fill()
            self._plain_pos = min(skip, self._plain_len)
        return target


# ---- one-call helpers ---------------------------------------------------------


class _BackgroundWriter:
    """Writes batches to `sink` on a thread of its own while the caller reads
    and opens the next ones (the GIL is released during both the write
    system calls and cb3's chunk work), for decrypt_file with max_threads > 1. Buffers
    circulate: buffer() gives a free one, submit() queues it for writing and
    it comes back free afterwards. A write error is raised by the next
    buffer(), submit() or close()."""

    def __init__(self, sink: Source, size: int, count: int = 3) -> None:
        self._sink = sink
        self._size = size
        self._buffers = [bytearray(size) for _ in range(count)]
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for buffer in self._buffers:
            self._free.put(buffer)
        self._todo: queue.SimpleQueue[tuple[bytearray, int, int] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="cb3-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._todo.get()
            if item is None:
                return
            buffer, start, end = item
            if self._error is None:
                try:
                    _write_all(self._sink, memoryview(buffer)[start:end])
                except BaseException as error:  # handed to the caller's thread
                    self._error = error
            self._free.put(buffer)

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def buffer(self) -> bytearray:
        self._check()
        buffer = self._free.get()
        self._check()
        return buffer

    def submit(self, buffer: bytearray, end: int, start: int = 0) -> None:
        self._check()
        if not any(buffer is known for known in self._buffers):
            self._buffers.append(buffer)  # a caller's buffer joins the pool: wiped with it
        self._todo.put((buffer, start, end))

    def close(self, wipe: bool = False) -> None:
        """Waits for the queued writes; raises the first write error. With
        `wipe`, zeroes every buffer that passed through (its own and those
        submitted to it)."""
        self._todo.put(None)
        self._thread.join()
        if wipe:  # plaintext (decrypt_file)
            for buffer in self._buffers:
                buffer[:] = bytes(len(buffer))
        self._check()


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
    chunk_size: int = STREAM_CHUNK_SIZE,
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
    with _opened(src, "rb") as source:
        _refuse_same_file(source, dst)
        with _opened(dst, "wb") as sink:
            return _encrypt_opened(key, source, sink, nonce_prefix=nonce_prefix, **options)


def _encrypt_opened(key: Buffer, source: Source, sink: Source, *, associated_data: Buffer | None = None,
                    chunk_size: int = STREAM_CHUNK_SIZE, max_threads: int = 1,
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
        workers = _workers(writer._threads)
        if writer._threads == 1:
            total = _encrypt_batches(writer, source, progress)
        elif fds is not None:
            total = _encrypt_at_offsets(writer, source, sink, *fds, workers, progress)
        else:
            total = _SealingPipeline(writer, sink, workers).run(source, progress)
        writer._sealed = True
        if progress is not None:
            progress(total)
    except BaseException:
        writer.abort()
        raise
    writer.finish()
    return total


def _encrypt_batches(writer: EncryptingWriter, source: Source, progress: Callable[[int], None] | None) -> int:
    """encrypt_file on one thread: whole batches straight from a read buffer,
    one byte of lookahead telling whether more follows (the final chunk is
    sealed last); returns the plaintext bytes."""
    capacity = len(writer._pending)
    buf = bytearray(capacity + 1)
    view = memoryview(buf)
    try:
        got = _read_full(source, view)
        total = 0
        while got == capacity + 1:
            writer._seal(view[:capacity], False)
            total += capacity
            if progress is not None:
                progress(total)
            buf[0] = buf[capacity]
            got = 1 + _read_full(source, view[1:])
        writer._seal(view[:got], True)
        return total + got
    finally:
        view[:] = bytes(len(buf))


class _SealingPipeline:
    """encrypt_file on several threads. The calling thread reads batches (one
    byte of lookahead, as on one thread) and queues them; each of `workers`
    threads takes the next queued batch, seals it on its own thread (the GIL
    released) and writes it when every earlier batch has been written. Batches
    never wait for one another except to keep the output in order, so a
    worker that the scheduler delays holds up no other (a fork-join of each
    batch over the pool did: measured 4x slower on a loaded machine), and
    reading, sealing and writing overlap on every core."""

    def __init__(self, writer: EncryptingWriter, sink: Source, workers: int) -> None:
        self._writer, self._sink, self._workers = writer, sink, workers
        size = writer._chunk_size
        self._per_batch = max(1, BATCH_BYTES_PER_THREAD // size)  # chunks
        self._capacity = self._per_batch * size
        self._buffers = [bytearray(self._capacity + 1) for _ in range(2 * workers)]
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for buffer in self._buffers:
            self._free.put(buffer)
        self._todo: queue.SimpleQueue[tuple[int, bytearray, int, bool] | None] = queue.SimpleQueue()
        self._turn = threading.Condition()
        self._next = 0  # the batch whose turn it is to be written
        self._written = 0  # plaintext bytes of the batches written
        self._error: BaseException | None = None

    def _work(self) -> None:
        # A worker always takes its batches and passes the turn on, even after
        # an error (then it neither seals nor writes): no other thread waits forever.
        try:
            out = bytearray(self._capacity + self._per_batch * TAG_SIZE)
        except BaseException as error:  # MemoryError
            self._error, out = self._error or error, bytearray()
        chunked, first = self._writer._chunked, self._writer._index
        while True:
            item = self._todo.get()
            if item is None:
                return
            batch, buffer, length, last = item
            n = 0
            try:
                if self._error is None:
                    n = chunked.seal_into(first + batch * self._per_batch, last, memoryview(buffer)[:length], out)
            except BaseException as error:  # handed to the calling thread
                self._error = self._error or error
            self._free.put(buffer)
            with self._turn:
                while self._next != batch:
                    self._turn.wait()
            try:
                if self._error is None:
                    _write_all(self._sink, memoryview(out)[:n])
            except BaseException as error:
                self._error = self._error or error
            with self._turn:
                self._next += 1
                self._written += length
                self._turn.notify_all()

    def _buffer(self) -> bytearray:
        buffer = self._free.get()
        if self._error is not None:
            raise self._error
        return buffer

    def run(self, source: Source, progress: Callable[[int], None] | None) -> int:
        """Encrypts all of `source`; returns the plaintext bytes."""
        threads: list[threading.Thread] = []
        capacity, batch, total = self._capacity, 0, 0
        try:
            for _ in range(self._workers):
                threads.append(threading.Thread(target=self._work, name="cb3-seal", daemon=True))
                threads[-1].start()
            buffer = self._buffer()
            got = _read_full(source, memoryview(buffer))
            while got == capacity + 1:
                following = self._buffer()
                following[0] = buffer[capacity]
                self._todo.put((batch, buffer, capacity, False))
                batch, total, buffer = batch + 1, total + capacity, following
                if progress is not None and self._written:
                    progress(self._written)
                got = 1 + _read_full(source, memoryview(buffer)[1:])
            self._todo.put((batch, buffer, got, True))
            total += got
        except BaseException as error:
            self._error = self._error or error
            raise
        finally:
            started = [thread for thread in threads if thread.ident is not None]
            for _ in started:
                self._todo.put(None)
            for thread in started:
                thread.join()
            for buffer in self._buffers:
                buffer[:] = bytes(len(buffer))  # plaintext
        if self._error is not None:
            raise self._error
        self._writer._index += batch * self._per_batch + max(1, -(-got // self._writer._chunk_size))
        return total


# ---- regular files: every batch at its own offset --------------------------------


class SourceChangedError(OSError):
    """The source file changed size while a file helper ran on several threads."""


def _regular_fd(file: Source, writing: bool) -> int | None:
    """The descriptor of `file` if it is a regular, seekable file that
    positional I/O (os.preadv / os.pwrite) can use at any offset; else None.
    Not for a descriptor opened with O_APPEND (pwrite would append)."""
    if not (hasattr(os, "preadv") and hasattr(os, "pwrite")):
        return None
    try:
        if not file.seekable():
            return None
        fd: int = file.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        if writing:
            import fcntl

            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
                return None
    except (AttributeError, OSError, ValueError, ImportError):
        return None
    return fd


def _pread_full(fd: int, view: memoryview, offset: int) -> int:
    """Reads into `view` from `offset` (the GIL released in the system call);
    fewer bytes only at end of file."""
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n == 0:
            break
        done += n
    return done


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    while len(view):
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    if _COLLECT_STEP is not None:
        _COLLECT_STEP()


class _BatchFailed(Exception):
    """A batch failed after `done` output bytes of it were written."""

    def __init__(self, done: int, error: BaseException) -> None:
        super().__init__(done)
        self.done, self.error = done, error


class _OffsetPipeline:
    """encrypt_file and decrypt_file on several threads between regular files.
    Every batch's input and output offsets are known from the input size, so
    each of `workers` threads (the calling thread one of them) takes the next
    batch number, reads its input with os.preadv into its own buffer, seals or
    opens it, and writes it with os.pwrite at its offset: the GIL is released
    in all three, the threads never wait for one another, and the page-cache
    copying is spread over the cores as the cryptography is. Memory: one input
    and one output buffer per thread.

    `job(batch, in_buffer, out_buffer)` does one batch and returns its
    plaintext bytes. After a failure no thread takes another batch; the
    batches before it were all taken already and run to completion, so the
    error raised is that of the first failing batch in stream order, as on
    one thread. run() returns the plaintext total or raises that error, with
    `failed` set to (batch, output bytes of it written)."""

    def __init__(self, workers: int, count: int, in_size: int, out_size: int,
                 job: Callable[[int, memoryview, memoryview], int]) -> None:
        self._count, self._job = count, job
        self._buffers = [(bytearray(in_size), bytearray(out_size)) for _ in range(min(workers, count))]
        self._lock = threading.Lock()
        self._next = 0
        self._done = 0
        self.failed: tuple[int, int] | None = None
        self._error: BaseException | None = None
        self._stop = False

    def _fail(self, batch: int, done: int, error: BaseException) -> None:
        with self._lock:
            if self.failed is None or batch < self.failed[0]:
                self.failed, self._error = (batch, done), error

    def _work(self, buffers: tuple[bytearray, bytearray], progress: Callable[[int], None] | None) -> None:
        source, target = memoryview(buffers[0]), memoryview(buffers[1])
        while True:
            with self._lock:
                batch = self._next
                if batch >= self._count or self.failed is not None or self._stop:
                    return
                self._next += 1
            try:
                n = self._job(batch, source, target)
                with self._lock:
                    self._done += n
                    done = self._done
                if progress is not None:
                    progress(done)
            except _BatchFailed as failure:
                self._fail(batch, failure.done, failure.error)
                return
            except BaseException as error:  # handed to the calling thread
                self._fail(batch, 0, error)
                return

    def run(self, progress: Callable[[int], None] | None) -> int:
        threads = [
            threading.Thread(target=self._work, args=(buffers, None), name="cb3-file", daemon=True)
            for buffers in self._buffers[1:]
        ]
        interrupted: BaseException | None = None
        try:
            for thread in threads:
                thread.start()
            self._work(self._buffers[0], progress)
        finally:
            # Every worker is joined before the files can be closed, even
            # through a KeyboardInterrupt: a late pwrite to a closed (and
            # perhaps reused) descriptor must never happen.
            self._stop = True
            for thread in threads:
                while thread.is_alive():
                    try:
                        thread.join()
                    except BaseException as error:
                        interrupted = interrupted or error
            for source, target in self._buffers:  # plaintext on one side or the other
                source[:] = bytes(len(source))
                target[:] = bytes(len(target))
        if interrupted is not None:
            raise interrupted
        if self._error is not None:
            raise self._error
        return self._done

    def run_checked(self, progress: Callable[[int], None] | None, source: tuple[int, int, int],
                    sink: tuple[Source, int], cut_at: Callable[[int, int], int]) -> int:
        """run(), then checks that the source (fd, start, size) still has its
        size. On any failure the sink (file, fd) is cut at cut_at(failing
        batch, its output bytes written), (0, 0) if no batch failed."""
        src_fd, start, size = source
        try:
            total = self.run(progress)
            now = os.fstat(src_fd).st_size - start
            if now != size:
                raise _changed(size, now)
        except BaseException:
            cut = cut_at(*(self.failed or (0, 0)))
            os.ftruncate(sink[1], cut)
            sink[0].seek(cut)
            raise
        return total


def _changed(before: int, now: int) -> SourceChangedError:
    return SourceChangedError(
        f"the source changed size while it was read ({before} bytes at the start, {now} now): "
        "the output is incomplete and was not finished"
    )


def _offset_fds(source: Source, sink: Source, max_threads: int) -> tuple[int, int] | None:
    """(source fd, sink fd) when the file helpers run as an _OffsetPipeline:
    several threads and two regular files; None otherwise (one thread, or a
    pipe, socket, terminal or in-memory file: the streaming paths)."""
    if _threads(max_threads) == 1:
        return None
    src_fd = _regular_fd(source, writing=False)
    dst_fd = _regular_fd(sink, writing=True) if src_fd is not None else None
    if src_fd is None or dst_fd is None or os.path.samestat(os.fstat(src_fd), os.fstat(dst_fd)):
        return None
    return src_fd, dst_fd


def _encrypt_at_offsets(writer: EncryptingWriter, source: Source, sink: Source, src_fd: int, dst_fd: int,
                        workers: int, progress: Callable[[int], None] | None) -> int:
    """encrypt_file between regular files on several threads (_OffsetPipeline).
    The final chunk is placed from the source's size at the start; a source
    that changes size meanwhile fails with SourceChangedError."""
    size_c = writer._chunk_size
    per_batch = max(1, BATCH_BYTES_PER_THREAD // size_c)
    capacity = per_batch * size_c
    sealed = capacity + per_batch * TAG_SIZE
    sink.flush()
    out_start = sink.tell()
    in_start = source.tell()
    size = max(0, os.fstat(src_fd).st_size - in_start)
    count = max(1, -(-size // capacity))
    final = size - (count - 1) * capacity
    final_chunks = max(1, -(-final // size_c))  # an empty final batch is still one (empty, final) chunk
    chunked, first = writer._chunked, writer._index

    def job(batch: int, plain: memoryview, out: memoryview) -> int:
        last = batch == count - 1
        length = final if last else capacity
        got = _pread_full(src_fd, plain[: length + last], in_start + batch * capacity)
        if got != length:  # shorter: the file shrank; one byte more: it grew
            raise _changed(size, os.fstat(src_fd).st_size - in_start)
        n = chunked.seal_into(first + batch * per_batch, last, plain[:length], out)
        _pwrite_all(dst_fd, out[:n], out_start + batch * sealed)
        return length

    # On failure what precedes the failing batch is a stream without its final chunk.
    pipeline = _OffsetPipeline(workers, count, capacity + 1, sealed, job)
    total = pipeline.run_checked(progress, (src_fd, in_start, size), (sink, dst_fd),
                                 lambda batch, _: out_start + batch * sealed)
    sink.seek(out_start + (count - 1) * sealed + final + final_chunks * TAG_SIZE)
    source.seek(in_start + size)
    writer._index += (count - 1) * per_batch + final_chunks
    return total


def _decrypt_at_offsets(reader: DecryptingReader, source: Source, sink: Source, src_fd: int, dst_fd: int,
                        workers: int, progress: Callable[[int], None] | None) -> int:
    """decrypt_file between regular files on several threads (_OffsetPipeline).
    The final chunk is expected where the source's size at the start puts it,
    so truncation is found exactly as on one thread. On failure `sink` holds
    the plaintext of the chunks that verified before the failing one (the
    rest is cut off), as on one thread."""
    piece = reader._piece
    per_batch = max(1, BATCH_BYTES_PER_THREAD // reader._chunk_size)
    capacity = per_batch * reader._chunk_size
    opened_size = per_batch * piece
    in_start = reader._start + STREAM_HEADER_SIZE
    body = os.fstat(src_fd).st_size - in_start
    if body <= 0:
        raise StreamTruncatedError("truncated stream: no chunk after the header")
    sink.flush()
    out_start = sink.tell()
    count = max(1, -(-body // opened_size))
    final = body - (count - 1) * opened_size

    def job(batch: int, data: memoryview, plain: memoryview) -> int:
        last = batch == count - 1
        length = final if last else opened_size
        got = _pread_full(src_fd, data[:length], in_start + batch * opened_size)
        if got != length:
            raise _changed(body, os.fstat(src_fd).st_size - in_start)
        index = batch * per_batch
        try:
            n = reader._open(index, last, data[:length], plain)
        except DecryptionError:
            done, error = reader._diagnose(index, last, data[:length], plain)
            _pwrite_all(dst_fd, plain[:done], out_start + batch * capacity)
            raise _BatchFailed(done, error) from None
        _pwrite_all(dst_fd, plain[:n], out_start + batch * capacity)
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
    with _opened(src, "rb") as source:
        _refuse_same_file(source, dst)
        with _opened(dst, "wb") as sink:
            return _decrypt_opened(key, source, sink, associated_data, max_threads, progress)


def _decrypt_opened(key: Buffer, source: Source, sink: Source, associated_data: Buffer | None, max_threads: int,
                    progress: Callable[[int], None] | None) -> int:
    fds = _offset_fds(source, sink, max_threads)
    reader = DecryptingReader.__new__(DecryptingReader)
    reader._start_reading(source, key, associated_data, max_threads, fds is not None)
    with reader:
        total = 0
        if fds is not None:
            workers = _workers(_threads(max_threads))
            return _decrypt_at_offsets(reader, source, sink, *fds, workers, progress)
        if _threads(max_threads) == 1:
            while True:
                part = reader._next_batch()
                if not part:
                    break
                _write_all(sink, part)
                total += len(part)
                if progress is not None:
                    progress(total)
            return total
        # Several threads: write each batch on a background thread while
        # the next one is read and opened.
        background = _BackgroundWriter(sink, len(reader._plain))
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
