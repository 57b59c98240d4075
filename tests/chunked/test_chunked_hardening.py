"""The chunked format's promises under fork, copies, wrappers, hostile
headers, seeks, oversized thread counts and same-file outputs
(docs/stream-format.md, docs/security-testing.md): each test here failed on
the code before these guarantees were made."""

from __future__ import annotations

import copy
import csv
import gc
import gzip
import inspect
import io
import json
import os
import pickle
import platform
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cb3
from cb3 import chunked
from cb3.chunked import fileio
from helpers import in_child as _in_child

KEY = bytes(range(1, 33))


def sealed(pt: bytes, chunk_size: int = 64, **options: Any) -> bytes:
    out = io.BytesIO()
    with cb3.EncryptingWriter(out, KEY, chunk_size=chunk_size, **options) as writer:
        writer.write(pt)
    return out.getvalue()


# ---- 1. a writer belongs to its process and is never copied ------------------------


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, pickle.dumps], ids=["copy", "deepcopy", "pickle"])
def test_writer_and_reader_refuse_copying(clone: Callable[[Any], Any]) -> None:
    writer = cb3.EncryptingWriter(io.BytesIO(), KEY)
    with pytest.raises(TypeError, match="cannot copy or pickle 'EncryptingWriter'.*create a new EncryptingWriter"):
        clone(writer)
    reader = cb3.DecryptingReader(io.BytesIO(sealed(b"x")), KEY)
    with pytest.raises(TypeError, match="cannot copy or pickle 'DecryptingReader'.*new DecryptingReader"):
        clone(reader)
    writer.abort()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_writer_refuses_to_seal_in_a_forked_child() -> None:
    """Parent and child would seal different data under the same nonce
    prefix and chunk indices. The child gets RuntimeError from the Python
    writer and from the C object under it; the parent goes on."""
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    writer.write(bytes(100))

    def child() -> None:
        with pytest.raises(RuntimeError, match="created in another process.*fork"):
            writer.write(bytes(200))
        with pytest.raises(RuntimeError, match="cannot be used after fork"):
            writer._sealer.chunked.seal_into(5, False, bytes(64), bytearray(96))
        with pytest.raises(RuntimeError, match="fork"):
            writer.close()
        opened = bytearray(64)  # opening needs no process: the reader's side works anywhere
        chunk = out.getvalue()[chunked.CHUNKED_HEADER_SIZE : chunked.CHUNKED_HEADER_SIZE + 96]
        assert writer._sealer.chunked.open_into(0, False, chunk, opened) == 64

    assert _in_child(child) == 0
    writer.write(bytes(50))
    writer.close()
    assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == bytes(150)


# ---- 2. seek and read agree with a plain file -------------------------------------


def test_seek_past_the_end_then_back_into_the_short_final_chunk() -> None:
    pt = bytes(range(256)) + bytes(range(44))
    reader = cb3.DecryptingReader(io.BytesIO(sealed(pt)), KEY)
    reader.seek(310)
    assert reader.read(5) == b""
    reader.seek(270)
    assert reader.read(5) == pt[270:275]


