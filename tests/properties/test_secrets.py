"""Key material: never in a repr, str, exception or pickle, and gone from
the process's memory once the cipher or Stream that held it is freed
(docs/security-testing.md, "Security and testing")."""

from __future__ import annotations

import copy
import ctypes
import gc
import io
import os
import pickle
import platform
import subprocess
import sys
import tempfile
from typing import Any, Callable

import pytest

import cb3

NONCE = bytes(range(40, 64))


def fresh_key() -> bytearray:
    """32 random bytes read straight into a bytearray: no other copy of them
    exists in this process (no bytes object, no buffered reader)."""
    key = bytearray(32)
    with open("/dev/urandom", "rb", buffering=0) as f:
        assert f.readinto(key) == 32
    return key


def objects(key: bytes | bytearray) -> list[Any]:
    return [cb3.ChaCha20Blake3(key), cb3.ChaCha20Blake3(key, max_threads=2), cb3.Stream(key, NONCE)]


def test_not_picklable_with_any_protocol_or_copyable() -> None:
    key = bytes(fresh_key())
    for obj in objects(key):
        name = type(obj).__name__
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises(TypeError, match=f"cannot pickle '.*{name}' object"):
                pickle.dumps(obj, protocol=protocol)
            with pytest.raises(TypeError):
                obj.__reduce_ex__(protocol)
        for clone in (copy.copy, copy.deepcopy):
            with pytest.raises(TypeError):
                clone(obj)


def _exposures(key: bytes) -> list[bytes | str]:
    return [key, key.hex(), key.hex().upper(), repr(key)[2:-1], key[:8], key[-8:]]


def _text_of(obj: Any) -> list[str]:
    return [repr(obj), str(obj), format(obj, ""), repr(dir(obj))]


def test_repr_str_dir_referents_do_not_expose_the_key() -> None:
    key = bytes(fresh_key())
    for obj in objects(key):
        for text in _text_of(obj):
            for exposure in _exposures(key):
                if isinstance(exposure, str):
                    assert exposure not in text
        assert not hasattr(obj, "__dict__") or not obj.__dict__
        for referent in gc.get_referents(obj):
            if isinstance(referent, (bytes, bytearray)):
                assert key[:8] not in referent


def test_exceptions_never_carry_the_key() -> None:
    key = bytes(fresh_key())
    cipher = cb3.ChaCha20Blake3(key)
    stream = cb3.Stream(key, NONCE)
    sealed = cipher.encrypt(NONCE, b"secret message", b"aad")
    calls: list[Callable[[], Any]] = [
        lambda: cb3.ChaCha20Blake3(key[:31]),
        lambda: cb3.ChaCha20Blake3(key + b"\0"),
        lambda: cb3.ChaCha20Blake3(key.hex()),
        lambda: cb3.ChaCha20Blake3(key, max_threads=0),
        lambda: cb3.Stream(key, key),
        lambda: cb3.Stream(key[:16], NONCE),
        lambda: cipher.encrypt(key, b"x"),  # the key as a nonce
        lambda: cipher.decrypt(NONCE, sealed, b"other"),
        lambda: cipher.decrypt_detached(NONCE, sealed[:-32], key[:31]),
        lambda: cipher.decrypt_into(NONCE, sealed, b"aad", bytearray(3)),
        lambda: stream.decrypt(sealed, b"other"),
        lambda: cipher.encrypt(NONCE, b"x", key=key),
    ]
    for call in calls:
        with pytest.raises(Exception) as info:
            call()
        error = info.value
        texts = [str(error), repr(error), repr(error.args), repr(vars(error))]
        for text in texts:
            for exposure in _exposures(key):
                if isinstance(exposure, str):
                    assert exposure not in text, (type(error).__name__, text)
        for arg in error.args:
            if isinstance(arg, (bytes, bytearray)):
                assert key[:8] not in arg


# ---- nothing left in memory -------------------------------------------------

_SCAN_BUFFER = bytearray(16 << 20)


def copies_in_memory(key: bytearray) -> int:
    """How many times the 32 bytes of `key` appear in this process's writable
    memory (heap, stacks, anonymous mappings), the scan buffer aside. The
    needle is never in memory in one piece: its halves are searched for and
    joined."""
    head, tail = bytes(key[:16]), bytes(key[16:])
    view = memoryview(_SCAN_BUFFER)
    found = 0
    # Where the scan buffer lies: it is skipped. Reading it through
    # /proc/self/mem into itself would copy what it still holds of the
    # previous read (perhaps the key) to another offset, and count that.
    buffer_start = ctypes.addressof((ctypes.c_char * len(_SCAN_BUFFER)).from_buffer(_SCAN_BUFFER))
    buffer_end = buffer_start + len(_SCAN_BUFFER)
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if not fields[1].startswith("rw") or hi - lo > 1 << 30:  # ASan's shadow, huge reservations
                continue
            # The parts of [lo, hi) before and after the scan buffer.
            for start, stop in ((lo, min(hi, buffer_start)), (max(lo, buffer_end), hi)):
                found += _count_in(mem, view, start, stop, head, tail)
    ctypes.memset(buffer_start, 0, len(_SCAN_BUFFER))  # no copy of anything stays in it (no 16 MiB temporary)
    return found


