"""No reference or memory leaks: RSS and tracemalloc stay flat over many
mixed calls (successes, failures, exceptions, every method, Stream), and
calls leave the reference counts of their arguments unchanged."""

from __future__ import annotations

import functools
import gc
import platform
import sys
from typing import Any, Callable

import numpy as np
import psutil
import pytest

import cb3
from helpers import MEASUREMENTS, seeded

KEY = bytes(range(60, 92))
NONCE = bytes(range(10, 34))
AAD = b"leak-check header"

pytestmark = pytest.mark.memory


def expect(exc: type[BaseException], fn: Callable[[], Any]) -> Callable[[], None]:
    """A call for the mixed workloads below that must raise `exc`."""

    def run() -> None:
        try:
            fn()
        except exc:
            return
        raise AssertionError("no exception")  # pragma: no cover

    return run


def stream_round(pt: bytes, aad: bytes, nonce: bytes, forged: bytes) -> None:
    """A Stream sender and receiver: one message sealed, a forgery refused,
    then the message opened."""
    # The receiver's index is passed as a keyword: tp_new's keyword path too.
    sender, receiver = cb3.Stream(KEY, nonce), cb3.Stream(KEY, nonce, message_index=0)
    sealed = sender.encrypt(pt, aad)
    try:
        receiver.decrypt(forged, aad)
    except cb3.DecryptionError:
        pass
    receiver.decrypt(sealed, aad)


def _mixed_operations() -> list[Callable[[], Any]]:
    """A fixed set of calls: successes and every kind of failure."""
    c = cb3.ChaCha20Blake3(KEY)
    small = bytes(range(100))
    big = bytes(5000)  # above the GIL threshold
    sealed_small = c.encrypt(NONCE, small, AAD)
    sealed_big = c.encrypt(NONCE, big, AAD)
    bad = sealed_small[:-1] + bytes([sealed_small[-1] ^ 1])
    ct, tag = sealed_small[:-32], sealed_small[-32:]
    out_small = bytearray(len(small) + 32)
    out_plain = bytearray(len(small))
    in_place = bytearray(small)
    arr = np.zeros(len(big) + 32, dtype=np.uint8)
    view = memoryview(bytearray(sealed_big))

    def in_place_round() -> None:
        t = c.encrypt_in_place(NONCE, in_place, AAD)
        c.decrypt_in_place(NONCE, in_place, t, AAD)

    def exhausted() -> None:
        s = cb3.Stream(KEY, NONCE, message_index=2**64 - 2)
        s.encrypt(b"")
        try:
            s.encrypt(small)
        except OverflowError:
            pass

    return [
        lambda: c.encrypt(NONCE, small, AAD),
        lambda: c.encrypt(NONCE, big),
        lambda: c.decrypt(NONCE, sealed_small, AAD),
        lambda: c.decrypt(NONCE, view, AAD),
        expect(cb3.DecryptionError, lambda: c.decrypt(NONCE, bad, AAD)),
        expect(cb3.DecryptionError, lambda: c.decrypt(NONCE, b"short")),
        lambda: c.encrypt_detached(NONCE, small, AAD),
        lambda: c.decrypt_detached(NONCE, ct, tag, AAD),
        expect(cb3.DecryptionError, lambda: c.decrypt_detached(NONCE, ct, bytes(32), AAD)),
        lambda: c.encrypt_into(NONCE, small, AAD, out_small),
        lambda: c.decrypt_into(NONCE, sealed_small, AAD, out_plain),
        expect(cb3.DecryptionError, lambda: c.decrypt_into(NONCE, bad, AAD, out_plain)),
        lambda: c.encrypt_into(NONCE, big, None, arr),
        in_place_round,
        expect(cb3.DecryptionError, lambda: c.decrypt_in_place(NONCE, bytearray(ct), bytes(32), AAD)),
        expect(ValueError, lambda: c.encrypt(NONCE[:-1], small)),
        expect(ValueError, lambda: c.decrypt_detached(NONCE, ct, tag[:-1])),
        expect(ValueError, lambda: c.encrypt_into(NONCE, small, AAD, out_plain)),
        expect(ValueError, lambda: c.encrypt_into(NONCE, memoryview(out_small)[1:101], AAD, out_small)),
        expect(TypeError, lambda: c.encrypt(NONCE, "text")),
        expect(TypeError, lambda: c.encrypt(NONCE, small, associated_date=AAD)),
        expect(TypeError, lambda: c.encrypt(NONCE, small, AAD, nonce=NONCE)),
        expect(TypeError, lambda: c.encrypt_in_place(NONCE, small)),
        expect(BufferError, lambda: c.encrypt(NONCE, memoryview(small)[::2])),
        expect(BufferError, lambda: c.encrypt(NONCE, np.zeros(4, dtype=np.int32))),
        lambda: cb3.ChaCha20Blake3(KEY),
        lambda: cb3.ChaCha20Blake3(key=bytearray(KEY)),
        expect(ValueError, lambda: cb3.ChaCha20Blake3(KEY[:5])),
        expect(TypeError, lambda: cb3.ChaCha20Blake3(KEY, key=KEY)),
        expect(TypeError, lambda: cb3.Stream(KEY, NONCE, message_index="0")),
        expect(ValueError, lambda: cb3.Stream(KEY, NONCE, message_index=-1)),
        expect(TypeError, lambda: cb3.Stream(KEY, NONCE, bogus=1)),
        functools.partial(stream_round, small, AAD, NONCE, bad),
        exhausted,
    ]


