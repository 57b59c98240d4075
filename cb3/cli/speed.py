"""``python -m cb3 speed``: a quick look at cb3's speed next to the peers
that happen to be installed, like ``openssl speed``.

Every case is timed once per size (64 B, 1 KiB, 64 KiB, 1 MiB) for a short
budget, so the whole run takes a few seconds and its figures move with the
machine's load: a sanity check, not a measurement. Argon2id (cb3.kdf) is
timed per derivation at two settings, the fastest of a few runs. It writes
no files. The
peers that do not import are named at the end, with the pip command that
installs them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import platform
import sys
import time
from typing import Callable

import cb3

from .common import human_size

SIZES = [64, 1 << 10, 64 << 10, 1 << 20]

#: The peers compared with: (import name, what it provides, PyPI distribution).
PEERS = (
    ("cryptography", "ChaCha20Poly1305, AESGCM, ChaCha20", "cryptography"),
    ("nacl", "XChaCha20-Poly1305", "PyNaCl"),
    ("Crypto", "XChaCha20-Poly1305, ChaCha20", "pycryptodome"),
    ("blake3", "BLAKE3", "blake3"),
    ("argon2", "Argon2id", "argon2-cffi"),
)

#: A case: given a message, the call to time.
Make = Callable[[bytes], Callable[[], object]]


def missing_peers() -> list[tuple[str, str, str]]:
    """The peers of :data:`PEERS` that cannot be imported."""
    missing = []
    for peer in PEERS:
        try:
            importlib.import_module(peer[0])
        except ImportError:
            missing.append(peer)
    return missing


def _aead_cases(key: bytes) -> list[tuple[str, Make]]:
    nonce, nonce12 = os.urandom(24), os.urandom(12)
    cipher = cb3.ChaCha20Blake3(key)
    cases: list[tuple[str, Make]] = [("cb3 ChaCha20Blake3 encrypt", lambda data: lambda: cipher.encrypt(nonce, data))]
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
    except ImportError:
        pass
    else:
        chapoly, gcm = ChaCha20Poly1305(key), AESGCM(key)
        cases.append(("cryptography ChaCha20Poly1305", lambda data: lambda: chapoly.encrypt(nonce12, data, None)))
        cases.append(("cryptography AESGCM-256", lambda data: lambda: gcm.encrypt(nonce12, data, None)))
    try:
        from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt as nacl_encrypt
    except ImportError:
        pass
    else:
        cases.append(("PyNaCl XChaCha20-Poly1305", lambda data: lambda: nacl_encrypt(data, None, nonce, key)))
    try:
        from Crypto.Cipher import ChaCha20_Poly1305
    except ImportError:
        pass
    else:
        cases.append(
            (
                "pycryptodome XChaCha20-Poly1305",
                lambda data: lambda: ChaCha20_Poly1305.new(key=key, nonce=nonce).encrypt_and_digest(data),
            )
        )
    return cases


def _hash_cases(key: bytes) -> list[tuple[str, Make]]:
    cases: list[tuple[str, Make]] = [("cb3 keyed_hash", lambda data: lambda: cb3.keyed_hash(key, data))]
    try:
        import blake3 as blake3_py
    except ImportError:
        pass
    else:
        cases.append(("blake3-py keyed", lambda data: lambda: blake3_py.blake3(data, key=key).digest()))
    cases.append(("hashlib blake2b keyed", lambda data: lambda: hashlib.blake2b(data, key=key).digest()))
    return cases


#: The Argon2id settings timed: RFC 9106's second recommended option (cb3's
#: default when encrypting) and a small one-lane setting.
KDF_PARAMS = [(3, 65536, 4), (1, 8192, 1)]


def _kdf_cases() -> list[tuple[str, Callable[[int, int, int], object]]]:
    salt = os.urandom(16)
    cases: list[tuple[str, Callable[[int, int, int], object]]] = [
        ("cb3 kdf.hash_secret_raw", lambda t, m, p: cb3.kdf.hash_secret_raw(b"passphrase", salt, t, m, p, 32))
    ]
    try:
        from argon2.low_level import Type, hash_secret_raw
    except ImportError:
        pass
    else:
        cases.append(
            (
                "argon2-cffi hash_secret_raw",
                lambda t, m, p: hash_secret_raw(
                    b"passphrase", salt, time_cost=t, memory_cost=m, parallelism=p, hash_len=32, type=Type.ID
                ),
            )
        )
    return cases


def _kdf_seconds(call: Callable[[], object], budget: float) -> float:
    """The fastest of a few derivations (at least two, then as many as fit
    in `budget`)."""
    best, spent, runs = float("inf"), 0.0, 0
    while runs < 2 or spent < budget:
        start = time.perf_counter()
        call()
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


def _bytes_per_second(call: Callable[[], object], size: int, budget: float) -> float:
    """One timing of `call` on a `size`-byte message: as many calls as fit
    in about `budget` seconds (after one untimed call)."""
    call()
    calls, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - start
        if elapsed >= budget / 4:
            return calls * size / elapsed
        calls *= 4


def run(args: argparse.Namespace) -> int:
    key = os.urandom(32)
    sizes = SIZES
    print(
        f"cb3 {cb3.__version__}, {platform.python_implementation()} {platform.python_version()} "
        f"on {platform.machine()}, SIMD {cb3.simd_backend()}: one short timing per case and size, "
        "one thread; a sanity check, not a measurement"
    )
    print("MB/s (10^6 bytes/s); (x.xx): cb3's speed / this peer's, above 1 cb3 is faster")
    width = 34
    print(f"{'':{width}}" + "".join(f"{human_size(size):>17}" for size in sizes))
    for group, cases in (("AEAD, encrypt", _aead_cases(key)), ("keyed hash", _hash_cases(key))):
        print(group)
        ours: list[float] = []
        for index, (name, make) in enumerate(cases):
            speeds = [_bytes_per_second(make(os.urandom(size)), size, args.seconds) for size in sizes]
            if index == 0:
                ours = speeds
                cells = [f"{speed / 1e6:17.1f}" for speed in speeds]
            else:
                cells = [f"{speed / 1e6:9.1f} ({mine / speed:5.2f})" for speed, mine in zip(speeds, ours)]
            print(f"  {name:{width - 2}}" + "".join(cells))
            sys.stdout.flush()
    print("key derivation, Argon2id: ms per derivation; (x.xx): this peer's time / cb3's")
    print(f"{'':{width}}" + "".join(f"{f't={t} m={m // 1024} MiB p={p}':>23}" for t, m, p in KDF_PARAMS))
    ours_kdf: list[float] = []
    for index, (name, derive) in enumerate(_kdf_cases()):
        times = [_kdf_seconds(lambda: derive(t, m, p), args.seconds) for t, m, p in KDF_PARAMS]
        if index == 0:
            ours_kdf = times
            cells = [f"{took * 1e3:23.1f}" for took in times]
        else:
            cells = [f"{took * 1e3:15.1f} ({took / mine:5.2f})" for took, mine in zip(times, ours_kdf)]
        print(f"  {name:{width - 2}}" + "".join(cells))
        sys.stdout.flush()
    missing = missing_peers()
    if missing:
        print(
            "not installed, so not compared: "
            + "; ".join(f"{dist} ({what})" for _, what, dist in missing)
            + f"\ninstall them with: {sys.executable} -m pip install "
            + " ".join(dist for _, _, dist in missing),
            file=sys.stderr,
        )
    return 0


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"--seconds must be above 0 and at most 10, not {text}")
    return value


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Registers ``python -m cb3 speed`` (see cb3/cli/__init__.py)."""
    parser = subparsers.add_parser(
        "speed",
        help="a few seconds of cb3's speed next to the installed peers, like openssl speed",
        description=__doc__.split("\n\n")[1].replace("\n", " ")
        + " Peers: "
        + "; ".join(f"{dist} ({what})" for _, what, dist in PEERS)
        + "; hashlib.",
    )
    parser.add_argument(
        "--seconds",
        type=_seconds,
        default=0.05,
        metavar="S",
        help="the time budget of each timing (default 0.05)",
    )
    parser.set_defaults(func=run)
    return parser