def _positions(size: int, chunk_size: int) -> st.SearchStrategy[int]:
    """Every chunk edge (and one byte either side), the end of the data, past
    it inside the final chunk's span, and anywhere up to two chunks past it."""
    edges = {max(0, k * chunk_size + d) for k in range(size // chunk_size + 3) for d in (-1, 0, 1)}
    edges |= {size - 1, size, size + 1}
    final_start = max(0, size - 1) // chunk_size * chunk_size
    return st.one_of(st.sampled_from(sorted(e for e in edges if e >= 0)),
                     st.integers(final_start, final_start + chunk_size),
                     st.integers(0, size + 2 * chunk_size))


@st.composite
def _seek_scenario(draw: Any) -> tuple[int, int, list[tuple[str, int, int]]]:
    chunk_size = draw(st.sampled_from([64, 100, 1024, 4096, 65536]))
    size = draw(st.sampled_from([0, 1, chunk_size - 1, chunk_size, chunk_size + 1, 3 * chunk_size - 7,
                                 5 * chunk_size, 9 * chunk_size + 33]))
    ops = draw(st.lists(st.tuples(st.sampled_from(["seek0", "seek0", "seek1", "seek2", "read", "read", "read1",
                                                   "readinto"]),
                                  st.one_of(_positions(size, chunk_size), st.integers(-2 * chunk_size, 0)),
                                  st.integers(-1, 3 * chunk_size)), min_size=1, max_size=12))
    return chunk_size, size, ops


_STREAMS: dict[tuple[int, int], tuple[bytes, bytes]] = {}


def _stream(chunk_size: int, size: int) -> tuple[bytes, bytes]:
    if (chunk_size, size) not in _STREAMS:
        pt = os.urandom(size)
        _STREAMS[chunk_size, size] = pt, sealed(pt, chunk_size)
    return _STREAMS[chunk_size, size]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_seek_scenario())
def test_every_seek_and_read_sequence_matches_bytesio(scenario: tuple[int, int, list[tuple[str, int, int]]]) -> None:
    chunk_size, size, ops = scenario
    pt, ct = _stream(chunk_size, size)
    reader, plain = cb3.DecryptingReader(io.BytesIO(ct), KEY), io.BytesIO(pt)
    for op, offset, count in ops:
        if op.startswith("seek"):
            whence = int(op[-1])
            target = {0: offset, 1: plain.tell() + offset, 2: size + offset}[whence]
            if target < 0:
                with pytest.raises(ValueError):
                    reader.seek(offset, whence)
                continue
            assert reader.seek(offset, whence) == plain.seek(offset, whence)
        elif op == "read":
            assert reader.read(count) == plain.read(count), (op, offset, count)
        elif op == "read1":
            got = reader.read1(count)
            assert got == pt[plain.tell() : plain.tell() + len(got)] and (got or count == 0 or plain.tell() >= size)
            plain.seek(len(got), 1)
        else:
            buffer = bytearray(max(count, 0))
            n = reader.readinto(buffer)
            assert bytes(buffer[:n]) == plain.read(max(count, 0))
        assert reader.tell() == plain.tell()


# ---- 3. a wrapper never seals an interrupted stream ---------------------------------


class ProducerCrashed(Exception):
    pass


def _rows() -> Any:
    for i in range(500):
        yield [i, "row"]
    raise ProducerCrashed


def _producers() -> dict[str, Callable[[Any], None]]:
    def text(w: Any) -> None:
        with io.TextIOWrapper(w, encoding="utf-8") as t:
            t.write("complete-looking text " * 50)
            raise ProducerCrashed

    def buffered(w: Any) -> None:
        with io.BufferedWriter(w) as b:
            b.write(bytes(5000))
            raise ProducerCrashed

    def gzipped(w: Any) -> None:
        with gzip.GzipFile(fileobj=w, mode="wb") as g:
            g.write(bytes(5000))
            raise ProducerCrashed

    def gzip_text(w: Any) -> None:
        with gzip.open(w, "wt", encoding="utf-8") as t:
            t.write("x" * 5000)
            raise ProducerCrashed

    def csv_rows(w: Any) -> None:
        with io.TextIOWrapper(w, encoding="utf-8", newline="") as t:
            csv.writer(t).writerows(_rows())

    def json_dump(w: Any) -> None:
        with io.TextIOWrapper(w, encoding="utf-8") as t:
            json.dump({"rows": list(range(1000)), "bad": object()}, t)  # TypeError halfway

    def closing_finally(w: Any) -> None:
        try:
            w.write(bytes(500))
            raise ProducerCrashed
        finally:
            w.close()

    return {"TextIOWrapper": text, "BufferedWriter": buffered, "gzip": gzipped, "gzip.open-text": gzip_text,
            "csv": csv_rows, "json.dump": json_dump, "try-finally-close": closing_finally}


PRODUCERS = _producers()


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
@pytest.mark.parametrize("outer_with", [True, False], ids=["with-writer", "bare-writer"])
def test_an_exception_in_the_producer_never_seals_the_stream(producer: str, outer_with: bool) -> None:
    out = io.BytesIO()
    with pytest.raises((ProducerCrashed, TypeError)):
        if outer_with:
            with cb3.EncryptingWriter(out, KEY, chunk_size=64) as w:
                PRODUCERS[producer](w)
        else:
            PRODUCERS[producer](cb3.EncryptingWriter(out, KEY, chunk_size=64))
    gc.collect()
    with pytest.raises(cb3.ChunkedTruncatedError):
        cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()


def _wrapped(writer: Any, wrap: str) -> Any:
    if wrap == "TextIOWrapper":
        return io.TextIOWrapper(writer, encoding="utf-8")
    if wrap == "BufferedWriter":
        return io.BufferedWriter(writer)
    return io.TextIOWrapper(io.BufferedWriter(writer), encoding="utf-8")


WRAPS = ["TextIOWrapper", "BufferedWriter", "TextIOWrapper(BufferedWriter)"]


@pytest.mark.parametrize("wrap", WRAPS)
def test_a_wrapper_dropped_unclosed_never_seals(wrap: str) -> None:
    """No exception at all: the wrapper (holding the only reference to the
    writer) is dropped unclosed, and its finalizer closes the writer."""
    out = io.BytesIO()
    f = _wrapped(cb3.EncryptingWriter(out, KEY, chunk_size=64), wrap)
    f.write("x" * 3000 if "Text" in wrap else bytes(3000))
    del f
    gc.collect()
    with pytest.raises(cb3.ChunkedTruncatedError):
        cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()


@pytest.mark.parametrize("wrap", WRAPS)
def test_a_wrapper_collected_after_a_crash_never_seals(wrap: str) -> None:
    """The producer dies with the wrapper unclosed; the garbage collector
    closes the wrapper, which closes the writer: that is no end of data."""
    out = io.BytesIO()

    def produce() -> None:
        writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
        if wrap == "TextIOWrapper":
            f: Any = io.TextIOWrapper(writer, encoding="utf-8")
        elif wrap == "BufferedWriter":
            f = io.BufferedWriter(writer)
        else:
            f = io.TextIOWrapper(io.BufferedWriter(writer), encoding="utf-8")
        f.write("x" * 3000 if "Text" in wrap else bytes(3000))
        raise ProducerCrashed

    with pytest.raises(ProducerCrashed):
        produce()
    gc.collect()
    with pytest.raises(cb3.ChunkedTruncatedError):
        cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()


def test_wrappers_with_and_plain_close_still_seal() -> None:
    data = "text, " * 1000
    for how in ("with", "text-with", "plain-close", "text-close", "in-except", "finish-in-except"):
        out = io.BytesIO()
        if how == "with":
            with cb3.EncryptingWriter(out, KEY) as w:
                w.write(data.encode())
        elif how == "text-with":
            with cb3.EncryptingWriter(out, KEY) as w, io.TextIOWrapper(w, encoding="utf-8") as t:
                t.write(data)
        elif how == "plain-close":
            w = cb3.EncryptingWriter(out, KEY)
            w.write(data.encode())
            w.close()
        elif how == "text-close":
            t = io.TextIOWrapper(cb3.EncryptingWriter(out, KEY), encoding="utf-8")
            t.write(data)
            t.close()
        elif how == "in-except":  # made while the exception is handled: no interruption
            try:
                raise KeyError
            except KeyError:
                w = cb3.EncryptingWriter(out, KEY)
                w.write(data.encode())
                w.close()
        else:
            w = cb3.EncryptingWriter(out, KEY)
            try:
                raise KeyError
            except KeyError:
                w.write(data.encode())
                w.finish()
        assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == data.encode(), how


# ---- 5. never the same file for input and output ------------------------------------


@pytest.mark.parametrize("helper", ["encrypt_file", "decrypt_file"])
@pytest.mark.parametrize("threads", [1, 2])
def test_same_file_is_refused(tmp_path: Path, helper: str, threads: int) -> None:
    path = tmp_path / "f"
    original = sealed(os.urandom(5000), 1024) if helper == "decrypt_file" else os.urandom(5000)
    path.write_bytes(original)
    os.link(path, tmp_path / "hard-link")
    function = getattr(cb3, helper)
    for dst in (lambda: open(path, "r+b"), lambda: open(tmp_path / "hard-link", "r+b"), lambda: str(path)):
        with open(path, "rb") as src:
            target = dst()
            try:
                with pytest.raises(ValueError, match="same file"):
                    function(KEY, src, target, max_threads=threads)
            finally:
                if not isinstance(target, str):
                    target.close()
        assert path.read_bytes() == original


# ---- 7. thread counts capped at the usable cores ------------------------------------


class CountingPipe(io.RawIOBase):
    """4 MiB of zeros that is not a regular file, noting in `seen` how many
    threads of cb3's Python side run at each read."""

    def __init__(self, seen: list[int]) -> None:
        self.left, self.seen = 4 << 20, seen

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left, 65536)
        self.left -= n
        self.seen.append(sum(t.name.startswith("cb3-") for t in threading.enumerate()))
        return n