def _count_in(mem: Any, view: memoryview, lo: int, hi: int, head: bytes, tail: bytes) -> int:
    found, pos = 0, lo
    while pos < hi:
        n = min(hi - pos, len(_SCAN_BUFFER))
        try:
            mem.seek(pos)
            got = mem.readinto(view[:n]) or 0
        except OSError:
            break
        # A copy straddling two reads is counted by the overlap below.
        i = _SCAN_BUFFER.find(head, 0, got)
        while i != -1:
            if i + 32 <= got and _SCAN_BUFFER[i + 16 : i + 32] == tail:
                found += 1
            i = _SCAN_BUFFER.find(head, i + 1, got)
        pos += max(n - 31, 1) if n == len(_SCAN_BUFFER) else n
    return found


def _scan_possible() -> bool:
    try:
        with open("/proc/self/mem", "rb", buffering=0):
            return sys.platform.startswith("linux")
    except OSError:
        return False


USES: dict[str, Callable[[bytearray], Any]] = {
    "cipher-small-messages": lambda k: _use_cipher(cb3.ChaCha20Blake3(k), [0, 10, 100, 511]),
    "cipher-large-messages": lambda k: _use_cipher(cb3.ChaCha20Blake3(k), [512, 5000, 100_000, 1 << 20]),
    "cipher-max_threads-2": lambda k: _use_cipher(cb3.ChaCha20Blake3(k, max_threads=2), [2 << 20, 64]),
    "cipher-max_threads-AUTO": lambda k: _use_cipher(cb3.ChaCha20Blake3(k, max_threads=cb3.AUTO), [3 << 20]),
    "stream": lambda k: _use_stream(cb3.Stream(k, NONCE)),
    "chacha20": lambda k: _use_chacha(k),
    "keyed-blake3": lambda k: _use_blake3(k, 1),
    "keyed-blake3-max_threads-2": lambda k: _use_blake3(k, 2),
    # One-shot: no object keeps the key, so a hasher stands in for the "alive" check.
    "keyed_hash": lambda k: (cb3.keyed_hash(k, bytes(5000), 100), cb3.keyed_hash(k, bytes(3 << 20)), cb3.blake3(key=k)),
}


def _use_chacha(key: bytearray) -> list[Any]:
    ciphers = [cb3.chacha20.ChaCha20(key, bytes(n)) for n in (8, 12, 24)]
    ciphers.append(cb3.chacha20.ChaCha20(key, bytes(24), rounds=8))
    for cipher in ciphers:
        for size in (1, 64, 100, 5000, 100_000):
            cipher.update(bytes(size))
        cipher.seek(1 << 20)
        cipher.xor_in_place(bytearray(300))
    return ciphers


def _use_blake3(key: bytearray, max_threads: int) -> Any:
    hasher = cb3.blake3(key=key, max_threads=max_threads)
    for size in (0, 1, 64, 1025, 5000, 200_000, 2 << 20):
        hasher.update(bytes(size))
        hasher.digest()
        hasher.digest(length=200, seek=1 << 40)
    copy = hasher.copy()
    copy.update(b"x")
    copy.reset()
    return hasher, copy


def _use_cipher(cipher: cb3.ChaCha20Blake3, sizes: list[int]) -> cb3.ChaCha20Blake3:
    for size in sizes:
        data = bytes(size)
        sealed = cipher.encrypt(NONCE, data, b"aad")
        assert cipher.decrypt(NONCE, sealed, b"aad") == data
        with pytest.raises(cb3.DecryptionError):
            cipher.decrypt(NONCE, sealed, b"wrong")
        buf = bytearray(data)
        tag = cipher.encrypt_in_place(NONCE, buf, None)
        cipher.decrypt_in_place(NONCE, buf, tag, None)
    return cipher


def _use_stream(stream: cb3.Stream) -> cb3.Stream:
    receiver = cb3.Stream(bytes(32), NONCE)
    for size in (0, 100, 5000):
        message = stream.encrypt(bytes(size))
        with pytest.raises(cb3.DecryptionError):
            receiver.decrypt(message)
    return stream


