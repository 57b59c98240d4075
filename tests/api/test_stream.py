"""cb3.Stream: the counter-nonce schedule, ordering, exhaustion, threads."""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest

import cb3
import reference
from helpers import run_threads, seeded

KEY = bytes(range(7, 39))
NONCE = bytes(range(24))
MAX = 2**64 - 1


def nonce_with_suffix(suffix: int, prefix: bytes = bytes(range(50, 66))) -> bytes:
    return prefix + suffix.to_bytes(8, "little")


@pytest.mark.parametrize(
    "base",
    [0, 1, 2**32 - 1, 2**63, 2**64 - 3, 2**64 - 2, 2**64 - 1],
    ids=lambda b: hex(b),
)
def test_schedule_matches_reference_with_wraparound(base: int) -> None:
    nonce = nonce_with_suffix(base)
    stream = cb3.Stream(KEY, nonce)
    cipher = cb3.ChaCha20Blake3(KEY)
    rng = seeded(base % 1000)
    for i in range(8):
        pt = rng.randbytes(rng.randrange(0, 300))
        expected_nonce = reference.stream_nonce(nonce, i)
        # The suffix is the little-endian base + i, wrapping past 2**64.
        assert expected_nonce[:16] == nonce[:16]
        assert int.from_bytes(expected_nonce[16:], "little") == (base + i) % 2**64
        out = stream.encrypt(pt)
        assert out == reference.encrypt(KEY, expected_nonce, pt)
        assert out == cipher.encrypt(expected_nonce, pt)
        assert stream.message_index == i + 1


def test_message_zero_uses_the_nonce_unchanged() -> None:
    assert cb3.Stream(KEY, NONCE).encrypt(b"m0", b"h") == cb3.ChaCha20Blake3(KEY).encrypt(NONCE, b"m0", b"h")


def test_suffix_only_low_8_bytes_change() -> None:
    # Wrapping the suffix never carries into the 16-byte prefix.
    prefix = b"\xff" * 16
    nonce = prefix + (MAX).to_bytes(8, "little")
    stream = cb3.Stream(KEY, nonce)
    stream.encrypt(b"")
    c = cb3.ChaCha20Blake3(KEY)
    assert stream.encrypt(b"x") == c.encrypt(prefix + bytes(8), b"x")
    assert stream.encrypt(b"y") == c.encrypt(prefix + (1).to_bytes(8, "little"), b"y")


def test_resume_at_message_index() -> None:
    sender = cb3.Stream(KEY, NONCE)
    outs = [sender.encrypt(bytes([i]) * i, b"aad%d" % i) for i in range(10)]
    for start in (0, 3, 9):
        receiver = cb3.Stream(KEY, NONCE, message_index=start)
        assert receiver.message_index == start
        for i in range(start, 10):
            assert receiver.decrypt(outs[i], b"aad%d" % i) == bytes([i]) * i
        assert receiver.message_index == 10
    resumed = cb3.Stream(KEY, NONCE, message_index=5)
    assert resumed.encrypt(bytes([5]) * 5, b"aad5") == outs[5]


def test_per_message_aad() -> None:
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    msgs = [(b"payload %d" % i, b"header %d" % i if i % 3 else None) for i in range(12)]
    outs = [sender.encrypt(pt, aad) for pt, aad in msgs]
    for (pt, aad), out in zip(msgs, outs):
        wrong = (aad or b"") + b"!"
        with pytest.raises(cb3.DecryptionError):
            receiver.decrypt(out, wrong)
        assert receiver.decrypt(out, aad) == pt
    assert receiver.message_index == 12


def test_out_of_order_fails_without_advancing() -> None:
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    outs = [sender.encrypt(b"message %d" % i) for i in range(5)]
    assert receiver.decrypt(outs[0]) == b"message 0"
    for wrong in (outs[2], outs[0], outs[4], bytes(40), b"short"):
        with pytest.raises(cb3.DecryptionError):
            receiver.decrypt(wrong)
        assert receiver.message_index == 1
    assert receiver.decrypt(outs[1]) == b"message 1"
    assert receiver.message_index == 2
    # Replaying an already-accepted message fails too.
    with pytest.raises(cb3.DecryptionError):
        receiver.decrypt(outs[1])
    for i in (2, 3, 4):
        assert receiver.decrypt(outs[i]) == b"message %d" % i
    assert receiver.message_index == 5


