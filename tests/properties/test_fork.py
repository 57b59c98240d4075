"""fork() after use: a child process keeps working with ciphers and hashers
made in the parent, including a multi-threaded cipher whose thread pool (in
the parent) has no threads in the child (rustlib/core/src/parallel.rs rebuilds
pools in a new process). Objects whose state would repeat a nonce in the
child (Stream, the raw ChaCha20) refuse to work there, and nothing blocks on
a lock that a parent's thread held at the fork (rustlib/src/object.rs).
Every wait has a deadline, so a hang fails the test instead of blocking
CI."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import cb3
import cb3.chacha20
import reference
from helpers import FORK_DEADLINE as DEADLINE
from helpers import in_child as _in_child
from helpers import run_in_child as _run_in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

KEY = bytes(range(7, 39))
NONCE = bytes(range(50, 74))
BIG = 2 << 20  # 2 MiB: split across threads when max_threads > 1


def _check(cipher: cb3.ChaCha20Blake3, data: bytes, aad: bytes) -> None:
    sealed = cipher.encrypt(NONCE, data, aad)
    if cipher.decrypt(NONCE, sealed, aad) != data:
        raise AssertionError("round trip failed")
    forged = bytearray(sealed)
    forged[len(forged) // 2] ^= 1
    try:
        cipher.decrypt(NONCE, forged, aad)
    except cb3.DecryptionError:
        pass
    else:
        raise AssertionError("forged message decrypted")


def test_fork_after_use_single_and_multi_threaded() -> None:
    data = os.urandom(BIG)
    small = os.urandom(1000)
    single = cb3.ChaCha20Blake3(KEY)
    multi = cb3.ChaCha20Blake3(KEY, max_threads=2)
    stream = cb3.Stream(KEY, NONCE)
    # Use everything in the parent first: the 2-thread pool now exists here.
    expected = single.encrypt(NONCE, data, b"aad")
    assert multi.encrypt(NONCE, data, b"aad") == expected
    first = stream.encrypt(small)

    def child() -> None:
        _check(single, small, b"x")
        _check(single, data, b"x")
        _check(multi, data, b"aad")  # hangs if the parent's pool is reused
        if multi.encrypt(NONCE, data, b"aad") != expected:
            raise AssertionError("multi-threaded output differs in the child")
        auto = cb3.ChaCha20Blake3(KEY, max_threads=cb3.AUTO)
        if auto.encrypt(NONCE, data, b"aad") != expected:
            raise AssertionError("AUTO output differs in the child")
        # The child sees the parent's stream index but may not go on with it
        # (test_stream_refuses_in_child); a stream made here works.
        if stream.message_index != 1:
            raise AssertionError(f"stream index {stream.message_index}")
        receiver = cb3.Stream(KEY, NONCE)
        if receiver.decrypt(first) != small:
            raise AssertionError("stream message 0")
        sender = cb3.Stream(KEY, NONCE, message_index=1)
        if receiver.decrypt(sender.encrypt(data)) != data:
            raise AssertionError("stream message 1")

    assert _in_child(child) == 0
    # The parent is unaffected: its pool still works and its stream did not move.
    assert multi.encrypt(NONCE, data, b"aad") == expected
    assert stream.message_index == 1


def test_fork_twice_grandchild() -> None:
    """A pool built in the child is itself stale in a grandchild."""
    data = os.urandom(BIG)
    multi = cb3.ChaCha20Blake3(KEY, max_threads=2)
    expected = reference.encrypt(KEY, NONCE, data, b"")
    assert multi.encrypt(NONCE, data) == expected

    def grandchild() -> None:
        if multi.encrypt(NONCE, data) != expected:
            raise AssertionError("grandchild output differs")

    def child() -> None:
        if multi.encrypt(NONCE, data) != expected:
            raise AssertionError("child output differs")
        code = _in_child(grandchild)
        if code != 0:
            raise AssertionError(f"grandchild exit code {code}")
        if multi.encrypt(NONCE, data) != expected:
            raise AssertionError("child output differs after its fork")

    assert _in_child(child) == 0


def test_fork_before_first_parallel_use() -> None:
    """A cipher made (but never used with a large message) before the fork."""
    data = os.urandom(BIG)
    multi = cb3.ChaCha20Blake3(KEY, max_threads=3)
    expected = cb3.ChaCha20Blake3(KEY).encrypt(NONCE, data)

    def child() -> None:
        if multi.encrypt(NONCE, data) != expected:
            raise AssertionError("output differs")

    assert _in_child(child) == 0
    assert multi.encrypt(NONCE, data) == expected


# ---- state that must not be shared: Stream and the raw ChaCha20 ----------


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def test_stream_refuses_in_child_no_two_time_pad() -> None:
    """Before the fix, parent and child both encrypted message 1 under the
    same nonce: XORing the two ciphertexts with the parent's (known)
    plaintext recovered the child's secret. Now the child refuses."""
    stream = cb3.Stream(KEY, NONCE)
    stream.encrypt(b"message 0, before the fork")
    child_secret = b"the child's secret message, never shown to anyone"
    code, child_out = _run_in_child(lambda: stream.encrypt(child_secret))
    assert code == 0
    parent_plain = b"a message the attacker knows....................."
    parent_out = stream.encrypt(parent_plain)
    recovered = _xor(_xor(parent_out[: len(parent_plain)], child_out[: len(parent_plain)]), parent_plain)
    assert recovered != child_secret, "two-time pad: the child's plaintext was recovered from the two ciphertexts"
    message = child_out.decode()
    assert message.startswith("raised: this cb3.Stream was created in another process and cannot be used after fork()")
    assert "create a new Stream with a fresh nonce" in message
    assert stream.message_index == 2  # the parent goes on
    # Decrypting is refused in the child too (the object's state is the parent's).
    receiver = cb3.Stream(KEY, NONCE)
    code, out = _run_in_child(lambda: receiver.decrypt(parent_out))
    assert code == 0 and out.startswith(b"raised: this cb3.Stream")


