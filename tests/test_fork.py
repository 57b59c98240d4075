"""fork() after use: a child process keeps working with ciphers and streams
made in the parent, including a multi-threaded cipher whose thread pool (in
the parent) has no threads in the child (rustlib/src/parallel.rs rebuilds
pools in a new process). Every wait has a deadline, so a hang fails the test
instead of blocking CI."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Callable

import pytest

import cb3
import reference

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

KEY = bytes(range(7, 39))
NONCE = bytes(range(50, 74))
BIG = 2 << 20  # 2 MiB: split across threads when max_threads > 1
DEADLINE = 30.0  # seconds; a healthy child takes well under one


def _wait(pid: int, deadline: float = DEADLINE) -> int:
    """The child's exit code; kills it and fails if it is not done in time."""
    end = time.monotonic() + deadline
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"forked child {pid} still running after {deadline:.0f} s (hung)")
        time.sleep(0.01)


def _in_child(work: Callable[[], None]) -> int:
    """Runs `work` in a forked child; returns its exit code (0: success)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            work()
            code = 0
        except BaseException as e:  # reported through the exit code and stderr
            try:
                print(f"child failed: {e!r}", file=sys.stderr, flush=True)
            finally:
                code = 2
        finally:
            os._exit(code)
    return _wait(pid)


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
        # The stream continues at the parent's index, in the child's copy.
        if stream.message_index != 1:
            raise AssertionError(f"stream index {stream.message_index}")
        receiver = cb3.Stream(KEY, NONCE)
        if receiver.decrypt(first) != small:
            raise AssertionError("stream message 0")
        if receiver.decrypt(stream.encrypt(data)) != data:
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
