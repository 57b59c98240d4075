"""cb3.blake3, cb3.hash, cb3.keyed_hash, cb3.derive_key.

- The official BLAKE3 test vectors (tests/data/blake3_test_vectors.json, from
  the BLAKE3 repository): every input length, the three modes, the extended
  outputs, incremental and one-shot.
- The checks of blake3-py's own tests/test_blake3.py (error types for bad key
  lengths, str input, int arrays, strided buffers, positional-only and
  keyword-only arguments, output overflow, ...), run against cb3.blake3.
- Random cross-checks against blake3-py, including seek, lengths up to 2**16
  and multi-threaded hashing.
"""

import array
import hashlib
import io
import json
import os
import random
import sys
from pathlib import Path

import numpy
import pytest

import cb3
from helpers import assert_gil_released, run_threads
from cb3 import blake3


# blake3-py, the peer, is imported by the tests that compare with it, never at
# module level: the official vectors must run whether or not it is installed.
@pytest.fixture
def reference():
    """blake3-py (the module); the cross-checks that use it skip without it."""
    return pytest.importorskip("blake3")


HERE = Path(__file__).parents[1]  # tests/
VECTORS = json.loads((HERE / "data" / "blake3_test_vectors.json").read_text())
KEY = VECTORS["key"].encode()
CONTEXT = VECTORS["context_string"]


def make_input(length: int) -> bytes:
    return bytes(i % 251 for i in range(length))


