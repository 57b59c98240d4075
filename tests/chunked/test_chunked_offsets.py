"""encrypt_file / decrypt_file on several threads between files at any
offset: each batch split over the Rust core's threads, and written on one
background thread (cb3/chunked/fileio.py, BatchOutput) while the next is read
and sealed or opened. Output byte-identical to one thread and to the
independent reference (tests/reference.py); errors identical to one thread;
a source that changes size gives a complete stream of what was read, or an
error and no output; pipes, in-memory files and O_APPEND outputs run the
same way."""

from __future__ import annotations

import errno
import io
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import reference

import cb3
from cb3 import chunked
from cb3.chunked import fileio

KEY = bytes(range(1, 33))
PREFIX = bytes(range(0xA0, 0xAF))
TAG = 32
HEADER = 27
BATCH = fileio.BATCH_BYTES_PER_THREAD  # plaintext bytes per batch and thread

pytestmark = [
    # Every test here has several threads in cb3 at once: deselected under HPy
    # debug mode only (see the marker in pyproject.toml).
    pytest.mark.threads,
]


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, for every file helper's output made, whether it writes on a
    background thread (several threads) or on the calling one."""
    runs: list[bool] = []
    real = fileio.BatchOutput.__init__

    def spy(self: Any, sink: Any, background: bool, *args: Any) -> None:
        runs.append(background)
        real(self, sink, background, *args)

    monkeypatch.setattr(fileio.BatchOutput, "__init__", spy)
    return runs


def files(tmp_path: Path, data: bytes) -> tuple[Path, Path, Path]:
    src = tmp_path / "plain"
    src.write_bytes(data)
    return src, tmp_path / "enc", tmp_path / "dec"


# Sizes around the batch and chunk edges: empty, one byte, exact batches,
# exact chunks, a short final chunk several batches in.
SIZES = [0, 1, 1023, BATCH, 3 * BATCH, 3 * BATCH + 1, 5 * 1024 * 100, 4 * BATCH + 777]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("threads", [2, 3, cb3.AUTO])
def test_output_is_the_reference_and_the_one_thread_output(tmp_path: Path, used: list[bool], size: int,
                                                           threads: int) -> None:
    pt = os.urandom(size)
    src, enc, dec = files(tmp_path, pt)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=1024, aad=b"ad")
    assert cb3.chunked._encrypt_file(KEY, src, enc, associated_data=b"ad", chunk_size=1024, max_threads=threads,
                            nonce_prefix=PREFIX) == size
    assert enc.read_bytes() == expected
    one = tmp_path / "one"
    cb3.chunked._encrypt_file(KEY, src, one, associated_data=b"ad", chunk_size=1024, max_threads=1, nonce_prefix=PREFIX)
    assert one.read_bytes() == expected
    assert cb3.decrypt_file(KEY, enc, dec, associated_data=b"ad", max_threads=threads) == size
    assert dec.read_bytes() == pt
    # Several threads write on a background thread (both helpers), one thread on the calling one.
    assert used == [cb3._cb3.thread_count(threads) > 1, False, cb3._cb3.thread_count(threads) > 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dec", "enc", "one", "plain"]


def test_file_objects_at_an_offset_keep_their_positions(tmp_path: Path, used: list[bool]) -> None:
    """Open files are read and written from their current positions, and are
    left where sequential I/O would leave them (buffered data flushed first)."""
    pt = os.urandom(2 * BATCH + 99)
    src, enc, dec = files(tmp_path, b"junk" * 10 + pt)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX)
    with open(src, "rb") as source, open(enc, "wb") as sink:
        source.read(40)
        sink.write(b"lead")  # still in the BufferedWriter's buffer
        assert cb3.chunked._encrypt_file(KEY, source, sink, max_threads=2, nonce_prefix=PREFIX) == len(pt)
        assert source.tell() == 40 + len(pt) and source.read() == b""
        assert sink.tell() == 4 + len(expected)
        sink.write(b"tail")
    assert enc.read_bytes() == b"lead" + expected + b"tail"
    enc.write_bytes(b"lead" + expected)
    with open(enc, "rb") as source, open(dec, "wb") as sink:
        source.read(4)
        sink.write(b"x")
        assert cb3.decrypt_file(KEY, source, sink, max_threads=2) == len(pt)
        assert source.tell() == 4 + len(expected) and sink.tell() == 1 + len(pt)
    assert len(used) == 2
    assert dec.read_bytes() == b"x" + pt


def decrypt_result(stream: bytes, tmp_path: Path, threads: int) -> tuple[bytes, str, str]:
    """(what a real-file destination holds, exception type, message) after decrypt_file."""
    src = tmp_path / f"stream{threads}"
    src.write_bytes(stream)
    out = tmp_path / f"out{threads}"
    with open(out, "wb") as sink:
        try:
            cb3.decrypt_file(KEY, src, sink, max_threads=threads)
            kind, message = "", ""
        except cb3.ChunkedError as error:
            kind, message = type(error).__name__, str(error)
    return out.read_bytes(), kind, message


PT = (bytes(range(256)) * (4 * BATCH // 256 + 300))[:-100]  # 4 batches and a bit; a short final chunk
STREAM = reference.stream_encrypt(KEY, PT, nonce_prefix=PREFIX, chunk_size=1024)
WHOLE = reference.stream_encrypt(KEY, PT[: 1000 * 1024], nonce_prefix=PREFIX, chunk_size=1024)  # a full final chunk
PIECE = 1024 + TAG


def flip(stream: bytes, *chunks: int) -> bytes:
    bad = bytearray(stream)
    for chunk in chunks:
        bad[HEADER + chunk * PIECE + 3] ^= 1
    return bytes(bad)


TAMPERED = {
    "intact": STREAM,
    "chunk in a later batch": flip(STREAM, 3 * 256 + 17),
    "two failing batches: the first in stream order": flip(STREAM, 4 * 256 + 5, 2 * 256 + 200),
    "first chunk": flip(STREAM, 0),
    "final chunk": flip(STREAM, (len(PT) - 1) // 1024),
    "cut at a chunk boundary": STREAM[: HEADER + 700 * PIECE],
    "cut at a batch boundary": STREAM[: HEADER + 3 * 256 * PIECE],
    "cut inside a chunk": STREAM[:-10],
    "a chunk appended": WHOLE + WHOLE[HEADER : HEADER + PIECE],
    "bytes appended": STREAM + b"tail",
    "empty body": STREAM[:HEADER],
    "shorter than a tag": STREAM[: HEADER + 20],
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_errors_and_output_are_those_of_one_thread(tmp_path: Path, used: list[bool], case: str) -> None:
    """The same exception (naming the same chunk) as on one thread, and an
    open destination file holds exactly the plaintext that verified before it."""
    one = decrypt_result(TAMPERED[case], tmp_path, 1)
    two = decrypt_result(TAMPERED[case], tmp_path, 2)
    assert two == one
    if case == "intact":
        assert one == (PT, "", "")
    else:
        assert one[1] and PT.startswith(one[0])
        assert one[0] or case in ("first chunk", "empty body", "shorter than a tag")
    if case == "a chunk appended":
        assert one[1] == "ChunkedError" and "data after the final chunk (chunk 999)" in one[2]
    if case.startswith("cut at"):
        assert one[1] == "ChunkedTruncatedError"
    if case.startswith("two failing"):
        assert f"chunk {2 * 256 + 200} failed" in one[2]
    assert used == [False, cb3._cb3.thread_count(2) > 1]  # one thread, then two


def test_failure_in_a_later_batch_leaves_no_output(tmp_path: Path, used: list[bool]) -> None:
    src = tmp_path / "s"
    src.write_bytes(flip(STREAM, 4 * 256 + 1))
    with pytest.raises(cb3.ChunkedError, match=f"chunk {4 * 256 + 1} failed"):
        cb3.decrypt_file(KEY, src, tmp_path / "d", max_threads=2)
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no output, no temporary file
    assert used


@pytest.mark.parametrize("change", ["grow", "shrink"])
def test_source_changing_size_gives_what_was_read_or_fails_cleanly(tmp_path: Path, used: list[bool], change: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The source is read to its end as it is then: a plaintext file that
    changes size during encrypt_file gives a complete stream of exactly the
    bytes read (the final chunk is placed by the end of the input, never by
    a size taken at the start); a stream that changes size during
    decrypt_file fails and leaves no output."""
    pt = os.urandom(8 * BATCH + 5)
    src, enc, _ = files(tmp_path, pt)
    real, state = fileio.read_full, {"armed": True}

    def meddling_read(source: Any, view: memoryview) -> int:
        got = real(source, view)
        if state["armed"]:  # after the first batch read
            state["armed"] = False
            with open(src, "r+b") as f:
                if change == "grow":
                    f.seek(0, io.SEEK_END)
                    f.write(b"more")
                else:
                    f.truncate(os.path.getsize(src) // 2)
        return got

    monkeypatch.setattr(fileio, "read_full", meddling_read)
    read = pt + b"more" if change == "grow" else pt[: len(pt) // 2]
    assert cb3.encrypt_file(KEY, src, enc, max_threads=2) == len(read)
    assert cb3.decrypt_file(KEY, enc, tmp_path / "d") == len(read)
    assert (tmp_path / "d").read_bytes() == read
    # Decrypting a stream that changes size: an error, and no output.
    (tmp_path / "d").unlink()
    src.write_bytes(reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX))
    state["armed"] = True
    with pytest.raises(cb3.ChunkedError):
        cb3.decrypt_file(KEY, src, tmp_path / "d", max_threads=2)
    assert not (tmp_path / "d").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enc", "plain"]  # no temporary file
    assert used[0] == used[2] == (cb3._cb3.thread_count(2) > 1)


def test_write_error_in_a_later_batch_leaves_no_output(tmp_path: Path, used: list[bool],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = fileio.write_all, []
    lock = threading.Lock()

    def full_disk(sink: Any, view: memoryview) -> None:
        with lock:
            calls.append(len(view))
            if len(calls) == 4:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(sink, view)

    monkeypatch.setattr(fileio, "write_all", full_disk)
    src, enc, _ = files(tmp_path, os.urandom(10 * BATCH))
    with pytest.raises(OSError) as info:
        cb3.encrypt_file(KEY, src, enc, max_threads=2)
    assert info.value.errno == errno.ENOSPC
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]
    assert used and len(calls) < 10  # the writes stopped


def feed_pipe(data: bytes) -> Any:
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with open(write_fd, "wb") as w:
            w.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return open(read_fd, "rb")


@pytest.mark.parametrize(
    "endpoints",
    [
        "pipe source",
        "pipe destination",
        "in-memory files",
        "O_APPEND destination",
    ],
)
def test_pipes_memory_and_append_run_the_same_way(tmp_path: Path, used: list[bool], endpoints: str) -> None:
    pt = os.urandom(3 * BATCH + 11)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX)
    src, enc, _ = files(tmp_path, pt)
    result: Callable[[], bytes]
    if endpoints == "pipe source":
        with feed_pipe(pt) as source:
            cb3.chunked._encrypt_file(KEY, source, enc, max_threads=2, nonce_prefix=PREFIX)
        result = enc.read_bytes
        with feed_pipe(expected) as source:
            cb3.decrypt_file(KEY, source, tmp_path / "d", max_threads=2)
        assert (tmp_path / "d").read_bytes() == pt
    elif endpoints == "pipe destination":
        read_fd, write_fd = os.pipe()
        got: list[bytes] = []
        drain = threading.Thread(target=lambda: got.append(open(read_fd, "rb").read()))
        drain.start()
        with open(write_fd, "wb") as sink:
            cb3.chunked._encrypt_file(KEY, src, sink, max_threads=2, nonce_prefix=PREFIX)
        drain.join()
        result = lambda: got[0]  # noqa: E731
    elif endpoints == "in-memory files":
        out = io.BytesIO()
        cb3.chunked._encrypt_file(KEY, io.BytesIO(pt), out, max_threads=2, nonce_prefix=PREFIX)
        result = out.getvalue
    else:
        enc.write_bytes(b"old")
        with open(enc, "ab") as sink:
            cb3.chunked._encrypt_file(KEY, src, sink, max_threads=2, nonce_prefix=PREFIX)
        result = lambda: enc.read_bytes()[3:]  # noqa: E731
    assert result() == expected
    assert set(used) == {cb3._cb3.thread_count(2) > 1}