@pytest.mark.skipif(not _scan_possible(), reason="needs Linux /proc/self/mem")
@pytest.mark.skipif(
    platform.python_implementation() == "PyPy",
    reason="PyPy's moving GC keeps copies of the caller's key bytes (nursery, cpyext mirrors) that are not cb3's "
    "to wipe; the scan checks cb3's own memory on CPython and rustlib/tests/zeroize.rs checks it in Rust",
)
@pytest.mark.parametrize("use", sorted(USES))
def test_no_copy_of_the_key_survives_the_object(use: str) -> None:
    """The caller's key is wiped by the caller (a bytearray); the object's
    copy must be the only one while it lives, and none may remain after it
    is freed: not in the object (Rust zeroizes it), nor in any dead stack
    frame or heap block of a call (cb3 wipes every hasher keyed with it)."""
    key = fresh_key()
    obj = USES[use](key)
    scratch = bytearray(key)  # the test's own copy, to search for
    key[:] = bytes(32)  # the caller wipes its copy
    alive = copies_in_memory(scratch) - 1  # minus `scratch`
    assert alive >= 1, "the scanner must see the object's copy"
    del obj
    gc.collect()
    after = copies_in_memory(scratch) - 1
    scratch[:] = bytes(32)
    assert after == 0, f"{after} copies of the key remain in memory after the {use} was freed"


def _message_keys(key: bytearray, nonce: bytes) -> list[bytearray]:
    """[enc_key, auth_key] of (key, nonce), computed in another process and
    read from an unbuffered pipe straight into the returned bytearrays: the
    only raw copies in this process. (Not `bytearray.fromhex`: it builds the
    bytes in a C stack buffer first, a dead copy this test would then find.)"""
    code = "import sys, cb3; k, n = (bytes.fromhex(x) for x in sys.stdin.read().split()); "
    code += "sys.stdout.buffer.write(cb3.blake3(n, key=k).digest(64))"
    keys = [bytearray(32), bytearray(32)]
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
        cwd=tempfile.gettempdir(),  # import the installed cb3, not a checkout's
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{key.hex()} {nonce.hex()}".encode())
        proc.stdin.close()
        for secret in keys:
            view, got = memoryview(secret), 0
            while got < len(secret):
                count = proc.stdout.readinto(view[got:])
                assert count, "the key derivation process ended early"
                got += count
    assert proc.returncode == 0
    return keys


MESSAGE_USES: dict[str, Callable[[bytearray], Any]] = {
    # The direct path (MAC input up to 64 KiB: stack-staged up to one chunk, then the thread's buffer)
    "cipher-small": lambda k: _use_cipher(cb3.ChaCha20Blake3(k), [0, 1, 64, 100, 511, 1000]),
    "cipher-medium": lambda k: _use_cipher(cb3.ChaCha20Blake3(k), [1009, 5000, 65_000]),
    "cipher": lambda k: _use_cipher(cb3.ChaCha20Blake3(k), [512, 5000, 300_000, 1 << 20]),
    "cipher-max_threads-2": lambda k: _use_cipher(cb3.ChaCha20Blake3(k, max_threads=2), [1 << 20, 3 << 20]),
    "stream": lambda k: [cb3.Stream(k, NONCE).encrypt(bytes(size)) for size in (512, 70_000, 1 << 20)],
    "stream-small": lambda k: [cb3.Stream(k, NONCE).encrypt(bytes(size)) for size in (0, 64, 300)],
}


@pytest.mark.skipif(not _scan_possible(), reason="needs Linux /proc/self/mem")
@pytest.mark.skipif(
    platform.python_implementation() == "PyPy",
    reason="the memory scan runs on CPython only (see test_no_copy_of_the_key_survives_the_object)",
)
@pytest.mark.parametrize("use", sorted(MESSAGE_USES))
def test_no_per_message_key_survives_the_call(use: str) -> None:
    """The per-message encryption and MAC keys derived for a message of any
    size (the direct and piecewise paths, multi-threaded included) are gone when the call
    returns, while the object still lives: not in the calling thread's
    stack, not in a pool thread's, not in a freed heap block."""
    key = fresh_key()
    keys = _message_keys(key, NONCE)  # the first message (a Stream's message 0 uses NONCE too)
    obj = MESSAGE_USES[use](key)
    found = {name: copies_in_memory(needle) - 1 for name, needle in zip(("encryption key", "MAC key"), keys)}
    del obj
    # After the scan, copies no longer matter: check the needles were the real keys.
    assert cb3.blake3(NONCE, key=key).digest(64) == keys[0] + keys[1]
    for secret in (*keys, key):
        secret[:] = bytes(len(secret))
    assert found == {"encryption key": 0, "MAC key": 0}, f"per-message keys left in memory after {use}: {found}"