def _run(ops: list[Callable[[], Any]], total: int) -> None:
    n = len(ops)
    for i in range(total):
        ops[i % n]()


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _settled_growth(one_round: Callable[[], Any], bound: int) -> list[int]:
    """RSS growth in bytes over `one_round()`, once on CPython. PyPy's GC heap
    and JIT keep growing for a while after any warm-up, then level off
    (measured: +2.6 MB, then +0.1 MB, then 0 per 100,000 rounds of
    test_objects_freed), while a leak grows by the same amount every round;
    so PyPy gets up to four rounds to show one below `bound`. The caller
    asserts on the smallest."""
    growth: list[int] = []
    for _ in range(4 if platform.python_implementation() == "PyPy" else 1):
        before = _rss()
        one_round()
        gc.collect()
        growth.append(_rss() - before)
        if growth[-1] < bound:
            break
    return growth


def _rss_growth(ops: list[Callable[[], Any]], warm_up: int, calls: int, bound: int) -> list[int]:
    """RSS growth in bytes over `calls` calls (per round, _settled_growth),
    after `warm_up` calls have filled the allocator pools, caches and
    freelists."""
    _run(ops, warm_up)
    gc.collect()
    return _settled_growth(lambda: _run(ops, calls), bound)


def test_rss_stable_over_200k_calls() -> None:
    # Flat in practice (0 bytes); a leak of even 3 bytes per call would add
    # more than this bound in every round.
    bound = 512 * 1024
    growth = _rss_growth(_mixed_operations(), warm_up=30_000, calls=200_000, bound=bound)
    assert min(growth) < bound, f"RSS grew by {growth} bytes"


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="tracemalloc is CPython's (PyPy has no _tracemalloc)")
def test_tracemalloc_stable() -> None:
    import tracemalloc

    ops = _mixed_operations()
    _run(ops, 5_000)
    gc.collect()
    tracemalloc.start()
    try:
        _run(ops, 2_000)
        gc.collect()
        first = tracemalloc.take_snapshot()
        _run(ops, 1_000 * len(ops))  # every operation 1,000 times
        gc.collect()
        second = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = second.filter_traces(filters).compare_to(first.filter_traces(filters), "lineno")
    growth = sum(stat.size_diff for stat in diff)
    count = sum(stat.count_diff for stat in diff)
    # Flat in practice (0 blocks); one object leaked by any single operation
    # would add about 1,000 blocks.
    assert growth < 16 * 1024, [str(s) for s in diff[:5]]
    assert count < 200, [str(s) for s in diff[:5]]