def test_thread_counts_are_capped_at_the_usable_cores() -> None:
    """The Rust core owns the budget (cb3_threads_count: affinity and cgroup
    quota): buffers scale with its answer, never with the number asked for,
    and the file helpers add one writing thread, not one per core."""
    cores = cb3._cb3.thread_count(cb3.AUTO)
    assert 1 <= cores <= (os.cpu_count() or 1)
    assert cb3._cb3.thread_count(64) == cores and cb3._cb3.thread_count(1) == 1
    for bad, kind in ((0, ValueError), (-2, ValueError), (2**70, ValueError), (True, TypeError), (1.0, TypeError)):
        with pytest.raises(kind, match="^max_threads must be"):
            cb3._cb3.thread_count(bad)
        with pytest.raises(kind, match="^max_threads must be"):
            cb3.EncryptingWriter(io.BytesIO(), KEY, max_threads=bad)
    maker, model = cb3._cb3.cpu_maker(), cb3._cb3.cpu_model()
    assert maker in ("Intel", "AMD", "other") and isinstance(model, str) and model
    writer = cb3.EncryptingWriter(io.BytesIO(), KEY, max_threads=64)
    assert len(writer._pending) <= fileio.BATCH_BYTES_PER_THREAD * cores
    writer.abort()
    seen: list[int] = []
    cb3.encrypt_file(KEY, CountingPipe(seen), io.BytesIO(), max_threads=64)
    assert max(seen) == (1 if cores > 1 else 0)


