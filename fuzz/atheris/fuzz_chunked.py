"""atheris harness for cb3's chunked stream format (cb3.DecryptingReader,
cb3.decrypt_file; noxfile.py's fuzz step runs it as the `chunked` target).

    python fuzz/atheris/fuzz_chunked.py chunked [libFuzzer options] [corpus dirs]

Each input picks a stream (chunk size 64..300, plaintext of 0..3000 bytes,
associated data, 1 or 2 threads) sealed by tests/reference.py (no cb3 code),
then changes it: header fields (magic, version, any 32-bit chunk size, the
nonce prefix), bit flips, truncation, insertion, and dropped, swapped,
duplicated or foreign chunks; then reads it one of several ways: read(),
reads of fuzzer-chosen sizes, a dribbling non-seekable source, decrypt_file
(in memory, or between real files on 2 threads: the pread/pwrite pipeline,
with batches of a fuzzer-chosen number of chunks), or a seek to a
fuzzer-chosen offset.

The oracle: the reader succeeds if and only if the reference decrypts the
same bytes, and then returns the reference's plaintext; when it fails it
raises a cb3.ChunkedError (ChunkedHeaderError exactly when the reference
rejects the header), and everything it returned before that is a prefix of
the original plaintext: no byte of a forged chunk ever comes out. A seek
then read returns exactly the original bytes at that offset, or raises
ChunkedError.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))  # reference.py

import atheris  # noqa: E402

with atheris.instrument_imports(include=["cb3"]):
    import cb3  # noqa: E402
    from cb3.chunked import fileio  # noqa: E402

import fuzz_cb3  # noqa: E402  (its driver; sys.path[0] is this directory)
import reference  # noqa: E402

KEY = bytes(range(1, 33))
HEADER = 27


class Dribble(io.RawIOBase):
    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def readinto(self, b: memoryview) -> int:  # type: ignore[override]
        n = min(len(b), self.step, len(self.data) - self.pos)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


def header_valid(data: bytes) -> bool:
    if len(data) < HEADER or data[:7] != b"CB3STRM" or data[7] != 1:
        return False
    return 64 <= int.from_bytes(data[8:12], "big") <= 2**24


def mutate(fdp: atheris.FuzzedDataProvider, stream: bytes, chunk_size: int, other: bytes) -> bytes:
    data = bytearray(stream)
    piece = chunk_size + 32
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        kind = fdp.ConsumeIntInRange(0, 9)
        if kind == 0 and data:
            at = fdp.ConsumeIntInRange(0, len(data) - 1)
            data[at] ^= 1 << fdp.ConsumeIntInRange(0, 7)
        elif kind == 1:
            del data[fdp.ConsumeIntInRange(0, len(data)) :]
        elif kind == 2:
            at = fdp.ConsumeIntInRange(0, len(data))
            data[at:at] = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 64))
        elif kind == 3 and len(data) >= 12:
            data[8:12] = fdp.ConsumeIntInRange(0, 2**32 - 1).to_bytes(4, "big")
        elif kind == 4 and len(data) >= 8:
            data[fdp.ConsumeIntInRange(0, 7)] = fdp.ConsumeIntInRange(0, 255)
        else:
            body = data[HEADER:]
            chunks = [body[i : i + piece] for i in range(0, len(body), piece)]
            if not chunks:
                continue
            i = fdp.ConsumeIntInRange(0, len(chunks) - 1)
            j = fdp.ConsumeIntInRange(0, len(chunks) - 1)
            if kind == 5:
                del chunks[i]
            elif kind == 6:
                chunks[i], chunks[j] = chunks[j], chunks[i]
            elif kind == 7:
                chunks.insert(i, chunks[j])
            elif kind == 8:
                foreign = [other[HEADER:][k : k + piece] for k in range(0, len(other) - HEADER, piece)]
                if foreign:
                    chunks[i] = foreign[min(i, len(foreign) - 1)]
            else:
                data[12:HEADER] = other[12:HEADER]  # another stream's nonce prefix
                continue
            data[HEADER:] = b"".join(chunks)
    return bytes(data)


_FILES = tempfile.mkdtemp(prefix="cb3-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)


def decrypt_between_files(data: bytes, aad: bytes, batch_bytes: int) -> bytes:
    """decrypt_file from one real file into another on 2 threads (the offset
    pipeline), in batches of `batch_bytes` of plaintext; returns what the
    destination holds (also after an error: the verified prefix)."""
    src, dst = os.path.join(_FILES, "src"), os.path.join(_FILES, "dst")
    with open(src, "wb") as f:
        f.write(data)
    saved, fileio.BATCH_BYTES_PER_THREAD = fileio.BATCH_BYTES_PER_THREAD, batch_bytes
    try:
        with open(dst, "wb") as sink:
            try:
                cb3.decrypt_file(KEY, src, sink, associated_data=aad, max_threads=2)
            finally:
                sink.flush()
                with open(dst, "rb") as written:
                    out = written.read()
    finally:
        fileio.BATCH_BYTES_PER_THREAD = saved
    return out


def target_chunked(fdp: atheris.FuzzedDataProvider) -> None:
    chunk_size = fdp.ConsumeIntInRange(64, 300)
    plaintext = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 3000))
    aad = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 20))
    threads = fdp.ConsumeIntInRange(1, 2)
    prefix = bytes(15)
    stream = reference.stream_encrypt(KEY, plaintext, nonce_prefix=prefix, chunk_size=chunk_size, aad=aad)
    other = reference.stream_encrypt(KEY, plaintext, nonce_prefix=b"\x01" * 15, chunk_size=chunk_size, aad=aad)
    data = mutate(fdp, stream, chunk_size, other)
    try:
        expected: bytes | None = reference.stream_decrypt(KEY, data, aad)
    except reference.ReferenceDecryptionError:
        expected = None
    mode = fdp.ConsumeIntInRange(0, 5)
    step = fdp.ConsumeIntInRange(1, 500)
    got = bytearray()
    error: BaseException | None = None
    try:
        if mode == 3:
            sink = io.BytesIO()
            try:
                cb3.decrypt_file(KEY, io.BytesIO(data), sink, associated_data=aad, max_threads=threads)
            finally:
                got += sink.getvalue()
        elif mode == 5:
            got += decrypt_between_files(data, aad, chunk_size * fdp.ConsumeIntInRange(1, 5))
        elif mode == 4:
            reader = cb3.DecryptingReader(io.BytesIO(data), KEY, associated_data=aad, max_threads=threads)
            offset = fdp.ConsumeIntInRange(0, len(plaintext) + 10)
            reader.seek(offset)
            part = reader.read(step)
            want = plaintext[offset : offset + step]
            if part != want:
                # A read stops early at a chunk that fails to verify (it
                # returns what verified before it): then the next read raises.
                if len(part) >= len(want) or not want.startswith(part):
                    raise AssertionError(f"seek({offset}) read {part!r}")
                reader.read(step - len(part))
                raise AssertionError(f"seek({offset}): a short read {part!r} with no error after it")
            return
        else:
            source = Dribble(data, step) if mode == 2 else io.BytesIO(data)
            reader = cb3.DecryptingReader(source, KEY, associated_data=aad, max_threads=threads)
            if mode == 0:
                got += reader.read()
            else:
                while part := reader.read(step):
                    got += part
    except cb3.ChunkedError as raised:
        error = raised
    if error is None:
        if expected is None or bytes(got) != expected:
            raise AssertionError("cb3 accepted a stream the reference rejects, or returned other bytes")
        return
    if mode == 4:
        return
    if expected is not None:
        raise AssertionError(f"cb3 rejected a valid stream: {error!r}")
    if isinstance(error, cb3.ChunkedHeaderError) != (not header_valid(data)):
        raise AssertionError(f"header verdict differs from the reference: {error!r}")
    if not plaintext.startswith(bytes(got)):
        raise AssertionError("bytes of a forged chunk were returned")


TARGETS = {"chunked": target_chunked}


if __name__ == "__main__":
    fuzz_cb3.main(TARGETS)
