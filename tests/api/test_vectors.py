"""Known-answer vectors and cross-checks against the independent reference
implementation (reference.py: PyPI blake3 + pyca/cryptography)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cb3
import reference
from cb3.cli import selftest
from helpers import seeded, sentinel_buf

# The three upstream vectors (chacha20-blake3 tests/mod.rs; notes section 8),
# from their one copy in the package (cb3/cli/selftest.py, run by `python -m cb3`).
VECTORS = [pytest.param(v, id=name) for v, name in zip(selftest.VECTORS, ("zero-empty", "ascii", "random-32"))]

# Every length where a backend or chunking decision could change: ChaCha
# blocks (64) and SIMD widths (128..1024), BLAKE3 chunks (1024) and 16-chunk
# batches (16384), cb3's own switches (512: crate vs pipeline, 2048: GIL
# release, 65536: fused copy+XOR piece), up to 1 MiB.
BOUNDARIES = [64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536, 131072, 1 << 20]
LENGTHS = sorted(
    {0, 1, 2, 31, 32, 33, 100, 1000, 3000, 10_000, 100_000, 3 * 65536 + 17}
    | {b + d for b in BOUNDARIES for d in (-1, 0, 1)}
)
AAD_LENGTHS = [0, 1, 7, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 4097]


@pytest.mark.parametrize("vector", VECTORS)
def test_upstream_vector_cb3(vector: selftest.Vector) -> None:
    key, nonce, pt, aad, ct, tag = vector
    c = cb3.ChaCha20Blake3(key)
    assert c.encrypt(nonce, pt, aad) == ct + tag
    assert c.encrypt_detached(nonce, pt, aad) == (ct, tag)
    assert c.decrypt(nonce, ct + tag, aad) == pt
    assert c.decrypt_detached(nonce, ct, tag, aad) == pt
    buf = bytearray(pt)
    assert c.encrypt_in_place(nonce, buf, aad) == tag
    assert bytes(buf) == ct
    assert c.decrypt_in_place(nonce, buf, tag, aad) is None
    assert bytes(buf) == pt
    assert cb3.Stream(key, nonce).encrypt(pt, aad) == ct + tag
    if not aad:
        # An absent AAD is the same thing as an empty one.
        assert c.encrypt(nonce, pt) == ct + tag
        assert c.encrypt(nonce, pt, None) == ct + tag
    else:
        with pytest.raises(cb3.DecryptionError):
            c.decrypt(nonce, ct + tag)


@pytest.mark.parametrize("vector", VECTORS)
def test_upstream_vector_reference(vector: selftest.Vector) -> None:
    key, nonce, pt, aad, ct, tag = vector
    assert reference.encrypt_detached(key, nonce, pt, aad) == (ct, tag)
    assert reference.decrypt(key, nonce, ct + tag, aad) == pt
    with pytest.raises(reference.ReferenceDecryptionError):
        reference.decrypt(key, nonce, ct + bytes([tag[0] ^ 1]) + tag[1:], aad)


def test_rust_and_c_copies_are_the_same_vectors() -> None:
    # The Rust and C test programs cannot import cb3/cli/selftest.py: their own
    # copies must say the same, ciphertext || tag as one hex string.
    root = Path(__file__).resolve().parents[2]
    for path in (root / "rustlib" / "tests" / "abi.rs", root / "tests" / "c" / "test_aead.c"):
        text = re.sub(r'"\n\s*"', "", path.read_text(encoding="utf-8"))  # joins C's split literals
        for v in selftest.VECTORS:
            for field in (v.key, v.nonce, v.plaintext, v.associated_data, v.ciphertext + v.tag):
                assert f'"{field.hex()}"' in text, (path.name, field.hex())


def test_reference_stream_nonce_schedule() -> None:
    nonce = bytes(range(16)) + (2**64 - 2).to_bytes(8, "little")
    assert reference.stream_nonce(nonce, 0) == nonce
    assert reference.stream_nonce(nonce, 1) == bytes(range(16)) + (2**64 - 1).to_bytes(8, "little")
    assert reference.stream_nonce(nonce, 2) == bytes(range(16)) + bytes(8)
    assert reference.stream_nonce(nonce, 5) == bytes(range(16)) + (3).to_bytes(8, "little")


def all_encryptions(c: cb3.ChaCha20Blake3, nonce: bytes, pt: bytes, aad: bytes) -> list[bytes]:
    """ct || tag from every encryption entry point."""
    results = [c.encrypt(nonce, pt, aad)]
    ct, tag = c.encrypt_detached(nonce, pt, aad)
    results.append(ct + tag)
    buf = sentinel_buf(len(pt) + 32)
    assert c.encrypt_into(nonce, pt, aad, buf) == len(pt) + 32
    results.append(bytes(buf))
    # encrypt_into in place: data is the start of buf.
    buf = bytearray(pt) + sentinel_buf(32)
    assert c.encrypt_into(nonce, memoryview(buf)[: len(pt)], aad, buf) == len(pt) + 32
    results.append(bytes(buf))
    buf = bytearray(pt)
    tag = c.encrypt_in_place(nonce, buf, aad)
    results.append(bytes(buf) + tag)
    return results


def all_decryptions(c: cb3.ChaCha20Blake3, nonce: bytes, data: bytes, aad: bytes) -> list[bytes]:
    """The plaintext from every decryption entry point."""
    ct, tag = data[:-32], data[-32:]
    results = [c.decrypt(nonce, data, aad), c.decrypt_detached(nonce, ct, tag, aad)]
    buf = sentinel_buf(len(ct))
    assert c.decrypt_into(nonce, data, aad, buf) == len(ct)
    results.append(bytes(buf))
    big = bytearray(data)
    assert c.decrypt_into(nonce, big, aad, memoryview(big)[: len(ct)]) == len(ct)
    results.append(bytes(big[: len(ct)]))
    assert bytes(big[len(ct) :]) == tag
    buf = bytearray(ct)
    assert c.decrypt_in_place(nonce, buf, tag, aad) is None
    results.append(bytes(buf))
    return results


@pytest.mark.parametrize("length", LENGTHS)
def test_every_api_form_matches_reference(length: int) -> None:
    rng = seeded(length)
    key, nonce = rng.randbytes(32), rng.randbytes(24)
    pt = rng.randbytes(length)
    aad = rng.randbytes(rng.choice(AAD_LENGTHS))
    expected = reference.encrypt(key, nonce, pt, aad)
    assert len(expected) == length + 32
    c = cb3.ChaCha20Blake3(key)
    for got in all_encryptions(c, nonce, pt, aad):
        assert got == expected
    stream = cb3.Stream(key, nonce)
    assert stream.encrypt(pt, aad) == expected
    for got in all_decryptions(c, nonce, expected, aad):
        assert got == pt
    assert cb3.Stream(key, nonce).decrypt(expected, aad) == pt
    assert reference.decrypt(key, nonce, c.encrypt(nonce, pt, aad), aad) == pt


@pytest.mark.parametrize("aad_length", AAD_LENGTHS + [65535, 65536, 65537, 300_000])
def test_aad_lengths_match_reference(aad_length: int) -> None:
    rng = seeded(10_000 + aad_length)
    key, nonce = rng.randbytes(32), rng.randbytes(24)
    aad = rng.randbytes(aad_length)
    c = cb3.ChaCha20Blake3(key)
    for pt_len in (0, 1, 700, 2100):
        pt = rng.randbytes(pt_len)
        expected = reference.encrypt(key, nonce, pt, aad)
        assert c.encrypt(nonce, pt, aad) == expected
        assert c.decrypt(nonce, expected, aad) == pt


def test_seeded_random_cross_check() -> None:
    rng = seeded(20240521)
    for _ in range(150):
        key, nonce = rng.randbytes(32), rng.randbytes(24)
        kind = rng.random()
        if kind < 0.6:
            n = rng.randrange(0, 2100)
        elif kind < 0.95:
            n = rng.randrange(2100, 140_000)
        else:
            n = rng.randrange(140_000, (1 << 20) + 2)
        pt = rng.randbytes(n)
        aad = rng.randbytes(rng.randrange(0, 3000) if rng.random() < 0.8 else 0)
        c = cb3.ChaCha20Blake3(key)
        expected = reference.encrypt(key, nonce, pt, aad)
        assert c.encrypt(nonce, pt, aad) == expected
        assert c.decrypt(nonce, expected, aad) == pt


@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=24, max_size=24),
    pt=st.binary(max_size=5000),
    aad=st.binary(max_size=3000),
)
def test_hypothesis_matches_reference(key: bytes, nonce: bytes, pt: bytes, aad: bytes) -> None:
    c = cb3.ChaCha20Blake3(key)
    expected_ct, expected_tag = reference.encrypt_detached(key, nonce, pt, aad)
    assert c.encrypt(nonce, pt, aad) == expected_ct + expected_tag
    assert c.encrypt_detached(nonce, pt, aad) == (expected_ct, expected_tag)
    assert c.decrypt(nonce, expected_ct + expected_tag, aad) == pt
    assert c.decrypt_detached(nonce, expected_ct, expected_tag, aad) == pt


@given(
    pt=st.binary(max_size=3000),
    aad=st.binary(max_size=100),
    flip=st.integers(min_value=0),
)
def test_hypothesis_tamper_matches_reference(pt: bytes, aad: bytes, flip: int) -> None:
    key, nonce = bytes(range(32)), bytes(range(24))
    c = cb3.ChaCha20Blake3(key)
    sealed = bytearray(c.encrypt(nonce, pt, aad))
    bit = flip % (len(sealed) * 8)
    sealed[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(cb3.DecryptionError):
        c.decrypt(nonce, sealed, aad)
    with pytest.raises(reference.ReferenceDecryptionError):
        reference.decrypt(key, nonce, bytes(sealed), aad)


@given(
    nonce=st.binary(min_size=24, max_size=24),
    messages=st.lists(st.tuples(st.binary(max_size=300), st.binary(max_size=40)), max_size=6),
    start=st.one_of(st.integers(0, 10), st.integers(2**64 - 20, 2**64 - 2 - 6)),
)
def test_hypothesis_stream_matches_reference(nonce: bytes, messages: list[tuple[bytes, bytes]], start: int) -> None:
    key = bytes(range(32, 64))
    sender = cb3.Stream(key, nonce, message_index=start)
    ref = reference.ReferenceStream(key, nonce, message_index=start)
    receiver = cb3.Stream(key, nonce, message_index=start)
    for pt, aad in messages:
        sealed = sender.encrypt(pt, aad)
        assert sealed == ref.encrypt(pt, aad)
        assert receiver.decrypt(sealed, aad) == pt
    assert sender.message_index == receiver.message_index == ref.message_index == start + len(messages)