# ---- no plaintext left by the chunked file helpers -----------------------------------


class _NeedleSource:
    """A source whose plaintext is `needle` repeated, copied straight into the
    reader's buffer: no bytes object of it exists in this process."""

    def __init__(self, needle: bytearray, size: int) -> None:
        self.needle, self.left, self.position = memoryview(needle), size, 0

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = min(len(view), self.left)
        done = 0
        while done < n:  # byte p of the plaintext is needle[p % 32]
            at = (self.position + done) % 32
            take = min(32 - at, n - done)
            view[done : done + take] = self.needle[at : at + take]
            done += take
        self.left -= n
        self.position += n
        return n


class _DiscardingSink:
    """Counts what it is given without keeping a copy."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: Any) -> int:
        self.size += len(data)
        return len(data)


def plaintext_left_by_the_file_helpers(threads: int, directory: str) -> int:
    """encrypt_file and decrypt_file, streaming, between regular files and to
    a path, on `threads` threads, over 3 MiB of plaintext that is a 32-byte needle
    repeated; returns how many copies of the needle are left in this
    process's memory afterwards. Run in a fresh process whose malloc keeps
    every freed block mapped (no mmap for large blocks, no trimming), so that
    an unwiped buffer cannot escape the scan by being unmapped when freed."""
    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3
    assert libc.mallopt(m_mmap_threshold, 1 << 30) == 1 and libc.mallopt(m_trim_threshold, 1 << 30) == 1
    key = bytes(fresh_key())
    needle = fresh_key()
    found = 0
    # Two sizes: a short final write (what a buffered output would keep), and one
    # where the streaming decryption's buffers come round to an unwiped one.
    for size in (3 << 20, (3 << 20) + 1000):
        stream = io.BytesIO()
        cb3.encrypt_file(key, _NeedleSource(needle, size), stream, max_threads=threads)
        ciphertext, plaintext = os.path.join(directory, "in.cb3"), os.path.join(directory, "out")
        with open(ciphertext, "wb") as f:
            f.write(stream.getvalue())
        found += copies_in_memory(needle) - 1  # minus `needle`; a later call may reuse (and hide) a block: scan each
        sink = _DiscardingSink()
        assert cb3.decrypt_file(key, io.BytesIO(stream.getvalue()), sink, max_threads=threads) == size == sink.size
        gc.collect()
        found += copies_in_memory(needle) - 1
        # dst unbuffered: a buffered file copies a short write (the last 1000 bytes here) into
        # its own buffer, the caller's, which Python frees unwiped (docs/guides/security.md).
        with open(ciphertext, "rb") as src, open(plaintext, "wb", buffering=0) as dst:  # offsets on 2 threads
            assert cb3.decrypt_file(key, src, dst, max_threads=threads) == size
        gc.collect()
        found += copies_in_memory(needle) - 1
        assert cb3.decrypt_file(key, ciphertext, plaintext, max_threads=threads) == size  # a path: atomic output
        gc.collect()
        found += copies_in_memory(needle) - 1
    with open(plaintext, "rb") as f:  # after the scans: this read buffers plaintext of its own
        assert f.read(32) == needle  # the needle was the plaintext
    needle[:] = bytes(32)
    return found


@pytest.mark.skipif(not _scan_possible(), reason="needs Linux /proc/self/mem")
@pytest.mark.skipif(
    platform.python_implementation() == "PyPy",
    reason="the memory scan runs on CPython only (see test_no_copy_of_the_key_survives_the_object)",
)
@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc mallopt")
@pytest.mark.skipif(
    os.environ.get("HPY", "").startswith("debug"),
    reason="HPy's debug mode copies the raw data of every bytes object it hands out into pages of its own "
    "(raw_data_copy in hpy/debug/src/memprotect.c, to catch use after close) and never wipes them",
)
@pytest.mark.parametrize("threads", [1, 2])
def test_no_plaintext_survives_the_file_helpers(threads: int, tmp_path: Any) -> None:
    """Every plaintext buffer the chunked file helpers allocate is wiped
    before it is freed (plaintext_left_by_the_file_helpers)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import test_secrets; "
        "print(test_secrets.plaintext_left_by_the_file_helpers(int(sys.argv[2]), sys.argv[3]))"
    )
    tests = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run([sys.executable, "-P", "-c", code, tests, str(threads), str(tmp_path)],
                            capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=300)
    assert result.returncode == 0, result.stderr
    found = int(result.stdout)
    assert found == 0, f"{found} copies of plaintext left in memory by the chunked file helpers ({threads} threads)"