# ---- 8. a hostile header decides no allocation --------------------------------------


def peak_allocation(work: Callable[[], object]) -> int:
    """The peak of Python's traced allocations while `work` runs (a ChunkedError it raises is expected)."""
    import tracemalloc  # CPython's (PyPy has none)

    tracemalloc.start()
    try:
        work()
    except cb3.ChunkedError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("how", ["reader", "decrypt_file-streams", "decrypt_file-files"])
def test_a_short_input_claiming_16_mib_chunks_allocates_little(tmp_path: Path, threads: int, how: str) -> None:
    """59 bytes: a header saying 16 MiB chunks and one 32-byte "chunk"."""
    hostile = chunked.encode_header(chunked.CHUNKED_MAX_CHUNK_SIZE, bytes(15)) + bytes(32)
    assert len(hostile) == 59
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(hostile)
    work: Callable[[], object] = {
        "reader": lambda: cb3.DecryptingReader(io.BytesIO(hostile), KEY, max_threads=threads).read(),
        "decrypt_file-streams": lambda: cb3.decrypt_file(KEY, io.BytesIO(hostile), io.BytesIO(), max_threads=threads),
        "decrypt_file-files": lambda: cb3.decrypt_file(KEY, src, dst, max_threads=threads),
    }[how]
    with pytest.raises(cb3.ChunkedError):
        work()
    if platform.python_implementation() == "CPython":  # tracemalloc traces CPython's allocator
        assert peak_allocation(work) < 1 << 20
    reader = cb3.DecryptingReader(io.BytesIO(hostile), KEY, max_threads=threads)
    with pytest.raises(cb3.ChunkedError):
        reader.read()
    assert len(reader._raw) <= fileio.FIRST_READ and len(reader._plain) <= len(hostile)  # not what it claims


def test_reader_buffers_grow_to_a_batch_for_real_data() -> None:
    pt = os.urandom(3 << 20)
    reader = cb3.DecryptingReader(io.BytesIO(sealed(pt, 1 << 20)), KEY)
    assert reader.read() == pt
    assert len(reader._raw) == reader._raw_want  # grew to one batch (one 1 MiB chunk and its lookahead)


# ---- 13. no public signature chooses a nonce prefix ---------------------------------


@pytest.mark.parametrize("public", [cb3.encrypt_file, cb3.decrypt_file, cb3.EncryptingWriter, cb3.DecryptingReader])
def test_no_test_hook_in_a_public_signature(public: Callable[..., Any]) -> None:
    names = list(inspect.signature(public).parameters)
    assert not [name for name in names if name.startswith("_")], names
    assert "nonce_prefix" not in names


# PyPy 8.0 refuses to resize a bytearray while a memoryview of it is alive, and without
# reference counting a view that is merely dropped lives until the next collection. So a
# view of the caller's buffer that cb3 left unreleased would make the caller's own resize
# fail (BufferError) after the call returned. The resizes below are the check.
@pytest.mark.parametrize("size", [10, 64 + 10, 5 * 64 + 1])
def test_writer_releases_the_callers_buffer(size: int) -> None:
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    data = bytearray(os.urandom(size))
    assert writer.write(data) == size  # fills, seals whole chunks from `data`, keeps the rest
    expected = bytes(data)
    data.clear()
    half = bytearray(b"h" * 7)
    with memoryview(half) as view:  # a view of the caller's, released by the caller
        writer.write(view)
    del half[3:]
    writer.close()
    assert cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read() == expected + b"h" * 7


@pytest.mark.parametrize("method", ["readinto", "readinto1"])
def test_reader_releases_the_callers_buffer(method: str) -> None:
    plain = os.urandom(300)
    out = io.BytesIO()
    with cb3.EncryptingWriter(out, KEY, chunk_size=64) as writer:
        writer.write(plain)
    reader = cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY)
    got = b""
    while True:
        buf = bytearray(100)
        n = getattr(reader, method)(buf)
        del buf[n:]  # BufferError if a view of buf survived the call
        if not n:
            break
        got += buf
    assert got == plain
