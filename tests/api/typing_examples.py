"""The whole public API of cb3 with type annotations.

Checked statically with (from the repository root):

    mypy --strict cb3/_cb3.pyi tests/api/typing_examples.py

and run by tests/api/test_typing.py, so every example is also correct at run
time. Not collected by pytest (no test_ prefix).
"""

from __future__ import annotations

import array
import mmap

import cb3
import cb3.aead
import cb3.blake3 as blake3  # blake3-py's `import blake3`, as README documents it
import cb3.errors
import cb3.stream
from cb3 import ChaCha20Blake3, Cipher, DecryptionError, InvalidTag, Stream


def constants() -> tuple[int, int, int, int, str, str, str]:
    key_size: int = cb3.KEY_SIZE
    nonce_size: int = cb3.NONCE_SIZE
    tag_size: int = cb3.TAG_SIZE
    threshold: int = cb3.GIL_THRESHOLD
    abi: str = cb3.HPY_ABI
    backend: str = cb3.simd_backend()
    version: str = cb3.__version__
    assert ChaCha20Blake3.KEY_SIZE == Stream.KEY_SIZE == key_size
    assert ChaCha20Blake3.NONCE_SIZE == Stream.NONCE_SIZE == nonce_size
    assert ChaCha20Blake3.TAG_SIZE == Stream.TAG_SIZE == tag_size
    assert cb3.aead.KEY_SIZE == key_size
    return key_size, nonce_size, tag_size, threshold, abi, backend, version


def keys() -> tuple[bytes, bytes]:
    key: bytes = cb3.generate_key()
    nonce: bytes = cb3.generate_nonce()
    key2: bytes = ChaCha20Blake3.generate_key()
    nonce2: bytes = ChaCha20Blake3.generate_nonce()
    key3: bytes = cb3.aead.generate_key()
    assert len({key, key2, key3}) == 3 and nonce != nonce2
    return key, nonce


def combined(cipher: ChaCha20Blake3, nonce: bytes) -> bytes:
    sealed: bytes = cipher.encrypt(nonce, b"data")
    sealed_aad: bytes = cipher.encrypt(nonce, bytearray(b"data"), b"header")
    sealed_kw: bytes = cipher.encrypt(nonce=nonce, data=memoryview(b"data"), associated_data=None)
    assert sealed == sealed_kw
    plain: bytes = cipher.decrypt(nonce, sealed)
    plain_aad: bytes = cipher.decrypt(nonce, sealed_aad, associated_data=b"header")
    assert plain == plain_aad == b"data"
    return sealed


def detached(cipher: ChaCha20Blake3, nonce: bytes) -> None:
    pair: tuple[bytes, bytes] = cipher.encrypt_detached(nonce, b"data", b"aad")
    ct, tag = pair
    plain: bytes = cipher.decrypt_detached(nonce, ct, tag, b"aad")
    plain_kw: bytes = cipher.decrypt_detached(nonce=nonce, data=ct, tag=tag, associated_data=b"aad")
    assert plain == plain_kw == b"data"


def into(cipher: ChaCha20Blake3, nonce: bytes) -> None:
    data = b"payload"
    out = bytearray(len(data) + cb3.TAG_SIZE)
    written: int = cipher.encrypt_into(nonce, data, None, out)
    plain = bytearray(len(data))
    read: int = cipher.decrypt_into(nonce, out, None, plain)
    assert written == len(out) and read == len(plain) and plain == data
    # Any writable buffer: array, mmap, memoryview.
    arr = array.array("B", bytes(len(data) + 32))
    cipher.encrypt_into(nonce=nonce, data=data, associated_data=b"h", buf=arr)
    mm = mmap.mmap(-1, len(data))
    cipher.decrypt_into(nonce, arr, b"h", mm)
    assert mm[:] == data
    # In place through a view of the output buffer.
    both = bytearray(data) + bytearray(32)
    cipher.encrypt_into(nonce, memoryview(both)[: len(data)], b"h", both)
    assert both == bytes(arr)


def in_place(cipher: ChaCha20Blake3, nonce: bytes) -> None:
    buf = bytearray(b"secret")
    tag: bytes = cipher.encrypt_in_place(nonce, buf)
    cipher.decrypt_in_place(nonce, buf, tag)
    assert buf == b"secret"
    view = memoryview(buf)
    tag2: bytes = cipher.encrypt_in_place(nonce=nonce, buf=view, associated_data=b"x")
    cipher.decrypt_in_place(nonce=nonce, buf=view, tag=tag2, associated_data=b"x")


def errors(cipher: ChaCha20Blake3, nonce: bytes) -> list[str]:
    seen: list[str] = []
    try:
        cipher.decrypt(nonce, bytes(40))
    except DecryptionError as e:
        seen.append(type(e).__name__)
    try:
        cipher.decrypt(nonce, bytes(40))
    except InvalidTag as e:
        seen.append(str(e)[:17])
    try:
        cipher.decrypt(nonce, bytes(40))
    except cb3.errors.DecryptionError:
        seen.append("errors module")
    try:
        ChaCha20Blake3(bytes(31))
    except ValueError as e:
        seen.append(str(e))
    assert issubclass(cb3.InvalidTag, Exception)
    return seen


