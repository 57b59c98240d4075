"""One EncryptingWriter or DecryptingReader shared between threads: calls
are serialized (no chunk index is sealed twice, each write() and read()
takes a whole, contiguous piece), a reentrant call raises RuntimeError, and
a lock held by a parent's thread at fork() neither hangs nor misleads the
child."""

from __future__ import annotations

import gc
import io
import os
import signal
import struct
import threading
import time
from typing import Any, Callable

import pytest

import cb3
from cb3 import chunked
from helpers import run_threads
from helpers import run_in_child as _run_in_child

# The tests that run several threads carry the "threads" marker; the others
# (reentrance, readline, forking an idle reader) run in every mode.

KEY = bytes(range(40, 72))
CHUNK = 4096  # seal_into releases the GIL from 2048 bytes: every batch here does
BLOCK = 64 * CHUNK + 1  # the probe's write: whole chunks and one byte, so a partial chunk is always pending
WRITES = 20


def _block(thread: int, number: int, size: int) -> bytes:
    """A block that names its thread and number in every 4 bytes."""
    tag = struct.pack(">HH", thread, number)
    return (tag * (size // 4 + 1))[:size]


class _RecordingSealer:
    """Stands in for a writer's _cb3.Chunked: records the chunk indices each
    seal_into covers, then seals through the real object."""

    def __init__(self, inner: Any, chunk_size: int) -> None:
        self._inner = inner
        self._chunk_size = chunk_size
        self.indices: list[int] = []  # list.append is atomic: no lock of the test's own

    def seal_into(self, index: int, last: bool, data: Any, out: Any) -> int:
        count = max(1, -(-len(data) // self._chunk_size))
        self.indices.extend(range(index, index + count))
        n: int = self._inner.seal_into(index, last, data, out)
        return n


def _collect(worker: Callable[[], None], errors: list[BaseException]) -> Callable[[], None]:
    def run() -> None:
        try:
            worker()
        except BaseException as e:  # reported by the test
            errors.append(e)

    return run


# ---- 1. a shared writer seals every chunk index once ---------------------------


@pytest.mark.threads
@pytest.mark.parametrize("max_threads", [1, 2])
@pytest.mark.parametrize("threads", [2, 4])
def test_shared_writer_never_seals_an_index_twice(threads: int, max_threads: int) -> None:
    """The review's probe: several threads each write WRITES blocks of 64
    chunks and one byte to one writer. Unlocked, chunks 0-3 were sealed twice
    under different plaintexts (nonce reuse) in every run. Now each index is
    sealed once and the stream is the written blocks, whole, in some order."""
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=CHUNK, max_threads=max_threads)
    recorder = _RecordingSealer(writer._sealer.chunked, CHUNK)
    writer._sealer.chunked = recorder  # type: ignore[assignment]
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def producer(t: int) -> Callable[[], None]:
        def work() -> None:
            barrier.wait()
            for i in range(WRITES):
                assert writer.write(_block(t, i, BLOCK)) == BLOCK

        return _collect(work, errors)

    run_threads([producer(t) for t in range(threads)])
    assert not errors, errors
    writer.close()
    total = threads * WRITES * BLOCK
    assert len(recorder.indices) == len(set(recorder.indices)), "a chunk index was sealed twice (nonce reuse)"
    assert sorted(recorder.indices) == list(range(-(-total // CHUNK)))
    plain = cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()
    assert len(plain) == total
    pieces = [plain[k : k + BLOCK] for k in range(0, total, BLOCK)]
    written = [_block(t, i, BLOCK) for t in range(threads) for i in range(WRITES)]
    assert sorted(pieces) == sorted(written), "the stream is not the written blocks, each whole"
    for t in range(threads):  # one thread's writes keep their order
        mine = [p for p in pieces if p[:2] == struct.pack(">H", t)]
        assert mine == [_block(t, i, BLOCK) for i in range(WRITES)]


@pytest.mark.threads
def test_shared_writer_close_while_others_write() -> None:
    """A thread closing the writer while others write: every write either
    lands whole before the final chunk or raises ValueError (closed); the
    stream decrypts to the blocks that landed."""
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=CHUNK)
    landed: list[bytes] = []
    refused: list[int] = []
    errors: list[BaseException] = []

    def producer(t: int) -> Callable[[], None]:
        def work() -> None:
            for i in range(WRITES):
                block = _block(t, i, BLOCK)
                try:
                    writer.write(block)
                except ValueError:
                    refused.append(t)
                    return
                landed.append(block)
                if t == 0 and i == WRITES // 2:
                    writer.close()

        return _collect(work, errors)

    run_threads([producer(t) for t in range(3)])
    assert not errors, errors
    assert writer.closed and 0 in refused  # thread 0's next write at least
    plain = cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()
    assert sorted(plain[k : k + BLOCK] for k in range(0, len(plain), BLOCK)) == sorted(landed)


# ---- 2. a shared reader hands out contiguous, disjoint pieces -----------------


def _counting(words: int) -> bytes:
    """Plaintext whose 4-byte word k is k: a piece read from a 4-aligned
    offset names that offset."""
    return struct.pack(f">{words}I", *range(words))


def _offset(piece: bytes) -> int:
    return 4 * int(struct.unpack(">I", piece[:4])[0])


@pytest.mark.threads
@pytest.mark.parametrize("method", ["read", "readinto", "read1"])
def test_shared_reader_pieces_are_disjoint_and_whole(method: str) -> None:
    """Threads read fixed-size pieces from one reader: serialized, the
    pieces tile the plaintext (each one contiguous, none twice, none
    missing). Unlocked, two threads decrypted into one buffer at once (a
    batch failed to authenticate, or a piece came twice)."""
    size, threads = 1000, 4  # pieces straddle chunk and batch edges; 4-aligned, as the words are
    plain = _counting(500_000)
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=CHUNK) as writer:
        writer.write(plain)
    reader = cb3.DecryptingReader(io.BytesIO(sealed.getvalue()), KEY)
    got: list[list[bytes]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def read_one() -> bytes:
        if method == "read":
            return reader.read(size)
        if method == "read1":  # may return less: the rest of a batch
            return reader.read1(size)
        buf = bytearray(size)
        return bytes(buf[: reader.readinto(buf)])

    def consumer(t: int) -> Callable[[], None]:
        def work() -> None:
            barrier.wait()
            while piece := read_one():
                got[t].append(piece)

        return _collect(work, errors)

    run_threads([consumer(t) for t in range(threads)])
    assert not errors, errors
    pieces = sorted((p for mine in got for p in mine), key=_offset)
    assert b"".join(pieces) == plain, "the pieces do not tile the plaintext"
    position = 0
    for piece in pieces:
        assert _offset(piece) == position, "a piece is torn or came twice"
        position += len(piece)
    if method != "read1":
        assert all(len(p) == size for p in pieces[:-1])
    for mine in got:  # each thread's pieces come in stream order
        assert [_offset(p) for p in mine] == sorted(_offset(p) for p in mine)
    assert reader.tell() == len(plain)


@pytest.mark.threads
def test_shared_reader_lines_come_whole() -> None:
    """Threads iterating over the lines of one reader: each gets whole lines
    (readline runs under one lock; io's default readline would read one byte
    per call, so lines would mix between threads), every line exactly once."""
    lines = [b"%06d:" % i + b"x" * (i % 300) + b"\n" for i in range(3000)]
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=CHUNK) as writer:
        writer.write(b"".join(lines))
    reader = cb3.DecryptingReader(io.BytesIO(sealed.getvalue()), KEY)
    got: list[list[bytes]] = [[], [], [], []]
    errors: list[BaseException] = []

    def consumer(t: int) -> Callable[[], None]:
        def work() -> None:
            for line in reader:
                got[t].append(line)

        return _collect(work, errors)

    run_threads([consumer(t) for t in range(len(got))])
    assert not errors, errors
    assert sorted(line for mine in got for line in mine) == lines
    for mine in got:
        assert mine == sorted(mine)


def test_readline_matches_bytesio() -> None:
    """readline (now cb3's own) against io.BytesIO's, for every size limit
    around the lines and across chunk edges; an error after a partial line
    comes with the next call, as read()'s does."""
    plain = b"".join(b"l%d " % i * (i % 7) + b"\n" for i in range(400)) + b"no newline at the end"
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=64) as writer:
        writer.write(plain)
    for size in (-1, None, 0, 1, 5, 63, 64, 65, 200):
        reader, expected = cb3.DecryptingReader(io.BytesIO(sealed.getvalue()), KEY), io.BytesIO(plain)
        while True:
            line = reader.readline(size)
            assert line == expected.readline(size), size
            if not line:
                break
            assert reader.tell() == expected.tell()
    reader = cb3.DecryptingReader(io.BytesIO(sealed.getvalue()), KEY)
    for bad in ("3", 3.0, b"3"):  # as io: sizes are ints (or None)
        with pytest.raises(TypeError):
            io.BytesIO(plain).readline(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            reader.readline(bad)  # type: ignore[arg-type]
    assert reader.tell() == 0
    # A stream cut after chunk 9 (not the final one): the nine chunks before
    # it verify and come first, ending inside a line; then the error.
    cut = sealed.getvalue()[: chunked.CHUNKED_HEADER_SIZE + 10 * (64 + 32)]
    reader = cb3.DecryptingReader(io.BytesIO(cut), KEY)
    lines: list[bytes] = []
    with pytest.raises(cb3.ChunkedTruncatedError):
        while True:
            lines.append(reader.readline())
    assert b"".join(lines) == plain[: 9 * 64] and not lines[-1].endswith(b"\n")


# ---- 3. a reentrant call raises RuntimeError ------------------------------------


class _CallingBack(io.BytesIO):
    """A destination (or source) whose write (readinto) calls `callback` once armed."""

    callback: Callable[[], object] | None = None

    def _maybe_call(self) -> None:
        callback, self.callback = self.callback, None
        if callback is not None:
            callback()

    def write(self, data: Any) -> int:
        self._maybe_call()
        return super().write(data)

    def readinto(self, buffer: Any) -> int:
        self._maybe_call()
        return super().readinto(buffer)


@pytest.mark.parametrize("call", ["write", "close", "finish", "abort", "flush"])
def test_writer_reentrant_call_raises(call: str) -> None:
    out = _CallingBack()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    inner: Callable[[], object] = {
        "write": lambda: writer.write(b"inner"),
        "close": writer.close,
        "finish": writer.finish,
        "abort": writer.abort,
        "flush": writer.flush,
    }[call]
    out.callback = inner
    with pytest.raises(RuntimeError, match="reentrant call inside cb3.EncryptingWriter"):
        writer.write(bytes(1000))  # seals 15 chunks: the destination's write calls back
    assert not writer.closed  # the inner call changed nothing
    # The lock was released: the next call is no reentrant one (the failed
    # write broke the stream, so it raises the writer's own error).
    with pytest.raises(OSError, match="earlier write to the underlying file failed"):
        writer.write(b"x")
    writer.abort()
    assert writer.closed


@pytest.mark.parametrize("call", ["read", "readinto", "read1", "readline", "seek", "close"])
def test_reader_reentrant_call_raises(call: str) -> None:
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=64) as writer:
        writer.write(bytes(5000))
    source = _CallingBack(sealed.getvalue())
    reader = cb3.DecryptingReader(source, KEY)
    inner: Callable[[], object] = {
        "read": lambda: reader.read(10),
        "readinto": lambda: reader.readinto(bytearray(10)),
        "read1": lambda: reader.read1(10),
        "readline": reader.readline,
        "seek": lambda: reader.seek(0),
        "close": reader.close,
    }[call]
    source.callback = inner
    with pytest.raises(RuntimeError, match="reentrant call inside cb3.DecryptingReader"):
        reader.read(100)  # the first batch comes from the source: it calls back
    assert not reader.closed
    reader.seek(0)  # the lock was released
    assert reader.read() == bytes(5000)
    reader.close()


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs SIGUSR1")
def test_signal_handler_closing_the_writer_during_write() -> None:
    """A signal handler that closes the writer while the main thread is inside
    write() gets RuntimeError (it would otherwise seal the final chunk under
    the outer write, or wait for its own thread)."""
    raised: list[BaseException] = []

    def handler(signum: int, frame: object) -> None:
        try:
            writer.close()
        except RuntimeError as e:
            raised.append(e)

    class Signalling(io.BytesIO):
        armed = False

        def write(self, data: Any) -> int:
            if self.armed:
                self.armed = False
                os.kill(os.getpid(), signal.SIGUSR1)
                deadline = time.monotonic() + 10
                while not raised and time.monotonic() < deadline:  # the handler runs between bytecodes
                    time.sleep(0.001)
            return super().write(data)

    out = Signalling()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        out.armed = True
        writer.write(bytes(5000))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert len(raised) == 1 and "reentrant call inside cb3.EncryptingWriter" in str(raised[0])
    writer.write(bytes(5000))
    writer.close()
    assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == bytes(10000)


def test_finalizer_inside_another_writers_call() -> None:
    """The garbage collector finalizing an unclosed writer on a thread that
    is inside a call on another writer: locks are per object, so the
    finalizer aborts it (no deadlock, no reentrant error)."""
    doomed_out = io.BytesIO()
    doomed = cb3.EncryptingWriter(doomed_out, KEY, chunk_size=64)
    doomed.write(b"\xff" * 100)
    pending = doomed._pending  # abort wipes it
    box = [doomed]
    del doomed
    out = _CallingBack()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)

    def drop_the_last_reference() -> None:
        box.clear()  # CPython finalizes here, inside writer.write
        gc.collect()  # PyPy (no reference counts) in its collection

    out.callback = drop_the_last_reference
    writer.write(bytes(1000))
    writer.close()
    assert pending == bytes(len(pending)), "the finalizer did not abort the writer"
    with pytest.raises(cb3.ChunkedTruncatedError):  # aborted, never sealed
        cb3.DecryptingReader(io.BytesIO(doomed_out.getvalue()), KEY).read()
    assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == bytes(1000)


# ---- 4. fork() while a parent's thread holds the lock ---------------------------


@pytest.mark.threads
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_a_thread_is_inside_a_call() -> None:
    """A parent's thread is inside writer.write() and reader.read() (its
    file's call blocked) when the process forks. That thread does not exist
    in the child: the child must not wait for its locks. The writer raises
    its fork RuntimeError and can be aborted; the reader, its state half
    updated, refuses reads and can be closed. The parent goes on."""
    release = threading.Event()
    inside = threading.Barrier(3)

    class Blocking(io.BytesIO):
        armed = False

        def _block(self) -> None:
            if self.armed:
                self.armed = False
                inside.wait()
                release.wait(60)

        def write(self, data: Any) -> int:
            self._block()
            return super().write(data)

        def readinto(self, buffer: Any) -> int:
            self._block()
            return super().readinto(buffer)

    out = Blocking()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=64) as w:
        w.write(bytes(3000))
    source = Blocking(sealed.getvalue())
    reader = cb3.DecryptingReader(source, KEY)
    out.armed = source.armed = True
    errors: list[BaseException] = []
    busy = [
        threading.Thread(target=_collect(lambda: writer.write(bytes(1000)) and None, errors)),
        threading.Thread(target=_collect(lambda: reader.read(100) and None, errors)),
    ]
    for thread in busy:
        thread.start()
    inside.wait(60)  # both threads hold their object's lock

    def child_writer() -> bytes:
        try:
            writer.write(b"child")
        except RuntimeError as e:
            assert "created in another process" in str(e), e
        else:
            raise AssertionError("the child wrote")
        writer.abort()
        assert writer.closed
        return b"ok"

    def child_reader() -> bytes:
        for use in (lambda: reader.read(1), lambda: reader.seek(0), reader.readline):
            try:
                use()
            except RuntimeError as e:
                assert "in use by another thread when the process forked" in str(e), e
            else:
                raise AssertionError("the child read")
        reader.close()
        assert reader.closed
        return b"ok"

    try:
        for child in (child_writer, child_reader):
            start = time.monotonic()
            assert _run_in_child(child) == (0, b"ok")
            assert time.monotonic() - start < 30
    finally:
        release.set()
        for thread in busy:
            thread.join(60)
    assert not errors, errors
    writer.close()
    assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == bytes(1000)
    assert reader.read() == bytes(2900)  # 100 were read by the thread


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_idle_reader_works_in_the_child() -> None:
    """A reader nobody was using at the fork works in the child (opening
    needs no process), through a fresh lock."""
    sealed = io.BytesIO()
    with cb3.EncryptingWriter(sealed, KEY, chunk_size=64) as w:
        w.write(b"abc" * 500)
    reader = cb3.DecryptingReader(io.BytesIO(sealed.getvalue()), KEY)
    assert reader.read(3) == b"abc"
    assert _run_in_child(lambda: reader.read()) == (0, b"abc" * 499)
    assert reader.read() == b"abc" * 499
