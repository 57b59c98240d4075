"""DecryptingReader: the chunked format in, verified plaintext out (a
read-only binary file with random access)."""

from __future__ import annotations

import io
import operator
from typing import TYPE_CHECKING, Any, Iterator, cast

if TYPE_CHECKING:
    from typing_extensions import Buffer

from .. import _cb3
from ..errors import DecryptionError
from . import fileio
from .fileio import ReadableFile
from ..kdf import MAX_MEMORY_COST, MAX_PARALLELISM, MAX_TIME_COST
from .format import CHUNKED_HEADER_SIZE, TAG_SIZE, ChunkedError, ChunkedHeaderError, ChunkedTruncatedError, decode_header
from .passphrase import check_key_or_passphrase, is_passphrase_file, open_stream

__all__ = ["DecryptingReader"]

_FAILED = (
    "chunk {index} failed to authenticate: wrong key or associated data, a modified header, "
    "a modified, reordered, dropped, duplicated or spliced chunk, or a stream cut inside this chunk"
)


class DecryptingReader(fileio.PlaintextFile):
    """A read-only binary file that decrypts ``file``, a binary file object
    holding cb3's chunked format (from its current position to its end).

    ``DecryptingReader(file, key, *, associated_data=None, max_threads=1)``,
    or ``DecryptingReader(file, passphrase=..., max_time_cost=10,
    max_memory_cost=2097152, max_parallelism=64, ...)`` for a passphrase file
    (docs/passphrase-format.md): exactly one of ``key`` and ``passphrase``.

    With a ``passphrase`` the reader first reads the passphrase header and
    derives its key, once: WrongPassphrase (a DecryptionError) for a wrong
    passphrase or a modified header; PassphraseLimitError, before anything
    is allocated, for a header asking for more passes, memory (KiB) or lanes
    than the ``max_*`` limits (raise them for a file you trust). The stream
    after it then reads, seeks and verifies as any other.

    Reads the header at once (ChunkedHeaderError if it is not one). ``read``,
    ``read1``, ``readinto``, ``readline`` and iteration (lines) return
    plaintext only from chunks whose tag verified; a chunk that fails raises
    ChunkedError (after the data of the chunks before it), a stream that ends
    before its final chunk ChunkedTruncatedError, at the point where it is
    noticed. With a seekable ``file``, ``seek`` goes to any plaintext offset
    and decrypts only the chunks read from there (``seek(0, 2)`` verifies the
    final chunk first, so the size it returns is authenticated). Note that
    reading part of a stream verifies that part only: read to the end to
    know the stream is complete. ``close()`` does not close ``file``.

    Buffers grow with the data that arrives, never beyond what the input
    holds: the header's chunk size is not authenticated until chunk 0
    verifies, so a short input claiming 16 MiB chunks costs no 16 MiB.

    One reader may be shared between threads: its calls are serialized, as
    ``io.BufferedReader``'s are (each ``read``, ``readinto`` or ``readline``
    takes a contiguous piece; ``chunks()`` takes the lock for each piece it
    yields, not between them), and a reentrant call (from a signal handler,
    or from ``file``'s own ``read``) raises RuntimeError.
    """

    _reading = True
    _instead_of_copying = "open the file again and make a new DecryptingReader"

    def __init__(
        self,
        file: ReadableFile,
        key: Buffer | None = None,
        *,
        passphrase: str | Buffer | None = None,
        associated_data: Buffer | None = None,
        max_threads: int = 1,
        max_time_cost: int = MAX_TIME_COST,
        max_memory_cost: int = MAX_MEMORY_COST,
        max_parallelism: int = MAX_PARALLELISM,
    ) -> None:
        check_key_or_passphrase("DecryptingReader", key, passphrase)
        self._file: fileio.Source = cast(Any, file)
        threads = _cb3.thread_count(max_threads)  # each batch is split over them
        file_key: bytearray | None = None
        if passphrase is not None:  # the passphrase header, then the stream under the key it wraps
            file_key, associated_data = open_stream(file, passphrase, associated_data,
                                                    (max_time_cost, max_memory_cost, max_parallelism))
            key = file_key
        try:
            self._seekable = bool(self._file.seekable())
            self._start = self._file.tell() if self._seekable else 0
        except (AttributeError, OSError, ValueError):
            self._seekable, self._start = False, 0
        header = bytearray(CHUNKED_HEADER_SIZE)
        got = fileio.read_full(file, memoryview(header))
        try:
            try:
                chunk_size, _ = decode_header(bytes(header[:got]))
            except ChunkedHeaderError:
                if file_key is None and is_passphrase_file(header[:got]):
                    raise ChunkedHeaderError(
                        "a passphrase-protected file, not a stream under a key: give its passphrase instead"
                    ) from None
                raise
            self._chunked = _cb3.Chunked(cast("Buffer", key), bytes(header), associated_data, threads)
        finally:
            if file_key is not None:
                file_key[:] = bytes(len(file_key))  # the handle holds its own copy
        self._chunk_size = chunk_size
        self._piece = chunk_size + TAG_SIZE
        self._batch = fileio.batch_chunks(threads, chunk_size)
        # A batch and one byte of lookahead; the buffers start small and grow
        # as data arrives (_read_batch, _reserve_plain).
        self._raw_want = self._batch * self._piece + 1
        self._raw = bytearray(min(self._raw_want, fileio.FIRST_READ))
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
        if self.closed:
            return
        self._calls.acquire(closing=True)
        try:
            if not self.closed:
                if hasattr(self, "_plain_view"):  # not when __init__ failed
                    self._plain_view[:] = bytes(len(self._plain))  # wipe buffered plaintext
                    self._plain_len = self._plain_pos = 0
                super().close()
        finally:
            self._calls.release()

    # -- decrypting
    def _open(self, first: int, last: bool, data: memoryview, out: memoryview) -> int:
        return self._chunked.open_into(first, last, data, out)

    def _diagnose(self, first: int, last: bool, data: memoryview, plain: memoryview) -> tuple[int, BaseException]:
        """After a batch failed: opens it chunk by chunk into `plain`; returns
        the plaintext bytes of the chunks before the first failing one, and
        the error that chunk deserves."""
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
                return done, ChunkedError(_FAILED.format(index=index))
            finally:
                scratch[:] = bytes(len(scratch))
            if final:
                return done, ChunkedTruncatedError(
                    f"truncated stream: the input ends after chunk {index}, which is not the final chunk"
                )
            return done, ChunkedError(f"data after the final chunk (chunk {index}): bytes were appended to the stream")
        return done, ChunkedError(_FAILED.format(index=first))  # not reached: the batch failed somewhere

    def _open_batch(
        self, first: int, last: bool, data: memoryview, plain: memoryview
    ) -> tuple[int, BaseException | None]:
        """Opens the chunks in `data` (from chunk `first`, the final one with
        `last`) into `plain`: (plaintext bytes, None), or, when one fails,
        (the plaintext bytes of the chunks before it, the error it deserves)."""
        try:
            return self._open(first, last, data, plain), None
        except DecryptionError:
            return self._diagnose(first, last, data, plain)

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
        except ChunkedError as error:
            self._plain_len = self._plain_pos = 0
            self._error = error

    def _fill_batch(self) -> None:
        if self._done or self._error is not None:
            return
        if self._reposition:
            self._file.seek(self._start + CHUNKED_HEADER_SIZE + self._index * self._piece)
            self._carry = 0
            self._reposition = False
        want = self._raw_want
        got = self._read_batch()
        last = got < want
        length = got if last else want - 1
        if got == 0:
            self._done = True
            if self._index == 0:
                raise ChunkedTruncatedError("truncated stream: no chunk after the header")
            # Only after a seek past the end: the final chunk is verified there.
            self._verify_final()
            self._plain_len = self._plain_pos = 0
            return
        data = self._raw_view[:length]
        full, rest = divmod(length, self._piece)
        self._reserve_plain(full * self._chunk_size + max(0, rest - TAG_SIZE))
        self._plain_base = self._index * self._chunk_size
        n, self._error = self._open_batch(self._index, last, data, self._plain_view)
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
            got += fileio.read_full(self._file, self._raw_view[got:])
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

    def _take_batch(self, replacement: bytearray) -> tuple[bytearray, int, int]:
        """decrypt_file's batch interface: hands over the buffer that holds
        the next batch's verified plaintext as (buffer, start, end), empty
        at the end, and decrypts the following batches into `replacement`
        (grown when it is smaller than a batch). Raises the stream's error
        once the plaintext before it was taken."""
        if not self._ensure():
            return self._plain, 0, 0
        taken, start, end = self._plain, self._plain_pos, self._plain_len
        self._position += end - start
        self._plain = replacement
        self._plain_view = memoryview(replacement)
        self._plain_pos = self._plain_len = 0
        return taken, start, end

    def _available(self, first: bool) -> bool:
        """Whether buffered plaintext is there to take, decrypting more when
        needed. For the `first` piece of a call it raises the stream's error
        when that is reached; after a piece it stops there instead (the call
        returns what verified; the error comes with the next call)."""
        while self._plain_pos >= self._plain_len:
            if first:
                return self._ensure()
            if self._done or self._error is not None:
                return False
            self._fill()
        return True

    # The public reading methods take the call lock and the underscored ones
    # do the work, so that read() and readline() run whole under one lock.
    def readinto(self, buffer: Buffer) -> int:
        """Fills ``buffer`` with verified plaintext; returns the bytes written (0 at the end)."""
        with self._calls:
            return self._readinto(buffer)

    def _readinto(self, buffer: Buffer) -> int:
        self._check_open()
        # Both views released on return (PyPy 8.0: a live view blocks resizing `buffer`).
        with memoryview(buffer) as raw, raw.cast("B") as view:
            done = 0
            while done < len(view) and self._available(not done):
                take = min(len(view) - done, self._plain_len - self._plain_pos)
                view[done : done + take] = self._plain_view[self._plain_pos : self._plain_pos + take]
                self._plain_pos += take
                done += take
            self._position += done
            return done

    def readinto1(self, buffer: Buffer) -> int:
        """Like ``readinto``, but reads at most one more chunk from the source."""
        with self._calls:
            return self._readinto1(buffer)

    def _readinto1(self, buffer: Buffer) -> int:
        self._check_open()
        self._ensure()
        with memoryview(buffer) as raw, raw.cast("B") as view:
            take = min(len(view), self._plain_len - self._plain_pos)
            view[:take] = self._plain_view[self._plain_pos : self._plain_pos + take]
            self._plain_pos += take
            self._position += take
            return take

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes of verified plaintext (to the end when
        ``size`` is negative or None); fewer only at the end."""
        with self._calls:
            self._check_open()
            if size is None or size < 0:
                parts: list[bytes] = []
                while True:
                    part = self._read1(-1)
                    if not part:
                        return b"".join(parts)
                    parts.append(part)
            out = bytearray(size)
            n = self._readinto(out)
            del out[n:]
            return bytes(out)

    def read1(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes, reading at most one more batch from the
        source (negative ``size``: what is buffered, or the next batch)."""
        with self._calls:
            return self._read1(size)

    def _read1(self, size: int) -> bytes:
        self._check_open()
        if size < 0:  # what is buffered, or the next batch
            size = self._plain_len - self._plain_pos if self._ensure() else 0
        out = bytearray(size)
        n = self._readinto1(out)
        del out[n:]
        return bytes(out)

    def readline(self, size: int | None = -1) -> bytes:
        """The plaintext up to and including the next ``b"\\n"``, at most
        ``size`` bytes when ``size`` is not negative (b"" at the end). Line
        iteration calls it: under threads, each line comes whole."""
        with self._calls:
            self._check_open()
            limit = -1 if size is None else operator.index(size)
            parts: list[bytes] = []
            total = 0
            while total != limit and self._available(not total):
                start = self._plain_pos
                end = self._plain_len if limit < 0 else min(self._plain_len, start + limit - total)
                newline = self._plain.find(b"\n", start, end)
                if newline >= 0:
                    end = newline + 1
                parts.append(bytes(self._plain_view[start:end]))
                total += end - start
                self._plain_pos = end
                if newline >= 0:
                    break
            self._position += total
            return b"".join(parts)

    def chunks(self) -> Iterator[bytes]:
        """Yields the rest of the plaintext in the pieces it is decrypted in.
        Each piece is read under the call lock (it is not held between them:
        another thread's read may take the data between two pieces)."""
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
        body = end - self._start - CHUNKED_HEADER_SIZE
        if body <= 0:
            raise ChunkedTruncatedError("truncated stream: no chunk after the header")
        count = -(-body // self._piece)
        return count, body - (count - 1) * self._piece

    def _verify_final(self) -> int:
        """Verifies the final chunk (once) and returns the plaintext size."""
        if self._size is None:
            count, final = self._stream_layout()
            self._file.seek(self._start + CHUNKED_HEADER_SIZE + (count - 1) * self._piece)
            data = bytearray(final)
            fileio.read_full(self._file, memoryview(data))
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
            return 0, ChunkedError(_FAILED.format(index=index))
        finally:
            scratch[:] = bytes(len(scratch))
        return 0, ChunkedTruncatedError(
            f"truncated stream: the input ends after chunk {index}, which is not the final chunk"
        )

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Moves to a plaintext offset (whence 0, 1 or 2, as io). The chunk
        there is decrypted and verified on the next read."""
        with self._calls:
            return self._seek(offset, whence)

    def _seek(self, offset: int, whence: int) -> int:
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