def test_tampered_message_does_not_advance() -> None:
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    out = sender.encrypt(b"x" * 100, b"h")
    for pos in (0, 50, 99, 100, 131):
        bad = bytearray(out)
        bad[pos] ^= 0x10
        with pytest.raises(cb3.DecryptionError):
            receiver.decrypt(bad, b"h")
        with pytest.raises(cb3.DecryptionError):
            receiver.decrypt(out[:-1], b"h")
        assert receiver.message_index == 0
    assert receiver.decrypt(out, b"h") == b"x" * 100


def test_argument_errors_do_not_advance() -> None:
    stream = cb3.Stream(KEY, NONCE)
    for call in (
        lambda: stream.encrypt("text"),
        lambda: stream.encrypt(b"x", 5),
        lambda: stream.encrypt(b"x", b"", b""),
        lambda: stream.encrypt(b"x", associated_date=b""),
        lambda: stream.decrypt(None),
    ):
        with pytest.raises(TypeError):
            call()
        assert stream.message_index == 0
    assert stream.encrypt(b"ok") == cb3.ChaCha20Blake3(KEY).encrypt(NONCE, b"ok")


def test_stream_method_argument_parsing() -> None:
    stream = cb3.Stream(KEY, NONCE)
    a = stream.encrypt(data=b"one", associated_data=b"h1")
    b = stream.encrypt(associated_data=None, data=b"two")
    c = stream.encrypt(b"three", associated_data=b"h3")
    receiver = cb3.Stream(KEY, NONCE)
    assert receiver.decrypt(data=a, associated_data=b"h1") == b"one"
    assert receiver.decrypt(associated_data=b"", data=b) == b"two"
    assert receiver.decrypt(c, b"h3") == b"three"
    with pytest.raises(TypeError, match="multiple values for argument 'data'"):
        stream.encrypt(b"x", data=b"x")
    with pytest.raises(TypeError, match="missing required argument 'data'"):
        stream.encrypt(associated_data=b"x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'aad'"):
        receiver.decrypt(a, aad=b"h1")
    with pytest.raises(TypeError, match="positional"):
        receiver.decrypt(a, b"h1", b"")
    assert stream.message_index == 3 and receiver.message_index == 3


def test_empty_messages() -> None:
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    outs = [sender.encrypt(b"") for _ in range(4)]
    assert all(len(o) == 32 for o in outs)
    assert len(set(outs)) == 4  # distinct nonces, distinct tags
    for o in outs:
        assert receiver.decrypt(o) == b""
    assert receiver.message_index == 4


def test_same_plaintext_differs_per_message() -> None:
    stream = cb3.Stream(KEY, NONCE)
    outs = {stream.encrypt(b"same plaintext") for _ in range(50)}
    assert len(outs) == 50


def test_16_mib_round_trip() -> None:
    pt = seeded(16).randbytes(16 << 20)
    sender, receiver = cb3.Stream(KEY, NONCE), cb3.Stream(KEY, NONCE)
    sender.encrypt(b"first")
    out = sender.encrypt(pt, b"big")
    assert len(out) == len(pt) + 32
    receiver.decrypt(cb3.ChaCha20Blake3(KEY).encrypt(NONCE, b"first"))
    assert receiver.decrypt(out, b"big") == pt
    assert out == cb3.ChaCha20Blake3(KEY).encrypt(reference.stream_nonce(NONCE, 1), pt, b"big")


def test_exhaustion_is_sticky() -> None:
    start = 2**64 - 2
    sender = cb3.Stream(KEY, NONCE, message_index=start)
    receiver = cb3.Stream(KEY, NONCE, message_index=start)
    assert sender.message_index == start
    out = sender.encrypt(b"last message", b"h")
    assert out == cb3.ChaCha20Blake3(KEY).encrypt(reference.stream_nonce(NONCE, start), b"last message", b"h")
    assert sender.message_index == MAX
    for _ in range(5):
        with pytest.raises(OverflowError):
            sender.encrypt(b"one more")
        with pytest.raises(OverflowError):
            sender.encrypt(b"")
        assert sender.message_index == MAX
    # The receiver accepts the last message, then refuses to go on as well.
    assert receiver.decrypt(out, b"h") == b"last message"
    assert receiver.message_index == MAX
    for _ in range(3):
        with pytest.raises(OverflowError):
            receiver.decrypt(out, b"h")
        assert receiver.message_index == MAX


def test_exhaustion_not_reached_by_a_failed_decrypt() -> None:
    receiver = cb3.Stream(KEY, NONCE, message_index=2**64 - 2)
    with pytest.raises(cb3.DecryptionError):
        receiver.decrypt(bytes(48))
    assert receiver.message_index == 2**64 - 2


@pytest.mark.parametrize("index", [MAX, 2**64, 2**100, -1, -(2**64)])
def test_message_index_out_of_range(index: int) -> None:
    with pytest.raises(ValueError, match="message_index"):
        cb3.Stream(KEY, NONCE, message_index=index)


