"""Known-answer tests: the three upstream ChaCha20-BLAKE3 vectors, and the
``python -m cb3 selftest`` command (the default of ``python -m cb3``).

The vectors come from the test suite of the Rust crate chacha20-blake3
(tests/mod.rs), which stores ciphertext || tag; the same vectors appear in the
Go and pure-Ruby implementations.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Callable, NamedTuple

from ..aead import ChaCha20Blake3
from ..errors import DecryptionError

__all__ = ["Vector", "VECTORS", "run", "add_parser", "command"]


class Vector(NamedTuple):
    key: bytes
    nonce: bytes
    plaintext: bytes
    associated_data: bytes
    ciphertext: bytes
    tag: bytes


def _vector(key: str, nonce: str, plaintext: str, aad: str, ciphertext: str, tag: str) -> Vector:
    return Vector(*(bytes.fromhex(field) for field in (key, nonce, plaintext, aad, ciphertext, tag)))


VECTORS = [
    _vector(
        "0000000000000000000000000000000000000000000000000000000000000000",
        "000000000000000000000000000000000000000000000000",
        "",
        "",
        "",
        "4fbdd67d41f66924b4304f0fc1eaa87a8e90fc7c5304fe3078f0a1b6e6142c33",
    ),
    _vector(
        "0100000000000000000000000000000000000000000000000000000000000010",
        "100000000000000000000000000000000000000000000001",
        b"ChaCha20".hex(),
        b"BLAKE3".hex(),
        "48fecfaf8d9553bf",
        "e7121700da72362e77e09080ddd55101aaca18cdcf259953923150cb89e1fef2",
    ),
    _vector(
        "3eb02a239a2a66de159b9bb5486ccc10a6f63ddf5862ef076650513372353622",
        "768e9bda14afb5686cc34de26210f9ff6fa1dfadc64ee3f0",
        "b8f60975cd7057a003ac84df00d514624fe40cb7855c50dd6594f59b3a2580e5",
        "c8d69ca92da6c5fd22f1805179fcd36cb7a9d45848fa346ba7118c2f34d23a48",
        "444d593bb2dea9ecde9cd3839d166141de70481340ce30739b3f0f28b059d632",
        "32324ace49e8a19729ac5110a093fba10acaeed93099dea1a9c20463a278c3a7",
    ),
]


def run() -> int:
    """Checks every vector (encrypt, decrypt, and rejection of a flipped tag
    bit); returns the number of vectors, or raises AssertionError."""
    for number, v in enumerate(VECTORS, 1):
        cipher = ChaCha20Blake3(v.key)
        sealed = cipher.encrypt(v.nonce, v.plaintext, v.associated_data)
        if sealed != v.ciphertext + v.tag:
            raise AssertionError(f"vector {number}: encrypt gave {sealed.hex()}")
        if cipher.decrypt(v.nonce, sealed, v.associated_data) != v.plaintext:
            raise AssertionError(f"vector {number}: decrypt did not round-trip")
        forged = sealed[:-1] + bytes([sealed[-1] ^ 1])
        try:
            cipher.decrypt(v.nonce, forged, v.associated_data)
        except DecryptionError:
            pass
        else:
            raise AssertionError(f"vector {number}: a forged tag was accepted")
    return len(VECTORS)


#: Message sizes of the throughput lines.
SIZES = [64, 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024]


def _median_seconds(call: Callable[[], object], budget: float = 0.05, rounds: int = 5) -> float:
    """Median time of one call over `rounds` timed loops of ~`budget` s."""
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - start
        if elapsed >= budget / 4 or number >= 1 << 20:
            break
        number *= 4
    number = max(1, int(number * (budget / max(elapsed, 1e-9))))
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Registers ``python -m cb3 selftest`` (see cb3/cli/__init__.py)."""
    parser = subparsers.add_parser(
        "selftest",
        help="what is installed, the known-answer tests, encrypt throughput (the default command)",
        description="Print the cb3 and interpreter versions, the HPy ABI and SIMD backend, run the "
        "known-answer tests (exit status 1 if one fails), then time encrypt() at a few sizes.",
    )
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput lines")
    parser.set_defaults(func=command)
    return parser


def command(args: argparse.Namespace) -> int:
    import cb3
    from cb3 import _cb3

    from .common import human_size

    print(f"cb3 {cb3.__version__} (rustlib {_cb3.version()})")
    print(f"interpreter: {platform.python_implementation()} {platform.python_version()} on {platform.machine()}")
    print(f"HPy ABI: {cb3.HPY_ABI}")
    print(f"SIMD: {cb3.simd_backend()} ({_cb3.cpu_model()})")
    print(f"caches: {_cb3.cache_tuning()}")
    # A build whose unwinder cannot reach the panic boundary aborts right here.
    caught = _cb3.panic_boundary_check()
    if "panic was caught" not in caught:
        print(f"panic boundary: FAILED: {caught}", file=sys.stderr)
        return 1
    print(f"panic boundary: a deliberate panic unwound to it ({caught!r})")
    try:
        passed = run()
    except (AssertionError, DecryptionError) as e:
        print(f"known-answer tests: FAILED: {e}", file=sys.stderr)
        return 1
    print(f"known-answer tests: {passed} passed")
    if getattr(args, "no_throughput", False):
        return 0
    key, nonce = cb3.generate_key(), cb3.generate_nonce()
    cipher = cb3.ChaCha20Blake3(key)
    print("encrypt throughput (median of 5, one thread):")
    for size in SIZES:
        data = os.urandom(size)
        seconds = _median_seconds(lambda: cipher.encrypt(nonce, data))
        print(f"  {human_size(size):>8}: {seconds * 1e9:12.0f} ns/call {size / seconds / 1e6:9.0f} MB/s")
    return 0
