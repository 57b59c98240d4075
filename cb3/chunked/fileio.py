"""What the writer, the reader and the file helpers share: the file
protocols, the batch size, full reads and writes, the helpers' output, the
plaintext file base class and its call lock.

The other modules of the package use these through the module
(``fileio.write_all(...)``, ``fileio.BATCH_BYTES_PER_THREAD``), not by
importing the names, so that a test or the fuzz harness replaces one of them
(a failing disk, a smaller batch) in one place for the whole package.
"""

from __future__ import annotations

import gc
import io
import os
import queue
import sys
import threading
import weakref
from typing import Any, Callable, Protocol, Self, Union

#: Plaintext bytes per batch and thread: a batch of input and output stays in
#: L2 while it is sealed, and the I/O calls stay few.
BATCH_BYTES_PER_THREAD = 256 * 1024

#: A reader's first read of a batch: its buffers grow from here as the input
#: fills them, so what it allocates is bounded by what the input holds.
FIRST_READ = 64 * 1024


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


def batch_chunks(threads: int, chunk_size: int) -> int:
    """The chunks of one batch for a handle working on `threads` threads
    (``_cb3.thread_count``'s answer): each thread gets its share of a batch."""
    return max(1, BATCH_BYTES_PER_THREAD * threads // chunk_size)


def read_full(source: Source, view: memoryview) -> int:
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
#: a later major collection, so the memory of a large file's run would grow
#: with the file. One incremental step of the collector after each large
#: write keeps the peak at a few batches.
COLLECT_STEP: Callable[[], object] | None = (
    getattr(gc, "collect_step", None) if sys.implementation.name == "pypy" else None
)


def write_all(sink: Any, data: memoryview) -> None:
    """Writes all of `data` (raw files may write less than asked)."""
    size = len(data)
    while len(data):
        n = sink.write(data)
        if n is None:
            raise BlockingIOError("the destination is non-blocking and not ready")
        if n >= len(data):
            break
        data = data[n:]
    if COLLECT_STEP is not None and size >= 65536:
        COLLECT_STEP()


# ---- the file helpers' output ----------------------------------------------------


class BatchOutput:
    """Where the file helpers write their batches, in order: on the calling
    thread, or with `background` on one thread of its own, so that writing a
    batch overlaps reading and sealing or opening the next (the GIL is
    released in the write system calls and in the Rust core's batch calls).

    Buffers circulate: buffer() gives a free one, submit() queues it (its
    bytes start:end) and it comes back free once written. A buffer the
    caller brings joins the pool. A write error is raised by the next
    buffer(), submit() or close(); after it nothing more is written."""

    def __init__(self, sink: Source, background: bool, size: int = 0) -> None:
        self._sink = sink
        self._buffers = [bytearray(size) for _ in range(3 if background else 1)]
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for buffer in self._buffers:
            self._free.put(buffer)
        self._todo: queue.SimpleQueue[tuple[bytearray, int, int] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="cb3-writer", daemon=True)
            self._thread.start()

    def _write(self, buffer: bytearray, start: int, end: int) -> None:
        if self._error is None:
            try:
                write_all(self._sink, memoryview(buffer)[start:end])
            except BaseException as error:  # handed to the caller's thread
                self._error = error
        self._free.put(buffer)

    def _run(self) -> None:
        while True:
            item = self._todo.get()
            if item is None:
                return
            self._write(*item)

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
        if self._thread is None:
            self._write(buffer, start, end)
            self._check()
        else:
            self._todo.put((buffer, start, end))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """close(); when the block raised, its exception propagates, not a
        write error of a batch queued before it."""
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception:
            pass

    def close(self) -> None:
        """Waits for the queued writes (also when the caller is interrupted:
        no write may reach the sink after the helper returned), zeroes every
        buffer that passed through (the file helpers' plaintext) and raises
        the first write error."""
        interrupted: BaseException | None = None
        if self._thread is not None:
            self._todo.put(None)
            while self._thread.is_alive():
                try:
                    self._thread.join()
                except BaseException as error:  # KeyboardInterrupt: join again, raise it after
                    interrupted = interrupted or error
        for buffer in self._buffers:
            buffer[:] = bytes(len(buffer))
        if interrupted is not None:
            raise interrupted
        self._check()


# ---- one call at a time ----------------------------------------------------------


class CallLock:
    """Serializes the calls on one writer or reader, as io.BufferedWriter and
    io.BufferedReader do: a thread waits until the call of another ends. A
    call on a thread that is already inside one, or waiting to start one (a
    signal handler, a callback of the underlying file), raises RuntimeError
    instead of waiting for itself or changing state under the outer call.

    Use ``with lock:``; close() and abort() use ``acquire(closing=True)``,
    which also works on an object another thread was using when the process
    forked (wiping and closing need no consistent state).

    Python's locks do not survive fork(): one held by a parent's thread
    stays held in the child. So in a child every lock is replaced (see
    _after_fork_in_child) and says so in ``forked``; whether the object
    itself may go on there is its handle's rule (a writer's handle refuses
    to seal, a reader's opens anywhere)."""

    __slots__ = ("_name", "_lock", "_threads", "_busy_at_fork", "forked", "__weakref__")

    def __init__(self, name: str) -> None:
        self._name = name
        # A Lock, not an RLock: a reentrant call is refused, not let in.
        self._lock = threading.Lock()
        # The thread inside a call and the threads waiting for one. A thread
        # joins before it waits and leaves after it releases, so that a
        # signal handler running between the two on it is refused too.
        self._threads: set[int] = set()
        self._busy_at_fork = False
        #: True in a fork() child of the process that made the lock.
        self.forked = False
        _CALL_LOCKS.add(self)

    def acquire(self, closing: bool = False) -> None:
        me = _get_ident()
        if me in self._threads:
            raise RuntimeError(
                f"reentrant call inside {self._name}: this thread is already inside a call on it "
                "(a signal handler or a callback of the underlying file called it again)"
            )
        if self._busy_at_fork and not closing:
            raise RuntimeError(
                f"this {self._name} was in use by another thread when the process forked, and its state is "
                "incomplete in this process; make a new one here"
            )
        self._threads.add(me)
        try:
            # A Python-level Lock.acquire releases the GIL while it waits (the
            # project's rule: never block on a lock while holding the GIL), and
            # it lets the main thread run signal handlers meanwhile.
            self._lock.acquire()
        except BaseException:  # a signal handler raised (KeyboardInterrupt) while it waited: not acquired
            self._threads.discard(me)
            raise

    def release(self, *exc_info: object) -> None:
        self._lock.release()
        self._threads.discard(_get_ident())

    # The same functions: no extra Python call per call of the writer or reader.
    __enter__ = acquire
    __exit__ = release


_get_ident = threading.get_ident
_CALL_LOCKS: weakref.WeakSet[CallLock] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A thread of the parent that held a call lock is gone in the child:
    the lock would never be released there. Each lock is replaced; one that
    was held refuses all but close() and abort() (the object's state is
    half-updated). The forking thread itself, inside a call (a callback that
    forked), keeps its lock and releases it as usual."""
    forker = threading.get_ident()
    for calls in list(_CALL_LOCKS):
        calls.forked = True
        if forker in calls._threads:
            calls._threads = {forker}
            continue
        calls._busy_at_fork = calls._busy_at_fork or calls._lock.locked()
        calls._lock = threading.Lock()
        calls._threads = set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class PlaintextFile(io.BufferedIOBase):
    """What the writer and the reader share: a plaintext position, and the
    lock that serializes their calls (made in __new__, so that every object
    has one, however it was initialized)."""

    _position = 0
    _reading = False  # True in DecryptingReader
    _seekable = False
    _calls: CallLock

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        self = super().__new__(cls)
        self._calls = CallLock(f"cb3.{cls.__name__}")
        return self

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