def streams(key: bytes, nonce: bytes) -> int:
    sender = Stream(key, nonce)
    receiver: cb3.stream.Stream = cb3.Stream(key=key, nonce=nonce, message_index=0)
    first: bytes = sender.encrypt(b"one")
    second: bytes = sender.encrypt(data=b"two", associated_data=b"h")
    assert receiver.decrypt(first) == b"one"
    assert receiver.decrypt(second, associated_data=b"h") == b"two"
    index: int = receiver.message_index
    resumed = Stream(key, nonce, message_index=index)
    assert resumed.message_index == sender.message_index == 2
    last = Stream(key, nonce, message_index=2**64 - 2)
    last.encrypt(b"the last message")
    exhausted = False
    try:
        last.encrypt(b"one too many")
    except OverflowError:
        exhausted = True
    assert exhausted and last.message_index == 2**64 - 1
    return index


def chunked_streams(key: bytes) -> int:
    import io
    import os
    import tempfile

    sink = io.BytesIO()
    with cb3.EncryptingWriter(sink, key, associated_data=b"v1", chunk_size=cb3.CHUNKED_MIN_CHUNK_SIZE) as writer:
        written: int = writer.write(b"x" * 1000)
        writer.write(bytearray(b"more"))
        assert writer.tell() == 1004 and written == 1000
    reader: cb3.DecryptingReader = cb3.DecryptingReader(io.BytesIO(sink.getvalue()), key, associated_data=b"v1")
    end: int = reader.seek(0, io.SEEK_END)
    reader.seek(998)
    tail: bytes = reader.read()
    buf = bytearray(3)
    reader.seek(0)
    n: int = reader.readinto(buf)
    pieces: list[bytes] = list(reader.chunks())
    assert tail == b"xxmore" and n == 3 and end == 1004 and b"".join(pieces) == b"x" * 997 + b"more"
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "a"), os.path.join(tmp, "a.cb3")
        with open(src, "wb") as f:
            f.write(b"file data")
        done: int = cb3.encrypt_file(key, src, dst, max_threads=cb3.AUTO, progress=lambda n: None)
        out = io.BytesIO()
        with open(dst, "rb") as f:
            cb3.decrypt_file(key, f, out, max_threads=2)
        assert out.getvalue() == b"file data" and done == 9
    try:
        cb3.DecryptingReader(io.BytesIO(sink.getvalue()[:-40]), key, associated_data=b"v1").read()
    except cb3.ChunkedError as error:
        caught: cb3.DecryptionError = error
        assert isinstance(caught, cb3.ChunkedError)
    return end


def chunked_names() -> int:
    """The format's names, and the Stream* names they had before (the same objects)."""
    error: type[cb3.DecryptionError] = cb3.ChunkedError
    truncated: type[cb3.ChunkedError] = cb3.ChunkedTruncatedError
    header: type[cb3.ChunkedError] = cb3.ChunkedHeaderError
    assert (error, truncated, header) == (cb3.ChunkedError, cb3.ChunkedTruncatedError, cb3.ChunkedHeaderError)
    sizes: tuple[int, int, int, int] = (
        cb3.CHUNKED_HEADER_SIZE,
        cb3.CHUNKED_CHUNK_SIZE,
        cb3.CHUNKED_MIN_CHUNK_SIZE,
        cb3.CHUNKED_MAX_CHUNK_SIZE,
    )
    assert sizes == (cb3.CHUNKED_HEADER_SIZE, cb3.CHUNKED_CHUNK_SIZE, cb3.CHUNKED_MIN_CHUNK_SIZE, cb3.CHUNKED_MAX_CHUNK_SIZE)
    return cb3.CHUNKED_HEADER_SIZE


def blake3_module_spelling() -> str:
    hasher: cb3.blake3 = blake3.blake3(b"abc", max_threads=blake3.AUTO)
    assert isinstance(blake3.__version__, str)
    return hasher.hexdigest()


def main() -> dict[str, object]:
    consts = constants()
    key, nonce = keys()
    cipher: ChaCha20Blake3 = Cipher(key)
    same: Cipher = ChaCha20Blake3(key=key)
    sealed = combined(cipher, nonce)
    assert same.decrypt(nonce, sealed) == b"data"
    detached(cipher, nonce)
    into(cipher, nonce)
    in_place(cipher, nonce)
    seen = errors(cipher, nonce)
    index = streams(key, nonce)
    assert chunked_streams(key) == 1004
    assert chunked_names() == 27
    assert blake3_module_spelling() == cb3.hash(b"abc").hex()
    return {"constants": consts, "errors": seen, "index": index}


if __name__ == "__main__":
    print(main())
