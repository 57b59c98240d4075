"""What the writer, the reader, the pipelines and the file helpers share:
the file protocols, the thread count, full reads and writes (streamed and
positional), the plaintext file base class and its call lock.

The other modules of the package use these through the module
(``fileio.write_all(...)``, ``fileio.BATCH_BYTES_PER_THREAD``), not by
importing the names, so that a test or the fuzz harness replaces one of them
(a failing disk, a smaller batch) in one place for the whole package.
"""

from __future__ import annotations

import gc
import io
import os
import stat
import sys
import threading
import weakref
from typing import Any, Callable, Protocol, Self, Union

from .. import _cb3

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


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), which also caps
    rustlib's pools: more threads than this only cost memory."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return os.cpu_count() or 1


def thread_count(max_threads: int) -> int:
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


def workers(threads: int) -> int:
    """The threads that work on batches: thread_count's result, 0 being every usable core."""
    return threads or usable_cores()


def batch_chunks(threads: int, chunk_size: int) -> int:
    return max(1, BATCH_BYTES_PER_THREAD * workers(threads) // chunk_size)


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
#: a later major collection: a 256 MiB file then peaked at 900 MiB of RSS
#: (measured, PyPy 7.3.19). One incremental step of the collector after each
#: large write keeps the peak at a few batches and was measured faster, too.
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


# ---- writing ------------------------------------------------------------------


def regular_fd(file: Source, writing: bool) -> int | None:
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


def pread_full(fd: int, view: memoryview, offset: int) -> int:
    """Reads into `view` from `offset` (the GIL released in the system call);
    fewer bytes only at end of file."""
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n == 0:
            break
        done += n
    return done


def pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    while len(view):
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    if COLLECT_STEP is not None:
        COLLECT_STEP()


# ---- one call at a time ----------------------------------------------------------


class CallLock:
    """Serializes the calls on one writer or reader, as io.BufferedWriter and
    io.BufferedReader do: a thread waits until the call of another ends. A
    call on a thread that is already inside one, or waiting to start one (a
    signal handler, a callback of the underlying file), raises RuntimeError
    instead of waiting for itself or changing state under the outer call.

    Use ``with lock:``; close() and abort() use ``acquire(closing=True)``,
    which also works on an object another thread was using when the process
    forked (wiping and closing need no consistent state)."""

    __slots__ = ("_name", "_lock", "_threads", "_busy_at_fork", "__weakref__")

    def __init__(self, name: str) -> None:
        self._name = name
        # A Lock, not an RLock: a reentrant call is refused, not let in.
        self._lock = threading.Lock()
        # The thread inside a call and the threads waiting for one. A thread
        # joins before it waits and leaves after it releases, so that a
        # signal handler running between the two on it is refused too.
        self._threads: set[int] = set()
        self._busy_at_fork = False
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
