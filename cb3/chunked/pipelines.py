"""The thread engines of the file helpers (files.py), each moving batches of
chunks between a source, the Rust core and a sink on several threads:

- ``_BackgroundWriter``: writes the batches a caller decrypted (decrypt_file
  between streams);
- ``_SealingPipeline``: reads in order, seals on every worker, writes in order
  (encrypt_file between streams);
- ``_OffsetPipeline``: every batch at its own offset between two regular
  files (both helpers).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import TYPE_CHECKING, Callable

from . import fileio
from .format import TAG_SIZE

if TYPE_CHECKING:
    from .writer import EncryptingWriter


class _BackgroundWriter:
    """Writes batches to `sink` on a thread of its own while the caller reads
    and opens the next ones (the GIL is released during both the write
    system calls and cb3's chunk work), for decrypt_file with max_threads > 1. Buffers
    circulate: buffer() gives a free one, submit() queues it for writing and
    it comes back free afterwards. A write error is raised by the next
    buffer(), submit() or close()."""

    def __init__(self, sink: fileio.Source, size: int, count: int = 3) -> None:
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
                    fileio.write_all(self._sink, memoryview(buffer)[start:end])
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


class _SealingPipeline:
    """encrypt_file on several threads. The calling thread reads batches (one
    byte of lookahead, as on one thread) and queues them; each of `workers`
    threads takes the next queued batch, seals it on its own thread (the GIL
    released) and writes it when every earlier batch has been written. Batches
    never wait for one another except to keep the output in order, so a
    worker that the scheduler delays holds up no other (a fork-join of each
    batch over the pool did: measured 4x slower on a loaded machine), and
    reading, sealing and writing overlap on every core."""

    def __init__(self, writer: EncryptingWriter, sink: fileio.Source, workers: int) -> None:
        self._writer, self._sink, self._workers = writer, sink, workers
        self._chunked, self._first, self._chunk_size = writer._batch_sealer()
        self._per_batch = max(1, fileio.BATCH_BYTES_PER_THREAD // self._chunk_size)  # chunks
        self._capacity = self._per_batch * self._chunk_size
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
        chunked, first = self._chunked, self._first
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
                    fileio.write_all(self._sink, memoryview(out)[:n])
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

    def run(self, source: fileio.Source, progress: Callable[[int], None] | None) -> int:
        """Encrypts all of `source`; returns the plaintext bytes."""
        threads: list[threading.Thread] = []
        capacity, batch, total = self._capacity, 0, 0
        try:
            for _ in range(self._workers):
                threads.append(threading.Thread(target=self._work, name="cb3-seal", daemon=True))
                threads[-1].start()
            buffer = self._buffer()
            got = fileio.read_full(source, memoryview(buffer))
            while got == capacity + 1:
                following = self._buffer()
                following[0] = buffer[capacity]
                self._todo.put((batch, buffer, capacity, False))
                batch, total, buffer = batch + 1, total + capacity, following
                if progress is not None and self._written:
                    progress(self._written)
                got = 1 + fileio.read_full(source, memoryview(buffer)[1:])
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
        self._writer._sealed_elsewhere(batch * self._per_batch + max(1, -(-got // self._chunk_size)))
        return total


# ---- regular files: every batch at its own offset --------------------------------


class SourceChangedError(OSError):
    """The source file changed size while a file helper ran on several threads."""


def source_changed(before: int, now: int) -> SourceChangedError:
    return SourceChangedError(
        f"the source changed size while it was read ({before} bytes at the start, {now} now): "
        "the output is incomplete and was not finished"
    )


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
                    sink: tuple[fileio.Source, int], cut_at: Callable[[int, int], int]) -> int:
        """run(), then checks that the source (fd, start, size) still has its
        size. On any failure the sink (file, fd) is cut at cut_at(failing
        batch, its output bytes written), (0, 0) if no batch failed."""
        src_fd, start, size = source
        try:
            total = self.run(progress)
            now = os.fstat(src_fd).st_size - start
            if now != size:
                raise source_changed(size, now)
        except BaseException:
            cut = cut_at(*(self.failed or (0, 0)))
            os.ftruncate(sink[1], cut)
            sink[0].seek(cut)
            raise
        return total
