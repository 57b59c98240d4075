"""``python -m cb3 speed``: a quick look at cb3's speed next to the peers
that happen to be installed, like ``openssl speed``.

Every case is timed once per size (64 B, 1 KiB, 64 KiB, 1 MiB) for a short
budget, so the whole run takes a few seconds and its figures move with the
machine's load: a sanity check, not a measurement. It writes no files. The
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