def test_extension_refuses_a_bad_header_with_the_same_value_error() -> None:
    """cb3_chunked_new's CB3_RESULT_INVALID_HEADER (cext/errors.c) is the
    ValueError it always was; the Python API raises ChunkedHeaderError first."""
    good = chunked.encode_header(1024, PREFIX)
    cb3._cb3.Chunked(KEY, good, None, 1)
    for bad in (b"X" + good[1:], good[:7] + b"\x02" + good[8:], good[:8] + b"\x00\x00\x00\x3f" + good[12:], good[:26]):
        with pytest.raises(ValueError, match=r"^not a cb3 stream header \(magic, version or chunk size\)$") as info:
            cb3._cb3.Chunked(KEY, bad, None, 1)
        assert type(info.value) is ValueError
        with pytest.raises(cb3.ChunkedHeaderError):
            cb3.DecryptingReader(io.BytesIO(bad), KEY)


@pytest.mark.parametrize("helper", ["encrypt", "decrypt"])
def test_interrupt_on_the_calling_thread_stops_the_writing_thread(tmp_path: Path, used: list[bool], helper: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C on the calling thread (here raised in its third read; the
    writing thread writes slowly, so it has batches queued) ends the call
    only after the writing thread stopped, and leaves no output."""
    pt = os.urandom(12 * BATCH)
    src, enc, dec = files(tmp_path, pt)
    if helper == "decrypt":
        src.write_bytes(reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX))
    real_read, real_write, reads = fileio.read_full, fileio.write_all, []

    def read(source: Any, view: memoryview) -> int:
        reads.append(len(view))
        if len(reads) == 3:
            raise KeyboardInterrupt
        return real_read(source, view)

    def write(sink: Any, view: memoryview) -> None:
        time.sleep(0.01)
        real_write(sink, view)

    monkeypatch.setattr(fileio, "read_full", read)
    monkeypatch.setattr(fileio, "write_all", write)
    run = cb3.encrypt_file if helper == "encrypt" else cb3.decrypt_file
    with pytest.raises(KeyboardInterrupt):
        run(KEY, src, dec, max_threads=3)
    assert not [t for t in threading.enumerate() if t.name == "cb3-writer"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]
    assert used
