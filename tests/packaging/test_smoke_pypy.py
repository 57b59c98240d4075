"""Smoke tests that must pass identically on CPython and PyPy (noxfile.py's chroot-pypy step).

They pin the behaviour where the two interpreters' C-API/HPy layers differ:
tp_new keyword arguments (a dict on CPython, a kwnames tuple on PyPy), the
buffer protocol through cpyext (PyPy raises ValueError, not BufferError, for a
read-only buffer requested writable), and bytes as a zero-copy HPy path.
"""

import array
import sys
import threading

import pytest

import cb3
from cb3._loading import guard
from cb3.cli import selftest
from helpers import run_threads

KEY = bytes(range(32))
NONCE = bytes(range(100, 124))


@pytest.mark.parametrize("key, nonce, pt, aad, ct, tag", selftest.VECTORS)
def test_upstream_vector(key, nonce, pt, aad, ct, tag):
    cipher = cb3.ChaCha20Blake3(key)
    assert cipher.encrypt(nonce, pt, aad) == ct + tag
    assert cipher.decrypt(nonce, ct + tag, aad) == pt
    assert cipher.encrypt_detached(nonce, pt, aad) == (ct, tag)
    assert cipher.decrypt_detached(nonce, ct, tag, aad) == pt
    # The same through bytearray / memoryview inputs (the cpyext route on PyPy).
    assert cipher.encrypt(bytearray(nonce), memoryview(pt), bytearray(aad)) == ct + tag


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1024, 2047, 2048, 4096, 70_000, 1 << 20])
def test_round_trip(size):
    data = bytes((i * 7 + 3) & 0xFF for i in range(size))
    cipher = cb3.ChaCha20Blake3(KEY)
    sealed = cipher.encrypt(NONCE, data, b"header")
    assert len(sealed) == size + cb3.TAG_SIZE
    assert cipher.decrypt(NONCE, sealed, b"header") == data
    with pytest.raises(cb3.DecryptionError):
        cipher.decrypt(NONCE, sealed, b"other header")
    # Every input kind gives the same bytes.
    assert cipher.encrypt(NONCE, bytearray(data), b"header") == sealed
    assert cipher.encrypt(NONCE, memoryview(data), memoryview(b"header")) == sealed
    assert cipher.encrypt(NONCE, array.array("B", data), b"header") == sealed


def test_into_and_in_place():
    cipher = cb3.ChaCha20Blake3(KEY)
    data = b"x" * 5000
    sealed = cipher.encrypt(NONCE, data)
    buf = bytearray(len(data) + 32)
    assert cipher.encrypt_into(NONCE, data, None, buf) == len(buf)
    assert buf == sealed
    out = bytearray(len(data))
    assert cipher.decrypt_into(NONCE, buf, None, out) == len(data)
    assert out == data
    # into a memoryview slice of a bigger buffer
    big = bytearray(len(data) + 100)
    cipher.encrypt_into(NONCE, data, None, memoryview(big)[10 : 10 + len(data) + 32])
    assert big[10 : 10 + len(data) + 32] == sealed
    # other writable exporters: array, mmap, ctypes (format "<B")
    import ctypes
    import mmap

    for target in (array.array("B", bytes(len(sealed))), mmap.mmap(-1, len(sealed)), (ctypes.c_ubyte * len(sealed))()):
        assert cipher.encrypt_into(NONCE, data, None, target) == len(sealed)
        assert bytes(target) == sealed
    inplace = bytearray(data)
    tag = cipher.encrypt_in_place(NONCE, inplace)
    assert bytes(inplace) + tag == sealed
    assert cipher.decrypt_in_place(NONCE, inplace, tag) is None
    assert inplace == data
    # wrong tag: DecryptionError and the buffer untouched
    before = bytes(buf)
    with pytest.raises(cb3.DecryptionError):
        cipher.decrypt_into(NONCE, bytes(32) + before[32:], None, out)
    assert buf == before