@pytest.mark.skipif(not hasattr(sys, "getrefcount"), reason="reference counts are CPython's (PyPy has a moving GC)")
def test_argument_refcounts_unchanged() -> None:
    key = bytes(range(32))
    nonce = bytes(range(24))
    data_bytes = b"some plaintext" * 200
    data_ba = bytearray(data_bytes)
    data_mv = memoryview(data_ba)
    aad = b"associated" * 3
    c = cb3.ChaCha20Blake3(key)
    sealed = c.encrypt(nonce, data_bytes, aad)
    ct, tag = sealed[:-32], sealed[-32:]
    bad_tag = bytes(32)
    out = bytearray(len(data_bytes) + 32)
    plain_out = bytearray(len(data_bytes))
    in_place = bytearray(data_bytes)
    stream_key = bytearray(key)
    text = "not bytes"
    index = 12345678901234
    objects = [key, nonce, data_bytes, data_ba, data_mv, aad, sealed, ct, tag, bad_tag, out, plain_out,
               in_place, stream_key, text, index, c, cb3.DecryptionError]
    # Interned keyword names and None must not leak either.
    names = ["nonce", "data", "associated_data", "buf", "tag", "key", "message_index"]

    def work() -> None:
        for _ in range(300):
            c.encrypt(nonce, data_bytes, aad)
            c.encrypt(nonce=nonce, data=data_ba, associated_data=aad)
            c.encrypt(nonce, data_mv, associated_data=None)
            c.decrypt(nonce, sealed, aad)
            c.encrypt_detached(nonce, data_ba, aad)
            c.decrypt_detached(nonce=nonce, data=ct, tag=tag, associated_data=aad)
            c.encrypt_into(nonce, data_mv, aad, out)
            c.decrypt_into(nonce=nonce, data=sealed, associated_data=aad, buf=plain_out)
            t = c.encrypt_in_place(nonce, in_place, aad)
            c.decrypt_in_place(nonce, in_place, t, aad)
            for call, exc in (
                (lambda: c.decrypt_detached(nonce, ct, bad_tag, aad), cb3.DecryptionError),
                (lambda: c.decrypt_in_place(nonce, in_place, bad_tag, aad), cb3.DecryptionError),
                (lambda: c.decrypt_into(nonce, sealed, None, plain_out), cb3.DecryptionError),
                (lambda: c.encrypt(nonce, text), TypeError),
                (lambda: c.encrypt(text, data_bytes), TypeError),
                (lambda: c.encrypt(nonce, data_bytes, aad, nonce=nonce), TypeError),
                (lambda: c.encrypt(nonce, data_bytes, associated_date=aad), TypeError),
                (lambda: c.encrypt_into(nonce, data_bytes, aad, plain_out), ValueError),
                (lambda: cb3.ChaCha20Blake3(key, key=key), TypeError),
                (lambda: cb3.ChaCha20Blake3(nonce), ValueError),
                (lambda: cb3.Stream(key=key, nonce=nonce, message_index=text), TypeError),
                (lambda: cb3.Stream(key, nonce, message_index=-index), ValueError),
            ):
                try:
                    call()
                except exc:
                    pass
            s = cb3.Stream(key=stream_key, nonce=nonce, message_index=index)
            s.encrypt(data_bytes, aad)
            r = cb3.Stream(stream_key, nonce, message_index=index)
            try:
                r.decrypt(sealed, aad)
            except cb3.DecryptionError:
                pass
            cb3.ChaCha20Blake3(key=key)

    work()  # warm-up
    gc.collect()
    before = [sys.getrefcount(o) for o in objects]
    before_names = [sys.getrefcount(n) for n in names]
    before_none = sys.getrefcount(None)
    work()
    gc.collect()
    after = [sys.getrefcount(o) for o in objects]
    after_names = [sys.getrefcount(n) for n in names]
    assert after == before
    assert after_names == before_names
    # None's count moves with unrelated interpreter activity; a leak of one
    # reference per call would add thousands.
    assert abs(sys.getrefcount(None) - before_none) < 500


def test_objects_freed() -> None:
    """Ciphers and streams are freed, and their Rust state with them."""
    gc.collect()
    before_objs = len(gc.get_objects())
    ops = [lambda: cb3.ChaCha20Blake3(KEY).encrypt(NONCE, b"x"), lambda: cb3.Stream(KEY, NONCE).encrypt(b"y")]
    _run(ops, 20_000)
    gc.collect()
    growth = _settled_growth(lambda: _run(ops, 100_000), 1024 * 1024)
    assert len(gc.get_objects()) - before_objs < 100
    # 50,000 leaked Rust boxes of >= 32 bytes would be well over 1.5 MB.
    assert min(growth) < 1024 * 1024, growth


