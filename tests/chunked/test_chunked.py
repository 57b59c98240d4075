"""cb3's chunked stream format (cb3/chunked/, rustlib/core/src/chunked.rs,
docs/stream-format.md): vectors from the independent implementation in
reference.py, round trips, every kind of tampering, interrupted writers,
I/O faults, pipes and random access.

    python tests/chunked/test_chunked.py   prints the vectors file (tests/data/stream_vectors.json)
                                   as reference.py computes it
"""

from __future__ import annotations

import errno
import gc
import io
import json
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import reference

try:
    import cb3
    from cb3 import chunked
except ImportError:  # running as a script to print the vectors
    cb3 = None  # type: ignore[assignment]

DATA = Path(__file__).parents[1] / "data" / "stream_vectors.json"
KEY = bytes(range(1, 33))
PREFIX = bytes(range(0xA0, 0xAF))
TAG = 32
HEADER = 27

# Inputs of the published vectors (docs/stream-format.md): plaintext is
# (length, seed): bytes (seed + 7 * i) % 256.
VECTOR_INPUTS = [
    {"name": "empty stream", "chunk_size": 64, "aad": "", "length": 0},
    {"name": "one short chunk", "chunk_size": 65536, "aad": "cb3 stream test", "length": 12},
    {"name": "three chunks, short final", "chunk_size": 64, "aad": "v3", "length": 150},
    {"name": "exact multiple: full final chunk", "chunk_size": 64, "aad": "", "length": 128},
]


def plaintext(length: int, seed: int = 0) -> bytes:
    return bytes((seed + 7 * i) % 256 for i in range(length))


def make_vectors() -> list[dict[str, Any]]:
    out = []
    for spec in VECTOR_INPUTS:
        pt = plaintext(spec["length"])
        aad = spec["aad"].encode()
        ct = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=spec["chunk_size"], aad=aad)
        out.append(
            dict(spec, key=KEY.hex(), nonce_prefix=PREFIX.hex(), plaintext=pt.hex(), stream=ct.hex())
        )
    return out


def seal(data: bytes, *, chunk_size: int = 64, aad: bytes | None = None, key: bytes = KEY, prefix: bytes = PREFIX,
         threads: int = 1) -> bytes:
    out = io.BytesIO()
    with cb3.chunked._new_writer(out, key, associated_data=aad, chunk_size=chunk_size, max_threads=threads,
                              nonce_prefix=prefix) as writer:
        writer.write(data)
    return out.getvalue()


def open_all(data: bytes, *, key: bytes = KEY, aad: bytes | None = None, threads: int = 1) -> bytes:
    return cb3.DecryptingReader(io.BytesIO(data), key, associated_data=aad, max_threads=threads).read()


def chunks_of(stream: bytes, chunk_size: int = 64) -> tuple[bytes, list[bytes]]:
    piece = chunk_size + TAG
    body = stream[HEADER:]
    return stream[:HEADER], [body[i : i + piece] for i in range(0, len(body), piece)]


# ---- vectors --------------------------------------------------------------------


def test_vectors_file_is_what_the_reference_computes() -> None:
    assert json.loads(DATA.read_text()) == make_vectors()


def test_format_document_lists_the_vectors() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "stream-format.md").read_text()
    flat = "".join(line.strip() for line in doc.splitlines())
    for vector in json.loads(DATA.read_text()):
        assert vector["stream"] in flat, vector["name"]
        assert f"**{vector['name']}**: chunk size {vector['chunk_size']}" in doc


@pytest.mark.parametrize("vector", json.loads(DATA.read_text()), ids=lambda v: v["name"])
@pytest.mark.parametrize("threads", [1, 2])
def test_vectors(vector: dict[str, Any], threads: int) -> None:
    key, prefix = bytes.fromhex(vector["key"]), bytes.fromhex(vector["nonce_prefix"])
    pt, stream = bytes.fromhex(vector["plaintext"]), bytes.fromhex(vector["stream"])
    aad = vector["aad"].encode()
    assert seal(pt, chunk_size=vector["chunk_size"], aad=aad, key=key, prefix=prefix, threads=threads) == stream
    out = io.BytesIO()
    cb3.chunked._encrypt_file(key, io.BytesIO(pt), out, associated_data=aad, chunk_size=vector["chunk_size"],
                     max_threads=threads, nonce_prefix=prefix)
    assert out.getvalue() == stream
    assert open_all(stream, key=key, aad=aad, threads=threads) == pt
    assert reference.stream_decrypt(key, stream, aad) == pt


# ---- round trips ----------------------------------------------------------------