def test_raw_chacha20_refuses_in_child_no_keystream_reuse() -> None:
    for nonce in (bytes(8), bytes(12), bytes(24)):
        cipher = cb3.chacha20.ChaCha20(KEY, nonce)
        cipher.update(b"x" * 100)
        child_secret = b"the child's secret: never XOR two plaintexts with one keystream"
        code, child_out = _run_in_child(lambda: cipher.update(child_secret))
        assert code == 0
        parent_plain = bytes(len(child_secret))  # zeros: the parent's output IS the keystream
        parent_out = cipher.update(parent_plain)
        assert _xor(parent_out, child_out) != child_secret, "keystream reused: child's plaintext recovered"
        assert child_out.startswith(b"raised: this cb3.chacha20.ChaCha20 was created in another process")
        assert b"create a new ChaCha20 with a fresh nonce" in child_out
        for use in (lambda: cipher.seek(0) or b"", lambda: bytes(cipher.xor_in_place(bytearray(3)) or b"")):
            code, out = _run_in_child(use)
            assert code == 0 and out.startswith(b"raised: this cb3.chacha20.ChaCha20"), out
        # Reading the position uses no keystream: allowed (the position at the fork).
        position = cipher.position
        code, out = _run_in_child(lambda: str(cipher.position).encode())
        assert (code, out) == (0, str(position).encode())


def test_objects_made_in_the_child_work() -> None:
    def child() -> bytes:
        stream = cb3.Stream(KEY, NONCE)
        cipher = cb3.chacha20.ChaCha20(KEY, bytes(12))
        return stream.encrypt(b"abc") + cipher.update(b"abc")

    code, out = _run_in_child(child)
    assert code == 0
    assert out == cb3.Stream(KEY, NONCE).encrypt(b"abc") + cb3.chacha20.ChaCha20(KEY, bytes(12)).update(b"abc")


def test_hasher_moves_to_the_child_when_idle() -> None:
    """A hasher nobody was using at the fork works in the child (hashing the
    same prefix twice reuses no secret), and so do its copies."""
    hasher = cb3.blake3(b"shared prefix ", key=KEY)
    expected = cb3.blake3(b"shared prefix child", key=KEY).digest()

    def child() -> bytes:
        copy = hasher.copy()
        hasher.update(b"child")
        return hasher.digest() + copy.update(b"child").digest()

    code, out = _run_in_child(child)
    assert code == 0 and out == expected * 2
    assert hasher.digest() == cb3.blake3(b"shared prefix ", key=KEY).digest()


# ---- a lock held by a parent's thread at the fork -------------------------


def test_hasher_locked_by_a_parent_thread_at_fork(tmp_path: Path) -> None:
    """A thread of the parent is inside update_mmap() of a FIFO (holding the
    hasher's lock, blocked for input) when the process forks. That thread
    does not exist in the child, so the lock is never released there: the
    child must get RuntimeError, not block forever (it did before)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hasher = cb3.blake3()
    reader = threading.Thread(target=hasher.update_mmap, args=(str(fifo),))
    reader.start()
    time.sleep(0.3)  # the reader is blocked in open(), the lock held
    try:
        for use in (hasher.digest, hasher.copy, lambda: hasher.update(b"x"), hasher.reset):
            code, out = _run_in_child(lambda: bytes(0) if use() is None else b"no error")
            assert code == 0
            assert out.startswith(b"raised: this cb3.blake3 hasher was in use by another thread when the process forked")
    finally:
        with open(fifo, "wb") as f:
            f.write(b"abc")
        reader.join(DEADLINE)
    assert hasher.digest() == cb3.blake3(b"abc").digest()


@pytest.mark.parametrize("kind", ["Stream", "ChaCha20"])
def test_no_hang_when_a_parent_thread_holds_the_lock(kind: str) -> None:
    """A parent thread keeps the object busy (large calls, the GIL released,
    the lock held most of the time) while the process forks: the child's
    call must return at once (RuntimeError), never wait for that lock."""
    big = bytearray(32 << 20)
    if kind == "Stream":
        obj = cb3.Stream(KEY, NONCE)
        busy, small = (lambda: obj.encrypt(big)), (lambda: obj.encrypt(b"x"))
    else:
        obj = cb3.chacha20.ChaCha20(KEY, bytes(8))
        busy, small = (lambda: obj.xor_in_place(big)), (lambda: obj.update(b"x"))
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            busy()
            # On PyPy large calls keep the GIL (its buffers are not pinned):
            # let the main thread run between them.
            time.sleep(0.001)

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        time.sleep(0.05)
        for _ in range(3):
            start = time.monotonic()
            code, out = _run_in_child(small)
            assert code == 0 and out.startswith(b"raised: this cb3."), out
            assert time.monotonic() - start < DEADLINE
    finally:
        stop.set()
        worker.join(DEADLINE)