def _random_size_operations(seed: int) -> list[Callable[[], Any]]:
    """Calls on messages of random sizes (0 B to 70 KB, both sides of the
    512-byte and 2048-byte cut-offs): every method, successes, failing
    decrypts, argument errors, Streams; in a shuffled order."""
    rng = seeded(seed)
    c = cb3.ChaCha20Blake3(KEY)
    sizes = [rng.choice([0, 1, 31, 32, 33, 64, 100, 255, 511, 512, 513, 1000, 2047, 2048, 4096]) for _ in range(40)]
    sizes += [rng.randrange(0, 70_000) for _ in range(4)]
    ops: list[Callable[[], Any]] = []

    for size in sizes:
        pt = rng.randbytes(size)
        aad = rng.randbytes(rng.choice([0, 5, 40]))
        nonce = rng.randbytes(24)
        sealed = c.encrypt(nonce, pt, aad)
        ct, tag = sealed[:-32], sealed[-32:]
        forged = sealed[:-1] + bytes([sealed[-1] ^ 0x40])
        out = bytearray(size + 32)
        plain = bytearray(size)
        buf = bytearray(pt)

        def in_place(buf: bytearray = buf, nonce: bytes = nonce, aad: bytes = aad) -> None:
            t = c.encrypt_in_place(nonce, buf, aad)
            c.decrypt_in_place(nonce, buf, t, aad)

        ops += [
            lambda pt=pt, aad=aad, nonce=nonce: c.encrypt(nonce, pt, aad),
            lambda s=sealed, aad=aad, nonce=nonce: c.decrypt(nonce, s, aad),
            expect(cb3.DecryptionError, lambda f=forged, aad=aad, nonce=nonce: c.decrypt(nonce, f, aad)),
            expect(cb3.DecryptionError, lambda f=forged, aad=aad, nonce=nonce, o=plain: c.decrypt_into(nonce, f, aad, o)),
            lambda pt=pt, aad=aad, nonce=nonce: c.encrypt_detached(nonce, pt, aad),
            lambda ct=ct, tag=tag, aad=aad, nonce=nonce: c.decrypt_detached(nonce, ct, tag, aad),
            lambda pt=pt, aad=aad, nonce=nonce, o=out: c.encrypt_into(nonce, pt, aad, o),
            lambda s=sealed, aad=aad, nonce=nonce, o=plain: c.decrypt_into(nonce, s, aad, o),
            in_place,
            functools.partial(stream_round, pt, aad, nonce, forged),
            expect(ValueError, lambda pt=pt: c.encrypt(NONCE[:-1], pt)),
            expect(ValueError, lambda s=sealed, o=out: c.decrypt_into(NONCE, s, None, o)),
            expect(TypeError, lambda pt=pt: c.encrypt(NONCE, pt, associated_date=AAD)),
            expect(TypeError, lambda: c.encrypt(NONCE, "text")),
            expect(BufferError, lambda o=out: c.encrypt_into(NONCE, b"", None, memoryview(o)[::2])),
        ]
    rng.shuffle(ops)
    return ops


@pytest.mark.slow
@pytest.mark.skipif(
    platform.python_implementation() == "PyPy",
    reason="PyPy's GC heap keeps growing for a while (see test_objects_freed); the 1 MiB bound is CPython's",
)
def test_rss_stable_over_1m_random_size_calls() -> None:
    """1,000,000 mixed calls (random sizes, failing decrypts, exceptions):
    RSS grows by less than 1 MiB. The figure is printed at the end of the run."""
    (growth,) = _rss_growth(_random_size_operations(2024), warm_up=100_000, calls=1_000_000, bound=1024 * 1024)
    MEASUREMENTS["leak check: RSS growth over 1,000,000 mixed calls"] = f"{growth} bytes (bound 1 MiB)"
    assert growth < 1024 * 1024, f"RSS grew by {growth} bytes"