# ---- official test vectors ----


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: str(case["input_len"]))
def test_official_vectors(case):
    data = make_input(case["input_len"])
    modes = [
        (case["hash"], {}, lambda n: cb3.hash(data, n)),
        (case["keyed_hash"], {"key": KEY}, lambda n: cb3.keyed_hash(KEY, data, n)),
        (case["derive_key"], {"derive_key_context": CONTEXT}, lambda n: cb3.derive_key(CONTEXT, data, n)),
    ]
    for extended_hex, options, one_shot in modes:
        extended = bytes.fromhex(extended_hex)
        n = len(extended)
        assert blake3(data, **options).digest() == extended[:32]
        assert blake3(data, **options).digest(length=n) == extended
        assert blake3(data, **options).hexdigest(length=n) == extended_hex
        assert one_shot(32) == extended[:32]
        assert one_shot(n) == extended
        # Incremental, in two halves and byte by byte for the short ones.
        hasher = blake3(**options)
        hasher.update(data[: len(data) // 2]).update(data[len(data) // 2 :])
        assert hasher.digest() == extended[:32]
        if len(data) <= 1025:
            hasher = blake3(**options)
            for i in range(len(data)):
                hasher.update(data[i : i + 1])
            assert hasher.digest(n) == extended
        # Seeking into the extended output.
        for seek in (1, 31, 32, 64, 100, n - 1):
            assert blake3(data, **options).digest(n - seek, seek=seek) == extended[seek:]
        # Threads do not change anything.
        assert blake3(data, max_threads=2, **options).digest(n) == extended
        assert blake3(data, max_threads=blake3.AUTO, **options).digest(n) == extended


# ---- blake3-py's own test file, against cb3.blake3 ----


def test_buffer_types():
    expected = blake3(b"foo").digest()
    assert expected == blake3(memoryview(b"foo")).digest()
    assert expected == blake3(bytearray(b"foo")).digest()
    assert expected == blake3(memoryview(bytearray(b"foo"))).digest()
    assert expected == blake3(array.array("B", b"foo")).digest()
    assert expected == blake3(memoryview(array.array("B", b"foo"))).digest()
    assert expected == blake3(array.array("b", b"foo")).digest()
    assert expected == blake3(memoryview(array.array("b", b"foo"))).digest()
    assert expected == blake3(numpy.frombuffer(b"foo", numpy.uint8)).digest()
    assert expected == blake3(numpy.frombuffer(b"foo", numpy.int8)).digest()

    incremental = blake3()
    incremental.update(b"one")
    incremental.update(memoryview(b"two"))
    incremental.update(bytearray(b"three"))
    incremental.update(memoryview(bytearray(b"four")))
    incremental.update(array.array("B", b"five"))
    incremental.update(memoryview(array.array("B", b"six")))
    incremental.update(array.array("b", b"seven"))
    incremental.update(memoryview(array.array("b", b"eight")))
    assert incremental.digest() == blake3(b"onetwothreefourfivesixseveneight").digest()


def test_key_types(reference):
    key = bytes([42]) * 32
    expected = blake3(b"foo", key=key).digest()
    assert expected == blake3(b"foo", key=bytearray(key)).digest()
    assert expected == blake3(b"foo", key=memoryview(key)).digest()
    assert expected == reference.blake3(b"foo", key=key).digest()


def test_invalid_key_lengths():
    for key_length in range(0, 100):
        key = b"\xff" * key_length
        if key_length == blake3.key_size:
            blake3(b"foo", key=key)
        else:
            with pytest.raises(ValueError, match=f"key must be 32 bytes, got {key_length}"):
                blake3(b"foo", key=key)
            with pytest.raises(ValueError, match="key"):
                cb3.keyed_hash(key, b"foo")


def test_int_array_fails():
    with pytest.raises(BufferError, match="data"):
        blake3(array.array("i"))
    with pytest.raises(BufferError, match="data"):
        blake3().update(array.array("i"))
    with pytest.raises(BufferError, match="key"):
        blake3(key=array.array("i", [0] * 8))


def test_strided_array_fails():
    unstrided = numpy.array([1, 2, 3, 4], numpy.uint8)
    strided = numpy.lib.stride_tricks.as_strided(unstrided, shape=[2], strides=[2])
    # The view really is strided. numpy's tobytes, not bytes(): PyPy 7.3.19's
    # bytes() copies a strided cpyext buffer as if it were contiguous ([1, 2]).
    assert strided.tobytes() == bytes([1, 3])
    blake3(unstrided)
    with pytest.raises(BufferError, match="contiguous"):
        blake3(strided)
    with pytest.raises(BufferError, match="contiguous"):
        blake3().update(memoryview(b"abcdef")[::2])


def test_string_fails():
    with pytest.raises(TypeError, match="data"):
        blake3("a string")
    with pytest.raises(TypeError, match="data"):
        blake3().update("a string")
    with pytest.raises(TypeError, match="data"):
        cb3.hash("a string")


def test_constants():
    for obj in (blake3, blake3()):
        assert obj.name == "blake3"
        assert obj.digest_size == 32
        assert obj.block_size == 64
        assert obj.key_size == 32
        assert obj.AUTO == -1


def test_xof():
    extended = blake3(b"foo").digest(length=100)
    for i in range(100):
        assert extended[:i] == blake3(b"foo").digest(length=i)
        assert extended[i:] == blake3(b"foo").digest(length=100 - i, seek=i)
        assert extended[i:].hex() == blake3(b"foo").hexdigest(100 - i, seek=i)


@pytest.mark.parametrize("max_threads", [2, 3, blake3.AUTO, 64])
def test_max_threads(max_threads, reference):
    b = make_input(10**6)
    expected = blake3(b).digest()
    assert expected == blake3(b, max_threads=max_threads).digest()
    incremental = blake3(max_threads=max_threads)
    incremental.update(b[:333_333]).update(b[333_333:])
    assert expected == incremental.digest()
    assert expected == reference.blake3(b).digest()


def test_key_context_incompatible():
    with pytest.raises(ValueError, match="key and derive_key_context"):
        blake3(b"foo", key=bytearray(32), derive_key_context="")


def test_copy_basic():
    b = make_input(10**6)
    b2 = make_input(10**6)[::-1]
    h1 = blake3(b)
    expected = h1.digest()
    h2 = h1.copy()
    assert type(h2) is blake3
    assert expected == h2.digest()
    h1.update(b2)
    expected2 = h1.digest()
    assert expected2 != h2.digest()
    h2.update(b2)
    assert expected2 == h2.digest()


def test_copy_with_threads():
    b, b2, b3 = make_input(10**6), make_input(10**6 + 1), make_input(10**6 + 2)
    h1 = blake3(b, max_threads=2)
    expected = h1.digest()
    h2 = h1.copy()
    h3 = blake3(b, max_threads=2)
    assert expected == h2.digest()
    h1.update(b2)
    h3.update(b2)
    h3.update(b3)
    expected2 = h1.digest()
    assert expected2 != h2.digest()
    h2.update(b2)
    assert expected2 == h2.digest()
    h2.update(b3)
    assert h2.digest() == h3.digest()


def test_invalid_max_threads():
    for bad in (0, -2, -100):
        with pytest.raises(ValueError, match="max_threads"):
            blake3(max_threads=bad)
    with pytest.raises(TypeError, match="max_threads"):
        blake3(max_threads=1.5)
    with pytest.raises(TypeError, match="max_threads"):
        blake3(max_threads=None)
    with pytest.raises(OverflowError, match="max_threads"):
        blake3(max_threads=2**70)
    # Anything with __index__ is an int.
    assert blake3(b"x", max_threads=numpy.int64(2)).digest() == blake3(b"x").digest()


def test_positional_only_arguments():
    with pytest.raises(TypeError, match="positional-only"):
        blake3(data=b"")
    with pytest.raises(TypeError):
        blake3().update(data=b"")


def test_keyword_only_arguments():
    with pytest.raises(TypeError, match="positional"):
        blake3(b"", b"\0" * 32)
    blake3(b"").digest(32)
    blake3(b"").digest(length=32)
    blake3(b"").hexdigest(32)
    blake3(b"").hexdigest(length=32)
    blake3(b"").digest(32, seek=0)
    blake3(b"").digest(length=32, seek=0)
    blake3(b"").hexdigest(32, seek=0)
    blake3(b"").hexdigest(length=32, seek=0)
    with pytest.raises(TypeError):
        blake3(b"").digest(32, 0)
    with pytest.raises(TypeError):
        blake3(b"").hexdigest(32, 0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'lenght'"):
        blake3(b"").digest(lenght=32)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        blake3(foo=1)


def test_usedforsecurity():
    blake3(usedforsecurity=True)
    blake3(usedforsecurity=False)
    with pytest.raises(TypeError, match="usedforsecurity"):
        blake3(usedforsecurity=None)
    with pytest.raises(TypeError, match="usedforsecurity"):
        blake3(usedforsecurity=0)


def test_context_must_be_str():
    blake3(derive_key_context="foo")
    with pytest.raises(TypeError, match="derive_key_context must be a str"):
        blake3(derive_key_context=b"foo")
    with pytest.raises(TypeError, match="context must be a str"):
        cb3.derive_key(b"foo", b"material")
    with pytest.raises(UnicodeEncodeError):
        blake3(derive_key_context="\ud800")


def test_none_means_absent():
    expected = blake3().digest()
    assert blake3(None).digest() == expected
    assert blake3(key=None).digest() == expected
    assert blake3(derive_key_context=None).digest() == expected
    with pytest.raises(TypeError, match="data"):
        blake3().update(None)


def test_buffers_released():
    key = bytearray(32)
    message = bytearray(32)
    hasher = blake3(message, key=key)
    hasher.update(message)
    expected = cb3.keyed_hash(key, message + message)
    # No view is held after the calls: CPython refuses (BufferError) to
    # resize a bytearray while one is.
    key.extend(b"foo")
    message.extend(b"foo")
    assert len(key) == len(message) == 35
    assert hasher.digest() == expected


def test_reset(reference):
    hasher = blake3()
    hash1 = hasher.digest()
    hasher.update(b"foo")
    hash2 = hasher.digest()
    assert hasher.reset() is None
    hash3 = hasher.digest()
    hasher.update(b"foo")
    hash4 = hasher.digest()
    assert hash1 != hash2
    assert hash1 == hash3
    assert hash2 == hash4
    keyed = blake3(b"ignored after reset", key=KEY)
    keyed.reset()
    assert keyed.digest() == reference.blake3(key=KEY).digest()


def test_output_overflows_isize():
    with pytest.raises((OverflowError, MemoryError)):
        blake3().digest(sys.maxsize + 1)
    with pytest.raises((OverflowError, MemoryError)):
        blake3().hexdigest((sys.maxsize // 2) + 1)
    with pytest.raises(OverflowError, match="length"):
        blake3().digest(2**64)
    with pytest.raises(OverflowError, match="length must not be negative"):
        blake3().digest(-1)
    with pytest.raises(OverflowError, match="seek must not be negative"):
        blake3().digest(seek=-1)
    with pytest.raises(OverflowError, match="seek"):
        blake3().digest(seek=2**64)
    with pytest.raises(TypeError, match="length must be an int"):
        blake3().digest(1.0)
    with pytest.raises(OverflowError, match="length"):
        cb3.hash(b"", -1)


def test_module_name():
    scope = {}
    exec(f"from {blake3.__module__} import blake3 as foobar", scope)
    assert scope["foobar"] is blake3


def test_not_subclassable_nor_picklable():
    with pytest.raises(TypeError):
        type("Sub", (blake3,), {})
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(blake3())
    with pytest.raises(AttributeError):
        blake3().anything = 1


def test_update_returns_self():
    hasher = blake3()
    assert hasher.update(b"a") is hasher


def test_mmap(tmp_path):
    input_bytes = bytes([42]) * 1_000_000
    temp_path = tmp_path / "input"
    temp_path.write_bytes(input_bytes)

    hasher1 = blake3()
    hasher1.update_mmap(str(temp_path))
    assert blake3(input_bytes).digest() == hasher1.digest()

    hasher2 = blake3(max_threads=blake3.AUTO)
    hasher2.update_mmap(temp_path)
    assert blake3(input_bytes).digest() == hasher2.digest()

    hasher3 = blake3(max_threads=4).update(input_bytes).update_mmap(temp_path).update_mmap(path=temp_path)
    assert blake3(3 * input_bytes).digest() == hasher3.digest()

    with pytest.raises(FileNotFoundError) as info:
        hasher3.update_mmap("/non/existent/file.txt")
    assert info.value.filename == "/non/existent/file.txt"
    with pytest.raises(IsADirectoryError):
        blake3().update_mmap(tmp_path)
    with pytest.raises(OSError):
        blake3().update_mmap("bad\0path")
    with pytest.raises(TypeError, match="path"):
        blake3().update_mmap(b"/etc/hostname")
    with pytest.raises(TypeError, match="path"):
        blake3().update_mmap(3)


@pytest.mark.parametrize("length", [0, 1, 16383, 16384, 16385, 200_000])
def test_mmap_sizes(tmp_path, length, reference):
    data = os.urandom(length)
    path = tmp_path / "f"
    path.write_bytes(data)
    for max_threads in (1, 2, blake3.AUTO):
        assert blake3(max_threads=max_threads).update_mmap(path).digest() == reference.blake3(data).digest()


# ---- hashlib integration ----


def test_hashlib_file_digest(tmp_path, reference):
    data = os.urandom(300_000)
    assert hashlib.file_digest(io.BytesIO(data), blake3).hexdigest() == reference.blake3(data).hexdigest()
    path = tmp_path / "f"
    path.write_bytes(data)
    with open(path, "rb") as f:
        assert hashlib.file_digest(f, blake3).digest() == reference.blake3(data).digest()
    with open(path, "rb") as f:
        assert hashlib.file_digest(f, lambda: blake3(max_threads=2)).digest() == reference.blake3(data).digest()


# ---- random cross-checks against blake3-py ----


def random_mode(rng):
    choice = rng.randrange(3)
    if choice == 0:
        return {}
    if choice == 1:
        return {"key": rng.randbytes(32)}
    return {"derive_key_context": "".join(rng.choice("abcdéf ✓ 0123") for _ in range(rng.randrange(40)))}


def test_random_against_blake3_py(reference):
    rng = random.Random(1234)
    for _ in range(300):
        options = random_mode(rng)
        data = rng.randbytes(rng.choice([rng.randrange(2100), rng.randrange(70_000)]))
        ours, theirs = blake3(**options), reference.blake3(**options)
        rest = data
        while rest:
            n = rng.randrange(len(rest) + 1)
            ours.update(rest[:n])
            theirs.update(rest[:n])
            rest = rest[n:]
        length = rng.choice([0, 1, 32, 64, 65, rng.randrange(2**16 + 1)])
        seek = rng.choice([0, 1, 63, rng.randrange(2**20), rng.randrange(2**64 - length)])
        assert ours.digest(length, seek=seek) == theirs.digest(length, seek=seek)
        assert ours.hexdigest(length, seek=seek) == theirs.hexdigest(length, seek=seek)
        if not options:
            assert cb3.hash(data, length) == theirs.digest(length)
        elif "key" in options:
            assert cb3.keyed_hash(options["key"], data, length) == theirs.digest(length)
        else:
            assert cb3.derive_key(options["derive_key_context"], data, length) == theirs.digest(length)


def test_long_outputs(reference):
    for length in (2**16 - 1, 2**16, 2**16 + 1, 2**20):
        assert blake3(b"abc").digest(length) == reference.blake3(b"abc").digest(length)
        assert cb3.hash(b"abc", length) == reference.blake3(b"abc").digest(length)
    assert blake3(b"abc").hexdigest(5000, seek=12345) == reference.blake3(b"abc").hexdigest(5000, seek=12345)


@pytest.mark.parametrize("max_threads", [1, 2, 3, blake3.AUTO])
def test_multithreaded_against_blake3_py(max_threads, reference):
    rng = random.Random(max_threads)
    for _ in range(4):
        options = random_mode(rng)
        data = rng.randbytes(rng.randrange(100_000, 3_000_000))
        ours = blake3(data[:777], max_threads=max_threads, **options)
        ours.update(data[777:])
        theirs = reference.blake3(data, max_threads=max_threads if max_threads != -1 else reference.blake3.AUTO, **options)
        assert ours.digest(100) == theirs.digest(100)


# ---- threads ----


@pytest.mark.threads  # deselected under HPy debug mode only (see the marker in pyproject.toml)
def test_shared_between_threads(reference):
    # Identical pieces from several threads: any interleaving gives the same input.
    piece = os.urandom(300_000)
    hasher = blake3(max_threads=2)
    errors = []

    def work():
        try:
            for _ in range(5):
                hasher.update(piece)
                hasher.digest()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    run_threads([work] * 4)
    assert not errors
    assert hasher.digest() == reference.blake3(piece * 20).digest()


def test_gil_released_for_large_updates():
    # While a worker thread hashes a large input, this thread keeps running:
    # the longest pause it sees is far shorter than the update.
    data = bytes(256 * 1024 * 1024)
    assert_gil_released(lambda: blake3().update(data), "update()")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() in a process with threads
def test_threads_after_fork():
    # A forked child has none of the parent's pool threads: cb3 builds new
    # pools there instead of waiting forever (blake3-py hangs in this case).
    data = bytes(1 << 20)
    expected = blake3(data).digest()
    own_pool = blake3(max_threads=2)
    own_pool.update(data)  # builds this hasher's pool
    assert blake3(data, max_threads=blake3.AUTO).digest() == expected  # builds the AUTO pool
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        import signal

        signal.alarm(20)
        ok = blake3(data, max_threads=blake3.AUTO).digest() == expected
        inherited = own_pool.copy()
        inherited.reset()
        ok = ok and inherited.update(data).digest() == expected
        ok = ok and blake3(data, max_threads=3).digest() == expected
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert blake3(data, max_threads=blake3.AUTO).digest() == expected  # the parent's pool still works


# ---- one-shot helpers ----


def test_one_shot_arguments(reference):
    assert cb3.hash(b"abc") == reference.blake3(b"abc").digest()
    assert cb3.hash(data=b"abc", length=7) == reference.blake3(b"abc").digest(7)
    assert cb3.keyed_hash(key=KEY, data=b"abc") == reference.blake3(b"abc", key=KEY).digest()
    assert cb3.derive_key(context="c", material=b"abc", length=40) == reference.blake3(
        b"abc", derive_key_context="c"
    ).digest(40)
    assert cb3.hash(bytearray(b"abc")) == cb3.hash(memoryview(b"abc"))
    with pytest.raises(TypeError, match="missing required argument 'data'"):
        cb3.hash()
    with pytest.raises(TypeError, match="material"):
        cb3.derive_key("c", "not bytes")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        cb3.hash(b"", seek=1)
    assert cb3.hash(b"abc", 0) == b""


def test_import_spellings(reference):
    # blake3-py's `import blake3; blake3.blake3(...)` ports as `import cb3.blake3 as blake3`.
    import cb3.blake3 as module_spelling
    from cb3.blake3 import __version__
    from cb3.blake3 import blake3 as from_spelling

    assert module_spelling is from_spelling is blake3
    assert module_spelling.blake3(b"abc").digest() == reference.blake3(b"abc").digest()
    assert module_spelling.blake3.AUTO == -1
    assert isinstance(__version__, str) and len(__version__.split(".")) == 3


def test_exports():
    import cb3.hashing

    assert cb3.blake3 is blake3
    assert callable(cb3.hash) and cb3.hash is cb3.hashing.hash
    for name in ("blake3", "hash", "keyed_hash", "derive_key"):
        assert name in cb3.hashing.__all__
        assert name in cb3.__all__
