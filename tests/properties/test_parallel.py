"""max_threads: one message split across threads gives the same bytes."""

from __future__ import annotations

import os

import pytest

import cb3
import reference

ONE_MIB = 1 << 20
KEY = bytes(range(100, 132))
NONCE = bytes(range(7, 31))


@pytest.mark.parametrize("size", [ONE_MIB - 1, ONE_MIB, ONE_MIB + 1, ONE_MIB + 63, ONE_MIB + 64, 3 * ONE_MIB + 17])
@pytest.mark.parametrize("max_threads", [2, 3, cb3.AUTO])
def test_split_output_is_identical(size: int, max_threads: int) -> None:
    data = os.urandom(size)
    aad = os.urandom(size % 50)
    single = cb3.ChaCha20Blake3(KEY)
    split = cb3.ChaCha20Blake3(KEY, max_threads=max_threads)
    sealed = single.encrypt(NONCE, data, aad)
    assert split.encrypt(NONCE, data, aad) == sealed
    assert split.decrypt(NONCE, sealed, aad) == data
    out = bytearray(size)
    assert split.decrypt_into(NONCE, sealed, aad, out) == size and out == data
    buf = bytearray(data)
    assert split.encrypt_in_place(NONCE, buf, aad) == sealed[size:]
    assert buf == sealed[:size]
    forged = bytearray(sealed)
    forged[size // 2] ^= 0x10
    sentinel = bytearray(b"\xa5" * size)
    with pytest.raises(cb3.DecryptionError):
        split.decrypt_into(NONCE, forged, aad, sentinel)
    assert sentinel == b"\xa5" * size


def test_split_matches_independent_reference() -> None:
    data = os.urandom(2 * ONE_MIB + 5)
    assert cb3.ChaCha20Blake3(KEY, max_threads=2).encrypt(NONCE, data, b"x") == reference.encrypt(
        KEY, NONCE, data, b"x"
    )


@pytest.mark.parametrize("bad", [0, -2, 2**70])
def test_bad_thread_counts_are_value_errors(bad: int) -> None:
    with pytest.raises(ValueError, match="max_threads"):
        cb3.ChaCha20Blake3(KEY, max_threads=bad)


@pytest.mark.parametrize("bad", ["2", 2.0, None, True])
def test_thread_count_must_be_an_int(bad: object) -> None:
    with pytest.raises(TypeError, match="max_threads"):
        cb3.ChaCha20Blake3(KEY, max_threads=bad)  # type: ignore[arg-type]


def test_max_threads_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        cb3.ChaCha20Blake3(KEY, 2)  # type: ignore[misc]
    assert cb3.AUTO == -1


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in Linux /proc/self/task")
def test_pools_are_capped_at_the_cores_and_freed_when_unused() -> None:
    """max_threads is capped at the usable cores, objects with the same
    (capped) count share one pool, and a pool ends with its last user: 24
    ciphers and 24 hashers with distinct max_threads once left 324 threads
    per kind behind, and max_threads=500 started 500 threads on 2 cores."""
    import gc
    import time

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    data = bytes(ONE_MIB)
    gc.collect()
    before = _thread_count()
    users: list[object] = []
    for n in range(2, 26):
        cipher = cb3.ChaCha20Blake3(KEY, max_threads=n)
        assert cipher.decrypt(NONCE, cipher.encrypt(NONCE, data)) == data
        hasher = cb3.blake3(max_threads=n)
        hasher.update(data)
        users += [cipher, hasher]
    # At most one pool per count from 2 to the number of cores.
    assert _thread_count() - before <= cores * (cores + 1) // 2
    huge = cb3.ChaCha20Blake3(KEY, max_threads=500)
    huge.encrypt(NONCE, data)
    assert _thread_count() - before <= cores * (cores + 1) // 2
    del users, cipher, hasher, huge
    deadline = time.monotonic() + 10
    while True:
        gc.collect()
        if _thread_count() <= before or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert _thread_count() <= before, "pools of freed ciphers and hashers kept their threads"
