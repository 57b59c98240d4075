"""`measure.py compare`: cb3 and the peers a user would pick instead, timed
in interleaved rounds in one process (medians), and the report of their
ratios. The raw-Rust cases time the `chacha20-blake3` crate and cb3's Rust
core through the reference binary (reference.py), in the same rounds."""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

import cb3
from cb3 import _cb3
from cb3.chacha20 import ChaCha20
from cb3.cli.speed import PEERS, human_size, missing_peers

from . import reference
from .machine import cpu_name, load_average
from .timing import Timer, calibrate, interleaved, loop, warm_up

DEFAULT_SIZES = [64, 256, 1024, 4096, 65536, 1 << 20, 16 << 20, 64 << 20]
QUICK_SIZES = [64, 1024, 65536, 1 << 20]


@dataclass
class Case:
    name: str
    make: Callable[[int], Timer]
    group: str = "aead"  # ratios compare a case with its group's cb3 baseline (BASELINE)


#: The cb3 case each group's ratios are computed against.
BASELINE = {"aead": "cb3 encrypt", "hash": "cb3 keyed_hash", "chacha": "cb3 ChaCha20 (new object)"}


def _cases() -> list[Case]:
    key, nonce = os.urandom(32), os.urandom(24)
    cipher = cb3.ChaCha20Blake3(key)

    def cb3_encrypt(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cipher.encrypt(nonce, data))

    def cb3_decrypt(size: int) -> Timer:
        sealed = cipher.encrypt(nonce, os.urandom(size))
        return loop(lambda: cipher.decrypt(nonce, sealed))

    def cb3_encrypt_into(size: int) -> Timer:
        data, out = os.urandom(size), bytearray(size + 32)
        return loop(lambda: cipher.encrypt_into(nonce, data, None, out))

    def cb3_in_place(size: int) -> Timer:
        buf = bytearray(size)
        return loop(lambda: cipher.encrypt_in_place(nonce, buf))

    threaded = cb3.ChaCha20Blake3(key, max_threads=cb3.AUTO)

    def cb3_threaded(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: threaded.encrypt(nonce, data), wall=True)  # threads: wall time whatever the clock

    def cb3_stream(size: int) -> Timer:
        stream, data = cb3.Stream(key, nonce), os.urandom(size)
        return loop(lambda: stream.encrypt(data))

    cases = [
        Case("cb3 encrypt", cb3_encrypt),
        Case("cb3 decrypt", cb3_decrypt),
        Case("cb3 encrypt_into", cb3_encrypt_into),
        Case("cb3 encrypt_in_place", cb3_in_place),
        Case("cb3 Stream.encrypt", cb3_stream),
        Case("cb3 encrypt max_threads=AUTO", cb3_threaded),
    ]
    if reference.available():
        cases += [
            Case("raw crate encrypt", reference.timers("encrypt")),
            Case("raw crate encrypt_in_place", reference.timers("encrypt_in_place")),
            Case("cb3 Rust core encrypt", reference.timers("seal")),
        ]

    def keyed_hash(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cb3.keyed_hash(key, data))

    def hasher(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: cb3.blake3(data, key=key).digest())

    def chacha_new(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: ChaCha20(key, nonce[:12]).update(data))

    cases += [
        Case("cb3 keyed_hash", keyed_hash, "hash"),
        Case("cb3.blake3(key=).digest()", hasher, "hash"),
        Case("cb3 ChaCha20 (new object)", chacha_new, "chacha"),
    ]
    cases += _peer_cases()
    return cases


