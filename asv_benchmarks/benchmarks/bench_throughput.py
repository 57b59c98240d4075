"""Throughput and peer ratios as `track_` benchmarks, each timed here
(best / median of several batches of calls, a batch taking >= 10 ms).

* Throughput: bytes per second. asv treats every number as lower-is-better,
  so for these a rise is an improvement even where asv's tables print it as
  worse: asv.conf.json switches their regression detection off in `publish`
  ("regressions_first_commits": null) and the regression gate leaves them out
  (docs/performance.md, section asv). Gate on the time_ benchmarks.
* Ratio: cb3's time over a peer's for the same work, measured in interleaved
  rounds of one process (robust to a loaded machine); lower is better, so
  these gate like times. They are the ratios issue #15's targets are in.
"""

import statistics
import time
from functools import partial
from typing import Callable

import blake3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

import cb3

from .common import CIPHER, KEY, MESSAGES, NONCE, NONCE12, SEALED, KiB, Lazy, MiB

SIZES = [64, 4 * KiB, 1 * MiB, 16 * MiB]
OUT = Lazy(lambda size: bytearray(size + 32))


def _batch_seconds(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def _calibrate(fn: Callable[[], object], min_batch: float = 0.01) -> int:
    number = 1
    while _batch_seconds(fn, number) < min_batch:
        number *= 2
    return number


def _cb3_chacha20() -> Callable[[int], Callable[[], object]]:
    def make(size: int) -> Callable[[], object]:
        # A fresh object per batch would add construction: seek instead
        # (see bench_chacha for the 256 GiB keystream limit).
        cipher = cb3.chacha20.ChaCha20(KEY, NONCE12)

        def run() -> None:
            if cipher.position > 1 << 37:
                cipher.seek(0)
            cipher.update_into(MESSAGES[size], OUT[size])
        return run
    return make


OPERATIONS: dict[str, Callable[[int], Callable[[], object]]] = {
    "encrypt": lambda size: partial(CIPHER.encrypt, NONCE, MESSAGES[size]),
    "decrypt": lambda size: partial(CIPHER.decrypt, NONCE, SEALED[size]),
    "encrypt_into": lambda size: partial(CIPHER.encrypt_into, NONCE, MESSAGES[size], None, OUT[size]),
    "hash": lambda size: partial(cb3.hash, MESSAGES[size]),
    "keyed_hash": lambda size: partial(cb3.keyed_hash, KEY, MESSAGES[size]),
    "chacha20_update_into": _cb3_chacha20(),
    "peer_chacha20poly1305_encrypt": lambda size: partial(ChaCha20Poly1305(KEY).encrypt, NONCE12, MESSAGES[size], None),
    "peer_blake3py_hash": lambda size: lambda: blake3.blake3(MESSAGES[size]).digest(),
}


class Throughput:
    params = [list(OPERATIONS), SIZES]
    param_names = ["operation", "size"]
    unit = "bytes/s"
    version = "1"
    timeout = 120

    def track_bytes_per_second(self, operation: str, size: int) -> float:
        fn = OPERATIONS[operation](size)
        number = _calibrate(fn)
        best = min(_batch_seconds(fn, number) for _ in range(5))
        return size * number / best


def _openssl_chacha20_then_blake3py_keyed(size: int) -> Callable[[], object]:
    # The two primitives cb3's AEAD is made of, back to back over the same
    # bytes (issue #15's 16 MiB reference).
    encryptor = Cipher(algorithms.ChaCha20(KEY, bytes(4) + NONCE12), mode=None).encryptor()
    message, out = MESSAGES[size], OUT[size]
    view = memoryview(out)[:size]

    def run() -> None:
        encryptor.update_into(message, view)
        blake3.blake3(view, key=KEY).digest()
    return run


PAIRS: dict[str, tuple[Callable[[int], Callable[[], object]], Callable[[int], Callable[[], object]]]] = {
    "encrypt/chacha20poly1305": (
        lambda size: partial(CIPHER.encrypt, NONCE, MESSAGES[size]),
        lambda size: partial(ChaCha20Poly1305(KEY).encrypt, NONCE12, MESSAGES[size], None),
    ),
    "encrypt/aesgcm": (
        lambda size: partial(CIPHER.encrypt, NONCE, MESSAGES[size]),
        lambda size: partial(AESGCM(KEY).encrypt, NONCE12, MESSAGES[size], None),
    ),
    "encrypt_into/openssl_chacha20+blake3py_keyed": (
        lambda size: partial(CIPHER.encrypt_into, NONCE, MESSAGES[size], None, OUT[size]),
        _openssl_chacha20_then_blake3py_keyed,
    ),
    "keyed_hash/blake3py_keyed": (
        lambda size: partial(cb3.keyed_hash, KEY, MESSAGES[size]),
        lambda size: lambda: blake3.blake3(MESSAGES[size], key=KEY).digest(),
    ),
}


class Ratio:
    params = [list(PAIRS), [64, 256, 4 * KiB, 16 * MiB]]
    param_names = ["pair", "size"]
    unit = "ratio"
    version = "1"
    timeout = 120

    def track_time_ratio(self, pair: str, size: int) -> float:
        make_cb3, make_peer = PAIRS[pair]
        ours, theirs = make_cb3(size), make_peer(size)
        number = max(_calibrate(ours), _calibrate(theirs))
        ratios = [_batch_seconds(ours, number) / _batch_seconds(theirs, number) for _ in range(7)]
        return statistics.median(ratios)