@pytest.mark.parametrize("index", [1.0, 0.0, "0", b"\0", None, [0]], ids=repr)
def test_message_index_not_int(index: Any) -> None:
    with pytest.raises(TypeError, match="message_index must be an int"):
        cb3.Stream(KEY, NONCE, message_index=index)


def test_message_index_accepts_large_valid_ints() -> None:
    for index in (0, 1, 2**32, 2**63, 2**64 - 2):
        assert cb3.Stream(KEY, NONCE, message_index=index).message_index == index


def test_message_index_read_only() -> None:
    stream = cb3.Stream(KEY, NONCE)
    with pytest.raises(AttributeError):
        stream.message_index = 5  # type: ignore[misc]
    assert stream.message_index == 0


def test_key_and_nonce_copied_at_construction() -> None:
    key, nonce = bytearray(KEY), bytearray(NONCE)
    stream = cb3.Stream(key, nonce)
    key[:] = bytes(32)
    nonce[:] = bytes(24)
    assert stream.encrypt(b"m") == cb3.ChaCha20Blake3(KEY).encrypt(NONCE, b"m")


@pytest.mark.threads
def test_shared_stream_never_reuses_a_nonce() -> None:
    """8 threads share one Stream, 200 messages each. Every message must have
    been sealed under a distinct index, and the indices must be exactly
    range(1600). The index of each ciphertext is recovered from its keystream
    (ct XOR pt), checked by decrypting it with the plain cipher at that index's
    nonce, and then the whole sequence must decrypt in index order with a
    fresh receiver."""
    threads_n, per_thread = 8, 200
    total = threads_n * per_thread
    stream = cb3.Stream(KEY, NONCE)
    results: list[list[tuple[bytes, bytes, bytes]]] = [[] for _ in range(threads_n)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads_n)

    def worker(t: int) -> None:
        try:
            rng = seeded(1000 + t)
            barrier.wait()
            for j in range(per_thread):
                # Some messages above the GIL threshold, so that calls really
                # run concurrently with the lock held in Rust.
                size = 4096 if j % 5 == 0 else 64
                pt = t.to_bytes(2, "little") + j.to_bytes(2, "little") + rng.randbytes(size - 4)
                aad = b"t%d-m%d" % (t, j)
                results[t].append((pt, aad, stream.encrypt(pt, aad)))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    run_threads([functools.partial(worker, t) for t in range(threads_n)])
    assert not errors
    assert stream.message_index == total

    cipher = cb3.ChaCha20Blake3(KEY)
    # keystream prefix of every index -> index
    by_keystream = {cipher.encrypt(reference.stream_nonce(NONCE, i), bytes(16))[:16]: i for i in range(total)}
    assert len(by_keystream) == total
    by_index: dict[int, tuple[bytes, bytes, bytes]] = {}
    for t in range(threads_n):
        assert len(results[t]) == per_thread
        previous = -1
        for pt, aad, out in results[t]:
            ks = bytes(a ^ b for a, b in zip(out[:16], pt[:16]))
            index = by_keystream[ks]
            assert index not in by_index, "nonce reused"
            assert cipher.decrypt(reference.stream_nonce(NONCE, index), out, aad) == pt
            # One thread's messages get increasing indices.
            assert index > previous
            previous = index
            by_index[index] = (pt, aad, out)
    assert sorted(by_index) == list(range(total))

    receiver = cb3.Stream(KEY, NONCE)
    for i in range(total):
        pt, aad, out = by_index[i]
        assert receiver.decrypt(out, aad) == pt
    assert receiver.message_index == total


@pytest.mark.threads
def test_shared_receiver_threads_decrypt_in_order() -> None:
    """Several threads pulling from one queue of ciphertexts through one
    receiving Stream: a thread that tries a message out of turn gets
    DecryptionError and the index does not move, so every message is accepted
    exactly once."""
    total = 400
    sender = cb3.Stream(KEY, NONCE)
    outs = [sender.encrypt(b"%05d" % i + bytes(3000 if i % 7 == 0 else 10)) for i in range(total)]
    receiver = cb3.Stream(KEY, NONCE)
    accepted: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            while True:
                i = receiver.message_index
                if i >= total:
                    return
                try:
                    pt = receiver.decrypt(outs[i])
                except cb3.DecryptionError:
                    continue  # another thread got there first
                with lock:
                    accepted.append(int(pt[:5]))
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    run_threads([worker] * 4)
    assert not errors
    assert sorted(accepted) == list(range(total))
    assert receiver.message_index == total