SIZES = [0, 1, 63, 64, 65, 127, 128, 129, 64 * 7, 64 * 7 + 1, 5000]


@pytest.mark.parametrize("size", SIZES)
def test_sizes_against_reference(size: int) -> None:
    pt = plaintext(size, size)
    ct = seal(pt, aad=b"ad")
    assert ct == reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=64, aad=b"ad")
    chunk_count = max(1, -(-size // 64))
    assert len(ct) == HEADER + size + chunk_count * TAG
    _, chunks = chunks_of(ct)
    assert len(chunks[-1]) - TAG == (size - 64 * (chunk_count - 1))  # full final chunk on exact multiples
    assert open_all(ct, aad=b"ad") == pt


@pytest.mark.parametrize("threads", [1, 2, 3, cb3.AUTO if cb3 else -1])
@pytest.mark.parametrize("chunk_size", [64, 1000, 65536])
def test_thread_counts_give_the_same_bytes(threads: int, chunk_size: int) -> None:
    pt = os.urandom(chunk_size * 37 + 11)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=chunk_size)
    assert seal(pt, chunk_size=chunk_size, threads=threads) == expected
    assert open_all(expected, threads=threads) == pt


def test_write_patterns_do_not_change_the_output() -> None:
    rng = random.Random(5)
    pt = os.urandom(64 * 300 + 17)
    expected = seal(pt)
    for _ in range(20):
        out = io.BytesIO()
        with cb3.chunked._new_writer(out, KEY, chunk_size=64, nonce_prefix=PREFIX) as writer:
            pos = 0
            while pos < len(pt):
                n = rng.choice([0, 1, 63, 64, 65, 200, 3000, 64 * 64, 64 * 64 + 1])
                kind = rng.choice([bytes, bytearray, memoryview])
                assert writer.write(kind(pt[pos : pos + n])) == len(pt[pos : pos + n])
                pos += n
            assert writer.tell() == len(pt)
        assert out.getvalue() == expected


def test_writer_accepts_buffers_of_other_item_sizes() -> None:
    import array

    values = array.array("I", range(100))
    out = io.BytesIO()
    with cb3.chunked._new_writer(out, KEY, nonce_prefix=PREFIX) as writer:
        writer.write(values)
    assert open_all(out.getvalue()) == values.tobytes()


def test_random_prefix_per_stream() -> None:
    a, b = io.BytesIO(), io.BytesIO()
    with cb3.EncryptingWriter(a, KEY) as w:
        w.write(b"same")
    with cb3.EncryptingWriter(b, KEY) as w:
        w.write(b"same")
    assert a.getvalue()[12:27] != b.getvalue()[12:27]
    assert a.getvalue()[:12] == b"CB3STRM\x01\x00\x01\x00\x00"


def test_reader_io_interface() -> None:
    pt = b"line one\nline two\n" + os.urandom(5000) + b"\nend"
    ct = seal(pt)
    r = cb3.DecryptingReader(io.BytesIO(ct), KEY)
    assert r.readable() and not r.writable() and r.seekable()
    assert r.readline() == b"line one\n"
    assert next(iter(r)) == b"line two\n"
    buf = bytearray(100)
    assert r.readinto(buf) == 100 and bytes(buf) == pt[18:118]
    assert r.read1(10) and r.tell() > 118
    r.seek(0)
    assert list(r) == io.BytesIO(pt).readlines()
    r.seek(0)
    assert b"".join(r.chunks()) == pt
    r.close()
    with pytest.raises(ValueError):
        r.read()
    with cb3.DecryptingReader(io.BytesIO(ct), KEY) as r2:
        assert io.TextIOWrapper(r2, encoding="latin-1").readline() == "line one\n"


def test_bad_arguments() -> None:
    out = io.BytesIO()
    for size in (63, 2**24 + 1, 0):
        with pytest.raises(ValueError, match="chunk_size"):
            cb3.EncryptingWriter(out, KEY, chunk_size=size)
    with pytest.raises(TypeError):
        cb3.EncryptingWriter(out, KEY, chunk_size=64.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key must be 32 bytes"):
        cb3.EncryptingWriter(out, KEY[:31])
    with pytest.raises(ValueError, match="max_threads"):
        cb3.EncryptingWriter(out, KEY, max_threads=0)
    with pytest.raises(TypeError, match="str"):
        cb3.EncryptingWriter(out, KEY, associated_data="text")
    with pytest.raises(ValueError, match="key must be 32 bytes"):
        cb3.DecryptingReader(io.BytesIO(seal(b"x")), KEY[:5])
    w = cb3.EncryptingWriter(io.BytesIO(), KEY)
    assert w.writable() and not w.readable() and not w.seekable()
    w.close()
    with pytest.raises(ValueError):
        w.write(b"x")
    w.close()  # twice is fine


def test_bad_method_arguments(tmp_path: Path) -> None:
    writer = cb3.EncryptingWriter(io.BytesIO(), KEY)
    with pytest.raises(TypeError):
        writer.write("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        writer.write(5)  # type: ignore[arg-type]
    writer.abort()
    for call in (lambda: writer.write(b"x"), writer.flush, writer.writable, writer.tell):
        with pytest.raises(ValueError, match="closed file"):
            call()
    writer.abort()  # twice is fine
    reader = cb3.DecryptingReader(io.BytesIO(seal(b"abc")), KEY)
    with pytest.raises(TypeError):
        reader.readinto(b"read-only")
    with pytest.raises(TypeError):
        reader.readinto1("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid whence"):
        reader.seek(0, 3)
    with pytest.raises(ValueError, match="negative seek position"):
        reader.seek(-5, io.SEEK_CUR)
    with pytest.raises(TypeError):
        reader.seek("0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        reader.read("3")  # type: ignore[arg-type]
    reader.close()
    for call in (reader.read, reader.read1, reader.readable, reader.seekable, lambda: reader.seek(0),
                 lambda: list(reader.chunks())):
        with pytest.raises(ValueError, match="closed file"):
            call()
    with pytest.raises(ValueError, match="key must be 32 bytes"):
        cb3.encrypt_file(KEY[:3], io.BytesIO(b"x"), tmp_path / "out")
    with pytest.raises(ValueError, match="chunk_size"):
        cb3.encrypt_file(KEY, io.BytesIO(b"x"), tmp_path / "out", chunk_size=1)
    with pytest.raises(FileNotFoundError):
        cb3.decrypt_file(KEY, tmp_path / "missing", tmp_path / "out")
    with pytest.raises(cb3.ChunkedHeaderError):
        cb3.decrypt_file(KEY, io.BytesIO(b"short"), tmp_path / "out")
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file
    with pytest.raises(ValueError, match="max_threads"):
        cb3.decrypt_file(KEY, io.BytesIO(seal(b"")), io.BytesIO(), max_threads=-2)


# ---- tampering --------------------------------------------------------------------
# A 6-chunk stream (chunk size 64, final chunk short) and a 4-chunk stream
# whose final chunk is full; every change must fail as documented, and the
# reader must return exactly the plaintext of the chunks before the first
# bad one (none of the bad chunk).

PT_SHORT_END = plaintext(64 * 5 + 10, 1)
PT_FULL_END = plaintext(64 * 4, 2)


def decrypt_outcome(stream: bytes, *, key: bytes = KEY, aad: bytes | None = None) -> tuple[bytes, BaseException | None]:
    """What a reader returns before it raises, and what it raises."""
    got = bytearray()
    try:
        reader = cb3.DecryptingReader(io.BytesIO(stream), key, associated_data=aad)
        while True:
            part = reader.read(7)
            if not part:
                return bytes(got), None
            got += part
    except cb3.ChunkedError as error:
        return bytes(got), error


def expect(stream: bytes, error: type[BaseException], good_chunks: int, message: str = "", *,
           pt: bytes = PT_SHORT_END, key: bytes = KEY, aad: bytes | None = None) -> None:
    got, raised = decrypt_outcome(stream, key=key, aad=aad)
    assert type(raised) is error, (raised, error)
    assert message in str(raised)
    assert got == pt[: 64 * good_chunks]
    with pytest.raises(reference.ReferenceDecryptionError):
        reference.stream_decrypt(key, stream, aad)
    out = io.BytesIO()
    with pytest.raises(error):
        cb3.decrypt_file(key, io.BytesIO(stream), out, associated_data=aad)
    assert out.getvalue() == pt[: 64 * good_chunks]  # a file object gets the verified chunks only


def test_untampered_streams_decrypt() -> None:
    assert decrypt_outcome(seal(PT_SHORT_END)) == (PT_SHORT_END, None)
    assert decrypt_outcome(seal(PT_FULL_END)) == (PT_FULL_END, None)


@pytest.mark.parametrize("chunk", range(6))
def test_modified_chunk(chunk: int) -> None:
    header, chunks = chunks_of(seal(PT_SHORT_END))
    for position in (0, len(chunks[chunk]) // 2, len(chunks[chunk]) - 1):  # ciphertext and tag
        bad = bytearray(chunks[chunk])
        bad[position] ^= 0x20
        modified = chunks[:chunk] + [bytes(bad)] + chunks[chunk + 1 :]
        expect(header + b"".join(modified), cb3.ChunkedError, chunk, f"chunk {chunk} failed to authenticate")


@pytest.mark.parametrize("chunk", range(5))
def test_dropped_chunk(chunk: int) -> None:
    header, chunks = chunks_of(seal(PT_SHORT_END))
    expect(header + b"".join(chunks[:chunk] + chunks[chunk + 1 :]), cb3.ChunkedError, chunk)


def test_dropped_final_chunk_is_truncation() -> None:
    header, chunks = chunks_of(seal(PT_SHORT_END))
    expect(header + b"".join(chunks[:5]), cb3.ChunkedTruncatedError, 4, "ends after chunk 4")


@pytest.mark.parametrize("keep", range(0, 4))
def test_truncated_at_every_chunk_boundary(keep: int) -> None:
    header, chunks = chunks_of(seal(PT_FULL_END))
    stream = header + b"".join(chunks[:keep])
    if keep == 0:
        expect(stream, cb3.ChunkedTruncatedError, 0, "no chunk after the header", pt=PT_FULL_END)
    else:
        expect(stream, cb3.ChunkedTruncatedError, keep - 1, f"ends after chunk {keep - 1}", pt=PT_FULL_END)


@pytest.mark.parametrize("cut", [1, 31, 32, 33, 95])
def test_truncated_inside_a_chunk(cut: int) -> None:
    stream = seal(PT_FULL_END)
    expect(stream[:-cut], cb3.ChunkedError, 3, "chunk 3 failed", pt=PT_FULL_END)


def test_reordered_and_duplicated_chunks() -> None:
    header, chunks = chunks_of(seal(PT_SHORT_END))
    swapped = chunks[:]
    swapped[1], swapped[2] = swapped[2], swapped[1]
    expect(header + b"".join(swapped), cb3.ChunkedError, 1, "chunk 1 failed")
    expect(header + b"".join(chunks[:3] + chunks[2:]), cb3.ChunkedError, 3, "chunk 3 failed")  # duplicate
    expect(header + b"".join(chunks[:5] + chunks[4:]), cb3.ChunkedError, 5, "chunk 5 failed")  # replayed last full


def test_appended_data() -> None:
    full = seal(PT_FULL_END)
    # After a full final chunk: the final chunk now looks non-final.
    for extra in (b"\x00", os.urandom(96), full[HEADER:HEADER + 96]):
        expect(full + extra, cb3.ChunkedError, 3, "data after the final chunk (chunk 3)", pt=PT_FULL_END)
    # After a short final chunk, the bytes merge into it.
    expect(seal(PT_SHORT_END) + b"more", cb3.ChunkedError, 5, "chunk 5 failed")
    # An empty final chunk after a full one is never valid, even genuinely sealed.
    header, chunks = chunks_of(full)
    chunked_obj = cb3._cb3.Chunked(KEY, header, None, 1)
    empty_final = bytearray(TAG)
    with pytest.raises(ValueError):
        chunked_obj.seal_into(4, True, b"", empty_final)


def test_splicing_between_streams() -> None:
    a = seal(PT_SHORT_END)
    b = seal(PT_SHORT_END, prefix=bytes(15))  # same key and data, another prefix
    header_a, chunks_a = chunks_of(a)
    header_b, chunks_b = chunks_of(b)
    expect(header_a + b"".join(chunks_a[:2] + chunks_b[2:]), cb3.ChunkedError, 2, "chunk 2 failed")
    expect(header_b + b"".join(chunks_a), cb3.ChunkedError, 0, "chunk 0 failed")
    # Same prefix, different associated data: the chunks do not carry over either.
    c = seal(PT_SHORT_END, aad=b"other")
    expect(header_a + b"".join(chunks_a[:3] + chunks_of(c)[1][3:]), cb3.ChunkedError, 3)


def test_wrong_key_and_associated_data() -> None:
    stream = seal(PT_SHORT_END, aad=b"right")
    expect(stream, cb3.ChunkedError, 0, "chunk 0 failed", key=bytes(32), aad=b"right")
    expect(stream, cb3.ChunkedError, 0, "chunk 0 failed", aad=b"wrong")
    expect(stream, cb3.ChunkedError, 0, "chunk 0 failed")


@pytest.mark.parametrize("offset", range(HEADER))
def test_modified_header_byte(offset: int) -> None:
    stream = bytearray(seal(PT_SHORT_END))
    stream[offset] ^= 0x01
    got, raised = decrypt_outcome(bytes(stream))
    assert got == b"" and isinstance(raised, cb3.ChunkedError)
    if offset < 8 or offset == 8:  # magic, version; or a chunk size above 16 MiB
        assert type(raised) is cb3.ChunkedHeaderError
    else:
        assert type(raised) is cb3.ChunkedError and "chunk 0 failed" in str(raised)
    with pytest.raises(reference.ReferenceDecryptionError):
        reference.stream_decrypt(KEY, bytes(stream))


def test_empty_stream_edge_cases() -> None:
    empty = seal(b"")
    assert len(empty) == HEADER + TAG and open_all(empty) == b""
    expect(empty[:HEADER], cb3.ChunkedTruncatedError, 0, "no chunk", pt=b"")
    for short in (b"", empty[:1], empty[:26]):
        with pytest.raises(cb3.ChunkedHeaderError, match="shorter than the 27-byte header"):
            cb3.DecryptingReader(io.BytesIO(short), KEY)
    with pytest.raises(cb3.ChunkedHeaderError, match="does not start with"):
        cb3.DecryptingReader(io.BytesIO(b"age-encryption.org/v1\n" + bytes(40)), KEY)
    with pytest.raises(cb3.ChunkedHeaderError, match="unsupported cb3 stream version 2"):
        cb3.DecryptingReader(io.BytesIO(b"CB3STRM\x02" + empty[8:]), KEY)
    for size in (0, 63, 2**24 + 1, 2**32 - 1):
        with pytest.raises(cb3.ChunkedHeaderError, match=f"chunk size {size} is outside"):
            cb3.DecryptingReader(io.BytesIO(empty[:8] + size.to_bytes(4, "big") + empty[12:]), KEY)


def test_exceptions_hierarchy() -> None:
    assert issubclass(cb3.ChunkedTruncatedError, cb3.ChunkedError)
    assert issubclass(cb3.ChunkedHeaderError, cb3.ChunkedError)
    assert issubclass(cb3.ChunkedError, cb3.DecryptionError)


def test_header_fuzz_never_raises_anything_else() -> None:
    rng = random.Random(12)
    good = seal(plaintext(300), chunk_size=64)
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            kind = rng.randrange(4)
            if kind == 0 and data:
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif kind == 1 and len(data) >= 12:
                data[8:12] = rng.choice([0, 63, 64, 65, 100, 2**24, 2**24 + 1, rng.randrange(2**32)]).to_bytes(4, "big")
            elif kind == 2 and data:
                del data[rng.randrange(len(data)) :]
            else:
                data[rng.randrange(len(data) + 1) : 0] = os.urandom(rng.randint(1, 40))
        data_bytes = bytes(data)
        try:
            result: bytes | None = open_all(data_bytes)
        except cb3.ChunkedError:
            result = None
        try:
            expected: bytes | None = reference.stream_decrypt(KEY, data_bytes)
        except reference.ReferenceDecryptionError:
            expected = None
        assert result == expected


# ---- writers that do not finish ---------------------------------------------------


def test_interrupted_writer_with_block() -> None:
    out = io.BytesIO()
    with pytest.raises(KeyboardInterrupt):
        with cb3.EncryptingWriter(out, KEY, chunk_size=64) as writer:
            writer.write(PT_SHORT_END)
            raise KeyboardInterrupt
    got, raised = decrypt_outcome(out.getvalue())
    assert type(raised) is cb3.ChunkedTruncatedError
    assert got == PT_SHORT_END[:64 * 4]  # the chunks before the held-back final one


def test_interrupted_writer_never_closed() -> None:
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    writer.write(PT_FULL_END)
    del writer
    gc.collect()
    assert type(decrypt_outcome(out.getvalue())[1]) is cb3.ChunkedTruncatedError
    out = io.BytesIO()
    writer = cb3.EncryptingWriter(out, KEY, chunk_size=64)
    writer.write(PT_FULL_END)
    writer.abort()
    assert type(decrypt_outcome(out.getvalue())[1]) is cb3.ChunkedTruncatedError


class FailingFile(io.RawIOBase):
    """A writable file that raises OSError(ENOSPC) once `room` bytes are used."""

    def __init__(self, room: int) -> None:
        self.data = bytearray()
        self.room = room

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        if len(self.data) + len(b) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.data += b
        return len(b)


def test_abort_does_not_touch_a_failing_file() -> None:
    class FlushFails(io.BytesIO):
        def flush(self) -> None:
            raise OSError(errno.ENOSPC, "flush failed")

    with pytest.raises(KeyError):  # the with block's own exception, not the flush's
        with cb3.EncryptingWriter(FlushFails(), KEY) as writer:
            writer.write(b"data")
            raise KeyError("interrupted")


def test_disk_full_during_write() -> None:
    sink = FailingFile(room=300)
    writer = cb3.EncryptingWriter(sink, KEY, chunk_size=64)
    with pytest.raises(OSError) as info:
        writer.write(os.urandom(64 * 20))
    assert info.value.errno == errno.ENOSPC
    with pytest.raises(OSError, match="earlier write"):
        writer.write(b"more")
    writer.close()  # does not seal a broken stream
    assert type(decrypt_outcome(bytes(sink.data))[1]) in (cb3.ChunkedTruncatedError, cb3.ChunkedError)
    with pytest.raises(OSError):
        cb3.encrypt_file(KEY, io.BytesIO(os.urandom(5000)), FailingFile(room=1000), chunk_size=64)


def test_short_writes_are_completed() -> None:
    class Trickle(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            n = min(len(b), 7)
            self.data += bytes(b[:n])
            return n

    sink = Trickle()
    cb3.chunked._encrypt_file(KEY, io.BytesIO(PT_SHORT_END), sink, chunk_size=64, nonce_prefix=PREFIX)
    assert bytes(sink.data) == seal(PT_SHORT_END)


# ---- non-seekable sources -----------------------------------------------------------


class Dribble(io.RawIOBase):
    """A non-seekable source that returns 1..13 bytes per read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.rng = data, 0, random.Random(len(data))

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.rng.randint(1, 13), len(self.data) - self.pos)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def test_short_reads() -> None:
    stream = seal(PT_SHORT_END)
    reader = cb3.DecryptingReader(Dribble(stream), KEY)
    assert not reader.seekable()
    assert reader.read() == PT_SHORT_END
    with pytest.raises(io.UnsupportedOperation):
        reader.seek(0)
    out = io.BytesIO()
    cb3.chunked._encrypt_file(KEY, Dribble(PT_SHORT_END), out, chunk_size=64, nonce_prefix=PREFIX)
    assert out.getvalue() == stream
    _, chunks = chunks_of(stream)
    got, raised = bytearray(), None
    try:
        for part in cb3.DecryptingReader(Dribble(stream[: HEADER + 64 * 2 + 64]), KEY).chunks():
            got += part
    except cb3.ChunkedError as error:
        raised = error
    assert type(raised) is cb3.ChunkedTruncatedError and got == PT_SHORT_END[:64]


def test_pipes() -> None:
    pt = os.urandom(300_000)
    read_fd, write_fd = os.pipe()

    def feed(data: bytes) -> None:
        with open(write_fd, "wb") as w:
            w.write(data)

    stream = seal(pt, chunk_size=4096)
    thread = threading.Thread(target=feed, args=(stream,))
    thread.start()
    with open(read_fd, "rb", buffering=0) as r:
        assert cb3.DecryptingReader(r, KEY, max_threads=2).read() == pt
    thread.join()
    read_fd, write_fd = os.pipe()
    thread = threading.Thread(target=feed, args=(pt,))
    thread.start()
    out = io.BytesIO()
    with open(read_fd, "rb") as r:
        cb3.chunked._encrypt_file(KEY, r, out, chunk_size=4096, nonce_prefix=PREFIX)
    thread.join()
    assert out.getvalue() == stream


# ---- random access -------------------------------------------------------------------


class CountingFile(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def readinto(self, b: Any) -> int:
        n = super().readinto(b)
        self.bytes_read += n
        return n


@pytest.mark.parametrize("chunk_size", [64, 1000])
def test_seek_matches_reference(chunk_size: int) -> None:
    rng = random.Random(chunk_size)
    pt = os.urandom(chunk_size * 50 + 7)
    stream = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=chunk_size)
    reader = cb3.DecryptingReader(io.BytesIO(stream), KEY)
    assert reader.seek(0, io.SEEK_END) == len(pt)
    for _ in range(300):
        target = rng.randrange(len(pt) + 100)
        length = rng.choice([0, 1, 5, chunk_size, 3 * chunk_size + 1, 10**6])
        how = rng.randrange(3)
        if how == 0:
            assert reader.seek(target) == target
        elif how == 1:
            assert reader.seek(target - reader.tell(), io.SEEK_CUR) == target
        else:
            assert reader.seek(target - len(pt), io.SEEK_END) == target
        assert reader.tell() == target
        assert reader.read(length) == pt[target : target + length]
        assert reader.tell() == min(target + length, max(target, len(pt)))
    with pytest.raises(ValueError):
        reader.seek(-1)


def test_seek_reads_only_the_chunks_needed() -> None:
    pt = os.urandom(65536 * 64)
    source = CountingFile(reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=65536))
    reader = cb3.DecryptingReader(source, KEY)
    reader.seek(65536 * 40 + 5)
    assert reader.read(10) == pt[65536 * 40 + 5 :][:10]
    assert source.bytes_read < 65536 * 8  # one batch, not the 4 MiB before it
    assert reader.seek(0, io.SEEK_END) == len(pt)


def test_seek_in_an_embedded_stream_and_tampered_end() -> None:
    stream = seal(PT_SHORT_END)
    source = io.BytesIO(b"prefix data" + stream)
    source.seek(11)
    reader = cb3.DecryptingReader(source, KEY)
    reader.seek(100)
    assert reader.read() == PT_SHORT_END[100:]
    truncated = cb3.DecryptingReader(io.BytesIO(stream[: HEADER + 96 * 3]), KEY)
    with pytest.raises(cb3.ChunkedTruncatedError):
        truncated.seek(0, io.SEEK_END)
    truncated.seek(10)
    assert truncated.read(5) == PT_SHORT_END[10:15]  # a middle chunk verifies on its own
    truncated.seek(64 * 3 + 1)
    with pytest.raises(cb3.ChunkedTruncatedError):
        truncated.read()


# ---- file helpers with paths ----------------------------------------------------------


def test_paths_and_atomic_output(tmp_path: Path) -> None:
    src, enc, dec = tmp_path / "a", tmp_path / "a.cb3", tmp_path / "a.out"
    pt = os.urandom(200_000)
    src.write_bytes(pt)
    assert cb3.encrypt_file(KEY, src, enc, associated_data=b"x") == len(pt)
    assert cb3.decrypt_file(KEY, str(enc), dec, associated_data=b"x") == len(pt)
    assert dec.read_bytes() == pt
    dec.unlink()
    bad = bytearray(enc.read_bytes())
    bad[-1] ^= 1
    enc.write_bytes(bad)
    with pytest.raises(cb3.ChunkedError):
        cb3.decrypt_file(KEY, enc, dec, associated_data=b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.cb3"]  # no output, no temp file
    dec.write_bytes(b"old")
    with pytest.raises(cb3.ChunkedError):
        cb3.decrypt_file(KEY, enc, dec, associated_data=b"x")
    assert dec.read_bytes() == b"old"  # an existing file is only replaced on success


def test_progress_callback() -> None:
    seen: list[int] = []
    cb3.encrypt_file(KEY, io.BytesIO(bytes(10**6)), io.BytesIO(), progress=seen.append)
    assert seen[-1] == 10**6 and seen == sorted(seen)


if __name__ == "__main__":
    json.dump(make_vectors(), sys.stdout, indent=1)
    print()


@pytest.mark.parametrize("threads", [2, -1])
def test_file_helpers_on_several_threads(threads: int) -> None:
    """max_threads > 1: batches on the pool, writes on a background thread."""
    pt = os.urandom((3 << 20) + 5)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=65536)
    out = io.BytesIO()
    assert cb3.chunked._encrypt_file(KEY, io.BytesIO(pt), out, max_threads=threads, nonce_prefix=PREFIX) == len(pt)
    assert out.getvalue() == expected
    dec = io.BytesIO()
    assert cb3.decrypt_file(KEY, io.BytesIO(expected), dec, max_threads=threads) == len(pt)
    assert dec.getvalue() == pt
    bad = bytearray(expected)
    bad[HEADER + 20 * (65536 + TAG) + 5] ^= 1
    dec = io.BytesIO()
    with pytest.raises(cb3.ChunkedError, match="chunk 20 failed"):
        cb3.decrypt_file(KEY, io.BytesIO(bytes(bad)), dec, max_threads=threads)
    assert dec.getvalue() == pt[: 20 * 65536]
    with pytest.raises(cb3.ChunkedTruncatedError):
        cb3.decrypt_file(KEY, io.BytesIO(expected[: HEADER + 30 * (65536 + TAG)]), io.BytesIO(), max_threads=threads)
    for run in (
        lambda: cb3.encrypt_file(KEY, io.BytesIO(pt), FailingFile(room=1 << 20), max_threads=threads),
        lambda: cb3.decrypt_file(KEY, io.BytesIO(expected), FailingFile(room=1 << 20), max_threads=threads),
    ):
        with pytest.raises(OSError) as info:
            run()
        assert info.value.errno == errno.ENOSPC


@pytest.mark.threads  # deselected under HPy debug mode only (see the marker in pyproject.toml)
@pytest.mark.skipif(sys.implementation.name == "pypy", reason="PyPy keeps the GIL for bytearray outputs (README, PyPy)")
def test_chunk_batches_release_the_gil() -> None:
    from helpers import assert_gil_released

    header = chunked.encode_header(65536, PREFIX)
    engine = cb3._cb3.Chunked(KEY, header, None, 1)
    data = bytes(64 << 20)
    sealed = bytearray(len(data) + 1024 * TAG)
    engine.seal_into(0, True, data, sealed)
    plain = bytearray(len(data))
    assert_gil_released(lambda: engine.seal_into(0, True, data, sealed), "Chunked.seal_into")
    assert_gil_released(lambda: engine.open_into(0, True, sealed, plain), "Chunked.open_into")


class JitterySink(io.BytesIO):
    """A sink whose writes take varying time, so that encrypt_file's workers
    finish their batches out of order."""

    def __init__(self) -> None:
        super().__init__()
        self._rng = random.Random(7)

    def write(self, data: Any) -> int:
        time.sleep(self._rng.choice([0, 0, 0.002]))
        return super().write(data)


class FailingSource(io.RawIOBase):
    """A readable file that raises OSError(EIO) after `good` bytes."""

    def __init__(self, data: bytes, good: int) -> None:
        self._data, self._good, self._at = data, good, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._at >= self._good:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        n = min(len(buffer), self._good - self._at)
        buffer[:n] = self._data[self._at : self._at + n]
        self._at += n
        return n


@pytest.mark.parametrize("threads", [2, 3])
def test_encrypt_file_workers_keep_the_order_and_report_errors(threads: int) -> None:
    """encrypt_file on several threads: batches split over the pool and
    written in order by the writing thread; a read error stops it without
    sealing the stream."""
    pt = os.urandom((2 << 20) + 77)
    expected = reference.stream_encrypt(KEY, pt, nonce_prefix=PREFIX, chunk_size=1024)
    sink, seen = JitterySink(), []
    done = cb3.chunked._encrypt_file(KEY, io.BytesIO(pt), sink, chunk_size=1024, max_threads=threads,
                            progress=seen.append, nonce_prefix=PREFIX)
    assert done == len(pt) and sink.getvalue() == expected
    assert seen == sorted(seen) and seen[-1] == len(pt)
    out = io.BytesIO()
    with pytest.raises(OSError) as info:
        cb3.chunked._encrypt_file(KEY, FailingSource(pt, 1 << 20), out, max_threads=threads, nonce_prefix=PREFIX)
    assert info.value.errno == errno.EIO
    with pytest.raises(cb3.ChunkedTruncatedError):  # what was written is not a complete stream
        cb3.DecryptingReader(io.BytesIO(out.getvalue()), KEY).read()


def test_chunked_names_are_exported_and_the_header_owns_the_constants():
    """The format's word is "chunked": its exceptions are exported from cb3,
    cb3.chunked and cb3.errors, its constants are the Rust core's (cb3.h),
    and cb3.Stream is the counter-nonce AEAD, not a name of this format."""
    from cb3 import _cb3, errors

    for name in ("ChunkedError", "ChunkedTruncatedError", "ChunkedHeaderError"):
        assert getattr(cb3, name) is getattr(cb3.chunked, name) is getattr(errors, name)
        assert name in cb3.__all__ and name in errors.__all__ and name in cb3.chunked.__all__
    header = {"HEADER_SIZE": "HEADER_SIZE", "CHUNK_SIZE": "DEFAULT_CHUNK_SIZE",
              "MIN_CHUNK_SIZE": "MIN_CHUNK_SIZE", "MAX_CHUNK_SIZE": "MAX_CHUNK_SIZE"}
    for size, in_header in header.items():
        name = f"CHUNKED_{size}"
        assert getattr(cb3, name) == getattr(cb3.chunked, name) == getattr(_cb3, f"CHUNKED_{in_header}")
        assert name in cb3.__all__ and name in cb3.chunked.__all__
    assert (cb3.CHUNKED_HEADER_SIZE, cb3.CHUNKED_CHUNK_SIZE) == (27, 64 * 1024)
    assert (cb3.CHUNKED_MIN_CHUNK_SIZE, cb3.CHUNKED_MAX_CHUNK_SIZE) == (64, 1 << 24)
    for gone in ("StreamError", "StreamTruncatedError", "StreamHeaderError", "STREAM_HEADER_SIZE",
                 "STREAM_CHUNK_SIZE", "STREAM_MIN_CHUNK_SIZE", "STREAM_MAX_CHUNK_SIZE"):
        assert not hasattr(cb3, gone) and not hasattr(cb3.chunked, gone) and not hasattr(errors, gone)
    assert not issubclass(cb3.Stream, BaseException)
    assert cb3.ChunkedError.__name__ == "ChunkedError" and issubclass(cb3.ChunkedError, cb3.DecryptionError)