def test_keywords_and_tp_new_keywords():
    # tp_new gets a dict on CPython and a kwnames tuple on PyPy.
    a = cb3.ChaCha20Blake3(key=KEY)
    b = cb3.ChaCha20Blake3(KEY)
    assert a.encrypt(nonce=NONCE, data=b"d", associated_data=b"a") == b.encrypt(NONCE, b"d", b"a")
    s1 = cb3.Stream(KEY, NONCE, message_index=5)
    s2 = cb3.Stream(key=KEY, nonce=NONCE, message_index=5)
    assert s1.message_index == s2.message_index == 5
    assert s1.encrypt(b"m") == s2.encrypt(data=b"m")
    with pytest.raises(TypeError, match="unexpected keyword argument 'kee'"):
        cb3.ChaCha20Blake3(kee=KEY)
    with pytest.raises(TypeError, match="multiple values for argument 'key'"):
        cb3.ChaCha20Blake3(KEY, key=KEY)
    with pytest.raises(TypeError, match="missing required argument 'key'"):
        cb3.ChaCha20Blake3()
    with pytest.raises(TypeError, match="at most 1 positional"):
        cb3.ChaCha20Blake3(KEY, KEY)
    with pytest.raises(TypeError, match="at most 2 positional"):
        cb3.Stream(KEY, NONCE, 5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'associated'"):
        a.encrypt(NONCE, b"d", associated=b"a")


def test_stream():
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    messages = [b"one", b"", b"three" * 1000]
    sealed = [sender.encrypt(m, b"ad") for m in messages]
    assert sender.message_index == 3
    with pytest.raises(cb3.DecryptionError):
        receiver.decrypt(sealed[1], b"ad")
    assert receiver.message_index == 0
    assert [receiver.decrypt(c, b"ad") for c in sealed] == messages


def test_error_types_match_cpython():
    cipher = cb3.ChaCha20Blake3(KEY)
    # read-only buffer where a writable one is needed: TypeError on both
    # (cpyext's ValueError must not leak through)
    for readonly in (b"x" * 33, memoryview(bytearray(33)).toreadonly()):
        with pytest.raises(TypeError, match="writable buffer"):
            cipher.encrypt_into(NONCE, b"x", None, readonly)
    with pytest.raises(TypeError, match="writable buffer"):
        cipher.encrypt_in_place(NONCE, b"abc")
    with pytest.raises(TypeError, match="not 'str'"):
        cipher.encrypt(NONCE, "text")
    with pytest.raises(TypeError, match="not 'int'"):
        cipher.encrypt(NONCE, 5)
    with pytest.raises(TypeError, match="not 'NoneType'"):
        cipher.encrypt(NONCE, None)
    with pytest.raises(BufferError, match="C-contiguous"):
        cipher.encrypt(NONCE, memoryview(b"abcdef")[::2])
    with pytest.raises(BufferError, match="item size 1"):
        cipher.encrypt(NONCE, array.array("I", [1, 2, 3]))
    with pytest.raises(ValueError, match="key must be 32 bytes, got 31"):
        cb3.ChaCha20Blake3(bytes(31))
    with pytest.raises(ValueError, match="nonce must be 24 bytes, got 12"):
        cipher.encrypt(bytes(12), b"")
    with pytest.raises(ValueError, match="buf must be exactly 33 bytes"):
        cipher.encrypt_into(NONCE, b"x", None, bytearray(32))
    with pytest.raises(cb3.DecryptionError):
        cipher.decrypt(NONCE, b"short")
    with pytest.raises(TypeError, match="message_index must be an int"):
        cb3.Stream(KEY, NONCE, message_index=1.0)
    with pytest.raises(ValueError, match="message_index"):
        cb3.Stream(KEY, NONCE, message_index=-1)


def test_buffers_are_released_after_the_call():
    # cb3 holds a bytearray's buffer only during the call: afterwards the
    # bytearray can be resized again (CPython refuses, BufferError, while a
    # view is exported), and the result is what the call saw.
    cipher = cb3.ChaCha20Blake3(KEY)
    data = bytearray(b"y" * 10)
    sealed = cipher.encrypt(NONCE, data)
    data.extend(b"more")
    assert data == b"y" * 10 + b"more"
    assert cipher.decrypt(NONCE, sealed) == b"y" * 10
    buf = bytearray(14 + 32)
    assert cipher.encrypt_into(NONCE, data, None, buf) == 14 + 32
    buf.append(0)
    del data[:]
    assert bytes(buf) == cipher.encrypt(NONCE, b"y" * 10 + b"more") + b"\0"
    assert data == b""


class LyingBytearray(bytearray):
    """len() says more than the storage holds: only the real size may be used."""

    def __len__(self) -> int:
        return 1 << 20


def test_bytearray_routes():
    # Buffers other than bytes are read through views: a shifted storage
    # start, a subclass whose len() lies and a memoryview must all give the
    # bytes route's result, and only the real size may be used.
    cipher = cb3.ChaCha20Blake3(KEY)
    data = bytes(range(200))
    sealed = cipher.encrypt(NONCE, data, b"ad")

    def shifted(content: bytes) -> bytearray:
        moved = bytearray(b"junk" + content)
        del moved[:4]  # storage that starts past the object's first byte
        return moved

    for make in (bytearray, shifted, LyingBytearray, lambda content: memoryview(bytearray(content))):
        assert cipher.encrypt(make(NONCE), make(data), make(b"ad")) == sealed, make
        assert cipher.decrypt(make(NONCE), make(sealed), make(b"ad")) == data, make
    assert cipher.encrypt(NONCE, bytearray(), bytearray()) == cipher.encrypt(NONCE, b"")
    for target in (bytearray(len(sealed)), LyingBytearray(len(sealed))):
        assert cipher.encrypt_into(NONCE, data, b"ad", target) == len(sealed)
        assert bytes(target) == sealed
    target = bytearray(b"junk" + bytes(len(sealed)))
    del target[:4]
    assert cipher.encrypt_into(NONCE, data, b"ad", target) == len(sealed)
    assert bytes(target) == sealed
    with pytest.raises(ValueError, match=f"buf must be exactly {len(sealed)} bytes .*, got {len(sealed) - 1}$"):
        cipher.encrypt_into(NONCE, data, b"ad", LyingBytearray(len(sealed) - 1))
    inplace = LyingBytearray(data)
    tag = cipher.encrypt_in_place(NONCE, inplace, b"ad")
    assert bytes(inplace) + tag == sealed


@pytest.mark.parametrize("code", ["I", "h", "d"])
def test_format_error_names_the_format(code):
    # The message quotes the view's format string, which the view owns: it is
    # copied before the view is released.
    cipher = cb3.ChaCha20Blake3(KEY)
    with pytest.raises(BufferError, match=rf"^data must be a buffer of bytes \(item size 1\), not format '{code}'$"):
        cipher.encrypt(NONCE, array.array(code, [1, 2]))
    with pytest.raises(BufferError, match=rf"^buf must be a buffer of bytes \(item size 1\), not format '{code}'$"):
        cipher.encrypt_into(NONCE, b"", None, array.array(code, [0] * 32))


def test_threads_share_a_cipher():
    cipher = cb3.ChaCha20Blake3(KEY)
    data = bytes(100_000)
    expected = cipher.encrypt(NONCE, data)
    results = []

    def work():
        for _ in range(5):
            results.append(cipher.encrypt(NONCE, data) == expected)

    run_threads([work] * 4)
    assert results == [True] * 20


def test_module_facts():
    ext = cb3._cb3
    assert ext.HPY_ABI in ("cpython", "hybrid")
    assert ext.BUILD_INTERPRETER == guard.interpreter_tag()
    assert cb3.KEY_SIZE == 32 and cb3.NONCE_SIZE == 24 and cb3.TAG_SIZE == 32
    assert cb3.simd_backend()


RESIZE_RACE = r"""
import gc, sys, threading, time
import cb3

cipher = cb3.ChaCha20Blake3(bytes(32))
nonce = bytes(24)
size = 32 << 20
data = bytes(size)
outcomes = {"resized": 0, "refused": 0}

for trial in range(4):
    for target in ("out", "in"):
        buf = bytearray(size + 32)
        src = bytearray(size)
        victim = buf if target == "out" else src
        go = threading.Event()

        def resize():
            go.wait()
            time.sleep(0.001)
            try:
                del victim[:]  # frees the storage cb3 may be using...
                outcomes["resized"] += 1
            except BufferError:
                outcomes["refused"] += 1
            gc.collect()  # ...now

        thread = threading.Thread(target=resize)
        thread.start()
        go.set()
        try:
            if target == "out":
                cipher.encrypt_into(nonce, data, None, buf)
            else:
                cipher.encrypt(nonce, src)
        except (ValueError, BufferError):
            pass  # the buffer was resized before the call borrowed it
        thread.join()
print("survived", outcomes)
"""


def test_concurrent_resize_is_memory_safe():
    # CPython locks an exported bytearray against resizing (BufferError).
    # PyPy does not: a bytearray borrowed through cpyext can be reallocated by
    # another thread, so cb3 must keep the GIL while it holds such a pointer.
    # Before that fix this crashed PyPy (use after free) or lost the output.
    import subprocess

    result = subprocess.run([sys.executable, "-P", "-c", RESIZE_RACE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    assert "survived" in result.stdout


def test_bytes_calls_release_the_gil():
    # bytes in, bytes out: pinned memory, so the GIL is released on both
    # interpreters and another thread keeps running during a long call.
    cipher = cb3.ChaCha20Blake3(KEY)
    data = bytes(64 << 20)
    done = threading.Event()
    spins = 0

    def work():
        cipher.encrypt(NONCE, data)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        spins += 1
    worker.join()
    assert spins > 10_000


class ResizingBytes(bytes):
    """A bytes subclass whose __bytes__ resizes another argument: reading it
    must not run Python code of the subclass while a bytearray argument is
    borrowed (on PyPy nothing stops that resize; the pointer would dangle)."""

    victim = bytearray()
    called = False

    def __bytes__(self) -> bytes:
        ResizingBytes.called = True
        self.victim.extend(bytes(1 << 20))  # moves the victim's storage
        return b"what __bytes__ says"


def test_bytes_subclass_runs_no_python_code():
    cipher = cb3.ChaCha20Blake3(KEY)
    ResizingBytes.victim = nonce = bytearray(NONCE)
    data = ResizingBytes(b"the real content")
    assert cipher.encrypt(nonce, data) == cipher.encrypt(NONCE, b"the real content")
    assert not ResizingBytes.called
    assert bytes(nonce) == NONCE
    assert cb3.keyed_hash(KEY, data) == cb3.keyed_hash(KEY, b"the real content")
    assert not ResizingBytes.called


MADE_IN_A_LOOP = r"""
import sys
import cb3
from cb3.chacha20 import ChaCha20
key, nonce = bytes(32), bytes(8)
make = {"blake3": lambda: cb3.blake3(b"x"), "ChaCha20": lambda: ChaCha20(key, nonce)}[sys.argv[1]]
for _ in range(400_000):
    make()
# This process's peak (not ru_maxrss: Linux carries the parent's over fork and exec).
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))  # KiB
"""


@pytest.mark.skipif(sys.implementation.name != "pypy" or not sys.platform.startswith("linux"),
                    reason="PyPy's collector (CPython frees each object when its last reference goes); "
                           "the peak RSS comes from Linux's /proc")
@pytest.mark.parametrize("kind", ["blake3", "ChaCha20"])
def test_objects_made_in_a_loop_do_not_pile_up(kind):
    """Each object owns Rust memory that PyPy's collector cannot see (a
    blake3 hasher about 2 KiB), and PyPy frees it only at a major
    collection. cext reports each object's size to the collector
    (cext/types.c); without that, 400,000 hashers made and dropped in a loop
    peaked at 648 MB with a 4 MB nursery, and grew past 5 GB with the
    nursery PyPy sizes from a large L3 cache. (On CPython, which frees each
    object at once, the bound would only measure its sanitizer builds.)"""
    import os
    import subprocess

    result = subprocess.run([sys.executable, "-P", "-c", MADE_IN_A_LOOP, kind], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "PYPY_GC_NURSERY": "4M"})
    assert result.returncode == 0, result.stderr
    peak = int(result.stdout) << 10
    assert peak < 160 << 20, f"peak RSS {peak >> 20} MiB for 400,000 {kind} objects made in a loop"