def _peer_cases() -> list[Case]:
    cases: list[Case] = []
    key, nonce12, nonce24 = os.urandom(32), os.urandom(12), os.urandom(24)
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError:
        pass
    else:
        for label, aead in (("ChaCha20Poly1305", ChaCha20Poly1305(key)), ("AESGCM-256", AESGCM(key))):

            def allocating(size: int, aead: object = aead) -> Timer:
                data = os.urandom(size)
                return loop(lambda: aead.encrypt(nonce12, data, None))  # type: ignore[attr-defined]

            def into(size: int, aead: object = aead) -> Timer:
                data, out = os.urandom(size), bytearray(size + 16)
                return loop(lambda: aead.encrypt_into(nonce12, data, None, out))  # type: ignore[attr-defined]

            cases.append(Case(f"cryptography {label}", allocating))
            if hasattr(aead, "encrypt_into"):
                cases.append(Case(f"cryptography {label} encrypt_into", into))
    try:
        from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt as nacl_encrypt
    except ImportError:
        pass
    else:

        def nacl(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: nacl_encrypt(data, None, nonce24, key))

        cases.append(Case("PyNaCl XChaCha20-Poly1305", nacl))
    try:
        from Crypto.Cipher import ChaCha20_Poly1305
    except ImportError:
        pass
    else:

        def pycryptodome(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: ChaCha20_Poly1305.new(key=key, nonce=nonce24).encrypt_and_digest(data))

        cases.append(Case("pycryptodome XChaCha20-Poly1305", pycryptodome))
    try:
        import blake3 as blake3_py
    except ImportError:
        pass
    else:

        def b3(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: blake3_py.blake3(data, key=key).digest())

        cases.append(Case("blake3-py keyed hash", b3, "hash"))

    def blake2b(size: int) -> Timer:
        data = os.urandom(size)
        return loop(lambda: hashlib.blake2b(data, key=key).digest())

    cases.append(Case("hashlib blake2b keyed", blake2b, "hash"))
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
    except ImportError:
        pass
    else:

        def pyca_chacha(size: int) -> Timer:
            data, nonce16 = os.urandom(size), bytes(4) + nonce12
            return loop(lambda: Cipher(algorithms.ChaCha20(key, nonce16), None).encryptor().update(data))

        cases.append(Case("cryptography ChaCha20 (new object)", pyca_chacha, "chacha"))
    try:
        from Crypto.Cipher import ChaCha20 as CryptoChaCha20
    except ImportError:
        pass
    else:

        def pycryptodome_chacha(size: int) -> Timer:
            data = os.urandom(size)
            return loop(lambda: CryptoChaCha20.new(key=key, nonce=nonce12).encrypt(data))

        cases.append(Case("pycryptodome ChaCha20 (new object)", pycryptodome_chacha, "chacha"))
    return cases


@dataclass
class Result:
    case: str
    size: int
    seconds: float  # median seconds per call
    samples: list[float]

    @property
    def mb_per_s(self) -> float:
        return self.size / self.seconds / 1e6


#: case name -> group, filled by measure()
groups: dict[str, str] = {}


def measure(
    sizes: list[int], rounds: int, budget: float, only: Optional[list[str]] = None, warmup: float = 0.0
) -> list[Result]:
    cases = [case for case in _cases() if not only or any(word in case.name for word in only)]
    groups.update({case.name: case.group for case in cases})
    timers = {(case.name, size): case.make(size) for case in cases for size in sizes}
    for timer in timers.values():
        warm_up(timer, warmup)
    counts = {key: calibrate(timer, budget) for key, timer in timers.items()}
    samples = interleaved(timers, counts, rounds)
    return [Result(name, size, statistics.median(values), values) for (name, size), values in samples.items()]


def report(results: list[Result]) -> str:
    by_key = {(r.case, r.size): r for r in results}
    sizes = sorted({r.size for r in results})
    order = list(BASELINE)
    names = sorted(dict.fromkeys(r.case for r in results), key=lambda name: order.index(groups.get(name, "aead")))
    lines = [
        f"cb3 {cb3.__version__}, {platform.python_implementation()} {platform.python_version()}, "
        f"HPy ABI {cb3.HPY_ABI}, SIMD {cb3.simd_backend()}, CPU {cpu_name()} ({os.cpu_count()} cores), "
        f"caches {_cb3.cache_tuning()}, load average {load_average()} (1/5/15 min) after the run",
        "medians of interleaved rounds; ns per call and MB/s (10^6 B/s); ratio = time of the group's cb3 case "
        f"({', '.join(BASELINE.values())}) / time of this case: above 1, cb3 is slower",
        "",
    ]
    for size in sizes:
        lines.append(f"{human_size(size)}:")
        for name in names:
            result = by_key.get((name, size))
            if result is None:
                continue
            ours = by_key.get((BASELINE[groups.get(name, "aead")], size))
            ratio = f"{ours.seconds / result.seconds:6.2f}" if ours else "     -"
            lines.append(f"  {name:44} {result.seconds * 1e9:14.0f} ns {result.mb_per_s:10.0f} MB/s  ratio {ratio}")
    return "\n".join(lines)
